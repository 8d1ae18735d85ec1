"""The real codex against the scripted model, in a scratch root of its own.

:class:`LiveCodex` is what a test needs to run the real binary offline: a
scratch root (not under ``/tmp``, where codex refuses to create its helper
binaries), a ``CODEX_HOME`` and a workspace in it, a :class:`ScriptedModel`
on 127.0.0.1, and the :class:`~codexmini.Launch` that points codex at them::

    with LiveCodex({"rules": [], "default": {"output": [...]}}) as live:
        result = await codexmini.run("hi", cwd=live.ws, launch=live.launch)
        assert live.alive() == []  # every process it started has ended

Every child started through :attr:`LiveCodex.launch` is remembered
(:attr:`pids`), so a test can prove that none is left behind.

:meth:`LiveCodex.serve` starts the same codex as a server instead
(``codex app-server --listen ws://127.0.0.1:0`` or ``unix://PATH``, with
``--ws-auth`` arguments if given) and returns its URL for
:meth:`AppServerClient.connect <codexmini.AppServerClient.connect>`;
:meth:`LiveCodex.close` stops it.
"""

from __future__ import annotations

import os
import re
import shutil
import signal
import socket
import subprocess
import tempfile
import time
from dataclasses import replace
from typing import Any, Dict, List, Mapping, Optional, Sequence

from .._binary import find_codex
from .._endpoint import ModelEndpoint
from .._errors import ConfigError, StartFailed
from .._launch import Launch, plan
from .._process import ChildProcess
from .._transport import Transport
from .scripted_model import ScriptedModel

#: Where scratch roots go, when set (else ``/var/tmp``, else ``~/.cache``).
SCRATCH_ENV = "CODEXMINI_SCRATCH"


def scratch_dir(prefix: str = "codexmini-") -> str:
    """A new temporary directory that is not under ``/tmp``: under
    ``$CODEXMINI_SCRATCH``, else ``/var/tmp``, else ``~/.cache``."""
    for base in (os.environ.get(SCRATCH_ENV), "/var/tmp", os.path.join(os.path.expanduser("~"), ".cache")):
        if base and os.path.isdir(base) and os.access(base, os.W_OK):
            return tempfile.mkdtemp(prefix=prefix, dir=base)
    return tempfile.mkdtemp(prefix=prefix)  # pragma: no cover - no writable base at all


def _accepts(path: str) -> bool:
    """Whether a unix socket at ``path`` accepts a connection now (closed at once)."""
    probe = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    try:
        probe.settimeout(1.0)
        probe.connect(path)
    except OSError:  # not there yet, or bound and not yet listening (refused)
        return False
    finally:
        probe.close()
    return True


class CodexServer:
    """``codex app-server`` started as a server: the ``--listen URL`` among
    the :class:`~codexmini.Launch`'s own ``args`` (``ws://IP:PORT``, port
    ``0`` for a free one, or ``unix://PATH``), its stderr written to a file,
    in a process group of its own.  :meth:`start` returns once it listens;
    :attr:`url` is where (the port codex chose); :meth:`stop` ends the group."""

    def __init__(self, process: "subprocess.Popen[bytes]", argv: Sequence[str], url: str, log_path: str) -> None:
        self.process = process
        #: The command line it was started with.
        self.argv = list(argv)
        #: Where it listens.
        self.url = url
        #: The file its stderr goes to.
        self.log_path = log_path

    @property
    def pid(self) -> int:
        return self.process.pid

    @classmethod
    def start(cls, launch: Launch, log_path: str, timeout: float = 60.0) -> "CodexServer":
        """Start ``launch`` (whose ``args`` hold ``--listen URL``) and wait, at
        most ``timeout`` seconds, until it listens.  Raises
        :class:`~codexmini._errors.StartFailed` with the end of its stderr
        when codex exits (or says nothing) instead: it is stopped then."""
        planned = plan(launch, find_codex(launch.codex_bin).path, os.environ)
        if "--listen" not in planned.argv[:-1]:
            raise ConfigError("CodexServer.start: the launch's args need --listen URL")
        where = planned.argv[planned.argv.index("--listen") + 1]
        with open(log_path, "wb") as stderr:
            process = subprocess.Popen(
                planned.argv,
                env=dict(planned.env, NO_COLOR="1"),
                cwd=planned.cwd,
                stdin=subprocess.DEVNULL,
                stdout=subprocess.DEVNULL,
                stderr=stderr,
                start_new_session=True,  # its own group: stop() ends what it starts too
            )
        server = cls(process, planned.argv, where, log_path)
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline and process.poll() is None:
            url = server._listening()
            if url is not None:
                server.url = url
                return server
            time.sleep(0.02)
        code = process.poll()
        server.stop()
        raise StartFailed(f"codex app-server --listen {where} did not listen (exit {code}): {server.said()}")

    def _listening(self) -> Optional[str]:
        if self.url.startswith("unix://"):
            # The socket file is there from bind(), before listen(): only a
            # connection that is accepted says it listens (codex prints no
            # line for a unix listener).
            return self.url if _accepts(self.url[len("unix://") :]) else None
        found = re.search(rb"listening on: (ws://\S+)", self._stderr())
        return found.group(1).decode() if found else None

    def _stderr(self) -> bytes:
        with open(self.log_path, "rb") as fh:
            return fh.read()

    def said(self) -> str:
        """The end of what it wrote on stderr."""
        return self._stderr().decode("utf-8", "replace").rstrip()[-2000:]

    def stop(self, grace: float = 10.0) -> None:
        """End its process group: SIGTERM, then SIGKILL past ``grace`` seconds (idempotent)."""
        try:
            os.killpg(self.process.pid, signal.SIGTERM)
        except ProcessLookupError:  # it exited by itself, and its group is empty
            pass
        try:
            self.process.wait(timeout=grace)
        except subprocess.TimeoutExpired:  # pragma: no cover - codex ignored SIGTERM
            os.killpg(self.process.pid, signal.SIGKILL)
            self.process.wait()


class LiveCodex:
    """The codex binary (``codex_bin``, else :func:`~codexmini._binary.find_codex`'s)
    pointed at a :class:`ScriptedModel` playing ``script``, in a scratch root.

    ``root`` holds ``ws`` (the workspace) and ``home`` (``CODEX_HOME``);
    ``HOME`` is ``root`` too, so no login profile of this machine plays a
    part.  Raises :class:`~codexmini.BinaryNotFound` when there is no codex.
    Close it (or use ``with``) to stop the model and remove the root.
    """

    def __init__(
        self,
        script: Mapping[str, Any],
        *,
        codex_bin: Optional[str] = None,
        prefix: str = "codexmini-live-",
        api_key: str = "sk-test",
        config: Sequence[str] = (),
    ) -> None:
        self.binary = find_codex(codex_bin).path
        self.root = scratch_dir(prefix)
        self.ws = os.path.join(self.root, "ws")
        self.home = os.path.join(self.root, "home")
        os.makedirs(self.ws)
        os.makedirs(self.home)
        self.model = ScriptedModel(dict(script)).start()
        self.api_key = api_key
        self.config = tuple(config)
        #: The process ids of every child started through :attr:`launch` (and :meth:`serve`).
        self.pids: List[int] = []
        self._servers: List[CodexServer] = []

    @property
    def endpoint(self) -> ModelEndpoint:
        """The scripted model, as codex's model endpoint."""
        return ModelEndpoint(self.model.url, self.api_key)

    @property
    def launch(self) -> Launch:
        """codex app-server on the scripted model, in the workspace, with ``home`` as ``CODEX_HOME``."""
        return Launch(
            codex_bin=self.binary,
            config=self.config,
            endpoint=self.endpoint,
            env={"HOME": self.root},
            codex_home=self.home,
            cwd=self.ws,
            launcher=self._spawn,
        )

    async def _spawn(self, argv: Sequence[str], env: Mapping[str, str], cwd: Optional[str]) -> Transport:
        child = await ChildProcess.spawn(argv, env, cwd)
        if child.pid is not None:  # pragma: no branch - a started process has one
            self.pids.append(child.pid)
        return child

    def serve(self, listen: str = "ws", args: Sequence[str] = (), timeout: float = 60.0) -> str:
        """Start codex as a server on the scripted model and return its URL:
        ``listen="ws"`` listens on ``ws://127.0.0.1:<a free port>``,
        ``"unix"`` on ``unix://<root>/codex-N.sock``, a URL where it says
        (to serve again where a stopped one served); ``args`` are more
        ``app-server`` arguments (``--ws-auth …``).  Waits (at most
        ``timeout`` seconds) until it listens; its stderr is kept in the root.
        Raises :class:`~codexmini._errors.StartFailed` with the end of that
        stderr when codex exits (or is silent) instead."""
        n = len(self._servers)
        where = {"ws": "ws://127.0.0.1:0", "unix": f"unix://{os.path.join(self.root, f'codex-{n}.sock')}"}.get(
            listen, listen
        )
        launch = replace(self.launch, args=("--listen", where, *args))
        server = CodexServer.start(launch, os.path.join(self.root, f"server-{n}.stderr"), timeout)
        self._servers.append(server)
        self.pids.append(server.pid)
        return server.url

    def stop_servers(self) -> None:
        """Stop every server :meth:`serve` started (its whole process group)."""
        for server in self._servers:
            server.stop()
        self._servers.clear()

    def daemon_launch(self) -> Launch:
        """The :class:`~codexmini.Launch` for codex's managed daemon
        (:func:`codexmini.connect_daemon`) in this root: the scripted model
        is written into ``home/config.toml``, the only configuration the
        daemon reads.  :meth:`close` ends whatever the daemon left running."""
        with open(os.path.join(self.home, "config.toml"), "w") as fh:
            fh.write("".join(f"{item}\n" for item in (*ModelEndpoint(self.model.url).config(), *self.config)))
        return Launch(codex_bin=self.binary, env={"HOME": self.root}, codex_home=self.home, cwd=self.ws)

    def rooted(self) -> List[int]:
        """Processes whose command line runs from this root (the daemon's copy of codex)."""
        found = []
        for entry in os.listdir("/proc"):
            if entry == str(os.getpid()):
                continue
            try:
                with open(f"/proc/{entry}/cmdline", "rb") as fh:
                    if self.root.encode() in fh.read():
                        found.append(int(entry))
            except (OSError, ValueError):  # not a process, or gone
                continue
        return found

    def alive(self) -> List[int]:
        """The children started here that still exist."""
        left = []
        for pid in self.pids:
            try:
                os.kill(pid, 0)
            except ProcessLookupError:
                continue
            left.append(pid)
        return left

    @property
    def requests(self) -> List[Dict[str, Any]]:
        """What the scripted model received (its request log)."""
        return list(self.model.requests)

    def close(self) -> None:
        """Stop the servers, what runs from the root, and the model; remove the
        scratch root (idempotent)."""
        self.stop_servers()
        for pid in self.rooted():
            try:
                os.kill(pid, signal.SIGKILL)
            except ProcessLookupError:  # pragma: no cover - it ended meanwhile
                pass
        self.model.stop()
        shutil.rmtree(self.root, ignore_errors=True)

    def __enter__(self) -> "LiveCodex":
        return self

    def __exit__(self, *exc: Any) -> None:
        self.close()


__all__ = ["SCRATCH_ENV", "CodexServer", "LiveCodex", "scratch_dir"]
