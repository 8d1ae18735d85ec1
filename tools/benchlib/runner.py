"""Spawning contenders: a fresh interpreter each, a deadline each, nothing left behind.

:meth:`Runner.run` starts ``python -m tools.benchlib.<module> NAME OPTIONS``
in its own process group with ``PYTHONPATH`` set to the repository (so any
interpreter, a bare pyenv one included, imports this worktree's codexmini),
waits at most ``timeout`` seconds, kills the whole group if it has to, and
returns the JSON object the child printed last.  :meth:`Runner.interleave`
runs competing contenders in rounds (the order rotating each round), so slow
drifts of the machine -- other load, thermal state, page cache -- spread over
all of them instead of landing on one.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from collections.abc import Mapping
from typing import Any

from .child import REPO

#: label → (module, contender name, options)
Plan = Mapping[str, tuple[str, str, dict[str, Any]]]


class BenchError(RuntimeError):
    """A contender failed, timed out or printed no result."""


def child_env(extra: Mapping[str, str] | None = None) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("PYTHON")}
    env["PYTHONPATH"] = REPO
    env.update(extra or {})
    return env


def run_process(argv: list[str], timeout: float, env: Mapping[str, str]) -> tuple[str, str]:
    """Run ``argv`` in its own process group; (stdout, stderr); the group is killed on timeout."""
    proc = subprocess.Popen(
        argv, cwd=REPO, env=dict(env), stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, start_new_session=True
    )
    try:
        out, err = proc.communicate(timeout=timeout)
    except BaseException:  # timeout, ^C: nothing may outlive the bench
        _kill_group(proc.pid)
        proc.communicate(timeout=10)
        raise
    finally:
        _kill_group(proc.pid)  # a grandchild that stayed in the group
    if proc.returncode != 0:
        tail = "\n".join(err.strip().splitlines()[-15:])
        raise BenchError(f"{' '.join(argv[:5])} … exited {proc.returncode}:\n{tail}")
    return out, err


def _kill_group(pid: int) -> None:
    try:
        os.killpg(pid, signal.SIGKILL)
    except (ProcessLookupError, PermissionError):
        pass


class Runner:
    def __init__(self, python: str, timeout: float = 300.0, progress: Any = sys.stderr) -> None:
        self.python = python
        self.timeout = timeout
        self.progress = progress

    def say(self, text: str) -> None:
        if self.progress is not None:
            self.progress.write(text + "\n")
            self.progress.flush()

    def run(self, module: str, name: str, options: Mapping[str, Any]) -> dict[str, Any]:
        opts = dict(options, timeout=self.timeout - 10)
        argv = [self.python, "-m", f"tools.benchlib.{module}", name, json.dumps(opts)]
        try:
            out, _ = run_process(argv, self.timeout, child_env())
        except subprocess.TimeoutExpired:
            raise BenchError(f"{module}.{name} did not finish within {self.timeout:g} s") from None
        lines = out.strip().splitlines()
        if not lines:
            raise BenchError(f"{module}.{name} printed no result")
        return dict(json.loads(lines[-1]))

    def interleave(self, section: str, plan: Plan, runs: int) -> dict[str, list[dict[str, Any]]]:
        results: dict[str, list[dict[str, Any]]] = {label: [] for label in plan}
        labels = list(plan)
        for r in range(runs):
            order = labels[r % len(labels) :] + labels[: r % len(labels)]
            for label in order:
                module, name, options = plan[label]
                start = time.perf_counter()
                results[label].append(self.run(module, name, options))
                self.say(f"  {section}: run {r + 1}/{runs} {label:<10} {time.perf_counter() - start:6.1f} s")
        return results
