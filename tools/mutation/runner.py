"""Run a module's tests against a mutant: one forked child per run.

The parent imports pytest, jsonschema and the conformance plugin (and with
it asyncio and the rest of the standard library the suite uses) once.  For
each run it ``fork()``s a child, which

1. starts its own session (so a timeout can kill it with whatever it
   spawned) and sends its output to a file in its own scratch directory
   (the tail is shown if the run ends in an error), where pytest's
   ``--basetemp`` also goes;
2. builds the module's code object -- the mutant applied to the parent's
   tree, which the child owns a private copy of;
3. forgets every module loaded from the repository (``codexmini``,
   ``conformance``, the tests, the root ``conftest``), so that the package
   is imported afresh and no module holds a name bound from the unmutated
   module;
4. puts a meta-path finder first that serves the mutated code under the
   module's real name and file (other modules load from disk as usual), and
5. runs ``pytest.main`` on the module's test files with ``-x`` (stop at the
   first failure) under the repository's pytest configuration, then exits
   with pytest's status.

Up to ``workers`` children run at once; the parent reaps them and kills the
session of one that outlives its timeout.  Exit 0 means the mutant survived;
1 (a test failed), 2 (collection failed, e.g. the module no longer imports)
and 3 (pytest crashed inside the mutated code) kill it, as does any signal
but the parent's; anything else (4 usage, 5 no tests, 70 the child's own
failure) is an error of the tool, never counted as a kill.
"""

from __future__ import annotations

import collections
import importlib
import importlib.abc
import importlib.machinery
import importlib.util
import os
import shutil
import signal
import sys
import tempfile
import time
import traceback
from collections.abc import Sequence
from dataclasses import dataclass
from types import CodeType, ModuleType
from typing import Callable, NoReturn

from .targets import ROOT, Target

KILLED, SURVIVED, TIMEOUT, ERROR = "killed", "survived", "timeout", "error"
# hypothesis's pytest plugin imports all of hypothesis at the end of every
# session (its terminal summary), more than half of a short child's run; no
# test of a pure module uses it (``@given`` works without the plugin anyway).
PYTEST_ARGS = ("-x", "-q", "--tb=line", "-p", "no:cacheprovider", "-p", "no:hypothesispytest", "-m", "not live")
_HARNESS_FAILED = 70
_KILLING_EXITS = frozenset({1, 2, 3})


@dataclass(frozen=True)
class Job:
    target: Target
    #: Called in the child: the module's code, or None to import the real file.
    build: Callable[[], CodeType | None]
    timeout: float
    #: Where the child's output goes (None: discarded).
    log: str | None = None


@dataclass(frozen=True)
class Outcome:
    status: str  # KILLED, SURVIVED, TIMEOUT or ERROR
    seconds: float
    detail: str  # "exit 1", "signal 11", "no result after 10 s"


def warm_up(pycache: str) -> None:
    """Import, once in the parent, what every child would import.

    Bytecode goes to ``pycache`` (a directory of this run, not the tree),
    written even under ``PYTHONDONTWRITEBYTECODE``: otherwise every child
    would compile the package, the conformance suite and pytest's rewritten
    test modules from source again -- a third of each run."""
    sys.pycache_prefix = pycache
    sys.dont_write_bytecode = False
    if ROOT not in sys.path:
        sys.path.insert(0, ROOT)
    os.chdir(ROOT)
    # conformance.plugin brings codexmini, asyncio and the schema loader along;
    # pytest's own plugins are otherwise imported by every child's pytest.main.
    for name in ("pytest", "jsonschema", "conformance.plugin"):
        importlib.import_module(name)
    from _pytest.config import default_plugins

    for name in default_plugins:
        importlib.import_module(f"_pytest.{name}")


class _Serve(importlib.abc.MetaPathFinder, importlib.abc.InspectLoader):
    """Serves ``code`` as module ``name`` from ``path``; declines everything else.
    (``InspectLoader.exec_module`` runs what :meth:`get_code` returns.)"""

    def __init__(self, name: str, path: str, code: CodeType) -> None:
        self.name, self.path, self.code = name, path, code

    def find_spec(
        self, fullname: str, path: Sequence[str] | None, target: ModuleType | None = None
    ) -> importlib.machinery.ModuleSpec | None:
        if fullname != self.name:
            return None
        return importlib.util.spec_from_file_location(fullname, self.path, loader=self)

    def get_code(self, fullname: str) -> CodeType:
        return self.code

    def get_source(self, fullname: str) -> str | None:
        return None  # tracebacks read the file: same lines, one of them mutated


def _from_repository(module: ModuleType) -> bool:
    file = getattr(module, "__file__", None)
    if file is None:  # a namespace package: where its first portion is
        file = next(iter(getattr(module, "__path__", None) or ()), None)
    if not isinstance(file, str):
        return False
    relative = os.path.relpath(os.path.realpath(file), os.path.realpath(ROOT))
    return not relative.startswith((os.pardir, ".venv"))


def _purge() -> None:
    # Judge every module before forgetting any: a namespace package computes
    # its path from its parent's, which must still be there.
    doomed = [name for name, module in sys.modules.items() if module is not None and _from_repository(module)]
    for name in doomed:
        del sys.modules[name]
    importlib.invalidate_caches()


def _child(job: Job, scratch: str) -> NoReturn:
    status = _HARNESS_FAILED
    try:
        os.setsid()
        out = os.open(job.log or os.path.join(scratch, "output"), os.O_WRONLY | os.O_CREAT | os.O_TRUNC)
        os.dup2(os.open(os.devnull, os.O_RDONLY), 0)
        os.dup2(out, 1)
        os.dup2(out, 2)
        code = job.build()
        _purge()
        if code is not None:
            sys.meta_path.insert(0, _Serve(job.target.module, os.path.join(ROOT, job.target.path), code))
        import pytest

        # Its own --basetemp: concurrent children racing for pytest's numbered
        # temporary directories would fail each other's tmp_path fixtures.
        status = int(pytest.main([*job.target.tests, *PYTEST_ARGS, "--basetemp", os.path.join(scratch, "tmp")]))
    except BaseException:
        traceback.print_exc()
        raise  # no further than the finally clause, which exits
    finally:
        try:
            sys.stdout.flush()
            sys.stderr.flush()
        finally:
            os._exit(status)


def _spawn(job: Job, scratch: str) -> int:
    os.mkdir(scratch)
    sys.stdout.flush()
    sys.stderr.flush()
    pid = os.fork()
    if pid == 0:
        _child(job, scratch)
    return pid


def _kill_session(pid: int) -> None:
    """SIGKILL what is left of a child's session (its pid is the session's pgid)."""
    try:
        os.killpg(pid, signal.SIGKILL)
    except (ProcessLookupError, PermissionError):
        pass


def _judge(status: int, seconds: float, scratch: str) -> Outcome:
    code = os.waitstatus_to_exitcode(status)
    if code < 0:
        return Outcome(KILLED, seconds, f"signal {-code}")
    if code == 0:
        return Outcome(SURVIVED, seconds, "exit 0")
    if code in _KILLING_EXITS:
        return Outcome(KILLED, seconds, f"exit {code}")
    return Outcome(ERROR, seconds, f"exit {code}: {_tail(os.path.join(scratch, 'output'))}")


def _tail(path: str, lines: int = 15) -> str:
    try:
        with open(path, encoding="utf-8", errors="replace") as f:
            return "\n".join(f.read().splitlines()[-lines:])
    except OSError:
        return "(no output kept)"


def run(jobs: Sequence[Job], workers: int, done: Callable[[int, Outcome], None]) -> list[Outcome]:
    """Run every job, ``workers`` at a time; ``done(index, outcome)`` as each ends."""
    outcomes: dict[int, Outcome] = {}
    pending: collections.deque[int] = collections.deque(range(len(jobs)))
    running: dict[int, tuple[int, float]] = {}  # pid -> (job index, start)
    scratch = tempfile.mkdtemp(prefix="mutation-")  # one directory per child: output, --basetemp

    def finish(pid: int, outcome: Outcome) -> None:
        index, _ = running.pop(pid)
        _kill_session(pid)  # strays a test left behind
        shutil.rmtree(os.path.join(scratch, str(index)), ignore_errors=True)
        outcomes[index] = outcome
        done(index, outcome)

    try:
        while pending or running:
            while pending and len(running) < workers:
                index = pending.popleft()
                running[_spawn(jobs[index], os.path.join(scratch, str(index)))] = (index, time.monotonic())
            pid, status = os.waitpid(-1, os.WNOHANG)
            if pid:
                index, started = running[pid]
                finish(pid, _judge(status, time.monotonic() - started, os.path.join(scratch, str(index))))
                continue
            now = time.monotonic()
            for pid, (index, started) in list(running.items()):
                if now - started > jobs[index].timeout:
                    _kill_session(pid)
                    os.waitpid(pid, 0)
                    finish(pid, Outcome(TIMEOUT, now - started, f"no result after {jobs[index].timeout:.0f} s"))
            time.sleep(0.002)
    finally:
        for pid in running:  # interrupted: leave nothing behind
            _kill_session(pid)
            os.waitpid(pid, 0)
        shutil.rmtree(scratch, ignore_errors=True)
    return [outcomes[i] for i in range(len(jobs))]
