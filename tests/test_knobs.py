"""The session's knobs, pure: the permission fold, the model and endpoint choices.

Knobs are log entries (``sandbox/mode``, ``approval/policy``, ``model/choice``,
``model/endpoint``); the last valid one of each kind wins.  The permission
fold: full access wins, ``ask`` means workspace-write + on-request, anything
else read-only + never; a pin overrides its own field only.
"""

from __future__ import annotations

import dataclasses

import pytest

from codexmini import ConfigError
from codexmini import _permission as permission
from codexmini._knobs import (
    DEFAULT_PERMISSIONS,
    KNOB_TYPES,
    Knobs,
    ThreadPermissions,
    check_reasoning,
    fold,
    last_endpoint,
    last_knob,
    last_model,
    last_reasoning,
    resolve_permissions,
)
from codexmini._session import EVENT_TYPES


def e(type_, data=None, turn=None):
    return {"type": type_, "turn": turn, "data": data or {}}


def knob(kind: str, value, **extra) -> dict:
    """A session-log knob event (docs/session-log.md)."""
    key = {"sandbox/mode": "mode", "approval/policy": "policy"}[kind]
    event = {"v": 1, "seq": 0, "ts": 1795975388.0, "type": kind, "turn": None, "step": None, "data": {key: value}}
    event.update(extra)
    return event


def test_last_knob_of_an_empty_log_is_none():
    assert last_knob([], "sandbox/mode") is None
    assert last_knob([], "approval/policy") is None


def test_last_knob_the_last_valid_value_wins():
    events = [
        knob("sandbox/mode", "read-only"),
        knob("approval/policy", "ask"),
        knob("sandbox/mode", "danger-full-access"),
        knob("approval/policy", "never"),
        knob("sandbox/mode", "workspace-write"),
    ]
    assert last_knob(events, "sandbox/mode") == "workspace-write"
    assert last_knob(events, "approval/policy") == "never"


@pytest.mark.parametrize(
    "invalid",
    ["full-access", "ask", "", None, 3, ["danger-full-access"], "DANGER-FULL-ACCESS"],
    ids=repr,
)
def test_last_knob_an_invalid_value_counts_as_absent(invalid):
    events = [knob("sandbox/mode", "danger-full-access"), knob("sandbox/mode", invalid)]
    assert last_knob(events, "sandbox/mode") == "danger-full-access"
    assert last_knob([knob("sandbox/mode", invalid)], "sandbox/mode") is None


def test_last_knob_approval_accepts_only_the_knob_values_not_policies():
    # The knob is ask/never; the wire's policies (on-request, …) are pins, not knobs.
    events = [knob("approval/policy", v) for v in ("ask", "on-request", "untrusted")]
    assert last_knob(events, "approval/policy") == "ask"


def test_last_knob_missing_data_and_other_events():
    events = [
        {"type": "sandbox/mode"},  # no data at all
        {"type": "sandbox/mode", "data": None},
        {"type": "sandbox/mode", "data": {}},
        {"type": "sandbox/mode", "data": {"policy": "danger-full-access"}},  # the other knob's key
        {"type": "approval/policy", "data": {"mode": "ask"}},
        {"type": "turn/start", "data": {"mode": "danger-full-access"}},
        {"data": {"mode": "danger-full-access"}},
    ]
    assert last_knob(events, "sandbox/mode") is None
    assert last_knob(events, "approval/policy") is None


def test_last_knob_unknown_kind_is_a_key_error():
    with pytest.raises(KeyError):
        last_knob([], "sandbox")


@pytest.mark.parametrize(
    "sandbox, approval, expected",
    [
        ("danger-full-access", None, ("danger-full-access", "never")),
        ("danger-full-access", "ask", ("danger-full-access", "never")),  # full access wins over ask
        ("danger-full-access", "never", ("danger-full-access", "never")),
        (None, "ask", ("workspace-write", "on-request")),
        ("read-only", "ask", ("workspace-write", "on-request")),
        ("workspace-write", "ask", ("workspace-write", "on-request")),
        (None, None, ("read-only", "never")),
        (None, "never", ("read-only", "never")),
        ("read-only", None, ("read-only", "never")),
        ("workspace-write", None, ("read-only", "never")),
        ("workspace-write", "never", ("read-only", "never")),
        ("bogus", "bogus", ("read-only", "never")),
    ],
)
def test_fold(sandbox, approval, expected):
    assert fold(sandbox, approval) == ThreadPermissions(*expected)


def test_fold_default_is_read_only_never():
    assert DEFAULT_PERMISSIONS == ThreadPermissions("read-only", "never")
    assert fold(None, None) is DEFAULT_PERMISSIONS


def test_thread_permissions_is_frozen():
    with pytest.raises(dataclasses.FrozenInstanceError):
        DEFAULT_PERMISSIONS.sandbox = "danger-full-access"  # type: ignore[misc]


def test_resolve_permissions_folds_the_log():
    assert resolve_permissions([]) == DEFAULT_PERMISSIONS
    assert resolve_permissions([knob("approval/policy", "ask")]) == ThreadPermissions("workspace-write", "on-request")
    assert resolve_permissions([knob("sandbox/mode", "danger-full-access")]) == ThreadPermissions(
        "danger-full-access", "never"
    )


def test_resolve_permissions_reads_a_one_shot_iterable():
    # Two knobs are read from it: a generator must not be exhausted by the first.
    events = (e for e in [knob("approval/policy", "ask"), knob("sandbox/mode", "danger-full-access")])
    assert resolve_permissions(events) == ThreadPermissions("danger-full-access", "never")


def test_resolve_permissions_each_pin_overrides_only_its_own_field():
    asked = [knob("approval/policy", "ask")]  # workspace-write / on-request
    assert resolve_permissions(asked, pin_sandbox="read-only") == ThreadPermissions("read-only", "on-request")
    assert resolve_permissions(asked, pin_approval="untrusted") == ThreadPermissions("workspace-write", "untrusted")
    assert resolve_permissions(asked, "danger-full-access", "never") == ThreadPermissions("danger-full-access", "never")
    assert resolve_permissions([], pin_approval="on-request") == ThreadPermissions("read-only", "on-request")
    assert resolve_permissions([], pin_sandbox="workspace-write") == ThreadPermissions("workspace-write", "never")


def test_resolve_permissions_pins_win_over_later_knobs():
    events = [knob("sandbox/mode", "danger-full-access")]
    assert resolve_permissions(events, pin_sandbox="read-only", pin_approval="never") == ThreadPermissions(
        "read-only", "never"
    )


@pytest.mark.parametrize(
    "pins, field, bad",
    [
        ({"pin_sandbox": "full"}, "sandbox pin", "'full'"),
        ({"pin_sandbox": ""}, "sandbox pin", "''"),
        ({"pin_approval": "ask"}, "approval pin", "'ask'"),  # a knob value, not a policy
        ({"pin_approval": "always"}, "approval pin", "'always'"),
        # Not an AskForApproval string of 0.149.1 (its schema has no on-failure).
        ({"pin_approval": "on-failure"}, "approval pin", "'on-failure'"),
    ],
)
def test_resolve_permissions_invalid_pins_raise_value_error(pins, field, bad):
    with pytest.raises(ConfigError) as info:
        resolve_permissions([], **pins)
    message = str(info.value)
    assert message.startswith(f"{field} must be one of ")
    assert message.endswith(f"not {bad}")
    allowed = permission.SANDBOX_MODES if field == "sandbox pin" else permission.APPROVAL_POLICIES
    assert str(allowed) in message


def test_resolve_permissions_keeps_the_approval_knob_of_a_one_shot_iterator():
    # Only the approval knob: a fold that read the sandbox knob first from the
    # same iterator would exhaust it and fall back to read-only / never.
    events = iter([knob("approval/policy", "ask")])
    assert resolve_permissions(events) == ThreadPermissions("workspace-write", "on-request")


def test_knob_types_are_the_settings_a_resumed_session_keeps():
    assert KNOB_TYPES == {"sandbox/mode", "approval/policy", "model/choice", "model/endpoint", "model/reasoning"}
    assert KNOB_TYPES <= set(EVENT_TYPES)


def test_last_model_is_the_last_non_empty_choice():
    assert last_model([]) is None
    assert last_model([e("turn/start", {"model": "not a choice"})]) is None
    events = [
        e("model/choice", {"model": "gpt-a"}),
        e("turn/start"),
        e("model/choice", {"model": "gpt-b"}),
        e("model/choice", {"model": ""}),
        e("model/choice", {"model": 7}),
        {"type": "model/choice", "data": None},
    ]
    assert last_model(events) == "gpt-b"
    assert last_model([e("model/choice", {"model": None})]) is None


def test_last_endpoint_is_the_last_choice_with_a_url_or_null():
    chosen = {"baseUrl": "http://127.0.0.1:9/v1", "wireApi": "responses", "apiKeyEnv": "K"}
    assert last_endpoint([]) is None
    assert last_endpoint([e("model/choice", {"baseUrl": "http://x/v1"})]) is None
    assert last_endpoint([e("model/endpoint", chosen), e("turn/start")]) == chosen
    # baseUrl null: back to codex's own configuration, returned as such.
    own = {"baseUrl": None, "wireApi": None, "apiKeyEnv": None}
    assert last_endpoint([e("model/endpoint", chosen), e("model/endpoint", own)]) == own
    # A baseUrl of the wrong type is no choice: the one before stands.
    assert last_endpoint([e("model/endpoint", chosen), e("model/endpoint", {"baseUrl": 5})]) == chosen
    assert last_endpoint([e("model/endpoint", chosen), {"type": "model/endpoint", "data": None}]) == {}


def test_knobs_keep_only_knob_entries_and_answer_from_the_last_of_each():
    own_endpoint = {"baseUrl": None, "wireApi": None, "apiKeyEnv": None}
    knobs = Knobs([e("session/header"), knob("approval/policy", "ask"), e("model/choice", {"model": "gpt-a"})])
    assert len(knobs) == 2  # the header is no knob
    assert (knobs.model, knobs.endpoint) == ("gpt-a", None)
    assert knobs.permissions() == ThreadPermissions("workspace-write", "on-request")
    assert knobs.permissions(pin_sandbox="read-only") == ThreadPermissions("read-only", "on-request")
    for entry in (e("turn/start"), knob("sandbox/mode", "danger-full-access"), e("model/endpoint", own_endpoint)):
        knobs.feed(entry)
    assert len(knobs) == 4
    assert knobs.permissions() == ThreadPermissions("danger-full-access", "never")
    assert (knobs.model, knobs.endpoint) == ("gpt-a", own_endpoint)
    assert len(Knobs()) == 0 and Knobs().permissions() == DEFAULT_PERMISSIONS


def test_knobs_types_are_the_entries_it_takes_and_it_keeps_one_of_each():
    # A caller (the session log) feeds it only entries of Knobs.TYPES: those are
    # exactly the ones it counts; of each kind it keeps the last valid one only.
    knobs = Knobs()
    for kind in sorted(Knobs.TYPES):
        for _ in range(3):
            knobs.feed(e(kind, {}))
    knobs.feed(e("turn/start"))
    assert len(knobs) == 3 * len(Knobs.TYPES) == 15
    # Of {}: an endpoint ({} = codex's own) and reasoning settings ({}: the configuration's) are valid.
    assert sorted(knobs._last) == ["model/endpoint", "model/reasoning"]
    knobs.feed(e("model/choice", {"model": "a"}))
    knobs.feed(e("model/choice", {"model": ""}))  # invalid: "a" stands
    assert knobs.model == "a" and len(knobs._last) == 3


# -- the reasoning settings (issue 30.4) -------------------------------------------------


@pytest.mark.parametrize(
    "effort, summary",
    [(None, None), ("high", None), (None, "auto"), ("minimal", "none"), ("xhigh", "detailed"), ("low", "concise")],
)
def test_check_reasoning_takes_any_named_effort_and_codex_summaries(effort, summary):
    check_reasoning(effort, summary)  # no error


@pytest.mark.parametrize(
    "effort, summary, match",
    [
        ("", None, "effort must be a non-empty string"),
        (3, None, "effort must be a non-empty string"),
        (None, "brief", "summary must be one of"),
        (None, "", "summary must be one of"),
        (None, True, "summary must be one of"),
    ],
)
def test_check_reasoning_refuses_what_codex_would(effort, summary, match):
    with pytest.raises(ConfigError, match=match):
        check_reasoning(effort, summary)


def test_last_reasoning_is_the_last_valid_choice_and_null_fields_stay_null():
    assert last_reasoning([]) is None
    high = {"effort": "high", "summary": "auto"}
    events = [
        e("model/reasoning", {"effort": "low", "summary": None}),
        e("model/reasoning", high),
        e("model/reasoning", {"effort": "", "summary": "auto"}),  # invalid: high stands
        e("model/reasoning", {"effort": "low", "summary": "loud"}),  # invalid
        e("model/choice", {"model": "gpt-a"}),
    ]
    assert last_reasoning(events) == high
    assert last_reasoning([e("model/reasoning", high), {"type": "model/reasoning", "data": None}]) == {}
    knobs = Knobs(events)
    assert knobs.reasoning == high
    assert Knobs().reasoning is None
