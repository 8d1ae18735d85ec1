"""The standard-library validator (``codexmini._jsonschema``) against jsonschema.

The smoke run validates frames with the stdlib validator when it runs from a
vendored copy, so its verdicts must be jsonschema's.  Three kinds of proof:

* **keywords, one by one**: a table of (schema, instance, verdict) edge cases
  -- bool vs integer, 1.0 vs 1, JSON equality in ``enum``/``const``,
  exactly-one ``oneOf``, boolean schemas, recursive ``$ref`` -- where both
  validators must give the verdict written in the table;
* **random schemas**: seeded random schemas over the supported keywords and
  random instances, where the two must agree on every pair;
* **the real thing**: every recorded frame (``fixtures/*/*.frames.jsonl``)
  against the definitions it routes to, in every codex bundle found (the
  versions under ``fixtures/schema/`` plus 0.171.0 from ``.cache`` when
  the drift tool has generated it), and systematic, seeded mutations of those
  frames (a key dropped, a type changed, an enum value replaced ...).

A failure prints the counts and the first disagreements.
"""

from __future__ import annotations

import copy
import decimal
import enum
import functools
import json
import os
import random
from collections import Counter
from typing import Any, Callable, Dict, Iterator, List, Optional, Tuple

import jsonschema
import pytest
from support.recorded_frames import FRAME_FILES, frame_count, recorded, routed

from codexmini import CODEX_VERSION, _schema
from codexmini._jsonschema import DRAFT7, KEYWORDS, SchemaError, Validator, child_path
from conformance.schema import JSONSCHEMA, fixture_versions

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
#: Versions checked even before their schema is a fixture: the latest
#: release, whose bundles the drift tool leaves in ``.cache`` (``make drift
#: TO=0.171.0`` for the experimental flavor, ``--flavor stable`` for the other).
WANTED = ("0.171.0",)


def both(schema: Any, instance: Any, document: Optional[Dict[str, Any]] = None) -> Tuple[bool, bool]:
    """(stdlib verdict, jsonschema verdict) of ``instance`` against ``schema``,
    whose ``$ref``s resolve in ``document`` (default: the schema itself)."""
    root = schema if document is None else document
    ours = Validator(root).is_valid(instance, schema)
    theirs = jsonschema.Draft7Validator(root).evolve(schema=schema).is_valid(instance)
    return ours, theirs


# ---------------------------------------------------------------------------
# Keywords, one by one


class Color(enum.IntEnum):
    RED = 1


class Real(float):
    pass


TREE = {
    "definitions": {
        "node": {
            "type": "object",
            "required": ["name"],
            "properties": {
                "name": {"type": "string"},
                "children": {"type": "array", "items": {"$ref": "#/definitions/node"}},
            },
        },
        "v2": {"Nested": {"enum": ["deep"]}},
        "odd/name~": {"const": 1},
    },
    "$ref": "#/definitions/node",
}

#: (id, schema, instance, what Draft 7 says)
CASES: List[Tuple[str, Any, Any, bool]] = [
    # -- type: Draft 7's JSON types, not Python's
    ("integer-int", {"type": "integer"}, 1, True),
    ("integer-integral-float", {"type": "integer"}, 1.0, True),
    ("integer-fraction", {"type": "integer"}, 1.5, False),
    ("integer-bool", {"type": "integer"}, True, False),
    ("integer-string", {"type": "integer"}, "1", False),
    ("integer-intenum", {"type": "integer"}, Color.RED, True),
    ("integer-float-subclass", {"type": "integer"}, Real(2.0), True),
    ("integer-float-subclass-fraction", {"type": "integer"}, Real(2.5), False),
    ("integer-decimal", {"type": "integer"}, decimal.Decimal("1"), False),
    ("integer-huge", {"type": "integer"}, 10**30, True),
    ("number-bool", {"type": "number"}, False, False),
    ("number-float", {"type": "number"}, 0.5, True),
    ("number-decimal", {"type": "number"}, decimal.Decimal("0.5"), True),
    ("number-string", {"type": "number"}, "0.5", False),
    ("boolean-bool", {"type": "boolean"}, False, True),
    ("boolean-int", {"type": "boolean"}, 0, False),
    ("null-none", {"type": "null"}, None, True),
    ("null-zero", {"type": "null"}, 0, False),
    ("object-dict", {"type": "object"}, {}, True),
    ("object-list", {"type": "object"}, [], False),
    ("array-list", {"type": "array"}, [], True),
    ("array-tuple", {"type": "array"}, (), False),
    ("string-str", {"type": "string"}, "", True),
    ("nullable-string-null", {"type": ["string", "null"]}, None, True),
    ("nullable-string-int", {"type": ["string", "null"]}, 3, False),
    ("string-or-integer-float", {"type": ["string", "integer"]}, 3.0, True),
    ("string-or-integer-bool", {"type": ["string", "integer"]}, True, False),
    ("integer-or-number-fraction", {"type": ["integer", "number"]}, 0.25, True),
    ("integer-or-number-null", {"type": ["integer", "number"]}, None, False),
    # -- enum and const: JSON equality (1 == 1.0, True != 1, deep)
    ("enum-string-in", {"enum": ["a", "b"]}, "a", True),
    ("enum-string-out", {"enum": ["a", "b"]}, "c", False),
    ("enum-string-vs-int", {"enum": ["1"]}, 1, False),
    ("enum-string-vs-list", {"enum": ["a"]}, ["a"], False),
    ("enum-one-int", {"enum": [1]}, 1, True),
    ("enum-one-float", {"enum": [1]}, 1.0, True),
    ("enum-one-true", {"enum": [1]}, True, False),
    ("enum-true-one", {"enum": [True]}, 1, False),
    ("enum-true-true", {"enum": [True]}, True, True),
    ("enum-zero-false", {"enum": [0]}, False, False),
    ("enum-null-zero", {"enum": [None]}, 0, False),
    ("enum-null-null", {"enum": [None, "x"]}, None, True),
    ("enum-deep-list", {"enum": [[1, True]]}, [1.0, True], True),
    ("enum-deep-list-bool", {"enum": [[1, True]]}, [1, 1], False),
    ("enum-deep-list-length", {"enum": [[1]]}, [1, 1], False),
    ("enum-deep-object", {"enum": [{"a": 1}]}, {"a": 1.0}, True),
    ("enum-deep-object-bool", {"enum": [{"a": 1}]}, {"a": True}, False),
    ("enum-deep-object-extra", {"enum": [{"a": 1}]}, {"a": 1, "b": 2}, False),
    ("enum-deep-object-other-key", {"enum": [{"a": 1}]}, {"b": 1}, False),
    ("enum-empty", {"enum": []}, None, False),
    ("const-float-int", {"const": 1.0}, 1, True),
    ("const-float-true", {"const": 1.0}, True, False),
    ("const-string", {"const": "x"}, "x", True),
    ("const-object-order", {"const": {"a": [1, {"b": None}]}}, {"a": [1.0, {"b": None}]}, True),
    # -- numbers: only numbers are bounded (a bool is not one)
    ("minimum-below", {"minimum": 0}, -1, False),
    ("minimum-equal", {"minimum": 0.0}, 0, True),
    ("minimum-bool", {"minimum": 5}, True, True),
    ("minimum-string", {"minimum": 5}, "1", True),
    ("maximum-above", {"maximum": 1}, 1.5, False),
    ("maximum-equal", {"maximum": 1}, 1, True),
    ("exclusive-minimum-equal", {"exclusiveMinimum": 1}, 1, False),
    ("exclusive-minimum-above", {"exclusiveMinimum": 1}, 1.01, True),
    ("exclusive-maximum-equal", {"exclusiveMaximum": 1}, 1.0, False),
    ("exclusive-maximum-below", {"exclusiveMaximum": 1}, 0, True),
    # -- lengths count code points; other types are not measured
    ("min-length-empty", {"minLength": 1}, "", False),
    ("min-length-code-point", {"minLength": 1}, "é", True),
    ("min-length-not-string", {"minLength": 3}, 12, True),
    ("min-length-integral-float", {"minLength": 2.0}, "a", False),
    ("max-length-long", {"maxLength": 1}, "ab", False),
    ("max-length-zero", {"maxLength": 0}, "", True),
    ("min-items-short", {"minItems": 2}, [1], False),
    ("min-items-not-array", {"minItems": 2}, "x", True),
    ("max-items-long", {"maxItems": 1}, [1, 2], False),
    # -- objects
    ("required-missing", {"required": ["a", "b"]}, {"a": 1}, False),
    ("required-present", {"required": ["a"]}, {"a": None}, True),
    ("required-not-object", {"required": ["a"]}, ["a"], True),
    ("properties-bad-value", {"properties": {"a": {"type": "string"}}}, {"a": 1}, False),
    ("properties-absent", {"properties": {"a": {"type": "string"}}}, {"b": 1}, True),
    ("properties-not-object", {"properties": {"a": {"type": "string"}}}, "a", True),
    ("properties-true", {"properties": {"a": True}}, {"a": 1}, True),
    ("properties-false", {"properties": {"a": False}}, {"a": 1}, False),
    ("pattern-properties-match", {"patternProperties": {"^x": {"type": "integer"}}}, {"x1": "s"}, False),
    ("pattern-properties-miss", {"patternProperties": {"^x": {"type": "integer"}}}, {"y": "s"}, True),
    ("pattern-properties-search", {"patternProperties": {"1": {"type": "integer"}}}, {"a1b": 2}, True),
    ("additional-false-extra", {"properties": {"a": {}}, "additionalProperties": False}, {"a": 1, "z": 2}, False),
    ("additional-false-none", {"properties": {"a": {}}, "additionalProperties": False}, {"a": 1}, True),
    ("additional-false-not-object", {"additionalProperties": False}, [1], True),
    (
        "additional-false-pattern",
        {"patternProperties": {"^x": {}, "^y": {}}, "additionalProperties": False},
        {"x1": 1, "y": 2},
        True,
    ),
    (
        "additional-false-pattern-extra",
        {"patternProperties": {"^x": {}}, "additionalProperties": False},
        {"z": 1},
        False,
    ),
    (
        "additional-schema",
        {"properties": {"a": {}}, "additionalProperties": {"type": "string"}},
        {"a": 1, "z": 2},
        False,
    ),
    ("additional-schema-ok", {"additionalProperties": {"type": "string"}}, {"z": "s"}, True),
    ("additional-true", {"additionalProperties": True}, {"z": 1}, True),
    # -- arrays
    ("items-schema", {"items": {"type": "integer"}}, [1, 2.0, "x"], False),
    ("items-schema-ok", {"items": {"type": "integer"}}, [1, 2.0], True),
    ("items-not-array", {"items": {"type": "integer"}}, {"0": "x"}, True),
    ("items-true", {"items": True}, [None], True),
    ("items-false-empty", {"items": False}, [], True),
    ("items-false", {"items": False}, [1], False),
    ("items-tuple-extra-unchecked", {"items": [{"type": "integer"}]}, [1, "x"], True),
    ("items-tuple-bad", {"items": [{"type": "integer"}]}, ["x"], False),
    ("items-tuple-short", {"items": [{"type": "integer"}, {"type": "string"}]}, [1], True),
    ("items-tuple-not-array", {"items": [{"type": "integer"}]}, "x", True),
    ("additional-items-false", {"items": [{}], "additionalItems": False}, [1, 2], False),
    ("additional-items-false-ok", {"items": [{}], "additionalItems": False}, [1], True),
    ("additional-items-schema", {"items": [{}], "additionalItems": {"type": "string"}}, [1, "a", 2], False),
    ("additional-items-not-array", {"items": [{}], "additionalItems": False}, {"a": 1}, True),
    ("additional-items-beside-schema-items", {"items": {}, "additionalItems": False}, [1, 2], True),
    ("additional-items-without-items", {"additionalItems": False}, [1, 2], True),
    ("additional-items-true", {"items": [{}], "additionalItems": True}, [1, 2], True),
    # -- combinators
    ("any-of-one", {"anyOf": [{"type": "integer"}, {"type": "string"}]}, "x", True),
    ("any-of-none", {"anyOf": [{"type": "integer"}, {"type": "string"}]}, None, False),
    ("any-of-empty", {"anyOf": []}, 1, False),
    ("one-of-exactly-one", {"oneOf": [{"type": "integer"}, {"type": "number"}]}, 1.5, True),
    ("one-of-two", {"oneOf": [{"type": "integer"}, {"type": "number"}]}, 1, False),
    ("one-of-none", {"oneOf": [{"type": "integer"}, {"type": "number"}]}, "x", False),
    ("one-of-empty", {"oneOf": []}, 1, False),
    ("all-of-both", {"allOf": [{"minimum": 0}, {"maximum": 2}]}, 1, True),
    ("all-of-one-fails", {"allOf": [{"minimum": 0}, {"maximum": 2}]}, 3, False),
    ("all-of-empty", {"allOf": []}, 1, True),
    ("all-of-trivial", {"allOf": [True, {}]}, 1, True),
    ("not-matches", {"not": {"type": "string"}}, "x", False),
    ("not-differs", {"not": {"type": "string"}}, 1, True),
    # -- boolean schemas
    ("true-schema", True, {"anything": [1]}, True),
    ("false-schema", False, None, False),
    ("false-schema-nested", {"properties": {"a": False}}, {}, True),
    # -- annotations do not judge
    ("format-ignored", {"format": "ipv4"}, "not an address", True),
    ("format-uint32", {"type": "integer", "format": "uint32", "minimum": 0.0}, 7, True),
    ("annotations", {"title": "t", "description": "d", "default": 1, "examples": [1], "$comment": "c"}, None, True),
    ("draft7-schema-uri", {"$schema": "http://json-schema.org/draft-07/schema#", "type": "null"}, None, True),
    ("empty-schema", {}, [1, {"a": None}], True),
]


@pytest.mark.parametrize("schema, instance, expected", [pytest.param(*case[1:], id=case[0]) for case in CASES])
def test_jsonschema_stdlib_keyword_verdicts_are_draft7s(schema, instance, expected):
    ours, theirs = both(schema, instance)
    assert (ours, theirs) == (expected, expected)


REF_CASES = [
    ("recursive-ok", "#", {"name": "a", "children": [{"name": "b", "children": [{"name": "c"}]}]}, True),
    ("recursive-deep-fail", "#", {"name": "a", "children": [{"name": "b", "children": [{"name": 3}]}]}, False),
    ("recursive-missing", "#", {"name": "a", "children": [{}]}, False),
    ("nested-definitions", {"$ref": "#/definitions/v2/Nested"}, "deep", True),
    ("nested-definitions-fail", {"$ref": "#/definitions/v2/Nested"}, "shallow", False),
    ("escaped-pointer", {"$ref": "#/definitions/odd~1name~0"}, 1, True),
    ("percent-encoded-pointer", {"$ref": "#/definitions/odd~1name%7E0"}, 2, False),
    ("ref-siblings-ignored", {"$ref": "#/definitions/v2/Nested", "type": "integer"}, "deep", True),
    ("ref-chain", {"$ref": "#/definitions/chain"}, "deep", True),
]


@pytest.mark.parametrize("schema, instance, expected", [pytest.param(*case[1:], id=case[0]) for case in REF_CASES])
def test_jsonschema_stdlib_refs_resolve_like_jsonschema(schema, instance, expected):
    document = copy.deepcopy(TREE)
    document["definitions"]["chain"] = {"$ref": "#/definitions/v2/Nested"}
    target = document if schema == "#" else schema
    assert both(target, instance, document) == (expected, expected)


def test_jsonschema_stdlib_pointers_reach_list_items():
    validator = Validator({"definitions": {"u": {"anyOf": [{"type": "null"}, {"type": "string"}]}}})
    assert validator.resolve("#/definitions/u/anyOf/1") == {"type": "string"}
    assert validator.is_valid("x", "#/definitions/u/anyOf/1")
    assert not validator.is_valid(None, "#/definitions/u/anyOf/1")
    assert validator.resolve("#") is validator.document


@pytest.mark.parametrize(
    "schema, fragment",
    [
        pytest.param({"multipleOf": 2}, "unsupported JSON Schema keyword(s) ['multipleOf']", id="multiple-of"),
        pytest.param({"$id": "x", "if": {}}, "['$id', 'if']", id="id-and-if"),
        pytest.param({"properties": {"a": {"uniqueItems": True}}}, "['uniqueItems']", id="nested"),
        pytest.param({"items": [{"dependencies": {}}]}, "['dependencies']", id="in-items"),
        pytest.param({"type": "float"}, "unknown type(s) ['float']", id="type-name"),
        pytest.param({"type": []}, "non-empty array", id="type-empty"),
        pytest.param({"type": 3}, "type must be", id="type-not-a-name"),
        pytest.param({"enum": "a"}, "enum must be an array", id="enum"),
        pytest.param({"minimum": "0"}, "minimum must be a number", id="minimum"),
        pytest.param({"maximum": True}, "maximum must be a number", id="maximum-bool"),
        pytest.param({"minLength": -1}, "minLength must be a non-negative integer, not -1", id="min-length"),
        pytest.param({"maxLength": "2"}, "maxLength must be a non-negative integer, not '2'", id="max-length"),
        pytest.param({"minItems": None}, "minItems must be a non-negative integer, not None", id="min-items"),
        pytest.param({"maxItems": 1.5}, "maxItems must be a non-negative integer, not 1.5", id="max-items"),
        pytest.param({"exclusiveMinimum": "0"}, "exclusiveMinimum must be a number, not '0'", id="exclusive-minimum"),
        pytest.param(
            {"exclusiveMaximum": False}, "exclusiveMaximum must be a number, not False", id="exclusive-maximum"
        ),
        pytest.param({"required": [1]}, "required must be an array of strings", id="required"),
        pytest.param({"properties": []}, "properties must be an object", id="properties"),
        pytest.param({"patternProperties": {"(": {}}}, "invalid regular expression '('", id="regex"),
        pytest.param({"patternProperties": []}, "patternProperties must be an object of schemas", id="pattern-props"),
        pytest.param({"anyOf": {}}, "anyOf must be an array", id="any-of"),
        pytest.param({"allOf": True}, "allOf must be an array of schemas, not True", id="all-of"),
        pytest.param({"oneOf": "x"}, "oneOf must be an array of schemas, not 'x'", id="one-of"),
        pytest.param({"items": 5}, "a schema must be an object or a boolean", id="items-number"),
        pytest.param({"items": True, "additionalItems": False}, "additionalItems needs items", id="additional-items"),
        pytest.param({"$schema": "http://json-schema.org/draft-04/schema#"}, "only Draft 7", id="draft4"),
        pytest.param({"$ref": 7}, "$ref must be a string", id="ref-type"),
        pytest.param({"$ref": "other.json#/x"}, "only local JSON pointers", id="ref-remote"),
        pytest.param({"$ref": "#anchor"}, "only local JSON pointers", id="ref-anchor"),
        pytest.param({"$ref": "#a"}, "only local JSON pointers", id="ref-one-letter-anchor"),
        pytest.param({"$ref": "definitions/a"}, "only local JSON pointers", id="ref-no-hash"),
        pytest.param({"$ref": "x/definitions/a"}, "only local JSON pointers", id="ref-relative-path"),
        pytest.param({"$ref": "#/definitions/nope"}, "points at nothing", id="ref-dangling"),
        pytest.param({"$ref": "#/definitions/list/9"}, "points at nothing", id="ref-index"),
        pytest.param(
            {"$ref": "#/definitions/a"},
            "$ref cycle without a schema: #/definitions/a -> #/definitions/b -> #/definitions/a",
            id="ref-cycle",
        ),
        pytest.param(
            {"$ref": "#/definitions/into"},
            "$ref cycle without a schema: #/definitions/into -> #/definitions/a -> #/definitions/b -> #/definitions/a",
            id="ref-into-a-cycle",
        ),
    ],
)
def test_jsonschema_stdlib_refuses_what_it_does_not_support(schema, fragment):
    definitions = {"a": {"$ref": "#/definitions/b"}, "b": {"$ref": "#/definitions/a"}, "list": []}
    document = dict(schema, definitions=dict(definitions, into={"$ref": "#/definitions/a"}))
    with pytest.raises(SchemaError) as caught:
        Validator(document).is_valid(None, schema)
    assert fragment in str(caught.value)


def test_jsonschema_stdlib_check_schema_finds_a_bad_keyword_behind_a_ref():
    document = {"definitions": {"bad": {"multipleOf": 2}}, "properties": {"a": {"$ref": "#/definitions/bad"}}}
    validator = Validator(document)
    # Validation compiles $ref targets lazily: an instance that never reaches
    # the bad definition passes, and only check_schema refuses it up front.
    assert validator.is_valid({}, "#")
    with pytest.raises(SchemaError, match="multipleOf"):
        Validator(document).check_schema("#")
    with pytest.raises(SchemaError, match="multipleOf"):
        validator.is_valid({"a": 1}, "#")


@pytest.mark.parametrize(
    "cheap",
    [{"type": "array"}, {"enum": ["x"]}, {"const": 3}, {"required": ["b"]}],
    ids=["type", "enum", "const", "required"],
)
def test_jsonschema_stdlib_cheap_keywords_judge_before_a_lazy_ref_is_compiled(cheap):
    # type, enum/const and required are tried before the other keywords, wherever the
    # schema puts them: an instance they reject never reaches the bad definition behind
    # properties, so it is rejected instead of raising (check_schema still refuses it).
    document = {"definitions": {"bad": {"multipleOf": 2}}}
    schema = {"properties": {"a": {"$ref": "#/definitions/bad"}}, **cheap}
    assert Validator(document).is_valid({"a": 1}, schema) is False
    with pytest.raises(SchemaError, match="multipleOf"):
        Validator(document).is_valid({"a": 1}, {"properties": {"a": {"$ref": "#/definitions/bad"}}})
    with pytest.raises(SchemaError, match="multipleOf"):
        Validator(document).check_schema(schema)


def test_jsonschema_stdlib_pointer_slash_is_the_empty_key():
    # RFC 6901: "#/" names the member whose key is "" (jsonschema resolves it so too).
    document = {"": {"type": "string"}, "$ref": "#/"}
    validator = Validator(document)
    assert validator.resolve("#/") == {"type": "string"}
    assert both(document, "x") == (True, True) and both(document, 1) == (False, False)


def test_jsonschema_stdlib_compiles_each_schema_once():
    document = copy.deepcopy(TREE)
    validator = Validator(document)
    tree = {"name": "a", "children": [{"name": "b", "children": []}]}
    assert validator.is_valid(tree)
    built = dict(validator._nodes)
    assert validator.is_valid(tree) and validator.is_valid({"name": "c"})
    assert validator._nodes == built
    assert validator.compile(document["definitions"]["node"]) is validator.compile("#/definitions/node")
    # A trivial node accepts everything and so has no reasons to give.
    assert list(validator.compile(True).explain(1, "$")) == []


# ---------------------------------------------------------------------------
# Messages and paths (what a failed smoke run prints)


def test_jsonschema_stdlib_errors_name_paths_and_reasons():
    validator = Validator(copy.deepcopy(TREE))
    tree = {"name": "a", "children": [{"name": 3}, {"children": "x"}], "odd key": 1}
    assert validator.errors(tree, path="$.params") == [
        ("$.params.children[0].name", "3 is not of type 'string'"),
        ("$.params.children[1]", "'name' is a required property"),
        ("$.params.children[1].children", "'x' is not of type 'array'"),
    ]
    assert validator.errors(tree["children"][0]["name"], {"const": "a"}) == [("$", "'a' was expected")]
    assert validator.errors(tree, {"type": "object"}) == []


@pytest.mark.parametrize(
    "schema, instance, message",
    [
        ({"type": ["string", "null"]}, 1, "1 is not of type 'string', 'null'"),
        ({"enum": ["a", "b"]}, "c", "'c' is not one of ['a', 'b']"),
        ({"minimum": 0}, -1, "-1 is less than the minimum of 0"),
        ({"exclusiveMaximum": 1}, 1, "1 is greater than or equal to the maximum of 1"),
        ({"exclusiveMinimum": 1}, 1, "1 is less than or equal to the minimum of 1"),
        ({"minLength": 1}, "", "'' should be non-empty"),
        ({"minLength": 2}, "a", "'a' is too short"),
        ({"maxLength": 0}, "a", "'a' is expected to be empty"),
        ({"maxLength": 1}, "ab", "'ab' is too long"),
        ({"minItems": 1}, [], "[] should be non-empty"),
        ({"minItems": 2}, [1], "[1] is too short"),
        ({"maxItems": 0}, [1], "[1] is expected to be empty"),
        ({"maxItems": 1}, [1, 2], "[1, 2] is too long"),
        (
            {"additionalProperties": False},
            {"b": 1, "a": 2},
            "Additional properties are not allowed ('a', 'b' were unexpected)",
        ),
        ({"additionalProperties": False}, {"a": 2}, "Additional properties are not allowed ('a' was unexpected)"),
        (
            {"patternProperties": {"^x": {}}, "additionalProperties": False},
            {"a": 1},
            "'a' does not match any of the regexes: '^x'",
        ),
        (
            {"patternProperties": {"^x": {}}, "additionalProperties": False},
            {"a": 1, "b": 2},
            "'a', 'b' do not match any of the regexes: '^x'",
        ),
        (
            {"patternProperties": {"^y": {}, "^x": {}}, "additionalProperties": False},
            {"a": 1},
            "'a' does not match any of the regexes: '^x', '^y'",
        ),
        ({"items": [{}], "additionalItems": False}, [1, 2], "Additional items are not allowed (2 was unexpected)"),
        ({"items": [], "additionalItems": False}, [1, 2], "Additional items are not allowed (1, 2 were unexpected)"),
        ({"not": {"type": "null"}}, None, "None should not be valid under {'type': 'null'}"),
        (False, 1, "False schema does not allow 1"),
        ({"oneOf": [{}, True]}, 1, "1 is valid under more than one of the given schemas (branches [0, 1])"),
    ],
)
def test_jsonschema_stdlib_messages_follow_jsonschema(schema, instance, message):
    assert Validator({}).errors(instance, schema) == [("$", message)]


def test_jsonschema_stdlib_nested_errors_carry_their_paths():
    validator = Validator({})
    assert validator.errors({"z": 1}, {"additionalProperties": {"type": "string"}}) == [
        ("$.z", "1 is not of type 'string'")
    ]
    assert validator.errors({"x-1": "s"}, {"patternProperties": {"^x": {"type": "integer"}}}) == [
        ('$["x-1"]', "'s' is not of type 'integer'")
    ]
    assert validator.errors([1, "a", 2], {"items": [{}], "additionalItems": {"type": "string"}}) == [
        ("$[2]", "2 is not of type 'string'")
    ]
    assert validator.errors([1, "a"], {"items": [{"type": "string"}, {}]}) == [("$[0]", "1 is not of type 'string'")]
    assert validator.errors(5, {"allOf": [{"minimum": 1}, {"maximum": 2}]}) == [
        ("$", "5 is greater than the maximum of 2")
    ]


def test_jsonschema_stdlib_failed_union_names_the_closest_branch():
    union = {
        "oneOf": [
            {"type": "object", "required": ["type"], "properties": {"type": {"enum": ["a"]}, "n": {"type": "integer"}}},
            {"type": "object", "required": ["type", "n"], "properties": {"type": {"enum": ["b"]}}},
            {"type": "string"},
        ]
    }
    # Branch b matches the discriminator and misses a field: it is the closest.
    ((where, message),) = Validator({}).errors({"type": "b"}, union)
    assert where == "$"
    assert message == (
        "{'type': 'b'} is not valid under any of the given schemas (closest branch: $: 'n' is a required property)"
    )
    ((_, any_message),) = Validator({}).errors(None, {"anyOf": [{"type": "string"}, {"enum": ["x"]}]})
    assert any_message.endswith("(closest branch: $: None is not one of ['x'])")
    assert Validator({}).errors(1, {"anyOf": []}) == [("$", "1 is not valid under any of the given schemas")]


def test_jsonschema_stdlib_cuts_long_instances_in_messages():
    ((_, message),) = Validator({}).errors("x" * 1000, {"type": "integer"})
    assert message.startswith("'xxx") and message.endswith("… is not of type 'integer'")
    assert len(message) < 250


def test_jsonschema_stdlib_messages_show_200_characters_of_an_instance_whole_and_cut_a_longer_one():
    whole, longer = "x" * 198, "x" * 199  # their reprs: 200 and 201 characters
    assert Validator({}).errors(whole, {"type": "integer"}) == [("$", f"'{whole}' is not of type 'integer'")]
    assert Validator({}).errors(longer, {"type": "integer"}) == [("$", f"'{longer}… is not of type 'integer'")]


def test_jsonschema_stdlib_closest_branch_ties_go_to_the_first_and_show_its_first_reason():
    ((_, tie),) = Validator({}).errors({}, {"anyOf": [{"required": ["a"]}, {"required": ["b"]}]})
    assert tie.endswith("(closest branch: $: 'a' is a required property)")
    ((_, first),) = Validator({}).errors({}, {"anyOf": [{"required": ["a", "b"]}, {"type": "string"}]})
    assert first.endswith("(closest branch: $: 'a' is a required property)")


def test_jsonschema_stdlib_closest_branch_counts_false_and_const_as_far():
    # A false branch is as far as a type mismatch, though it gives one reason only.
    ((_, message),) = Validator({}).errors({}, {"anyOf": [False, {"required": ["a", "b"]}]})
    assert message.endswith("(closest branch: $: 'a' is a required property)")
    # A const discriminator that differs is far, like an enum's.
    union = {
        "oneOf": [
            {"required": ["type"], "properties": {"type": {"const": "a"}}},
            {"required": ["type", "n"], "properties": {"type": {"const": "b"}}},
        ]
    }
    ((_, message),) = Validator({}).errors({"type": "b"}, union)
    assert message.endswith("(closest branch: $: 'n' is a required property)")


def test_jsonschema_stdlib_pattern_properties_explain_only_the_matching_keys():
    schema = {"patternProperties": {"^x": {"type": "integer"}}}
    assert Validator({}).errors({"x": "s", "y": "t"}, schema) == [("$.x", "'s' is not of type 'integer'")]


def test_jsonschema_stdlib_child_path_quotes_odd_keys():
    assert child_path("$", "params") == "$.params"
    assert child_path("$.a", 3) == "$.a[3]"
    assert child_path("$", "odd key") == '$["odd key"]'
    assert child_path("$", "_x1") == "$._x1"
    assert child_path("$", "1x") == '$["1x"]'


# ---------------------------------------------------------------------------
# Random schemas over the supported keywords

_SCALARS = [None, True, False, 0, 1, -1, 1.0, 0.0, 1.5, -0.5, 2, 10, "", "a", "ab", "abc", "1", "true"]
_TYPES = ["array", "boolean", "integer", "null", "number", "object", "string"]
_KEYS = ["a", "b", "c", "x1", "y"]


def random_instance(rng: random.Random, depth: int = 0) -> Any:
    roll = rng.random()
    if depth > 2 or roll < 0.5:
        return rng.choice(_SCALARS)
    if roll < 0.75:
        return [random_instance(rng, depth + 1) for _ in range(rng.randrange(4))]
    return {rng.choice(_KEYS): random_instance(rng, depth + 1) for _ in range(rng.randrange(4))}


def random_schema(rng: random.Random, depth: int = 0, refs: bool = True) -> Any:
    """A schema of 1-3 supported keywords.  ``$ref`` only where it consumes
    structure or points at a ref-free definition, so no schema loops forever
    (jsonschema would hit the recursion limit too)."""
    if rng.random() < 0.1:
        return rng.choice([True, False])

    def sub() -> Any:
        return random_schema(rng, depth + 1, refs)

    makers: Dict[str, Callable[[], Any]] = {
        "type": lambda: rng.choice(_TYPES) if rng.random() < 0.6 else rng.sample(_TYPES, rng.randrange(1, 4)),
        "enum": lambda: [random_instance(rng, 2) for _ in range(rng.randrange(4))],
        "const": lambda: random_instance(rng, 1),
        "minimum": lambda: rng.choice([0, 1, 0.5, -1, 1.0]),
        "maximum": lambda: rng.choice([0, 1, 0.5, 2]),
        "exclusiveMinimum": lambda: rng.choice([0, 1, 0.5]),
        "exclusiveMaximum": lambda: rng.choice([0, 1, 2.0]),
        "minLength": lambda: rng.choice([0, 1, 2]),
        "maxLength": lambda: rng.choice([0, 1, 2]),
        "minItems": lambda: rng.choice([0, 1, 2]),
        "maxItems": lambda: rng.choice([0, 1, 2]),
        "required": lambda: rng.sample(["a", "b", "c"], rng.randrange(3)),
        "properties": lambda: {rng.choice(["a", "b", "c"]): sub() for _ in range(rng.randrange(1, 3))},
        "patternProperties": lambda: {rng.choice(["^a", "1$", "x|y", "^$"]): sub() for _ in range(rng.randrange(1, 3))},
        "additionalProperties": lambda: rng.choice([True, False]) if rng.random() < 0.6 else sub(),
        "items": lambda: sub() if rng.random() < 0.6 else [sub() for _ in range(rng.randrange(3))],
        "additionalItems": lambda: rng.choice([True, False]) if rng.random() < 0.5 else sub(),
        "anyOf": lambda: [sub() for _ in range(rng.randrange(1, 4))],
        "oneOf": lambda: [sub() for _ in range(rng.randrange(1, 4))],
        "allOf": lambda: [sub() for _ in range(rng.randrange(1, 4))],
        "not": sub,
        "$ref": lambda: rng.choice(["#/definitions/d0", "#/definitions/d1"]),
        "format": lambda: rng.choice(["uint32", "date-time", "ipv4"]),
    }
    names = sorted(makers) if depth < 3 else ["type", "enum", "const", "minimum", "minLength", "required"]
    if not refs:
        names = [n for n in names if n != "$ref"]
    schema = {}
    for _ in range(rng.randrange(1, 4)):
        name = rng.choice(names)
        schema[name] = makers[name]()
    if "additionalItems" in schema and not isinstance(schema.get("items", {}), (dict, list)):
        del schema["additionalItems"]  # jsonschema crashes on it (len() of a bool)
    return schema


def test_jsonschema_stdlib_agrees_on_random_schemas():
    rng = random.Random(20261201)
    checked = accepted = 0
    disagreements = []
    for _ in range(1500):
        root = random_schema(rng)
        root = root if isinstance(root, dict) else {"allOf": [root]}
        d1 = (
            {"type": "array", "items": {"$ref": "#/definitions/d1"}}
            if rng.random() < 0.5
            else random_schema(rng, 2, False)
        )
        root["definitions"] = {"d0": random_schema(rng, 2, False), "d1": d1}
        ours, theirs = Validator(root), jsonschema.Draft7Validator(root)
        for _ in range(8):
            instance = random_instance(rng)
            verdict = ours.is_valid(instance)
            checked += 1
            accepted += verdict
            # errors() is the other half of the contract: empty exactly when valid.
            if verdict != theirs.is_valid(instance) or verdict != (not ours.errors(instance)):
                disagreements.append((root, instance))
    counts = f"{checked} random (schema, instance) pairs, {accepted} accepted, {len(disagreements)} disagreements"
    print(counts)  # shown by pytest -s or -rP
    assert checked == 12000 and 0.2 * checked < accepted < 0.8 * checked, counts
    assert disagreements == [], f"{counts}; first: {disagreements[:3]}"


# ---------------------------------------------------------------------------
# Recorded frames and their mutations, in every bundle


def bundle_dirs() -> Dict[Tuple[str, str], Optional[str]]:
    """(version, flavor) → the directory holding its bundle, or None."""
    versions = set(fixture_versions()) | set(WANTED)
    found: Dict[Tuple[str, str], Optional[str]] = {}
    for version in sorted(versions):
        for flavor in _schema.FLAVORS:
            candidates = [
                os.path.join(ROOT, "fixtures", "schema", version, flavor),
                os.path.join(ROOT, ".cache", "codex", version, "schema", flavor),
            ]
            found[(version, flavor)] = next(
                (d for d in candidates if os.path.isfile(os.path.join(d, _schema.BUNDLE_FILE))), None
            )
    return found


BUNDLES = bundle_dirs()


def bundle_params() -> List[Any]:
    return [pytest.param(version, flavor, id=f"{version}-{flavor}") for version, flavor in BUNDLES]


@functools.lru_cache(maxsize=None)
def bundle_pair(version: str, flavor: str) -> Tuple[_schema.SchemaBundle, _schema.SchemaBundle]:
    """The bundle twice: stdlib engine (every definition compiled: no
    unsupported keyword anywhere) and jsonschema engine."""
    directory = BUNDLES[(version, flavor)]
    if directory is None:
        pytest.skip(
            f"no {flavor} bundle of codex {version}: neither fixtures/schema/{version}/{flavor}/ nor "
            f".cache/codex/{version}/schema/{flavor}/ (`python tools/schema_drift.py {CODEX_VERSION} {version} "
            f"--flavor {flavor}` generates it)"
        )
    stdlib = _schema.SchemaBundle.from_directory(directory, flavor, version)
    return stdlib, _schema.SchemaBundle.from_file(stdlib.path, version, flavor, JSONSCHEMA)


def test_jsonschema_stdlib_recorded_frames_exist():
    assert FRAME_FILES, "no fixtures/*/*.frames.jsonl"
    assert frame_count() > 500
    assert ("0.149.1", "experimental") in BUNDLES and BUNDLES[("0.149.1", "experimental")] is not None


@pytest.mark.parametrize("version, flavor", bundle_params())
def test_jsonschema_stdlib_agrees_on_every_recorded_frame(version, flavor):
    stdlib, reference = bundle_pair(version, flavor)
    frames = checks = 0
    verdicts: Counter[Tuple[bool, bool]] = Counter()
    own_version_rejected = []
    disagreements = []
    for name, transcript in recorded():
        ours, theirs = list(routed(stdlib, transcript)), list(routed(reference, transcript))
        assert [p for _, p in ours] == [p for _, p in theirs]
        for frame, pointers in ours:
            frames += 1
            for pointer in pointers:
                checks += 1
                verdict = (stdlib.is_valid(frame, pointer), reference.is_valid(frame, pointer))
                verdicts[verdict] += 1
                if verdict[0] != verdict[1]:
                    disagreements.append((name, pointer, frame))
                elif not verdict[0] and name.startswith(f"fixtures/{version}/"):
                    own_version_rejected.append((name, pointer, stdlib.errors(frame, pointer)))
    counts = (
        f"codex {version} {flavor}: {frames} frames, {checks} checks; accepted by both {verdicts[(True, True)]}, "
        f"rejected by both {verdicts[(False, False)]}, stdlib only {verdicts[(True, False)]}, "
        f"jsonschema only {verdicts[(False, True)]}; {len(disagreements)} disagreements"
    )
    print(counts)  # shown by pytest -s or -rP
    assert frames == frame_count() and checks >= 2 * frames, counts
    assert disagreements == [], f"{counts}; first: {disagreements[:3]}"
    # The recordings are valid against the schema of the binary that made them.
    assert own_version_rejected == [], counts


# Mutations: (name, applies to, replacements).  Each is what a buggy peer or
# fake could send instead of the recorded value.
MUTATIONS: List[Tuple[str, Callable[[Any], bool], Callable[[Any], List[Any]]]] = [
    ("null", lambda v: v is not None, lambda v: [None]),
    ("wrap-in-list", lambda v: True, lambda v: [[v]]),
    ("string-for-value", lambda v: not isinstance(v, str), lambda v: [json.dumps(v)]),
    ("number-for-string", lambda v: isinstance(v, str), lambda v: [7]),
    ("wrong-enum-string", lambda v: isinstance(v, str), lambda v: ["codexmini-not-a-value"]),
    ("empty-string", lambda v: isinstance(v, str) and v != "", lambda v: [""]),
    ("bool-for-int", lambda v: type(v) is int, lambda v: [True]),
    ("integral-float-for-int", lambda v: type(v) is int, lambda v: [float(v)]),
    ("fraction-for-int", lambda v: type(v) is int, lambda v: [v + 0.5]),
    ("negative", lambda v: type(v) in (int, float), lambda v: [-1]),
    ("int-for-bool", lambda v: isinstance(v, bool), lambda v: [int(v)]),
    ("object-for-list", lambda v: isinstance(v, list), lambda v: [{"0": v[0]} if v else {}]),
    ("empty-list", lambda v: isinstance(v, list) and v != [], lambda v: [[]]),
    ("extra-item", lambda v: isinstance(v, list), lambda v: [[*v, 42]]),
    ("list-for-object", lambda v: isinstance(v, dict), lambda v: [list(v.values())]),
    ("unknown-key", lambda v: isinstance(v, dict), lambda v: [dict(v, codexminiUnknown=1)]),
    (
        "drop-key",
        lambda v: isinstance(v, dict) and v != {},
        lambda v: [{k: x for k, x in v.items() if k != d} for d in v],
    ),
]

#: Operators drawn per distinct frame (each at a random node where it
#: applies): every operator gets tried hundreds of times, and jsonschema still
#: checks all the mutants of one bundle in about a second.
_OPERATORS_PER_FRAME = 5
#: ...except this one, tried at every object: the keys that
#: ``additionalProperties: false`` forbids are rare in the recordings (a dozen
#: objects in all), and a sample would miss them.
_EVERYWHERE = ("unknown-key",)
#: Draft 7 counts 1.0 as an integer (and enum [1] holds 1.0): this operator
#: must never change a verdict.
_HARMLESS = ("integral-float-for-int",)
#: Operators a bundle may have no way to notice in these frames: no schema has
#: ``minItems``, and the only ``minimum: 0`` the recordings reach is 0.149.1's
#: ``httpStatusCode`` (0.171.0 dropped it).
_MAY_GO_UNNOTICED = ("empty-list", "negative")


def nodes(value: Any, path: Tuple[Any, ...] = ()) -> Iterator[Tuple[Tuple[Any, ...], Any]]:
    yield path, value
    if isinstance(value, dict):
        for key, item in value.items():
            yield from nodes(item, (*path, key))
    elif isinstance(value, list):
        for i, item in enumerate(value):
            yield from nodes(item, (*path, i))


def replaced(frame: Any, path: Tuple[Any, ...], new: Any) -> Any:
    if not path:
        return new
    out = copy.deepcopy(frame)
    parent = out
    for part in path[:-1]:
        parent = parent[part]
    parent[path[-1]] = new
    return out


def mutants(frame: Any, rng: random.Random) -> List[Tuple[str, Any]]:
    """Seeded mutations of a frame: ``(operator, mutant)``."""
    candidates: Dict[str, List[Tuple[Tuple[Any, ...], Any]]] = {}
    for path, value in nodes(frame):
        for name, applies, make in MUTATIONS:
            if applies(value):
                candidates.setdefault(name, []).extend((path, new) for new in make(value))
    drawn = sorted(name for name in candidates if name not in _EVERYWHERE)
    rng.shuffle(drawn)
    picked = [(name, rng.choice(candidates[name])) for name in drawn[:_OPERATORS_PER_FRAME]]
    picked += [(name, where) for name in _EVERYWHERE for where in candidates.get(name, ())]
    return [(name, replaced(frame, path, new)) for name, (path, new) in picked]


@pytest.mark.parametrize("version, flavor", bundle_params())
def test_jsonschema_stdlib_agrees_on_mutated_frames(version, flavor):
    stdlib, reference = bundle_pair(version, flavor)
    rng = random.Random(f"mutations-{version}-{flavor}")
    seen = set()
    frames = mutated = checks = 0
    verdicts: Counter[Tuple[bool, bool]] = Counter()
    rejected_by_operator: Counter[str] = Counter()
    tried: Counter[str] = Counter()
    disagreements = []
    for name, transcript in recorded():
        ours, theirs = list(routed(stdlib, transcript)), list(routed(reference, transcript))
        assert [p for _, p in ours] == [p for _, p in theirs]
        for frame, pointers in ours:
            key = json.dumps([frame, pointers], sort_keys=True)
            if key in seen:  # deltas repeat: mutate each distinct frame once
                continue
            seen.add(key)
            frames += 1
            for operator, mutant in mutants(frame, rng):
                mutated += 1
                tried[operator] += 1
                rejected = False
                for pointer in pointers:
                    checks += 1
                    verdict = (stdlib.is_valid(mutant, pointer), reference.is_valid(mutant, pointer))
                    verdicts[verdict] += 1
                    rejected = rejected or not verdict[1]
                    if verdict[0] != verdict[1]:
                        disagreements.append((name, operator, pointer, mutant))
                rejected_by_operator[operator] += rejected
    counts = (
        f"codex {version} {flavor}: {frames} distinct frames, {mutated} mutants, {checks} checks; accepted by both "
        f"{verdicts[(True, True)]}, rejected by both {verdicts[(False, False)]}, stdlib only "
        f"{verdicts[(True, False)]}, jsonschema only {verdicts[(False, True)]}; rejected/tried per operator "
        f"{ {op: f'{rejected_by_operator[op]}/{n}' for op, n in sorted(tried.items())} }"
    )
    print(counts)  # shown by pytest -s or -rP
    assert frames > 100 and mutated > 5 * frames and checks >= 2 * mutated, counts
    # Not vacuous: mutants both pass and fail, and every operator breaks some frame.
    assert verdicts[(True, True)] > 0 and verdicts[(False, False)] > 0, counts
    assert set(tried) == {name for name, _, _ in MUTATIONS}, counts
    noticed = {op for op, n in rejected_by_operator.items() if n}
    assert set(tried) - set(_HARMLESS) - set(_MAY_GO_UNNOTICED) <= noticed, counts
    assert not noticed & set(_HARMLESS), counts
    assert disagreements == [], f"{counts}; first: {disagreements[:3]}"


# ---------------------------------------------------------------------------
# The keyword table against the bundles


def keywords_used(schema: Any, used: Counter[str]) -> None:
    """Count the keywords of ``schema`` and of its subschemas (by keyword
    meaning: the keys of ``properties`` are names, not keywords)."""
    if not isinstance(schema, dict):
        return
    for keyword, value in schema.items():
        used[keyword] += 1
        if keyword in ("properties", "patternProperties", "definitions"):
            for name, sub in value.items():
                if keyword == "definitions" and name == "v2":
                    for nested in sub.values():
                        keywords_used(nested, used)
                else:
                    keywords_used(sub, used)
        elif keyword in ("additionalProperties", "additionalItems", "not", "items"):
            for sub in value if isinstance(value, list) else [value]:
                keywords_used(sub, used)
        elif keyword in ("anyOf", "oneOf", "allOf"):
            for sub in value:
                keywords_used(sub, used)


@pytest.mark.parametrize("version, flavor", bundle_params())
def test_jsonschema_stdlib_keyword_table_covers_the_bundles(version, flavor):
    stdlib, _ = bundle_pair(version, flavor)  # from_directory compiled every definition already
    used: Counter[str] = Counter()
    keywords_used(stdlib.root, used)
    assert {"$ref", "type", "enum", "properties", "required", "oneOf", "anyOf", "allOf"} <= set(used)
    assert set(used) <= set(KEYWORDS), f"unsupported: {set(used) - set(KEYWORDS)}"
    assert stdlib.root["$schema"].rstrip("#") == DRAFT7
