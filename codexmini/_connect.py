"""How codexmini reaches a running app-server: one frozen value, checked once.  Pure.

:class:`Connect` is the other way in beside :class:`~codexmini.Launch`:
instead of starting a child, it names a server already listening --
``codex app-server --listen ws://IP:PORT`` (WebSocket over TCP) or
``--listen unix://PATH`` (WebSocket over a unix socket) -- and how to
prove we may talk to it: a capability token (``--ws-auth
capability-token``), given as a string or read from a file, or a signed
bearer token (``--ws-auth signed-bearer-token``): an HS256 JWT minted from
the server's shared-secret file with its issuer and audience
(:class:`SignedToken`).  Both travel as ``Authorization: Bearer …`` in the
opening handshake and nowhere else: not in the URL, a repr, an error
message or a log record.

What the binary checks (codex 0.171.0, measured): a capability token is the
token file's content without its surrounding whitespace; a JWT is signed
with the shared-secret file's content likewise trimmed, must carry ``exp``
(``iat`` is optional) and the exact issuer, and names the audience as a
string or in a list; a missing or wrong token is ``401`` with no
``WWW-Authenticate``.
"""

from __future__ import annotations

import json
import math
from typing import TYPE_CHECKING, Any, Callable, List, NamedTuple, Optional, Tuple, Union

from ._errors import ConfigError
from ._launch import Limits, Timeouts, positive_seconds

if TYPE_CHECKING:  # the checker sees the standard library; at run time, ._dataclasses (nothing compiled)
    from dataclasses import dataclass, field
else:
    from ._dataclasses import dataclass, field


#: The URL schemes codexmini connects to: WebSocket over TCP, over a unix socket.
SCHEMES = ("ws", "unix")

#: Reads a whole file: ``path`` → its bytes (raises ``OSError``).
ReadFile = Callable[[str], bytes]


class Address(NamedTuple):
    """Where a :class:`Connect` goes: ``("tcp", host, port, path)`` or
    ``("unix", socket_path, 0, "/")``; ``path`` is the HTTP path of the upgrade."""

    family: str
    host: str
    port: int
    path: str


def parse_url(url: str) -> Address:
    """``ws://HOST:PORT[/PATH]`` or ``unix:///ABSOLUTE/PATH``, as codex's
    ``--listen`` takes them; a :class:`~codexmini.ConfigError` for anything else."""
    if not isinstance(url, str) or not url:
        raise ConfigError(f"Connect.url must be a ws:// or unix:// URL, not {url!r}")
    from urllib.parse import unquote, urlsplit  # here, not with the package: only a Connect needs it

    try:
        parts = urlsplit(url)
        port = parts.port
    except ValueError as exc:
        raise ConfigError(f"Connect.url {url!r} is not a URL: {exc}") from None
    if parts.scheme == "wss":
        raise ConfigError("codex serves no TLS (wss://): reach a remote server through an SSH tunnel to ws://127.0.0.1")
    if parts.scheme not in SCHEMES:
        raise ConfigError(f"Connect.url {url!r}: the scheme must be ws:// or unix://")
    if parts.username is not None or parts.password is not None:
        raise ConfigError("Connect.url must not carry credentials: give token= or token_file= instead")
    if parts.query or parts.fragment:
        raise ConfigError(f"Connect.url {url!r}: no query or fragment")
    if parts.scheme == "unix":
        path = unquote(parts.path)
        if parts.netloc or not path.startswith("/"):
            raise ConfigError(f"Connect.url {url!r}: a unix socket is unix:///absolute/path")
        return Address("unix", path, 0, "/")
    if not parts.hostname or port is None:
        raise ConfigError(f"Connect.url {url!r}: ws:// needs a host and a port (ws://127.0.0.1:4222)")
    return Address("tcp", parts.hostname, port, parts.path or "/")


@dataclass(frozen=True)
class SignedToken:
    """A signed bearer token (``--ws-auth signed-bearer-token``): an HS256 JWT
    minted at each connection from the server's ``secret_file`` (its content,
    trimmed, is the key), with ``issuer``, ``audience`` and an expiry
    ``ttl_s`` seconds ahead.  The secret is read when connecting, never kept."""

    secret_file: str
    issuer: str
    audience: str
    ttl_s: float = 300.0

    def __post_init__(self) -> None:
        for name in ("secret_file", "issuer", "audience"):
            value = getattr(self, name)
            if not isinstance(value, str) or not value:
                raise ConfigError(f"SignedToken.{name} must be a non-empty string, not {value!r}")
        positive_seconds("SignedToken", "ttl_s", self.ttl_s)

    def mint(self, secret: bytes, now: float) -> str:
        """The JWT for ``now`` (seconds since the epoch), signed with ``secret``."""
        return mint_jwt(
            secret, {"iss": self.issuer, "aud": self.audience, "iat": int(now), "exp": math.ceil(now + self.ttl_s)}
        )


def _b64(data: bytes) -> str:
    import base64

    return base64.urlsafe_b64encode(data).rstrip(b"=").decode("ascii")


def mint_jwt(secret: bytes, claims: Any) -> str:
    """An HS256 JSON Web Token of ``claims`` (RFC 7519), signed with ``secret``."""
    import hashlib  # here, not with the package: only a signed token needs them
    import hmac

    head = _b64(b'{"alg":"HS256","typ":"JWT"}')
    body = _b64(json.dumps(claims, separators=(",", ":"), sort_keys=True).encode("utf-8"))
    signature = hmac.new(secret, f"{head}.{body}".encode("ascii"), hashlib.sha256).digest()
    return f"{head}.{body}.{_b64(signature)}"


@dataclass(frozen=True)
class Connect:
    """How to reach a running ``codex app-server``: everything about the
    connection, checked once.

    ``url``: ``ws://HOST:PORT`` (``--listen ws://…``) or ``unix:///PATH``
    (``--listen unix://PATH``).  Credentials, at most one way: ``token`` (a
    capability token), ``token_file`` (the file holding it, read at each
    connection), or ``signed`` (a :class:`SignedToken`).  ``timeouts`` and
    ``limits`` as for :class:`~codexmini.Launch`; ``Timeouts.initialize``
    also bounds reaching the server and its opening handshake.  The
    ``repr`` never shows a token.
    """

    url: str
    token: Optional[str] = field(default=None, repr=False)
    token_file: Optional[str] = None
    signed: Optional[SignedToken] = None
    timeouts: Timeouts = field(default_factory=Timeouts)
    limits: Limits = field(default_factory=Limits)

    def __post_init__(self) -> None:
        parse_url(self.url)
        given = [name for name in ("token", "token_file", "signed") if getattr(self, name) is not None]
        if len(given) > 1:
            raise ConfigError(f"Connect takes one way to authenticate, not {' and '.join(given)}")
        if self.token is not None and (not isinstance(self.token, str) or not _printable(self.token)):
            raise ConfigError("Connect.token must be a non-empty string of printable ASCII")
        if self.token_file is not None and (not isinstance(self.token_file, str) or not self.token_file):
            raise ConfigError(f"Connect.token_file must be a path, not {self.token_file!r}")
        if self.signed is not None and not isinstance(self.signed, SignedToken):
            raise ConfigError(f"Connect.signed must be a SignedToken, not {type(self.signed).__name__}")
        if not isinstance(self.timeouts, Timeouts):
            raise ConfigError(f"Connect.timeouts must be a Timeouts, not {type(self.timeouts).__name__}")
        if not isinstance(self.limits, Limits):
            raise ConfigError(f"Connect.limits must be a Limits, not {type(self.limits).__name__}")

    @property
    def address(self) -> Address:
        """Where to connect (:func:`parse_url`)."""
        return parse_url(self.url)

    def bearer(self, read_file: ReadFile, now: float) -> Optional[str]:
        """The bearer token to send (``None``: none), reading a token or
        secret file with ``read_file`` (the caller's I/O) at ``now``."""
        if self.token is not None:
            return self.token
        if self.token_file is not None:
            token = read_file(self.token_file).strip().decode("ascii", "replace")
            if not _printable(token):
                raise ConfigError(f"Connect.token_file {self.token_file!r} holds no token (printable ASCII)")
            return token
        if self.signed is not None:
            secret = read_file(self.signed.secret_file).strip()
            if not secret:
                raise ConfigError(f"SignedToken.secret_file {self.signed.secret_file!r} is empty")
            return self.signed.mint(secret, now)
        return None

    def headers(self, read_file: ReadFile, now: float) -> List[Tuple[str, str]]:
        """The opening handshake's extra headers: the ``Authorization`` one, if any."""
        token = self.bearer(read_file, now)
        return [] if token is None else [("Authorization", f"Bearer {token}")]


def _printable(token: str) -> bool:
    return bool(token) and all(" " < c < "\x7f" for c in token)


def as_connect(target: Union[str, Connect], token: Optional[str] = None) -> Connect:
    """A :class:`Connect` from a URL (with an optional ``token``) or as given."""
    if isinstance(target, Connect):
        if token is not None:
            raise ConfigError("give the token in the Connect value, not beside it")
        return target
    return Connect(target, token=token)


__all__ = ["Address", "Connect", "SCHEMES", "SignedToken", "as_connect", "mint_jwt", "parse_url"]
