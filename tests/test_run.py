"""``codexmini.run()`` and ``Thread.run()``: one turn, a frozen result, structured output.

Offline against the in-memory fake (:class:`support.run_support.Echo` answers with
the prompt, so the prompt chooses the answer; the turns of
``support.thread_behaviours`` for failures, approvals and interrupts); live against
the pinned codex and the scripted model for the plain answer and for an
output schema answered validly and invalidly.  Every frame either way goes
through the conformance plugin's validator.
"""

from __future__ import annotations

import asyncio
import dataclasses
import json
from typing import Any, Dict, List

import pytest
from support import thread_behaviours as tb
from support.run_support import HAVE_CODEX, SCHEMA, Echo, Live, message

from codexmini import (
    AgentMessageDelta,
    AppServerClient,
    ConfigError,
    Launch,
    ModelEndpoint,
    OutputValidationError,
    RpcError,
    RunResult,
    SchemaError,
    Thread,
    TurnCompleted,
    TurnFailed,
    run,
)
from codexmini._permission import Reply
from codexmini._threads import final_response
from codexmini.testing import FakeAppServer
from codexmini.testing.codex_like import THREAD, TURN, TURN_ERROR

live = pytest.mark.skipif(not HAVE_CODEX, reason="the pinned codex is not installed (make setup)")
ANSWER = '{"answer": 42, "why": "six times seven"}'


def go(coro: Any) -> Any:
    """Run ``coro`` in a loop of its own: the live tests check that codex's
    children are gone once that loop is closed."""
    return asyncio.run(asyncio.wait_for(coro, 60))


class Fake:
    """The in-memory fake as run()'s launcher, keeping each transport (to see it closed)."""

    def __init__(self, behaviour: Any, *args: str) -> None:
        self.fake = FakeAppServer(behaviour, *args)
        self.transports: List[Any] = []

    async def launch(self, argv: Any, env: Any, cwd: Any) -> Any:
        transport = await self.fake.launch(argv, env, cwd)
        self.transports.append(transport)
        return transport

    def sent(self, method: str) -> List[Dict[str, Any]]:
        return [f.get("params") or {} for f in self.fake.server.received if f.get("method") == method]

    def all_closed(self) -> bool:
        return bool(self.transports) and all(t.returncode is not None for t in self.transports)


# -- offline -------------------------------------------------------------------------


async def test_run_returns_the_final_answer_items_usage_and_ids():
    fake = Fake(Echo)
    events: List[Any] = []
    result = await run("Hello there", launch=Launch(launcher=fake.launch), on_event=events.append)
    assert result == RunResult(
        final_response="Hello there",
        items=result.items,
        usage=result.usage,
        status="completed",
        error=None,
        thread_id=THREAD,
        turn_id=TURN,
    )
    assert [i["type"] for i in result.items] == ["userMessage", "agentMessage"]
    assert result.usage.total_tokens == 15 and result.ok and result.error_message == "" and result.value is None
    assert isinstance(events[-1], TurnCompleted) and [e.delta for e in events if isinstance(e, AgentMessageDelta)] == [
        "Hello",
        " there",
    ]
    assert "outputSchema" not in fake.sent("turn/start")[0]
    assert fake.all_closed()  # run() closed the process it started
    with pytest.raises(dataclasses.FrozenInstanceError):
        result.status = "failed"  # type: ignore[misc]


async def test_run_passes_thread_options_and_raw_params():
    fake = Fake(Echo)
    await run(
        "hi",
        launch=Launch(launcher=fake.launch),
        cwd="/var/tmp",
        model="gpt-fake",
        sandbox="read-only",
        approval_policy="never",
        thread_params={"ephemeral": True},
        turn_params={"effort": "low"},
    )
    assert fake.sent("thread/start") == [
        {"cwd": "/var/tmp", "model": "gpt-fake", "sandbox": "read-only", "approvalPolicy": "never", "ephemeral": True}
    ]
    assert fake.sent("turn/start")[0]["effort"] == "low"


async def test_run_starts_the_process_with_endpoint_config_env_and_codex_home():
    fake = Fake(Echo)
    endpoint = ModelEndpoint("http://127.0.0.1:9/v1", "sk-run")
    await run(
        "hi",
        launch=Launch(
            launcher=fake.launch,
            endpoint=endpoint,
            config=["model_reasoning_effort=low"],
            env={"EXTRA": "1"},
            codex_home="/var/tmp/run-home",
            codex_bin="codex-x",
        ),
    )
    server = fake.fake.server
    provider, table = endpoint.config()
    # The endpoint's flags first: a later -c assigning the whole table would replace them.
    assert server.argv == ["codex-x", "app-server", "-c", provider, "-c", table, "-c", "model_reasoning_effort=low"]
    assert (server.env["CODEXMINI_API_KEY"], server.env["CODEX_HOME"], server.env["EXTRA"]) == (
        "sk-run",
        "/var/tmp/run-home",
        "1",
    )


async def test_run_with_an_output_schema_parses_and_validates_the_answer():
    fake = Fake(Echo)
    result = await run(ANSWER, launch=Launch(launcher=fake.launch), output_schema=SCHEMA)
    assert result.value == {"answer": 42, "why": "six times seven"} and result.final_response == ANSWER
    assert fake.sent("turn/start")[0]["outputSchema"] == SCHEMA


@pytest.mark.parametrize(
    "prompt, text, reason",
    [
        (
            '{"answer": "many", "why": "x"}',
            '{"answer": "many", "why": "x"}',
            ("$.answer", "'many' is not of type 'integer'"),
        ),
        ("forty-two", "forty-two", None),
        ("none at all", None, ("$", "the turn produced no agent message")),
    ],
    ids=["schema-mismatch", "not-json", "no-message"],
)
async def test_run_answer_breaking_the_schema_is_a_typed_error_and_the_process_is_closed(prompt, text, reason):
    fake = Fake(Echo)
    with pytest.raises(OutputValidationError) as caught:
        await run(prompt, launch=Launch(launcher=fake.launch), output_schema=SCHEMA)
    error = caught.value
    assert error.text == text
    if reason is not None:
        assert error.errors == [reason]
    assert isinstance(error.result, RunResult) and error.result.thread_id == THREAD and error.result.value is None
    assert error.result.final_response == text and error.result.ok
    assert fake.all_closed()


async def test_run_failed_turn_raises_turn_failed_with_the_result():
    fake = Fake(tb.Failed, "with-error")
    with pytest.raises(TurnFailed, match="failed: ") as caught:
        await run("hi", launch=Launch(launcher=fake.launch), output_schema=SCHEMA)
    result = caught.value.result
    assert result is not None and (result.status, result.error, result.ok) == ("failed", TURN_ERROR, False)


async def test_run_failed_turn_is_an_outcome_when_the_caller_asks_for_the_status():
    fake = Fake(tb.Failed, "with-error")
    result = await run("hi", launch=Launch(launcher=fake.launch), output_schema=SCHEMA, raise_on_failure=False)
    assert (result.status, result.error, result.value, result.ok) == ("failed", TURN_ERROR, None, False)
    assert result.error_message == TURN_ERROR["message"] and result.final_response is None


async def test_run_invalid_options_are_refused_before_anything_starts():
    fake = Fake(Echo)
    cases = [
        (SchemaError, dict(output_schema={"type": "object", "multipleOf": 2})),
        (ConfigError, dict(sandbox="sometimes")),
        (ConfigError, dict(approval_policy="always")),
    ]
    for error, options in cases:
        with pytest.raises(error):
            await run("hi", launch=Launch(launcher=fake.launch), **options)
    assert fake.transports == []


async def test_run_on_a_given_client_leaves_it_open_and_refuses_process_options():
    fake = Fake(Echo)

    async with await AppServerClient.start(Launch(launcher=fake.launch)) as client:
        first = await run("one", client=client)
        second = await run("two", client=client, model="gpt-fake")
        assert (first.final_response, second.final_response) == ("one", "two")
        assert not client.closed
        with pytest.raises(ConfigError, match="^launch, approvals: options of a process"):
            await run(
                "x",
                launch=Launch(endpoint=ModelEndpoint("http://h/v1"), config=["a=b"]),
                client=client,
                approvals=accept,
            )
    assert len(fake.sent("thread/start")) == 2 and len(fake.transports) == 1


async def accept(request: Any) -> Reply:
    return Reply("accept")


async def test_run_installs_the_approval_handler_on_the_process_it_starts():
    seen: List[Any] = []

    async def handler(request: Any) -> Reply:
        seen.append(request.kind)
        return Reply("accept")

    result = await run("approve it", launch=Launch(launcher=Fake(tb.Approving).launch), approvals=handler)
    assert result.final_response == "decision: accept" and seen == ["command"]
    # Without a handler, codex gets the fail-closed answer.
    assert (
        await run("approve it", launch=Launch(launcher=Fake(tb.Approving).launch))
    ).final_response == "decision: decline"


async def test_run_cancelled_interrupts_the_turn_and_closes_the_process():
    fake = Fake(tb.Interruptible)

    task: "asyncio.Task[Any]"

    def on_event(event: Any) -> None:
        if isinstance(event, AgentMessageDelta):
            task.cancel()

    task = asyncio.ensure_future(run("hi", launch=Launch(launcher=fake.launch), on_event=on_event))
    with pytest.raises(asyncio.CancelledError):
        await task
    assert [p["turnId"] for p in fake.sent("turn/interrupt")] == [TURN]
    assert fake.all_closed()


async def test_run_refused_thread_start_raises_and_closes_the_process():
    fake = Fake(tb.RejectThread)
    with pytest.raises(RpcError, match="Invalid request"):
        await run("hi", launch=Launch(launcher=fake.launch))
    assert fake.all_closed()


async def test_thread_run_twice_on_one_thread_schema_per_turn():
    fake = Fake(Echo)

    async with await AppServerClient.start(Launch(launcher=fake.launch)) as client:
        thread = await Thread.start(client)
        first = await thread.run(ANSWER, output_schema=SCHEMA, params={"effort": "low"})
        second = await thread.run("plain")
        assert first.value == json.loads(ANSWER) and second.value is None
        assert first.thread_id == second.thread_id == thread.id
        with pytest.raises(SchemaError):
            await thread.run("x", output_schema={"type": 1})
        thread.close()
    starts = fake.sent("turn/start")
    assert [("outputSchema" in s, s.get("effort")) for s in starts] == [(True, "low"), (False, None)]


def test_run_final_response_is_the_last_agent_message():
    items = [
        {"type": "agentMessage", "id": "a", "text": "first"},
        {"type": "commandExecution", "id": "c"},
        {"type": "agentMessage", "id": "b", "text": None},
        {"type": "userMessage", "id": "u"},
    ]
    assert final_response(items) == ""
    assert final_response(items[:2]) == "first"
    assert final_response(items[3:]) is None


# -- live ------------------------------------------------------------------------------


@pytest.fixture
def live_model():
    made: List[Live] = []

    def make(script: Dict[str, Any]) -> Live:
        made.append(Live(script))
        return made[-1]

    yield make
    for setup in made:
        setup.close()


@pytest.mark.live
@live
def test_run_live_plain_answer(live_model):
    s = live_model({"rules": [], "default": message("Hel", "lo!")})
    result = go(
        run("say hi", model="gpt-fake", sandbox="read-only", approval_policy="never", cwd=s.ws, launch=s.launch)
    )
    assert (result.final_response, result.status, result.error) == ("Hello!", "completed", None)
    assert [i["type"] for i in result.items] == ["userMessage", "agentMessage"]
    assert result.usage.total_tokens == 15 and result.thread_id and result.turn_id
    assert "text" not in s.bodies()[0]  # no output schema: no text.format
    assert s.alive() == []


@pytest.mark.live
@live
def test_run_live_output_schema_valid_answer(live_model):
    s = live_model({"rules": [], "default": message('{"answer": 42, ', '"why": "six times seven"}')})
    result = go(run("six times seven?", model="gpt-fake", output_schema=SCHEMA, cwd=s.ws, launch=s.launch))
    assert result.value == {"answer": 42, "why": "six times seven"}
    # What codex 0.149.1 sends the model for turn/start.outputSchema: verbatim, strict, its own name.
    (body,) = s.bodies()
    assert body["text"] == {
        "format": {"type": "json_schema", "strict": True, "schema": SCHEMA, "name": "codex_output_schema"}
    }
    assert s.alive() == []


@pytest.mark.live
@live
@pytest.mark.parametrize(
    "answer, first_reason",
    [
        ('{"answer": "many", "why": "x"}', ("$.answer", "'many' is not of type 'integer'")),
        ("Forty-two.", None),
    ],
    ids=["schema-mismatch", "not-json"],
)
def test_run_live_output_schema_invalid_answer(live_model, answer, first_reason):
    s = live_model({"rules": [], "default": message(answer)})
    with pytest.raises(OutputValidationError) as caught:
        go(run("six times seven?", model="gpt-fake", output_schema=SCHEMA, cwd=s.ws, launch=s.launch))
    error = caught.value
    # codex completes the turn whatever the model said: the check is codexmini's.
    assert error.text == answer and error.result.status == "completed" and error.result.thread_id
    if first_reason is not None:
        assert error.errors[0] == first_reason
    else:
        assert error.errors[0][1].startswith("not JSON")
    assert s.alive() == []
