"""The reliability suite's figures: what actually ran, printed at the end.

Tests :func:`record` what they did (kinds of input played, faults injected,
turns run, kills survived, frames fuzzed) and what they measured; the
module is also a pytest plugin (the root ``conftest.py`` loads it) that
prints every figure in the terminal summary, so ``make reliability`` (and
``make test``) show them.  Under pytest-xdist each worker hands its figures
to the controller, which adds them up and prints them once.  A figure is only
ever recorded by the test that produced it, after its assertions held.
"""

from __future__ import annotations

import collections
from typing import Any, Dict, List, Tuple

import pytest

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


# -- the plugin ---------------------------------------------------------------

#: The key of a worker's figures in its ``workeroutput`` (pytest-xdist).
_KEY = "codexmini_reliability_figures"


def export() -> Dict[str, Any]:
    """The figures recorded in this process, as plain lists (what a worker sends)."""
    return {
        "figures": [[section, [list(pair) for pair in pairs]] for section, pairs in FIGURES.items()],
        "counts": [[section, name, total] for (section, name), total in COUNTS.items()],
    }


def merge(data: Dict[str, Any]) -> None:
    """Add a worker's :func:`export` to this process's figures."""
    for section, pairs in data["figures"]:
        FIGURES.setdefault(section, []).extend((name, value) for name, value in pairs)
    for section, name, total in data["counts"]:
        COUNTS[(section, name)] += total


def pytest_sessionfinish(session: pytest.Session) -> None:
    workeroutput = getattr(session.config, "workeroutput", None)
    if workeroutput is not None:  # an xdist worker: its figures go to the controller
        workeroutput[_KEY] = export()


@pytest.hookimpl(optionalhook=True)  # a pytest-xdist hook: the controller, as each worker ends
def pytest_testnodedown(node: Any, error: Any) -> None:
    data = getattr(node, "workeroutput", {}).get(_KEY)
    if data is not None:
        merge(data)


def pytest_terminal_summary(terminalreporter: Any) -> None:
    text = lines()
    if text:
        terminalreporter.section("codexmini reliability figures")
        for line in text:
            terminalreporter.write_line(line)
