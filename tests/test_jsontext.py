"""The JSON text encoder built once (codexmini._jsontext): json.dumps's text and errors."""

from __future__ import annotations

import json

import pytest

from codexmini._jsontext import C_MAKE_ENCODER, Encoder, encoder

VALUES = [
    {"type": "user/message", "text": 'é — ✓ 中文 \u2028 \x00 "q" \\ \n\t', "emoji": "😀"},
    {"floats": [0.1, 1e300, -0.0, 2.5, float("nan"), float("inf"), -float("inf")], "ints": [0, -1, 2**70]},
    {"nested": [[{"a": [None, True, False]}], {}], "": "", "k": []},
    {"z": 1, "a": {"y": [], "b": None}, "m": "x"},  # sort_keys changes this one
    {1: "int key", 2.5: "float key", False: "bool key", None: "null key"},
    {"many": ["x", 1] * 150_000},  # long enough that some encoders return it in several chunks
    "a string",
    [1, "two", None],
    None,
]
MAKES = pytest.mark.parametrize("make", [C_MAKE_ENCODER, None], ids=["c", "python"])
SORTED = pytest.mark.parametrize("sort_keys", [False, True], ids=["unsorted", "sorted"])


def dumps(value, sort_keys, allow_nan=True):
    return json.dumps(value, ensure_ascii=False, separators=(",", ":"), sort_keys=sort_keys, allow_nan=allow_nan)


def outcome(encode, value):
    """The text, or the error's type and message."""
    try:
        return encode(value)
    except (TypeError, ValueError) as exc:
        return type(exc), str(exc)


@MAKES
@SORTED
@pytest.mark.parametrize(
    "value",
    VALUES + [{"x": object()}, {"x": {1, 2}}, {"x": b"raw"}, {("a",): 1}, float, {1: "a", "b": 2}],
    ids=[*map(str, range(len(VALUES))), "object", "set", "bytes", "tuple-key", "type", "mixed-keys"],
)
@pytest.mark.parametrize("allow_nan", [True, False], ids=["nan", "no-nan"])
def test_the_text_and_the_errors_are_json_dumps(value, make, sort_keys, allow_nan):
    # Compact, unescaped; sorting keys of mixed types fails as json.dumps does;
    # without allow_nan, NaN and the infinities fail as json.dumps's do.
    expected = outcome(lambda v: dumps(v, sort_keys, allow_nan), value)
    assert outcome(encoder(make, sort_keys, allow_nan), value) == expected
    if allow_nan:
        assert outcome(encoder(make, sort_keys), value) == expected  # the default
    if sort_keys and value is VALUES[3]:
        assert expected == '{"a":{"b":null,"y":[]},"m":"x","z":1}'


@SORTED
def test_a_failure_inside_an_object_leaves_the_encoder_usable(sort_keys):
    # Built once: a failure inside an object must not leave the encoder
    # believing that object is still open (encoding it again would then be
    # refused as circular).
    encode = encoder(sort_keys=sort_keys)
    loop = {"a": 1}
    loop["self"] = loop
    with pytest.raises(ValueError, match="Circular reference detected"):
        encode({"loop": loop})
    inner = {"ok": 1, "bad": object()}
    outer = {"inner": inner}
    with pytest.raises(TypeError, match="not JSON serializable"):
        encode(outer)
    del inner["bad"]
    assert encode(outer) == '{"inner":{"ok":1}}'
    assert encode(outer) == '{"inner":{"ok":1}}'  # and again: nothing left in the markers


def test_cpython_gets_the_c_encoder_built_once_and_keys_keep_their_order_by_default():
    assert C_MAKE_ENCODER is not None
    assert isinstance(encoder(), Encoder) and isinstance(encoder(sort_keys=True), Encoder)
    assert not isinstance(encoder(None), Encoder)
    value = {"b": 1, "a": 2}
    assert encoder()(value) == Encoder(C_MAKE_ENCODER)(value) == encoder(None)(value) == '{"b":1,"a":2}'


@MAKES
@pytest.mark.parametrize("number", [float("nan"), float("inf"), -float("inf")], ids=["nan", "inf", "-inf"])
def test_allow_nan_false_refuses_what_json_has_no_number_for(make, number):
    assert encoder(make)({"x": number}) == dumps({"x": number}, False)  # the default writes them
    with pytest.raises(ValueError, match="Out of range float values are not JSON compliant"):
        encoder(make, allow_nan=False)({"x": [1.5, number]})
    assert encoder(make, allow_nan=False)({"x": [1.5, 1e308]}) == '{"x":[1.5,1e+308]}'


def test_the_encoder_built_by_hand_writes_nan_by_default():
    assert Encoder(C_MAKE_ENCODER)({"x": float("nan")}) == '{"x":NaN}'
    with pytest.raises(ValueError, match="Out of range float values"):
        Encoder(C_MAKE_ENCODER, allow_nan=False)({"x": float("nan")})
