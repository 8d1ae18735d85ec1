"""One call for the common case: a prompt in, the turn's answer out.

Theory of operation
-------------------
:func:`run` is the dozen lines every script writes, once: start
``codex app-server`` (unless the caller passes a ``client``), ``thread/start``
with the usual options, one turn, and a frozen :class:`RunResult` -- the final
answer, the completed items, the usage, the status and error, and the thread
and turn ids to resume from.  :meth:`Thread.run <codexmini.Thread.run>` is the
same on a thread the caller holds (:func:`run_turn`).

Everything is built from what already holds the protocol: the turn is a
:class:`~._threads.Turn` consumed inside ``async with``, so cancelling the
caller interrupts it (``turn/interrupt``, then a short wait for
``turn/completed``), and the answer is read from the turn's books (the items
folded from ``item/completed``; the wire's ``turn.items`` is not the history).
What :func:`run` started it closes, whatever happened -- an error, a
cancellation, an :class:`~codexmini.OutputValidationError`.

A turn that ends ``failed`` or ``interrupted`` is an outcome, not an
exception: the result says so in :attr:`RunResult.status` and
:attr:`RunResult.error`.  With an ``output_schema`` (:mod:`._structured`), a
*completed* turn's final answer must parse as JSON the schema accepts; the
value is :attr:`RunResult.value`, and a mismatch raises
:class:`~codexmini.OutputValidationError` carrying the raw text, the reasons
and the result.  The schema is checked before anything is started.

Approvals belong to the process: :func:`run` installs ``approvals`` on the
client it starts; a caller who passes its own ``client`` has already decided
(``client.on_request``), and :func:`run` refuses to change that behind its
back.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Awaitable, Callable, Dict, Mapping, Optional, Sequence, Tuple

from ._client import AppServerClient, Launcher
from ._endpoint import ModelEndpoint
from ._errors import ConfigError
from ._events import Event, TurnCompleted, Usage
from ._permission import (
    APPROVAL_POLICIES,
    SANDBOX_MODES,
    SERVER_REQUESTS,
    ApprovalRequest,
    Reply,
    build_answer,
    describe,
)
from ._structured import OutputSchema
from ._threads import Input, Thread

#: Answers one approval (or question) codex asks: ``await handler(request)`` → a reply.
ApprovalHandler = Callable[[ApprovalRequest], Awaitable[Reply]]
#: Told of every event of the turn, in order, on the event loop's thread.
EventListener = Callable[[Event], None]


@dataclass(frozen=True)
class RunResult:
    """What one turn produced.  ``final_response`` is the text of the turn's
    last completed agent message (``None`` if it had none); ``items`` every
    completed item, in order of completion; ``status`` is ``completed``,
    ``interrupted`` or ``failed`` (with ``error``, the wire's ``TurnError``).
    ``value`` is the parsed structured output of a completed turn run with an
    ``output_schema``, else ``None``.  ``thread_id`` resumes the conversation
    (``thread/resume``) on a client that still has the thread."""

    final_response: Optional[str]
    items: Tuple[Mapping[str, Any], ...]
    usage: Usage
    status: str
    error: Optional[Mapping[str, Any]]
    thread_id: str
    turn_id: str
    value: Any = None

    @property
    def ok(self) -> bool:
        """The turn completed (neither failed nor interrupted)."""
        return self.status == "completed"

    @property
    def error_message(self) -> str:
        """The turn error's message ("" without one)."""
        return str((self.error or {}).get("message") or "")

    @classmethod
    def of(cls, thread_id: str, completed: TurnCompleted, value: Any = None) -> "RunResult":
        return cls(
            final_response=final_response(completed.items),
            items=completed.items,
            usage=completed.usage,
            status=completed.status,
            error=completed.error,
            thread_id=thread_id,
            turn_id=completed.turn_id,
            value=value,
        )


def final_response(items: Sequence[Mapping[str, Any]]) -> Optional[str]:
    """The text of the last ``agentMessage`` among ``items`` (``None`` if none)."""
    for item in reversed(items):
        if item.get("type") == "agentMessage":
            return str(item.get("text") or "")
    return None


def check_output_schema(schema: Optional[Mapping[str, Any]]) -> Optional[OutputSchema]:
    """``schema`` checked (:class:`~codexmini.SchemaError`), or ``None``."""
    return None if schema is None else OutputSchema(schema)


async def run_turn(
    thread: Thread,
    input: Input,
    *,
    output_schema: Optional[OutputSchema] = None,
    params: Optional[Mapping[str, Any]] = None,
    idle_timeout: Optional[float] = None,
    interrupt_grace: float = 5.0,
    on_event: Optional[EventListener] = None,
) -> RunResult:
    """One turn of ``thread`` to its end; see :func:`run`."""
    request: Dict[str, Any] = dict(params or {})
    if output_schema is not None:
        request["outputSchema"] = output_schema.wire
    turn = thread.turn(input, params=request, idle_timeout=idle_timeout, interrupt_grace=interrupt_grace)
    async with turn:
        async for event in turn:  # pragma: no branch - Python 3.9 traces this loop's end as another arc
            if on_event is not None:
                on_event(event)
    completed = turn.completed
    assert completed is not None  # iteration ends only after turn/completed, or raises
    result = RunResult.of(thread.id, completed)
    if output_schema is None or not result.ok:
        return result
    value = output_schema.parse(result.final_response, result)
    return RunResult.of(thread.id, completed, value)


def install_approvals(client: AppServerClient, handler: ApprovalHandler) -> None:
    """Answer every approval and question codex can ask with ``handler``
    (requests it cannot answer keep the client's fail-closed default)."""

    async def answer(method: str, params: Dict[str, Any]) -> Any:
        reply = await handler(describe(method, params))
        return build_answer(method, params, reply).result

    for method in SERVER_REQUESTS:
        if build_answer(method, {}, Reply("decline")).error is None:
            client.on_request(method, answer)


async def connect(
    *,
    cwd: Optional[str] = None,
    endpoint: Optional[ModelEndpoint] = None,
    codex_bin: Optional[str] = None,
    config: Sequence[str] = (),
    env: Optional[Mapping[str, str]] = None,
    pass_env: Sequence[str] = (),
    codex_home: Optional[str] = None,
    approvals: Optional[ApprovalHandler] = None,
    launcher: Optional[Launcher] = None,
    request_timeout: float = 120.0,
    handler_timeout: float = 300.0,
) -> AppServerClient:
    """Start and initialize ``codex app-server`` for :func:`run`: the
    ``endpoint``'s provider flags before ``config`` (a later ``-c`` assigning
    the whole table would replace them), its key and ``codex_home`` in the
    child's environment, ``approvals`` installed."""
    bad = [item for item in config if "=" not in item]
    if bad:
        raise ConfigError(f"config items must be KEY=VALUE, not {bad[0]!r}")
    child_env = dict(env or {})
    child_env.update(endpoint.env() if endpoint else {})
    if codex_home:
        child_env["CODEX_HOME"] = codex_home
    client = await AppServerClient.start(
        codex_bin=codex_bin,
        config=(endpoint.config() if endpoint else []) + list(config),
        env=child_env,
        pass_env=pass_env,
        cwd=cwd,
        launcher=launcher,
        request_timeout=request_timeout,
        handler_timeout=handler_timeout,
    )
    if approvals is not None:
        install_approvals(client, approvals)
    return client


def check_thread_options(sandbox: Optional[str], approval_policy: Optional[str]) -> None:
    """:class:`~codexmini.ConfigError` for a sandbox or approval policy codex would refuse."""
    if sandbox is not None and sandbox not in SANDBOX_MODES:
        raise ConfigError(f"sandbox must be one of {SANDBOX_MODES}, not {sandbox!r}")
    if approval_policy is not None and approval_policy not in APPROVAL_POLICIES:
        raise ConfigError(f"approval_policy must be one of {APPROVAL_POLICIES}, not {approval_policy!r}")


#: What :func:`run` needs to start a process, refused beside ``client=``.
_PROCESS_OPTIONS = ("endpoint", "codex_bin", "config", "env", "pass_env", "codex_home", "approvals", "launcher")


async def run(
    prompt: Input,
    *,
    client: Optional[AppServerClient] = None,
    cwd: Optional[str] = None,
    model: Optional[str] = None,
    sandbox: Optional[str] = None,
    approval_policy: Optional[str] = None,
    approvals: Optional[ApprovalHandler] = None,
    endpoint: Optional[ModelEndpoint] = None,
    codex_bin: Optional[str] = None,
    config: Sequence[str] = (),
    env: Optional[Mapping[str, str]] = None,
    pass_env: Sequence[str] = (),
    codex_home: Optional[str] = None,
    output_schema: Optional[Mapping[str, Any]] = None,
    thread_params: Optional[Mapping[str, Any]] = None,
    turn_params: Optional[Mapping[str, Any]] = None,
    idle_timeout: Optional[float] = None,
    interrupt_grace: float = 5.0,
    on_event: Optional[EventListener] = None,
    launcher: Optional[Launcher] = None,
) -> RunResult:
    """Run ``prompt`` as one codex turn on a new thread and return its
    :class:`RunResult`.

    Without ``client`` this starts ``codex app-server`` (``codex_bin``, the
    ``-c`` items of ``config``, the model ``endpoint``, the child's ``env`` and
    ``pass_env``, ``codex_home``, ``approvals`` for what codex asks -- without
    one every request is declined) and closes it at the end; with ``client``
    it uses that one and leaves it open (the process options are then a
    :class:`~codexmini.ConfigError`).  ``cwd``, ``model``, ``sandbox`` and
    ``approval_policy`` go to ``thread/start``, ``thread_params`` and
    ``turn_params`` add raw fields.  ``output_schema`` asks for a structured
    answer (see :attr:`RunResult.value`).  ``on_event`` sees each event as it
    arrives; ``idle_timeout`` bounds the silence between two.

    Cancelling the caller interrupts the turn.  Raises
    :class:`~codexmini.SchemaError` / :class:`~codexmini.ConfigError` before
    starting anything, :class:`~codexmini.OutputValidationError` for an
    answer the schema rejects, and the client's errors (``BinaryNotFound``,
    ``RpcError``, ``ProcessExited`` ...).
    """
    schema = check_output_schema(output_schema)
    check_thread_options(sandbox, approval_policy)
    own = client is None
    if client is not None:
        given = (endpoint, codex_bin, config, env, pass_env, codex_home, approvals, launcher)
        passed = [name for name, value in zip(_PROCESS_OPTIONS, given) if value]
        if passed:
            raise ConfigError(f"{', '.join(passed)}: options of a process run() starts, not of a client passed in")
    else:
        client = await connect(
            cwd=cwd,
            endpoint=endpoint,
            codex_bin=codex_bin,
            config=config,
            env=env,
            pass_env=pass_env,
            codex_home=codex_home,
            approvals=approvals,
            launcher=launcher,
        )
    try:
        thread = await Thread.start(
            client, cwd=cwd, model=model, sandbox=sandbox, approval_policy=approval_policy, params=thread_params
        )
        try:
            return await run_turn(
                thread,
                prompt,
                output_schema=schema,
                params=turn_params,
                idle_timeout=idle_timeout,
                interrupt_grace=interrupt_grace,
                on_event=on_event,
            )
        finally:
            thread.close()
    finally:
        if own:
            await client.close()


__all__ = [
    "ApprovalHandler",
    "EventListener",
    "RunResult",
    "check_output_schema",
    "check_thread_options",
    "connect",
    "final_response",
    "install_approvals",
    "run",
    "run_turn",
]
