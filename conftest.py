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
"""

import os
import sys


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

pytest_plugins = ["conformance.plugin", "figures"]
