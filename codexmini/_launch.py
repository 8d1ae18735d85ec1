"""How codexmini starts codex: one frozen description, checked once.  Pure.

:class:`Launch` says everything about the ``codex app-server`` child to
start: the binary, the ``-c`` config items and extra arguments, the model
:class:`~codexmini.ModelEndpoint`, the environment (what is added, which
parent variables pass the allowlist, ``CODEX_HOME``), the working directory,
the launcher that starts it, and how long the conversation waits
(:class:`Timeouts`) and how much it holds (:class:`Limits`).  It checks
itself when built, so a mistake is a :class:`~codexmini.ConfigError` before
anything starts, and it is passed whole: :meth:`AppServerClient.start
<codexmini.AppServerClient.start>`, :func:`codexmini.run`,
:mod:`codexmini.sync`, :class:`~codexmini.AgentConfig` and the CLI take one.

:func:`plan` turns it, with the binary found and the parent's environment,
into the child's argv, environment and working directory.  The binary lookup
(:func:`._binary.find_codex`) reads the file system, so it is not here: it
starts from the launching process's working directory, never the child's.

A Launch is one way to reach codex: the child it starts is the server.
Other ways (a server already listening on a socket) will be values beside it.
"""

from __future__ import annotations

import math
from types import MappingProxyType
from typing import TYPE_CHECKING, Any, Dict, Literal, Mapping, Optional, Sequence, Tuple

from ._dataclasses import names
from ._errors import ConfigError

#: The wire's ``DEFAULT_MAX_FRAME_BYTES``, spelled here so that the agent's import (which
#: reads ``Limits``) does not load the wire and ``json``; ``tests/test_launch.py`` holds the two equal.
DEFAULT_MAX_FRAME_BYTES = 64 * 1024 * 1024

if TYPE_CHECKING:
    from ._endpoint import ModelEndpoint
    from ._transport import Launcher


if TYPE_CHECKING:  # the checker sees the standard library; at run time, ._dataclasses (nothing compiled)
    from dataclasses import dataclass, field, replace
    from typing import NamedTuple
else:
    from ._dataclasses import NamedTuple, dataclass, field, replace


#: What a subscription over its queue size does (:attr:`Limits.overflow`).
Overflow = Literal["wait", "drop"]
#: The subscription key (and the RPC core's route) of notifications that name no thread.
GLOBAL: Optional[str] = None
#: The subscription key of every notification (no route is this: thread ids are not ``*``).
ALL = "*"


def positive_seconds(owner: str, name: str, value: Any) -> None:
    """A :class:`~codexmini.ConfigError` unless ``value`` is a finite number of seconds above 0."""
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(value) or value <= 0:
        raise ConfigError(f"{owner}.{name} must be a positive number of seconds, not {value!r}")


def positive_int(owner: str, name: str, value: Any) -> None:
    """A :class:`~codexmini.ConfigError` unless ``value`` is an ``int`` (not a ``bool``) of at least 1."""
    if isinstance(value, bool) or not isinstance(value, int) or value < 1:
        raise ConfigError(f"{owner}.{name} must be a whole number >= 1, not {value!r}")


@dataclass(frozen=True)
class Timeouts:
    """How long the conversation with codex waits, in seconds.

    ``initialize``: the handshake's answer.  ``request``: each request's answer,
    its write included (a child that stops reading cannot hang a caller);
    past it the request raises :class:`~codexmini.RequestTimeout` and the
    client counts as unhealthy.  ``handler``: a server-request handler's
    decision (an approval); past it codex gets the fail-closed answer.
    ``close``: the child's own exit once its stdin is closed, before it is
    signalled (``SIGTERM``, then ``SIGKILL``).  ``model_retry``: how long a
    turn may go on with codex retrying the model and nothing else arriving
    (an unreachable endpoint, a network that is down: codex itself retries
    for ever); past it the turn is interrupted and raises
    :class:`~codexmini.ModelUnreachable` with codex's reason.  ``None``:
    wait as long as codex retries.  ``write``: how long one frame may take to
    be accepted by codex (every write: requests, notifications, answers,
    ``turn/interrupt``); past it the client is unhealthy and the write raises
    :class:`~codexmini.WriteTimeout`.  ``consumer``: how long the connection
    waits for a full subscription whose consumer takes nothing at all (see
    :attr:`Limits.overflow`); past it that subscription drops its deltas
    instead (logged, counted in ``stats["stalled"]``) and reading goes on.
    ``None``: wait for it for ever.
    """

    initialize: float = 60.0
    request: float = 120.0
    handler: float = 300.0
    close: float = 5.0
    model_retry: Optional[float] = 120.0
    write: float = 30.0
    consumer: Optional[float] = 60.0

    def __post_init__(self) -> None:
        for name in names(type(self)):
            value = getattr(self, name)
            if not (name in _UNBOUNDED and value is None):
                positive_seconds("Timeouts", name, value)


#: The Timeouts that may be ``None`` (no bound).
_UNBOUNDED = frozenset({"model_retry", "consumer"})

#: What a subscription over its ``Limits.queue_size`` does.
OVERFLOWS = ("wait", "drop")


@dataclass(frozen=True)
class Limits:
    """How much one conversation holds, so that no server can grow it without bound.

    ``max_frame_bytes``: the longest frame read (a longer line is skipped and
    counted).  ``queue_size``: notifications queued per subscription before
    its ``overflow`` applies: ``"wait"`` (back-pressure, the default) stops
    reading from codex until the consumer has taken what is queued, so
    nothing is lost and memory stays bounded (one read more than
    ``queue_size`` at most) while every other subscription of the connection
    waits too (and a consumer that takes nothing for ``Timeouts.consumer``
    is switched to dropping); ``"drop"`` drops its deltas, counted and
    logged, for consumers that prefer freshness (frames that end or shape a
    turn pass, up to twice ``queue_size``).  ``unclaimed_threads`` and
    ``unclaimed_bytes``: what is held for threads nobody subscribed to yet
    (the ``warning`` codex sends during ``thread/start``), the oldest dropped
    first.
    """

    max_frame_bytes: int = DEFAULT_MAX_FRAME_BYTES
    queue_size: int = 10000
    unclaimed_threads: int = 32
    unclaimed_bytes: int = 8 * 1024 * 1024
    overflow: Overflow = "wait"

    def __post_init__(self) -> None:
        for name in names(type(self)):
            if name != "overflow":
                positive_int("Limits", name, getattr(self, name))
        check_overflow("Limits.overflow", self.overflow)


def check_overflow(what: str, value: Any) -> None:
    """A :class:`~codexmini.ConfigError` unless ``value`` is one of :data:`OVERFLOWS`."""
    if value not in OVERFLOWS:
        raise ConfigError(f"{what} must be one of {', '.join(map(repr, OVERFLOWS))}, not {value!r}")


def _strings(name: str, value: Any) -> Tuple[str, ...]:
    """A sequence of strings as a tuple; a lone string is a mistake, not a sequence of characters."""
    if isinstance(value, (str, bytes)) or not isinstance(value, Sequence):
        raise ConfigError(f"Launch.{name} must be a sequence of strings, not {value!r}")
    bad = [item for item in value if not isinstance(item, str) or not item]
    if bad:
        raise ConfigError(f"Launch.{name} items must be non-empty strings, not {bad[0]!r}")
    return tuple(value)


def _environment(name: str, value: Any) -> Mapping[str, str]:
    if not isinstance(value, Mapping):
        raise ConfigError(f"Launch.{name} must be a mapping of names to strings, not {type(value).__name__}")
    for key, item in value.items():
        if not isinstance(key, str) or not key or "=" in key or "\0" in key:
            raise ConfigError(f"Launch.{name} has a name no environment can hold: {key!r}")
        if not isinstance(item, str) or "\0" in item:
            raise ConfigError(f"Launch.{name}[{key!r}] must be a string without NUL characters")
    return MappingProxyType(dict(value))


def _is_endpoint(value: Any) -> bool:
    from ._endpoint import ModelEndpoint  # here, not with the package: only an endpoint needs it

    return isinstance(value, ModelEndpoint)


def _path(name: str, value: Any) -> None:
    if value is not None and (not isinstance(value, str) or not value):
        raise ConfigError(f"Launch.{name} must be a non-empty path string or None, not {value!r}")


@dataclass(frozen=True)
class Launch:
    """How to start ``codex app-server``: everything about the child, checked once.

    ``codex_bin``: the binary (default: found as :func:`._binary.find_codex`
    says: ``$CODEXMINI_CODEX_BIN``, a ``.codex/`` npm install in the launching
    process's working directory or above, ``codex`` on ``PATH``).
    ``config``: ``KEY=VALUE`` items passed as ``-c`` (values are TOML), after
    the ``endpoint``'s own.  ``args``: more arguments after them.
    ``endpoint``: where codex sends model requests (its key travels in the
    child's environment, never in argv).  ``env``: variables set in the
    child; ``pass_env``: names of the parent's variables to pass through the
    allowlist (secrets such as ``OPENAI_API_KEY``); ``parent_env``: the
    environment the child's is drawn from (default: this process's, read at
    launch).  ``codex_home``: the child's ``CODEX_HOME``.  ``cwd``: the
    child's working directory (default: the workspace of the run or agent
    that starts it, else this process's).  ``launcher``: what starts it (the
    in-memory fake of :mod:`codexmini.testing`; default: a real child
    process).  ``timeouts`` and ``limits``: see :class:`Timeouts` and
    :class:`Limits`.
    """

    codex_bin: Optional[str] = None
    config: Sequence[str] = ()
    args: Sequence[str] = ()
    endpoint: Optional[ModelEndpoint] = None
    env: Mapping[str, str] = field(default_factory=dict)
    pass_env: Sequence[str] = ()
    parent_env: Optional[Mapping[str, str]] = None
    codex_home: Optional[str] = None
    cwd: Optional[str] = None
    launcher: Optional["Launcher"] = None
    timeouts: Timeouts = Timeouts()
    limits: Limits = Limits()

    def __post_init__(self) -> None:
        set_ = object.__setattr__  # frozen: the checked, immutable forms replace what was given
        _path("codex_bin", self.codex_bin)
        set_(self, "config", _strings("config", self.config))
        bad = [item for item in self.config if "=" not in item or not item.partition("=")[0].strip()]
        if bad:
            raise ConfigError(f"config items must be KEY=VALUE, not {bad[0]!r}")
        set_(self, "args", _strings("args", self.args))
        if self.endpoint is not None and not _is_endpoint(self.endpoint):
            raise ConfigError(f"Launch.endpoint must be a ModelEndpoint or None, not {type(self.endpoint).__name__}")
        set_(self, "env", _environment("env", self.env))
        set_(self, "pass_env", _strings("pass_env", self.pass_env))
        if self.parent_env is not None:
            set_(self, "parent_env", _environment("parent_env", self.parent_env))
        _path("codex_home", self.codex_home)
        _path("cwd", self.cwd)
        if self.launcher is not None and not callable(self.launcher):
            raise ConfigError(f"Launch.launcher must be callable, not {self.launcher!r}")
        if not isinstance(self.timeouts, Timeouts):
            raise ConfigError(f"Launch.timeouts must be a Timeouts, not {type(self.timeouts).__name__}")
        if not isinstance(self.limits, Limits):
            raise ConfigError(f"Launch.limits must be a Limits, not {type(self.limits).__name__}")

    def __repr__(self) -> str:  # (defined here, so the dataclass writes none)
        # What differs from the defaults; of the environments only the names
        # (a value may be a secret).
        shown = []
        for name in names(type(self)):
            value = getattr(self, name)
            if value == _DEFAULTS[name]:
                continue
            if name in ("env", "parent_env"):
                value = sorted(value)
            shown.append(f"{name}={value!r}")
        return f"Launch({', '.join(shown)})"

    def for_workspace(self, cwd: Optional[str]) -> "Launch":
        """This launch with ``cwd`` as the child's working directory, unless it has one."""
        return self if self.cwd is not None or cwd is None else replace(self, cwd=cwd)


_DEFAULTS: Dict[str, Any] = {name: getattr(Launch(), name) for name in names(Launch)}


class Plan(NamedTuple):
    """What :func:`plan` makes of a :class:`Launch`: the child's argv,
    environment and working directory."""

    argv: Tuple[str, ...]
    env: Dict[str, str]
    cwd: Optional[str]


def plan(launch: Launch, binary: str, parent_env: Mapping[str, str]) -> Plan:
    """The child to start: ``binary app-server -c …`` (the endpoint's provider
    items first: a later ``-c`` assigning the whole table would replace them),
    its environment (the allowlisted ``parent_env``, the passed names, then
    ``env``, the endpoint's key and ``CODEX_HOME``) and working directory."""
    argv = [binary, "app-server"]
    endpoint = launch.endpoint
    for item in (*(endpoint.config() if endpoint is not None else ()), *launch.config):
        argv += ["-c", item]
    argv += launch.args
    extra = dict(launch.env)
    if endpoint is not None:
        extra.update(endpoint.env())
    if launch.codex_home is not None:
        extra["CODEX_HOME"] = launch.codex_home
    from ._environment import child_environment  # here, not with the package: only a start needs it

    return Plan(tuple(argv), child_environment(parent_env, extra, launch.pass_env), launch.cwd)


__all__ = ["positive_seconds", "Launch", "Limits", "Plan", "Timeouts", "plan"]
