"""``python -m codexmini run --output-schema FILE`` and the agent's ``output_schema``.

The agent sends the schema with every codex turn (``turn/start.outputSchema``,
checked against the schema and the in-memory fake); the CLI checks the final
assistant message and prints the parsed JSON, alone, on stdout -- or, with
``--json``, keeps stdout for the session-log events and lets the check decide
the exit status.  The CLI paths run in process against the pinned codex and
the scripted model (live); the usage errors need no codex.
"""

from __future__ import annotations

import io
import json
import os
from typing import Any, Dict, List

import pytest
from support.run_support import HAVE_CODEX, SCHEMA, Echo, Live, message

from codexmini import Agent, AgentConfig, Launch, SchemaError, SessionLog
from codexmini import _cli as cli
from codexmini.testing import FakeAppServer

live = pytest.mark.skipif(not HAVE_CODEX, reason="the pinned codex is not installed (make setup)")


@pytest.fixture
def scratch(tmp_path):
    path = tmp_path / "schema.json"
    path.write_text(json.dumps(SCHEMA), encoding="utf-8")
    return tmp_path


def call(argv: List[str], env: Any = None) -> Any:
    out, err = io.StringIO(), io.StringIO()
    code = cli.main(
        argv, stdin=io.StringIO(""), stdout=out, stderr=err, env=env if env is not None else dict(os.environ)
    )
    return code, out.getvalue(), err.getvalue()


# -- the agent ----------------------------------------------------------------------------


async def test_agent_output_schema_goes_with_every_codex_turn(tmp_path):
    fake = FakeAppServer(Echo)
    log = SessionLog.open(str(tmp_path / "s.jsonl"))
    config = AgentConfig(launch=Launch(launcher=fake.launch), cwd=str(tmp_path), output_schema=SCHEMA, skills=False)

    async with Agent(log, config) as agent:
        await agent.run("one")
        await agent.run("two")
    log.close()
    starts = [f["params"] for f in fake.server.received if f.get("method") == "turn/start"]
    assert [s["outputSchema"] for s in starts] == [SCHEMA, SCHEMA]


def test_agent_config_refuses_an_unusable_output_schema():
    with pytest.raises(SchemaError, match="unsupported JSON Schema keyword"):
        AgentConfig(cwd="/var/tmp", output_schema={"type": "object", "if": {}})
    assert AgentConfig(cwd="/var/tmp").output_schema is None


# -- the CLI, offline ---------------------------------------------------------------------


@pytest.mark.parametrize(
    "content, fragment",
    [
        (None, "No such file"),
        ("{not json", "Expecting property name"),
        ('{"type": "object", "if": {}}', "unsupported JSON Schema keyword(s) ['if']"),
        ("[1, 2]", "must be a JSON object"),
    ],
    ids=["missing", "not-json", "unsupported", "not-an-object"],
)
def test_cli_output_schema_unusable_is_a_usage_error(tmp_path, content, fragment):
    path = tmp_path / "schema.json"
    if content is not None:
        path.write_text(content, encoding="utf-8")
    code, out, err = call(["run", "hi", "--cwd", str(tmp_path), "--output-schema", str(path)])
    assert (code, out) == (cli.EXIT_USAGE, "")
    assert err.startswith(f"codexmini: --output-schema {path}: ") and fragment in err


def test_cli_final_answer_is_the_last_text_of_the_last_assistant_message():
    def said(*blocks: Dict[str, Any]) -> Dict[str, Any]:
        return {"type": "assistant/message", "data": {"content": list(blocks)}}

    text = {"type": "text", "text": "early"}
    final = {"type": "text", "text": "{}"}
    tool = {"type": "tool-call", "id": "c", "name": "bash", "arguments": "{}"}
    events = [said(text), {"type": "tool/result", "data": {}}, said({"type": "reasoning", "text": "r"}, text, final)]
    assert cli.final_answer(events) == "{}"
    assert cli.final_answer([said(text), said(tool)]) == "early"  # a message with no text is skipped
    assert cli.final_answer([{"type": "turn/start", "data": {}}]) is None


# -- the CLI, live ------------------------------------------------------------------------


@pytest.fixture
def live_model():
    made: List[Live] = []

    def make(script: Dict[str, Any]) -> Live:
        made.append(Live(script))
        return made[-1]

    yield make
    for setup in made:
        setup.close()


def run_argv(s: Live, scratch: Any, *more: str) -> List[str]:
    return [
        "run", "six times seven?", *more,
        "--cwd", s.ws,
        "--session", str(scratch / "s.jsonl"),
        "--model", "gpt-fake",
        "--provider-url", s.model.url,
        "--output-schema", str(scratch / "schema.json"),
    ]  # fmt: skip


@pytest.fixture
def hermetic(monkeypatch):
    """codex's own home and HOME in the scratch root (the child inherits them)."""

    def point_at(s: Live) -> None:
        monkeypatch.setenv("CODEX_HOME", s.home)
        monkeypatch.setenv("HOME", s.root)

    return point_at


@pytest.mark.live
@live
def test_cli_output_schema_prints_only_the_parsed_json(live_model, scratch, hermetic):
    s = live_model({"rules": [], "default": message('{"why": "six times seven", ', '"answer": 42}')})
    hermetic(s)
    code, out, err = call(run_argv(s, scratch))
    assert code == cli.EXIT_OK, err
    assert json.loads(out) == {"why": "six times seven", "answer": 42} and out.count("\n") == 1
    assert "turn completed" in err  # the transcript went to stderr
    assert s.bodies()[0]["text"]["format"]["schema"] == SCHEMA


@pytest.mark.live
@live
def test_cli_output_schema_mismatch_exits_1_and_prints_nothing(live_model, scratch, hermetic):
    s = live_model({"rules": [], "default": message("About forty-two.")})
    hermetic(s)
    code, out, err = call(run_argv(s, scratch))
    assert (code, out) == (cli.EXIT_ERROR, "")
    assert "codexmini: the final answer does not match the output schema: $: not JSON" in err


@pytest.mark.live
@live
@pytest.mark.parametrize(
    "answer, code",
    [('{"answer": 42, "why": "x"}', cli.EXIT_OK), ('{"answer": "x"}', cli.EXIT_ERROR)],
    ids=["valid", "invalid"],
)
def test_cli_output_schema_with_json_keeps_stdout_for_the_log(live_model, scratch, hermetic, answer, code):
    s = live_model({"rules": [], "default": message(answer)})
    hermetic(s)
    got, out, err = call(run_argv(s, scratch, "--json"))
    assert got == code, err
    events = [json.loads(line) for line in out.splitlines()]
    assert all(set(e) == {"v", "seq", "ts", "type", "turn", "step", "data"} for e in events)
    assert cli.final_answer(events) == answer
    assert ("does not match the output schema" in err) == (code == cli.EXIT_ERROR)
