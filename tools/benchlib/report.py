"""Figures, their targets (issue 11) and the printed table.

A :class:`Figure` is one named number of the JSON document's ``figures``.
Targets are shown next to the value -- ``ok`` or ``MISS`` -- and never
asserted: the bench always exits 0 once it has measured.
"""

from __future__ import annotations

import statistics
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from typing import Any

#: figure → (comparison, bound), from issue 11's "Targets".
TARGETS: dict[str, tuple[str, Any]] = {
    "client_vs_raw": (">=", 1.0),
    "agent_vs_raw": (">=", 0.9),
    "client_rss_mb": ("<=", 30.0),
    "client_streaming_rss_mb": ("<=", 30.0),
    "agent_rss_mb": ("<=", 45.0),
    "all_deltas_delivered": ("==", True),
    "session_growth_vs_serialize": ("<=", 1.0),
    "large_frame_vs_raw": ("<=", 1.05),
    "import_codexmini_vs_asyncio": ("<=", 1.3),
    # issue 29: what a user's first import costs
    "import_client_vs_asyncio": ("<=", 1.3),
    "import_agent_vs_asyncio": ("<=", 1.3),
    "import_sync_vs_asyncio": ("<=", 1.3),
    "mapping_imports_asyncio": ("==", False),
    "serialize_scaling": ("<=", 11.0),
    "e2e_overhead": ("<=", 1.05),
    # issue 28: the other transports, and turns at once
    "client_ws_vs_stdio": (">=", 0.9),
    "client_unix_vs_stdio": (">=", 0.9),
    "concurrent_threads_8_vs_1": (">=", 1.0),
    "concurrent_connections_8_vs_1": (">=", 1.0),
    # issue 29: many turns at once on one client.  Aggregate throughput does not
    # fall as turns are added; a turn at once costs at most 0.25 MB with its
    # history (2,000 notifications, 0.55 MB on the wire), 0.05 MB without it.
    "concurrent_fake_threads_128_vs_1": (">=", 1.0),
    # ... and where asyncio itself falls (a minimal client, a task a turn: the
    # floor, no target), the client keeps at least its pace.
    "concurrent_fake_threads_128_vs_raw": (">=", 1.0),
    "concurrent_threads_128_vs_1": (">=", 1.0),
    "concurrent_rss_per_turn_mb": ("<=", 0.25),
    "concurrent_streaming_rss_per_turn_mb": ("<=", 0.05),
    # issue 29: a session log of any length
    "log_open_growth_mb": ("<=", 64.0),
    "log_open_mb_s": (">=", 100.0),
    "log_read_growth_mb": ("<=", 64.0),
    "log_read_mb_s": (">=", 100.0),
    "log_iter_growth_mb": ("<=", 64.0),
    "log_next_prompt_vs_small": ("<=", 2.0),
}


#: Where an interpreter has a target of its own (issue 29: the agent at 0.8× on 3.9).
PYTHON_TARGETS: dict[str, dict[str, tuple[str, Any]]] = {
    "3.9": {"agent_vs_raw": (">=", 0.8)},
}


def targets_for(version: str) -> dict[str, tuple[str, Any]]:
    """The targets of one interpreter (``3.9.18`` → those of 3.9)."""
    minor = ".".join(version.split(".")[:2])
    return {**TARGETS, **PYTHON_TARGETS.get(minor, {})}


def median(values: Iterable[float]) -> float:
    return float(statistics.median(list(values)))


def meets(name: str, value: Any, targets: dict[str, tuple[str, Any]] | None = None) -> bool | None:
    target = (TARGETS if targets is None else targets).get(name)
    if target is None or value is None:
        return None
    op, bound = target
    return {"<=": value <= bound, ">=": value >= bound, "==": value == bound}[op]


def target_text(name: str, targets: dict[str, tuple[str, Any]] | None = None) -> str:
    target = (TARGETS if targets is None else targets).get(name)
    if target is None:
        return ""
    op, bound = target
    symbol = {"<=": "≤", ">=": "≥", "==": "="}[op]
    return f"{symbol} {'no' if bound is False else 'yes' if bound is True else bound}"


@dataclass
class Figure:
    name: str  # key in the JSON document's "figures"
    value: Any
    label: str  # what was measured, for the table
    fmt: str = "{:.3f}"
    detail: str = ""

    def shown(self) -> str:
        if self.value is None:
            return "—"
        if isinstance(self.value, bool):
            return "yes" if self.value else "no"
        return self.fmt.format(self.value)


@dataclass
class Section:
    title: str
    figures: list[Figure] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)
    skipped: str | None = None

    def add(self, *args: Any, **kwargs: Any) -> Figure:
        figure = Figure(*args, **kwargs)
        self.figures.append(figure)
        return figure


def render(
    header: Sequence[str], sections: Sequence[Section], targets: dict[str, tuple[str, Any]] | None = None
) -> str:
    rows: list[tuple[str, ...]] = []
    for section in sections:
        for f in section.figures:
            status = {True: "ok", False: "MISS", None: ""}[meets(f.name, f.value, targets)]
            rows.append((f.label, f.name, f.shown(), target_text(f.name, targets), status))
    widths = [max([len(r[i]) for r in rows] + [len(h)]) for i, h in enumerate(("", "figure", "value", "target", ""))]
    lines = list(header)

    def line(cells: tuple[str, ...], detail: str = "") -> str:
        label, name, value, target, status = cells
        text = f"  {label:<{widths[0]}}  {name:<{widths[1]}}  {value:>{widths[2]}}  {target:<{widths[3]}} {status:<4}"
        return (text + ("  " + detail if detail else "")).rstrip()

    lines.append("")
    lines.append(line(("", "figure", "value", "target", "")))
    for section in sections:
        lines.append(section.title)
        if section.skipped:
            lines.append(f"  skipped: {section.skipped}")
        for f in section.figures:
            status = {True: "ok", False: "MISS", None: ""}[meets(f.name, f.value, targets)]
            lines.append(line((f.label, f.name, f.shown(), target_text(f.name, targets), status), f.detail))
        lines.extend(f"  · {n}" for n in section.notes)
    return "\n".join(lines)


def figures_of(sections: Sequence[Section]) -> dict[str, Any]:
    return {f.name: f.value for s in sections for f in s.figures}


def kfmt(rate: float) -> str:
    """``113266.0`` → ``113.3k``."""
    return f"{rate / 1e3:.1f}k"
