"""The agent: turns and steps over a durable session log.

Theory of operation
-------------------
The session log (:mod:`.session`) is the single source of truth.  Every step
runs **one codex turn on a fresh thread** whose input is the serialized log
(:class:`.prompt.Transcript`) -- codex keeps no history of its own, so what the
model sees is exactly what is logged.  This is a port of the TypeScript
driver in seed 003 (§3.3, §4, §5), adapted where the 0.149.1 binary differs.

Inbox.  :meth:`Agent.followup` queues messages for the next turn and wakes the
driver; :meth:`Agent.steer` adds to the current turn (delivered at once with
``turn/steer`` when a codex turn is running, else at the next step) and wakes
the driver; :meth:`Agent.inject` adds to the current turn without waking it;
:meth:`Agent.cancel` aborts the running turn (``turn/interrupt``) and, unless
``keep_inbox``, drops what is queued.

A turn: ``turn/start`` → steps while the inbox has messages for this turn →
``turn/end`` with ``completed``, ``blocked`` (an approval answered
``cancel`` interrupted codex), ``aborted`` (cancelled) or ``error``.  The
``turn/end`` is always written, also when something raised.

A step: claim the inbox, inject ``/name`` skills, log the user messages, fold
the permissions from the log (plus configured pins) -- so a knob change acts
on the next step -- then ``thread/start`` + ``turn/start`` and feed the events
to a :class:`.steps.StepFolder`, which rotates steps at segment boundaries and
returns the log writes.  Approvals reach the caller through an async handler;
every answer codex gets is logged as ``approval/decision``.

The child.  One app-server process is reused across steps and turns.  It is
restarted when it died or when the model endpoint changed, and closed after
``child_idle_s`` of idleness when configured.
"""

from __future__ import annotations

import asyncio
import logging
import uuid
from dataclasses import dataclass, field
from typing import Any, Awaitable, Callable, Dict, List, Mapping, Optional, Sequence, Tuple, Union

from . import CODEX_VERSION, __version__
from ._binary import parse_version
from ._client import AppServerClient, Tap
from ._errors import ConfigError, ProcessExited, RpcError, TransportError
from ._events import Event, TurnCompleted, Usage
from ._permission import REQUESTS, ApprovalRequest, Reply, ThreadPermissions, build_answer, decision_of, describe, resolve_permissions
from ._prompt import Transcript, text_block
from ._session import SessionLog, has_header, next_turn_number
from ._skills import SkillProvider, inject_skills
from ._steps import StepFolder, Write
from ._thread import Thread, Turn, image_input, text_input

log = logging.getLogger("codexmini.agent")

ApprovalHandler = Callable[[ApprovalRequest], Awaitable[Reply]]
EventListener = Callable[[Event], None]
Content = Union[str, Sequence[Mapping[str, Any]]]

PROVIDER_ID = "codexmini"
API_KEY_ENV = "CODEXMINI_API_KEY"

IDLE, MAINTENANCE, RUNNING = "idle", "maintenance", "running"


@dataclass(frozen=True)
class ModelEndpoint:
    """Where codex should send model requests (the model handover, SPEC §4.7)."""

    base_url: str
    api_key: str = ""
    wire_api: str = "responses"

    def __post_init__(self) -> None:
        if self.wire_api != "responses":
            # codex 0.149.1 refuses `wire_api = "chat"` at config load and the
            # app-server dies before answering; say so before spawning anything.
            raise ConfigError(
                f"wire_api {self.wire_api!r} is not supported by codex {CODEX_VERSION}: "
                "only the Responses API (wire_api='responses') works"
            )
        if not self.base_url.startswith(("http://", "https://")):
            raise ConfigError(f"model endpoint must be an http(s) URL, not {self.base_url!r}")

    def config(self) -> List[str]:
        # codex rejects a provider without a name at config load (seed 003 §4.5).
        # env_key only when there is a key: codex fails a turn whose env_key
        # variable is missing or empty, while a keyless local endpoint is fine.
        key = f',env_key="{API_KEY_ENV}"' if self.api_key else ""
        table = f'{{name="{PROVIDER_ID}",base_url={_toml(self.base_url)},wire_api="{self.wire_api}"{key}}}'
        return [f'model_provider="{PROVIDER_ID}"', f"model_providers.{PROVIDER_ID}={table}"]

    def env(self) -> Dict[str, str]:
        return {API_KEY_ENV: self.api_key} if self.api_key else {}


def _uncancel() -> None:
    """We absorbed our own cancel(): tell the task so (Python 3.11+ counts them)."""
    task = asyncio.current_task()
    if task is not None and hasattr(task, "uncancel"):
        task.uncancel()


def _toml(value: str) -> str:
    # A TOML basic string; JSON's escapes are a subset TOML accepts.
    import json

    return json.dumps(value)


@dataclass
class AgentConfig:
    """How the agent runs codex.  ``sandbox``/``approval_policy`` pin the
    thread's fields over the log's knobs, each on its own."""

    cwd: str
    model: Optional[str] = None
    codex_bin: Optional[str] = None
    config: Sequence[str] = ()
    env: Mapping[str, str] = field(default_factory=dict)
    pass_env: Sequence[str] = ()
    sandbox: Optional[str] = None
    approval_policy: Optional[str] = None
    endpoint: Optional[ModelEndpoint] = None
    child_idle_s: float = 0.0
    request_timeout: float = 120.0
    handler_timeout: float = 300.0
    interrupt_grace: float = 5.0
    codex_home: Optional[str] = None
    skills: bool = True
    tap: Optional[Tap] = None


class Agent:
    """Drives codex over a session log.  ``await agent.run("prompt")`` for one turn."""

    def __init__(
        self,
        log_: SessionLog,
        config: AgentConfig,
        *,
        approvals: Optional[ApprovalHandler] = None,
        on_event: Optional[EventListener] = None,
        new_id: Callable[[], str] = lambda: uuid.uuid4().hex,
    ) -> None:
        self.log = log_
        self.config = config
        self.approvals = approvals
        self.on_event = on_event
        self.new_id = new_id
        self.phase = IDLE
        self._followups: List[List[Dict[str, Any]]] = []
        self._current: List[Dict[str, Any]] = []  # steer/inject for the running turn
        self._driver: Optional[asyncio.Task] = None
        self._client: Optional[AppServerClient] = None
        self._client_key: Optional[Tuple[Any, ...]] = None
        self._idle_timer: Optional[asyncio.TimerHandle] = None
        self._maintenance: Optional[asyncio.Task] = None
        self._turn: Optional[Turn] = None
        self._folder: Optional[StepFolder] = None
        self._turn_usage = Usage()
        self._cancelled = False
        self._transcript = Transcript()
        self._seen = 0  # events fed to the transcript
        self._turn_no = next_turn_number(log_.events)
        self._step = 0
        self._header_written = False
        self.last_turn_end: Optional[Dict[str, Any]] = None
        self.stats: Dict[str, int] = {"steps": 0, "tool_calls": 0, "approvals": 0, "ignored_items": 0}

    # -- inbox ---------------------------------------------------------------

    def followup(self, content: Content) -> None:
        """Queue a user message for the next turn and wake the driver."""
        self._followups.append([self._user_message(content)])
        self._wake()

    async def steer(self, content: Content) -> None:
        """Add a user message to the current turn, now if codex is running."""
        message = self._user_message(content)
        turn, folder = self._turn, self._folder
        if turn is not None and turn.id is not None and not turn.done and folder is not None:
            # Logged when codex echoes it as a userMessage item, so the log
            # keeps the order the model saw (steps.StepFolder.steer).
            folder.steer(message)
            try:
                await turn.steer(self._as_input(message))
                return
            except RpcError as exc:  # the codex turn ended meanwhile: next step instead
                log.info("turn/steer refused (%s); the message goes to the next step", exc.message)
                folder.unsteer(message)
        self._current.append(message)
        self._wake()

    def inject(self, content: Content) -> None:
        """Add a user message for the current turn's next step, without waking."""
        self._current.append(self._user_message(content))

    def cancel(self, keep_inbox: bool = False) -> None:
        """Abort the running turn (``turn/interrupt``); drop the inbox unless kept."""
        if not keep_inbox:
            self._followups.clear()
            self._current.clear()
        if self.phase == RUNNING:
            self._cancelled = True
            if self._driver is not None:
                self._driver.cancel()

    async def run(self, content: Content) -> Dict[str, Any]:
        """Queue ``content``, run until idle, return the last ``turn/end`` data."""
        self.last_turn_end = None
        self.followup(content)
        await self.wait_idle()
        # Cancelled before the turn could start: nothing was logged.
        return self.last_turn_end or {"reason": "aborted"}

    async def wait_idle(self) -> None:
        """Wait until no turn runs and no maintenance (idle shutdown) is under way."""
        if self._maintenance is not None:
            await asyncio.shield(self._maintenance)
        while self._driver is not None and not self._driver.done():
            try:
                await asyncio.shield(self._driver)
            except asyncio.CancelledError:
                if not self._driver.done():
                    raise

    async def start(self) -> None:
        """Start the codex child (if needed) and write the session header once.

        Raises :class:`~.errors.BinaryNotFound` before anything is logged when
        there is no codex to run."""
        await self._ensure_client()
        if not self._header_written:
            self._header_written = True
            self._append(
                "session/header",
                {
                    "reason": "resume" if has_header(self.log.events) else "initial",
                    "provider": "codex",
                    "model": self._model_label(),
                    "codexVersion": self._codex_version(),
                    "codexminiVersion": __version__,
                },
                turn=None,
                step=None,
            )

    def set_knob(self, kind: str, value: str) -> None:
        """Log a ``sandbox/mode`` or ``approval/policy`` knob (applies next step)."""
        key = {"sandbox/mode": "mode", "approval/policy": "policy"}[kind]
        self._append(kind, {key: value}, turn=None, step=None)

    async def close(self) -> None:
        """Cancel anything running and shut the child down."""
        self.cancel()
        await self.wait_idle()
        await self._close_child()

    async def __aenter__(self) -> "Agent":
        return self

    async def __aexit__(self, *exc: Any) -> None:
        await self.close()

    # -- the driver ----------------------------------------------------------

    def _wake(self) -> None:
        if self._driver is None or self._driver.done():
            self._driver = asyncio.get_running_loop().create_task(self._drive())

    async def _drive(self) -> None:
        self._cancel_idle_timer()
        if self._maintenance is not None:  # a followup waits for the idle shutdown to finish
            await asyncio.shield(self._maintenance)
        try:
            while self._followups or (self._current and self.phase == IDLE):
                batch = self._followups.pop(0) if self._followups else []
                await self._run_turn(batch)
        finally:
            self.phase = IDLE
            self._arm_idle_timer()

    async def _run_turn(self, batch: List[Dict[str, Any]]) -> None:
        self.phase = RUNNING
        self._cancelled = False
        try:
            await self.start()
        except asyncio.CancelledError:
            if not self._cancelled:
                raise
            _uncancel()  # cancel() before anything was logged: no turn at all
            return
        turn_no = self._turn_no = max(self._turn_no, next_turn_number(self.log.events))
        self._step = 0
        self._append("turn/start", {}, step=None)
        end: Dict[str, Any] = {"reason": "completed"}
        self._turn_usage = Usage()
        try:
            messages = batch + self._claim()
            while True:
                reason, error = await self._run_step(messages)
                if reason != "completed":
                    end = {"reason": reason}
                    if error is not None:
                        end["error"] = error
                    break
                messages = self._claim()
                if not messages:
                    break
        except asyncio.CancelledError:
            end = {"reason": "aborted"}
            if not self._cancelled:  # cancelled from outside, not by cancel()
                self._finish_turn(turn_no, end)
                raise
            _uncancel()
        except Exception as exc:  # the driver boundary: log it, end the turn
            log.exception("turn %d failed", turn_no)
            error = {"message": f"{type(exc).__name__}: {exc}", "code": "UNKNOWN"}
            self._append("agent/error", error, step=self._step or None)
            end = {"reason": "error", "error": error}
        self._finish_turn(turn_no, end)

    def _finish_turn(self, turn_no: int, end: Dict[str, Any]) -> None:
        if self._turn_usage != Usage():  # every codex turn's usage, aborted ones too
            end["usage"] = self._turn_usage.to_log()
        self._append("turn/end", end, step=None)
        self.last_turn_end = end
        self._turn_no = turn_no + 1
        self.phase = IDLE

    def _claim(self) -> List[Dict[str, Any]]:
        claimed, self._current = self._current, []
        return claimed

    # -- one step ------------------------------------------------------------

    async def _run_step(self, messages: List[Dict[str, Any]]) -> Tuple[str, Optional[Dict[str, str]]]:
        self._step += 1
        self.stats["steps"] += 1
        self._append("step/start", {})
        messages = self._inject_skills(messages)
        for message in messages:
            self._append("user/message", message)
        permissions = resolve_permissions(self.log.events, self.config.sandbox, self.config.approval_policy)
        folder = self._folder = StepFolder(step=self._step, model=self._model_label(), new_id=self.new_id)
        try:
            return await self._codex_turn(messages, permissions, folder)
        finally:
            self._folder = None
            self._turn_usage = self._turn_usage + folder.usage
            self._current[:0] = folder.unechoed()  # steered, never echoed: the next step logs them

    async def _codex_turn(
        self, messages: List[Dict[str, Any]], permissions: ThreadPermissions, folder: StepFolder
    ) -> Tuple[str, Optional[Dict[str, str]]]:
        try:
            client = await self._ensure_client()
            thread = await Thread.start(
                client,
                cwd=self.config.cwd,
                model=self.config.model,
                sandbox=permissions.sandbox,
                approval_policy=permissions.approval_policy,
            )
            turn = thread.turn(self._step_input(messages), interrupt_grace=self.config.interrupt_grace)
            self._turn = turn
            try:
                completed = await self._consume(turn, folder)
            finally:
                self._turn = None
                thread.close()
                # The turn also counts usage it drained after an interrupt.
                folder.usage = turn.usage
        except asyncio.CancelledError:
            self._apply(folder.finish(None), folder)
            self._append("step/end", {"reason": "aborted"}, step=folder.step)
            raise
        except TransportError as exc:
            # The stream ended without turn/completed (the child died).
            self._apply(folder.finish(None), folder)
            self._append("step/end", {"reason": "error"}, step=folder.step)
            return "error", {"message": str(exc), "code": "CODEX_NO_RESULT"}
        except RpcError as exc:  # codex refused thread/start or turn/start
            self._apply(folder.finish(None), folder)
            self._append("step/end", {"reason": "error"}, step=folder.step)
            return "error", {"message": exc.message, "code": "CODEX_ERROR"}
        self._apply(folder.finish(completed), folder)
        reason, error = self._outcome(completed)
        self._append("step/end", {"reason": reason}, step=folder.step)
        return reason, error

    async def _consume(self, turn: Turn, folder: StepFolder) -> TurnCompleted:
        async with turn:
            async for event in turn:
                if self.on_event is not None:
                    self.on_event(event)
                if isinstance(event, TurnCompleted):
                    return event
                self._apply(folder.feed(event), folder)
        raise ProcessExited(None, "the turn ended without turn/completed")  # pragma: no cover

    def _outcome(self, completed: TurnCompleted) -> Tuple[str, Optional[Dict[str, str]]]:
        if completed.status == "completed":
            return "completed", None
        if completed.status == "interrupted":
            # Not interrupted by us: an approval answered `cancel` stopped codex.
            return ("aborted" if self._cancelled else "blocked"), None
        message = completed.error_message or f"codex turn {completed.status}"
        return "error", {"message": message, "code": "CODEX_ERROR"}

    def _apply(self, writes: List[Write], folder: StepFolder) -> None:
        for w in writes:
            self._append(w.type, w.data, step=w.step)
        self._step = folder.step
        self.stats["tool_calls"] += sum(1 for w in writes if w.type == "tool/call")
        self.stats["steps"] += sum(1 for w in writes if w.type == "step/start")
        self.stats["ignored_items"] = sum(folder.ignored.values())

    def _step_input(self, messages: List[Dict[str, Any]]) -> List[Dict[str, Any]]:
        self._transcript.extend(self.log.events[self._seen :])
        self._seen = len(self.log.events)
        items = [text_input(self._transcript.text())]
        for message in messages:
            items += [image_input(b["path"]) for b in message["content"] if b.get("type") == "image"]
        return items

    def _inject_skills(self, messages: List[Dict[str, Any]]) -> List[Dict[str, Any]]:
        if not self.config.skills:
            return messages
        provider = SkillProvider(self.config.cwd, codex_home=self.config.codex_home)
        return inject_skills(messages, provider.get, lambda: self._cancelled, self.new_id)

    # -- the child -----------------------------------------------------------

    async def _ensure_client(self) -> AppServerClient:
        endpoint = self.config.endpoint
        key = (endpoint, tuple(self.config.config), self.config.codex_bin)
        if self._client is not None and (self._client.closed or key != self._client_key):
            await self._close_child()
        if self._client is None:
            # The endpoint's provider table first: a later `-c` assigning the
            # whole table would replace the caller's model_providers.* flags.
            config = (endpoint.config() if endpoint else []) + list(self.config.config)
            env = dict(self.config.env)
            env.update(endpoint.env() if endpoint else {})
            if self.config.codex_home:
                env["CODEX_HOME"] = self.config.codex_home
            client = await AppServerClient.start(
                codex_bin=self.config.codex_bin,
                config=config,
                env=env,
                pass_env=self.config.pass_env,
                cwd=self.config.cwd,
                tap=self.config.tap,
                request_timeout=self.config.request_timeout,
                handler_timeout=self.config.handler_timeout,
            )
            if self.approvals is not None:
                for method in REQUESTS:
                    if build_answer(method, {}, Reply("decline")).error is None:
                        client.on_request(method, self._answer)
            client.on_answer(self._log_answer)
            self._client, self._client_key = client, key
        return self._client

    async def _answer(self, method: str, params: Dict[str, Any]) -> Any:
        assert self.approvals is not None
        reply = await self.approvals(describe(method, params))
        return build_answer(method, params, reply).result

    def _log_answer(self, method: str, params: Dict[str, Any], frame: Dict[str, Any], by: str) -> None:
        self.stats["approvals"] += 1
        item = params.get("itemId") or params.get("callId") or params.get("serverName")
        data = {"method": method, "itemId": item, "decision": decision_of(frame), "by": by}
        self._append("approval/decision", data, step=self._step or None)

    async def _close_child(self) -> None:
        self._cancel_idle_timer()
        client, self._client = self._client, None
        if client is not None:
            await client.close()

    def _arm_idle_timer(self) -> None:
        if self.config.child_idle_s > 0 and self._client is not None:
            loop = asyncio.get_running_loop()
            self._idle_timer = loop.call_later(self.config.child_idle_s, self._idle_shutdown)

    def _cancel_idle_timer(self) -> None:
        if self._idle_timer is not None:
            self._idle_timer.cancel()
            self._idle_timer = None

    def _idle_shutdown(self) -> None:
        self._idle_timer = None
        if self.phase == IDLE and self._client is not None:
            log.info("closing the idle codex app-server")
            self.phase = MAINTENANCE
            self._maintenance = asyncio.get_running_loop().create_task(self._maintain())

    async def _maintain(self) -> None:
        try:
            await self._close_child()
        finally:
            self._maintenance = None
            if self.phase == MAINTENANCE:
                self.phase = IDLE

    # -- log helpers -----------------------------------------------------------

    def _codex_version(self) -> str:
        agent = (self._client.server_info.get("userAgent") if self._client else None) or ""
        return parse_version(agent.split(" ")[0]) or CODEX_VERSION

    def _model_label(self) -> str:
        return self.config.model or "default"

    def _append(self, type_: str, data: Dict[str, Any], *, turn: Optional[int] = -1, step: Optional[int] = -1) -> None:
        self.log.append(
            type_,
            data,
            turn=self._turn_no if turn == -1 else turn,
            step=(self._step or None) if step == -1 else step,
        )

    def _user_message(self, content: Content) -> Dict[str, Any]:
        if isinstance(content, str):
            blocks = [text_block(content)]
        else:
            blocks = [dict(b) for b in content]
        return {"id": self.new_id(), "content": blocks, "source": {"kind": "user"}}

    def _as_input(self, message: Mapping[str, Any]) -> List[Dict[str, Any]]:
        items = []
        for block in message["content"]:
            if block.get("type") == "text":
                items.append(text_input(block["text"]))
            elif block.get("type") == "image":
                items.append(image_input(block["path"]))
        return items


__all__ = [
    "API_KEY_ENV",
    "Agent",
    "AgentConfig",
    "ApprovalHandler",
    "ModelEndpoint",
    "IDLE",
    "MAINTENANCE",
    "RUNNING",
]
