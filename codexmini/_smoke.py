"""``python -m codexmini smoke``: one command that proves the whole chain works.

Python → the pinned codex binary → a model → tools → an approval → the durable
log, all on this machine and offline: the model is the scripted loopback
server (:mod:`.scripted_model`), ``CODEX_HOME`` and the workspace are
temporary directories (under ``/var/tmp``: codex refuses to create its helper
binaries under ``/tmp``).  One agent turn runs a streamed answer, a command,
an ``apply_patch`` (codex offers it for the model slug ``gpt-5.4``) and a
command that needs approval, which the smoke policy accepts.

Every expectation is checked at the end; the exit status is 0 only if all
held, else 1 with the list of what failed (3 when codex is missing).  Every
frame is validated, strictly, against the schema **the binary in use prints**
(``codex app-server generate-json-schema --experimental`` into the temporary
folder), with codexmini's own standard-library validator
(:mod:`._jsonschema`): a vendored copy with nothing installed validates as
much as a checkout.  A check that could not run fails; it is never printed
as ``ok``.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import shutil
import tempfile
import time
from typing import IO, Any, Callable, Dict, List, Mapping, Optional, Tuple

from . import CODEX_VERSION
from ._agent import Agent, AgentConfig
from ._binary import codex_version, find_codex
from ._endpoint import ModelEndpoint
from ._errors import SchemaError
from ._events import AgentMessageDelta, Event
from ._permission import ACCEPT, ApprovalRequest, Reply
from ._render import Console, Transcript, use_color
from ._schema import FrameValidator, bundle_for_binary
from ._session import SessionLog, read_log
from .testing import ScriptedModel

NOTE = "hello from the codexmini smoke run\n"
FINAL = ["All ", "three ", "tools ", "worked."]
USAGE = {"input_tokens": 120, "cached_tokens": 20, "output_tokens": 30, "reasoning_tokens": 5}

SCRIPT: Dict[str, Any] = {
    "rules": [
        {
            "name": "final answer",
            "when": {"last_call_id": "call_smoke_read"},
            "respond": {"output": [{"type": "message", "id": "msg_smoke_final", "deltas": FINAL}], "usage": USAGE},
        },
        {
            "name": "read the note back (needs approval)",
            "when": {"last_call_id": "call_smoke_patch"},
            "respond": {
                "output": [
                    {
                        "type": "function_call",
                        "call_id": "call_smoke_read",
                        "name": "exec_command",
                        "arguments": {
                            "cmd": "cat note.txt",
                            "yield_time_ms": 10000,
                            "sandbox_permissions": "require_escalated",
                            "justification": "read the note back",
                        },
                    }
                ],
                "usage": USAGE,
            },
        },
        {
            "name": "write the note",
            "when": {"last_call_id": "call_smoke_echo"},
            "respond": {
                "output": [
                    {
                        "type": "custom_tool_call",
                        "call_id": "call_smoke_patch",
                        "name": "apply_patch",
                        "input": "*** Begin Patch\n*** Add File: note.txt\n+" + NOTE + "*** End Patch\n",
                    }
                ],
                "usage": USAGE,
            },
        },
    ],
    "default": {
        "output": [
            {"type": "reasoning", "id": "rs_smoke", "summary": [["**Plan**: ", "echo, patch, read back."]]},
            {"type": "message", "id": "msg_smoke_1", "deltas": ["Looking ", "around ", "first."]},
            {
                "type": "function_call",
                "call_id": "call_smoke_echo",
                "name": "exec_command",
                "arguments": {"cmd": "echo smoke-ok", "yield_time_ms": 10000},
            },
        ],
        "usage": USAGE,
    },
}


def scratch_dir() -> str:
    """A temporary root that is not under /tmp."""
    for base in (os.environ.get("CODEXMINI_SCRATCH"), "/var/tmp", os.path.join(os.path.expanduser("~"), ".cache")):
        if base and os.path.isdir(base) and os.access(base, os.W_OK):
            return tempfile.mkdtemp(prefix="codexmini-smoke-", dir=base)
    return tempfile.mkdtemp(prefix="codexmini-smoke-")  # pragma: no cover - no writable base at all


def schema_validator(binary: str, root: str, version: str) -> Tuple[Optional[FrameValidator], str]:
    """A strict frame validator for the schema ``binary`` prints, or why there is none."""
    try:
        bundle = bundle_for_binary(binary, os.path.join(root, "schema"), "experimental", version)
    except SchemaError as exc:
        return None, f"no schema from the binary: {exc}"
    return FrameValidator(bundle, strict=True), f"strict, codex {version}'s own schema"


class Smoke:
    def __init__(self, out: IO[str], env: Mapping[str, str], codex_bin: Optional[str]) -> None:
        self.console = Console(out, use_color(out, env))
        self.codex_bin = codex_bin
        self.frames = 0
        self.validator: Optional[FrameValidator] = None
        self.validation = "not run"
        self.deltas = 0
        self.approvals: List[ApprovalRequest] = []
        self.failures: List[str] = []

    def tap(self, direction: str, frame: Dict[str, Any]) -> None:
        self.frames += 1
        if self.validator is not None:
            self.validator.check(direction, frame)

    async def approve(self, request: ApprovalRequest) -> Reply:
        self.approvals.append(request)
        self.console.line(f"approval by policy: accept ({request.kind}: {request.summary})", "yellow")
        return Reply(ACCEPT)

    def expect(self, ok: bool, what: str) -> None:
        self.console.line(("  ok    " if ok else "  FAIL  ") + what, "green" if ok else "red")
        if not ok:
            self.failures.append(what)

    async def run(self, root: str) -> int:
        c = self.console
        binary = find_codex(self.codex_bin)
        found = codex_version(binary.path)
        c.line(f"codexmini smoke: codex {found} at {binary.path}", "bold")
        self.validator, self.validation = schema_validator(binary.path, root, found or "?")
        ws, home = os.path.join(root, "workspace"), os.path.join(root, "codex-home")
        os.makedirs(ws)
        os.makedirs(home)
        log_path = os.path.join(root, "session.jsonl")
        started = time.monotonic()
        transcript = Transcript(c)

        def on_event(event: Event) -> None:
            self.deltas += isinstance(event, AgentMessageDelta)
            transcript(event)

        with ScriptedModel(SCRIPT) as model, SessionLog.open(log_path) as log:
            config = AgentConfig(
                cwd=ws,
                model="gpt-5.4",
                codex_bin=binary.path,
                env={"HOME": root},  # no login profile of this machine in `bash -lc`
                endpoint=ModelEndpoint(model.url, "sk-smoke"),
                codex_home=home,
                handler_timeout=60.0,
                tap=self.tap,
            )
            async with Agent(log, config, approvals=self.approve, on_event=on_event) as agent:
                await agent.start()
                agent.set_knob("approval/policy", "ask")
                c.line("> smoke: echo, write a note with apply_patch, read it back", "bold")
                end = await asyncio.wait_for(agent.run("smoke: echo, write a note with apply_patch, read it back"), 120)
                stats = dict(agent.stats)
            events = list(log.events)
        elapsed = time.monotonic() - started
        self._check(events, end, ws, log_path, found)
        usage = end.get("usage") or {}
        validated = self.validator.frames if self.validator is not None else 0
        c.line("")
        c.line(
            f"steps {stats['steps']} · tool calls {stats['tool_calls']} · approvals {stats['approvals']} · "
            f"tokens {usage.get('totalTokens', 0)} · frames seen {self.frames} · "
            f"frames validated {validated} ({self.validation}) · "
            f"{elapsed:.1f}s",
            "bold",
        )
        if self.failures:
            c.line(f"smoke FAILED: {len(self.failures)} expectation(s) did not hold: " + "; ".join(self.failures), "red")
            return 1
        c.line("smoke passed: Python → codex → model → tools → approval → log all work here", "green")
        return 0

    def _check(self, events: List[Dict[str, Any]], end: Dict[str, Any], ws: str, log_path: str, found: Optional[str]) -> None:
        c = self.console
        c.line("")
        c.line("checks:", "bold")
        results = {e["data"]["callId"]: e["data"] for e in events if e["type"] == "tool/result"}

        def result_text(call: str) -> str:
            return "".join(b.get("text", "") for b in results.get(call, {}).get("content", ()))

        texts = [b["text"] for e in events if e["type"] == "assistant/message" for b in e["data"]["content"] if b["type"] == "text"]
        decisions = [e["data"] for e in events if e["type"] == "approval/decision"]
        note = os.path.join(ws, "note.txt")
        content = None
        if os.path.isfile(note):
            with open(note, encoding="utf-8") as fh:
                content = fh.read()
        checks: List[Tuple[Callable[[], bool], str]] = [
            (lambda: found == CODEX_VERSION, f"codex is the pinned {CODEX_VERSION}"),
            (lambda: end.get("reason") == "completed", "the turn completed"),
            (lambda: self.deltas >= len(FINAL) and texts[-1:] == ["".join(FINAL)], "the answer streamed in deltas and was logged"),
            (lambda: "smoke-ok" in result_text("call_smoke_echo") and not results["call_smoke_echo"]["isError"], "the command ran"),
            (lambda: results.get("call_smoke_patch", {}).get("status") == "completed" and content == NOTE, "apply_patch wrote note.txt"),
            (
                lambda: [(d["itemId"], d["decision"], d["by"]) for d in decisions] == [("call_smoke_read", "accept", "handler")],
                "the approval was asked and answered by policy",
            ),
            (lambda: NOTE.strip() in result_text("call_smoke_read"), "the approved command read the note back"),
            (lambda: bool((end.get("usage") or {}).get("totalTokens")), "token usage reached turn/end"),
            (lambda: read_log(log_path).events == events, "the session log reads back intact"),
            (self._frames_valid, f"every frame is valid against the schema this codex prints ({self.validation})"),
        ]
        for check, what in checks:
            try:
                ok = bool(check())
            except (KeyError, IndexError, OSError):
                ok = False
            self.expect(ok, what)
        if self.validator is not None:
            for problem in self.validator.problems[:5]:
                c.line(f"    {problem}", "red")

    def _frames_valid(self) -> bool:
        """Every frame seen was validated, and none had a problem (False when
        the validator could not run: a check that did not run never passes)."""
        v = self.validator
        return v is not None and self.frames > 0 and v.frames == self.frames and not v.problems


def smoke(args: argparse.Namespace, out: IO[str], env: Mapping[str, str]) -> int:
    root = scratch_dir()
    try:
        return asyncio.run(Smoke(out, env, args.codex_bin).run(root))
    finally:
        if args.keep:
            out.write(f"kept {root}\n")
        else:
            shutil.rmtree(root, ignore_errors=True)


__all__ = ["SCRIPT", "smoke"]
