"""Several ``make bench`` runs as one table: median and range per interpreter.

    python -m tools.benchlib.summary RUN.json [RUN.json ...] [--all] [--only a,b,c]

One bench run on a shared machine says little (the stream figures move by
10-20% from run to run); the README shows, for each figure with a target,
the median and the range (lowest–highest) of at least three runs per
interpreter, and how many of them met the target.  Runs are grouped by the
interpreter they measured (``python.version``, to the minor version); a
figure a run did not measure (a section skipped) is left out of its count.
``--all`` adds the figures without a target; ``--only`` picks figures, in
its order (the README's table).
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
from collections.abc import Sequence
from typing import Any

from .report import meets, target_text, targets_for


def load(paths: Sequence[str]) -> dict[str, list[dict[str, Any]]]:
    """Runs by interpreter (``3.11``), in the order given."""
    runs: dict[str, list[dict[str, Any]]] = {}
    for path in paths:
        with open(path, encoding="utf-8") as fh:
            doc = json.load(fh)
        minor = ".".join(doc["python"]["version"].split(".")[:2])
        runs.setdefault(minor, []).append(doc)
    return runs


def _shown(value: Any) -> str:
    if isinstance(value, bool):
        return "yes" if value else "no"
    if abs(value) >= 1000:
        return f"{value:,.0f}"
    return f"{value:.2f}" if abs(value) < 100 else f"{value:.0f}"


def cell(name: str, docs: list[dict[str, Any]]) -> str:
    """``median (low–high), k/n`` of one figure over one interpreter's runs."""
    values = [d["figures"][name] for d in docs if d["figures"].get(name) is not None]
    if not values:
        return "—"
    targets = targets_for(docs[0]["python"]["version"])
    met = [meets(name, v, targets) for v in values]
    if isinstance(values[0], bool):
        body = "/".join(sorted({_shown(v) for v in values}))
    else:
        middle, low, high = statistics.median(values), min(values), max(values)
        body = _shown(middle) if len(values) == 1 else f"{_shown(middle)} ({_shown(low)}–{_shown(high)})"
    if any(m is not None for m in met):
        body += f", {sum(bool(m) for m in met)}/{len(values)} met"
    return body


def table(
    runs: dict[str, list[dict[str, Any]]], include_all: bool = False, only: Sequence[str] = ()
) -> list[list[str]]:
    versions = sorted(runs, key=lambda v: tuple(map(int, v.split("."))), reverse=True)
    names: list[str] = list(only)
    for version in versions if not only else ():
        for doc in runs[version]:
            names += [n for n in doc["figures"] if n not in names]
    rows = [["figure", "target", *(f"{v} ({len(runs[v])} runs)" for v in versions)]]
    for name in names:
        texts = {target_text(name, targets_for(runs[v][0]["python"]["version"])): v for v in versions}
        if not include_all and not only and set(texts) == {""}:
            continue
        # One target, or each interpreter's: "≥ 0.9 (3.11); ≥ 0.8 (3.9)".
        target = next(iter(texts)) if len(texts) == 1 else "; ".join(f"{t} ({v})" for t, v in texts.items())
        rows.append([f"`{name}`", target, *(cell(name, runs[v]) for v in versions)])
    return rows


def markdown(rows: list[list[str]]) -> str:
    head, *body = rows
    lines = ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
    lines += ["| " + " | ".join(r) + " |" for r in body]
    return "\n".join(lines)


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("runs", nargs="+", help="JSON files written by make bench JSON=FILE")
    parser.add_argument("--all", action="store_true", help="also the figures without a target")
    parser.add_argument("--only", default="", help="comma-separated figures, in this order")
    args = parser.parse_args(argv)
    only = [name for name in args.only.split(",") if name]
    print(markdown(table(load(args.runs), args.all, only)))
    return 0


if __name__ == "__main__":
    sys.exit(main())
