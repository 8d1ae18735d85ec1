"""One scripted turn against the real codex binary: codexmini vs a minimal raw client.

Both contenders start the scripted model (``codexmini.testing.ScriptedModel``,
the ``plain`` script: one streamed message), make a scratch ``CODEX_HOME`` and
workspace under ``/var/tmp`` (codex refuses to create its helper binaries under
``/tmp``), and then, inside the timed window, do the same JSON-RPC calls:
spawn ``codex app-server -c <model endpoint flags>``, ``initialize``,
``initialized``, ``thread/start``, ``turn/start`` and read until
``turn/completed``.  The child's environment is the same minimal one for both
(codexmini builds it from ``parent_env``; the raw client is given the result).
Shutting the child down is outside the window.

* ``raw`` -- :class:`.stream.RawRpc`: readline + ``json.loads``, stderr to
  ``/dev/null``;
* ``codexmini`` -- ``AppServerClient.start`` + ``Thread.start`` +
  ``thread.turn(...).run()``.
"""

from __future__ import annotations

import asyncio
import glob
import json
import os
import shutil
import signal
import sys
import tempfile
import time
from typing import Any

from .child import REPO, Options, main
from .stream import RawRpc

SCRIPT = os.path.join(REPO, "fixtures", "0.149.1", "plain.model.json")
NATIVE_GLOBS = (  # as codexmini._binary looks for the native binary in an npm install
    "node_modules/@openai/codex-*/vendor/*/bin/codex",
    "node_modules/@openai/codex-*/vendor/*/codex/codex",
    "node_modules/@openai/codex/vendor/*/codex/codex",
)
MODEL = "gpt-fake"
PROMPT = "say hi"


def find_native_codex(repo: str = REPO) -> str | None:
    """``$CODEXMINI_CODEX_BIN``, else the native binary of the project-local install."""
    explicit = os.environ.get("CODEXMINI_CODEX_BIN")
    if explicit:
        return explicit if os.access(explicit, os.X_OK) else None
    for pattern in NATIVE_GLOBS:
        for hit in sorted(glob.glob(os.path.join(repo, ".codex", pattern))):
            if os.access(hit, os.X_OK):
                return hit
    return None


class Scene:
    """The scripted model and the scratch directories of one run."""

    def __init__(self) -> None:
        from codexmini import ModelEndpoint, __version__
        from codexmini.testing import ScriptedModel

        self.version = __version__
        base = "/var/tmp" if os.path.isdir("/var/tmp") else tempfile.gettempdir()
        self.root = tempfile.mkdtemp(prefix="codexmini-bench-e2e-", dir=base)
        self.home, self.ws = os.path.join(self.root, "codex-home"), os.path.join(self.root, "ws")
        for d in (self.home, self.ws):
            os.makedirs(d)
        with open(SCRIPT, encoding="utf-8") as fh:
            self.model = ScriptedModel(json.load(fh)).start()
        self.endpoint = ModelEndpoint(self.model.url, "sk-fake")
        #: What codexmini is given as its parent environment.
        self.parent_env = {"PATH": os.environ.get("PATH", "/usr/bin:/bin"), "HOME": self.root, "LANG": "C.UTF-8"}
        #: What codexmini adds to it (and then NO_COLOR=1).
        self.extra_env = dict(self.endpoint.env(), CODEX_HOME=self.home)

    def child_env(self) -> dict[str, str]:
        return dict(self.parent_env, **self.extra_env, NO_COLOR="1")

    def thread_params(self) -> dict[str, Any]:
        return {"cwd": self.ws, "model": MODEL, "sandbox": "read-only", "approvalPolicy": "never"}

    def close(self) -> None:
        self.model.stop()
        shutil.rmtree(self.root, ignore_errors=True)


async def _raw_turn(scene: Scene, codex: str) -> dict[str, Any]:
    argv = [codex, "app-server"]
    for flag in scene.endpoint.config():
        argv += ["-c", flag]
    start = time.perf_counter()
    rpc = await RawRpc.spawn(
        argv, env=scene.child_env(), cwd=scene.ws, stderr=asyncio.subprocess.DEVNULL, start_new_session=True
    )
    try:
        await rpc.initialize(scene.version)
        thread = (await rpc.call("thread/start", scene.thread_params()))["thread"]["id"]
        await rpc.call("turn/start", {"threadId": thread, "input": [{"type": "text", "text": PROMPT}]})
        status = None
        while status is None:
            line = await rpc.stdout.readline()
            if not line:
                raise EOFError("codex closed stdout before turn/completed")
            frame = json.loads(line)
            if frame.get("method") == "turn/completed":
                status = frame["params"]["turn"]["status"]
        seconds = time.perf_counter() - start
    finally:
        await _close_group(rpc)
    return {"seconds": seconds, "status": status}


async def _close_group(rpc: RawRpc) -> None:
    try:
        await rpc.close()
    finally:
        try:
            os.killpg(rpc.proc.pid, signal.SIGKILL)  # whatever codex left in its group
        except (ProcessLookupError, PermissionError):
            pass


async def _codexmini_turn(scene: Scene, codex: str) -> dict[str, Any]:
    from codexmini import AppServerClient, Launch, Thread

    start = time.perf_counter()
    client = await AppServerClient.start(
        Launch(
            codex_bin=codex,
            config=scene.endpoint.config(),
            env=scene.extra_env,
            parent_env=scene.parent_env,
            cwd=scene.ws,
        )
    )
    try:
        p = scene.thread_params()
        thread = await Thread.start(
            client, cwd=p["cwd"], model=p["model"], sandbox=p["sandbox"], approval_policy=p["approvalPolicy"]
        )
        completed = await thread.turn(PROMPT).run()
        seconds = time.perf_counter() - start
    finally:
        await client.close()
    return {"seconds": seconds, "status": completed.status}


async def _one(opts: Options, turn: Any) -> dict[str, Any]:
    scene = Scene()
    try:
        result = await turn(scene, opts["codex"])
    finally:
        scene.close()
    result["requests_to_model"] = len(scene.model.requests)
    return result


async def raw(opts: Options) -> dict[str, Any]:
    return await _one(opts, _raw_turn)


async def codexmini(opts: Options) -> dict[str, Any]:
    return await _one(opts, _codexmini_turn)


CONTENDERS = {"raw": raw, "codexmini": codexmini}

__all__: list[str] = ["CONTENDERS", "find_native_codex"]

if __name__ == "__main__":
    sys.exit(main(CONTENDERS))
