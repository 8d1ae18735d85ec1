"""The error tree of ``codexmini._errors``: what a caller catches, reads and prints.

The tree is the one drawn in the module docstring; each error's attributes and
message are what a caller (or a log line) sees.  Plain values: nothing is
raised through a client here.
"""

from __future__ import annotations

import pytest

from codexmini import _errors as errors
from codexmini._errors import (
    AuthRejected,
    BinaryNotFound,
    ClientClosed,
    CodexminiError,
    CodexTimeout,
    CompactionFailed,
    ConfigError,
    ConnectFailed,
    EndpointKeyMissing,
    MethodNotFound,
    OutputValidationError,
    ProcessExited,
    ProtocolError,
    RequestTimeout,
    RpcError,
    SchemaError,
    ServerOverloaded,
    SessionLogChanged,
    SessionLogError,
    SessionLogLocked,
    StartFailed,
    ThreadNotFound,
    TransportError,
    TurnFailed,
    TurnTimeout,
    UnencodableInput,
    UsageLimitExceeded,
    WebSocketError,
    WriteTimeout,
    rpc_error,
)

# The docstring's tree: each class and its parents.
TREE = {
    ProtocolError: (CodexminiError,),
    RpcError: (CodexminiError,),
    ServerOverloaded: (RpcError,),
    MethodNotFound: (RpcError,),
    ThreadNotFound: (RpcError,),
    TransportError: (CodexminiError,),
    ProcessExited: (TransportError,),
    ConnectFailed: (TransportError,),
    AuthRejected: (ConnectFailed,),
    WebSocketError: (TransportError,),
    ClientClosed: (TransportError,),
    RequestTimeout: (TransportError, CodexTimeout),
    WriteTimeout: (TransportError, CodexTimeout),
    CodexTimeout: (CodexminiError,),
    TurnTimeout: (CodexTimeout,),
    BinaryNotFound: (CodexminiError,),
    StartFailed: (CodexminiError,),
    ConfigError: (CodexminiError,),
    EndpointKeyMissing: (ConfigError,),
    UnencodableInput: (ConfigError,),
    SchemaError: (CodexminiError,),
    OutputValidationError: (CodexminiError,),
    SessionLogError: (CodexminiError,),
    SessionLogLocked: (SessionLogError,),
    SessionLogChanged: (SessionLogError,),
    TurnFailed: (CodexminiError,),
    UsageLimitExceeded: (TurnFailed,),
    CompactionFailed: (CodexminiError,),
}


def test_errors_tree_is_the_one_drawn_in_the_docstring():
    for cls, parents in TREE.items():
        assert cls.__bases__ == parents, cls
        assert issubclass(cls, CodexminiError) and cls.__name__ in errors.__doc__
    assert CodexminiError.__bases__ == (Exception,)
    assert set(errors.__all__) == {c.__name__ for c in TREE} | {"CodexminiError", "rpc_error"}


def test_errors_protocol_error_carries_reason_size_and_preview():
    bad = ProtocolError("invalid JSON: Expecting value", 12, "not json at")
    assert (bad.reason, bad.size, bad.preview) == ("invalid JSON: Expecting value", 12, "not json at")
    assert str(bad) == "invalid JSON: Expecting value ('not json at')"


def test_errors_protocol_error_without_preview_is_its_reason():
    bad = ProtocolError("a frame-level problem")
    assert (bad.reason, bad.size, bad.preview) == ("a frame-level problem", 0, "")
    assert str(bad) == "a frame-level problem"


def test_errors_unencodable_input_says_what_where_and_why():
    err = UnencodableInput("request turn/start", "params.input[0].text", "a lone surrogate")
    assert (err.what, err.path, err.reason) == ("request turn/start", "params.input[0].text", "a lone surrogate")
    assert str(err) == "request turn/start: params.input[0].text cannot go on the wire (a lone surrogate)"
    whole = UnencodableInput("the answer to request 0", "", "Circular reference detected")
    assert str(whole) == "the answer to request 0: the frame cannot go on the wire (Circular reference detected)"
    with pytest.raises(ConfigError):  # refused up front, as a setting is: codexmini.ConfigError catches it
        raise err


def test_errors_rpc_error_names_the_method_and_code():
    err = RpcError(-32600, "Not initialized", {"k": 1}, "thread/start")
    assert (err.code, err.message, err.data, err.method) == (-32600, "Not initialized", {"k": 1}, "thread/start")
    assert str(err) == "thread/start: Not initialized (code -32600)"


def test_errors_rpc_error_without_a_method():
    err = RpcError(-32601, "method not found")
    assert (err.data, err.method) == (None, "")
    assert str(err) == "method not found (code -32601)"


def test_errors_process_exited_shows_the_last_three_stderr_lines():
    err = ProcessExited(2, "one\ntwo\nthree\nfour\n\n")
    assert (err.returncode, err.stderr_tail) == (2, "one\ntwo\nthree\nfour\n\n")
    assert str(err) == "codex app-server exited with code 2: two | three | four"


@pytest.mark.parametrize("tail", ["", "  \n"])
def test_errors_process_exited_without_stderr(tail):
    err = ProcessExited(None, tail)
    assert err.returncode is None and err.stderr_tail == tail
    assert str(err) == "codex app-server exited with code None"
    assert ProcessExited(0).stderr_tail == ""


def test_errors_client_closed_default_and_own_message():
    assert str(ClientClosed()) == "the codexmini client is closed"
    assert str(ClientClosed("closed while waiting")) == "closed while waiting"


def test_errors_request_timeout_is_both_transport_and_timeout():
    err = RequestTimeout("turn/start", 2.5)
    assert (err.method, err.timeout) == ("turn/start", 2.5)
    assert str(err) == "no response to turn/start within 2.5s"
    with pytest.raises(TransportError):
        raise err
    with pytest.raises(CodexTimeout):
        raise err


def test_errors_turn_timeout_names_the_turn():
    err = TurnTimeout("t-1", 30.0)
    assert (err.turn_id, err.timeout) == ("t-1", 30.0)
    assert str(err) == "turn t-1 was silent for 30s"


def test_errors_codex_timeout_keeps_its_deadline():
    err = CodexTimeout("late", 1.5)
    assert (str(err), err.timeout) == ("late", 1.5)


def test_errors_session_log_error_names_the_file_and_line():
    err = SessionLogError("corrupt line", path="/tmp/s.jsonl", line=3)
    assert (str(err), err.path, err.line) == ("corrupt line", "/tmp/s.jsonl", 3)
    bare = SessionLogError("closed")
    assert (bare.path, bare.line) == ("", 0)


def test_errors_session_log_error_positional_arguments_keep_the_message_clean():
    err = SessionLogError("bad event", "/tmp/s.jsonl", 4)
    assert (str(err), err.path, err.line) == ("bad event", "/tmp/s.jsonl", 4)


def test_errors_session_log_locked_names_the_log_and_the_holder():
    err = SessionLogLocked("/tmp/s.jsonl", 4242)
    assert (err.path, err.pid, err.line) == ("/tmp/s.jsonl", 4242, 0)
    assert str(err) == (
        "/tmp/s.jsonl: the session log is locked by its writer, pid 4242: one writer per log "
        "(the lock goes when that writer closes the log or exits)"
    )
    unknown = SessionLogLocked("/tmp/s.jsonl", None)
    assert unknown.pid is None and "another process (pid unknown)" in str(unknown)


def test_errors_session_log_changed_says_how():
    err = SessionLogChanged("/tmp/s.jsonl: truncated", "/tmp/s.jsonl", "truncated", 7)
    assert (str(err), err.path, err.change, err.line) == ("/tmp/s.jsonl: truncated", "/tmp/s.jsonl", "truncated", 7)
    assert SessionLogChanged("m", "/p", "replaced").line == 0


# -- the RpcError subclasses and rpc_error ------------------------------------------------

OVERLOADED = "Server overloaded; retry later."
# 0.171.0's answer to a method it does not have.
UNKNOWN_METHOD = "Invalid request: unknown variant `thread/rollback`, expected one of `initialize`"
# resume_unpersisted.frames.jsonl (0.149.1 and 0.171.0).
NO_ROLLOUT = "no rollout found for thread id 00000000-0000-7000-8000-000000000002"


def test_errors_server_overloaded_is_code_32001_and_counts_attempts():
    assert ServerOverloaded.CODE == -32001
    err = ServerOverloaded(-32001, OVERLOADED, {"q": 1}, "turn/start", attempts=4)
    assert (err.code, err.message, err.data, err.method, err.attempts) == (
        -32001,
        OVERLOADED,
        {"q": 1},
        "turn/start",
        4,
    )
    assert str(err) == "turn/start: Server overloaded; retry later. (code -32001)"


def test_errors_server_overloaded_defaults_to_one_attempt_and_no_method():
    err = ServerOverloaded(-32001, OVERLOADED)
    assert (err.data, err.method, err.attempts) == (None, "", 1)
    assert str(err) == "Server overloaded; retry later. (code -32001)"


def test_errors_method_not_found_is_an_rpc_error_with_its_message():
    err = MethodNotFound(-32601, "no such method", None, "thread/rollback")
    assert (err.code, err.message, err.method) == (-32601, "no such method", "thread/rollback")
    assert str(err) == "thread/rollback: no such method (code -32601)"


def test_errors_thread_not_found_without_a_rollout_says_a_thread_that_ran_no_turn_is_lost():
    err = ThreadNotFound(-32600, NO_ROLLOUT, {"d": 1}, "thread/resume", "00000000-0000-7000-8000-000000000002")
    assert (err.code, err.message, err.data, err.method) == (-32600, NO_ROLLOUT, {"d": 1}, "thread/resume")
    assert err.thread_id == "00000000-0000-7000-8000-000000000002"
    assert str(err) == (
        "thread/resume: thread 00000000-0000-7000-8000-000000000002 not found: "
        "codex has no rollout of it in its CODEX_HOME; codex writes a thread to disk when its first "
        "turn runs, so a thread that ran no turn (or one of another CODEX_HOME) cannot be resumed, "
        "read or forked by a new process "
        f"(codex said: {NO_ROLLOUT!r}, code -32600)"
    )
    assert err.args == (str(err),)


def test_errors_thread_not_found_not_loaded_says_resume_loads_it():
    err = ThreadNotFound(-32600, "thread not loaded: t-1", None, "thread/read", "t-1")
    assert str(err) == (
        "thread/read: thread t-1 not found: it is not loaded in this codex process "
        "(Thread.resume loads a stored thread; a thread that ran no turn was never stored) "
        "(codex said: 'thread not loaded: t-1', code -32600)"
    )


def test_errors_thread_not_found_without_method_or_thread_id():
    err = ThreadNotFound(-32600, "thread not found:")
    assert (err.data, err.method, err.thread_id) == (None, "", "")
    assert str(err).startswith("thread ? not found: it is not loaded in this codex process")
    assert str(err).endswith("(codex said: 'thread not found:', code -32600)")


@pytest.mark.parametrize(
    "code, message, method, cls",
    [
        (-32001, OVERLOADED, "turn/start", ServerOverloaded),
        # The code decides, whatever the words.
        (-32001, "thread not loaded: t-1", "thread/read", ServerOverloaded),
        (-32601, "Method not found", "thread/rollback", MethodNotFound),
        (-32601, "thread not loaded: t-1", "thread/read", MethodNotFound),
        (-32600, UNKNOWN_METHOD, "thread/rollback", MethodNotFound),
        # An unknown variant of something else (a field's enum) is not a missing method.
        (-32600, UNKNOWN_METHOD, "thread/start", RpcError),
        (-32600, "Invalid request: unknown variant `high`, expected `low`", "", RpcError),
        (-32600, NO_ROLLOUT, "thread/resume", ThreadNotFound),
        (-32600, "thread not loaded: t-1", "thread/read", ThreadNotFound),
        (-32600, "thread not found: t-2", "thread/fork", ThreadNotFound),
        # Only a message that starts with codex's words names a missing thread.
        (-32600, "why: thread not found: t-2", "thread/fork", RpcError),
        (-32600, "Not initialized", "thread/start", RpcError),
        (-32602, "Method not found", "thread/start", RpcError),
        (-32000, OVERLOADED, "turn/start", RpcError),
    ],
)
def test_errors_rpc_error_picks_the_most_specific_class(code, message, method, cls):
    err = errors.rpc_error(code, message, {"raw": True}, method)
    assert type(err) is cls
    assert (err.code, err.message, err.data, err.method) == (code, message, {"raw": True}, method)


@pytest.mark.parametrize(
    "message, thread_id",
    [
        (NO_ROLLOUT, "00000000-0000-7000-8000-000000000002"),
        ("thread not loaded: t-1", "t-1"),
        ("thread not found: t-2 (gone)", "t-2"),
        ("thread not found:", ""),
    ],
)
def test_errors_rpc_error_reads_the_thread_id_out_of_codex_message(message, thread_id):
    err = errors.rpc_error(-32600, message, None, "thread/read")
    assert isinstance(err, ThreadNotFound) and err.thread_id == thread_id
    assert f"thread {thread_id or '?'} not found: " in str(err)


def test_errors_rpc_error_without_data_or_method():
    err = errors.rpc_error(-32600, "something else")
    assert type(err) is RpcError and (err.data, err.method) == (None, "")
    assert str(err) == "something else (code -32600)"
    lost = errors.rpc_error(-32600, "thread not found: t-2")
    assert str(lost).startswith("thread t-2 not found: ")


def test_rpc_error_maps_codes_and_codex_wording() -> None:
    assert type(rpc_error(-32001, "Server overloaded; retry later.", None, "m")) is ServerOverloaded
    assert type(rpc_error(-32601, "no such method", None, "m")) is MethodNotFound
    unknown = "Invalid request: unknown variant `thread/rollback`, expected one of `initialize`"  # 0.171.0
    assert type(rpc_error(-32600, unknown, None, "thread/rollback")) is MethodNotFound
    # An unknown variant of something else (a field's enum) is not a missing method.
    assert type(rpc_error(-32600, unknown, None, "thread/start")) is RpcError
    lost = rpc_error(-32600, "no rollout found for thread id 01a2-x", None, "thread/resume")
    assert isinstance(lost, ThreadNotFound) and lost.thread_id == "01a2-x"
    assert "ran no turn" in str(lost) and "thread/resume" in str(lost) and lost.code == -32600
    unloaded = rpc_error(-32600, "thread not loaded: t-1", None, "thread/read")
    assert isinstance(unloaded, ThreadNotFound) and "not loaded in this codex process" in str(unloaded)
    assert rpc_error(-32600, "thread not found: t-2").thread_id == "t-2"  # type: ignore[attr-defined]
    assert "thread t-2 not found" in str(rpc_error(-32600, "thread not found: t-2"))
    assert type(rpc_error(-32600, "something else")) is RpcError


# -- OutputValidationError ----------------------------------------------------------------


def test_errors_output_validation_error_keeps_the_text_errors_and_result():
    result = object()
    reasons = (("$.n", "is not an integer"),)
    err = OutputValidationError('{"n": "x"}', reasons, result)
    assert (err.text, err.errors, err.result) == ('{"n": "x"}', [("$.n", "is not an integer")], result)
    assert type(err.errors) is list
    assert str(err) == "the final answer does not match the output schema: $.n: is not an integer"


@pytest.mark.parametrize(
    "count, shown",
    [
        (0, ""),
        (1, "$.a: bad a"),
        (2, "$.a: bad a; $.b: bad b"),
        (3, "$.a: bad a; $.b: bad b; $.c: bad c"),
        (4, "$.a: bad a; $.b: bad b; $.c: bad c (and 1 more)"),
        (5, "$.a: bad a; $.b: bad b; $.c: bad c (and 2 more)"),
    ],
)
def test_errors_output_validation_error_shows_three_reasons_and_counts_the_rest(count, shown):
    reasons = [(f"$.{c}", f"bad {c}") for c in "abcde"[:count]]
    err = OutputValidationError(None, reasons)
    assert (err.text, err.result) == (None, None)
    assert str(err) == f"the final answer does not match the output schema: {shown}"


# -- TurnFailed and UsageLimitExceeded ----------------------------------------------------

# turn/completed status=failed of scenario err_400 (its TurnError).
TURN_ERROR = {"message": "bad request", "codexErrorInfo": "other", "additionalDetails": None}
USAGE_ERROR = {
    "message": "You've hit your usage limit. Try again at 1:00 PM.",
    "codexErrorInfo": "usageLimitExceeded",
    "additionalDetails": None,
}


def test_errors_turn_failed_carries_the_turn_error():
    err = TurnFailed("t-1", TURN_ERROR)
    assert (err.turn_id, err.error, err.info, err.message) == ("t-1", TURN_ERROR, "other", "bad request")
    assert str(err) == "turn t-1 failed: bad request"


@pytest.mark.parametrize("error", [None, {}, {"message": None}, {"message": ""}, {"codexErrorInfo": None}])
def test_errors_turn_failed_without_a_message(error):
    err = TurnFailed("t-2", error)
    assert (err.error, err.info, err.message) == (error, None, "the turn failed")
    assert str(err) == "turn t-2 failed: the turn failed"


def test_errors_turn_failed_info_may_be_an_object():
    info = {"httpConnectionFailed": {"httpStatusCode": 502}}
    err = TurnFailed("t-3", {"message": 502, "codexErrorInfo": info})
    assert err.info == info and err.message == "502"
    assert str(err) == "turn t-3 failed: 502"


def test_errors_usage_limit_exceeded_names_the_reset_time():
    snapshot = {"primary": {"usedPercent": 100, "windowDurationMins": 300, "resetsAt": 1796130000}}
    err = UsageLimitExceeded("t-1", USAGE_ERROR, 1796130000, snapshot)
    assert (err.turn_id, err.error, err.info) == ("t-1", USAGE_ERROR, "usageLimitExceeded")
    assert (err.resets_at, err.rate_limits, err.message) == (1796130000, snapshot, USAGE_ERROR["message"])
    assert err.args == (
        "turn t-1 failed: You've hit your usage limit. Try again at 1:00 PM. "
        "(the limit resets at 1796130000, Unix time)",
    )
    assert str(err) == err.args[0]


@pytest.mark.parametrize("resets_at", [0, 1796130000])
def test_errors_usage_limit_exceeded_reset_time_zero_is_still_a_time(resets_at):
    err = UsageLimitExceeded("t-1", None, resets_at)
    assert err.resets_at == resets_at and err.rate_limits is None
    assert str(err) == f"turn t-1 failed: the turn failed (the limit resets at {resets_at}, Unix time)"


def test_errors_usage_limit_exceeded_without_a_reset_time():
    err = UsageLimitExceeded("t-1", USAGE_ERROR)
    assert (err.resets_at, err.rate_limits) == (None, None)
    assert str(err) == "turn t-1 failed: You've hit your usage limit. Try again at 1:00 PM."
    assert err.args == (str(err),)


def test_errors_connect_failed_auth_rejected_and_websocket_error_say_where_and_why():
    refused = ConnectFailed("ws://127.0.0.1:9", "connection refused")
    assert (refused.url, refused.reason, refused.status) == ("ws://127.0.0.1:9", "connection refused", None)
    assert str(refused) == "cannot connect to ws://127.0.0.1:9: connection refused"
    wanted = AuthRejected("ws://h:1", 401, "Bearer")
    assert (wanted.status, wanted.wanted) == (401, "Bearer")
    assert (
        str(wanted)
        == "cannot connect to ws://h:1: the server refused the credentials (401); it wants Bearer authentication"
    )
    assert (
        str(AuthRejected("unix:///s", 403)) == "cannot connect to unix:///s: the server refused the credentials (403)"
    )
    assert str(WebSocketError("the server closed the connection", 1001)) == (
        "websocket: the server closed the connection (close code 1001)"
    )
    dropped = WebSocketError("the connection dropped without a close")
    assert dropped.code is None and str(dropped) == "websocket: the connection dropped without a close"
