"""The reliability suite's figures: what actually ran, printed at the end.

Tests :func:`record` what they did (kinds of input played, faults injected,
turns run, kills survived, frames fuzzed) and what they measured; the
suite's ``conftest.py`` prints every figure in the terminal summary, so
``make reliability`` (and ``make test``) show them.  A figure is only ever
recorded by the test that produced it, after its assertions held.
"""

from __future__ import annotations

import collections
from typing import Any, Dict, List, Tuple

#: section → [(name, value)] in the order recorded.
FIGURES: "collections.OrderedDict[str, List[Tuple[str, Any]]]" = collections.OrderedDict()
#: counters summed over tests (section, name) → total.
COUNTS: Dict[Tuple[str, str], int] = collections.Counter()


def record(section: str, name: str, value: Any) -> None:
    """One figure (a measurement, printed as given)."""
    FIGURES.setdefault(section, []).append((name, value))


def count(section: str, name: str, n: int = 1) -> None:
    """Add ``n`` to a counter (kinds played, frames fuzzed …)."""
    FIGURES.setdefault(section, [])
    COUNTS[(section, name)] += n


#: Sections whose counters add up to a figure of their own.
TOTALS = {"fuzzing": "all frames and notifications fuzzed"}


def lines() -> List[str]:
    out: List[str] = []
    for section, figures in FIGURES.items():
        out.append(f"{section}:")
        counters = [(name, total) for (sec, name), total in COUNTS.items() if sec == section]
        out += [f"  {name}: {total}" for name, total in counters]
        if section in TOTALS and len(counters) > 1:
            out.append(f"  {TOTALS[section]}: {sum(total for _, total in counters)}")
        out += [f"  {name}: {value}" for name, value in figures]
    return out
