"""``python -m codexmini smoke``: one command that proves the whole chain works.

Python → a supported codex binary → a model → tools → an approval → the
durable log, all on this machine and offline: the model is the scripted
loopback server (:mod:`.testing.scripted_model`), ``CODEX_HOME`` and the
workspace are temporary directories (under ``/var/tmp``: codex refuses to
create its helper binaries under ``/tmp``).  One agent turn runs a streamed
answer, a command, an ``apply_patch`` and a command that needs approval,
which the smoke policy accepts.

It works on every supported codex (:data:`~codexmini.OLDEST_CODEX_VERSION` to
the pin) and says whether the binary is one.  Which tools codex offers depends
on its version and the model slug (0.149.1 offers ``apply_patch`` for
``gpt-5.4``, 0.171.0 only for ``gpt-5.5``), so nothing is hard-coded per
version: the smoke asks ``model/list`` for every slug, runs one probe turn
per slug at once on one connection, and picks the first slug (in the
binary's own order) whose request offers every tool the script calls
(:func:`pick_model`).  The scripted model then calls each tool in the form
the request offers it, and refuses a script that calls a tool not offered
(a check fails with its reason).

Every expectation is checked at the end; the exit status is 0 only if all
held, else 1 with the list of what failed (3 when codex is missing).  Every
frame -- the probe's and the agent's -- is validated, strictly, against the
schema **the binary in use prints** (``codex app-server generate-json-schema
--experimental`` into the temporary folder), with codexmini's own
standard-library validator (:mod:`._jsonschema`): a vendored copy with nothing
installed validates as much as a checkout.  A check that could not run fails;
it is never printed as ``ok``.  What the model received is checked in the
scripted model's request log: codex 0.149.1 can drop a command's first output
chunk from what it reports to the client (its ``outputDelta`` notifications)
but always sends the model the whole output.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import os
import shutil
import time
from dataclasses import replace
from typing import IO, Any, Callable, Dict, Iterator, List, Mapping, Optional, Sequence, Tuple

from ._agent import Agent, AgentConfig
from ._binary import codex_version, find_codex, in_supported_range, server_version, supported_range
from ._client import AppServerClient, Tap
from ._connect import Connect
from ._deadline import within
from ._endpoint import ModelEndpoint
from ._errors import CodexminiError, CodexTimeout, SchemaError, SessionLogError, StartFailed, TransportError
from ._events import AgentMessageDelta, Event
from ._launch import Launch, Timeouts
from ._permission import ACCEPT, ApprovalRequest, Reply
from ._render import Console, EventPrinter, use_color
from ._schema import FrameValidator, bundle_for_binary
from ._session import SessionLog, read_log
from ._threads import Thread
from .testing import ScriptedModel
from .testing.live import CodexServer, scratch_dir
from .testing.scripted_model import ToolKey, offered_tools

NOTE = "hello from the codexmini smoke run\n"
FINAL = ["All ", "three ", "tools ", "worked."]
USAGE = {"input_tokens": 120, "cached_tokens": 20, "output_tokens": 30, "reasoning_tokens": 5}

PROBE = "codexmini smoke: which tools do you offer?"
#: The tools SCRIPT calls; a model slug must offer all of them.
TOOLS: Tuple[ToolKey, ...] = ((None, "exec_command"), (None, "apply_patch"))
PROBE_TIMEOUT_S = 60.0

SCRIPT: Dict[str, Any] = {
    "rules": [
        {
            "name": "probe",
            "when": {"user_contains": PROBE},
            "respond": {"output": [{"type": "message", "deltas": ["probed"]}]},
        },
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


def pick_model(slugs: Sequence[str], offers: Mapping[str, Any], needed: Sequence[ToolKey] = TOOLS) -> Optional[str]:
    """The first slug whose probe request offered every ``needed`` tool
    (``offers``: slug → :func:`~.testing.scripted_model.offered_tools`)."""
    for slug in slugs:
        if slug in offers and all(key in offers[slug] for key in needed):
            return slug
    return None


def model_saw(requests: Sequence[Mapping[str, Any]], call_id: str) -> str:
    """What the model received as the output of ``call_id`` (every request's
    ``*_call_output`` items for it, joined), from the scripted model's log."""
    seen = []
    for request in requests:
        body = request.get("body")
        for item in body.get("input", ()) if isinstance(body, dict) else ():
            if (
                isinstance(item, dict)
                and item.get("call_id") == call_id
                and str(item.get("type", "")).endswith("_call_output")
            ):
                output = item.get("output")
                seen.append(output if isinstance(output, str) else repr(output))
    return "\n".join(seen)


def schema_validator(binary: str, root: str, version: str) -> Tuple[Optional[FrameValidator], str]:
    """A strict frame validator for the schema ``binary`` prints, or why there is none."""
    try:
        bundle = bundle_for_binary(binary, os.path.join(root, "schema"), "experimental", version)
    except SchemaError as exc:
        return None, f"no schema from the binary: {exc}"
    return FrameValidator(bundle, strict=True), f"strict, codex {version}'s own schema"


#: ``smoke --over``: how the smoke reaches the codex it starts.
TRANSPORTS = ("stdio", "ws", "unix")


class Reach:
    """How the smoke reaches its codex: a child per client over stdio, or one
    server (``app-server --listen ws://127.0.0.1:0`` or ``unix://<root>/codex.sock``)
    that every client connects to.  Either way codex runs on the scripted
    model, with the temporary ``CODEX_HOME`` and ``HOME``; a server is
    stopped (its whole process group) when the ``with`` block ends."""

    def __init__(self, over: str, launch: Launch, server: Optional[CodexServer] = None) -> None:
        self.over, self.launch, self.server = over, launch, server

    @classmethod
    @contextlib.contextmanager
    def start(cls, over: str, binary: str, model: ScriptedModel, root: str, ws: str, home: str) -> Iterator["Reach"]:
        launch = Launch(
            codex_bin=binary,
            endpoint=ModelEndpoint(model.url, "sk-smoke"),
            env={"HOME": root},  # no login profile of this machine in `bash -lc`
            codex_home=home,
            cwd=ws,
            timeouts=Timeouts(handler=60.0),
        )
        if over == "stdio":
            yield cls(over, launch)
            return
        where = "ws://127.0.0.1:0" if over == "ws" else f"unix://{os.path.join(root, 'codex.sock')}"
        server = CodexServer.start(replace(launch, args=("--listen", where)), os.path.join(root, "server.stderr"))
        try:
            yield cls(over, launch, server)
        finally:
            server.stop()

    @property
    def connect(self) -> Optional[Connect]:
        """The server to connect to (``None`` over stdio)."""
        return None if self.server is None else Connect(self.server.url, timeouts=self.launch.timeouts)

    async def client(self, tap: Tap) -> AppServerClient:
        connect = self.connect
        if connect is not None:
            return await AppServerClient.connect(connect, tap=tap)
        return await AppServerClient.start(self.launch, tap=tap)

    def agent_options(self) -> Dict[str, Any]:
        """``AgentConfig``'s way to codex: ``connect=`` the server, or ``launch=`` a child."""
        connect = self.connect
        return {"connect": connect} if connect is not None else {"launch": replace(self.launch, cwd=None)}


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
        self.model_slug: Optional[str] = None
        self.probed: List[str] = []
        self.probe_error = ""
        self.requests: List[Dict[str, Any]] = []
        self.script_errors: List[str] = []

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

    async def probe(self, model: ScriptedModel, reach: Reach, ws: str) -> None:
        """Ask ``model/list`` for every slug, run one probe turn per slug at
        once, and pick the first slug offering every tool the script calls."""
        client = await reach.client(self.tap)
        try:
            listed = await client.request("model/list", {"includeHidden": True}, timeout=PROBE_TIMEOUT_S)
            slugs = [m["model"] for m in listed["data"] if isinstance(m, dict) and isinstance(m.get("model"), str)]

            async def one(slug: str) -> None:
                thread = await Thread.start(client, cwd=ws, model=slug, sandbox="read-only", approval_policy="never")
                try:
                    async with thread.turn(PROBE) as turn:
                        async for _ in turn:  # pragma: no branch - Python 3.9 traces this loop's end as another arc
                            pass
                finally:
                    thread.close()

            await within(asyncio.gather(*(one(slug) for slug in slugs)), PROBE_TIMEOUT_S)
        finally:
            await client.close()
        offers = {r["body"].get("model"): offered_tools(r["body"]) for r in model.requests if r["rule"] == "probe"}
        self.probed = [slug for slug in slugs if slug in offers]
        self.model_slug = pick_model(slugs, offers)

    async def run(self, root: str, over: str = "stdio") -> int:
        c = self.console
        binary = find_codex(self.codex_bin)
        found = codex_version(binary.path)
        c.line(f"codexmini smoke: codex {found} at {binary.path}, over {over}", "bold")
        self.validator, self.validation = schema_validator(binary.path, root, found or "?")
        ws, home = os.path.join(root, "workspace"), os.path.join(root, "codex-home")
        os.makedirs(ws)
        os.makedirs(home)
        log_path = os.path.join(root, "session.jsonl")
        started = time.monotonic()
        transcript = EventPrinter(c)

        def on_event(event: Event) -> None:
            self.deltas += isinstance(event, AgentMessageDelta)
            transcript(event)

        end: Mapping[str, Any] = {}
        stats: Dict[str, Any] = {}
        events: List[Dict[str, Any]] = []
        with ScriptedModel(SCRIPT) as model, Reach.start(over, binary.path, model, root, ws, home) as reach:
            try:
                await self.probe(model, reach, ws)
            except (CodexminiError, asyncio.TimeoutError, KeyError, TypeError) as exc:
                self.probe_error = f"{type(exc).__name__}: {exc}"
            probed = len(model.requests)
            # Without a slug that offers every tool the run still goes on (and
            # the script error says which tool was missing), with a slug the
            # binary listed if there is one.
            slug = self.model_slug or (self.probed[0] if self.probed else "gpt-fake")
            c.line(
                f"model {slug} (of {len(self.probed)} probed: the first that offers {', '.join(k[1] for k in TOOLS)})",
                "bold",
            )
            with SessionLog.open(log_path) as log:
                config = AgentConfig(cwd=ws, model=slug, tap=self.tap, **reach.agent_options())
                async with Agent(log, config, approvals=self.approve, on_event=on_event) as agent:
                    try:
                        await agent.start()
                    except (TransportError, CodexTimeout) as exc:
                        raise StartFailed(f"codex failed to start: {exc}") from exc
                    agent.set_knob("approval/policy", "ask")
                    c.line("> smoke: echo, write a note with apply_patch, read it back", "bold")
                    end = await within(agent.run("smoke: echo, write a note with apply_patch, read it back"), 120)
                    stats = dict(agent.stats)
                events = list(log.events)
            self.requests = list(model.requests[probed:])
            self.script_errors = list(model.errors)
        elapsed = time.monotonic() - started
        self._check(events, end, ws, log_path, found)
        c.line("")
        c.line(self.summary(stats, end, elapsed), "bold")
        if self.failures:
            c.line(
                f"smoke FAILED: {len(self.failures)} expectation(s) did not hold: " + "; ".join(self.failures), "red"
            )
            return 1
        c.line(f"smoke passed over {over}: Python → codex → model → tools → approval → log all work here", "green")
        return 0

    def summary(self, stats: Mapping[str, Any], end: Mapping[str, Any], elapsed: float) -> str:
        """The summary line.  Both frame counts only ever count up, from the
        tap (seen) and from the validator (validated: 0 when it never ran)."""
        usage = end.get("usage") or {}
        validated = self.validator.frames if self.validator is not None else 0
        return (
            f"steps {stats.get('steps', 0)} · tool calls {stats.get('tool_calls', 0)} · approvals {stats.get('approvals', 0)} · "
            f"tokens {usage.get('totalTokens', 0)} · model {self.model_slug or '(none)'} · frames seen {self.frames} · "
            f"frames validated {validated} ({self.validation}) · {elapsed:.1f}s"
        )

    def _check(
        self, events: List[Dict[str, Any]], end: Mapping[str, Any], ws: str, log_path: str, found: Optional[str]
    ) -> None:
        c = self.console
        c.line("")
        c.line("checks:", "bold")
        results = {e["data"]["callId"]: e["data"] for e in events if e["type"] == "tool/result"}

        def ran(call: str) -> bool:
            result = results[call]
            return result["status"] == "completed" and not result["isError"]

        texts = [
            b["text"]
            for e in events
            if e["type"] == "assistant/message"
            for b in e["data"]["content"]
            if b["type"] == "text"
        ]
        decisions = [e["data"] for e in events if e["type"] == "approval/decision"]
        note = os.path.join(ws, "note.txt")
        content = None
        if os.path.isfile(note):
            with open(note, encoding="utf-8") as fh:
                content = fh.read()
        offered = ", ".join(k[1] for k in TOOLS)
        probe = f"probed {len(self.probed)} slug(s) from model/list" + (
            f"; {self.probe_error}" if self.probe_error else ""
        )
        checks: List[Tuple[Callable[[], bool], str]] = [
            (
                lambda: in_supported_range(found),
                f"codex {found or '(version unknown)'} is supported ({supported_range()})",
            ),
            (
                lambda: self.model_slug is not None,
                f"codex offers {offered} for model {self.model_slug or '(none)'} ({probe})",
            ),
            (
                lambda: not self.script_errors,
                "the model called only tools the request offered" + "".join(f"; {e}" for e in self.script_errors[:1]),
            ),
            (lambda: end.get("reason") == "completed", "the turn completed"),
            (
                lambda: self.deltas >= len(FINAL) and texts[-1:] == ["".join(FINAL)],
                "the answer streamed in deltas and was logged",
            ),
            (
                lambda: ran("call_smoke_echo") and "smoke-ok" in model_saw(self.requests, "call_smoke_echo"),
                "the command ran (its output reached the model)",
            ),
            (lambda: ran("call_smoke_patch") and content == NOTE, "apply_patch wrote note.txt"),
            (
                lambda: (
                    [(d["itemId"], d["decision"], d["by"]) for d in decisions]
                    == [("call_smoke_read", "accept", "handler")]
                ),
                "the approval was asked and answered by policy",
            ),
            (
                lambda: ran("call_smoke_read") and NOTE.strip() in model_saw(self.requests, "call_smoke_read"),
                "the approved command read the note back (to the model)",
            ),
            (lambda: bool((end.get("usage") or {}).get("totalTokens")), "token usage reached turn/end"),
            (lambda: read_log(log_path).events == events, "the session log reads back intact"),
            (self._frames_valid, f"every frame is valid against the schema this codex prints ({self.validation})"),
        ]
        for check, what in checks:
            try:
                ok = bool(check())
            except (KeyError, IndexError, OSError, SessionLogError):  # a log that cannot be read back: a failed check
                ok = False
            self.expect(ok, what)
        if self.validator is not None:
            for problem in self.validator.problems[:5]:
                c.line(f"    {problem}", "red")
        if not in_supported_range(found):
            c.line(
                f"    codexmini supports codex {supported_range()}; this one may still work, but it was not tested",
                "yellow",
            )

    def _frames_valid(self) -> bool:
        """Every frame seen was validated, and none had a problem (False when
        the validator could not run: a check that did not run never passes)."""
        v = self.validator
        return v is not None and self.frames > 0 and v.frames == self.frames and not v.problems


class ConnectionSmoke:
    """``smoke --connect URL``: what can be proved of a server that is already
    running, without a model turn (its model is its own: a turn would go to
    it, online): it is reached and takes the credentials, it is a supported
    codex, ``model/list`` answers, a thread starts and is let go
    (``thread/unsubscribe``), and every frame is valid against the schema of
    that codex version, printed by a local binary of the same version.  A
    check that could not run fails."""

    def __init__(self, out: IO[str], env: Mapping[str, str], codex_bin: Optional[str]) -> None:
        self.smoke = Smoke(out, env, codex_bin)
        self._early: List[Tuple[str, Dict[str, Any]]] = []  # frames before the server named its version

    def tap(self, direction: str, frame: Dict[str, Any]) -> None:
        if self.smoke.validator is None:
            self.smoke.frames += 1
            self._early.append((direction, frame))
        else:
            self.smoke.tap(direction, frame)

    async def run(self, connect: Connect, root: str) -> int:
        s, c = self.smoke, self.smoke.console
        c.line(f"codexmini smoke: the codex app-server at {connect.url}", "bold")
        try:
            client = await AppServerClient.connect(connect, tap=self.tap)
        except TransportError as exc:  # out of reach, refused, not a WebSocket server, silent
            raise StartFailed(f"codex at {connect.url} could not be reached: {exc}") from exc
        found = server_version(client.server_info)
        models: List[Any] = []
        unsubscribed: Any = None
        try:
            s.validator, s.validation = self._validator(found, root)
            if s.validator is not None:  # the handshake's frames were only kept: check them now
                for direction, frame in self._early:
                    s.validator.check(direction, frame)
            listed = await client.request("model/list", {"includeHidden": True})
            models = list(listed.get("data") or ())
            started = await client.request("thread/start", {"sandbox": "read-only", "approvalPolicy": "never"})
            thread_id = started["thread"]["id"]
            unsubscribed = await client.request("thread/unsubscribe", {"threadId": thread_id})
        except (CodexminiError, KeyError, TypeError, AttributeError) as exc:
            c.line(f"  {type(exc).__name__}: {exc}", "red")
        finally:
            await client.close()
        c.line("")
        c.line("checks:", "bold")
        s.expect(True, f"reached {connect.url} and initialized")
        s.expect(in_supported_range(found), f"codex {found or '(version unknown)'} is supported ({supported_range()})")
        s.expect(bool(models), f"model/list answered ({len(models)} model(s))")
        s.expect(unsubscribed == {"status": "unsubscribed"}, "a thread started and was let go (thread/unsubscribe)")
        s.expect(s._frames_valid(), f"every frame is valid against the schema of this codex ({s.validation})")
        c.line("")
        validated = s.validator.frames if s.validator is not None else 0
        c.line(f"frames seen {s.frames} · frames validated {validated} ({s.validation})", "bold")
        if s.failures:
            c.line(f"smoke FAILED: {len(s.failures)} expectation(s) did not hold: " + "; ".join(s.failures), "red")
            return 1
        c.line(f"smoke passed: codexmini → {connect.url} (no model turn: the server's model is its own)", "green")
        return 0

    def _validator(self, found: Optional[str], root: str) -> Tuple[Optional[FrameValidator], str]:
        try:
            binary = find_codex(self.smoke.codex_bin).path
        except CodexminiError:
            return None, f"not run: no local codex {found} to print its schema"
        local = codex_version(binary)
        if local is None or local != found:
            return None, f"not run: the local codex is {local}, the server {found}"
        return schema_validator(binary, root, local)


def smoke(args: argparse.Namespace, out: IO[str], env: Mapping[str, str]) -> int:
    """The smoke over each transport ``args.over`` names (``all``: the three
    in turn, each in a root of its own); 0 only if every run held."""
    root = scratch_dir("codexmini-smoke-")
    overs = TRANSPORTS if args.over == "all" else (args.over,)
    try:
        if args.connect is not None:
            connect = Connect(args.connect, token_file=args.token_file)
            return asyncio.run(ConnectionSmoke(out, env, args.codex_bin).run(connect, root))
        codes = []
        for over in overs:
            where = os.path.join(root, over) if len(overs) > 1 else root
            os.makedirs(where, exist_ok=True)
            codes.append(asyncio.run(Smoke(out, env, args.codex_bin).run(where, over)))
        return max(codes)
    finally:
        if args.keep:
            out.write(f"kept {root}\n")
        else:
            shutil.rmtree(root, ignore_errors=True)


__all__ = ["PROBE", "SCRIPT", "TOOLS", "TRANSPORTS", "ConnectionSmoke", "Reach", "model_saw", "pick_model", "smoke"]
