"""A small JSON Schema validator: the part of Draft 7 the codex bundles use.

Theory of operation
-------------------
The smoke run validates every frame against the schema the codex binary in
use prints, also in a vendored copy with no ``jsonschema``
installed.  This module is that validator.  It is not a general JSON Schema
implementation: it supports exactly the keywords in :data:`KEYWORDS`, which
are the ones ``codex app-server generate-json-schema`` emits (0.149.1 and
0.171.0, stable and experimental) plus a few cheap neighbours, and refuses
any other keyword with a :class:`SchemaError` when it compiles the schema
that carries it, so an unknown keyword can never pass silently.

Accept/reject follows ``jsonschema.Draft7Validator`` exactly (the conformance
suite checks this on every recorded frame and on mutations of them,
``tests/test_jsonschema_stdlib.py``):

* types are Draft 7's: ``bool`` is neither ``integer`` nor ``number``, while
  ``integer`` accepts a float with an integral value (``1.0``);
* ``enum`` and ``const`` compare like jsonschema's ``equal``: ``1 == 1.0`` but
  ``True != 1``, element by element inside arrays and objects;
* siblings of ``$ref`` are ignored (Draft 7), ``format`` is an annotation
  (what ``Draft7Validator`` does without a format checker), ``oneOf`` means
  exactly one, and ``true``/``false`` are schemas.

Each schema node is compiled once into a :class:`_Node`: a ``valid`` closure
that answers accept/reject without building any message, and an ``explain``
closure that is only run for an instance ``valid`` rejected and says why, at
which JSON path.  Keeping the two apart makes the common case -- a valid
frame -- cost one pass of small closures, and makes ``explain`` unable to
change a verdict.  Nodes are cached by the identity of their schema object,
and ``$ref`` targets are compiled lazily, on first use, so recursive
definitions (``ThreadItem`` holds ``ThreadItem``s) need no special case.

Pure: no I/O, no clock, no environment.
"""

from __future__ import annotations

import json
import numbers
import re
from collections.abc import Iterator, Mapping, Sequence, Sized
from typing import Any, Callable, NamedTuple, Optional, Union
from urllib.parse import unquote

from ._errors import SchemaError

Schema = Union[Mapping[str, Any], bool]
#: A schema, or a local JSON pointer (``#/definitions/X``) to one in the document.
SchemaOrPointer = Union[Schema, str]

DRAFT7 = "http://json-schema.org/draft-07/schema"


class _Error(NamedTuple):
    path: str
    message: str
    keyword: str


_Valid = Callable[[Any], bool]
_Explain = Callable[[Any, str], Iterator[_Error]]


class _Node:
    """One compiled schema (or one keyword of it): a verdict and its reasons."""

    __slots__ = ("explain", "trivial", "valid")

    def __init__(self, valid: _Valid, explain: _Explain, trivial: bool = False) -> None:
        self.valid = valid
        self.explain = explain  # only called for an instance ``valid`` rejected
        self.trivial = trivial  # accepts everything: callers may skip it


# ---------------------------------------------------------------------------
# JSON paths and messages


_IDENTIFIER = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")
_REPR_LIMIT = 200


def child_path(path: str, key: str | int) -> str:
    """``$`` + ``.key`` / ``["odd key"]`` / ``[3]``."""
    if isinstance(key, int):
        return f"{path}[{key}]"
    if _IDENTIFIER.fullmatch(key):
        return f"{path}.{key}"
    return f"{path}[{json.dumps(key)}]"


def _repr(value: Any) -> str:
    # jsonschema puts the whole instance in its messages; a frame can be a
    # megabyte, so a long one is cut (the messages stay recognisable).
    text = repr(value)
    return text if len(text) <= _REPR_LIMIT else f"{text[:_REPR_LIMIT]}…"


# ---------------------------------------------------------------------------
# Draft 7 types and equality, as jsonschema defines them


def _is_integer(value: Any) -> bool:
    # Draft 6+ counts 1.0 as an integer; bool is an int in Python, not in JSON.
    kind = type(value)
    if kind is int:
        return True
    if kind is float:
        return bool(value.is_integer())
    if isinstance(value, bool):
        return False
    return isinstance(value, int) or (isinstance(value, float) and value.is_integer())


def _is_number(value: Any) -> bool:
    kind = type(value)
    if kind is int or kind is float:
        return True
    return not isinstance(value, bool) and isinstance(value, numbers.Number)


#: Types an ``isinstance`` decides (``bool`` is not ``int`` here: only
#: ``integer`` and ``number`` would confuse them, and they have predicates).
_CLASSES: Mapping[str, type] = {
    "array": list,
    "boolean": bool,
    "null": type(None),
    "object": dict,
    "string": str,
}
_PREDICATES: Mapping[str, _Valid] = {"integer": _is_integer, "number": _is_number}


def _unbool(value: Any) -> Any:
    # Stand-ins that equal nothing but themselves, so True != 1 and False != 0.
    if value is True:
        return _TRUE
    if value is False:
        return _FALSE
    return value


_TRUE, _FALSE = object(), object()


def _equal(one: Any, two: Any) -> bool:
    """jsonschema's ``_utils.equal``: JSON equality for ``enum`` and ``const``."""
    if one is two:
        return True
    if isinstance(one, str) or isinstance(two, str):
        return bool(one == two)
    if isinstance(one, Sequence) and isinstance(two, Sequence):
        return len(one) == len(two) and all(_equal(a, b) for a, b in zip(one, two))
    if isinstance(one, Mapping) and isinstance(two, Mapping):
        return len(one) == len(two) and all(key in two and _equal(value, two[key]) for key, value in one.items())
    return bool(_unbool(one) == _unbool(two))


# ---------------------------------------------------------------------------
# Small node builders


def _accept(instance: Any) -> bool:
    return True


def _no_reasons(instance: Any, path: str) -> Iterator[_Error]:
    return iter(())  # it rejects nothing, so it has nothing to explain


_ANY = _Node(_accept, _no_reasons, trivial=True)


def _reject(instance: Any) -> bool:
    return False


def _explain_false(instance: Any, path: str) -> Iterator[_Error]:
    yield _Error(path, f"False schema does not allow {_repr(instance)}", "false")


_NOTHING = _Node(_reject, _explain_false)


def _leaf(keyword: str, valid: _Valid, message: Callable[[Any], str]) -> _Node:
    """A keyword that judges the instance itself (no subschema)."""

    def explain(instance: Any, path: str) -> Iterator[_Error]:
        yield _Error(path, message(instance), keyword)

    return _Node(valid, explain)


def _all_of(nodes: Sequence[_Node]) -> _Valid:
    checks = tuple(node.valid for node in nodes if not node.trivial)
    if not checks:
        return _accept
    if len(checks) == 1:
        return checks[0]

    def valid(instance: Any) -> bool:
        for check in checks:
            if not check(instance):
                return False
        return True

    return valid


def _number(keyword: str, value: Any) -> float:
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        raise SchemaError(f"{keyword} must be a number, not {value!r}")
    number: float = value  # (Python 3.9's typeshed leaves the narrowed value Any)
    return number


def _count(keyword: str, value: Any) -> int:
    # The metaschema's nonNegativeInteger is a Draft 7 integer, so 1.0 is one.
    if not _is_integer(value) or value < 0:
        raise SchemaError(f"{keyword} must be a non-negative integer, not {value!r}")
    return int(value)


def _schema_list(keyword: str, value: Any) -> Sequence[Schema]:
    if not isinstance(value, list):
        raise SchemaError(f"{keyword} must be an array of schemas, not {_repr(value)}")
    return value


# ---------------------------------------------------------------------------
# The keywords.  Each compiler gets the validator (to compile subschemas), the
# keyword's value and the whole schema (``additionalProperties`` reads its
# siblings), and returns a node, or None when the keyword accepts everything.

_Compiler = Callable[["Validator", Any, Mapping[str, Any]], Optional[_Node]]


def _schema_uri(v: Validator, value: Any, schema: Mapping[str, Any]) -> _Node | None:
    # jsonschema switches dialect on a nested $schema; this validator only has Draft 7.
    if not isinstance(value, str) or value.rstrip("#") != DRAFT7:
        raise SchemaError(f"only Draft 7 schemas are supported, not $schema {value!r}")
    return None


def _type(v: Validator, value: Any, schema: Mapping[str, Any]) -> _Node | None:
    names = [value] if isinstance(value, str) else value
    if not isinstance(names, list) or not names or not all(isinstance(n, str) for n in names):
        raise SchemaError(f"type must be a type name or a non-empty array of them, not {value!r}")
    unknown = [n for n in names if n not in _CLASSES and n not in _PREDICATES]
    if unknown:
        raise SchemaError(f"unknown type(s) {unknown!r}")
    classes = tuple(_CLASSES[n] for n in names if n in _CLASSES)
    predicates = tuple(_PREDICATES[n] for n in names if n in _PREDICATES)
    valid: _Valid
    if not predicates:

        def valid(instance: Any) -> bool:
            return isinstance(instance, classes)
    elif not classes and len(predicates) == 1:
        valid = predicates[0]
    else:

        def valid(instance: Any) -> bool:
            return isinstance(instance, classes) or any(p(instance) for p in predicates)

    wanted = ", ".join(repr(n) for n in names)
    return _leaf("type", valid, lambda instance: f"{_repr(instance)} is not of type {wanted}")


def _enum(v: Validator, value: Any, schema: Mapping[str, Any]) -> _Node | None:
    if not isinstance(value, list):
        raise SchemaError(f"enum must be an array, not {_repr(value)}")
    enums = list(value)
    valid: _Valid
    if all(isinstance(e, str) for e in enums):  # the common case: a set lookup
        strings = frozenset(enums)

        def valid(instance: Any) -> bool:
            return isinstance(instance, str) and instance in strings
    else:

        def valid(instance: Any) -> bool:
            return any(_equal(e, instance) for e in enums)

    return _leaf("enum", valid, lambda instance: f"{_repr(instance)} is not one of {_repr(enums)}")


def _const(v: Validator, value: Any, schema: Mapping[str, Any]) -> _Node | None:
    return _leaf("const", lambda instance: _equal(instance, value), lambda instance: f"{_repr(value)} was expected")


def _bound(keyword: str, fails: Callable[[Any, float], bool], phrase: str) -> _Compiler:
    def compile_bound(v: Validator, value: Any, schema: Mapping[str, Any]) -> _Node | None:
        limit = _number(keyword, value)
        return _leaf(
            keyword,
            lambda instance: not (_is_number(instance) and fails(instance, limit)),
            lambda instance: f"{_repr(instance)} is {phrase} {limit!r}",
        )

    return compile_bound


def _size(
    keyword: str, kind: type[Sized], fails: Callable[[int, int], bool], phrase: Callable[[int], str]
) -> _Compiler:
    def compile_size(v: Validator, value: Any, schema: Mapping[str, Any]) -> _Node | None:
        limit = _count(keyword, value)
        return _leaf(
            keyword,
            lambda instance: not (isinstance(instance, kind) and fails(len(instance), limit)),
            lambda instance: f"{_repr(instance)} {phrase(limit)}",
        )

    return compile_size


def _required(v: Validator, value: Any, schema: Mapping[str, Any]) -> _Node | None:
    if not isinstance(value, list) or not all(isinstance(k, str) for k in value):
        raise SchemaError(f"required must be an array of strings, not {_repr(value)}")
    names = tuple(value)

    def valid(instance: Any) -> bool:
        if isinstance(instance, dict):
            for name in names:
                if name not in instance:
                    return False
        return True

    def explain(instance: Any, path: str) -> Iterator[_Error]:
        for name in names:
            if name not in instance:
                yield _Error(path, f"{name!r} is a required property", "required")

    return _Node(valid, explain)


def _subschemas(v: Validator, keyword: str, value: Any) -> dict[str, _Node]:
    if not isinstance(value, Mapping):
        raise SchemaError(f"{keyword} must be an object of schemas, not {_repr(value)}")
    return {key: v.compile(sub) for key, sub in value.items()}


def _properties(v: Validator, value: Any, schema: Mapping[str, Any]) -> _Node | None:
    nodes = _subschemas(v, "properties", value)
    checks = {key: node.valid for key, node in nodes.items() if not node.trivial}
    if not checks:
        return None

    def valid(instance: Any) -> bool:
        if isinstance(instance, dict):
            for key, item in instance.items():
                check = checks.get(key)
                if check is not None and not check(item):
                    return False
        return True

    def explain(instance: Any, path: str) -> Iterator[_Error]:
        for key, node in nodes.items():  # schema order, as jsonschema reports
            if key in instance and not node.valid(instance[key]):
                yield from node.explain(instance[key], child_path(path, key))

    return _Node(valid, explain)


def _regex(pattern: str) -> re.Pattern[str]:
    try:
        return re.compile(pattern)
    except re.error as exc:
        raise SchemaError(f"invalid regular expression {pattern!r}: {exc}") from None


def _pattern(v: Validator, value: Any, schema: Mapping[str, Any]) -> _Node | None:
    if not isinstance(value, str):
        raise SchemaError(f"pattern must be a string, not {_repr(value)}")
    regex = _regex(value)
    return _leaf(
        "pattern",
        lambda instance: not isinstance(instance, str) or regex.search(instance) is not None,
        lambda instance: f"{_repr(instance)} does not match {value!r}",
    )


def _pattern_properties(v: Validator, value: Any, schema: Mapping[str, Any]) -> _Node | None:
    nodes = _subschemas(v, "patternProperties", value)
    pairs = tuple((_regex(pattern), node) for pattern, node in nodes.items())

    def valid(instance: Any) -> bool:
        if isinstance(instance, dict):
            for regex, node in pairs:
                for key, item in instance.items():
                    if regex.search(key) and not node.valid(item):
                        return False
        return True

    def explain(instance: Any, path: str) -> Iterator[_Error]:
        for regex, node in pairs:
            for key, item in instance.items():
                if regex.search(key) and not node.valid(item):
                    yield from node.explain(item, child_path(path, key))

    return _Node(valid, explain)


def _additional_properties(v: Validator, value: Any, schema: Mapping[str, Any]) -> _Node | None:
    node = v.compile(value)
    if node.trivial:
        return None
    declared = schema.get("properties", {})
    patterns = schema.get("patternProperties", {})
    # jsonschema joins the patterns into one alternation; so do we, to agree
    # on every pattern, odd ones included.
    joined = _regex("|".join(patterns)) if patterns else None

    def extras(instance: dict[str, Any]) -> list[str]:
        return [k for k in instance if k not in declared and not (joined is not None and joined.search(k))]

    valid: _Valid
    if value is False:

        def valid(instance: Any) -> bool:
            return not isinstance(instance, dict) or not extras(instance)

        def explain(instance: Any, path: str) -> Iterator[_Error]:
            found = sorted(extras(instance))
            listed = ", ".join(repr(k) for k in found)
            if patterns:
                verb = "does" if len(found) == 1 else "do"
                regexes = ", ".join(repr(p) for p in sorted(patterns))
                yield _Error(path, f"{listed} {verb} not match any of the regexes: {regexes}", "additionalProperties")
            else:
                verb = "was" if len(found) == 1 else "were"
                message = f"Additional properties are not allowed ({listed} {verb} unexpected)"
                yield _Error(path, message, "additionalProperties")

    else:
        check = node.valid

        def valid(instance: Any) -> bool:
            if isinstance(instance, dict):
                for key in extras(instance):
                    if not check(instance[key]):
                        return False
            return True

        def explain(instance: Any, path: str) -> Iterator[_Error]:
            for key in extras(instance):
                if not check(instance[key]):
                    yield from node.explain(instance[key], child_path(path, key))

    return _Node(valid, explain)


def _items(v: Validator, value: Any, schema: Mapping[str, Any]) -> _Node | None:
    if isinstance(value, list):  # a tuple: one schema per position
        nodes = [v.compile(sub) for sub in value]

        def valid(instance: Any) -> bool:
            return not isinstance(instance, list) or all(n.valid(item) for n, item in zip(nodes, instance))

        def explain(instance: Any, path: str) -> Iterator[_Error]:
            for i, (node, item) in enumerate(zip(nodes, instance)):
                if not node.valid(item):
                    yield from node.explain(item, child_path(path, i))

        return _Node(valid, explain)
    node = v.compile(value)
    if node.trivial:
        return None
    check = node.valid

    def valid_each(instance: Any) -> bool:
        if isinstance(instance, list):
            for item in instance:
                if not check(item):
                    return False
        return True

    def explain_each(instance: Any, path: str) -> Iterator[_Error]:
        for i, item in enumerate(instance):
            if not check(item):
                yield from node.explain(item, child_path(path, i))

    return _Node(valid_each, explain_each)


def _additional_items(v: Validator, value: Any, schema: Mapping[str, Any]) -> _Node | None:
    items = schema.get("items", {})
    if isinstance(items, dict):  # one schema for every item (or none): nothing is additional
        return None
    if not isinstance(items, list):  # jsonschema itself fails on this (len() of a bool)
        raise SchemaError("additionalItems needs items to be an array of schemas or an object")
    start = len(items)
    node = v.compile(value)
    if node.trivial:
        return None

    def valid(instance: Any) -> bool:
        return not isinstance(instance, list) or all(node.valid(item) for item in instance[start:])

    def explain(instance: Any, path: str) -> Iterator[_Error]:
        if value is False:
            extra = instance[start:]
            listed = ", ".join(_repr(item) for item in extra)
            verb = "was" if len(extra) == 1 else "were"
            yield _Error(path, f"Additional items are not allowed ({listed} {verb} unexpected)", "additionalItems")
            return
        for i, item in enumerate(instance[start:], start):
            if not node.valid(item):
                yield from node.explain(item, child_path(path, i))

    return _Node(valid, explain)


def _all_of_keyword(v: Validator, value: Any, schema: Mapping[str, Any]) -> _Node | None:
    nodes = [v.compile(sub) for sub in _schema_list("allOf", value)]

    def explain(instance: Any, path: str) -> Iterator[_Error]:
        for node in nodes:
            if not node.valid(instance):
                yield from node.explain(instance, path)

    return _Node(_all_of(nodes), explain)


def _closest(nodes: Sequence[_Node], instance: Any, path: str) -> str:
    """The reasons of the branch that came closest, for a failed anyOf/oneOf.

    A branch that rejects the instance's type, or a discriminator (an
    ``enum``/``const`` such as ThreadItem's ``type``), is further away than
    one that only misses a field; fewer reasons is closer still.
    """
    best: tuple[tuple[int, int, int], _Error] | None = None
    for node in nodes:
        reasons = list(node.explain(instance, path))
        distance = (
            sum(r.keyword in ("type", "false") and r.path == path for r in reasons),
            sum(r.keyword in ("enum", "const") for r in reasons),
            len(reasons),
        )
        if best is None or distance < best[0]:
            best = (distance, reasons[0])
    if best is None:
        return ""
    reason = best[1]
    return f" (closest branch: {reason.path}: {reason.message})"


def _any_of(v: Validator, value: Any, schema: Mapping[str, Any]) -> _Node | None:
    nodes = [v.compile(sub) for sub in _schema_list("anyOf", value)]
    checks = tuple(node.valid for node in nodes)

    def valid(instance: Any) -> bool:
        for check in checks:
            if check(instance):
                return True
        return False

    def explain(instance: Any, path: str) -> Iterator[_Error]:
        message = f"{_repr(instance)} is not valid under any of the given schemas"
        yield _Error(path, message + _closest(nodes, instance, path), "anyOf")

    return _Node(valid, explain)


def _one_of(v: Validator, value: Any, schema: Mapping[str, Any]) -> _Node | None:
    nodes = [v.compile(sub) for sub in _schema_list("oneOf", value)]
    checks = tuple(node.valid for node in nodes)

    def valid(instance: Any) -> bool:
        found = False
        for check in checks:
            if check(instance):
                if found:
                    return False
                found = True
        return found

    def explain(instance: Any, path: str) -> Iterator[_Error]:
        matched = [i for i, check in enumerate(checks) if check(instance)]
        if matched:
            message = f"{_repr(instance)} is valid under more than one of the given schemas (branches {matched})"
            yield _Error(path, message, "oneOf")
        else:
            message = f"{_repr(instance)} is not valid under any of the given schemas"
            yield _Error(path, message + _closest(nodes, instance, path), "oneOf")

    return _Node(valid, explain)


def _not(v: Validator, value: Any, schema: Mapping[str, Any]) -> _Node | None:
    node = v.compile(value)
    return _leaf(
        "not",
        lambda instance: not node.valid(instance),
        lambda instance: f"{_repr(instance)} should not be valid under {_repr(value)}",
    )


def _annotation(v: Validator, value: Any, schema: Mapping[str, Any]) -> _Node | None:
    return None


def _ref(v: Validator, value: Any, schema: Mapping[str, Any]) -> _Node | None:
    return v._ref(value)


#: Every keyword this validator knows; any other raises :class:`SchemaError`.
#: "codex" marks the ones the codex 0.149.1 and 0.171.0 bundles use (checked by
#: ``test_jsonschema_stdlib_keyword_table_covers_the_bundles``); the rest are
#: cheap Draft 7 neighbours, kept so a codex release that starts using one
#: does not stop the smoke run.
KEYWORDS: Mapping[str, _Compiler] = {
    # -- annotations: no effect on accept/reject ------------------------------
    "$schema": _schema_uri,  # codex; must name Draft 7
    "$comment": _annotation,
    "title": _annotation,  # codex
    "description": _annotation,  # codex
    "default": _annotation,  # codex
    "examples": _annotation,
    "format": _annotation,  # codex; Draft7Validator checks no format unless given a format checker
    "definitions": _annotation,  # codex; a container, reached through $ref
    # Draft 2019's container: Draft7Validator ignores the keyword and resolves
    # "#/$defs/X" as a JSON pointer, as this validator does.  Output schemas
    # (pydantic's model_json_schema()) use it.
    "$defs": _annotation,
    # -- any instance -----------------------------------------------------------
    "type": _type,  # codex
    "enum": _enum,  # codex (strings; 0.171.0 also [1])
    "const": _const,
    "allOf": _all_of_keyword,  # codex
    "anyOf": _any_of,  # codex
    "oneOf": _one_of,  # codex
    "not": _not,
    # -- numbers ----------------------------------------------------------------
    "minimum": _bound("minimum", lambda x, m: x < m, "less than the minimum of"),  # codex
    "maximum": _bound("maximum", lambda x, m: x > m, "greater than the maximum of"),
    "exclusiveMinimum": _bound("exclusiveMinimum", lambda x, m: x <= m, "less than or equal to the minimum of"),
    "exclusiveMaximum": _bound("exclusiveMaximum", lambda x, m: x >= m, "greater than or equal to the maximum of"),
    # -- strings and arrays -----------------------------------------------------
    "minLength": _size(  # codex
        "minLength", str, lambda n, m: n < m, lambda m: "should be non-empty" if m == 1 else "is too short"
    ),
    "maxLength": _size(
        "maxLength", str, lambda n, m: n > m, lambda m: "is expected to be empty" if m == 0 else "is too long"
    ),
    "pattern": _pattern,  # output schemas; re.search, like jsonschema
    "minItems": _size(
        "minItems", list, lambda n, m: n < m, lambda m: "should be non-empty" if m == 1 else "is too short"
    ),
    "maxItems": _size(
        "maxItems", list, lambda n, m: n > m, lambda m: "is expected to be empty" if m == 0 else "is too long"
    ),
    "items": _items,  # codex (a schema or true; an array of schemas is supported too)
    "additionalItems": _additional_items,
    # -- objects ----------------------------------------------------------------
    "required": _required,  # codex
    "properties": _properties,  # codex
    "patternProperties": _pattern_properties,
    "additionalProperties": _additional_properties,  # codex (true, false and schemas)
    # -- references: a schema with $ref is that $ref alone (its siblings are ignored) --
    "$ref": _ref,  # codex; local JSON pointers only, resolved lazily
}

#: The order ``valid`` tries keywords in: the cheap, most selective ones
#: first.  It cannot change a verdict (every keyword must pass), only its cost.
_FIRST = {"type": 0, "enum": 1, "const": 1, "required": 2}


# ---------------------------------------------------------------------------
# The validator


class Validator:
    """Validate instances against the schemas of one JSON Schema document.

    ``document`` is the root schema (a codex bundle); ``$ref``\\ s resolve
    against it.  Schemas are given as objects or as local JSON pointers
    (``"#/definitions/v2/ThreadItem"``).  Compiled nodes are kept for the
    validator's lifetime, keyed by schema identity, so reuse one validator.
    """

    def __init__(self, document: Schema) -> None:
        self.document = document
        self._nodes: dict[int, tuple[Schema, _Node]] = {}  # id(schema) → (schema kept alive, node)
        self._refs: dict[str, _Node] = {}
        self._unresolved: list[Callable[[], _Node]] = []  # $ref targets not compiled yet

    def resolve(self, pointer: str) -> Schema:
        """The schema at a local JSON pointer (``#``, ``#/definitions/X``);
        :class:`SchemaError` if there is none."""
        if not pointer.startswith("#") or (len(pointer) > 1 and pointer[1] != "/"):
            raise SchemaError(f"only local JSON pointers ('#/...') are supported, not {pointer!r}")
        node: Any = self.document
        for part in unquote(pointer[2:]).split("/") if len(pointer) > 1 else ():
            part = part.replace("~1", "/").replace("~0", "~")
            try:
                node = node[int(part)] if isinstance(node, list) else node[part]
            except (KeyError, IndexError, ValueError, TypeError):
                raise SchemaError(f"$ref {pointer!r} points at nothing in the document") from None
        return node  # type: ignore[no-any-return]

    def compile(self, schema: SchemaOrPointer) -> _Node:
        """The compiled node of a schema (built once); :class:`SchemaError`
        for anything outside :data:`KEYWORDS`.  Subschemas are compiled now,
        ``$ref`` targets on first use."""
        if isinstance(schema, str):
            schema = self.resolve(schema)
        if schema is True:
            return _ANY
        if schema is False:
            return _NOTHING
        if not isinstance(schema, Mapping):
            raise SchemaError(f"a schema must be an object or a boolean, not {_repr(schema)}")
        cached = self._nodes.get(id(schema))
        if cached is not None:
            return cached[1]
        node = self._compile_keywords(schema)
        self._nodes[id(schema)] = (schema, node)
        return node

    def _compile_keywords(self, schema: Mapping[str, Any]) -> _Node:
        # Draft 7 ignores every sibling of $ref (jsonschema's ignore_ref_siblings).
        pairs = [("$ref", schema["$ref"])] if "$ref" in schema else list(schema.items())
        unknown = sorted(k for k, _ in pairs if k not in KEYWORDS)
        if unknown:
            raise SchemaError(f"unsupported JSON Schema keyword(s) {unknown}; supported: {sorted(KEYWORDS)}")
        compiled = [(keyword, KEYWORDS[keyword](self, value, schema)) for keyword, value in pairs]
        nodes = [node for _, node in compiled if node is not None]
        if not nodes:
            return _ANY
        by_cost = sorted(compiled, key=lambda pair: _FIRST.get(pair[0], 3))
        valid = _all_of([node for _, node in by_cost if node is not None])

        def explain(instance: Any, path: str) -> Iterator[_Error]:
            for node in nodes:  # schema order, like jsonschema
                if not node.valid(instance):
                    yield from node.explain(instance, path)

        return _Node(valid, explain)

    def _ref(self, ref: Any) -> _Node:
        if not isinstance(ref, str):
            raise SchemaError(f"$ref must be a string, not {_repr(ref)}")
        node = self._refs.get(ref)
        if node is not None:
            return node
        target_schema = self.resolve(ref)  # a dangling pointer fails now; compiling waits
        chain = [ref]
        while isinstance(target_schema, Mapping) and isinstance(target_schema.get("$ref"), str):
            # $ref to $ref to ... back again: no schema at all, and endless recursion on first use.
            if target_schema["$ref"] in chain:
                raise SchemaError(f"$ref cycle without a schema: {' -> '.join([*chain, target_schema['$ref']])}")
            chain.append(target_schema["$ref"])
            target_schema = self.resolve(target_schema["$ref"])
        target: _Node | None = None

        def resolved() -> _Node:
            nonlocal target
            if target is None:
                target = self.compile(target_schema)
            return target

        def valid(instance: Any) -> bool:
            return resolved().valid(instance)

        def explain(instance: Any, path: str) -> Iterator[_Error]:
            return resolved().explain(instance, path)

        self._unresolved.append(resolved)
        node = self._refs[ref] = _Node(valid, explain)
        return node

    def check_schema(self, schema: SchemaOrPointer) -> None:
        """Compile ``schema`` and, transitively, every ``$ref`` target now:
        raises the :class:`SchemaError` that validation would otherwise raise
        on first use of the offending part."""
        self.compile(schema)
        while self._unresolved:
            self._unresolved.pop()()

    def is_valid(self, instance: Any, schema: SchemaOrPointer = "#") -> bool:
        return self.compile(schema).valid(instance)

    def errors(self, instance: Any, schema: SchemaOrPointer = "#", path: str = "$") -> list[tuple[str, str]]:
        """``(json_path, message)`` for each reason ``instance`` is invalid;
        empty when it is valid.  ``path`` names the instance."""
        node = self.compile(schema)
        if node.valid(instance):
            return []
        return [(error.path, error.message) for error in node.explain(instance, path)]


__all__ = ["DRAFT7", "KEYWORDS", "Schema", "SchemaError", "SchemaOrPointer", "Validator", "child_path"]
