"""Every test runs under the conformance plugin: each client created in a test
has its frames validated against the pinned codex schema (conformance/plugin.py).
A root conftest (rather than ``-p`` in addopts) so that plain ``pytest`` finds
the ``conformance`` package too.

The reliability suite's figures (tests/reliability/figures.py) are a plugin
too, loaded here rather than by that suite's conftest: under pytest-xdist
(``make test`` runs ``pytest -n``) the controller loads no conftest below this
one, and it is the controller that adds up the workers' figures and prints
them.  Its directory is the one pytest puts on ``sys.path`` for that suite.

Coverage (``make test``): ``COVERAGE_PROCESS_START`` makes every Python process
start coverage.py as it starts (coverage's ``.pth`` file), so each xdist worker
measures from its first import.  Only the workers (and a run without workers)
are measured: below them, the subprocesses the tests start are not, as under a
plain ``coverage run``."""

import os
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "tests", "reliability"))

pytest_plugins = ["conformance.plugin", "figures"]


def pytest_configure(config):
    controller = not os.environ.get("PYTEST_XDIST_WORKER") and getattr(config.option, "numprocesses", None)
    if not controller:  # the workers' own subprocesses are not measured
        os.environ.pop("COVERAGE_PROCESS_START", None)
