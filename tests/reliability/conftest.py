"""The reliability suite (issues 10 and 27): hostile input, faults, soak,
kills, secrets, fuzzing, storage faults of the session log, one writer per
log.  Every test here runs under a watchdog, and the figures the
tests record (:mod:`figures`, a plugin the root ``conftest.py`` loads) are
printed at the end of the run."""

from __future__ import annotations

import faulthandler
import sys

import pytest

#: No test of this suite may run longer than this: a hang ends the run with
#: every thread's traceback instead of wedging CI.
WATCHDOG_S = 300


@pytest.fixture(autouse=True)
def watchdog():
    faulthandler.dump_traceback_later(WATCHDOG_S, exit=True, file=sys.stderr)
    try:
        yield
    finally:
        faulthandler.cancel_dump_traceback_later()
