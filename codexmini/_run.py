"""One call for the common case: a prompt in, the turn's answer out.

:func:`run` is the dozen lines every script writes, once: start
``codex app-server`` as a :class:`~codexmini.Launch` says (unless the caller
passes a ``client``), ``thread/start`` with the usual options, one turn
(:meth:`Thread.run <codexmini.Thread.run>`), and its frozen
:class:`~codexmini.RunResult`.  What :func:`run` started it closes, whatever
happened -- an error, a cancellation, an
:class:`~codexmini.OutputValidationError`.

A turn that ends ``failed`` raises :class:`~codexmini.TurnFailed`, carrying
the result (``raise_on_failure=False`` returns it, ``status`` saying so); an
``interrupted`` one is returned.  Approvals belong to the process: :func:`run`
installs ``approvals`` on the client it starts; a caller who passes its own
``client`` has already decided (``client.on_request``), and :func:`run`
refuses to change that behind its back.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Mapping, Optional, Union

from ._errors import ConfigError
from ._inputs import Input
from ._launch import Launch
from ._permission import ApprovalHandler, ApprovalPolicy, SandboxMode, check_thread_options, install_approvals

if TYPE_CHECKING:
    from ._client import AppServerClient
    from ._connect import Connect
    from ._threads import EventListener, RunResult


async def run(
    prompt: Input,
    *,
    client: Optional[AppServerClient] = None,
    launch: Optional[Launch] = None,
    connect: Optional[Union[str, Connect]] = None,
    approvals: Optional[ApprovalHandler] = None,
    cwd: Optional[str] = None,
    model: Optional[str] = None,
    sandbox: Optional[SandboxMode] = None,
    approval_policy: Optional[ApprovalPolicy] = None,
    output_schema: Optional[Mapping[str, Any]] = None,
    thread_params: Optional[Mapping[str, Any]] = None,
    turn_params: Optional[Mapping[str, Any]] = None,
    idle_timeout: Optional[float] = 600.0,
    interrupt_grace: float = 5.0,
    on_event: Optional[EventListener] = None,
    raise_on_failure: bool = True,
) -> RunResult:
    """Run ``prompt`` as one codex turn on a new thread and return its
    :class:`~codexmini.RunResult`.

    Without ``client`` this starts ``codex app-server`` as ``launch`` says
    (default ``Launch()``; its working directory defaults to ``cwd``) -- or,
    with ``connect`` (a ``ws://`` or ``unix://`` URL, or a
    :class:`~codexmini.Connect`), connects to one already running -- with
    ``approvals`` answering what codex asks -- without one every request is
    declined -- and closes it at the end; with ``client`` it uses that one
    and leaves it open (``launch``, ``connect`` and ``approvals`` are then a
    :class:`~codexmini.ConfigError`, as ``launch`` with ``connect`` is).  ``cwd``, ``model``, ``sandbox`` and
    ``approval_policy`` go to ``thread/start``, ``thread_params`` and
    ``turn_params`` add raw fields.  ``output_schema`` asks for a structured
    answer (see :attr:`RunResult.value`).  ``on_event`` sees each event as it
    arrives.

    What bounds it: ``idle_timeout`` (default 600 s; ``None`` for no bound)
    ends a turn that sends nothing for that long with
    :class:`~codexmini.TurnTimeout` (a stuck child, or a command running
    silently longer: raise it then); a model codex cannot reach ends the
    turn after ``launch.timeouts.model_retry`` (120 s) of retrying with
    :class:`~codexmini.ModelUnreachable`; a request codex leaves unanswered
    raises :class:`~codexmini.RequestTimeout` after ``timeouts.request``,
    and a frame codex does not take :class:`~codexmini.WriteTimeout` after
    ``timeouts.write``.  A turn that keeps streaming for as long as the
    model works is not bounded: cancel the call.

    A turn that ends ``failed`` raises :class:`~codexmini.TurnFailed` (its
    ``result`` is the :class:`~codexmini.RunResult`) unless
    ``raise_on_failure=False``.  Cancelling the caller interrupts the turn.  Raises
    :class:`~codexmini.SchemaError` / :class:`~codexmini.ConfigError` before
    starting anything, :class:`~codexmini.OutputValidationError` for an
    answer the schema rejects, and the client's errors (``BinaryNotFound``,
    ``RpcError``, ``ProcessExited`` ...).
    """
    from ._structured import check_output_schema  # here, not with the package: at the first run

    schema = check_output_schema(output_schema)
    check_thread_options(sandbox, approval_policy)
    own = client is None
    if client is not None:
        given = (("launch", launch), ("connect", connect), ("approvals", approvals))
        passed = [name for name, value in given if value is not None]
        if passed:
            raise ConfigError(f"{', '.join(passed)}: options of a process run() starts, not of a client passed in")
    elif connect is not None:
        if launch is not None:
            raise ConfigError("launch and connect: run() starts codex or connects to one, not both")
        from ._client import AppServerClient  # here, not with the package: only a started client needs it

        client = await AppServerClient.connect(connect)
    else:
        from ._client import AppServerClient

        client = await AppServerClient.start((launch or Launch()).for_workspace(cwd))
    if own and approvals is not None:
        install_approvals(client, approvals)
    from ._threads import Thread  # here, not with sync: at the first run

    try:
        thread = await Thread.start(
            client, cwd=cwd, model=model, sandbox=sandbox, approval_policy=approval_policy, params=thread_params
        )
        try:
            return await thread._run(
                prompt, schema, turn_params, idle_timeout, interrupt_grace, on_event, raise_on_failure
            )
        finally:
            thread.close()
    finally:
        if own:
            await client.close()


__all__ = ["run"]
