"""A schema bundle in canonical form, so that two releases compare by meaning.

Every definition of a bundle (the v1 ones under ``definitions``, the v2 ones
under ``definitions.v2``; one namespace, a v2 name becomes ``v2/<name>`` only
if it collides with a different v1 definition) is rewritten into a small
canonical node: ``$ref`` becomes the bare definition name, so a definition that
moves between v1 and v2 still compares equal; ``type`` becomes a sorted list
without ``null`` plus a ``nullable`` flag, so ``["string", "null"]`` and
``anyOf [X, null]`` are the same thing; ``oneOf``/``anyOf`` branches that are
plain string enums merge into one ``enum`` value set (codex writes
``CommandExecutionApprovalDecision`` as a ``oneOf`` of one-value enums and
objects); the remaining branches become *variants* labelled by their
discriminator (``<method=turn/start>``, ``<type=commandExecution>``), else by
their single required key (``<{granular}>``), their ``$ref`` name, their title,
their JSON type.  Descriptions, titles and defaults are kept apart as *docs*.

A place inside a definition is a :data:`Path` of rendered segments
(``$.input[]``, ``$.*`` for map values, ``$<type=text>.text`` for a variant);
:func:`node_at` follows one.
"""

from __future__ import annotations

import json
from typing import Any, Dict, Iterable, List, Mapping, Optional, Set, Tuple

# The four method unions and the JSON-RPC envelopes of the bundle.
CLIENT_REQUEST = "ClientRequest"
CLIENT_NOTIFICATION = "ClientNotification"
SERVER_REQUEST = "ServerRequest"
SERVER_NOTIFICATION = "ServerNotification"
ENVELOPE = {
    "request": "JSONRPCRequest",
    "notification": "JSONRPCNotification",
    "response": "JSONRPCResponse",
    "error": "JSONRPCError",
}
ERROR_BODY = "JSONRPCErrorError"

Node = Dict[str, Any]  # a canonical schema node (plain JSON)
Path = Tuple[str, ...]  # rendered segments: ".name", "[]", ".*", "<label>"


def render(path: Path) -> str:
    return "$" + "".join(path)


_DOC_KEYS = ("description", "title", "default", "examples", "$comment", "deprecated", "readOnly", "writeOnly")
_LIMIT_KEYS = (
    "format",
    "minimum",
    "maximum",
    "exclusiveMinimum",
    "exclusiveMaximum",
    "minLength",
    "maxLength",
    "pattern",
    "minItems",
    "maxItems",
    "uniqueItems",
    "minProperties",
    "maxProperties",
    "multipleOf",
)


class Bundle:
    """A schema bundle in canonical form: ``defs`` maps definition name → node."""

    def __init__(self, root: Mapping[str, Any], label: str = "?") -> None:
        self.label = label
        definitions = root.get("definitions") or {}
        v2 = definitions.get("v2") or {}
        self._names: Dict[str, str] = {}
        raw: Dict[str, Any] = {}
        for name, schema in definitions.items():
            if name != "v2":
                self._names[f"#/definitions/{name}"] = name
                raw[name] = schema
        for name, schema in v2.items():
            flat = name
            if name in raw and _strip_docs(raw[name]) != _strip_docs(schema):
                flat = f"v2/{name}"  # a different definition of the same name
            self._names[f"#/definitions/v2/{name}"] = flat
            raw.setdefault(flat, schema)
        self.defs: Dict[str, Node] = {name: self.canonical(schema) for name, schema in sorted(raw.items())}

    @classmethod
    def load(cls, path: str, label: str = "?") -> "Bundle":
        with open(path, encoding="utf-8") as fh:
            return cls(json.load(fh), label)

    def ref_name(self, pointer: str) -> str:
        return self._names.get(pointer, pointer)

    # -- canonicalisation ---------------------------------------------------

    def canonical(self, schema: Any) -> Node:
        if schema is True:
            return {}
        if schema is False:
            return {"never": True}
        if not isinstance(schema, Mapping):
            return {"other": {"schema": schema}}
        s = dict(schema)
        node: Node = {}
        docs = {k: s.pop(k) for k in _DOC_KEYS if k in s}
        s.pop("$schema", None)
        s.pop("definitions", None)
        all_of = s.pop("allOf", None)
        if all_of is not None:
            if len(all_of) == 1 and isinstance(all_of[0], Mapping):
                inner = dict(all_of[0])  # `allOf: [{$ref}]` is how a described $ref is written
                for key in _DOC_KEYS:
                    if key in inner:
                        docs.setdefault(key, inner.pop(key))
                for key, value in inner.items():
                    s.setdefault(key, value)
            else:
                node["allOf"] = [self.canonical(x) for x in all_of]
        nullable = False
        if "$ref" in s:
            node["ref"] = self.ref_name(s.pop("$ref"))
        if "type" in s:
            raw_type = s.pop("type")
            types = set(raw_type if isinstance(raw_type, list) else [raw_type])
            nullable = "null" in types
            node["type"] = sorted(types - {"null"})
        values: Optional[List[Any]] = None
        if "const" in s:
            values = [s.pop("const")]
        if "enum" in s:
            values = list(s.pop("enum"))
        if values is not None:
            if None in values:
                nullable = True
                values = [v for v in values if v is not None]
            node["enum"] = _sorted_values(values)
        branches = list(s.pop("anyOf", ())) + list(s.pop("oneOf", ()))
        if "properties" in s:
            node["properties"] = {k: self.canonical(v) for k, v in sorted(s.pop("properties").items())}
        if "required" in s:
            node["required"] = sorted(set(s.pop("required")))
        if "additionalProperties" in s:
            extra = s.pop("additionalProperties")
            if extra is False:
                node["closed"] = True
            elif extra is not True:
                node["additional"] = self.canonical(extra)
        if "patternProperties" in s:
            node["patterns"] = {k: self.canonical(v) for k, v in sorted(s.pop("patternProperties").items())}
        if "items" in s:
            items = s.pop("items")
            if isinstance(items, list):
                node["tuple"] = [self.canonical(x) for x in items]
            else:
                node["items"] = self.canonical(items)
        limits = {k: s.pop(k) for k in _LIMIT_KEYS if k in s}
        if limits:
            node["limits"] = limits
        if s:
            node["other"] = {k: s[k] for k in sorted(s)}
        if branches:
            nullable = self._branches(node, [self.canonical(b) for b in branches]) or nullable
        if nullable:
            node["nullable"] = True
        if docs:
            node["docs"] = docs
        return node

    def _branches(self, node: Node, branches: List[Node]) -> bool:
        """Fold ``anyOf``/``oneOf`` branches into ``node``; True if one allows null."""
        nullable = False
        values: List[Any] = []
        value_types: Set[str] = set()
        rest: List[Node] = []
        for b in branches:
            if set(b) - {"docs"} == {"type", "nullable"} and not b["type"]:
                nullable = True
            elif "enum" in b and set(b) - {"docs", "type", "nullable"} == {"enum"}:
                values += b["enum"]
                value_types.update(b.get("type", ()))
                nullable = nullable or bool(b.get("nullable"))
            else:
                if b.get("nullable"):
                    nullable = True
                    b = {k: v for k, v in b.items() if k != "nullable"}
                rest.append(b)
        if values:
            node["enum"] = _sorted_values(list(node.get("enum", ())) + values)
            if not rest and "type" not in node:
                node["type"] = sorted(value_types)
        single = len(rest) == 1 and not values and not (set(rest[0]) - {"docs"}) & set(node)
        if single and not _discriminated(rest[0]):
            inner = rest[0]
            for key, value in inner.items():
                if key == "docs":
                    node.setdefault("docs", {}).update(
                        {k: v for k, v in value.items() if k not in node.get("docs", {})}
                    )
                else:
                    node[key] = value
        elif rest:
            node["variants"] = _label_variants(rest)
            if "type" not in node and not values and all(b.get("type") == ["object"] for b in rest):
                node["type"] = [
                    "object"
                ]  # what the branches force anyway; keeps `type: object` beside a oneOf from being drift
        return nullable


def _discriminated(node: Node) -> bool:
    """An object with a one-value property: a union branch even when it is alone
    (``ClientNotification`` has one method; a second must not move its paths)."""
    return any(const_of(p) is not NOTHING for p in (node.get("properties") or {}).values())


def _strip_docs(schema: Any) -> Any:
    """A raw schema without its docs keywords (property *names* are kept)."""
    if isinstance(schema, list):
        return [_strip_docs(v) for v in schema]
    if not isinstance(schema, Mapping):
        return schema
    out = {}
    for key, value in schema.items():
        if key in _DOC_KEYS or key == "$schema":
            continue
        if key in ("properties", "patternProperties", "definitions") and isinstance(value, Mapping):
            out[key] = {name: _strip_docs(sub) for name, sub in value.items()}
        else:
            out[key] = _strip_docs(value)
    return out


def shape(node: Any) -> Any:
    """A canonical node without its docs: what the wire sees."""
    if isinstance(node, dict):
        return {k: shape(v) for k, v in node.items() if k != "docs"}
    if isinstance(node, list):
        return [shape(v) for v in node]
    return node


def _sorted_values(values: Iterable[Any]) -> List[Any]:
    unique = {json.dumps(v, sort_keys=True): v for v in values}
    return [unique[k] for k in sorted(unique)]


def const_of(node: Node) -> Any:
    """The single value of a one-value enum node, else a sentinel."""
    values = node.get("enum")
    if values is not None and len(values) == 1 and not node.get("nullable") and "variants" not in node:
        return values[0]
    return NOTHING


NOTHING = object()


def _label_variants(branches: List[Node]) -> Dict[str, Node]:
    """Stable labels for union branches (see the module docstring)."""
    common: Optional[Set[str]] = None
    for b in branches:
        consts = {k for k, p in b.get("properties", {}).items() if const_of(p) is not NOTHING}
        common = consts if common is None else common & consts
    for key in sorted(common or (), key=lambda k: (k not in ("type", "method"), k)):
        values = [b["properties"][key]["enum"][0] for b in branches]
        if len({json.dumps(v) for v in values}) == len(values):
            return {f"{key}={v}": b for v, b in zip(values, branches)}
    labels: Dict[str, Node] = {}
    for i, b in enumerate(branches):
        label = _own_label(b, branches)
        if label is None or label in labels:
            label = f"#{i}"
        labels[label] = b
    return labels


def _own_label(b: Node, branches: List[Node]) -> Optional[str]:
    required = b.get("required", [])
    if len(required) == 1:
        key = required[0]
        if sum(1 for other in branches if key in other.get("properties", {})) == 1:
            return "{" + key + "}"
    if "ref" in b:
        return b["ref"]
    title = b.get("docs", {}).get("title")
    if isinstance(title, str):
        return title
    if b.get("type"):
        return "|".join(b["type"])
    return None


def node_at(bundle: Bundle, definition: str, path: Path) -> Optional[Node]:
    """The canonical node at a rendered path of a definition."""
    node: Optional[Node] = bundle.defs.get(definition)
    for segment in path:
        if node is None:
            return None
        if segment == "[]":
            node = node.get("items")
        elif segment == ".*":
            node = node.get("additional")
        elif segment.startswith("<"):
            node = (node.get("variants") or {}).get(segment[1:-1])
        else:
            node = (node.get("properties") or {}).get(segment[1:])
    return node
