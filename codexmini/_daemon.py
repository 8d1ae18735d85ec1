"""codex's own managed daemon: start it (or find it running), connect, stop it.

``codex app-server daemon start`` installs a copy of the CLI under
``$CODEX_HOME/packages/`` and runs the app-server in the background, listening
on ``$CODEX_HOME/app-server-control/app-server-control.sock`` (WebSocket over a
unix socket, as ``--listen unix://`` serves); it prints its status as JSON
(``started`` or ``alreadyRunning``, with the ``socketPath``).  ``daemon
version`` says where a running one listens (and exits 1 when none runs);
``daemon stop`` stops it (``stopped`` or ``notRunning``) but leaves its updater
(``daemon pid-update-loop``) running, whose pid the daemon keeps in
``$CODEX_HOME/app-server-daemon/daemon-updater.pid``: :func:`stop_daemon`
ends that one too.  Measured on 0.171.0 and 0.149.1.

The daemon reads its configuration from ``$CODEX_HOME/config.toml``: the
``-c`` items of the ``daemon`` command do not reach the server it starts, so a
:class:`~codexmini.Launch` with ``config``, ``args`` or an ``endpoint`` is
refused here rather than silently ignored.
"""

from __future__ import annotations

import asyncio
import json
import os
import signal
from typing import Any, Dict, Optional

from ._binary import find_codex
from ._client import AppServerClient
from ._connect import Connect
from ._deadline import within
from ._errors import ConfigError, StartFailed
from ._launch import Launch, plan

#: Where the daemon keeps its updater's pid, under ``CODEX_HOME``.
UPDATER_PID = os.path.join("app-server-daemon", "daemon-updater.pid")


def _checked(launch: Optional[Launch]) -> Launch:
    launch = Launch() if launch is None else launch
    ignored = [name for name in ("config", "args") if getattr(launch, name)]
    ignored += ["endpoint"] if launch.endpoint is not None else []
    if ignored:
        raise ConfigError(
            f"the codex daemon ignores {', '.join(ignored)}: it reads $CODEX_HOME/config.toml; "
            "write the model provider there (ModelEndpoint.config() gives the lines)"
        )
    return launch


async def daemon(launch: Optional[Launch], command: str) -> Dict[str, Any]:
    """Run ``codex app-server daemon <command>`` as ``launch`` says (the
    binary, the environment, ``CODEX_HOME``) and return the status it prints
    (its last JSON line).  :class:`~codexmini.StartFailed` when it fails or
    prints none, within ``Timeouts.initialize``."""
    launch = _checked(launch)
    binary = find_codex(launch.codex_bin).path
    planned = plan(launch, binary, os.environ if launch.parent_env is None else launch.parent_env)
    argv = [binary, "app-server", "daemon", command]
    proc = await asyncio.create_subprocess_exec(
        *argv,
        env=dict(planned.env, NO_COLOR="1"),
        cwd=planned.cwd,
        stdin=asyncio.subprocess.DEVNULL,
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.PIPE,
    )
    try:
        out, err = await within(proc.communicate(), launch.timeouts.initialize)
    except asyncio.CancelledError:  # the caller gave up (a sync call's timeout): the command ends with the call
        proc.kill()
        await proc.wait()
        raise
    except asyncio.TimeoutError:
        proc.kill()
        await proc.wait()
        raise StartFailed(
            f"codex app-server daemon {command} did not end within {launch.timeouts.initialize:g}s"
        ) from None
    lines = [line.strip() for line in err.decode("utf-8", "replace").splitlines() if line.strip()]
    said = [line for line in lines if line.startswith("Error")][:1] or lines[-3:]  # codex's own words first
    statuses = [line for line in out.decode("utf-8", "replace").splitlines() if line.startswith("{")]
    if proc.returncode != 0 or not statuses:
        raise StartFailed(f"codex app-server daemon {command} exited {proc.returncode}: {' | '.join(said)}")
    status: Dict[str, Any] = json.loads(statuses[-1])
    return status


async def connect_daemon(launch: Optional[Launch] = None, *, start: bool = True, **options: Any) -> AppServerClient:
    """A client of codex's managed daemon for ``launch``'s ``CODEX_HOME``:
    started first (``daemon start``: once, a running one is reused) unless
    ``start`` is false (``daemon version``: :class:`~codexmini.StartFailed`
    when none runs).  ``options`` go to
    :meth:`AppServerClient.connect <codexmini.AppServerClient.connect>`.
    The daemon outlives the client: :func:`stop_daemon` stops it."""
    launch = _checked(launch)
    status = await daemon(launch, "start" if start else "version")
    target = Connect(f"unix://{status['socketPath']}", timeouts=launch.timeouts, limits=launch.limits)
    return await AppServerClient.connect(target, **options)


async def stop_daemon(launch: Optional[Launch] = None) -> Dict[str, Any]:
    """Stop codex's managed daemon for ``launch``'s ``CODEX_HOME`` (``daemon
    stop``) and the updater it leaves behind; returns the daemon's status
    (``stopped``, or ``notRunning``)."""
    launch = _checked(launch)
    status = await daemon(launch, "stop")
    home = launch.codex_home or os.environ.get("CODEX_HOME") or os.path.join(os.path.expanduser("~"), ".codex")
    _stop_updater(os.path.join(home, UPDATER_PID))
    return status


def _stop_updater(pid_file: str) -> None:
    """End the daemon's updater named in ``pid_file`` -- only if that pid is
    still a codex ``pid-update-loop`` (a pid may have been reused)."""
    try:
        with open(pid_file) as fh:
            pid = int(json.load(fh)["pid"])
        with open(f"/proc/{pid}/cmdline", "rb") as fh:
            command = fh.read()
    except (OSError, ValueError, KeyError, TypeError):
        return  # none, or gone already
    if b"pid-update-loop" in command:
        try:
            os.kill(pid, signal.SIGTERM)
        except ProcessLookupError:  # pragma: no cover - it ended between the two looks
            pass


__all__ = ["connect_daemon", "daemon", "stop_daemon"]
