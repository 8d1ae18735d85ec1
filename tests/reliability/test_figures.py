"""The figures plugin under pytest-xdist: what each worker exports, the
controller adds up, and prints as one run would have (counts summed, records
kept in order, sections in the order first seen)."""

from __future__ import annotations

import collections
import json

import figures
import pytest


@pytest.fixture
def empty_figures(monkeypatch):
    """This process's figures, emptied for the test and put back after it."""
    monkeypatch.setattr(figures, "FIGURES", collections.OrderedDict())
    monkeypatch.setattr(figures, "COUNTS", collections.Counter())


def worker(*calls):
    """What a worker that made ``calls`` exports, as it crosses to the controller (JSON-able)."""
    for call, *args in calls:
        getattr(figures, call)(*args)
    data = json.loads(json.dumps(figures.export()))
    figures.FIGURES.clear()
    figures.COUNTS.clear()
    return data


def test_figures_from_two_workers_add_up_to_one_run(empty_figures):
    one = [("count", "fuzzing", "frames", 3), ("record", "soak", "rss", "1 -> 1 MB"), ("count", "fuzzing", "lines", 1)]
    two = [("count", "fuzzing", "frames", 4), ("count", "secrets", "children", 2), ("record", "soak", "fds", "2 -> 2")]
    for call, *args in one + two:
        getattr(figures, call)(*args)
    serial = figures.lines()
    figures.FIGURES.clear()
    figures.COUNTS.clear()

    for data in (worker(*one), worker(*two)):
        figures.merge(data)

    assert figures.lines() == serial
    assert serial == [
        "fuzzing:",
        "  frames: 7",
        "  lines: 1",
        "  all frames and notifications fuzzed: 8",
        "soak:",
        "  rss: 1 -> 1 MB",
        "  fds: 2 -> 2",
        "secrets:",
        "  children: 2",
    ]


def test_figures_of_a_worker_that_recorded_nothing_print_nothing(empty_figures):
    figures.merge(worker())
    assert figures.lines() == []
