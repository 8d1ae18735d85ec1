"""The report as text or JSON, and the surface listing of ``--surface``.

The text report has one section per verdict (docs only with ``--verbose``), a
summary line and the notes on the surface; the JSON report holds the same
changes (docs only with ``--verbose``), the summary and the exit code.
"""

from __future__ import annotations

from typing import Any, Dict

from .bundle import render
from .classify import ADDITIVE, BREAKING, DOCS, OUTSIDE, VERDICTS, Report, short_sources
from .diff import Change
from .paths import relative
from .sides import Side
from .surface import METHOD_ROLES, READS, SENDS, Surface

_HEADINGS = {
    BREAKING: "BREAKING -- changes that touch what codexmini sends or reads",
    ADDITIVE: "ADDITIVE -- new or relaxed, in definitions codexmini uses",
    OUTSIDE: "OUTSIDE THE SURFACE -- definitions or fields codexmini does not use",
    DOCS: "DOCS -- descriptions, titles and defaults",
}


def _line(change: Change) -> str:
    return f"  {change.definition} {change.where}: {change.detail}"


def format_report(report: Report, verbose: bool = False) -> str:
    counts = report.surface.counts()
    lines = [
        f"codex schema drift: {report.old.label} → {report.new.label} ({report.old.flavor} flavor)",
        f"  old: {relative(report.old.path)} ({report.old.origin})",
        f"  new: {relative(report.new.path)} ({report.new.origin})",
        "  surface: requests sent {}, notifications sent {}, notifications read {}, server requests answered {}; "
        "{} definitions, {} paths (--surface lists them)".format(
            counts["sends request"],
            counts["sends notification"],
            counts["reads notification"],
            counts["answers server request"],
            counts["definitions"],
            counts["paths"],
        ),
    ]
    for verdict in VERDICTS:
        if verdict == DOCS and not verbose:
            continue
        changes = report.by_verdict(verdict)
        lines += ["", f"{_HEADINGS[verdict]} ({len(changes)})"]
        for change in changes:
            lines.append(_line(change))
            if verdict == BREAKING:
                lines.append(f"      {change.why}: {', '.join(change.sources)}")
            elif verbose and change.why:
                lines.append(f"      {change.why}")
        if not changes:
            lines.append("  (none)")
    summary = report.summary()
    lines += [
        "",
        "summary: {} breaking, {} additive, {} outside the surface{}".format(
            summary[BREAKING],
            summary[ADDITIVE],
            summary[OUTSIDE],
            f", {summary[DOCS]} docs" if verbose else f" ({summary[DOCS]} docs changes hidden; --verbose shows them)",
        ),
    ]
    if report.surface.notes:
        lines += ["", "notes on the surface:"] + [f"  {n}" for n in report.surface.notes]
    return "\n".join(lines)


def report_json(report: Report, verbose: bool = False) -> Dict[str, Any]:
    return {
        "old": report.old.to_json(),
        "new": report.new.to_json(),
        "summary": report.summary(),
        "exit": report.exit_code,
        "changes": [c.to_json() for c in report.changes if verbose or c.verdict != DOCS],
        "notes": list(report.surface.notes),
    }


def format_surface(surface: Surface, side: Side) -> str:
    lines = [f"codexmini's protocol surface on codex {side.label} ({side.flavor} flavor, {relative(side.path)})"]
    for union, role in METHOD_ROLES.items():
        rows = sorted((k.split(":", 1)[1], u) for k, u in surface.methods.items() if u.union == union)
        lines += ["", f"{role}s ({union}): {len(rows)}"]
        width = max((len(m) for m, _ in rows), default=0)
        lines += [f"  {m:<{width}}  {', '.join(short_sources(u.sources, 6))}" for m, u in rows]
    lines += ["", "definitions and paths (S = sends, R = reads; = values seen or sent):"]
    for definition, paths in sorted(surface.entries.items()):
        if not paths:
            continue
        lines.append(f"  {definition}")
        for path, use in sorted(paths.items()):
            roles = ("S" if SENDS in use.roles else " ") + ("R" if READS in use.roles else " ")
            lines.append(f"    {roles} {render(path)}    {', '.join(short_sources(use.sources, 3))}")
            for value, sources in sorted(use.values.items()):
                lines.append(f"         = {value}    {', '.join(short_sources(sources, 3))}")
    if surface.notes:
        lines += ["", "notes:"] + [f"  {n}" for n in surface.notes]
    return "\n".join(lines)
