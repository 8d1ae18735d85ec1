"""The recorded scenarios of the thread lifecycle and the utility requests (issue 13).

Thread-level drivers (no agent, no session log): each starts one or more
clients (:meth:`~conformance.harness.Run.start_client`; the n-th is codex
process n of the recording, on the same temporary ``CODEX_HOME``) and drives
codexmini's helpers -- :meth:`Thread.resume <codexmini.Thread.resume>`,
``fork``, ``read``, ``rollback``, ``compact``, ``review``, ``list``,
``archive``, the client's ``models()``, ``read_config``/``write_config``,
``read_account``/``read_rate_limits``, ``exec`` and the overload retry.  The
checks read the wire (``result.frames``), what the driver noted
(``result.notes``) and, live, what the scripted model was asked
(``result.model_requests``: the proof that history travels or does not).

What the two ends of the supported range do differently is said with
:class:`~conformance.versions.ByVersion` values:

* :data:`ROLLBACK_METHODS` -- 0.149.1 drops turns with ``thread/rollback``;
  0.171.0 has no such method and reverts its paginated threads with
  ``thread/turns/list`` + ``thread/revert``;
* :data:`LIST_PAGES` -- how ``thread/list`` pages three threads two at a time;
* :data:`LOSES_REQUESTS` -- flooded, 0.149.1 leaves some requests unanswered.
"""

from __future__ import annotations

import asyncio
import json
from typing import Any, Dict, List, Mapping, Optional, Tuple

from codexmini import RetryPolicy
from codexmini._errors import RequestTimeout, RpcError, ThreadNotFound, UsageLimitExceeded
from codexmini._events import RateLimitsUpdated, TurnCompleted
from codexmini._threads import Thread

from .harness import Run, Scenario, ScenarioResult, answer, message
from .versions import ByVersion

#: How ``Thread.rollback`` drops the last turn: the methods it sends.
ROLLBACK_METHODS = ByVersion(
    {"0.149.1": ("thread/rollback",), "0.171.0": ("thread/turns/list", "thread/revert")},
    why='0.171.0 removed thread/rollback ("unknown variant") and reverts paginated threads with thread/revert',
)

WS_THREAD = {"sandbox": "read-only", "approval_policy": "never"}


async def _thread(run: Run, client: Any) -> Thread:
    return await Thread.start(client, cwd=run.paths.ws, model=run.scenario.model, **WS_THREAD)


async def _turn(run: Run, thread: Thread, text: str) -> TurnCompleted:
    turn = thread.turn(text)
    async with turn:
        async for event in turn:
            run.events.append(event)
    assert turn.completed is not None
    return turn.completed


def exchanges(result: ScenarioResult, method: str) -> List[Tuple[Dict[str, Any], Dict[str, Any]]]:
    """(request params, answer frame) of every ``method`` request, in order, per process."""
    pending: Dict[Tuple[int, Any], Dict[str, Any]] = {}
    out = []
    conns = result.conns or [0] * len(result.frames)
    for (direction, frame), conn in zip(result.frames, conns):
        if direction == "out" and frame.get("method") == method and "id" in frame:
            pending[(conn, frame["id"])] = frame.get("params") or {}
        elif direction == "in" and "method" not in frame and (conn, frame.get("id")) in pending:
            out.append((pending.pop((conn, frame["id"])), frame))
    return out


def sent(result: ScenarioResult) -> List[str]:
    """The methods of the client's requests, in order (initialize left out)."""
    return [
        f["method"]
        for d, f in result.frames
        if d == "out" and "id" in f and "method" in f and f["method"] != "initialize"
    ]


def model_inputs(result: ScenarioResult) -> List[str]:
    """Each model request's input, as JSON text (live runs only)."""
    return [json.dumps((r["body"] or {}).get("input"), ensure_ascii=False) for r in result.model_requests]


def asked(result: ScenarioResult, text: str) -> str:
    """The one model request whose last user message holds ``text``."""
    found = [i for i, r in zip(model_inputs(result), result.model_requests) if _last_user(r).find(text) >= 0]
    assert len(found) == 1, (text, len(found))
    return found[0]


def _last_user(request: Mapping[str, Any]) -> str:
    users = [item for item in (request["body"] or {}).get("input") or () if item.get("role") == "user"]
    return json.dumps(users[-1]) if users else ""


def user_texts(thread: Mapping[str, Any]) -> List[str]:
    """The text of each turn's user message, in the wire ``Thread``'s turns."""
    texts = []
    for turn in thread.get("turns") or ():
        for item in turn["items"]:
            if item["type"] == "userMessage":
                texts.append("".join(c.get("text", "") for c in item["content"] if c["type"] == "text"))
    return texts


def statuses(result: ScenarioResult) -> List[str]:
    return [e.status for e in result.events_of(TurnCompleted)]


# -- resume in a second process (issue 13: "it must show") ---------------------------------

REMEMBER = "Remember the word: pelican."
RECALL = "Which word did I ask you to remember?"


async def _drive_resume(run: Run) -> None:
    first = await run.start_client()
    thread = await _thread(run, first)
    await _turn(run, thread, REMEMBER)
    run.notes["thread_id"] = thread.id
    await first.close()  # the first codex process ends here
    second = await run.start_client()
    resumed = await Thread.resume(second, thread.id)
    run.notes["resumed"] = resumed.info
    await _turn(run, resumed, RECALL)


def _check_resume(result: ScenarioResult) -> None:
    assert statuses(result) == ["completed", "completed"]
    assert set(result.conns) == {0, 1}  # two codex processes
    (started,) = exchanges(result, "thread/start")
    ((params, frame),) = exchanges(result, "thread/resume")
    assert params == {"threadId": started[1]["result"]["thread"]["id"]} == {"threadId": result.notes["thread_id"]}
    assert [f["method"] for d, f in result.frames_of(1) if d == "out" and "id" in f] == [
        "initialize",
        "thread/resume",
        "turn/start",
    ]
    # The stored thread comes back with its turn.
    assert user_texts(frame["result"]["thread"]) == [REMEMBER]
    if result.mode == "live":  # the second process's model request carries the first turn
        recall = asked(result, RECALL)
        assert REMEMBER in recall and "Noted." in recall


RESUME = Scenario(
    name="resume",
    description="a turn in one codex process, Thread.resume in a second on the same CODEX_HOME, and a turn that sees the first",
    script={
        "rules": [{"when": {"user_contains": RECALL}, "respond": answer(message("msg_recall", "Pelican."))}],
        "default": answer(message("msg_noted", "Noted.")),
    },
    driver=_drive_resume,
    check=_check_resume,
)


# -- resume of a thread that ran no turn ---------------------------------------------------


async def _drive_resume_unpersisted(run: Run) -> None:
    first = await run.start_client()
    thread = await _thread(run, first)
    run.notes["thread_id"] = thread.id
    await first.close()
    second = await run.start_client()
    try:
        await Thread.resume(second, thread.id)
    except ThreadNotFound as exc:
        run.notes["error"] = exc


def _check_resume_unpersisted(result: ScenarioResult) -> None:
    error = result.notes["error"]
    assert isinstance(error, ThreadNotFound) and error.thread_id == result.notes["thread_id"]
    assert "ran no turn" in str(error) and "first turn runs" in str(error)
    ((_, frame),) = exchanges(result, "thread/resume")
    assert frame["error"]["code"] == -32600
    assert frame["error"]["message"].startswith("no rollout found for thread id ")
    assert result.model_requests == []


RESUME_UNPERSISTED = Scenario(
    name="resume_unpersisted",
    description="Thread.resume in a new process of a thread that ran no turn: codex never wrote it (ThreadNotFound)",
    script={"rules": [], "default": answer(message("msg_1", "unused"))},
    driver=_drive_resume_unpersisted,
    check=_check_resume_unpersisted,
)


# -- fork, then diverge ----------------------------------------------------------------------

ORIGIN_Q, FORK_Q, ORIGINAL_Q = "The first question.", "A question on the fork.", "A question on the original."


async def _drive_fork(run: Run) -> None:
    client = await run.start_client()
    original = await _thread(run, client)
    await _turn(run, original, ORIGIN_Q)
    fork = await Thread.fork(client, original.id)
    run.notes["ids"] = (original.id, fork.id)
    run.notes["fork_info"] = fork.info
    await _turn(run, fork, FORK_Q)
    await _turn(run, original, ORIGINAL_Q)
    run.notes["fork"] = await fork.read()
    run.notes["original"] = await original.read()


def _check_fork(result: ScenarioResult) -> None:
    original, fork = result.notes["ids"]
    assert original != fork
    assert result.notes["fork_info"]["thread"]["forkedFromId"] == original
    assert user_texts(result.notes["fork"]) == [ORIGIN_Q, FORK_Q]
    assert user_texts(result.notes["original"]) == [ORIGIN_Q, ORIGINAL_Q]
    assert statuses(result) == ["completed"] * 3
    if result.mode == "live":
        on_fork, on_original = asked(result, FORK_Q), asked(result, ORIGINAL_Q)
        assert ORIGIN_Q in on_fork and ORIGINAL_Q not in on_fork
        assert ORIGIN_Q in on_original and FORK_Q not in on_original


FORK = Scenario(
    name="fork",
    description="Thread.fork after a turn; the fork and the original then diverge",
    script={
        "rules": [
            {"when": {"user_contains": FORK_Q}, "respond": answer(message("msg_fork", "Forked answer."))},
            {"when": {"user_contains": ORIGINAL_Q}, "respond": answer(message("msg_orig", "Original answer."))},
        ],
        "default": answer(message("msg_first", "First answer.")),
    },
    driver=_drive_fork,
    check=_check_fork,
)


# -- rollback ------------------------------------------------------------------------------

ONE, TWO, THREE = "Question one.", "Question two.", "Question three."


async def _drive_rollback(run: Run) -> None:
    client = await run.start_client()
    thread = await _thread(run, client)
    await _turn(run, thread, ONE)
    await _turn(run, thread, TWO)
    run.notes["history_mode"] = thread.history_mode
    await thread.rollback(1)
    await _turn(run, thread, THREE)
    run.notes["read"] = await thread.read()


def _check_rollback(result: ScenarioResult) -> None:
    methods = sent(result)
    starts = [i for i, m in enumerate(methods) if m == "turn/start"]
    rollback = methods[starts[1] + 1 : starts[2]]
    assert tuple(rollback) == result.at(ROLLBACK_METHODS), methods
    assert result.notes["history_mode"] == ("legacy" if rollback == ["thread/rollback"] else "paginated")
    if rollback == ["thread/rollback"]:
        ((params, _),) = exchanges(result, "thread/rollback")
        assert params["numTurns"] == 1
    else:
        ((listed, page),) = exchanges(result, "thread/turns/list")
        ((reverted, _),) = exchanges(result, "thread/revert")
        assert listed["sortDirection"] == "desc" and listed["limit"] == 1
        assert reverted["beforeTurnId"] == page["result"]["data"][0]["id"]  # the second turn
    # What is left: the first turn and the one after the rollback.
    assert user_texts(result.notes["read"]) == [ONE, THREE]
    if result.mode == "live":
        third = asked(result, THREE)
        assert ONE in third and TWO not in third


ROLLBACK = Scenario(
    name="rollback",
    description="two turns, thread.rollback(1), a third turn: the model no longer sees the second",
    script={"rules": [], "default": answer(message("msg_1", "Answered."))},
    driver=_drive_rollback,
    check=_check_rollback,
)


# -- read ----------------------------------------------------------------------------------


async def _drive_read(run: Run) -> None:
    client = await run.start_client()
    thread = await _thread(run, client)
    await _turn(run, thread, "Say something to read back.")
    run.notes["full"] = await thread.read()
    run.notes["bare"] = await thread.read(include_turns=False)


def _check_read(result: ScenarioResult) -> None:
    full, bare = result.notes["full"], result.notes["bare"]
    assert full["id"] == bare["id"] and bare["turns"] == []
    (turn,) = full["turns"]
    assert turn["status"] == "completed"
    assert [item["type"] for item in turn["items"]] == ["userMessage", "agentMessage"]
    assert turn["items"][1]["text"] == "Read me back."
    assert [p.get("includeTurns") for p, _ in exchanges(result, "thread/read")] == [True, False]


READ = Scenario(
    name="read",
    description="thread.read(): the stored thread with its turns and items, and without them",
    script={"rules": [], "default": answer(message("msg_1", "Read me back."))},
    driver=_drive_read,
    check=_check_read,
)


# -- list with paging, archive, name ---------------------------------------------------------

#: How many threads each thread/list page of two held, listing three threads.
LIST_PAGES = ByVersion(
    {"0.149.1": [2, 1], "0.171.0": [2, 1]},
    why="pages of thread/list with limit 2 over three threads",
)


async def _drive_list_threads(run: Run) -> None:
    client = await run.start_client()
    ids = []
    for n in range(3):
        thread = await _thread(run, client)
        await _turn(run, thread, f"Thread number {n}.")
        ids.append(thread.id)
        if run.mode == "live":
            await asyncio.sleep(1.1)  # thread/list sorts by creation time (seconds): keep the order certain
    run.notes["ids"] = ids
    run.notes["listed"] = [t["id"] async for t in Thread.list(client, limit=2)]


def _check_list_threads(result: ScenarioResult) -> None:
    pages = exchanges(result, "thread/list")
    assert [len(frame["result"]["data"]) for _, frame in pages] == result.at(LIST_PAGES)
    assert "cursor" not in pages[0][0] and pages[0][0]["limit"] == 2
    for (_, before), (params, _) in zip(pages, pages[1:]):
        assert params["cursor"] == before["result"]["nextCursor"]
    assert pages[-1][1]["result"]["nextCursor"] is None
    assert result.notes["listed"] == list(reversed(result.notes["ids"]))  # newest first, each once


LIST_THREADS = Scenario(
    name="list_threads",
    description="Thread.list(limit=2) over three stored threads follows the server's cursor",
    script={"rules": [], "default": answer(message("msg_1", "Listed."))},
    driver=_drive_list_threads,
    check=_check_list_threads,
)


async def _drive_archive(run: Run) -> None:
    client = await run.start_client()
    thread = await _thread(run, client)
    await _turn(run, thread, "A thread to file away.")
    await thread.set_name("filed thread")

    async def listed(**filters: Any) -> List[Tuple[str, Optional[str]]]:
        return [(t["id"], t.get("name")) async for t in Thread.list(client, **filters)]

    await thread.archive()
    run.notes["after_archive"] = (await listed(), await listed(archived=True))
    run.notes["restored"] = await thread.unarchive()
    run.notes["after_unarchive"] = await listed()
    run.notes["id"] = thread.id


def _check_archive(result: ScenarioResult) -> None:
    tid = result.notes["id"]
    active, archived = result.notes["after_archive"]
    assert active == [] and archived == [(tid, "filed thread")]
    assert result.notes["restored"]["id"] == tid and result.notes["restored"]["name"] == "filed thread"
    assert result.notes["after_unarchive"] == [(tid, "filed thread")]
    ((params, frame),) = exchanges(result, "thread/name/set")
    assert params == {"threadId": tid, "name": "filed thread"} and frame["result"] == {}
    notes = [f["method"] for d, f in result.frames if d == "in" and f.get("method", "").startswith("thread/")]
    assert {"thread/name/updated", "thread/archived", "thread/unarchived"} <= set(notes)


ARCHIVE = Scenario(
    name="archive",
    description="thread.set_name, archive (gone from the list, in the archived list), unarchive",
    script={"rules": [], "default": answer(message("msg_1", "Filed."))},
    driver=_drive_archive,
    check=_check_archive,
)


# -- compact, review --------------------------------------------------------------------------


async def _drive_compact(run: Run) -> None:
    client = await run.start_client()
    thread = await _thread(run, client)
    await _turn(run, thread, "Say something worth compacting.")
    run.notes["compacted"] = await thread.compact(idle_timeout=60)


def _check_compact(result: ScenarioResult) -> None:
    done = result.notes["compacted"]
    assert isinstance(done, TurnCompleted) and done.status == "completed"
    assert [item["type"] for item in done.items] == ["contextCompaction"]
    ((params, frame),) = exchanges(result, "thread/compact/start")
    assert frame["result"] == {}
    started = [f["params"]["turn"]["id"] for d, f in result.frames if f.get("method") == "turn/started"]
    assert done.turn_id == started[-1]  # the id came with turn/started


COMPACT = Scenario(
    name="compact",
    description="thread.compact(): the compaction runs as a turn whose id comes with turn/started",
    script={"rules": [], "default": answer(message("msg_1", "Summary of the thread."))},
    driver=_drive_compact,
    check=_check_compact,
)

REVIEW_TEXT = "No issues found in the change."


async def _drive_review(run: Run) -> None:
    client = await run.start_client()
    thread = await _thread(run, client)
    await _turn(run, thread, "Write nothing; just answer.")
    review = thread.review({"type": "custom", "instructions": "Review the workspace."})
    async with review:
        async for event in review:
            run.events.append(event)
    run.notes["review"] = review.completed
    run.notes["same_thread"] = review.thread is thread


def _check_review(result: ScenarioResult) -> None:
    done = result.notes["review"]
    assert done.status == "completed" and result.notes["same_thread"]
    kinds = [item["type"] for item in done.items]
    assert kinds[0] == "enteredReviewMode" and "exitedReviewMode" in kinds, kinds
    exited = [item for item in done.items if item["type"] == "exitedReviewMode"]
    assert exited[0]["review"] == REVIEW_TEXT
    ((params, frame),) = exchanges(result, "review/start")
    assert frame["result"]["reviewThreadId"] == params["threadId"]
    assert done.turn_id == frame["result"]["turn"]["id"]


REVIEW = Scenario(
    name="review",
    description="thread.review(custom target): a Turn like any other, ending with the exitedReviewMode item",
    script={
        "rules": [
            {"when": {"input_contains": "Review the workspace."}, "respond": answer(message("msg_review", REVIEW_TEXT))}
        ],
        "default": answer(message("msg_1", "Fine.")),
    },
    driver=_drive_review,
    check=_check_review,
)


# -- models, config, account, command exec ------------------------------------------------------


async def _drive_models(run: Run) -> None:
    client = await run.start_client()
    run.notes["paged"] = [m["id"] async for m in client.models(limit=2)]
    run.notes["whole"] = [m["id"] async for m in client.models()]


def _check_models(result: ScenarioResult) -> None:
    paged, whole = result.notes["paged"], result.notes["whole"]
    assert paged == whole and len(whole) > 2
    pages = exchanges(result, "model/list")
    limited = [(p, f) for p, f in pages if p.get("limit") == 2]
    assert len(limited) == -(-len(whole) // 2)
    for (_, before), (params, _) in zip(limited, limited[1:]):
        assert params["cursor"] == before["result"]["nextCursor"]


MODELS = Scenario(
    name="models",
    description="client.models(limit=2) follows model/list's cursor to the same list as one call",
    script={"rules": [], "default": answer(message("msg_1", "unused"))},
    driver=_drive_models,
    check=_check_models,
)


async def _drive_config_write(run: Run) -> None:
    client = await run.start_client()
    run.notes["before"] = await client.read_config()
    run.notes["written"] = await client.write_config("model", "gpt-written")
    run.notes["after"] = await client.read_config()


def _check_config_write(result: ScenarioResult) -> None:
    before, written, after = result.notes["before"], result.notes["written"], result.notes["after"]
    assert before["config"]["model"] is None and after["config"]["model"] == "gpt-written"
    assert written["status"] == "ok" and written["filePath"].endswith("/config.toml")
    assert written["filePath"].startswith(result.paths.home)
    assert after["origins"]["model"]["name"]["type"] == "user"


CONFIG_WRITE = Scenario(
    name="config_write",
    description="client.write_config('model', …) writes config.toml; read_config shows it at once",
    script={"rules": [], "default": answer(message("msg_1", "unused"))},
    driver=_drive_config_write,
    check=_check_config_write,
)


async def _drive_account(run: Run) -> None:
    client = await run.start_client()
    run.notes["account"] = await client.read_account()
    try:
        await client.read_rate_limits()
    except RpcError as exc:
        run.notes["limits_error"] = exc


def _check_account(result: ScenarioResult) -> None:
    account = result.notes["account"]
    assert account["account"] is None and account["requiresOpenaiAuth"] is False
    error = result.notes["limits_error"]
    assert type(error) is RpcError and "authentication required to read rate limits" in error.message


ACCOUNT = Scenario(
    name="account",
    description="client.read_account() with an API-key provider; read_rate_limits() needs a ChatGPT login",
    script={"rules": [], "default": answer(message("msg_1", "unused"))},
    driver=_drive_account,
    check=_check_account,
)

#: Rate-limit headers as the OpenAI backend sends them (codex reads them into a snapshot).
RESET_AT = 1796130000
LIMIT_HEADERS = {
    "x-codex-primary-used-percent": "25",
    "x-codex-primary-window-minutes": "300",
    "x-codex-primary-reset-at": str(RESET_AT),
    "x-codex-secondary-used-percent": "40",
    "x-codex-secondary-window-minutes": "10080",
    "x-codex-secondary-reset-at": str(RESET_AT + 86400),
}


async def _drive_rate_limits(run: Run) -> None:
    client = await run.start_client()
    updates = client.subscribe(client.GLOBAL)
    thread = await _thread(run, client)
    await _turn(run, thread, "Spend a little of the quota.")

    async def first_update() -> RateLimitsUpdated:
        async for event in updates.events():
            if isinstance(event, RateLimitsUpdated):
                return event
        raise AssertionError("the client ended before account/rateLimits/updated")  # pragma: no cover

    run.notes["event"] = await asyncio.wait_for(first_update(), 30)
    run.notes["snapshot"] = client.rate_limits


def _check_rate_limits(result: ScenarioResult) -> None:
    event = result.notes["event"]
    assert isinstance(event, RateLimitsUpdated)
    assert (event.primary.used_percent, event.primary.window_minutes, event.primary.resets_at) == (25, 300, RESET_AT)
    assert (event.secondary.used_percent, event.secondary.window_minutes) == (40, 10080)
    assert event.resets_at is None  # no window is used up
    assert result.notes["snapshot"] == event.snapshot


RATE_LIMITS = Scenario(
    name="rate_limits",
    description="account/rateLimits/updated from the model response's rate-limit headers, as a RateLimitsUpdated event",
    script={"rules": [], "default": answer(message("msg_1", "Done."), headers=LIMIT_HEADERS)},
    driver=_drive_rate_limits,
    check=_check_rate_limits,
)

USAGE_LIMIT_HEADERS = dict(LIMIT_HEADERS, **{"x-codex-primary-used-percent": "100"})


async def _drive_usage_limit(run: Run) -> None:
    client = await run.start_client()
    thread = await _thread(run, client)
    run.notes["completed"] = await _turn(run, thread, "Use more than the plan allows.")


def _check_usage_limit(result: ScenarioResult) -> None:
    done = result.notes["completed"]
    assert done.status == "failed" and done.error["codexErrorInfo"] == "usageLimitExceeded"
    failure = done.failure
    assert isinstance(failure, UsageLimitExceeded) and failure.resets_at == RESET_AT
    assert "usage limit" in failure.message
    try:
        done.raise_for_status()
    except UsageLimitExceeded as exc:
        assert exc.resets_at == RESET_AT and str(RESET_AT) in str(exc)
    else:  # pragma: no cover
        raise AssertionError("raise_for_status() did not raise")


USAGE_LIMIT = Scenario(
    name="usage_limit",
    description="HTTP 429 usage_limit_reached: the turn fails with UsageLimitExceeded carrying the reset time",
    script={
        "rules": [],
        "default": {
            "http_status": 429,
            "body": {
                "error": {
                    "type": "usage_limit_reached",
                    "message": "The usage limit has been reached",
                    "plan_type": "plus",
                    "resets_at": RESET_AT,
                }
            },
            "headers": USAGE_LIMIT_HEADERS,
        },
    },
    driver=_drive_usage_limit,
    check=_check_usage_limit,
)


async def _drive_command_exec(run: Run) -> None:
    client = await run.start_client()
    run.notes["result"] = await client.exec(["sh", "-c", "echo out; echo err >&2; exit 3"], cwd=run.paths.ws)


def _check_command_exec(result: ScenarioResult) -> None:
    assert result.notes["result"] == {"exitCode": 3, "stdout": "out\n", "stderr": "err\n"}
    ((params, _),) = exchanges(result, "command/exec")
    assert params["command"] == ["sh", "-c", "echo out; echo err >&2; exit 3"]


COMMAND_EXEC = Scenario(
    name="command_exec",
    description="client.exec(argv): command/exec's exit code, stdout and stderr, without a thread",
    script={"rules": [], "default": answer(message("msg_1", "unused"))},
    driver=_drive_command_exec,
    check=_check_command_exec,
)


# -- overload ----------------------------------------------------------------------------------

#: account/read: small answers, and slow enough to process that a flood of
#: them overloads both versions (thread/loaded/list does not overload 0.171.0).
FLOOD = 400
FLOOD_RETRY = RetryPolicy(retries=10, base_delay=0.02, max_delay=0.2)
#: Seconds a flooded request may go unanswered before it counts as lost.
FLOOD_TIMEOUT = (
    20.0  # wide: on a loaded machine 0.171.0 answers the last of 400 late (once past 10 s), never not at all
)
#: The same wait when the recording plays codex's part: every answer it holds
#: comes at once (the replay waits on no codex), so only a request the
#: recording never answered waits -- and 0.149.1's do, each the whole wait.
REPLAY_FLOOD_TIMEOUT = 5.0
#: Whether a flood makes codex leave requests unanswered.
LOSES_REQUESTS = ByVersion(
    {"0.149.1": True, "0.171.0": False},
    why="flooded, 0.149.1 answers some requests neither with a result nor with -32001 (they time out); "
    "0.171.0 answers every one",
)


async def _drive_overload(run: Run) -> None:
    client = await run.start_client(retry=FLOOD_RETRY)
    wait = FLOOD_TIMEOUT if run.mode == "live" else REPLAY_FLOOD_TIMEOUT

    async def one() -> str:
        try:
            result = await client.read_account(timeout=wait)
        except RequestTimeout:
            return "lost"
        return "ok" if result["account"] is None else "wrong"

    run.notes["outcomes"] = await asyncio.gather(*(one() for _ in range(FLOOD)))
    run.notes["stats"] = dict(client.stats)


def _check_overload(result: ScenarioResult) -> None:
    outcomes = result.notes["outcomes"]
    allowed = {"ok", "lost"} if result.at(LOSES_REQUESTS) else {"ok"}
    assert len(outcomes) == FLOOD and set(outcomes) <= allowed, sorted(set(outcomes))
    answers = [frame for _, frame in exchanges(result, "account/read")]
    rejected = [a for a in answers if "error" in a]
    assert all(a["error"] == {"code": -32001, "message": "Server overloaded; retry later."} for a in rejected)
    requests = [f for d, f in result.frames if d == "out" and f.get("method") == "account/read"]
    assert len(requests) == FLOOD + len(rejected)  # every rejected request was sent again
    stats = result.notes["stats"]
    assert stats["overloaded"] == stats["retries"] == len(rejected)
    if result.mode == "replay":
        # Live, whether a flood overloads codex depends on the machine; the
        # recording shows that it did, and what this version then does.
        assert rejected, "the recording shows no overload: re-record (the flood was too slow)"
        assert ("lost" in outcomes) == result.at(LOSES_REQUESTS)


OVERLOAD = Scenario(
    name="overload",
    description=f"{FLOOD} requests at once: codex rejects some with -32001; the client retries them with backoff",
    script={"rules": [], "default": answer(message("msg_1", "unused"))},
    driver=_drive_overload,
    check=_check_overload,
)

THREAD_SCENARIOS = [
    RESUME,
    RESUME_UNPERSISTED,
    FORK,
    ROLLBACK,
    READ,
    LIST_THREADS,
    ARCHIVE,
    COMPACT,
    REVIEW,
    MODELS,
    CONFIG_WRITE,
    ACCOUNT,
    RATE_LIMITS,
    USAGE_LIMIT,
    COMMAND_EXEC,
    OVERLOAD,
]

__all__ = ["LIST_PAGES", "LOSES_REQUESTS", "ROLLBACK_METHODS", "THREAD_SCENARIOS", "exchanges"]
