"""Behavioural drift: every recorded scenario run live against another codex.

A schema diff cannot see behaviour: codex 0.171.0 stopped offering
``apply_patch`` for the model slug ``gpt-5.4`` without any schema change.  So
:func:`run_behaviour` runs each scenario of :mod:`conformance.scenarios`
against the other version's binary and the scripted model, held to the
*pinned* goldens (``fixtures/<pin>/``, the scenario's per-version values for
the pin), and gives it one verdict:

* ``same`` -- the normalised transcript and session log equal the goldens';
* ``differs`` -- something differs: the first differing lines are listed;
* ``fails`` -- the run did not complete (an exception, a deadline, the
  scripted model refusing a request because the tool asked for is not
  offered), or a frame is invalid against **the other version's own schema**
  (strict, experimental flavor).

What is compared, and how (so that the verdict means behaviour):

* codex's own version number is replaced on both sides (``cliVersion``,
  ``codexVersion``, the ``userAgent``), as are ids, times and paths (the
  recorder's normalisation);
* the transcript is compared one direction at a time (what codexmini sent;
  what codex sent), because the interleaving of the two directions is a race
  even within one version, and a frame that only moved (the same frame sent
  earlier or later) is not a difference: codex sends notifications from
  concurrent tasks, whose order races too (a run of 0.149.1 against its own
  goldens showed it in 4 of 28 scenarios); the session log, compared in
  order, and the scenario checks are where order matters;
* each frame is compared only on the keys the goldens have at that place
  (per method and JSON path): a field the other version *adds* is the schema
  report's business (additive) and not repeated here, while a field it no
  longer sends, a value that changed, a frame that is new or missing, or a
  frame order that changed are differences;
* a scenario that is a race by design (:data:`conformance.scenarios.RACING_TRANSCRIPTS`:
  two threads streaming at once) is compared on how many frames of each kind
  went each way;
* the session log is compared as the live suite compares it
  (:func:`conformance.scenarios.comparable_live_session`), and the pinned
  scenario check is run: its first failing assertion is a difference too.

A difference that shows up in many scenarios (a new notification sent in
every turn) is listed once, under "in many scenarios".
"""

from __future__ import annotations

import difflib
import json
import math
import os
import re
import traceback
from collections import Counter
from dataclasses import dataclass, field
from typing import Any, Callable, Dict, Iterable, List, Mapping, Optional, Sequence, Set, Tuple

from codexmini import CODEX_VERSION
from conformance.harness import ScenarioResult, execute, fixture_path, run_sync
from conformance.scenarios import RACING_TRANSCRIPTS, SCENARIOS, comparable_live_session
from conformance.schema import FrameValidator, SchemaBundle, known_undeclared
from conformance.versions import codex_placeholder, fixtures_dir

SAME = "same"
DIFFERS = "differs"
FAILS = "fails"
VERDICTS = (FAILS, DIFFERS, SAME)

#: Deadline for one scenario (every wait has one).
RUN_TIMEOUT_S = 120.0
#: Differences shown per scenario and part; the rest are counted.
SHOWN = 4
#: A difference found in at least this share of the scenarios (and in 3 or
#: more) is listed once, not under each.
COMMON_SHARE = 1 / 3
#: Longest rendering of one value in a difference line.
VALUE_WIDTH = 90

Frame = Dict[str, Any]
Runner = Callable[[str], ScenarioResult]


@dataclass
class Outcome:
    """One scenario's verdict and the lines that explain it."""

    name: str
    verdict: str
    reason: str = ""  # for fails
    differences: Dict[str, List[str]] = field(default_factory=dict)  # part → lines ("check", "session", "out", "in")
    frames: int = 0

    def to_json(self) -> Dict[str, Any]:
        return {
            "name": self.name,
            "verdict": self.verdict,
            "reason": self.reason,
            "differences": self.differences,
            "frames": self.frames,
        }


@dataclass
class BehaviourReport:
    old: str  # the pinned version whose goldens are compared
    new: str  # the version run
    binary: str
    outcomes: List[Outcome]

    def by_verdict(self, verdict: str) -> List[Outcome]:
        return [o for o in self.outcomes if o.verdict == verdict]

    @property
    def failed(self) -> bool:
        return bool(self.by_verdict(FAILS))

    @property
    def common_threshold(self) -> int:
        return max(3, math.ceil(len(self.outcomes) * COMMON_SHARE))

    def common(self) -> List[Tuple[str, str, int]]:
        """(part, line, how many scenarios) for the differences that many
        scenarios share (:data:`COMMON_SHARE`)."""
        counts: Counter[Tuple[str, str]] = Counter()
        for outcome in self.outcomes:
            counts.update({(part, line) for part, lines in outcome.differences.items() for line in lines})
        return sorted((part, line, n) for (part, line), n in counts.items() if n >= self.common_threshold)

    def summary(self) -> Dict[str, int]:
        return {verdict: len(self.by_verdict(verdict)) for verdict in VERDICTS}


# ---------------------------------------------------------------------------
# Rendering values and paths


def _short(value: Any) -> str:
    text = json.dumps(value, ensure_ascii=False, sort_keys=True)
    return text if len(text) <= VALUE_WIDTH else text[: VALUE_WIDTH - 1] + "…"


def _path(parts: Sequence[Any]) -> str:
    return "$" + "".join(f"[{p}]" if isinstance(p, int) else f".{p}" for p in parts)


def value_differences(old: Any, new: Any, at: Tuple[Any, ...] = ()) -> List[str]:
    """``$.path: old → new`` for every leaf that differs (keys missing on one
    side are "absent"); lists are compared element by element."""
    if isinstance(old, dict) and isinstance(new, dict):
        out = []
        for key in sorted(set(old) | set(new)):
            if key not in new:
                out.append(f"{_path(at + (key,))}: no longer sent (was {_short(old[key])})")
            elif key not in old:
                out.append(f"{_path(at + (key,))}: new {_short(new[key])}")
            else:
                out += value_differences(old[key], new[key], at + (key,))
        return out
    if isinstance(old, list) and isinstance(new, list) and len(old) == len(new):
        return [line for i, (a, b) in enumerate(zip(old, new)) for line in value_differences(a, b, at + (i,))]
    if old == new:
        return []
    return [f"{_path(at)}: {_short(old)} → {_short(new)}"]


# ---------------------------------------------------------------------------
# Transcripts: labelled, projected on the goldens' keys, one direction at a time


def label_frames(frames: Iterable[Tuple[str, Frame]]) -> List[Tuple[str, str, Frame]]:
    """``(direction, label, frame)``: the label is the method, for a response
    ``<method> result`` (or ``error``) of the request it answers, and for an
    item notification also the item's type."""
    pending: Dict[Tuple[str, str], str] = {}
    out = []
    for direction, frame in frames:
        if "method" in frame:
            label = str(frame["method"])
            if "id" in frame:
                pending[(direction, json.dumps(frame["id"]))] = label
            item = (frame.get("params") or {}).get("item") if isinstance(frame.get("params"), dict) else None
            if isinstance(item, dict) and isinstance(item.get("type"), str):
                label += f" ({item['type']})"
        else:
            asker = "in" if direction == "out" else "out"
            method = pending.pop((asker, json.dumps(frame.get("id"))), "?")
            label = f"{method} {'result' if 'result' in frame else 'error'}"
        out.append((direction, label, frame))
    return out


def _collapse(at: Tuple[Any, ...]) -> Tuple[Any, ...]:
    return tuple("[]" if isinstance(p, int) else p for p in at)


def key_sets(frames: Iterable[Tuple[str, str, Frame]]) -> Dict[Tuple[str, Tuple[Any, ...]], Set[str]]:
    """(label, collapsed path) → the keys the goldens have there."""
    keys: Dict[Tuple[str, Tuple[Any, ...]], Set[str]] = {}

    def walk(label: str, value: Any, at: Tuple[Any, ...]) -> None:
        if isinstance(value, dict):
            keys.setdefault((label, _collapse(at)), set()).update(value)
            for k, v in value.items():
                walk(label, v, at + (k,))
        elif isinstance(value, list):
            for i, v in enumerate(value):
                walk(label, v, at + (i,))

    for _, label, frame in frames:
        walk(label, frame, ())
    return keys


def project(
    label: str, value: Any, keys: Mapping[Tuple[str, Tuple[Any, ...]], Set[str]], at: Tuple[Any, ...] = ()
) -> Any:
    """``value`` with only the keys the goldens have at each place (a place
    the goldens never had is kept whole: it is new)."""
    if isinstance(value, dict):
        known = keys.get((label, _collapse(at)))
        return {k: project(label, v, keys, at + (k,)) for k, v in value.items() if known is None or k in known}
    if isinstance(value, list):
        return [project(label, v, keys, at + (i,)) for i, v in enumerate(value)]
    return value


_PLACEHOLDER = re.compile(r"00000000-0000-7000-8000-\d{12}")


def renumber(rows: List[Tuple[str, Frame]], known: Set[str]) -> List[Tuple[str, Frame]]:
    """Number the id placeholders again, by first appearance in the frames
    whose label is in ``known`` (the kinds both sides sent): a kind of frame
    only one side has, carrying an id of its own (0.171.0's
    ``thread/readState/changed``), must not shift the numbers of every id
    after it."""
    order: Dict[str, str] = {}
    for label, frame in rows:
        if label in known:
            for found in _PLACEHOLDER.findall(json.dumps(frame, sort_keys=True)):
                order.setdefault(found, f"00000000-0000-7000-8000-{len(order) + 1:012d}")

    def swap(value: Any) -> Any:
        if isinstance(value, dict):
            return {k: swap(v) for k, v in value.items()}
        if isinstance(value, list):
            return [swap(v) for v in value]
        if isinstance(value, str):
            return _PLACEHOLDER.sub(lambda m: order.get(m.group(0), "00000000-0000-7000-8000-NEW"), value)
        return value

    return [(label, swap(frame)) for label, frame in rows]


def transcript_differences(golden: List[Tuple[str, Frame]], live: List[Tuple[str, Frame]], direction: str) -> List[str]:
    """The differences in one direction, in transcript order (frames that
    only moved are not differences)."""
    old = [(label, frame) for d, label, frame in label_frames(golden) if d == direction]
    keys = key_sets((direction, label, frame) for label, frame in old)
    new = [(label, project(label, frame, keys)) for d, label, frame in label_frames(live) if d == direction]
    shared = {label for label, _ in old} & {label for label, _ in new}
    old, new = renumber(old, shared), renumber(new, shared)
    render = [json.dumps([label, frame], sort_keys=True) for label, frame in old]
    rendered = [json.dumps([label, frame], sort_keys=True) for label, frame in new]
    blocks = [b for b in difflib.SequenceMatcher(a=render, b=rendered, autojunk=False).get_opcodes() if b[0] != "equal"]
    # A frame that only moved (sent earlier or later, unchanged) is not a
    # difference: notifications from codex's concurrent tasks race each other.
    moved = Counter(render[i] for _, i1, i2, _, _ in blocks for i in range(i1, i2)) & Counter(
        rendered[j] for _, _, _, j1, j2 in blocks for j in range(j1, j2)
    )
    gone, came = Counter(moved), Counter(moved)

    def kept(
        rows: List[Tuple[str, Frame]], texts: List[str], start: int, spare: Counter[str]
    ) -> List[Tuple[str, Frame]]:
        out = []
        for offset, row in enumerate(rows):
            text = texts[start + offset]
            if spare[text] > 0:
                spare[text] -= 1
            else:
                out.append(row)
        return out

    olds: List[Tuple[str, Frame]] = []
    news: List[Tuple[str, Frame]] = []
    for _, i1, i2, j1, j2 in blocks:
        olds += kept(old[i1:i2], render, i1, gone)
        news += kept(new[j1:j2], rendered, j1, came)
    # Frames of the same label pair up in order, wherever they are: a changed
    # value is a field difference, not a missing frame plus a new one.
    lines: List[str] = []
    for label, a in olds:
        twin = next((i for i, (other, _) in enumerate(news) if other == label), None)
        if twin is None:
            lines.append(f"{label}: no longer sent")
        else:
            lines += [f"{label} {line}" for line in value_differences(a, news.pop(twin)[1])]
    lines += [f"{label}: new{_keys(frame)}" for label, frame in news]
    return lines


def _keys(frame: Frame) -> str:
    """The shape of a new frame, the same in every scenario (values are not)."""
    body = frame.get("params", frame.get("result", frame.get("error")))
    return f" (keys: {', '.join(sorted(body))})" if isinstance(body, dict) and body else ""


def label_count_differences(
    golden: List[Tuple[str, Frame]], live: List[Tuple[str, Frame]], direction: str
) -> List[str]:
    """For a scenario whose transcript is a race (:data:`RACING_TRANSCRIPTS`):
    how many frames of each label, not which ones in which order."""
    old = Counter(label for d, label, _ in label_frames(golden) if d == direction)
    new = Counter(label for d, label, _ in label_frames(live) if d == direction)
    return [
        f"{label}: {old[label]} → {new[label]} frame(s)"
        for label in sorted(set(old) | set(new))
        if old[label] != new[label]
    ]


# ---------------------------------------------------------------------------
# Session logs and checks


def session_differences(golden: List[Dict[str, Any]], live: List[Dict[str, Any]]) -> List[str]:
    """The differences between two session logs, in log order; ``seq`` is left
    out of the matching (one event more or less renumbers all that follow)."""

    def key(event: Dict[str, Any]) -> str:
        return json.dumps({k: v for k, v in event.items() if k != "seq"}, sort_keys=True)

    matcher = difflib.SequenceMatcher(a=[key(e) for e in golden], b=[key(e) for e in live], autojunk=False)
    olds: List[Dict[str, Any]] = []
    news: List[Dict[str, Any]] = []
    for tag, i1, i2, j1, j2 in matcher.get_opcodes():
        if tag != "equal":
            olds += golden[i1:i2]
            news += live[j1:j2]
    lines = []
    for a in olds:  # events of the same type pair up in order, as frames do
        twin = next((i for i, b in enumerate(news) if b["type"] == a["type"]), None)
        if twin is None:
            lines.append(f"{a['type']}: no longer logged ({_short(a['data'])})")
            continue
        b = news.pop(twin)
        lines += [f"{a['type']} {line}" for line in value_differences(a["data"], b["data"], ("data",))]
        lines += [
            f"{a['type']} {line}"
            for line in value_differences({k: a[k] for k in ("turn", "step")}, {k: b[k] for k in ("turn", "step")})
        ]
    lines += [f"{e['type']}: newly logged ({_short(e['data'])})" for e in news]
    return lines


def failing_assertion(exc: BaseException) -> str:
    """Where a check failed: the last line of ``conformance/scenarios.py`` in the traceback."""
    frames = [
        f
        for f in traceback.extract_tb(exc.__traceback__)
        if f.filename.endswith(os.path.join("conformance", "scenarios.py"))
    ]
    where = f"scenarios.py:{frames[-1].lineno} {frames[-1].line}" if frames else ""
    message = str(exc).strip().splitlines()[0] if str(exc).strip() else ""
    return " -- ".join(p for p in (where, _trim(message)) if p) or type(exc).__name__


def _trim(text: str, width: int = 240) -> str:
    return text if len(text) <= width else text[: width - 1] + "…"


# ---------------------------------------------------------------------------
# Running


def counted(lines: Sequence[str]) -> List[str]:
    """Each distinct line once, in order, with how often it came when more
    than once (the same field missing from every ``item/completed``)."""
    counts = Counter(lines)
    return [line if counts[line] == 1 else f"{line} (×{counts[line]})" for line in dict.fromkeys(lines)]


def _load_jsonl(path: str) -> List[Dict[str, Any]]:
    with open(path, encoding="utf-8") as fh:
        return [json.loads(line) for line in fh if line.strip()]


def judge(name: str, result: ScenarioResult, new: str, bundle: SchemaBundle, old: str = CODEX_VERSION) -> Outcome:
    """The verdict on one completed live run (see the module docstring)."""
    validator = FrameValidator(bundle, strict=True, allow_undeclared=known_undeclared(new))
    for direction, frame in result.frames:
        validator.check(direction, frame)
    if validator.problems:
        first = validator.problems[0]
        return Outcome(
            name,
            FAILS,
            f"{len(validator.problems)} problem(s) in {validator.frames} frames against codex {new}'s own schema; first: "
            + _trim(first.headline),
            frames=validator.frames,
        )
    scenario = SCENARIOS[name]
    differences: Dict[str, List[str]] = {}
    if scenario.check is not None:
        try:
            scenario.check(result)
        except Exception as exc:  # an assertion, or a check that cannot even read what it expects
            differences["check"] = [failing_assertion(exc)]
    root = fixtures_dir(old)
    if scenario.uses_agent:
        golden = codex_placeholder(
            comparable_live_session(name, _load_jsonl(fixture_path(name, "session.jsonl", root)), old), old
        )
        live = codex_placeholder(comparable_live_session(name, result.normalised_session(), old), new)
        differences["session"] = session_differences(golden, live)
    recorded = [
        (r["dir"], codex_placeholder(r["frame"], old)) for r in _load_jsonl(fixture_path(name, "frames.jsonl", root))
    ]
    frames = [(r["dir"], codex_placeholder(r["frame"], new)) for r in result.normalised_frames()]
    for direction in ("out", "in"):
        compare = label_count_differences if name in RACING_TRANSCRIPTS else transcript_differences
        differences[direction] = compare(recorded, frames, direction)
    differences = {part: counted(lines) for part, lines in differences.items() if lines}
    return Outcome(name, DIFFERS if differences else SAME, differences=differences, frames=validator.frames)


def run_behaviour(
    new: str,
    binary: str,
    bundle: SchemaBundle,
    old: str = CODEX_VERSION,
    names: Optional[Sequence[str]] = None,
    progress: Callable[[str], None] = lambda line: None,
) -> BehaviourReport:
    """Run every scenario (or ``names``) live against ``binary`` (codex
    ``new``), held to the goldens of ``old``, and judge each."""
    outcomes = []
    for name in names or sorted(SCENARIOS):
        progress(f"behaviour: {name} against codex {new} …")
        try:
            result = run_sync(execute(SCENARIOS[name], "live", version=old, codex_bin=binary), RUN_TIMEOUT_S)
        except Exception as exc:
            outcomes.append(
                Outcome(name, FAILS, _trim(f"{type(exc).__name__}: {str(exc).strip() or 'no message'}", 600))
            )
            continue
        outcomes.append(judge(name, result, new, bundle, old))
    return BehaviourReport(old, new, binary, outcomes)


# ---------------------------------------------------------------------------
# The report

_PARTS = {"check": "check", "session": "session log", "out": "codexmini sent", "in": "codex sent"}


def format_behaviour(report: BehaviourReport) -> str:
    summary = report.summary()
    lines = [
        f"BEHAVIOUR -- every recorded scenario run live against codex {report.new} "
        f"(frames validated against its own schema), compared with the {report.old} goldens ({len(report.outcomes)})",
        f"  binary: {report.binary}",
    ]
    common = {(part, line) for part, line, _ in report.common()}
    width = max((len(o.name) for o in report.outcomes), default=0)
    for verdict in VERDICTS:
        for outcome in report.by_verdict(verdict):
            if verdict == FAILS:
                lines.append(f"  {verdict:<7}  {outcome.name:<{width}}  {outcome.reason}")
                continue
            own = {part: [x for x in found if (part, x) not in common] for part, found in outcome.differences.items()}
            shared = sum(len(found) - len(own[part]) for part, found in outcome.differences.items())
            parts = ", ".join(_PARTS[p] for p in outcome.differences)
            tail = (
                f"  ({parts}{'; ' + str(shared) + ' listed under many scenarios' if shared else ''})" if parts else ""
            )
            lines.append(f"  {verdict:<7}  {outcome.name}{tail}")
            for part, found in own.items():
                for line in found[:SHOWN]:
                    lines.append(f"      {_PARTS[part]}: {_trim(line)}")
                if len(found) > SHOWN:
                    lines.append(f"      {_PARTS[part]}: … {len(found) - SHOWN} more")
    if common:
        lines += [
            "",
            f"  in many scenarios (listed once; {report.common_threshold} or more of {len(report.outcomes)}):",
        ]
        for part, line, n in report.common():
            lines.append(f"      {_PARTS[part]}: {_trim(line)}  [{n} scenarios]")
    lines += ["", "behaviour: {} same, {} differ, {} fail".format(summary[SAME], summary[DIFFERS], summary[FAILS])]
    return "\n".join(lines)


def behaviour_json(report: BehaviourReport) -> Dict[str, Any]:
    return {
        "old": report.old,
        "new": report.new,
        "binary": report.binary,
        "summary": report.summary(),
        "common": [{"part": p, "line": line, "scenarios": n} for p, line, n in report.common()],
        "scenarios": [o.to_json() for o in report.outcomes],
    }


__all__ = [
    "DIFFERS",
    "FAILS",
    "SAME",
    "VERDICTS",
    "BehaviourReport",
    "Outcome",
    "behaviour_json",
    "format_behaviour",
    "judge",
    "label_frames",
    "project",
    "run_behaviour",
    "session_differences",
    "transcript_differences",
    "value_differences",
]
