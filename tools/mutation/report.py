"""Per-module results, the equivalents verdict, and the report (text, JSON)."""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from typing import Any

from .equivalents import Equivalent
from .mutants import Mutant
from .runner import ERROR, KILLED, SURVIVED, TIMEOUT, Outcome
from .targets import Target

OK, MISSING, BROKEN = "ok", "missing", "broken"


@dataclass
class ModuleRun:
    target: Target
    state: str = OK  # OK, MISSING (not in the tree: fine), BROKEN (the row or the harness is wrong)
    note: str = ""
    baseline_seconds: float = 0.0
    timeout: float = 0.0
    results: list[tuple[Mutant, Outcome]] = field(default_factory=list)


@dataclass(frozen=True)
class Summary:
    mutants: int
    killed: int
    timeouts: int
    survived: int  # equivalents included
    equivalent: int  # survivors declared equivalent
    errors: int

    @property
    def score(self) -> float:
        return _percent(self.killed + self.timeouts, self.mutants)

    @property
    def score_without_equivalents(self) -> float:
        return _percent(self.killed + self.timeouts, self.mutants - self.equivalent)


def _percent(part: int, whole: int) -> float:
    return 100.0 * part / whole if whole else 100.0


def summarize(run: ModuleRun, declared: set[tuple[str, ...]]) -> Summary:
    statuses = [o.status for _, o in run.results]
    return Summary(
        mutants=len(statuses),
        killed=statuses.count(KILLED),
        timeouts=statuses.count(TIMEOUT),
        survived=statuses.count(SURVIVED),
        equivalent=sum(1 for m, o in run.results if o.status == SURVIVED and m.key in declared),
        errors=statuses.count(ERROR),
    )


def stale(runs: Sequence[ModuleRun], equivalents: Iterable[Equivalent]) -> list[tuple[Equivalent, str]]:
    """Entries of the modules that ran which match no surviving mutant, and why."""
    ran = {r.target.name: r for r in runs if r.state == OK}
    found: list[tuple[Equivalent, str]] = []
    for entry in equivalents:
        run = ran.get(entry.module)
        if run is None:
            continue
        matched = [o.status for m, o in run.results if m.key == entry.key]
        if not matched:
            found.append((entry, "matches no mutant"))
        elif SURVIVED not in matched:
            found.append((entry, f"not equivalent: the mutant was {', '.join(sorted(set(matched)))}"))
    return found


def failed(runs: Sequence[ModuleRun], declared: set[tuple[str, ...]], min_score: float, stale_count: int) -> bool:
    for run in runs:
        if run.state == BROKEN:
            return True
        if run.state == OK:
            summary = summarize(run, declared)
            if summary.errors or summary.score_without_equivalents < min_score:
                return True
    return stale_count > 0


def _mutant_line(mutant: Mutant, outcome: Outcome, detail: bool = False) -> list[str]:
    tail = f"  ({outcome.detail})" if detail else ""
    return [f"    {mutant.where}  {mutant.operator}  {mutant.change}{tail}", f"        | {mutant.source}"]


def text(
    runs: Sequence[ModuleRun],
    declared: set[tuple[str, ...]],
    stale_entries: Sequence[tuple[Equivalent, str]],
    min_score: float,
) -> str:
    header = (
        f"{'module':<12} {'mutants':>7} {'killed':>6} {'timeout':>7} {'survived':>8} {'equiv':>5} "
        f"{'error':>5} {'score':>6} {'w/o equiv':>9}"
    )
    lines = [header]
    details: list[str] = []
    for run in runs:
        name = run.target.name
        if run.state != OK:
            lines.append(f"{name:<12} {run.state}: {run.note}")
            continue
        s = summarize(run, declared)
        lines.append(
            f"{name:<12} {s.mutants:>7} {s.killed:>6} {s.timeouts:>7} {s.survived:>8} {s.equivalent:>5} "
            f"{s.errors:>5} {s.score:>5.1f}% {s.score_without_equivalents:>8.1f}%"
        )
        survivors = [(m, o) for m, o in run.results if o.status == SURVIVED and m.key not in declared]
        sections = (("survived", survivors, False),) + tuple(
            (status, [(m, o) for m, o in run.results if o.status == status], True) for status in (TIMEOUT, ERROR)
        )
        for title, found, show_detail in sections:
            if found:
                details.append(f"  {name}: {len(found)} {title}")
                for mutant, outcome in found:
                    details.extend(_mutant_line(mutant, outcome, show_detail))
    lines.append(
        f"score = (killed + timeout) / mutants; w/o equiv leaves out the survivors declared in "
        f"tools/mutation/equivalents.py; gate: w/o equiv >= {min_score:g}% in every module"
    )
    if details:
        lines += ["", "not killed (file:line  operator  before → after):", *details]
    if stale_entries:
        lines += ["", "stale equivalents (tools/mutation/equivalents.py):"]
        lines += [f"  {e.module}  {e.operator}  {e.before} → {e.after}  | {e.line}: {why}" for e, why in stale_entries]
    return "\n".join(lines)


def as_json(
    runs: Sequence[ModuleRun],
    declared: set[tuple[str, ...]],
    stale_entries: Sequence[tuple[Equivalent, str]],
    min_score: float,
    wall_seconds: float,
    workers: int,
) -> dict[str, Any]:
    modules = []
    for run in runs:
        entry: dict[str, Any] = {"module": run.target.name, "state": run.state, "note": run.note}
        if run.state == OK:
            s = summarize(run, declared)
            entry.update(
                tests=list(run.target.tests),
                baseline_seconds=round(run.baseline_seconds, 3),
                timeout_seconds=round(run.timeout, 1),
                mutants=s.mutants,
                killed=s.killed,
                timeouts=s.timeouts,
                survived=s.survived,
                equivalent=s.equivalent,
                errors=s.errors,
                score=round(s.score, 2),
                score_without_equivalents=round(s.score_without_equivalents, 2),
                results=[
                    {
                        "path": m.path,
                        "line": m.line,
                        "operator": m.operator,
                        "before": m.before,
                        "after": m.after,
                        "source": m.source,
                        "status": o.status,
                        "detail": o.detail,
                        "seconds": round(o.seconds, 3),
                        "declared_equivalent": m.key in declared,
                    }
                    for m, o in run.results
                ],
            )
        modules.append(entry)
    return {
        "wall_seconds": round(wall_seconds, 1),
        "workers": workers,
        "min_score": min_score,
        "modules": modules,
        "stale_equivalents": [
            {"module": e.module, "operator": e.operator, "before": e.before, "after": e.after, "line": e.line, "why": w}
            for e, w in stale_entries
        ],
    }
