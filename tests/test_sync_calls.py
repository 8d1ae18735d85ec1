"""Every call ``codexmini.sync`` carries beyond a turn, for real against the fakes.

tests/test_sync_parity.py proves the blocking API has every call of the async
one; this file runs each of them: the client's constructor options and what
it says about itself, its requests, handlers, observers and subscriptions;
the thread lifecycle (start, resume, fork, list, read, rollback, compaction,
review, archive, name); the agent's knobs, its pre-step hook and ``cancel``'s
cause; ``connect_daemon`` and ``stop_daemon`` against a fake ``codex`` and a
WebSocket server on a unix socket.  The fakes are the in-memory app-server
playing :class:`~codexmini.testing.CodexLike` behaviours and
:class:`support.canned.Canned` (answers recorded from the real binary).
Each error path ends in a typed error, and after each test no loop thread,
no open object and no worker thread is left (the autouse fixture).
"""

from __future__ import annotations

import os
import shutil
import signal
import tempfile
import threading
import time
from typing import Any, Dict, Iterator, List, Mapping, Optional, Tuple

import pytest
from support import thread_behaviours as tb
from support.canned import Canned, recorded
from support.portal_checks import BOUND, nothing_left

from codexmini import (
    NO_RETRY,
    AgentConfig,
    AgentMessageDelta,
    Blocked,
    ClientClosed,
    CodexTimeout,
    ConfigError,
    Launch,
    Limits,
    MethodNotFound,
    ModelEndpoint,
    ProcessExited,
    RateLimitsUpdated,
    Reply,
    RpcError,
    SessionLog,
    StartFailed,
    ThreadNotFound,
    Timeouts,
    TurnTimeout,
    sync,
)
from codexmini.testing import CodexLike, FakeAppServer
from codexmini.testing.codex_like import RATE_LIMITS, THREAD, USAGE_1, thread_start_result, turn_object
from codexmini.testing.fake_socket import serve

WORKERS = ("codexmini-handler", "codexmini-pre-step", "codexmini-approval")


@pytest.fixture(autouse=True)
def nothing_left_behind() -> Iterator[None]:
    with nothing_left():
        yield
    for worker in [t for t in threading.enumerate() if t.name in WORKERS]:
        worker.join(BOUND)  # each ends with its call
        assert not worker.is_alive(), f"{worker.name} outlived its test"


def fake_client(behaviour: Any, **options: Any) -> Tuple[FakeAppServer, sync.Client]:
    fake = FakeAppServer(behaviour)
    launch = Launch(launcher=fake.launch, **options.pop("launch_options", {}))
    return fake, sync.Client(launch, **options)


def sent(fake: FakeAppServer, method: str) -> List[Dict[str, Any]]:
    return [f.get("params") or {} for s in fake.launches for f in s.received if f.get("method") == method]


# -- the client: its constructor is start (and connect) ------------------------------------


def test_sync_client_takes_starts_options_and_initializes_when_told():
    frames: List[Tuple[str, Any]] = []
    fake, client = fake_client(
        CodexLike,
        initialize=False,
        tap=lambda direction, frame: frames.append((direction, frame)),
        retry=NO_RETRY,
    )
    with client:
        assert client.server_info == {} and client.retry is NO_RETRY
        info = client.initialize(client_name="mine", experimental_api=False, opt_out_notifications=["warning"])
        assert info is client.server_info and info["userAgent"]
        (asked,) = sent(fake, "initialize")
        assert asked["clientInfo"]["name"] == "mine"
        assert asked["capabilities"] == {"experimentalApi": False, "optOutNotificationMethods": ["warning"]}
        # the tap saw the handshake both ways: nothing before the caller said so
        assert [(d, f.get("method")) for d, f in frames][:2] == [("out", "initialize"), ("in", None)]
        assert ("out", {"method": "initialized"}) in frames
    fake, client = fake_client(CodexLike, client_name="from-the-constructor", opt_out_notifications=("warning",))
    with client:
        (asked,) = sent(fake, "initialize")
        assert asked["clientInfo"]["name"] == "from-the-constructor"
        assert asked["capabilities"]["optOutNotificationMethods"] == ["warning"]


def test_sync_client_says_what_the_async_one_says():
    fake, client = fake_client(
        CodexLike, launch_options={"timeouts": Timeouts(request=7), "limits": Limits(queue_size=9)}
    )
    with client:
        assert client.pid is None and client.returncode is None and client.stderr_tail == ""
        assert client.healthy and not client.closed
        assert client.argv == ["codex", "app-server"]  # what the launch planned
        assert client.url is None and client.timeouts.request == 7 and client.limits.queue_size == 9
        assert client.rate_limits is None and len(client.protocol_errors) == 0
        assert client.run("hi").final_response == "Hello"
        assert client.rate_limits == RATE_LIMITS  # the last account/rateLimits/updated
        assert client.stats["handler_errors"] == 0
    assert client.closed and not client.healthy


def test_sync_client_wait_closed_returns_when_the_process_ends_and_times_out_while_it_runs():
    _, client = fake_client(tb.ExitMidTurn)
    with client:
        with pytest.raises(CodexTimeout):
            client.wait_closed(timeout=0.05)  # alive: the bound ends the wait
        with pytest.raises(ProcessExited):
            client.run("hi")  # the child dies mid-turn
        client.wait_closed(timeout=BOUND)
        assert client.closed and not client.healthy and client.returncode == 3
        assert "dying mid-turn" in client.stderr_tail
        with pytest.raises(ProcessExited):
            client.notify("initialized")  # nothing to send to


def test_sync_client_a_token_goes_with_connect_only():
    with pytest.raises(ConfigError, match="token: a capability token goes with connect"):
        sync.Client(Launch(launcher=FakeAppServer(CodexLike).launch), token="t")
    with pytest.raises(ConfigError, match="launch and connect"):
        sync.Client(Launch(launcher=FakeAppServer(CodexLike).launch), connect="ws://127.0.0.1:9", token="t")


def test_sync_client_notify_and_forget_thread_on_a_child():
    fake, client = fake_client(CodexLike)
    with client:
        client.notify("initialized", {})
        client.forget_thread(THREAD)  # a child of this client alone: nothing to ask
        received = client.request("thread/loaded/list", {})["data"]
    assert len([m for m in received if '"initialized"' in m]) == 2 == len(sent(fake, "initialized"))
    assert sent(fake, "thread/unsubscribe") == []
    with pytest.raises(ClientClosed):
        client.notify("initialized")


# -- handlers and observers ------------------------------------------------------------------


def test_sync_on_request_handler_answers_in_a_worker_thread_and_fails_closed():
    where: List[str] = []
    calls: List[str] = []

    def approve(method: str, params: Dict[str, Any]) -> Any:
        where.append(threading.current_thread().name)
        calls.append(method)
        if len(calls) == 2:
            raise RuntimeError("the handler's own bug")
        return {"decision": "accept"}

    _, client = fake_client(tb.Approving)
    with client:
        client.on_request("item/commandExecution/requestApproval", approve)
        assert client.run("approve it").final_response == "decision: accept"
        assert client.run("approve again").final_response == "decision: decline"  # it raised: fail-closed
        client.on_request("item/commandExecution/requestApproval", None)  # removed: the default answer
        assert client.run("approve once more").final_response == "decision: decline"
    assert where == ["codexmini-handler", "codexmini-handler"] and len(calls) == 2


def test_sync_on_request_handler_ending_the_process_its_way_is_answered(caplog):
    def leave(method: str, params: Dict[str, Any]) -> Any:
        raise SystemExit(3)

    _, client = fake_client(tb.Approving)
    with client:
        client.on_request("item/commandExecution/requestApproval", leave)
        assert client.run("approve it").final_response == "decision: decline"
        assert client.portal.loop_thread.is_alive()
    assert "the handler of item/commandExecution/requestApproval raised SystemExit" in caplog.text


def test_sync_on_answer_observer_sees_each_answer_until_unregistered():
    seen: List[Tuple[str, str]] = []
    _, client = fake_client(tb.Approving, approvals=lambda request: Reply("accept"))
    with client:
        unregister = client.on_answer(lambda method, params, frame, by: seen.append((method, by)))
        assert client.run("approve it").final_response == "decision: accept"
        unregister()
        assert client.run("approve again").final_response == "decision: accept"
    unregister()  # closed: nothing to do
    assert seen == [("item/commandExecution/requestApproval", "handler")]


# -- subscriptions ---------------------------------------------------------------------------


class LimitsThenExit(tb.Mortal):
    """A model call's usage and rate limits, then the child dies."""

    async def script(self, params: Mapping[str, Any]) -> None:
        self.usage(USAGE_1, USAGE_1)
        raise tb.Exit(3)


def test_sync_subscription_reads_frames_and_events_until_the_client_ends():
    _, client = fake_client(LimitsThenExit)
    with client:
        frames = client.subscribe(client.GLOBAL)
        events = client.subscribe(sync.Client.GLOBAL)
        every = client.subscribe(client.ALL)
        assert frames.key is None and every.key == "*" and frames.maxsize == Limits().queue_size
        assert frames.overflow == "wait" and not frames.full and frames.dropped == 0
        assert frames.get_nowait() is None and frames.pending() == 0
        with pytest.raises(CodexTimeout):
            frames.get(timeout=0.05)
        with pytest.raises(ProcessExited):
            client.run("hi")
        assert frames.pending() == 1
        assert [f["method"] for f in frames] == ["account/rateLimits/updated"]  # then the client's end
        assert [type(e) for e in events.events()] == [RateLimitsUpdated]
        with pytest.raises(ProcessExited):
            frames.get()  # ended and empty: the client's terminal error
        with pytest.raises(ProcessExited):
            frames.get_nowait()
        for _ in every.events():
            break  # left early: the async generator is closed on the loop
        every.close()
        every.close()  # idempotent


def test_sync_subscription_that_drops_counts_and_one_left_early_reads_on():
    _, client = fake_client(CodexLike)
    with client:
        small = client.subscribe(client.GLOBAL, maxsize=1, overflow="drop")
        client.run("one")
        client.run("two")  # a second rate-limit update: no room
        assert small.overflow == "drop" and small.maxsize == 1 and small.dropped == 1
        assert small.pending() == 1
        for frame in small:  # a frame queued: taken, then left early
            assert frame["method"] == "account/rateLimits/updated"
            break
        assert small.pending() == 0
        with pytest.raises(ConfigError):
            client.subscribe(client.GLOBAL, overflow="sometimes")  # type: ignore[arg-type]
        small.close()


# -- the utility requests --------------------------------------------------------------------


def canned_client(answers: Mapping[str, Any], version: str = "0.149.1") -> Tuple[Canned, sync.Client]:
    fake = Canned(answers, version=version)
    return fake, sync.Client(Launch(launcher=FakeAppServer(fake).launch))


def test_sync_models_is_a_plain_iterator_over_every_page():
    first = recorded("models", "model/list", 0, version="0.171.0")
    last = {"result": {"data": first["result"]["data"][:1], "nextCursor": None}}
    fake, client = canned_client({"model/list": [first, last]}, version="0.171.0")
    with client:
        listed = list(client.models(include_hidden=True, limit=2, provider="openai", timeout=BOUND))
        assert len(listed) == len(first["result"]["data"]) + 1
        for _ in client.models():
            break  # left early: the second page is never asked for
    assert [p for m, p in fake.asked] == [
        {"includeHidden": True, "limit": 2, "modelProvider": "openai"},
        {"includeHidden": True, "limit": 2, "modelProvider": "openai", "cursor": first["result"]["nextCursor"]},
        {},
    ]


def test_sync_models_dropped_after_the_client_closed_is_quiet():
    first = recorded("models", "model/list", 0, version="0.171.0")
    fake, client = canned_client({"model/list": [first]}, version="0.171.0")
    models = client.models()
    assert next(models)["id"]
    client.close()
    models.close()  # would close the listing on the loop; the loop is gone, so nothing is left to do
    assert len(fake.asked) == 1


def test_sync_models_a_refused_page_is_a_typed_error():
    refused = {"error": {"code": -32600, "message": "Invalid request: no"}}
    _, client = canned_client({"model/list": [refused]})
    with client:
        with pytest.raises(RpcError, match="no"):
            list(client.models())


def test_sync_config_account_and_exec_send_their_options():
    fake, client = canned_client(
        {
            "config/read": [recorded("config_write", "config/read")],
            "config/value/write": [recorded("config_write", "config/value/write")],
            "account/read": [recorded("account", "account/read")],
            "account/rateLimits/read": [recorded("account", "account/rateLimits/read")],
            "command/exec": [recorded("command_exec", "command/exec")],
        }
    )
    with client:
        assert client.read_config(cwd="/w", include_layers=True) == recorded("config_write", "config/read")["result"]
        written = client.write_config("model", "gpt-5", merge="upsert", file_path="/c.toml", expected_version="v1")
        assert written == recorded("config_write", "config/value/write")["result"]
        assert client.read_account(refresh_token=True) == recorded("account", "account/read")["result"]
        with pytest.raises(RpcError, match="authentication required to read rate limits"):
            client.read_rate_limits(timeout=BOUND)  # an API key, not a ChatGPT login: codex refuses
        done = client.exec(["ls"], cwd="/w", env={"A": "1", "B": None}, timeout_ms=5000, params={"tty": False})
        assert done == {"exitCode": 3, "stdout": "out\n", "stderr": "err\n"}
    assert fake.asked == [
        ("config/read", {"cwd": "/w", "includeLayers": True}),
        (
            "config/value/write",
            {
                "keyPath": "model",
                "value": "gpt-5",
                "mergeStrategy": "upsert",
                "filePath": "/c.toml",
                "expectedVersion": "v1",
            },
        ),
        ("account/read", {"refreshToken": True}),
        ("account/rateLimits/read", {}),
        (
            "command/exec",
            {"command": ["ls"], "cwd": "/w", "env": {"A": "1", "B": None}, "timeoutMs": 5000, "tty": False},
        ),
    ]


def test_sync_a_typed_request_through_call():
    fake, client = canned_client({"thread/name/set": [{"result": {}}]})
    with client:
        assert client.call(client.aio.call.thread_name_set({"threadId": THREAD, "name": "n"})) == {}
    assert fake.asked == [("thread/name/set", {"threadId": THREAD, "name": "n"})]


# -- the thread lifecycle --------------------------------------------------------------------


def test_sync_thread_start_resume_and_fork():
    resumed = recorded("resume", "thread/resume")
    fake, client = canned_client(
        {
            "thread/resume": [recorded("resume_unpersisted", "thread/resume"), resumed],
            "thread/fork": [recorded("fork", "thread/fork")],
        }
    )
    with client:
        started = sync.Thread.start(client, cwd="/w", model="m", params={"ephemeral": True}, timeout=BOUND)
        assert started.id == THREAD and started.client is client and started.history_mode == "legacy"
        with pytest.raises(ThreadNotFound):
            sync.Thread.resume(client, "0000", cwd="/w")
        again = sync.Thread.resume(client, resumed["result"]["thread"]["id"], sandbox="read-only", timeout=BOUND)
        assert again.id == resumed["result"]["thread"]["id"] and again.info == resumed["result"]
        fork = sync.Thread.fork(client, THREAD, last_turn_id="turn-1", ephemeral=True, approval_policy="never")
        assert fork.id == recorded("fork", "thread/fork")["result"]["thread"]["id"]
        fork.close()
    assert fake.asked == [
        ("thread/resume", {"threadId": "0000", "cwd": "/w"}),
        ("thread/resume", {"threadId": again.id, "sandbox": "read-only"}),
        ("thread/fork", {"threadId": THREAD, "approvalPolicy": "never", "lastTurnId": "turn-1", "ephemeral": True}),
    ]


def test_sync_thread_list_is_a_plain_iterator_over_every_page():
    first, second = recorded("list_threads", "thread/list", 0), recorded("list_threads", "thread/list", 1)
    fake, client = canned_client({"thread/list": [first, second]})
    with client:
        listed = [t["id"] for t in sync.Thread.list(client, limit=2, archived=False, cwd="/w", search="x")]
        assert listed == [t["id"] for t in first["result"]["data"] + second["result"]["data"]]
        for _ in sync.Thread.list(client, params={"sortKey": "created_at"}):
            break
    base = {"limit": 2, "archived": False, "cwd": "/w", "searchTerm": "x"}
    assert fake.asked == [
        ("thread/list", base),
        ("thread/list", dict(base, cursor=first["result"]["nextCursor"])),
        ("thread/list", {"sortKey": "created_at"}),
    ]


def test_sync_thread_read_archive_unarchive_and_name():
    fake, client = canned_client(
        {
            "thread/read": [recorded("read", "thread/read")],
            "thread/archive": [{"result": {}}],
            "thread/unarchive": [recorded("archive", "thread/unarchive")],
            "thread/name/set": [{"result": {}}],
        }
    )
    with client:
        thread = client.thread()
        assert thread.read(include_turns=False, timeout=BOUND)["id"]
        thread.archive()
        assert thread.unarchive(timeout=BOUND)["name"] == "filed thread"
        thread.set_name("n")
    assert fake.asked == [
        ("thread/read", {"threadId": THREAD, "includeTurns": False}),
        ("thread/archive", {"threadId": THREAD}),
        ("thread/unarchive", {"threadId": THREAD}),
        ("thread/name/set", {"threadId": THREAD, "name": "n"}),
    ]


def paginated(fake: Canned, params: Mapping[str, Any]) -> Dict[str, Any]:
    result = thread_start_result(params)
    result["thread"]["historyMode"] = "paginated"
    return {"result": result}


def test_sync_thread_rollback_of_each_history_mode_and_its_refusals():
    unknown = {"error": {"code": -32600, "message": "Invalid request: unknown variant `thread/rollback`"}}
    fake, client = canned_client({"thread/rollback": [recorded("rollback", "thread/rollback"), unknown]})
    with client:
        thread = client.thread()
        with pytest.raises(ConfigError, match=">= 1"):
            thread.rollback(0)
        thread.rollback(2, timeout=BOUND)
        with pytest.raises(MethodNotFound, match="no thread/rollback"):
            thread.rollback()
    assert fake.asked == [
        ("thread/rollback", {"threadId": THREAD, "numTurns": 2}),
        ("thread/rollback", {"threadId": THREAD, "numTurns": 1}),
    ]
    page = recorded("rollback", "thread/turns/list", version="0.171.0")
    fake, client = canned_client(
        {
            "thread/start": [paginated],
            "thread/turns/list": [page],
            "thread/revert": [recorded("rollback", "thread/revert", version="0.171.0")],
        },
        version="0.171.0",
    )
    with client:
        thread = client.thread()
        assert thread.history_mode == "paginated"
        thread.rollback()
    assert [m for m, _ in fake.asked] == ["thread/start", "thread/turns/list", "thread/revert"]


class Reviews(CodexLike):
    """review/start as codex 0.149.1 answers it (recorded): inline, or
    detached into a new thread (``delivery="detached"``)."""

    REVIEW_THREAD = "00000000-0000-7000-8000-0000000000aa"

    async def on_review_start(self, rid: Any, params: Mapping[str, Any]) -> None:
        answer = recorded("review", "review/start")["result"]
        thread = self.REVIEW_THREAD if params.get("delivery") == "detached" else THREAD
        answer["reviewThreadId"] = thread
        turn = answer["turn"]["id"]
        self.write({"id": rid, "result": answer})
        self.completed({"type": "exitedReviewMode", "id": "r1", "review": "Looks fine."}, turn=turn, thread=thread)
        self.finish(items=[], turn=turn, thread=thread)


def test_sync_thread_review_is_a_turn_in_its_thread_or_a_new_one():
    fake, client = fake_client(Reviews)
    with client:
        thread = client.thread()
        inline = thread.review({"type": "uncommittedChanges"}, idle_timeout=BOUND)
        assert inline.run(timeout=BOUND).status == "completed" and inline.thread is thread
        detached = thread.review({"type": "uncommittedChanges"}, delivery="detached", interrupt_grace=1.0)
        assert detached.interrupt_grace == 1.0 and detached.idle_timeout is None
        done = detached.run(timeout=BOUND)
        assert [i["type"] for i in done.items] == ["exitedReviewMode"]
        review_thread = detached.thread
        assert review_thread.id == Reviews.REVIEW_THREAD and review_thread.client is client
        assert detached.thread is review_thread  # one blocking thread for it
    assert [p.get("delivery") for p in sent(fake, "review/start")] == [None, "detached"]


class Compacts(CodexLike):
    """thread/compact/start as codex answers it -- ``{}``, then a turn on the
    thread -- unless the variant is ``never`` (no turn ever starts)."""

    async def on_thread_compact_start(self, rid: Any, params: Mapping[str, Any]) -> None:
        self.write({"id": rid, "result": {}})
        if self.variant == "never":
            return
        turn = "00000000-0000-7000-8000-0000000000cc"
        self.note("turn/started", {"threadId": THREAD, "turn": turn_object(turn)})
        item = {"type": "contextCompaction", "id": "c1"}
        self.started(item, turn=turn)
        self.completed(item, turn=turn)
        self.finish(turn=turn)


def test_sync_thread_compact_waits_for_its_turn_within_each_bound():
    _, client = fake_client(Compacts)
    with client:
        done = client.thread().compact(idle_timeout=BOUND, timeout=BOUND)
        assert [i["type"] for i in done.items] == ["contextCompaction"]
    fake = FakeAppServer(Compacts, "never")
    with sync.Client(Launch(launcher=fake.launch)) as client:
        thread = client.thread()
        with pytest.raises(TurnTimeout):
            thread.compact(idle_timeout=0.05)  # codex's silence
        with pytest.raises(CodexTimeout):
            thread.compact(timeout=0.05)  # the caller's bound on the whole call
        assert client.run("still usable").final_response == "Hello"


def test_sync_turn_says_what_it_was_made_with():
    _, client = fake_client(CodexLike)
    with client:
        thread = client.thread()
        turn = thread.turn("hi", params={"effort": "low"}, interrupt_grace=2.0, idle_timeout=9.0)
        assert turn.thread is thread and turn.params == {"effort": "low"}
        assert turn.interrupt_grace == 2.0 and turn.idle_timeout == 9.0
        assert turn.input == [{"type": "text", "text": "hi"}]
        assert turn.run(timeout=BOUND).status == "completed"


# -- the agent: knobs, the pre-step hook, cancel's cause ---------------------------------------


@pytest.fixture
def session(tmp_path) -> Iterator[SessionLog]:
    log = SessionLog.open(str(tmp_path / "session.jsonl"))
    yield log
    log.close()


def config(fake: FakeAppServer, **more: Any) -> AgentConfig:
    return AgentConfig(launch=Launch(launcher=fake.launch), cwd="/var/tmp", model="gpt-fake", skills=False, **more)


def logged(log: SessionLog, type_: str) -> List[Dict[str, Any]]:
    return [e["data"] for e in log.events if e["type"] == type_]


def test_sync_agent_knobs_are_logged_and_act_from_the_next_step(session, monkeypatch):
    monkeypatch.setenv("SYNC_PARITY_KEY", "sk-from-the-environment")
    fake = FakeAppServer(tb.AgentTurns)
    with sync.Agent(session, config(fake)) as agent:
        assert agent.config.model == "gpt-fake"
        agent.run("first")
        agent.set_model("gpt-chosen")
        agent.set_endpoint(ModelEndpoint("http://127.0.0.1:9/v1", "sk-given"), "SYNC_PARITY_KEY")
        agent.set_knob("sandbox/mode", "read-only")
        agent.set_sandbox("danger-full-access")
        agent.set_reasoning("high", summary="concise")
        with pytest.raises(ConfigError, match="non-empty string"):
            agent.set_model("")  # nothing logged
        with pytest.raises(ConfigError, match="summary must be one of"):
            agent.set_reasoning(summary="loud")  # type: ignore[arg-type]
        with pytest.raises(ConfigError, match="unknown knob"):
            agent.set_knob("color", "blue")
        assert agent.run("second")["reason"] == "completed"
        agent.set_endpoint(None)  # codex's own configuration again
    assert logged(session, "model/choice") == [{"model": "gpt-chosen"}]
    assert logged(session, "model/endpoint") == [
        {"baseUrl": "http://127.0.0.1:9/v1", "wireApi": "responses", "apiKeyEnv": "SYNC_PARITY_KEY"},
        {"baseUrl": None, "wireApi": None, "apiKeyEnv": None},
    ]
    assert [p.get("model") for p in sent(fake, "thread/start")] == ["gpt-fake", "gpt-chosen"]
    assert sent(fake, "thread/start")[1]["sandbox"] == "danger-full-access"
    assert logged(session, "model/reasoning") == [{"effort": "high", "summary": "concise"}]
    assert [(p.get("effort"), p.get("summary")) for p in sent(fake, "turn/start")] == [
        (None, None),
        ("high", "concise"),
    ]
    assert len(fake.launches) == 2  # the new endpoint restarted the child
    with open(session.path, encoding="utf-8") as fh:
        assert "sk-given" not in fh.read()  # the key itself is never logged


def test_sync_agent_pre_step_hook_rewrites_blocks_or_fails_a_step(session):
    seen: List[Tuple[str, List[str]]] = []
    decisions: List[Any] = [["rewritten"], Blocked("not today"), ValueError("the hook's own bug")]

    def before_step(messages: List[Dict[str, Any]]) -> Any:
        seen.append((threading.current_thread().name, [m["content"][0]["text"] for m in messages]))
        decision = decisions.pop(0)
        if isinstance(decision, Exception):
            raise decision
        return decision

    fake = FakeAppServer(tb.AgentTurns)
    with sync.Agent(session, config(fake), before_step=before_step) as agent:
        assert agent.run("original")["reason"] == "completed"
        assert agent.run("second") == {"reason": "blocked", "blocked": {"by": "pre-step", "reason": "not today"}}
        assert agent.run("third")["reason"] == "error"
    assert seen == [
        ("codexmini-pre-step", ["original"]),
        ("codexmini-pre-step", ["second"]),
        ("codexmini-pre-step", ["third"]),
    ]
    assert [m["content"][0]["text"] for m in logged(session, "user/message")] == ["rewritten"]
    (error,) = logged(session, "agent/error")
    assert error["code"] == "UNKNOWN" and "the hook's own bug" in error["message"]


def test_sync_agent_pre_step_hook_may_call_back_into_the_agent(session):
    agent: Optional[sync.Agent] = None

    def before_step(messages: List[Dict[str, Any]]) -> Any:
        assert agent is not None
        if agent.stats["steps"] == 0:
            agent.inject("added by the hook")  # a blocking call from the worker thread: no deadlock
        return None

    with sync.Agent(session, config(FakeAppServer(tb.AgentTurns)), before_step=before_step) as made:
        agent = made
        assert agent.run("first")["reason"] == "completed"
    assert [m["content"][0]["text"] for m in logged(session, "user/message")] == ["first", "added by the hook"]


def test_sync_agent_cancel_logs_its_cause(session):
    fake = FakeAppServer(tb.AgentTurns)
    holding = threading.Event()

    def on_event(event: Any) -> None:
        if isinstance(event, AgentMessageDelta):
            holding.set()

    with sync.Agent(session, config(fake), on_event=on_event) as agent:
        canceller = threading.Thread(
            target=lambda: (holding.wait(BOUND), agent.cancel(keep_inbox=True, cause="external"))
        )
        canceller.start()
        assert agent.run("slow please") == {"reason": "aborted", "abortedBy": "external"}
        canceller.join(BOUND)
    assert [e["abortedBy"] for e in logged(session, "turn/end")] == ["external"]


def test_sync_agent_run_interrupted_by_ctrl_c_logs_interrupt(session):
    assert threading.current_thread() is threading.main_thread()
    holding = threading.Event()

    def on_event(event: Any) -> None:
        if isinstance(event, AgentMessageDelta):
            holding.set()

    def press_ctrl_c() -> None:
        holding.wait(BOUND)
        signal.pthread_kill(threading.main_thread().ident, signal.SIGINT)  # type: ignore[arg-type]

    # Ctrl-C's own handler, for this test only (a shell without job control starts us with SIGINT ignored).
    previous = signal.signal(signal.SIGINT, signal.default_int_handler)
    try:
        with sync.Agent(session, config(FakeAppServer(tb.AgentTurns)), on_event=on_event) as agent:
            presser = threading.Thread(target=press_ctrl_c)
            presser.start()
            with pytest.raises(KeyboardInterrupt):
                agent.run("slow please")
            presser.join(BOUND)
            assert agent.phase == "idle"
    finally:
        signal.signal(signal.SIGINT, previous)
    assert [e.get("abortedBy") for e in logged(session, "turn/end")] == ["interrupt"]


# -- codex's managed daemon ------------------------------------------------------------------


@pytest.fixture
def scratch() -> Iterator[str]:
    path = tempfile.mkdtemp(prefix="cm-sync-")  # short: a unix socket path has ~100 bytes
    yield path
    shutil.rmtree(path, ignore_errors=True)


def fake_codex(directory: str, body: str) -> str:
    path = os.path.join(directory, "codex")
    with open(path, "w") as fh:
        fh.write(f"#!/bin/sh\n{body}\n")
    os.chmod(path, 0o755)
    return path


def test_sync_connect_daemon_and_stop_daemon(scratch):
    socket_path = os.path.join(scratch, "control.sock")
    status = '{"status": "started", "socketPath": "%s"}' % socket_path
    codex = fake_codex(
        scratch, f'case "$3" in start) echo \'{status}\';; stop) echo \'{{"status": "stopped"}}\';; esac'
    )
    launch = Launch(codex_bin=codex, codex_home=scratch)
    with sync.Portal() as server_loop:  # the daemon's socket, served from a loop of the test's own
        server = server_loop.call(serve(tb.Approving, listen=f"unix://{socket_path}"))
        try:
            with sync.connect_daemon(launch, approvals=lambda r: Reply("accept"), client_name="d") as client:
                assert client.url == f"unix://{socket_path}" and client.argv == []
                assert client.run("approve it").final_response == "decision: accept"
                client.forget_thread(THREAD)  # a shared server: told to stop sending the thread here
                assert any('"thread/unsubscribe"' in m for m in client.request("thread/loaded/list", {})["data"])
            with sync.Client(connect=f"unix://{socket_path}", token="a-capability") as other:
                assert other.url == f"unix://{socket_path}"
        finally:
            server_loop.call(server.aclose())
    assert sync.stop_daemon(launch, timeout=BOUND) == {"status": "stopped"}


def test_sync_daemon_calls_fail_typed_and_leave_nothing(scratch):
    with pytest.raises(ConfigError, match="the codex daemon ignores config"):
        sync.connect_daemon(Launch(config=["model=x"]))
    mute = Launch(codex_bin=fake_codex(scratch, "echo not json; echo a warning >&2"), codex_home=scratch)
    with pytest.raises(StartFailed, match="daemon stop exited 0: a warning"):
        sync.stop_daemon(mute)
    with pytest.raises(StartFailed, match="daemon start exited 0"):
        sync.connect_daemon(mute)
    pid_file = os.path.join(scratch, "pid")
    hangs = Launch(
        codex_bin=fake_codex(scratch, f"echo $$ > {pid_file}.new; mv {pid_file}.new {pid_file}; exec sleep 60"),
        codex_home=scratch,
    )
    for call in (sync.stop_daemon, sync.connect_daemon):
        with pytest.raises(CodexTimeout):
            call(hangs, timeout=0.2)  # the caller's bound on the whole call


def test_sync_daemon_call_given_up_ends_its_command(scratch):
    # A Ctrl-C (as a timeout) cancels the call on its loop: the daemon command
    # it ran must not outlive it.  The Ctrl-C comes once the command runs.
    assert threading.current_thread() is threading.main_thread()
    pid_file = os.path.join(scratch, "pid")
    hangs = Launch(
        codex_bin=fake_codex(scratch, f"echo $$ > {pid_file}.new; mv {pid_file}.new {pid_file}; exec sleep 60"),
        codex_home=scratch,
    )

    def press_ctrl_c() -> None:
        waited = 0.0
        while not os.path.exists(pid_file) and waited < BOUND:
            time.sleep(0.01)
            waited += 0.01
        signal.pthread_kill(threading.main_thread().ident, signal.SIGINT)  # type: ignore[arg-type]

    previous = signal.signal(signal.SIGINT, signal.default_int_handler)
    try:
        presser = threading.Thread(target=press_ctrl_c)
        presser.start()
        with pytest.raises(KeyboardInterrupt):
            sync.stop_daemon(hangs)
        presser.join(BOUND)
    finally:
        signal.signal(signal.SIGINT, previous)
    with open(pid_file) as fh:
        pid = int(fh.read())
    with pytest.raises(ProcessLookupError):
        os.kill(pid, 0)  # the command ended, and was reaped, with the call


def test_sync_agent_run_pending_runs_what_a_resumed_log_had_queued(session):
    text = {"content": [{"type": "text", "text": "queued before"}], "source": {"kind": "user"}}
    session.append("inbox/queued", {"id": "q1", "kind": "followup", **text})
    path = session.path
    session.close()
    with SessionLog.open(path) as log:
        with sync.Agent(log, config(FakeAppServer(tb.AgentTurns))) as agent:
            end = agent.run_pending()
            assert end is not None and end["reason"] == "completed"
            assert agent.run_pending() is None
        assert [e["data"]["id"] for e in log.events if e["type"] == "user/message"] == ["q1"]
        assert log.pending == []
