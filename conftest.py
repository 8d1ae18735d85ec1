"""Every test runs under the conformance plugin: each client created in a test
has its frames validated against the pinned codex schema (conformance/plugin.py).
A root conftest (rather than ``-p`` in addopts) so that plain ``pytest`` finds
the ``conformance`` package too.

The reliability suite's figures (tests/reliability/figures.py) are a plugin
too, loaded here rather than by that suite's conftest: under pytest-xdist
(``make test`` runs ``pytest -n``) the controller loads no conftest below this
one, and it is the controller that adds up the workers' figures and prints
them.  Its directory is the one pytest puts on ``sys.path`` for that suite.

Coverage: ``make test`` runs ``coverage run -m pytest -n 2``, which measures
the controller only.  Each xdist worker starts its own measurement here, in
this module's body: before ``pytest_plugins`` imports the conformance plugin
and with it codexmini, so import-time lines are measured too.  Each process
writes its own data file (``parallel = true``) and ``coverage combine`` adds
them up.  The subprocesses the tests start are not measured, as under a plain
``coverage run``.

Coroutine tests: a test written ``async def test_…`` runs here, in
:func:`pytest_pyfunc_call`, in a fresh event loop of its own
(``asyncio.run``) and under one deadline, :data:`ASYNC_TEST_TIMEOUT_S`, that a
test (or a module's ``pytestmark``) may change with
``@pytest.mark.timeout_s(seconds)``.  Its fixtures are set up and torn down
outside that loop, as for any test: a fixture is a plain function, and what
must happen after the loop is closed (a process reaped, ``gc``, the atexit
registry, code that must run in sync context) stays in a plain ``def`` test
that calls ``asyncio.run`` itself.  No plugin (pytest-asyncio, anyio) needed.
"""

import asyncio
import inspect
import os
import sys
from typing import Any, Coroutine, Optional

import pytest


def _measure_this_worker() -> None:
    # `coverage run` sets COVERAGE_RUN; the workers inherit it from the
    # controller.  Taken out of the environment so that nothing below (a test's
    # own pytest subprocess) starts measuring too.
    if not os.environ.get("PYTEST_XDIST_WORKER") or os.environ.pop("COVERAGE_RUN", None) != "true":
        return
    import coverage

    if coverage.Coverage.current() is None:
        coverage.Coverage(auto_data=True).start()  # the config of pyproject.toml; saved at exit


_measure_this_worker()

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "tests", "reliability"))
# tests/support (the fakes' behaviours), also when only tests/reliability runs
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "tests"))

pytest_plugins = ["conformance.plugin", "figures"]


#: The deadline of every coroutine test, in seconds: nothing may hang.  The
#: per-file ``run()`` helpers this replaces gave 60 s to the in-memory tests
#: and 120 s to those that drive the real codex; one bound for all, the larger.
#: A test that needs longer says so: ``@pytest.mark.timeout_s(300)``.
ASYNC_TEST_TIMEOUT_S = 120.0

TIMEOUT_MARKER = "timeout_s"


def _deadline(item: pytest.Function) -> float:
    marker = item.get_closest_marker(TIMEOUT_MARKER)
    if marker is None:
        return ASYNC_TEST_TIMEOUT_S
    seconds = marker.args[0] if len(marker.args) == 1 and not marker.kwargs else None
    if isinstance(seconds, bool) or not isinstance(seconds, (int, float)) or not seconds > 0:
        raise pytest.UsageError(f"@pytest.mark.{TIMEOUT_MARKER} takes one positive number of seconds ({item.nodeid})")
    return float(seconds)


async def _within(test: "Coroutine[Any, Any, Any]", seconds: float, nodeid: str) -> None:
    task = asyncio.ensure_future(test)
    try:
        await asyncio.wait_for(task, seconds)
    except asyncio.TimeoutError:
        if not task.cancelled():  # the test's own TimeoutError, not the deadline
            raise
        pytest.fail(
            f"{nodeid}: the coroutine test did not finish within {seconds:g} s and was cancelled "
            f"(its traceback above shows where it waited; @pytest.mark.{TIMEOUT_MARKER}(seconds) to change the deadline)"
        )


@pytest.hookimpl(tryfirst=True)
def pytest_pyfunc_call(pyfuncitem: pytest.Function) -> Optional[bool]:
    """Run an ``async def`` test in a fresh event loop under its deadline;
    leave any other test to pytest."""
    test = pyfuncitem.obj
    if not inspect.iscoroutinefunction(test):
        return None
    seconds = _deadline(pyfuncitem)
    # The test's own arguments, as pytest's own pytest_pyfunc_call picks them
    # (funcargs also holds autouse fixtures the test does not name).
    funcargs = pyfuncitem.funcargs
    arguments = {name: funcargs[name] for name in pyfuncitem._fixtureinfo.argnames}
    asyncio.run(_within(test(**arguments), seconds, pyfuncitem.nodeid))
    return True
