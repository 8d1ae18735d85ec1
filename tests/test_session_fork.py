"""Forking a session (issue 30, item 6): ``fork_log`` and ``codexmini fork``.

Real files throughout: logs an agent wrote on the in-memory fake codex, and
hand-made ones for the shapes an agent writes only after a crash.
"""

from __future__ import annotations

import errno
import io
import json
import os
import subprocess
import sys
import tempfile
import tracemalloc
from typing import Any, Dict, List, Optional

import pytest
from hypothesis import assume, given, settings
from hypothesis import strategies as st
from support import thread_behaviours as tb

from codexmini import Agent, AgentConfig, ForkRefused, Launch, SessionLog, SessionLogError, fork_log, read_log
from codexmini import _cli as cli
from codexmini import _session as session_mod
from codexmini._version import __version__
from codexmini.testing import FakeAppServer

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def make_agent(log: SessionLog, ws: str, frames: Optional[List[Any]] = None) -> Agent:
    ids = iter(range(1, 10**6))
    tap = None if frames is None else (lambda d, f: frames.append((d, json.loads(json.dumps(f)))))
    launch = Launch(launcher=FakeAppServer(tb.AgentTurns).launch)
    config = AgentConfig(cwd=ws, skills=False, launch=launch, tap=tap)
    return Agent(log, config, new_id=lambda: f"id-{next(ids)}")


async def three_turns(tmp_path: Any) -> str:
    """A log of three turns (the second with a tool call), a model chosen after the first."""
    path = str(tmp_path / "source.jsonl")
    with SessionLog.open(path) as log:
        async with make_agent(log, str(tmp_path)) as agent:
            await agent.run("one")
            agent.set_model("chosen-after-turn-1")
            await agent.run("tool please")
            await agent.run("three")
    return path


def turn_bounds(path: str) -> Dict[int, List[int]]:
    """turn → [its first seq, its last seq]."""
    bounds: Dict[int, List[int]] = {}
    for event in read_log(path).events:
        if isinstance(event["turn"], int):
            bounds.setdefault(event["turn"], [event["seq"], event["seq"]])[1] = event["seq"]
    return bounds


def write_log(path: Any, events: List[Dict[str, Any]]) -> str:
    """A hand-made log of ``(type, turn, data)`` events, written by SessionLog."""
    with SessionLog.open(str(path)) as log:
        for event in events:
            log.append(event["type"], event.get("data", {}), turn=event.get("turn"), step=event.get("step"))
    return str(path)


def e(type_: str, turn: Optional[int] = None, **data: Any) -> Dict[str, Any]:
    return {"type": type_, "turn": turn, "step": 1 if type_ in ("step/start", "user/message") else None, "data": data}


HEADER = {
    "reason": "initial",
    "provider": "codex",
    "model": "gpt-fake",
    "codexVersion": "0.171.0",
    "codexminiVersion": "x",
}
TEXT = {"content": [{"type": "text", "text": "t"}], "source": {"kind": "user"}}


# -- the fork --------------------------------------------------------------------------


async def test_fork_copies_the_events_to_the_cut_and_an_agent_resumes_from_there(tmp_path):
    source = await three_turns(tmp_path)
    bounds = turn_bounds(source)
    at = bounds[1][1]  # turn 1's turn/end (inclusive)
    new = str(tmp_path / "forks" / "fork.jsonl")  # its directory is made
    assert fork_log(source, at, new) == at + 2
    with open(source, "rb") as fh, open(new, "rb") as forked:
        original, copied = fh.read(), forked.read()
    prefix = b"".join(original.splitlines(keepends=True)[: at + 1])
    assert copied.startswith(prefix)  # byte for byte
    events = read_log(new).events
    assert events[: at + 1] == read_log(source).events[: at + 1]
    (header,) = events[at + 1 :]
    assert header["type"] == "session/header" and header["seq"] == at + 1 and header["turn"] is None
    assert header["data"] == {
        "reason": "fork",
        "provider": "codex",
        "model": "default",  # as the source's header said (the agent had no model)
        "codexVersion": events[0]["data"]["codexVersion"],
        "codexminiVersion": __version__,
        "forkedFrom": {"path": os.path.abspath(source), "seq": at},
    }
    assert not os.path.exists(new + ".pid")
    # The resume fold is the source's at the cut: turn 2 next, no model chosen yet.
    frames: List[Any] = []
    with SessionLog.open(new) as log:
        assert log.next_turn == 2 and log.has_header and log.pending == []
        assert log._knobs.model is None
        async with make_agent(log, str(tmp_path), frames) as agent:
            end = await agent.run("a different second turn")
    assert end["reason"] == "completed"
    after = read_log(new).events[at + 2 :]
    assert after[0]["type"] == "session/header" and after[0]["data"]["reason"] == "resume"
    assert {e["turn"] for e in after if e["turn"] is not None} == {2}
    (start,) = [f for d, f in frames if d == "out" and f.get("method") == "turn/start"]
    prompt = start["params"]["input"][0]["text"]
    assert "<user>\none\n</user>" in prompt and "a different second turn" in prompt
    assert "tool please" not in prompt and "three" not in prompt
    # The source is untouched.
    with open(source, "rb") as fh:
        assert fh.read() == original


async def test_fork_at_the_last_event_and_between_turns(tmp_path):
    source = await three_turns(tmp_path)
    count = len(read_log(source).events)
    assert fork_log(source, count - 1, str(tmp_path / "all.jsonl")) == count + 1
    assert fork_log(source, 0, str(tmp_path / "header.jsonl")) == 2  # the header alone
    with SessionLog.open(str(tmp_path / "header.jsonl")) as log:
        assert log.next_turn == 1 and log.has_header


async def test_fork_inside_a_turn_is_refused_naming_where_to_fork_instead(tmp_path):
    source = await three_turns(tmp_path)
    bounds = turn_bounds(source)
    first, last = bounds[2]
    new = str(tmp_path / "never.jsonl")
    for at in (first, first + 2, last - 1):  # its turn/start, a step's event, the event before its end
        with pytest.raises(ForkRefused) as refused:
            fork_log(source, at, new)
        error = refused.value
        assert (error.reason, error.seq, error.turn, error.before, error.after) == (
            "inside-turn",
            at,
            2,
            first - 1,
            last,
        )
        assert error.path == source
        assert f"inside turn 2, which goes on to seq {last}; fork at {first - 1} (before it) or at {last}" in str(error)
        assert not os.path.exists(new)
    fork_log(source, first - 1, new)  # what it said works (a knob between the turns is kept)
    assert read_log(new).events[-2]["type"] == "model/choice"


def test_fork_inside_a_turn_that_begins_the_log_offers_its_end_only(tmp_path):
    path = write_log(tmp_path / "s.jsonl", [e("turn/start", 1), e("step/start", 1), e("turn/end", 1, reason="x")])
    with pytest.raises(ForkRefused, match=r"fork at 2 \(its end\)") as refused:
        fork_log(path, 0, str(tmp_path / "n.jsonl"))
    assert (refused.value.before, refused.value.after) == (None, 2)


def test_fork_after_a_turn_a_crash_left_open_is_a_boundary(tmp_path):
    # Turn 1 never ended (its writer died); the resumed writer's header and
    # turn 2 follow.  Cutting after turn 1's last event splits nothing.
    path = write_log(
        tmp_path / "s.jsonl",
        [
            e("session/header", **HEADER),
            e("turn/start", 1),
            e("step/start", 1),
            e("user/message", 1, id="u1", **TEXT),
            e("session/header", **{**HEADER, "reason": "resume"}),
            e("turn/start", 2),
            e("turn/end", 2, reason="completed"),
        ],
    )
    assert fork_log(path, 3, str(tmp_path / "a.jsonl")) == 5
    assert fork_log(path, 4, str(tmp_path / "b.jsonl")) == 6
    with pytest.raises(ForkRefused) as refused:
        fork_log(path, 1, str(tmp_path / "c.jsonl"))
    assert (refused.value.turn, refused.value.before, refused.value.after) == (1, 0, 3)
    with SessionLog.open(str(tmp_path / "a.jsonl")) as log:
        assert log.next_turn == 2  # the open turn keeps its number


def test_fork_in_a_turn_the_log_ends_in_before_its_end_is_refused(tmp_path):
    # Its writer may still be in it (or died in it): a fork would copy half a
    # turn.  Before it is a boundary.
    path = write_log(
        tmp_path / "s.jsonl",
        [e("session/header", **HEADER), e("turn/start", 1), e("step/start", 1), e("session/header", **HEADER)],
    )
    for at in (1, 2, 3):  # its events, and one outside any turn after them
        with pytest.raises(ForkRefused) as refused:
            fork_log(path, at, str(tmp_path / "n.jsonl"))
        error = refused.value
        assert (error.reason, error.turn, error.before, error.after) == ("inside-turn", 1, 0, None)
        assert str(error).endswith(
            "inside turn 1, which has not ended (its writer may be in it, or died in it); fork at 0 (before it)"
        )
    assert fork_log(path, 0, str(tmp_path / "n.jsonl")) == 2
    alone = write_log(tmp_path / "alone.jsonl", [e("turn/start", 1), e("step/start", 1)])
    with pytest.raises(ForkRefused) as refused:
        fork_log(alone, 1, str(tmp_path / "m.jsonl"))
    assert (refused.value.before, refused.value.after) == (None, None)
    assert str(refused.value).endswith("which has not ended (its writer may be in it, or died in it)")


def test_fork_drops_the_messages_pending_at_the_cut(tmp_path):
    path = write_log(
        tmp_path / "s.jsonl",
        [
            e("session/header", **HEADER),
            e("inbox/queued", id="q1", kind="followup", **TEXT),
            e("inbox/queued", id="q2", kind="inject", **TEXT),
            e("turn/start", 1),
            e("step/start", 1),
            e("user/message", 1, id="q1", **TEXT),
            e("turn/end", 1, reason="completed"),
        ],
    )
    new = str(tmp_path / "n.jsonl")
    assert fork_log(path, 2, new) == 5
    tail = read_log(new).events[3:]
    assert [(x["type"], x["data"].get("reason")) for x in tail] == [
        ("session/header", "fork"),
        ("inbox/dropped", "fork"),
    ]
    assert tail[1]["data"]["ids"] == ["q1", "q2"]
    with SessionLog.open(new) as log:
        assert log.pending == []
    assert fork_log(path, 6, str(tmp_path / "m.jsonl")) == 9  # q2 still pending at the end
    assert read_log(str(tmp_path / "m.jsonl")).events[-1]["data"] == {"ids": ["q2"], "reason": "fork"}


def test_fork_without_a_header_before_the_cut_says_what_it_knows(tmp_path):
    path = write_log(tmp_path / "s.jsonl", [e("model/choice", model="m")])
    fork_log(path, 0, str(tmp_path / "n.jsonl"))
    data = read_log(str(tmp_path / "n.jsonl")).events[-1]["data"]
    assert (data["provider"], data["model"], data["codexVersion"]) == ("codex", "default", "unknown")


# -- refusals and faults ----------------------------------------------------------------


@pytest.mark.parametrize("at", [-1, 3, 99, "1", True, None, 1.0])
def test_fork_at_no_event_is_refused(tmp_path, at):
    path = write_log(tmp_path / "s.jsonl", [e("session/header", **HEADER)] * 3)
    with pytest.raises(ForkRefused) as refused:
        fork_log(path, at, str(tmp_path / "n.jsonl"))
    assert refused.value.reason == "out-of-range" and refused.value.seq is at
    message = "its 3 events are seq 0 to 2" if type(at) is int else "an event's seq is an int"
    assert message in str(refused.value)
    assert not os.path.exists(tmp_path / "n.jsonl")


def test_fork_of_an_empty_log_is_refused(tmp_path):
    path = tmp_path / "empty.jsonl"
    path.write_bytes(b"")
    with pytest.raises(ForkRefused, match="no such event \\(it holds no event\\)"):
        fork_log(str(path), 0, str(tmp_path / "n.jsonl"))


def test_fork_never_replaces_a_file(tmp_path):
    path = write_log(tmp_path / "s.jsonl", [e("session/header", **HEADER)])
    taken = tmp_path / "taken.jsonl"
    taken.write_text("mine\n")
    for new in (str(taken), path):  # (the log itself too)
        with pytest.raises(ForkRefused, match="it exists") as refused:
            fork_log(path, 0, new)
        assert refused.value.reason == "exists"
    assert taken.read_text() == "mine\n"
    assert len(read_log(path).events) == 1


def test_fork_of_a_log_that_cannot_be_read_is_a_session_log_error(tmp_path):
    with pytest.raises(SessionLogError, match="cannot read the session log") as missing:
        fork_log(str(tmp_path / "missing.jsonl"), 0, str(tmp_path / "n.jsonl"))
    assert not isinstance(missing.value, ForkRefused)
    bad = tmp_path / "bad.jsonl"
    bad.write_text('{"not": "an event"}\n{}\n')
    with pytest.raises(SessionLogError, match="bad.jsonl:1: bad session log event"):
        fork_log(str(bad), 0, str(tmp_path / "n.jsonl"))
    assert not os.path.exists(tmp_path / "n.jsonl")


def test_fork_that_cannot_create_the_new_log_says_so(tmp_path):
    path = write_log(tmp_path / "s.jsonl", [e("session/header", **HEADER)])
    with pytest.raises(SessionLogError, match="cannot create the forked session log") as refused:
        fork_log(path, 0, os.path.join(path, "under-a-file.jsonl"))  # a file where its directory should be
    assert refused.value.path == os.path.join(path, "under-a-file.jsonl")
    assert isinstance(refused.value.__cause__, OSError)


def test_fork_a_write_fault_removes_the_new_log(tmp_path, monkeypatch):
    path = write_log(tmp_path / "s.jsonl", [e("session/header", **HEADER)] * 3)
    new = str(tmp_path / "n.jsonl")

    def full(file: Any, data: bytes) -> None:
        raise OSError(errno.ENOSPC, "No space left on device")

    monkeypatch.setattr(session_mod, "_write_all", full)
    with pytest.raises(SessionLogError, match="cannot write the forked session log: .*No space left") as fault:
        fork_log(path, 1, new)
    assert fault.value.path == new and not isinstance(fault.value, ForkRefused)
    assert not os.path.exists(new) and not os.path.exists(new + ".pid")


@pytest.mark.parametrize("change", ["truncated", "rewritten"])
def test_fork_of_a_log_changed_while_it_is_copied_fails_and_leaves_nothing(tmp_path, monkeypatch, change):
    path = write_log(tmp_path / "s.jsonl", [e("session/header", **HEADER)] * 3)
    new = str(tmp_path / "n.jsonl")
    real = session_mod._create
    size = os.path.getsize(path)

    def meanwhile(*args: Any) -> io.FileIO:
        with open(path, "r+b") as fh:
            if change == "truncated":
                fh.truncate(10)
            else:  # the same length, the last line no longer JSON
                fh.seek(size - 2)
                fh.write(b" ")
        return real(*args)

    monkeypatch.setattr(session_mod, "_create", meanwhile)
    with pytest.raises(SessionLogError, match="changed while it was forked") as fault:
        fork_log(path, 2, new)
    assert fault.value.path == new
    assert not os.path.exists(new)


def test_fork_streams_a_log_in_memory_that_does_not_grow_with_it(tmp_path):
    path = str(tmp_path / "big.jsonl")
    result = {
        "callId": "c",
        "content": [{"type": "text", "text": "r" * 4_000}],
        "isError": False,
        "status": "completed",
    }
    with SessionLog.open(path) as log:
        log.append("session/header", dict(HEADER))
        for turn in range(1, 301):
            log.append_many(
                [("turn/start", {}, turn, None)]
                + [("tool/result", result, turn, 1)] * 10
                + [("turn/end", {"reason": "completed"}, turn, None)]
            )
    size = os.path.getsize(path)
    assert size > 12_000_000
    at = len(read_log(path).events) - 1
    tracemalloc.start()
    try:
        fork_log(path, at, str(tmp_path / "fork.jsonl"))
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert peak < size / 3  # a few reads of at most 1 MiB, never the log
    assert os.path.getsize(tmp_path / "fork.jsonl") > size


# -- the command line -------------------------------------------------------------------


def cli_fork(*argv: str) -> Any:
    out, err = io.StringIO(), io.StringIO()
    code = cli.main(["fork", *argv], stdout=out, stderr=err, env={})
    return code, out.getvalue(), err.getvalue()


def test_cli_fork_writes_the_new_log_and_says_so(tmp_path):
    path = write_log(tmp_path / "s.jsonl", [e("session/header", **HEADER)] * 3)
    new = str(tmp_path / "n.jsonl")
    assert cli_fork(path, "--at", "1", new) == (0, f"forked {path} at seq 1 into {new}: 3 events\n", "")
    assert read_log(new).events[-1]["data"]["forkedFrom"] == {"path": path, "seq": 1}


def test_cli_fork_refusals_are_usage_errors_and_a_write_fault_is_an_error(tmp_path, monkeypatch):
    path = write_log(
        tmp_path / "s.jsonl", [e("session/header", **HEADER), e("turn/start", 1), e("turn/end", 1, reason="x")]
    )
    new = str(tmp_path / "n.jsonl")
    code, out, err = cli_fork(path, "--at", "1", new)
    assert (code, out) == (2, "") and err.startswith(f"codexmini: {path}: cannot fork at 1: it is inside turn 1")
    assert cli_fork(path, "--at", "7", new)[0] == 2
    assert cli_fork(str(tmp_path / "missing.jsonl"), "--at", "0", new)[0] == 2
    assert cli_fork(path, "--at", "0", path)[0] == 2  # exists
    assert cli_fork(path, "--at", "one", new)[0] == 2  # argparse: not an int
    assert cli_fork(path, new)[0] == 2  # --at is required
    assert not os.path.exists(new)

    def full(file: Any, data: bytes) -> None:
        raise OSError(errno.ENOSPC, "No space left on device")

    monkeypatch.setattr(session_mod, "_write_all", full)
    code, out, err = cli_fork(path, "--at", "0", new)
    assert (code, out) == (1, "") and "cannot write the forked session log" in err
    assert not os.path.exists(new)


def test_cli_fork_as_a_subprocess(tmp_path):
    path = write_log(tmp_path / "s.jsonl", [e("session/header", **HEADER), e("model/choice", model="m")])
    new = str(tmp_path / "n.jsonl")
    done = subprocess.run(
        [sys.executable, "-m", "codexmini", "fork", path, "--at", "1", new],
        env={**os.environ, "PYTHONPATH": REPO},
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert (done.returncode, done.stderr) == (0, "")
    assert done.stdout == f"forked {path} at seq 1 into {new}: 3 events\n"
    again = subprocess.run(
        [sys.executable, "-m", "codexmini", "fork", path, "--at", "2", str(tmp_path / "m.jsonl")],
        env={**os.environ, "PYTHONPATH": REPO},
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert again.returncode == 2 and again.stdout == ""
    assert again.stderr == f"codexmini: {path}: cannot fork at 2: no such event (its 2 events are seq 0 to 1)\n"


def test_fork_to_a_bare_name_in_the_working_directory(tmp_path, monkeypatch):
    write_log(tmp_path / "s.jsonl", [e("session/header", **HEADER)])
    monkeypatch.chdir(tmp_path)
    assert fork_log("s.jsonl", 0, "fork.jsonl") == 2
    assert read_log("fork.jsonl").events[-1]["data"]["forkedFrom"] == {"path": str(tmp_path / "s.jsonl"), "seq": 0}


# -- a property: any log of turns, any cut -------------------------------------------------

#: A log's shape: per turn, its number of events after turn/start, whether it
#: ended (turn/end) and how many events outside turns follow it.
TURNS = st.lists(st.tuples(st.integers(0, 3), st.booleans(), st.integers(0, 2)), max_size=5)


@settings(max_examples=100, derandomize=True, deadline=None)
@given(turns=TURNS, lead=st.integers(0, 2), data=st.data())
def test_fork_property_refuses_exactly_the_cuts_inside_a_turn(turns, lead, data):
    events = [e("session/header", **HEADER)] * lead
    spans = []  # (first seq, last seq, ended) per turn
    for number, (steps, ended, between) in enumerate(turns, 1):
        first = len(events)
        events += [e("turn/start", number)] + [e("step/start", number)] * steps
        events += [e("turn/end", number, reason="completed")] * ended
        spans.append((first, len(events) - 1, ended))
        events += [e("model/choice", model=f"m{number}")] * between
    assume(events)
    at = data.draw(st.integers(0, len(events) - 1))

    def inside(index: int, first: int, last: int, ended: bool) -> bool:
        final = index == len(spans) - 1  # a turn not ended is over once a later one began
        return first <= at < last or (final and not ended and first <= at)

    refused = any(inside(i, *span) for i, span in enumerate(spans))
    with tempfile.TemporaryDirectory() as root:
        path = write_log(os.path.join(root, "s.jsonl"), events)
        new = os.path.join(root, "fork.jsonl")
        if refused:
            with pytest.raises(ForkRefused) as error:
                fork_log(path, at, new)
            assert error.value.reason == "inside-turn" and not os.path.exists(new)
            for suggested in (error.value.before, error.value.after):
                if suggested is not None:  # what it suggests is a cut it takes
                    fork_log(path, suggested, os.path.join(root, f"at-{suggested}.jsonl"))
        else:
            assert fork_log(path, at, new) == at + 2
            assert read_log(new).events[: at + 1] == read_log(path).events[: at + 1]
            with SessionLog.open(new) as log:
                assert log.next_turn == 1 + max((t for t, s in enumerate(spans, 1) if s[0] <= at), default=0)
