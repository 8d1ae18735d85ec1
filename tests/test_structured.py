"""Structured output, pure: the output schema checked up front, the final answer parsed and judged.

The keywords added to the stdlib validator for output schemas (``pattern``,
``$defs``) are held to ``jsonschema.Draft7Validator``'s verdicts here, as the
rest of the validator is in ``test_jsonschema.py``.
"""

from __future__ import annotations

import jsonschema
import pytest
from support.run_support import SCHEMA

from codexmini import OutputValidationError, SchemaError
from codexmini._jsonschema import Validator
from codexmini._structured import OutputSchema, check_output_schema

PYDANTIC_LIKE = {  # what pydantic's model_json_schema() makes of a nested model
    "$defs": {
        "Step": {
            "properties": {"title": {"title": "Title", "type": "string", "pattern": "^[A-Z]"}},
            "required": ["title"],
            "title": "Step",
            "type": "object",
            "additionalProperties": False,
        }
    },
    "properties": {"steps": {"items": {"$ref": "#/$defs/Step"}, "title": "Steps", "type": "array"}},
    "required": ["steps"],
    "title": "Plan",
    "type": "object",
    "additionalProperties": False,
}


@pytest.mark.parametrize(
    "schema, instance",
    [
        ({"pattern": "^a+$"}, "aaa"),
        ({"pattern": "^a+$"}, "aab"),
        ({"pattern": "b"}, "abc"),  # re.search, not a full match
        ({"pattern": "^a"}, 7),  # not a string: the keyword does not apply
        ({"pattern": "\\d{2}"}, "x12"),
        (PYDANTIC_LIKE, {"steps": [{"title": "First"}]}),
        (PYDANTIC_LIKE, {"steps": [{"title": "lower"}]}),
        (PYDANTIC_LIKE, {"steps": [{"title": "Ok", "extra": 1}]}),
        (PYDANTIC_LIKE, {"steps": "none"}),
    ],
)
def test_structured_new_keywords_agree_with_jsonschema(schema, instance):
    assert Validator(schema).is_valid(instance) == jsonschema.Draft7Validator(schema).is_valid(instance)


def test_structured_pattern_message_and_bad_patterns():
    assert Validator({"pattern": "^a"}).errors("b") == [("$", "'b' does not match '^a'")]
    with pytest.raises(SchemaError, match="pattern must be a string"):
        Validator({"pattern": 1}).check_schema("#")
    with pytest.raises(SchemaError, match="invalid regular expression"):
        Validator({"pattern": "("}).check_schema("#")


def test_structured_parse_returns_the_valid_value():
    schema = OutputSchema(SCHEMA)
    assert schema.parse('{"answer": 42, "why": "six times seven"}') == {"answer": 42, "why": "six times seven"}
    assert OutputSchema(PYDANTIC_LIKE).parse(' {"steps": [{"title": "A"}]}\n') == {"steps": [{"title": "A"}]}


def test_structured_wire_is_a_json_copy_of_the_schema():
    given = {"type": "object", "properties": {"a": {"type": "string"}}}
    schema = OutputSchema(given)
    given["properties"]["a"]["type"] = "integer"  # the caller's later changes do not leak in
    assert schema.wire == {"type": "object", "properties": {"a": {"type": "string"}}}
    assert schema.parse('{"a": "x"}') == {"a": "x"}


@pytest.mark.parametrize(
    "text, reasons",
    [
        ('{"answer": "x", "why": "no"}', [("$.answer", "'x' is not of type 'integer'")]),
        ('{"answer": 1}', [("$", "'why' is a required property")]),
        ("not json", None),
        ('{"answer": NaN, "why": ""}', None),
        ("", None),
    ],
    ids=["wrong-type", "missing", "not-json", "nan", "empty"],
)
def test_structured_parse_mismatch_is_a_typed_error_with_the_raw_text(text, reasons):
    with pytest.raises(OutputValidationError) as caught:
        OutputSchema(SCHEMA).parse(text, result="the result")
    error = caught.value
    assert error.text == text and error.result == "the result"
    if reasons is None:
        assert [path for path, _ in error.errors] == ["$"] and error.errors[0][1].startswith("not JSON")
    else:
        assert error.errors == reasons
    assert str(error).startswith("the final answer does not match the output schema: $")


@pytest.mark.parametrize("constant", ["NaN", "Infinity", "-Infinity"])
def test_structured_parse_names_the_constant_json_does_not_allow(constant):
    # json.loads would take these; the answer is refused, and the reason says which one.
    with pytest.raises(OutputValidationError) as caught:
        OutputSchema({"type": "array"}).parse(f"[1, {constant}]")
    assert caught.value.errors == [("$", f"not JSON: {constant} is not JSON")]


def test_structured_no_agent_message_is_a_mismatch():
    with pytest.raises(OutputValidationError) as caught:
        OutputSchema(SCHEMA).parse(None)
    assert caught.value.text is None and caught.value.result is None
    assert caught.value.errors == [("$", "the turn produced no agent message")]


def test_structured_error_message_lists_three_reasons_and_counts_the_rest():
    schema = OutputSchema({"type": "object", "required": ["a", "b", "c", "d", "e"]})
    with pytest.raises(OutputValidationError, match=r"'c' is a required property \(and 2 more\)$"):
        schema.parse("{}")


@pytest.mark.parametrize(
    "schema, fragment",
    [
        (["not", "an", "object"], "must be a JSON object (a dict), not list"),
        (True, "must be a JSON object (a dict), not bool"),
        ({"type": "object", "default": float("nan")}, "not JSON"),
        ({"type": "object", "default": {1, 2}}, "not JSON"),
        ({"type": 5}, "type must be"),
        ({"type": "object", "multipleOf": 2}, "unsupported JSON Schema keyword(s) ['multipleOf']"),
        ({"$ref": "#/$defs/missing"}, "points at nothing"),
    ],
    ids=["list", "bool", "nan", "set", "bad-type", "unsupported", "dangling-ref"],
)
def test_structured_unusable_schema_is_a_schema_error_up_front(schema, fragment):
    with pytest.raises(SchemaError) as caught:
        OutputSchema(schema)
    assert fragment in str(caught.value)


def test_structured_check_output_schema_checks_a_schema_and_passes_none():
    assert check_output_schema(None) is None
    checked = check_output_schema({"type": "object"})
    assert isinstance(checked, OutputSchema) and checked.wire == {"type": "object"}
    with pytest.raises(SchemaError):
        check_output_schema({"type": "object", "multipleOf": 2})
