"""The public API: ``from codexmini import …`` is the whole surface.

``__all__`` is pinned to the documented list (the README's "Library" section
lists the same names), every name imports and has a docstring, and importing
the package stays cheap: no ``asyncio`` or ``subprocess`` until a name that
needs them is used.  Every public class has a docstring of its own -- not
inherited, not the ``Name(field: type, ...)`` one ``dataclasses`` generates for
a class without one -- and every public dataclass names each of its fields in
it (but those in :data:`PENDING`).
"""

from __future__ import annotations

import dataclasses
import inspect
import json
import re
import subprocess
import sys
from typing import List, Set

import pytest

import codexmini

#: The documented public names, grouped as the README groups them.
DOCUMENTED: List[str] = [
    "__version__",
    "CODEX_VERSION",
    "OLDEST_CODEX_VERSION",
    # one call for the common case
    "run",
    "RunResult",
    # the agent over a durable session log
    "Agent",
    "AgentConfig",
    "Blocked",
    "ModelEndpoint",
    "SessionLog",
    "read_log",
    # the client, its threads and turns
    "AppServerClient",
    "Thread",
    "Turn",
    "RetryPolicy",
    "NO_RETRY",
    # approvals
    "ApprovalRequest",
    "Reply",
    # turn events
    "Event",
    "Usage",
    "AgentMessageDelta",
    "ReasoningSummaryDelta",
    "ReasoningTextDelta",
    "PlanDelta",
    "PlanUpdated",
    "CommandOutputDelta",
    "ItemStarted",
    "ItemCompleted",
    "TokenUsage",
    "DiffUpdated",
    "RetryingError",
    "TurnCompleted",
    "InvalidNotification",
    "Unmapped",
    # the agent's stream events
    "MessageDelta",
    "MessageStreamEnd",
    # account events
    "RateLimitsUpdated",
    "RateLimitWindow",
    # errors
    "CodexminiError",
    "ProtocolError",
    "RpcError",
    "ServerOverloaded",
    "MethodNotFound",
    "ThreadNotFound",
    "TransportError",
    "ProcessExited",
    "ClientClosed",
    "RequestTimeout",
    "CodexTimeout",
    "TurnTimeout",
    "BinaryNotFound",
    "ConfigError",
    "SchemaError",
    "OutputValidationError",
    "SessionLogError",
    "TurnFailed",
    "UsageLimitExceeded",
]


def test_public_api_all_is_the_documented_list() -> None:
    assert codexmini.__all__ == DOCUMENTED


@pytest.mark.parametrize("name", DOCUMENTED)
def test_public_api_name_imports_and_is_documented(name: str) -> None:
    value = getattr(codexmini, name)
    if name in ("__version__", "CODEX_VERSION", "OLDEST_CODEX_VERSION"):
        assert isinstance(value, str) and value.count(".") == 2
        return
    if name == "Event":  # a Union alias: documented in its module
        return
    assert inspect.getdoc(value), f"codexmini.{name} has no docstring"


#: Public dataclasses whose docstrings do not name every field yet, skipped by
#: the field check only (their docstrings are still their own).  Their modules
#: are being restructured elsewhere; document the fields there, then drop the
#: name from this set.
PENDING: Set[str] = {
    "AgentConfig",  # _agent.py: names sandbox and approval_policy, not its other fields
    "ApprovalRequest",  # _permission.py: one line, names none of its fields
    "ModelEndpoint",  # _endpoint.py: names base_url and api_key, not wire_api
    "RunResult",  # _run.py: names neither usage nor turn_id
}


@pytest.mark.parametrize("name", DOCUMENTED)
def test_public_api_class_docstring_is_its_own(name: str) -> None:
    value = getattr(codexmini, name)
    if not inspect.isclass(value):
        return
    doc = value.__dict__.get("__doc__")
    assert doc, f"codexmini.{name} has no docstring of its own"
    # dataclasses gives a class without a docstring "Name(field: type, ...)".
    assert not doc.startswith(f"{value.__name__}("), f"codexmini.{name} has only the docstring dataclasses generates"


@pytest.mark.parametrize("name", DOCUMENTED)
def test_public_api_dataclass_docstring_names_its_fields(name: str) -> None:
    value = getattr(codexmini, name)
    if not (inspect.isclass(value) and dataclasses.is_dataclass(value)) or name in PENDING:
        return
    doc = value.__dict__.get("__doc__") or ""
    missing = [f.name for f in dataclasses.fields(value) if not re.search(rf"\b{re.escape(f.name)}\b", doc)]
    assert not missing, f"codexmini.{name}'s docstring does not name {missing}"


def test_public_api_pending_names_public_dataclasses() -> None:
    values = {name: getattr(codexmini, name) for name in DOCUMENTED}
    public = {name for name, value in values.items() if inspect.isclass(value) and dataclasses.is_dataclass(value)}
    assert PENDING <= public, sorted(PENDING - public)


def test_public_api_unknown_name_is_an_attribute_error() -> None:
    with pytest.raises(AttributeError, match="no attribute 'nope'"):
        getattr(codexmini, "nope")  # noqa: B009 - the attribute lookup is what is tested
    assert "Agent" in dir(codexmini)


def _modules_after(statement: str) -> List[str]:
    code = f"import sys, json; {statement}; print(json.dumps(sorted(sys.modules)))"
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, check=True, timeout=60)
    return list(json.loads(done.stdout))


@pytest.mark.parametrize(
    "statement",
    [
        "import codexmini",
        "from codexmini import SessionLog, read_log, Usage, TurnCompleted, ItemCompleted",
        "import codexmini._mapping, codexmini._steps, codexmini._prompt",
    ],
)
def test_public_api_import_is_cheap(statement: str) -> None:
    loaded = _modules_after(statement)
    # (logging imports threading; that is not what a pure user should avoid)
    heavy = sorted({"asyncio", "subprocess", "socket", "selectors"} & set(loaded))
    assert not heavy, f"{statement!r} imported {heavy}"


def test_public_api_asyncio_comes_with_the_client() -> None:
    assert "asyncio" in _modules_after("from codexmini import AppServerClient")
