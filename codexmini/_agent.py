"""The agent: turns and steps over a durable session log.

The session log (:mod:`._session`) is the single source of truth.  Every step
runs **one codex turn on a fresh thread** whose input is the serialized log
(:class:`._prompt.Transcript`): codex keeps no history of its own, so what the
model sees is exactly what is logged.  This module is the driver; each other
job has a place of its own:

* the **inbox** (:mod:`._inbox`, pure) holds what the user asked, for which
  turn, and builds the messages: :meth:`Agent.followup` queues a new turn,
  :meth:`Agent.steer` adds to the current one (at once with ``turn/steer``
  while codex runs), :meth:`Agent.inject` adds without waking the driver.
  A message that waits is logged (``inbox/queued``) before it is queued, and
  a dropped one is logged dropped, so the log's inbox (:attr:`SessionLog.pending`)
  is the agent's: a new agent on a log whose writer died queues the pending
  messages again, and its next wake (:meth:`Agent.run_pending`) runs them;
* the **knobs** (:mod:`._knobs`, pure) fold the log's settings -- model,
  endpoint, sandbox and approval policy -- afresh every step, so a change
  acts on the next one;
* the **child** (:class:`._supervisor.ChildSupervisor`) starts the app-server
  an :class:`~codexmini.Launch` describes, reuses it, replaces it when it
  died, stopped answering or the launch changed (a new endpoint), and closes
  it after ``child_idle_s`` idle;
* the **step fold** (:class:`._stepfold.StepFold`, pure) turns a codex turn's
  events into log writes, cutting steps at segment boundaries;
* the **prompt** (:class:`._prompt.Transcript`, pure) is bounded: long tool
  outputs are cut in it (``tool_output_budget``; the log keeps them whole),
  and a step whose prompt would pass ``prompt_budget`` first *compacts* the
  session (:meth:`Agent._compact`): a summary call on a fresh thread, then
  one ``session/compaction`` append -- nothing before the summary is in
  hand, so a compaction that fails or dies leaves the log as it was.

A turn is ``turn/start`` → steps while the inbox has messages for it →
``turn/end`` with ``completed``, ``blocked`` (an approval answered ``cancel``,
or a pre-step hook's veto), ``aborted`` (cancelled) or ``error``: always
written, also when something raised.  A step claims the inbox, injects
``/name`` skills, logs the user messages, then runs ``thread/start`` +
``turn/start`` and feeds the events to the step fold.  What one read of
codex's output brought is folded without an await, written with one ``write``
and one flush, then shown to ``on_event`` in order, each event after the
writes it speaks of; a listener that raises ends the turn in ``error``.
Every answer codex gets to a server request is logged as
``approval/decision``, and told to the step fold: a call codex then completes
``declined`` names that answer in its ``tool/result`` (``approval``).  The
fold times the tools with the agent's monotonic clock, so a tool still
running when its codex turn ends says for how long (``elapsedMs``).
"""

from __future__ import annotations

import asyncio
import logging
import os
import time
from typing import (
    TYPE_CHECKING,
    Any,
    Awaitable,
    Callable,
    Dict,
    List,
    Literal,
    Mapping,
    Optional,
    Sequence,
    Tuple,
    Type,
    TypedDict,
    Union,
    cast,
)

from ._errors import (
    CompactionFailed,
    ConfigError,
    EndpointKeyMissing,
    ModelUnreachable,
    ProcessExited,
    RpcError,
    SessionLogError,
    TransportError,
    TurnTimeout,
)
from ._events import (
    Event,
    MessageDelta,
    PhaseChanged,
    PlanDelta,
    ReasoningSummaryDelta,
    ReasoningTextDelta,
    SessionStarted,
    TurnCompleted,
    Usage,
)
from ._inbox import Content, Inbox, Message, content_blocks, message_images, message_input
from ._inputs import text_input
from ._launch import Launch, positive_int, positive_seconds
from ._permission import (
    SANDBOX_MODES,
    ApprovalHandler,
    ApprovalPolicy,
    SandboxMode,
    check_thread_options,
    decision_of,
    install_approvals,
    unanswered,
)
from ._prompt import COMPACTION, TOOL_OUTPUT_BUDGET, Transcript, compaction_request
from ._version import CODEX_VERSION, __version__

if TYPE_CHECKING:  # the checker sees the standard library; at run time, ._dataclasses (nothing compiled)
    from dataclasses import dataclass, replace

    from ._client import AppServerClient, Tap
    from ._connect import Connect
    from ._endpoint import ModelEndpoint
    from ._knobs import Knobs, ReasoningSummary, ThreadPermissions
    from ._session import SessionLog  # the agent is given an open log: only named here
    from ._stepfold import StepFold, Write
    from ._threads import EventListener, Turn
else:
    from ._dataclasses import dataclass, replace

log = logging.getLogger("codexmini.agent")

#: How the step fold times a tool that was still running when its codex turn
#: ended (``tool/result.elapsedMs``); a module attribute, so a test can set it.
_clock = time.monotonic


def uuid4_hex() -> str:
    """A new random id, as ``uuid.uuid4().hex`` makes it -- 16 bytes from
    ``os.urandom`` with the version (4) and variant bits set -- without a
    ``UUID`` object per message (and without importing ``uuid``, which
    imports ``platform``)."""
    data = bytearray(os.urandom(16))
    data[6] = data[6] & 0x0F | 0x40  # version 4
    data[8] = data[8] & 0x3F | 0x80  # the RFC 4122 variant
    return data.hex()


IDLE, MAINTENANCE, RUNNING = "idle", "maintenance", "running"

#: The deltas a listener sees in their agent form, with a message id (the step
#: fold shows them: :meth:`._stepfold.StepFold._stamp`), not as codex sent them.
_STAMPED = frozenset({ReasoningSummaryDelta, ReasoningTextDelta, PlanDelta})

#: The ``agent/error`` code of a step whose codex could not start, by why
#: (anything else: ``CODEX_UNAVAILABLE``).
_UNAVAILABLE: Dict[type, str] = {EndpointKeyMissing: "ENDPOINT_KEY_MISSING"}


class TurnEndError(TypedDict):
    """``turn/end.error``: what ended the turn, and its code (``CODEX_ERROR``, ``MODEL_UNREACHABLE``, …)."""

    message: str
    code: str


class _TurnEndRequired(TypedDict):
    reason: Literal["completed", "blocked", "aborted", "error"]


class TurnEnd(_TurnEndRequired, total=False):
    """What :meth:`Agent.run` returns: the ``turn/end`` event's data, as
    logged (docs/session-log.md).  ``reason`` always; ``error`` for an
    ``error``; ``abortedBy`` (``cancel``, ``interrupt``, ``shutdown`` or
    ``external``) for an ``aborted``; ``blocked`` (``by``, ``reason``) for a
    ``blocked``; ``usage`` (the turn's tokens, camelCase) when codex counted any."""

    error: TurnEndError
    abortedBy: Literal["cancel", "interrupt", "shutdown", "external"]
    blocked: Dict[str, str]
    usage: Dict[str, int]


class Blocked:
    """What a pre-step hook returns to veto a step: the turn ends ``blocked``
    and ``reason`` is logged in its ``turn/end``."""

    def __init__(self, reason: str) -> None:
        self.reason = reason

    def __repr__(self) -> str:
        return f"Blocked({self.reason!r})"


#: ``await before_step(messages)`` before each step: ``None`` lets the step run
#: as it is, a list (of messages or texts) replaces its messages, a
#: :class:`Blocked` vetoes it.
PreStepHook = Callable[[List[Message]], Awaitable[Union[None, Sequence[Union[str, Message]], Blocked]]]


@dataclass
class _Outcome:
    """How a step (and so the turn) ended: a ``turn/end`` reason, the error and
    its cause chain for ``agent/error``, or what blocked it."""

    reason: str
    error: Optional[Dict[str, str]] = None
    cause: Tuple[str, ...] = ()
    blocked: Optional[Dict[str, str]] = None

    def turn_end(self) -> Dict[str, Any]:
        end: Dict[str, Any] = {"reason": self.reason}
        if self.error is not None:
            end["error"] = dict(self.error)
        if self.blocked is not None:
            end["blocked"] = dict(self.blocked)
        return end


def _error(code: str, message: str) -> Dict[str, str]:
    return {"message": message, "code": code}


#: How a step's failed codex call (its turn, or a compaction's summary call)
#: is logged: the first kind ``exc`` is an instance of gives the code and the
#: message (docs/session-log.md, the codes).
_FAILURE_CODES: Tuple[Tuple[Type[Exception], str, Callable[[Any], str]], ...] = (
    (TransportError, "CODEX_NO_RESULT", str),  # the stream ended without turn/completed (the child died)
    (ModelUnreachable, "MODEL_UNREACHABLE", lambda e: e.reason),  # codex retried the model past model_retry
    (TurnTimeout, "CODEX_SILENT", str),  # the child sent nothing for liveness_s: it is replaced
    (RpcError, "CODEX_ERROR", lambda e: e.message),  # codex refused thread/start or turn/start
    (CompactionFailed, "COMPACTION_FAILED", str),  # the summary call gave no summary
)
_FAILURES: Tuple[Type[Exception], ...] = tuple(kind for kind, _, _ in _FAILURE_CODES)


def _unavailable(exc: Exception) -> "_Outcome":
    """A step that could not start or initialize its child ends in this
    (its code by why: :data:`_UNAVAILABLE`)."""
    code = _UNAVAILABLE.get(type(exc), "CODEX_UNAVAILABLE")
    return _Outcome("error", _error(code, f"{type(exc).__name__}: {exc}"), _chain(exc))


def _chain(exc: BaseException) -> Tuple[str, ...]:
    """An exception and what caused it, innermost last, as ``Type: message``."""
    seen: List[BaseException] = []
    current: Optional[BaseException] = exc
    while current is not None and current not in seen:
        seen.append(current)
        current = current.__cause__ or current.__context__
    return tuple(f"{type(e).__name__}: {e}" for e in seen)


def _uncancel() -> None:
    """We absorbed our own cancel(): tell the task so (Python 3.11+ counts
    cancellations; earlier versions have nothing to undo)."""
    task = asyncio.current_task()
    getattr(task, "uncancel", lambda: None)()


#: The default of :attr:`AgentConfig.prompt_budget`, in characters of prompt text.
PROMPT_BUDGET = 400_000


@dataclass(frozen=True)
class AgentConfig:
    """How the agent runs codex.

    ``cwd``: the workspace (every step's thread runs there; the child's
    working directory unless ``launch`` names one).  ``model``: the default
    model (a session's ``model/choice`` wins).  ``sandbox`` and
    ``approval_policy``: pins over the log's knobs, each on its own.
    ``launch``: the codex child (:class:`~codexmini.Launch`: binary, config,
    endpoint -- the default one; a session's ``model/endpoint`` wins --,
    environment, ``CODEX_HOME``, timeouts).  ``child_idle_s``: close the
    child after that long idle (0: keep it).  ``interrupt_grace``: how long a
    cancelled step waits for codex's ``turn/completed``.  ``skills``: inject
    ``/name`` skills.  ``tap``: sees every frame.  ``output_schema``: a JSON
    Schema for the final answer, sent as ``outputSchema`` with every codex
    turn (codex does not check the answer; see :mod:`._structured`).
    ``liveness_s``: the longest a step's codex turn may send nothing at all
    (no event, no output; default 600 s, ``None`` for no bound); past it the
    turn ends in ``error`` (``CODEX_SILENT``), what was logged stays, and the
    next turn gets a fresh child.  A command that runs silently for longer
    needs a longer bound.  ``connect``: run on a codex that is already
    running instead of a child (a ``ws://`` or ``unix://`` URL, or a
    :class:`~codexmini.Connect`; ``launch`` is then not used): a connection
    that drops mid-turn ends that turn in ``error`` (``CODEX_NO_RESULT``),
    and the next turn connects again; the server's own configuration picks
    the model endpoint.  ``reasoning_effort`` and ``reasoning_summary``: the
    default reasoning settings sent with every codex turn (``effort``, e.g.
    ``"high"``; ``summary``: ``auto``, ``concise``, ``detailed`` or ``none``;
    ``None``: codex's own), each overridden by a session's ``model/reasoning``
    (:meth:`Agent.set_reasoning`).
    ``tool_output_budget``: the characters of one tool output the prompt
    keeps (default 16,000, about 4,000 tokens; ``None``: whole): a longer
    one is cut to its head and tail around a marker naming the log event
    that holds it all (the log keeps every output whole).
    ``prompt_budget``: the characters a step's prompt may reach (default
    400,000, about 100,000 tokens at four characters a token: well inside a
    258k-token context window, leaving room for codex's own instructions and
    for what a codex turn adds; ``None``: no bound).  A step whose prompt would pass it first
    *compacts* the session: a codex turn on a fresh thread summarises the
    prompt, the summary is logged (``session/compaction``) and the prompt
    is from then on that summary and what comes after it
    (``docs/session-log.md``).
    Invalid values are a :class:`~codexmini.ConfigError` (or
    :class:`~codexmini.SchemaError`) here, not an error mid-turn."""

    cwd: str
    model: Optional[str] = None
    sandbox: Optional[SandboxMode] = None
    approval_policy: Optional[ApprovalPolicy] = None
    launch: Launch = Launch()
    child_idle_s: float = 0.0
    interrupt_grace: float = 5.0
    skills: bool = True
    tap: Optional[Tap] = None
    output_schema: Optional[Mapping[str, Any]] = None
    liveness_s: Optional[float] = 600.0
    connect: Optional[Union[str, Connect]] = None
    reasoning_effort: Optional[str] = None
    reasoning_summary: Optional[ReasoningSummary] = None
    tool_output_budget: Optional[int] = TOOL_OUTPUT_BUDGET
    prompt_budget: Optional[int] = PROMPT_BUDGET

    def __post_init__(self) -> None:
        if self.connect is not None:
            from ._connect import as_connect  # here, not with the agent: only a connection needs it

            as_connect(self.connect)  # a bad URL is a ConfigError now
            if self.launch != Launch():
                raise ConfigError("AgentConfig takes launch or connect, not both")
        from ._knobs import check_reasoning  # here, not with the agent: at the first config

        check_thread_options(self.sandbox, self.approval_policy)
        check_reasoning(self.reasoning_effort, self.reasoning_summary)
        if self.liveness_s is not None:
            positive_seconds("AgentConfig", "liveness_s", self.liveness_s)
        for name in ("tool_output_budget", "prompt_budget"):
            if getattr(self, name) is not None:
                positive_int("AgentConfig", name, getattr(self, name))
        if not isinstance(self.launch, Launch):
            raise ConfigError(f"AgentConfig.launch must be a Launch, not {type(self.launch).__name__}")
        if self.output_schema is not None:
            from ._structured import OutputSchema  # here, not with the agent: only a schema needs it

            OutputSchema(self.output_schema)  # a SchemaError now, not a surprise mid-turn


class Agent:
    """Drives codex over a session log.  ``await agent.run("prompt")`` runs one
    turn and returns its ``turn/end`` data; ``async with Agent(...)`` closes
    the child at the end.  ``on_event`` is shown codex's events as they come,
    each streamed text delta once, as a :class:`~codexmini.MessageDelta` (an
    :class:`~codexmini.AgentMessageDelta` naming the logged message it
    becomes), and the agent's :class:`~codexmini.MessageStreamEnd` events."""

    def __init__(
        self,
        log_: SessionLog,
        config: AgentConfig,
        *,
        approvals: Optional[ApprovalHandler] = None,
        on_event: Optional[EventListener] = None,
        before_step: Optional[PreStepHook] = None,
        new_id: Callable[[], str] = uuid4_hex,
    ) -> None:
        self.log = log_
        self.config = config
        self.approvals = approvals
        self.on_event = on_event
        self.before_step = before_step
        self.new_id = new_id
        self.inbox = Inbox()
        for kind, message in log_.pending:  # what a writer that died had queued: in the same order
            (self.inbox.followup if kind == "followup" else self.inbox.add)(message)
        from ._supervisor import ChildSupervisor  # here, not with the package: an agent made needs it

        self.child = ChildSupervisor(
            config.child_idle_s, tap=config.tap, prepare=self._prepare, on_maintenance=self._phase_moved
        )
        self._running = False
        self._phase_shown = IDLE  # the phase the listener last saw (PhaseChanged)
        self._driver: Optional["asyncio.Task[None]"] = None
        self._turn: Optional[Turn] = None
        self._folder: Optional[StepFold] = None
        self._turn_usage = Usage()
        self._cancelled = False
        self._abort_cause = "cancel"
        # Filled from the log file at the first step (streaming: a resumed log
        # is never held as events), then with each step's new events.
        self._transcript = Transcript(config.tool_output_budget)
        self._seen = 0  # events fed to the transcript
        last = log_.compaction  # a resumed log's prompt starts at its last compaction (folded: never read again)
        if last is not None:
            self._transcript.extend([last])
            self._seen = last["seq"] + 1
        self._turn_no = log_.next_turn
        self._step = 0
        self._header_written = False
        #: The log's knobs (sandbox, approval, model, endpoint): folded by the
        #: log as it is read back and appended to, so each step folds them
        #: without rescanning the log.
        self._knobs: Knobs = log_._knobs
        self._endpoint_key: Tuple[Optional[str], str] = (None, "")  # (base URL, key) given in memory
        self.last_turn_end: Optional[TurnEnd] = None
        self.stats: Dict[str, int] = {"steps": 0, "tool_calls": 0, "approvals": 0, "ignored_items": 0}

    @property
    def phase(self) -> str:
        """``running`` (a turn), ``maintenance`` (an idle shutdown) or ``idle``."""
        if self._running:
            return RUNNING
        return MAINTENANCE if self.child.maintaining else IDLE

    def _set_running(self, running: bool) -> None:
        self._running = running
        self._phase_moved()

    def _phase_moved(self) -> None:
        """Show the listener a :class:`~codexmini.PhaseChanged` if the phase is
        not the one it saw last."""
        phase, previous = self.phase, self._phase_shown
        if phase != previous:
            self._phase_shown = phase
            self._lifecycle(PhaseChanged(phase, previous))

    def _lifecycle(self, event: Event) -> None:
        """Show a lifecycle event (outside a codex turn's stream): a listener
        that raises is logged, and ends nothing -- there may be no turn to end."""
        listener = self.on_event
        if listener is not None:
            try:
                listener(event)
            except Exception:
                log.exception("the on_event listener raised on %s", type(event).__name__)

    @property
    def _client(self) -> Optional[AppServerClient]:
        return self.child.client

    # -- inbox ---------------------------------------------------------------

    def followup(self, content: Content) -> None:
        """Queue a user message for the next turn and wake the driver.

        One that waits -- a turn runs, or another followup is queued -- is
        logged first (``inbox/queued``), so that an agent resumed on the log
        runs it if this process dies before it does; one that starts a turn
        at once is logged as that turn's ``user/message`` only.  A log that
        cannot be written raises its :class:`~codexmini.SessionLogError`
        here, and nothing is queued."""
        message = self._user_message(content)
        if self._busy() or self.inbox.followups:
            self._queue("followup", message)
        self.inbox.followup(message)
        self._wake()

    async def steer(self, content: Content) -> None:
        """Add a user message to the current turn, now if codex is running."""
        message = self._user_message(content)
        turn, folder = self._turn, self._folder
        if turn is not None and turn.id is not None and not turn.done and folder is not None:
            # With the skills its /names invoke, as at the start of a step;
            # logged when codex echoes it as a userMessage item, so the log
            # keeps the order the model saw (_stepfold.StepFold.steer).
            group = self._inject_skills([message])
            folder.steer(group)
            try:
                await turn.steer([item for m in group for item in message_input(m)])
                return
            except (RpcError, TransportError) as exc:
                # The codex turn ended meanwhile, or its child died: the next
                # step delivers the message (the step's failure is the
                # driver's to report, not the caller's).
                log.info("turn/steer failed (%s); the message goes to the next step", exc)
                if not folder.unsteer(group):
                    # The step ended first and requeued it (or a cancel dropped
                    # it, or codex echoed it): adding it again would send it twice.
                    self._wake()
                    return
        if self._busy():  # it waits for the next step: logged first, as inject()'s
            self._queue("steer", message)
        self.inbox.add(message)
        self._wake()

    def inject(self, content: Content) -> None:
        """Add a user message for the current turn's next step, without waking.
        It waits for that step: it is logged first (``inbox/queued``), as a
        followup that waits is."""
        message = self._user_message(content)
        self._queue("inject", message)
        self.inbox.add(message)

    def cancel(self, keep_inbox: bool = False, *, cause: str = "cancel") -> None:
        """Abort the running turn (``turn/interrupt``) or an idle shutdown under
        way; drop the inbox unless kept.  ``cause`` is logged in the aborted
        turn's ``turn/end`` as ``abortedBy`` (``cancel``; the CLI's Ctrl-C says
        ``interrupt``; :meth:`close` says ``shutdown``).  What is dropped
        and was logged queued is logged dropped (``inbox/dropped``, with
        ``cause`` as its ``reason``), so that no resumed agent runs it."""
        self._cancel(keep_inbox, cause, keep_logged=False)

    def _cancel(self, keep_inbox: bool, cause: str, keep_logged: bool) -> None:
        """:meth:`cancel`; with ``keep_logged``, what the log holds queued stays pending there."""
        if not keep_inbox:
            self.inbox.drop()
            if not keep_logged:
                self._drop([message["id"] for _, message in self.log.pending], cause)
        self.child.abort_maintenance()
        if self._running and self._driver is not None:  # running means the driver runs
            self._cancelled = True
            self._abort_cause = cause
            self._driver.cancel()

    async def run(self, content: Content) -> TurnEnd:
        """Queue ``content``, run until idle, return the last ``turn/end`` data.
        A session log that can no longer be written (a storage fault, a file
        changed behind its back) ends the turn at once and raises its
        :class:`~codexmini.SessionLogError` here, and from every later turn;
        what was logged before stays."""
        self.last_turn_end = None
        self.followup(content)
        await self.wait_idle()
        # Cancelled before the turn could start: nothing was logged.
        return self.last_turn_end or {"reason": "aborted"}

    async def run_pending(self) -> Optional[TurnEnd]:
        """Run what the inbox holds -- on an agent made on a resumed log, the
        messages its writer had queued and not delivered -- until idle, and
        return the last ``turn/end`` data (``None`` when nothing ran)."""
        self.last_turn_end = None
        if len(self.inbox):
            self._wake()
        await self.wait_idle()
        return self.last_turn_end

    async def wait_idle(self) -> None:
        """Wait until no turn runs and no maintenance (idle shutdown) is under way."""
        await self.child.wait_maintenance()
        while self._driver is not None and not self._driver.done():
            try:
                await asyncio.shield(self._driver)
            except asyncio.CancelledError:
                if not self._driver.done():
                    raise

    async def start(self) -> None:
        """Start the codex child (if needed) and write the session header once.

        Raises :class:`~codexmini.BinaryNotFound` before anything is logged when
        there is no codex to run.  (A turn that cannot start its child does not
        raise: it is logged, and ends with ``CODEX_UNAVAILABLE``.)"""
        await self._ensure_client()
        self._write_header()

    def _write_header(self) -> None:
        if not self._header_written:
            self._header_written = True
            header = {
                "reason": "resume" if self.log.has_header else "initial",
                "provider": "codex",
                "model": self._model_label(),
                "codexVersion": self._codex_version(),
                "codexminiVersion": __version__,
            }
            self._append("session/header", header, turn=None, step=None)
            self._lifecycle(SessionStarted(header["reason"], header["model"], header["codexVersion"]))

    def set_knob(self, kind: str, value: str) -> None:
        """Log a ``sandbox/mode`` or ``approval/policy`` knob (applies next step)."""
        key = {"sandbox/mode": "mode", "approval/policy": "policy"}.get(kind)
        if key is None:
            raise ConfigError(f"unknown knob {kind!r}: expected 'sandbox/mode' or 'approval/policy'")
        self._append(kind, {key: value}, turn=None, step=None)

    def set_model(self, model: str) -> None:
        """Choose the session's model (``model/choice``): it wins over
        ``AgentConfig.model`` and applies from the next step on (each step is
        a fresh thread); a resumed session keeps it."""
        if not isinstance(model, str) or not model:
            raise ConfigError(f"a model must be a non-empty string, not {model!r}")
        self._append("model/choice", {"model": model}, turn=None, step=None)

    def set_sandbox(self, mode: SandboxMode) -> None:
        """Choose the session's sandbox (``sandbox/mode``: ``read-only``,
        ``workspace-write`` or ``danger-full-access``), from the next step on;
        a resumed session keeps it.  It folds with the approval knob as
        docs/session-log.md says (``danger-full-access`` wins; ``workspace-write``
        comes with the ``ask`` policy; else read-only), and
        ``AgentConfig.sandbox``, a pin, wins over it.  :meth:`set_knob` takes
        the same entry unchecked."""
        if mode not in SANDBOX_MODES:
            raise ConfigError(f"sandbox must be one of {SANDBOX_MODES}, not {mode!r}")
        self._append("sandbox/mode", {"mode": mode}, turn=None, step=None)

    def set_reasoning(self, effort: Optional[str] = None, summary: Optional[ReasoningSummary] = None) -> None:
        """Choose the session's reasoning settings (``model/reasoning``),
        sent with every codex turn from the next step on; a resumed session
        keeps them.  ``effort`` (e.g. ``"low"``, ``"high"``: what the model
        offers) and ``summary`` (``auto``, ``concise``, ``detailed``,
        ``none``); either ``None`` leaves that one to
        ``AgentConfig.reasoning_effort`` / ``reasoning_summary``, then codex."""
        from ._knobs import check_reasoning

        check_reasoning(effort, summary)
        self._append("model/reasoning", {"effort": effort, "summary": summary}, turn=None, step=None)

    def set_endpoint(self, endpoint: Optional[ModelEndpoint], api_key_env: Optional[str] = None) -> None:
        """Choose the session's model endpoint (``model/endpoint``; ``None``:
        codex's own configuration).  The log keeps the URL and the *name* of
        the environment variable that holds the key (``api_key_env``), never
        the key: a resumed session reads the key from that variable
        (``AgentConfig.env``, then the process environment).  Applies from the
        next step on; a new endpoint restarts the child."""
        data: Dict[str, Any] = {"baseUrl": None, "wireApi": None, "apiKeyEnv": api_key_env}
        if endpoint is not None:
            data.update(baseUrl=endpoint.base_url, wireApi=endpoint.wire_api)
            self._endpoint_key = (endpoint.base_url, endpoint.api_key)
        self._append("model/endpoint", data, turn=None, step=None)

    async def close(self) -> None:
        """Cancel anything running and shut the child down.  The inbox is
        dropped here, not in the log: what it had logged queued stays
        pending there (a shutdown loses no more than a crash), and an agent
        made on the log later runs it."""
        self._cancel(False, "shutdown", keep_logged=True)
        await self.wait_idle()
        await self.child.close()

    async def __aenter__(self) -> "Agent":
        return self

    async def __aexit__(self, *exc: Any) -> None:
        await self.close()

    # -- the driver ----------------------------------------------------------

    def _busy(self) -> bool:
        """Whether the driver runs (a turn, or the start of one)."""
        return self._driver is not None and not self._driver.done()

    def _queue(self, kind: str, message: Message) -> None:
        """Log ``message`` as waiting in the inbox (``inbox/queued``)."""
        self._append("inbox/queued", {"id": message["id"], "kind": kind, **message}, turn=None, step=None)

    def _drop(self, ids: Sequence[Any], reason: str) -> None:
        """Log those of the messages ``ids`` names that the log holds pending as
        dropped (``inbox/dropped``).  Never raises: a log that cannot take it
        (closed, failed) keeps them pending, with a warning."""
        ids = [id_ for id_ in ids if id_ in self.log._pending]
        if ids and not self.log.closed:
            try:
                self._append("inbox/dropped", {"ids": ids, "reason": reason}, turn=None, step=None)
            except SessionLogError as exc:
                log.warning("could not log %d dropped inbox message(s): %s", len(ids), exc)

    def _wake(self) -> None:
        if self._driver is None or self._driver.done():
            self._driver = asyncio.get_running_loop().create_task(self._drive())

    async def _drive(self) -> None:
        self.child.cancel_idle()
        await self.child.wait_maintenance()  # a followup waits for the idle shutdown to finish
        try:
            while self.inbox.has_turn(idle=not self._running):
                await self._run_turn(self.inbox.next_turn())
        finally:
            self._set_running(False)
            self.child.arm_idle(lambda: not self._running)

    async def _run_turn(self, messages: List[Message]) -> None:
        self._set_running(True)
        self._cancelled = False
        unavailable: Optional[Exception] = None
        generation = self.inbox.generation
        try:
            await self.start()
        except asyncio.CancelledError:
            # cancel() before anything was logged: no turn at all.  With
            # keep_inbox the turn's messages stay queued (nothing the user
            # asked is lost); a plain cancel() dropped them with the rest.
            self.inbox.restore_turn(messages, generation)
            self._set_running(False)
            if not self._cancelled:
                raise
            _uncancel()
            return
        except SessionLogError:  # the header could not be written: nor can the turn be
            raise
        except Exception as exc:  # no codex to run (or it broke the handshake): the turn is logged all the same
            log.warning("cannot start codex for turn %d: %s", self._turn_no, exc)
            unavailable = exc
            self._write_header()
        turn_no = self._turn_no = max(self._turn_no, self.log.next_turn)
        self._step = 0
        self._append("turn/start", {}, step=None)
        outcome = _Outcome("completed")
        self._turn_usage = Usage()
        try:
            while True:
                outcome = await self._run_step(messages, unavailable)
                unavailable = None
                if outcome.reason != "completed":
                    break
                messages = self.inbox.claim()
                if not messages:
                    break
        except asyncio.CancelledError:
            outcome = _Outcome("aborted")
            if not self._cancelled:  # cancelled from outside, not by cancel()
                self._abort_cause = "external"
                self._finish_turn(turn_no, outcome)
                raise
            _uncancel()
        except Exception as exc:  # the driver boundary: log it, end the turn
            log.exception("turn %d failed", turn_no)
            outcome = _Outcome("error", _error("UNKNOWN", f"{type(exc).__name__}: {exc}"), _chain(exc))
        self._finish_turn(turn_no, outcome)

    def _finish_turn(self, turn_no: int, outcome: "_Outcome") -> None:
        if outcome.error is not None:  # every turn-ending error, with its cause chain
            data: Dict[str, Any] = dict(outcome.error)
            if outcome.cause:
                data["cause"] = list(outcome.cause)
            self._append("agent/error", data, step=self._step or None)
        end = outcome.turn_end()
        if outcome.reason == "aborted":
            end["abortedBy"] = self._abort_cause
        if self._turn_usage != Usage():  # every codex turn's usage, aborted ones too
            end["usage"] = self._turn_usage.to_log()
        self._append("turn/end", end, step=None)
        self.last_turn_end = cast(TurnEnd, end)  # the shape docs/session-log.md gives turn/end
        self._turn_no = turn_no + 1
        self._set_running(False)

    # -- one step ------------------------------------------------------------

    async def _run_step(self, messages: List[Message], unavailable: Optional[Exception] = None) -> "_Outcome":
        taken = [message["id"] for message in messages]
        if self.before_step is not None:  # the host may rewrite or veto the step's messages
            generation = self.inbox.generation
            try:
                decision = await self.before_step(list(messages))
            except asyncio.CancelledError:  # kept by cancel(keep_inbox=True): they come back, first in line
                self.inbox.restore_turn(messages, generation)
                raise
            except Exception:  # the turn ends in error: they will not be delivered
                self._drop(taken, "pre-step")
                raise
            if isinstance(decision, Blocked):
                log.info("turn %d: the pre-step hook blocked a step: %s", self._turn_no, decision.reason)
                self._drop(taken, "pre-step")
                return _Outcome("blocked", blocked={"by": "pre-step", "reason": decision.reason})
            if decision is not None:
                messages = [self._user_message(m) if isinstance(m, str) else dict(m) for m in decision]
        # The prompt is measured with the step's messages (skills included)
        # before any of them is logged: a compaction goes before the step.
        claimed, generation = messages, self.inbox.generation
        messages = self._inject_skills(messages)
        failed: Optional[_Outcome] = None
        if unavailable is not None:  # the child could not be started or initialized: the step ends in error
            failed = _unavailable(unavailable)
        else:
            try:
                failed = await self._compact_if_needed(messages)
            except asyncio.CancelledError:  # nothing of the step was logged: its messages go back (unless dropped)
                self.inbox.restore_turn(claimed, generation)
                raise
        self._step += 1
        self.stats["steps"] += 1
        self._append("step/start", {})
        for message in messages:
            self._append("user/message", message)
        self._drop(taken, "pre-step")  # those the hook replaced (none else is pending now)
        permissions = self._knobs.permissions(self.config.sandbox, self.config.approval_policy)
        from ._stepfold import StepFold  # here, not with the agent: a step's fold (and the event mapping)

        folder = self._folder = StepFold(
            step=self._step,
            model=self._model_label(),
            new_id=self.new_id,
            clock=_clock,
            shows=self.on_event is not None,
        )
        try:
            if failed is not None:
                self._settle(folder, None, "error")
                return failed
            return await self._codex_turn(messages, permissions, folder)
        finally:
            self._folder = None
            # Steered, never echoed: the next step logs them (unless cancel() dropped the inbox).
            self.inbox.requeue(folder.unechoed(), generation)

    async def _codex_turn(
        self, messages: List[Message], permissions: ThreadPermissions, folder: StepFold
    ) -> "_Outcome":
        turn: Optional[Turn] = None
        try:
            client = await self._ensure_client()
            from ._threads import Thread  # here, not with the agent: at its first codex turn

            thread = await Thread.start(
                client,
                cwd=self.config.cwd,
                model=self._model(),
                sandbox=permissions.sandbox,
                approval_policy=permissions.approval_policy,
            )
            # No history (TurnCompleted.items stays empty): the step fold writes
            # every item to the log as it completes, and memory stays flat.
            schema = self.config.output_schema
            params = {"outputSchema": schema} if schema is not None else {}
            params.update(self._reasoning())
            turn = thread.turn(
                self._step_input(messages),
                params=params,
                interrupt_grace=self.config.interrupt_grace,
                idle_timeout=self.config.liveness_s,
                keep_items=False,
            )
            turn.books.deltas_as(MessageDelta)  # shown once a delta: the raw event, its message id added
            self._turn = turn
            try:
                completed = await self._consume(turn, folder)
            finally:
                self._turn = None
                thread.close()
        except asyncio.CancelledError:
            self._settle(folder, turn, "aborted")
            raise
        except _FAILURES as exc:  # the codex turn failed in a way _FAILURE_CODES names
            self._settle(folder, turn, "error")
            return await self._failure(exc)
        except Exception:
            # Anything else (a listener that raised, a bug): what the step
            # committed before it is written all the same, the listener is not
            # called again; the driver logs the error and ends the turn.
            self._settle(folder, turn, "error", show=False)
            raise
        outcome = self._outcome(completed)
        self._settle(folder, turn, outcome.reason, completed=True)
        return outcome

    async def _failure(self, exc: Exception) -> "_Outcome":
        """The outcome of a step whose codex call (its turn, or the summary
        call of a compaction) raised ``exc``, one of :data:`_FAILURES`.  A
        child silent past ``liveness_s`` is closed: the next step gets a fresh one."""
        if isinstance(exc, TurnTimeout):
            await self.child.close()
        code, message = next((code, said(exc)) for kind, code, said in _FAILURE_CODES if isinstance(exc, kind))
        return _Outcome("error", _error(code, message), _chain(exc))

    # -- compaction ------------------------------------------------------------

    def _catch_up(self) -> Transcript:
        """The transcript with every event logged so far (streamed from the
        file: only what is new since the last call is read)."""
        new = self.log.events[self._seen :]
        self._transcript.extend(new)
        self._seen += len(new)
        return self._transcript

    async def _compact_if_needed(self, messages: List[Message]) -> Optional["_Outcome"]:
        """Compact the session when the step's prompt -- the log so far and
        ``messages`` -- would pass ``prompt_budget`` (and the prompt holds
        something besides a summary): ``None`` when the step may go on, else
        the error it ends with (the log then is as it was)."""
        budget = self.config.prompt_budget
        transcript = self._catch_up()
        if budget is None or transcript.size_with(messages) <= budget or not transcript.compactable():
            return None
        try:
            client = await self._ensure_client()
        except Exception as exc:  # (not a CancelledError: the caller's to handle)
            return _unavailable(exc)
        try:
            await self._compact(client, transcript.text())
        except _FAILURES as exc:
            return await self._failure(exc)
        return None

    async def _compact(self, client: AppServerClient, prompt: str) -> None:
        """Summarise ``prompt`` -- the prompt of every event up to the last one
        fed to the transcript -- with a codex turn on a fresh thread (the
        session's model, on the same child and endpoint; read-only, never
        asking: the summary needs no tool), then log the summary as one
        ``session/compaction`` event.  Nothing is written before the summary
        is in hand, and then one append: a compaction that raised, or a
        process killed during it, leaves the log as it was."""
        last = self.log.compaction
        from ._threads import Thread

        thread = await Thread.start(
            client, cwd=self.config.cwd, model=self._model(), sandbox="read-only", approval_policy="never"
        )
        try:
            result = await thread.run(
                compaction_request(prompt, self.config.prompt_budget),
                idle_timeout=self.config.liveness_s,
                interrupt_grace=self.config.interrupt_grace,
                raise_on_failure=False,
            )
        finally:
            thread.close()
        self._turn_usage = self._turn_usage + result.usage  # a model call of this turn
        summary = result.final_response
        if result.status != "completed" or not summary or not summary.strip():
            said = f"ended {result.status}" if result.status != "completed" else "gave no summary"
            raise CompactionFailed(f"the summary call of a compaction {said}", result.status)
        data: Dict[str, Any] = {
            "summary": summary,
            "fromSeq": last["seq"] if last is not None else 0,
            "throughSeq": self._seen - 1,
            "replacedChars": len(prompt),
        }
        if result.usage != Usage():
            data["usage"] = result.usage.to_log()
        self._append(COMPACTION, data, step=None)
        log.info(
            "compacted the session: %d characters up to event %d summarised in %d",
            len(prompt),
            self._seen - 1,
            len(summary),
        )

    def _settle(
        self, folder: StepFold, turn: Optional[Turn], reason: str, completed: bool = False, show: bool = True
    ) -> None:
        """The codex turn is over: write what the fold still holds, end the
        step, then show the listener the fold's last stream events (unless
        ``show`` is false: the listener or the fold just raised)."""
        if turn is not None:
            self._apply(folder.finish(turn.books, completed, reason), folder, show=False)
            # The turn also counts usage it drained after an interrupt.
            self._turn_usage = self._turn_usage + turn.usage
        self.stats["ignored_items"] += sum(folder.ignored.values())
        self._append("step/end", {"reason": reason}, step=folder.step)
        if show:
            self._apply([], folder)

    async def _consume(self, turn: Turn, folder: StepFold) -> TurnCompleted:
        listener = self.on_event
        # (Locals: this loop runs once a turn, so 3.9 caches no global lookup in it.)
        stream, streaming, feed, signals = folder.stream, folder.streaming, folder.feed, folder.signals
        announced = folder.streams.get  # a streaming item → its message id (StepFold.stream, inlined)
        type_, delta, completed, stamped = type, MessageDelta, TurnCompleted, _STAMPED
        async with turn:
            # A burst at a time: everything codex's last output completed.  It
            # is folded without an await, so nothing else runs meanwhile: its
            # writes go to the log at once (one write, one flush), then the
            # listener is shown its events in order: each after its own writes
            # and those of the events before it, as when shown one by one.
            while True:
                burst: List[Any] = await turn._burst()  # Any: mypy narrows by type(), not type_()
                if not burst:
                    break  # pragma: no cover - the turn ends with its TurnCompleted
                writes: List[Write] = []
                shown: List[Event] = []
                show = shown.append
                try:
                    for event in burst:
                        if type_(event) is delta:  # nine events in ten: shown, never written
                            if listener is not None:
                                # The event itself, its message id filled in (stream(), without
                                # its call, for every delta of an item but the first).
                                message_id = announced(event.item_id)
                                if message_id is None:
                                    show(stream(event))
                                else:
                                    event.__dict__["message_id"] = message_id
                                    show(event)
                            else:
                                streaming(event)  # nothing to show: the stream announced, no more
                            continue
                        if listener is not None and type_(event) not in stamped:
                            show(event)  # (a stamped one is shown among the fold's signals, in its agent form)
                        if type_(event) is completed:
                            return cast(TurnCompleted, event)
                        writes += feed(event)
                        if listener is not None:
                            shown += signals()  # the stream events of this one, in place
                finally:  # also when the fold or a write raised: what was folded is kept
                    self._apply(writes, folder, shown)
        raise ProcessExited(None, "the turn ended without turn/completed")  # pragma: no cover

    def _outcome(self, completed: TurnCompleted) -> "_Outcome":
        if completed.status == "completed":
            return _Outcome("completed")
        if completed.status == "interrupted":
            # Not interrupted by us: an approval answered `cancel` stopped codex.
            if self._cancelled:
                return _Outcome("aborted")
            return _Outcome("blocked", blocked={"by": "approval", "reason": "an approval was answered cancel"})
        error = completed.error
        message = completed.error_message or f"codex turn {completed.status}"
        found = (error.get("codexErrorInfo"), error.get("additionalDetails")) if error else ()
        cause = [str(value) for value in found if value]
        return _Outcome("error", _error("CODEX_ERROR", message), tuple(cause))

    def _apply(self, writes: List[Write], folder: StepFold, shown: Sequence[Event] = (), show: bool = True) -> None:
        """Write ``writes`` (one write and one flush for the lot: a tool call is
        three events, a burst many more), then show the listener ``shown`` and
        the fold's stream events (``show``): each after the writes it speaks of."""
        if writes:
            turn = self._turn_no
            self.log._write_many([(w.type, w.data, turn, w.step) for w in writes], keep=False)
            types = [w.type for w in writes]
            self.stats["tool_calls"] += types.count("tool/call")
            self.stats["steps"] += types.count("step/start")
        self._step = folder.step
        listener = self.on_event
        if listener is not None and show:
            for event in shown:
                listener(event)
            for signal in folder.signals():
                listener(signal)

    def _step_input(self, messages: List[Message]) -> List[Dict[str, Any]]:
        # The events logged since the last step, streamed from the file (all of
        # them -- from the last compaction -- at a resumed session's first
        # step): what the model sees is what the log holds, and only what is
        # new is read.
        return [text_input(self._catch_up().text()), *message_images(messages)]

    def _inject_skills(self, messages: List[Message]) -> List[Message]:
        if not self.config.skills:
            return messages
        from ._skills import SkillProvider, inject_skills  # here, not with the agent: at its first turn

        provider = SkillProvider(self.config.cwd, codex_home=self.config.launch.codex_home)
        return inject_skills(messages, provider.get, lambda: self._cancelled, self.new_id)

    # -- the child -----------------------------------------------------------

    async def _ensure_client(self) -> AppServerClient:
        if self.config.connect is not None:  # the server's own configuration picks the endpoint
            from ._connect import as_connect

            return await self.child.ensure(as_connect(self.config.connect))
        launch = replace(self.config.launch, endpoint=self._endpoint()).for_workspace(self.config.cwd)
        return await self.child.ensure(launch)

    def _prepare(self, client: AppServerClient) -> None:
        """Wire a new child: the caller's approvals, and every answer logged."""
        if self.approvals is not None:
            install_approvals(client, self.approvals)
        client.on_answer(self._log_answer)

    def _log_answer(self, method: str, params: Dict[str, Any], frame: Dict[str, Any], by: str) -> None:
        self.stats["approvals"] += 1
        item = params.get("itemId") or params.get("callId") or params.get("serverName")
        decision = decision_of(frame)
        data: Dict[str, Any] = {"method": method, "itemId": item, "decision": decision, "by": by}
        left = unanswered(method, params, frame)
        if left:  # nobody answered these: say so, in the log and to the operator
            data["unanswered"] = left
            log.warning("%d question(s) of %s went unanswered: %s", len(left), item, ", ".join(left))
        self._append("approval/decision", data, step=self._step or None)
        if self._folder is not None and isinstance(item, str):  # a call codex declines links to this answer
            self._folder.approval(item, decision, by)

    # -- log helpers -----------------------------------------------------------

    def _codex_version(self) -> str:
        client = self.child.client
        if client is None:
            return "unknown"  # no child could be started
        from ._binary import server_version

        return server_version(client.server_info) or CODEX_VERSION

    def _model(self) -> Optional[str]:
        """The session's choice (``model/choice``), else the configured model."""
        return self._knobs.model or self.config.model

    def _reasoning(self) -> Dict[str, Any]:
        """The turn's ``effort`` and ``summary``: each the session's choice
        (``model/reasoning``), else the configured one; absent: codex's."""
        chosen = self._knobs.reasoning or {}
        config = self.config
        found = {"effort": chosen.get("effort") or config.reasoning_effort}
        found["summary"] = chosen.get("summary") or config.reasoning_summary
        return {key: value for key, value in found.items() if value is not None}

    def _model_label(self) -> str:
        return self._model() or "default"

    def _endpoint(self) -> Optional[ModelEndpoint]:
        """The session's endpoint, else the configured one."""
        chosen = self._knobs.endpoint
        if chosen is None:
            return self.config.launch.endpoint
        url = chosen.get("baseUrl")
        if url is None:
            return None  # codex's own configuration
        key = self._endpoint_key[1] if self._endpoint_key[0] == url else ""
        name = chosen.get("apiKeyEnv")
        if not key and isinstance(name, str) and name:
            key = self.config.launch.env.get(name) or os.environ.get(name, "")
            if not key:  # not an endpoint without its key: refused, before codex starts
                raise EndpointKeyMissing(name, url)
        wire = chosen.get("wireApi")
        from ._endpoint import ModelEndpoint

        return ModelEndpoint(url, key, wire if isinstance(wire, str) else "responses")

    def _append(self, type_: str, data: Dict[str, Any], *, turn: Optional[int] = -1, step: Optional[int] = -1) -> None:
        self.log.append(
            type_,
            data,
            turn=self._turn_no if turn == -1 else turn,
            step=(self._step or None) if step == -1 else step,
        )

    def _user_message(self, content: Content) -> Message:
        """The message for ``content``; :class:`~codexmini.UnencodableInput`
        (nothing queued, nothing logged) when it cannot be logged or sent."""
        from ._wire import check_encodable  # here, not with the agent: at its first message

        blocks, skipped = content_blocks(content, self.config.cwd)
        check_encodable(blocks, "a user message")
        for block in skipped:
            log.warning("skipped an image block without a path: %r", block)
        return {"id": self.new_id(), "content": blocks, "source": {"kind": "user"}}


__all__ = [
    "Agent",
    "Blocked",
    "PreStepHook",
    "AgentConfig",
    "IDLE",
    "MAINTENANCE",
    "RUNNING",
]
