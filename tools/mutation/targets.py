"""Which modules are mutated, and which tests must notice.

One row per pure module of the package: its short name and its own fast test
files (offline ones; ``-m "not live"`` is always passed) -- not the agent's
or the client's tests, which spawn processes and would make every mutant
cost seconds.  A module listed here but absent from the tree is reported as
missing, not an error, so a row can be added before the module lands.  A
present module whose test file is missing *is* an error: the row is wrong.
"""

from __future__ import annotations

import os
from dataclasses import dataclass

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
PACKAGE = "codexmini"

TARGETS: dict[str, tuple[str, ...]] = {
    "_wire": ("tests/test_wire.py",),
    "_rpc": ("tests/test_rpc.py",),
    "_turnfold": ("tests/test_turnfold.py",),
    "_inbox": ("tests/test_inbox.py",),
    "_mapping": ("tests/test_mapping.py", "conformance/test_mapping_table.py"),
    "_stepfold": ("tests/test_stepfold.py",),
    "_permission": ("tests/test_permission.py", "conformance/test_server_requests.py"),
    "_prompt": ("tests/test_prompt.py", "tests/test_prompt_reasons.py", "tests/test_prompt_compaction.py"),
    "_session": (
        "tests/test_session.py",
        "tests/test_session_stream.py",
        "tests/test_session_faults.py",
        "tests/test_session_lock.py",
    ),
    "_jsontext": ("tests/test_jsontext.py",),
    "_events": ("tests/test_events.py",),
    "_environment": ("tests/test_environment.py",),
    # The agent's endpoint tests (tests/test_agent.py) run the agent; these are its own.
    "_endpoint": ("tests/test_endpoint.py",),
    "_errors": ("tests/test_errors.py",),
    # The validator's pattern and $defs are held to jsonschema in test_structured.py (fast: it goes first).
    "_jsonschema": ("tests/test_structured.py", "tests/test_jsonschema.py"),
    "_structured": ("tests/test_structured.py",),
    # The client's retries (tests/test_client.py) run a client; these are the policy's own.
    "_retry": ("tests/test_retry.py",),
    "_launch": ("tests/test_launch.py",),
    "_knobs": ("tests/test_knobs.py",),
    "_inputs": ("tests/test_inputs.py",),
    # What each utility request sends, on the in-memory fake (no process): fast.
    "_extras": ("tests/test_extras.py",),
    "_connect": ("tests/test_connect.py",),
    "_websocket": ("tests/test_websocket.py",),
}


@dataclass(frozen=True)
class Target:
    name: str  # "_session"
    tests: tuple[str, ...]  # relative to ROOT

    @property
    def module(self) -> str:
        return f"{PACKAGE}.{self.name}"

    @property
    def path(self) -> str:
        """The module's file, relative to ROOT."""
        return f"{PACKAGE}/{self.name}.py"

    def exists(self) -> bool:
        return os.path.isfile(os.path.join(ROOT, self.path))

    def missing_tests(self) -> tuple[str, ...]:
        return tuple(t for t in self.tests if not os.path.isfile(os.path.join(ROOT, t)))


def targets() -> tuple[Target, ...]:
    return tuple(Target(name, tests) for name, tests in TARGETS.items())
