"""Every test runs under the conformance plugin: each client created in a test
has its frames validated against the pinned codex schema (conformance/plugin.py).
A root conftest (rather than ``-p`` in addopts) so that plain ``pytest`` finds
the ``conformance`` package too."""

pytest_plugins = ["conformance.plugin"]
