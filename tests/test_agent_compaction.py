"""Bounded prompts (issue 30): long tool outputs cut in the prompt, and the
session compacted when its prompt would pass its budget.

The pure part (``_prompt``: the cut, the summary section, the reset of the
text at a compaction) is ``tests/test_prompt_compaction.py``; the log's
fold of the last compaction and an older log read and resumed are in
``tests/test_session.py``.  Here: the CLI's line, the budgets' checks, and
the agent with
the in-memory fake app-server playing :class:`support.thread_behaviours.Compacting`
(its frames validated by the conformance plugin like every other client's),
and in a child process killed with SIGKILL between the summary call and the
append.  Live, the real codex (both ends of the supported range:
``make test-live CODEX=…``) runs a session through a compaction against the
scripted model.
"""

from __future__ import annotations

import asyncio
import json
import os
import re
import shutil
import signal
import subprocess
import sys
from typing import Any, Dict, List

import pytest
from support import thread_behaviours as tb
from support.fake_client import TESTS, agent_config, until
from support.run_support import HAVE_CODEX

from codexmini import Agent, AgentConfig
from codexmini._errors import ConfigError, StartFailed
from codexmini._prompt import (
    COMPACTION,
    COMPACTION_INSTRUCTION,
    TOOL_OUTPUT_BUDGET,
    compaction_note,
    compaction_request,
    derive_messages,
    serialize,
)
from codexmini._render import compaction_line
from codexmini._session import SessionLog, read_log
from codexmini.testing import FakeAppServer
from codexmini.testing.live import LiveCodex

REPO = os.path.dirname(TESTS)


def read_bytes(path: str) -> bytes:
    with open(path, "rb") as fh:
        return fh.read()


def test_the_cli_line_of_a_compaction():
    data = {"summary": "abc", "fromSeq": 0, "throughSeq": 41, "replacedChars": 90_000}
    assert compaction_line(data) == (
        "[compacted the session: events 0 to 41 (90000 characters of prompt) are now a summary of 3 characters]"
    )
    assert compaction_line({}).endswith("a summary of 0 characters]")


# -- the knobs -----------------------------------------------------------------------------


@pytest.mark.parametrize("name", ["prompt_budget", "tool_output_budget"])
@pytest.mark.parametrize("value", [0, -5, True, 2.5, "100"])
def test_a_budget_that_is_not_a_whole_number_above_0_is_a_config_error(tmp_path, name, value):
    with pytest.raises(ConfigError, match=f"AgentConfig.{name} must be a whole number >= 1"):
        AgentConfig(cwd=str(tmp_path), **{name: value})


def test_the_budgets_default_and_may_be_unbounded(tmp_path):
    config = AgentConfig(cwd=str(tmp_path))
    assert (config.prompt_budget, config.tool_output_budget) == (400_000, TOOL_OUTPUT_BUDGET) == (400_000, 16_000)
    AgentConfig(cwd=str(tmp_path), prompt_budget=None, tool_output_budget=None)


# -- the agent, offline ----------------------------------------------------------------------


class Session:
    """An agent on the in-memory fake playing ``behaviour``, over a log in ``root``."""

    def __init__(self, root: str, behaviour: tb.Compacting, **budgets: Any) -> None:
        self.root = root
        self.path = os.path.join(root, "session.jsonl")
        self.behaviour = behaviour
        self.fake = FakeAppServer(behaviour)
        self.ids = iter(range(1, 10**9))
        ws = os.path.join(root, "ws")
        os.makedirs(ws, exist_ok=True)
        self.config = agent_config(
            cwd=ws, model="gpt-fake", codex_home=os.path.join(root, "home"), launcher=self.fake.launch, **budgets
        )

    def agent(self, log: SessionLog) -> Agent:
        return Agent(log, self.config, new_id=lambda: f"id-{next(self.ids)}")

    def events(self) -> List[Dict[str, Any]]:
        return list(read_log(self.path).events)

    def of_type(self, type_: str) -> List[Dict[str, Any]]:
        return [e for e in read_log(self.path).events if e["type"] == type_]


def last_prompt(events: List[Dict[str, Any]], output_budget: int) -> str:
    """What the format says the last step's prompt was, from the log alone
    (docs/session-log.md, the prompt): the last compaction before that
    step's user message as its summary section, then every message after
    the compaction up to that user message, tool outputs cut to the budget."""
    upto = [e for e in events if e["type"] == "user/message"][-1]["seq"] + 1
    (last,) = [i for i, e in enumerate(events[:upto]) if e["type"] == COMPACTION][-1:]
    summary = events[last]["data"]
    sections = [f"<summary>\n{compaction_note(summary)}\n{summary['summary']}\n</summary>"]
    after = derive_messages(events[last + 1 : upto], output_budget)
    return "\n\n".join(sections + [serialize([m]) for m in after])


@pytest.mark.timeout_s(120)
async def test_a_200_step_session_of_50_mb_of_outputs_keeps_every_prompt_under_its_budget(tmp_path):
    # 100 turns, each a command printing 500,000 characters then an answer:
    # 200 steps, 50 MB of tool output, every byte of it in the log.
    behaviour = tb.Compacting(size=500_000)
    s = Session(str(tmp_path), behaviour, tool_output_budget=2_000, prompt_budget=60_000)
    with SessionLog.open(s.path) as log:
        async with s.agent(log) as agent:
            for n in range(100):
                end = await agent.run(f"big {n}")
                assert end["reason"] == "completed", end
    events = s.events()
    assert sum(e["type"] == "step/start" for e in events) == 200
    outputs = [e for e in events if e["type"] == "tool/result"]
    assert len(outputs) == 100 and sum(len(e["data"]["content"][0]["text"]) for e in outputs) == 50_000_000
    # every step's prompt is under its budget; the summary calls were what compacted it
    assert len(behaviour.prompts) == 100 and max(map(len, behaviour.prompts)) <= 60_000
    compactions = [e for e in events if e["type"] == COMPACTION]
    assert len(compactions) >= 2 and behaviour.summaries == len(compactions)
    for c in compactions:  # one append, between steps, once the summary was in hand
        assert events[c["seq"] - 1]["type"] == "turn/start" and c["step"] is None
        assert c["data"]["throughSeq"] == c["seq"] - 1 and c["data"]["replacedChars"] > 50_000
        assert c["data"]["summary"].startswith("summary ") and c["data"]["usage"]["totalTokens"] > 0
    assert [c["data"]["fromSeq"] for c in compactions] == [0] + [c["seq"] for c in compactions[:-1]]
    # what each summary call was asked: the instruction and the prompt it replaced, cut to the budget
    for request, c in zip(behaviour.requests, compactions):
        replaced = serialize(derive_messages(events[: c["data"]["throughSeq"] + 1], 2_000))
        assert len(replaced) == c["data"]["replacedChars"] and request == compaction_request(replaced, 60_000)
        assert len(request) < len(COMPACTION_INSTRUCTION) + 60_000 + 200  # within the budget too
    # the last prompt is what the format says: the last summary, then what came after it
    assert behaviour.prompts[-1] == last_prompt(events, 2_000)
    assert behaviour.prompts[-1].startswith(
        f"<summary>\n[a summary of the session up to event seq {compactions[-1]['seq'] - 1};"
    )
    # a cut output names the event that holds it whole
    shown = [e for e in events if e["type"] == "tool/result" and e["turn"] == 99][0]
    assert (
        f"left out here; the whole output is in the session log, event seq {shown['seq']} ...]" in behaviour.prompts[-1]
    )
    assert shown["data"]["content"][0]["text"] == tb.big_output(98, 500_000)
    # docs/session-log.md shows the prompt after the first compaction's (its runs of dots shortened)
    after_first = behaviour.prompts[[p.startswith("<summary>") for p in behaviour.prompts].index(True) + 1]
    with open(os.path.join(REPO, "docs", "session-log.md"), encoding="utf-8") as fh:
        assert "```\n" + re.sub(r"\.{20,}", ".........", after_first) + "\n```" in fh.read()


@pytest.mark.parametrize(
    "variant, code, message",
    [
        ("fail-summary", "COMPACTION_FAILED", "the summary call of a compaction ended failed"),
        ("empty-summary", "COMPACTION_FAILED", "the summary call of a compaction gave no summary"),
        ("die-summary", "CODEX_NO_RESULT", ""),
    ],
)
async def test_a_compaction_that_failed_writes_nothing_of_itself_and_ends_its_step_in_error(
    tmp_path, variant, code, message
):
    behaviour = tb.Compacting(variant, size=5_000)
    s = Session(str(tmp_path), behaviour, tool_output_budget=1_000, prompt_budget=2_000)
    with SessionLog.open(s.path) as log:
        async with s.agent(log) as agent:
            assert (await agent.run("big 0"))["reason"] == "completed"
            assert (await agent.run("big 1"))["reason"] == "completed"
            before = read_bytes(s.path)
            end = await agent.run("big 2")
    assert end["reason"] == "error" and end["error"]["code"] == code and message in end["error"]["message"]
    after = read_bytes(s.path)
    assert after.startswith(before)
    added = [json.loads(line)["type"] for line in after[len(before) :].splitlines()]
    # the turn, its step with the user's message (nothing lost), the error: no compaction
    assert added == ["turn/start", "step/start", "user/message", "step/end", "agent/error", "turn/end"]
    assert not s.of_type(COMPACTION) and behaviour.summaries == 1


async def test_a_summary_call_codex_counted_no_tokens_for_logs_no_usage(tmp_path):
    s = Session(
        str(tmp_path), tb.Compacting("quiet-summary", size=5_000), tool_output_budget=1_000, prompt_budget=2_000
    )
    with SessionLog.open(s.path) as log:
        async with s.agent(log) as agent:
            for n in range(3):
                assert (await agent.run(f"big {n}"))["reason"] == "completed"
    (compacted,) = s.of_type(COMPACTION)
    assert sorted(compacted["data"]) == ["fromSeq", "replacedChars", "summary", "throughSeq"]
    assert compacted["data"]["summary"] == "summary without usage"


async def test_a_compaction_that_raised_leaves_the_log_byte_identical(tmp_path):
    behaviour = tb.Compacting("fail-summary", size=5_000)
    s = Session(str(tmp_path), behaviour, tool_output_budget=1_000, prompt_budget=2_000)
    with SessionLog.open(s.path) as log:
        async with s.agent(log) as agent:
            await agent.run("big 0")
            before = read_bytes(s.path)
            client = await agent._ensure_client()
            with pytest.raises(Exception) as raised:
                await agent._compact(client, agent._catch_up().text())
            assert type(raised.value).__name__ == "CompactionFailed" and raised.value.status == "failed"
            assert read_bytes(s.path) == before


async def test_a_child_that_cannot_start_for_a_compaction_ends_the_step_unavailable(tmp_path, monkeypatch):
    s = Session(str(tmp_path), tb.Compacting(size=5_000), tool_output_budget=1_000, prompt_budget=2_000)
    with SessionLog.open(s.path) as log:
        async with s.agent(log) as agent:
            await agent.run("big 0")
            await agent.run("big 1")
            real, calls = agent._ensure_client, []

            async def second_fails() -> Any:
                calls.append(1)
                if len(calls) == 2:  # the turn's start went well; the compaction's does not
                    raise StartFailed("no codex for the compaction")
                return await real()

            monkeypatch.setattr(agent, "_ensure_client", second_fails)
            end = await agent.run("big 2")
    assert end["error"] == {"message": "StartFailed: no codex for the compaction", "code": "CODEX_UNAVAILABLE"}
    assert not s.of_type(COMPACTION)


async def test_a_cancel_during_the_summary_call_logs_no_step_and_keeps_the_message(tmp_path):
    behaviour = tb.Compacting("hold-summary", size=5_000)
    s = Session(str(tmp_path), behaviour, tool_output_budget=1_000, prompt_budget=2_000)
    with SessionLog.open(s.path) as log:
        async with s.agent(log) as agent:
            await agent.run("big 0")
            await agent.run("big 1")
            running = asyncio.get_running_loop().create_task(agent.run("big 2"))
            assert await until(lambda: behaviour.summaries == 1)
            agent.cancel(keep_inbox=True)  # the held summary call is interrupted ...
            await running
            await agent.wait_idle()  # ... and the kept message is the next turn
    ends = [(e["turn"], e["data"]["reason"]) for e in s.of_type("turn/end")]
    assert ends == [(1, "completed"), (2, "completed"), (3, "aborted"), (4, "completed")]
    turn3 = [e["type"] for e in s.events() if e["turn"] == 3]
    assert turn3 == ["turn/start", "turn/end"]  # nothing of the step, nor of the compaction
    assert [e["turn"] for e in s.of_type(COMPACTION)] == [4] and behaviour.prompts[-1].startswith("<summary>")
    assert [u["turn"] for u in s.of_type("user/message")] == [1, 2, 4]


async def test_a_resumed_session_starts_its_prompt_at_its_last_compaction(tmp_path, monkeypatch):
    behaviour = tb.Compacting(size=5_000)
    s = Session(str(tmp_path), behaviour, tool_output_budget=1_000, prompt_budget=2_000)
    with SessionLog.open(s.path) as log:
        async with s.agent(log) as agent:
            for n in range(3):
                await agent.run(f"big {n}")
    assert s.of_type(COMPACTION)
    with SessionLog.open(s.path) as log:
        last = log.compaction
        read: List[int] = []
        events = type(log.events)
        real = events.__getitem__

        def counted(self: Any, key: Any) -> Any:
            if isinstance(key, slice):
                read.append(key.start or 0)
            return real(self, key)

        monkeypatch.setattr(events, "__getitem__", counted)
        async with s.agent(log) as agent:
            await agent.run("small")
    assert last is not None and read[0] == last["seq"] + 1  # the events before it were never read again
    assert behaviour.prompts[-1] == last_prompt(s.events(), 1_000)


# -- killed between the summary and the append -----------------------------------------------


CHILD = os.path.join(TESTS, "support", "compaction_child.py")


@pytest.mark.timeout_s(120)
async def test_a_process_killed_between_the_summary_and_its_append_leaves_the_log_intact_and_resumes(tmp_path):
    root = str(tmp_path)
    marker = os.path.join(root, "summarised")
    env = dict(os.environ, PYTHONPATH=os.pathsep.join([REPO, TESTS]))
    child = subprocess.Popen([sys.executable, CHILD, root], env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    try:
        assert await until(lambda: os.path.exists(marker) or child.poll() is not None, 60)
        assert child.poll() is None, child.communicate()
        with open(marker, encoding="utf-8") as fh:
            said = json.load(fh)  # what the child had: its summary, the log's size then
        path = os.path.join(root, "session.jsonl")
        before = read_bytes(path)
        assert len(before) == said["size"]
    finally:
        child.send_signal(signal.SIGKILL)
        child.communicate()
    assert child.returncode == -signal.SIGKILL
    assert read_bytes(path) == before  # the log as it was: no compaction, no partial line
    killed = read_log(path)
    assert not [e for e in killed.events if e["type"] == COMPACTION] and not killed.warnings
    # it was killed in a turn that had just started (the compaction goes before the step) ...
    assert killed.events[-1]["type"] == "turn/start" and killed.events[-1]["turn"] >= 3
    # Resumed (the kernel dropped the dead writer's lock): the next step compacts again and goes on.
    behaviour = tb.Compacting(size=50_000)
    s = Session(root, behaviour, tool_output_budget=2_000, prompt_budget=10_000)
    with SessionLog.open(path) as log:
        async with s.agent(log) as agent:
            end = await agent.run("big again")
    assert end["reason"] == "completed"
    events = s.events()
    assert read_bytes(path).startswith(before)
    (compacted,) = [e for e in events if e["type"] == COMPACTION]
    assert compacted["seq"] > len(before.splitlines()) and compacted["data"]["summary"].startswith("summary 1: ")
    assert said["summary"].startswith("summary ")  # the one the killed process had in hand, never logged
    assert behaviour.prompts[-1] == last_prompt(events, 2_000)


# -- live ---------------------------------------------------------------------------------------


BIG = "head -c 30000 /dev/zero | tr '\\0' x; echo; echo the-end"


def summary_rule() -> Dict[str, Any]:
    said = {"type": "message", "deltas": ["SUMMARY: the user ran a big command; ", "it printed x and the-end."]}
    return {"name": "summary", "when": {"user_contains": COMPACTION_INSTRUCTION[:60]}, "respond": {"output": [said]}}


@pytest.mark.live
@pytest.mark.skipif(not HAVE_CODEX, reason="the pinned codex is not installed (make setup)")
@pytest.mark.timeout_s(240)
async def test_live_codex_runs_an_agent_session_through_a_compaction():
    call = {"type": "function_call", "call_id": "call_big", "name": "exec_command"}
    script = {
        "rules": [
            summary_rule(),
            {
                "name": "command",
                "when": {"user_contains": "run the big command", "last_item": "message"},
                "respond": {"output": [dict(call, arguments={"cmd": BIG, "yield_time_ms": 30000})]},
            },
            {
                "name": "after-command",
                "when": {"last_item": "function_call_output"},
                "respond": {"output": [{"type": "message", "deltas": ["It printed a lot."]}]},
            },
        ],
        "default": {"output": [{"type": "message", "deltas": ["Go on."]}]},
    }
    with LiveCodex(script, prefix="codexmini-compaction-") as live:
        path = os.path.join(live.root, "session.jsonl")
        config = agent_config(
            cwd=live.ws, model="gpt-fake", launch=live.launch, tool_output_budget=4_000, prompt_budget=4_000
        )
        try:
            with SessionLog.open(path) as log:
                async with Agent(log, config) as agent:
                    first = await agent.run("run the big command")
                    second = await agent.run("what did it print?")
                    third = await agent.run("and then?")
        finally:
            requests = list(live.model.requests)
        assert [first["reason"], second["reason"], third["reason"]] == ["completed"] * 3, (first, second, third)
        events = list(read_log(path).events)
        (result_,) = [e for e in events if e["type"] == "tool/result"]
        assert len(result_["data"]["content"][0]["text"]) > 30_000  # the log keeps the output whole
        compactions = [e for e in events if e["type"] == COMPACTION]
        assert len(compactions) >= 1
        assert compactions[0]["data"]["summary"] == "SUMMARY: the user ran a big command; it printed x and the-end."
        assert compactions[0]["turn"] == 2 and compactions[0]["data"]["throughSeq"] == compactions[0]["seq"] - 1
        summarised = [r for r in requests if r["rule"] == "summary"]
        assert len(summarised) == len(compactions)
        # the step after the compaction saw the summary and its own message, nothing before
        prompts = [r for r in requests if r["rule"] != "summary"]
        last_user = [m for m in prompts[-1]["body"]["input"] if m.get("role") == "user"][-1]
        text = "".join(part.get("text", "") for part in last_user["content"])
        assert text.startswith("<summary>\n[a summary of the session up to event seq ")
        assert "SUMMARY: the user ran a big command" in text and "<user>\nand then?\n</user>" in text
        assert "xxxxxxxxxx" not in text.split("</summary>")[0]
    shutil.rmtree(live.root, ignore_errors=True)
