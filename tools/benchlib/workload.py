"""The bench's byte streams, built from the frames codex 0.149.1 really sent.

Every frame is a copy of a recorded one (``fixtures/0.149.1/*.frames.jsonl``:
``plain`` for the message items, deltas, token usage and turn frames,
``cmd_ok`` for command items, ``interrupt_command`` for ``turn/interrupt``)
with fresh ids, real-looking paths and new text.  The thread and turn ids are
placeholders of the real ids' length that :mod:`.fake_appserver` fills in.
Frames are written as codex writes them: compact JSON, UTF-8, one per line.

The streaming turn is a preamble (thread status, ``turn/started``, the user
message item), then segments of one model answer each -- an ``agentMessage``
item started, ``DELTAS_PER_SEGMENT`` deltas, completed with the joined text,
``thread/tokenUsage/updated``, then a ``commandExecution`` item started and
completed -- then rate limits, thread status and ``turn/completed``: 90% of
the frames are ``item/agentMessage/delta``, the rest the frames that end or
shape a turn, so the agent's step fold has real work (one step per segment).
"""

from __future__ import annotations

import copy
import json
import os
import random
import stat
from collections.abc import Iterable, Iterator, Mapping
from dataclasses import asdict, dataclass
from typing import Any

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
FIXTURES = os.path.join(REPO, "fixtures", "0.149.1")
FAKE_SERVER = os.path.join(os.path.dirname(os.path.abspath(__file__)), "fake_appserver.py")

#: Same length as a real id (36), so frames have their real size.
THREAD_PLACEHOLDER = "@@thread-id-placeholder-@@@@@@@@@@@@"
TURN_PLACEHOLDER = "@@turn-id-placeholder-@@@@@@@@@@@@@@"
assert len(THREAD_PLACEHOLDER) == len(TURN_PLACEHOLDER) == 36

RECORDED_THREAD = "00000000-0000-7000-8000-000000000002"
RECORDED_TURN = "00000000-0000-7000-8000-000000000003"
PATHS = {"/WORKSPACE": "/home/dev/src/project", "/CODEX_HOME": "/home/dev/.codex"}
EMITTED_AT = 1796048455375

DELTA = "item/agentMessage/delta"
DELTAS_PER_SEGMENT = 45  # with 5 other frames per segment: 90% deltas
OTHER_PER_SEGMENT = 5
PREAMBLE, ENDING = 4, 3
MIB = 1 << 20

Frame = dict[str, Any]

# What models stream: words, code, punctuation, JSON escapes, some non-ASCII.
VOCABULARY = (
    " the",
    " a",
    " to",
    " of",
    " and",
    " is",
    " in",
    " that",
    " it",
    " for",
    " file",
    " function",
    " test",
    " value",
    " returns",
    " line",
    " we",
    " can",
    " read",
    " error",
    " config",
    " path",
    ".",
    ",",
    ":",
    "\n",
    "\n\n",
    "- ",
    "**",
    "`",
    " `read_log`",
    "()",
    " ->",
    " {",
    "}",
    '"',
    "\\n",
    " 0",
    " 42",
    " é",
    " —",
    " ✓",
    "```python\n",
    "def",
    " run",
    "(self",
    "):\n",
    "    ",
    "return",
    " None",
    " # why",
    "Hel",
    "lo",
    ", ",
    "wor",
    "ld",
    "!",
)
OUTPUT_LINES = (
    "codexmini/_wire.py:41:def encode(frame: Frame) -> bytes:",
    "codexmini/_client.py:512:    def _dispatch(self, item: wire.Decoded) -> None:",
    "tests/test_wire.py::test_wire_decoder_splits_chunks PASSED",
    '  File "/home/dev/src/project/codexmini/_threads.py", line 188, in _take',
    "total 48\ndrwxr-xr-x 5 dev dev 4096 Dec  1 10:00 codexmini",
    "M  codexmini/_session.py\n?? notes.txt",
)
COMMANDS = (
    'rg -n "def " codexmini/_wire.py',
    "python -m pytest -q tests/test_wire.py",
    "git status --short",
    "sed -n 1,40p codexmini/_client.py",
    "ls -la",
)


# -- recorded shapes ----------------------------------------------------------


def read_frames(name: str, root: str = FIXTURES) -> list[tuple[str, Frame]]:
    with open(os.path.join(root, f"{name}.frames.jsonl"), encoding="utf-8") as fh:
        return [(r["dir"], r["frame"]) for r in map(json.loads, fh) if r]


def _key(frame: Mapping[str, Any]) -> str:
    method = str(frame["method"])
    item = (frame.get("params") or {}).get("item")
    return f"{method}:{item['type']}" if isinstance(item, dict) else method


def _localise(value: Any) -> Any:
    """Recorded placeholders → the bench's: paths, and thread/turn id placeholders."""
    text = json.dumps(value)
    for recorded, real in PATHS.items():
        text = text.replace(recorded, real)
    text = text.replace(RECORDED_THREAD, THREAD_PLACEHOLDER).replace(RECORDED_TURN, TURN_PLACEHOLDER)
    return json.loads(text)


def recorded_shapes(root: str = FIXTURES) -> dict[str, Frame]:
    """The first recorded frame of each kind: notifications by method (item
    frames by ``method:itemType``) and results by the request's method."""
    shapes: dict[str, Frame] = {}
    for name in ("plain", "cmd_ok", "interrupt_command"):
        asked: dict[Any, str] = {}
        for direction, frame in read_frames(name, root):
            if direction == "out" and "method" in frame and "id" in frame:
                asked[frame["id"]] = frame["method"]
            elif direction == "in" and "method" in frame and "id" not in frame:
                shapes.setdefault(_key(frame), _localise(frame))
            elif direction == "in" and "result" in frame and frame["id"] in asked:
                shapes.setdefault(f"result:{asked[frame['id']]}", _localise(frame["result"]))
    return shapes


# -- the turns ----------------------------------------------------------------


@dataclass
class Meta:
    """What a turn holds, so readers can prove every frame was delivered."""

    notifications: int = 0
    deltas: int = 0
    delta_chars: int = 0
    messages: int = 0
    commands: int = 0
    bytes: int = 0
    largest_line: int = 0


class TurnBuilder:
    """Frames of one turn, from the recorded shapes, with fresh ids and text."""

    def __init__(self, shapes: Mapping[str, Frame], seed: int = 11) -> None:
        self.shapes = shapes
        self.rng = random.Random(seed)
        self.meta = Meta()
        self.usage = 0
        self.last_message: Frame = {}

    def _frame(self, key: str) -> Frame:
        frame = copy.deepcopy(self.shapes[key])
        frame["emittedAtMs"] = EMITTED_AT
        params = frame.get("params") or {}
        for stamp in ("startedAtMs", "completedAtMs"):  # recorded as 0 by the normaliser
            if stamp in params:
                params[stamp] = EMITTED_AT
        self.meta.notifications += 1
        return frame

    def _hex(self, n: int) -> str:
        return "".join(self.rng.choice("0123456789abcdef") for _ in range(n))

    def preamble(self) -> list[Frame]:
        started, completed = self._frame("item/started:userMessage"), self._frame("item/completed:userMessage")
        uid = f"{self._hex(8)}-{self._hex(4)}-7{self._hex(3)}-8{self._hex(3)}-{self._hex(12)}"
        for f in (started, completed):
            f["params"]["item"]["id"] = uid
        return [self._frame("thread/status/changed"), self._frame("turn/started"), started, completed]

    def segment(self, deltas: int, command_output: int = 0) -> list[Frame]:
        mid = f"msg_{self._hex(40)}"
        started, completed = self._frame("item/started:agentMessage"), self._frame("item/completed:agentMessage")
        started["params"]["item"]["id"] = completed["params"]["item"]["id"] = mid
        frames = [started]
        texts = []
        shape = self.shapes[DELTA]  # flat params: a shallow copy is a copy
        for text in self.rng.choices(VOCABULARY, k=deltas):
            frames.append(dict(shape, emittedAtMs=EMITTED_AT, params=dict(shape["params"], itemId=mid, delta=text)))
            texts.append(text)
        self.meta.notifications += deltas
        text = "".join(texts)
        completed["params"]["item"]["text"] = text
        self.last_message = completed["params"]["item"]
        self.meta.deltas += deltas
        self.meta.delta_chars += len(text)
        self.meta.messages += 1
        frames += [completed, self._usage()]
        frames += self.command(command_output or self.rng.randint(40, 400))
        return frames

    def _usage(self) -> Frame:
        frame = self._frame("thread/tokenUsage/updated")
        step = {"inputTokens": 2200, "cachedInputTokens": 2048, "outputTokens": 60, "reasoningOutputTokens": 0}
        step["totalTokens"] = step["inputTokens"] + step["outputTokens"]
        self.usage += step["totalTokens"]
        usage = frame["params"]["tokenUsage"]
        usage["last"].update(step)
        usage["total"].update({k: v * (self.usage // step["totalTokens"]) for k, v in step.items()})
        return frame

    def command(self, output_chars: int) -> list[Frame]:
        cid = f"call_{self._hex(24)}"
        command = self.rng.choice(COMMANDS)
        started, completed = (
            self._frame("item/started:commandExecution"),
            self._frame("item/completed:commandExecution"),
        )
        for f in (started, completed):
            item = f["params"]["item"]
            item.update(id=cid, command=f"/bin/bash -lc '{command}'")
            item["commandActions"][0]["command"] = command
        lines: list[str] = []
        while sum(len(x) + 1 for x in lines) < output_chars:
            lines.append(self.rng.choice(OUTPUT_LINES))
        out = "\n".join(lines) + "\n"
        completed["params"]["item"].update(aggregatedOutput=out[:output_chars], durationMs=self.rng.randint(5, 900))
        self.meta.commands += 1
        return [started, completed]

    def ending(self) -> list[Frame]:
        done = self._frame("turn/completed")
        done["params"]["turn"]["items"] = [self.last_message] if self.last_message else []
        done["params"]["turn"].update(durationMs=61234, startedAt=1796048394, completedAt=1796048455)
        return [self._frame("account/rateLimits/updated"), self._frame("thread/status/changed"), done]


def stream_turn(shapes: Mapping[str, Frame], notifications: int, seed: int = 11) -> tuple[list[Frame], Meta]:
    """Exactly ``notifications`` frames, 90% deltas (see the module docstring)."""
    body = notifications - PREAMBLE - ENDING
    per = DELTAS_PER_SEGMENT + OTHER_PER_SEGMENT
    if body < OTHER_PER_SEGMENT + 1:
        raise ValueError(f"a streaming turn needs at least {PREAMBLE + ENDING + OTHER_PER_SEGMENT + 1} notifications")
    segments, extra = max(1, body // per), body - max(1, body // per) * per
    builder = TurnBuilder(shapes, seed)
    frames = builder.preamble()
    for i in range(segments):
        frames += builder.segment(DELTAS_PER_SEGMENT + (extra if i == segments - 1 else 0))
    frames += builder.ending()
    assert builder.meta.notifications == notifications == len(frames)
    return frames, builder.meta


def large_frame_turn(shapes: Mapping[str, Frame], size: int = 8 * MIB) -> tuple[list[Frame], Meta]:
    """A turn around one ``item/completed`` (commandExecution) line of exactly ``size`` bytes."""
    builder = TurnBuilder(shapes)
    frames = builder.preamble()
    started, completed = builder.command(0)
    completed["params"]["item"]["aggregatedOutput"] = ""
    room = size - len(encode(completed)) + 1  # + the newline encode() adds
    line = "tests/test_bench.py::test_bench_building_blocks PASSED" + " " * 32 + "[ 42%]"  # 92 chars
    count, rest = divmod(room, len(line) + 2)  # each "\n" is 2 bytes of JSON
    completed["params"]["item"]["aggregatedOutput"] = (line + "\n") * count + "x" * rest
    frames += [started, completed, builder._usage()] + builder.ending()
    assert len(encode(completed)) == size + 1
    return frames, builder.meta


_ENCODER = json.JSONEncoder(ensure_ascii=False, separators=(",", ":"))


def encode(frame: Frame) -> bytes:
    """One line as codex writes it: compact, UTF-8."""
    return _ENCODER.encode(frame).encode("utf-8") + b"\n"


# -- files ----------------------------------------------------------------------


def server_spec(shapes: Mapping[str, Frame]) -> dict[str, Any]:
    """What :mod:`.fake_appserver` answers, copied from the recordings."""
    started = copy.deepcopy(shapes["thread/started"])
    started["emittedAtMs"] = EMITTED_AT
    return {
        "responses": {m: shapes[f"result:{m}"] for m in ("initialize", "thread/start", "turn/start", "turn/interrupt")},
        "after_thread_start": [started],
        "thread_placeholder": THREAD_PLACEHOLDER,
        "turn_placeholder": TURN_PLACEHOLDER,
    }


def write_turn(directory: str, name: str, frames: Iterable[Frame], meta: Meta) -> str:
    """``NAME.jsonl`` (the bytes the fake writes) and ``NAME.json`` (its :class:`Meta`)."""
    path = os.path.join(directory, f"{name}.jsonl")
    with open(path, "wb") as fh:
        for frame in frames:
            line = encode(frame)
            meta.bytes += len(line)
            meta.largest_line = max(meta.largest_line, len(line))
            fh.write(line)
    with open(os.path.join(directory, f"{name}.json"), "w", encoding="utf-8") as fh:
        json.dump(asdict(meta), fh)
    return path


def write_fake(directory: str, name: str, python: str) -> str:
    """An executable ``codex`` for ``NAME``: a shell line exec-ing the fake with ``python``."""
    spec = os.path.join(directory, "server.json")
    turn = os.path.join(directory, f"{name}.jsonl")
    path = os.path.join(directory, f"codex-{name}")
    with open(path, "w", encoding="utf-8") as fh:
        fh.write(f'#!/bin/sh\nexec "{python}" "{FAKE_SERVER}" --spec "{spec}" --turn "{turn}" "$@"\n')
    os.chmod(path, os.stat(path).st_mode | stat.S_IXUSR | stat.S_IXGRP | stat.S_IXOTH)
    return path


def read_meta(directory: str, name: str) -> dict[str, int]:
    with open(os.path.join(directory, f"{name}.json"), encoding="utf-8") as fh:
        return dict(json.load(fh))


def prepare(directory: str, python: str, turns: Mapping[str, tuple[list[Frame], Meta]]) -> dict[str, dict[str, Any]]:
    """Write the server spec, every turn and its fake ``codex``; returns name → meta + paths."""
    shapes = recorded_shapes()
    with open(os.path.join(directory, "server.json"), "w", encoding="utf-8") as fh:
        json.dump(server_spec(shapes), fh)
    out = {}
    for name, (frames, meta) in turns.items():
        write_turn(directory, name, frames, meta)
        out[name] = dict(
            asdict(meta), codex=write_fake(directory, name, python), path=os.path.join(directory, f"{name}.jsonl")
        )
    return out


def lines_of(path: str) -> Iterator[bytes]:
    with open(path, "rb") as fh:
        yield from fh


__all__ = [
    "DELTA",
    "Meta",
    "TurnBuilder",
    "encode",
    "large_frame_turn",
    "prepare",
    "read_meta",
    "recorded_shapes",
    "server_spec",
    "stream_turn",
    "write_fake",
    "write_turn",
]
