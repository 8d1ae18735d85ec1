"""codexmini._mapping's tables against the schema of every supported codex.

A codex bump must force a decision, and a table (not a chain of branches) is
what can be checked whole: every ``ServerNotification`` method of every schema
fixture (the oldest supported version and the pin) is either handled
(:data:`~codexmini._mapping.NOTIFICATIONS`) or explicitly ignored
(:data:`~codexmini._mapping.IGNORED`), never both, and no row names a method
that no supported version has.  The tool-item table may only read fields the
schema declares on the item's ``ThreadItem`` branch -- a renamed field would
otherwise silently read as ``None`` and log empty tool calls.

The fields a handler reads are not a hand list alone: each handler runs on a
recording mapping that notes every key it looks up, and the test checks both
that those reads are the documented ones and that the schema declares them.
"""

from __future__ import annotations

from typing import Any, Iterable, List, Mapping, Optional, Set, Tuple

import pytest

from codexmini._mapping import IGNORED, NOTIFICATIONS, TOOL_ITEMS, tool_call, tool_result
from conformance.schema import SchemaBundle, fixture_versions

FLAVORS = ["stable", "experimental"]
VERSIONS = fixture_versions()

Path = Tuple[str, ...]


@pytest.fixture(params=[(v, f) for v in VERSIONS for f in FLAVORS], ids=lambda p: f"{p[0]}-{p[1]}")
def bundle(request) -> SchemaBundle:
    version, flavor = request.param
    return SchemaBundle.load(version, flavor)


# -- the notification table ----------------------------------------------------


def test_mapping_table_covers_every_schema_notification(bundle):
    schema = set(bundle.methods("ServerNotification"))
    assert schema, "the bundle lists no ServerNotification method"
    new = sorted(schema - set(NOTIFICATIONS) - set(IGNORED))
    assert not new, (
        f"codexmini._mapping is out of step with the {bundle.flavor} schema of codex {bundle.version}: "
        f"new in the schema (handle them in NOTIFICATIONS or list them in IGNORED): {new}"
    )


def test_mapping_table_names_no_method_that_no_supported_version_has():
    every = {m for v in VERSIONS for f in FLAVORS for m in SchemaBundle.load(v, f).methods("ServerNotification")}
    gone = sorted((set(NOTIFICATIONS) | set(IGNORED)) - every)
    assert not gone, (
        f"gone from the schema of every supported codex ({', '.join(VERSIONS)}): remove them from NOTIFICATIONS/IGNORED: {gone}"
    )


def test_mapping_table_handled_and_ignored_are_disjoint():
    both = sorted(set(NOTIFICATIONS) & set(IGNORED))
    assert not both, f"methods both handled and ignored: {both}"


@pytest.mark.parametrize("version", VERSIONS)
def test_mapping_table_flavors_have_the_same_notifications(version):
    # Both flavors share one table; if they ever differ, the table must
    # cover the union (experimental is what codexmini opts into).
    stable = set(SchemaBundle.load(version, "stable").methods("ServerNotification"))
    experimental = set(SchemaBundle.load(version, "experimental").methods("ServerNotification"))
    assert stable <= experimental
    assert experimental <= set(NOTIFICATIONS) | set(IGNORED)


# -- schema walking ----------------------------------------------------------------


def _expand(bundle: SchemaBundle, schema: Any) -> List[Any]:
    """``schema`` and every schema it combines ($ref, allOf, anyOf, oneOf)."""
    out: List[Any] = []
    todo = [schema]
    while todo:
        node = todo.pop()
        out.append(node)
        if isinstance(node, Mapping):
            if "$ref" in node:
                todo.append(bundle.resolve(node["$ref"]))
            for key in ("allOf", "anyOf", "oneOf"):
                todo.extend(node.get(key, ()))
    return out


def _opaque(schema: Any) -> bool:
    """Free-form JSON (``true`` or ``{}``): anything goes, nothing to check below."""
    return schema is True or (isinstance(schema, Mapping) and not (set(schema) - {"description", "default"}))


def _property(bundle: SchemaBundle, schema: Any, key: str) -> Optional[List[Any]]:
    """The schemas declaring ``key`` (as a property, or [] under an array's items), or None."""
    found: List[Any] = []
    for node in _expand(bundle, schema):
        if not isinstance(node, Mapping):
            continue
        if key == "[]":
            if "items" in node:
                found.append(node["items"])
        elif key in node.get("properties", {}):
            found.append(node["properties"][key])
    return found or None


def undeclared(bundle: SchemaBundle, schema: Any, paths: Iterable[Path]) -> List[str]:
    """The paths (``a.[].b``) whose keys the schema does not declare."""
    missing = []
    for path in paths:
        nodes = [schema]
        for depth, key in enumerate(path):
            if any(_opaque(sub) for node in nodes for sub in _expand(bundle, node)):
                break  # e.g. MCP content blocks: free-form JSON
            found = [s for n in nodes for s in (_property(bundle, n, key) or ())]
            if not found:
                missing.append(".".join(path[: depth + 1]))
                break
            nodes = found
    return missing


def item_branch(bundle: SchemaBundle, item_type: str) -> Mapping[str, Any]:
    union = bundle.v2["ThreadItem"]
    for branch in union["oneOf"]:
        if item_type in branch.get("properties", {}).get("type", {}).get("enum", ()):
            return branch
    raise AssertionError(
        f"item type {item_type!r} is not in the ThreadItem union of the {bundle.flavor} schema of codex "
        f"{bundle.version}; remove it from TOOL_ITEMS or map its new name"
    )


# -- recording what the mapping reads ------------------------------------------------


class Recorder(dict):
    """A dict that notes every key looked up in it, under a JSON-ish path."""

    def __init__(self, reads: Set[Path], path: Path, values: Mapping[str, Any]) -> None:
        super().__init__(values)
        self._reads = reads
        self._path = path

    def get(self, key, default=None):  # type: ignore[override]
        self._reads.add((*self._path, key))
        return super().get(key, default)

    def __getitem__(self, key):
        self._reads.add((*self._path, key))
        return super().__getitem__(key)


def recorded_item(item_type: str, reads: Set[Path], *, mcp_error: bool = False) -> Recorder:
    """An item of ``item_type`` with every field the mapping might want filled
    in; ``mcp_error`` sets ``error`` (an MCP call refused), else it is null."""

    def r(path: Path, values: Mapping[str, Any]) -> Recorder:
        return Recorder(reads, path, values)

    values = {
        "type": item_type,
        "id": "call_1",
        "status": "failed",
        "command": "/bin/bash -lc 'exit 3'",
        "aggregatedOutput": "out\n",
        "exitCode": 3,
        "changes": [r(("changes", "[]"), {"path": "/w/a.txt", "kind": {"type": "add"}, "diff": "a\n"})],
        "server": "probe",
        "tool": "echo",
        "arguments": {"text": "hi"},
        "result": r(("result",), {"content": [r(("result", "content", "[]"), {"type": "text", "text": "x"})]}),
        "error": r(("error",), {"message": "user rejected MCP tool call"}) if mcp_error else None,
        "query": "codex",
        "results": [{"url": "https://example.com"}],
        "path": "/w/pixel.png",
    }
    return Recorder(reads, (), values)


def reads_of(item_type: str, *, mcp_error: bool = False) -> Set[Path]:
    reads: Set[Path] = set()
    item = recorded_item(item_type, reads, mcp_error=mcp_error)
    assert tool_call(item) is not None
    assert tool_result(item) is not None
    return reads


#: What the tool mapping reads per item type (``docs/session-log.md``, Tools).  ``[]`` is an array element.
TOOL_FIELDS = {
    "commandExecution": {("id",), ("type",), ("command",), ("aggregatedOutput",), ("exitCode",), ("status",)},
    "fileChange": {
        ("id",),
        ("type",),
        ("changes",),
        ("changes", "[]", "path"),
        ("changes", "[]", "kind"),
        ("changes", "[]", "diff"),
        ("status",),
    },
    "mcpToolCall": {
        ("id",),
        ("type",),
        ("server",),
        ("tool",),
        ("arguments",),
        ("result",),
        ("result", "content"),
        ("result", "content", "[]", "type"),
        ("result", "content", "[]", "text"),
        ("error",),
        ("error", "message"),
        ("status",),
    },
    "webSearch": {("id",), ("type",), ("query",), ("results",)},
    "imageView": {("id",), ("type",), ("path",)},
}


def test_mapping_tool_fields_list_matches_what_the_code_reads():
    assert set(TOOL_FIELDS) == set(TOOL_ITEMS)
    for item_type in TOOL_ITEMS:
        reads = reads_of(item_type)
        if item_type == "mcpToolCall":
            reads |= reads_of(item_type, mcp_error=True)
        assert reads == TOOL_FIELDS[item_type], (
            f"{item_type}: the mapping reads {sorted(reads)}; update TOOL_FIELDS "
            f"(and make sure the schema declares the new fields)"
        )


@pytest.mark.parametrize("item_type", sorted(TOOL_ITEMS))
def test_mapping_tool_items_exist_in_the_schema(bundle, item_type):
    branch = item_branch(bundle, item_type)
    assert branch["properties"]["type"]["enum"] == [item_type]


@pytest.mark.parametrize("item_type", sorted(TOOL_ITEMS))
def test_mapping_tool_fields_are_declared_on_the_item_branch(bundle, item_type):
    branch = item_branch(bundle, item_type)
    missing = undeclared(bundle, branch, sorted(TOOL_FIELDS[item_type]))
    assert not missing, (
        f"the {bundle.flavor} schema of codex {bundle.version} does not declare {missing} on the "
        f"{item_type} ThreadItem branch, but codexmini._mapping reads them"
    )


def test_mapping_undeclared_helper_notices_a_missing_field(bundle):
    branch = item_branch(bundle, "commandExecution")
    assert undeclared(bundle, branch, [("exitCode",), ("exitStatus",)]) == ["exitStatus"]
    assert undeclared(bundle, item_branch(bundle, "fileChange"), [("changes", "[]", "oldPath")]) == [
        "changes.[].oldPath"
    ]
    # Free-form JSON (MCP content blocks) is not descended into.
    assert undeclared(bundle, item_branch(bundle, "mcpToolCall"), [("result", "content", "[]", "anything")]) == []


def test_mapping_item_branch_fails_for_an_unknown_type(bundle):
    with pytest.raises(AssertionError, match="not in the ThreadItem union"):
        item_branch(bundle, "teleport")


# -- the fields the notification handlers read ------------------------------------------

#: Minimal params per handled method; the recorder notes what each handler reads.
NOTIFICATION_PARAMS = {
    "item/agentMessage/delta": {"itemId": "m", "delta": "d"},
    "item/reasoning/summaryTextDelta": {"itemId": "r", "delta": "d", "summaryIndex": 0},
    "item/reasoning/textDelta": {"itemId": "r", "delta": "d", "contentIndex": 0},
    "item/plan/delta": {"itemId": "p", "delta": "d"},
    "turn/plan/updated": {"explanation": None, "plan": [{"step": "s", "status": "pending"}]},
    "item/commandExecution/outputDelta": {"itemId": "c", "delta": "d"},
    "item/started": {"item": {"type": "plan", "id": "p", "text": ""}},
    "item/completed": {"item": {"type": "plan", "id": "p", "text": ""}},
    "thread/tokenUsage/updated": {
        "tokenUsage": {"last": {"inputTokens": 1}, "total": {"inputTokens": 1}, "modelContextWindow": None}
    },
    "turn/diff/updated": {"diff": ""},
    "error": {"willRetry": True, "error": {"message": "m", "additionalDetails": None, "codexErrorInfo": None}},
    "turn/completed": {"turn": {"id": "t", "status": "completed", "error": None}},
    "account/rateLimits/updated": {
        "rateLimits": {
            "limitId": "codex",
            "primary": {"usedPercent": 100, "windowDurationMins": 300, "resetsAt": 1},
            "secondary": None,
        }
    },
}


def _recording(reads: Set[Path], path: Path, value: Any) -> Any:
    if isinstance(value, Mapping):
        return Recorder(reads, path, {k: _recording(reads, (*path, k), v) for k, v in value.items()})
    if isinstance(value, list):
        return [_recording(reads, (*path, "[]"), v) for v in value]
    return value


def test_mapping_every_handler_has_recording_params():
    assert set(NOTIFICATION_PARAMS) == set(NOTIFICATIONS)


@pytest.mark.parametrize("method", sorted(NOTIFICATIONS))
def test_mapping_notification_fields_are_declared(bundle, method):
    reads: Set[Path] = set()
    NOTIFICATIONS[method](_recording(reads, (), NOTIFICATION_PARAMS[method]))
    assert reads, f"{method}: the handler read nothing?"
    params = bundle.params_definition("ServerNotification", method)
    assert params is not None
    missing = undeclared(bundle, bundle.resolve(bundle.definition_pointer(params)), sorted(reads))
    assert not missing, (
        f"{method}: the {bundle.flavor} schema of codex {bundle.version} does not declare {missing} "
        f"on {params}, but its handler in codexmini._mapping reads them"
    )
