"""How codexmini reaches a running server (``codexmini._connect``): the URL, the credentials.

Pure: the URL forms codex's ``--listen`` takes, what is refused up front, the
bearer token of each way to authenticate (the token files are read through
the function the caller gives), and the HS256 JWT checked against a
verification written here from the RFC (7519, 7515) rather than from the
code under test.
"""

from __future__ import annotations

import base64
import hashlib
import hmac
import json
from typing import Any, Dict

import pytest

from codexmini import ConfigError, Limits, Timeouts
from codexmini._connect import Address, Connect, SignedToken, as_connect, mint_jwt, parse_url


@pytest.mark.parametrize(
    "url, address",
    [
        ("ws://127.0.0.1:4222", Address("tcp", "127.0.0.1", 4222, "/")),
        ("ws://localhost:80/rpc", Address("tcp", "localhost", 80, "/rpc")),
        ("ws://[::1]:9000", Address("tcp", "::1", 9000, "/")),
        ("unix:///var/tmp/codex.sock", Address("unix", "/var/tmp/codex.sock", 0, "/")),
        ("unix:///var/tmp/with%20space.sock", Address("unix", "/var/tmp/with space.sock", 0, "/")),
    ],
)
def test_connect_urls_codex_listens_on(url, address):
    assert parse_url(url) == address
    assert Connect(url).address == address


@pytest.mark.parametrize(
    "url, message",
    [
        ("", "must be a ws:// or unix:// URL"),
        (None, "must be a ws:// or unix:// URL"),
        ("wss://h:1", "codex serves no TLS"),
        ("http://h:1", "the scheme must be ws:// or unix://"),
        ("ws://user:secret@h:1", "must not carry credentials"),
        ("ws://h:1/?token=x", "no query or fragment"),
        ("ws://h:1/#x", "no query or fragment"),
        ("ws://h", "needs a host and a port"),
        ("ws://:1", "needs a host and a port"),
        ("ws://h:99999", "is not a URL"),
        ("unix://relative.sock", "unix:///absolute/path"),
        ("unix://host/abs.sock", "unix:///absolute/path"),
    ],
)
def test_connect_refuses_what_reaches_no_server(url, message):
    with pytest.raises(ConfigError, match=message):
        Connect(url)


def test_connect_credentials_one_way_and_never_in_the_repr():
    with pytest.raises(ConfigError, match="one way to authenticate, not token and token_file"):
        Connect("ws://h:1", token="t", token_file="/f")
    signed = SignedToken("/secret", "iss", "aud")
    with pytest.raises(ConfigError, match="not token_file and signed"):
        Connect("ws://h:1", token_file="/f", signed=signed)
    for bad in ("", "has space", "tab\t", "é", 3):
        with pytest.raises(ConfigError, match="printable ASCII"):
            Connect("ws://h:1", token=bad)  # type: ignore[arg-type]
    with pytest.raises(ConfigError, match="token_file must be a path"):
        Connect("ws://h:1", token_file="")
    with pytest.raises(ConfigError, match="signed must be a SignedToken, not dict"):
        Connect("ws://h:1", signed={"secret_file": "/s"})  # type: ignore[arg-type]
    with pytest.raises(ConfigError, match="timeouts must be a Timeouts"):
        Connect("ws://h:1", timeouts=5)  # type: ignore[arg-type]
    with pytest.raises(ConfigError, match="limits must be a Limits"):
        Connect("ws://h:1", limits={})  # type: ignore[arg-type]
    shown = repr(Connect("ws://h:1", token="tok-very-secret", timeouts=Timeouts(initialize=3), limits=Limits()))
    assert "tok-very-secret" not in shown and "ws://h:1" in shown


def files(**content: bytes) -> Any:
    def read(path: str) -> bytes:
        return content[path.strip("/")]

    return read


def test_connect_bearer_from_a_token_a_token_file_or_none():
    assert Connect("ws://h:1").headers(files(), 0) == []
    assert Connect("ws://h:1", token="tok-1").headers(files(), 0) == [("Authorization", "Bearer tok-1")]
    # The binary takes the file's content without its surrounding whitespace.
    assert Connect("ws://h:1", token_file="/t").bearer(files(t=b"  tok-2\n"), 0) == "tok-2"
    for empty in (b"", b"\n  \n", b"two words"):
        with pytest.raises(ConfigError, match="holds no token"):
            Connect("ws://h:1", token_file="/t").bearer(files(t=empty), 0)


def verify(token: str, secret: bytes) -> Dict[str, Any]:
    """RFC 7515 compact serialization, HS256, checked from scratch."""
    head, body, signature = token.split(".")

    def unb64(part: str) -> bytes:
        return base64.urlsafe_b64decode(part + "=" * (-len(part) % 4))

    assert json.loads(unb64(head)) == {"alg": "HS256", "typ": "JWT"}
    expected = hmac.new(secret, f"{head}.{body}".encode(), hashlib.sha256).digest()
    assert hmac.compare_digest(unb64(signature), expected)
    assert "=" not in token
    claims: Dict[str, Any] = json.loads(unb64(body))
    return claims


def test_connect_signed_bearer_is_an_hs256_jwt_of_the_trimmed_secret():
    signed = SignedToken("/s", "issuer-x", "audience-y", ttl_s=90)
    token = Connect("ws://h:1", signed=signed).bearer(files(s=b"the-shared-secret\n"), 1_800_000_000.25)
    assert token is not None
    claims = verify(token, b"the-shared-secret")
    assert claims == {"iss": "issuer-x", "aud": "audience-y", "iat": 1_800_000_000, "exp": 1_800_000_091}
    with pytest.raises(ConfigError, match="secret_file '/s' is empty"):
        Connect("ws://h:1", signed=signed).bearer(files(s=b" \n"), 0)
    assert verify(mint_jwt(b"k", {"a": [1, "é"]}), b"k") == {"a": [1, "é"]}


@pytest.mark.parametrize(
    "options, message",
    [
        ({"secret_file": ""}, "SignedToken.secret_file must be a non-empty string"),
        ({"issuer": None}, "SignedToken.issuer must be a non-empty string"),
        ({"audience": 3}, "SignedToken.audience must be a non-empty string"),
        ({"ttl_s": 0}, "SignedToken.ttl_s must be a positive number of seconds"),
    ],
)
def test_connect_signed_token_checks_itself(options, message):
    given = {"secret_file": "/s", "issuer": "i", "audience": "a", **options}
    with pytest.raises(ConfigError, match=message):
        SignedToken(**given)


def test_connect_from_a_url_with_a_token_or_as_given():
    made = as_connect("ws://h:1", token="tok")
    assert made == Connect("ws://h:1", token="tok")
    assert as_connect(made) is made
    with pytest.raises(ConfigError, match="give the token in the Connect value"):
        as_connect(made, token="other")
