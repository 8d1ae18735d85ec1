"""The error tree of ``codexmini._errors``: what a caller catches, reads and prints.

The tree is the one drawn in the module docstring; each error's attributes and
message are what a caller (or a log line) sees.  Plain values: nothing is
raised through a client here.
"""

from __future__ import annotations

import pytest

from codexmini import _errors as errors
from codexmini._errors import (
    BinaryNotFound,
    ClientClosed,
    CodexminiError,
    CodexTimeout,
    ConfigError,
    MethodNotFound,
    OutputValidationError,
    ProcessExited,
    ProtocolError,
    RequestTimeout,
    RpcError,
    SchemaError,
    ServerOverloaded,
    SessionLogError,
    ThreadNotFound,
    TransportError,
    TurnFailed,
    TurnTimeout,
    UsageLimitExceeded,
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
    ClientClosed: (TransportError,),
    RequestTimeout: (TransportError, CodexTimeout),
    CodexTimeout: (CodexminiError,),
    TurnTimeout: (CodexTimeout,),
    BinaryNotFound: (CodexminiError,),
    ConfigError: (CodexminiError,),
    SchemaError: (CodexminiError,),
    OutputValidationError: (CodexminiError,),
    SessionLogError: (CodexminiError,),
    TurnFailed: (CodexminiError,),
    UsageLimitExceeded: (TurnFailed,),
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
