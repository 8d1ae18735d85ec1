"""The conformance suite's view of the schema: the fixtures, jsonschema, and the catalog.

The engine lives in the package (:mod:`codexmini._schema`: bundle loading,
routing by method, response derivation, the strict undeclared walk,
:class:`FrameValidator`), so the smoke run can validate a vendored copy's
frames with the standard library alone.  This module adds what only the
repository has:

* the verbatim bundles under ``fixtures/schema/<version>/<flavor>/`` (kept by
  ``tools/schema_fixtures.py``), loaded once each by :meth:`SchemaBundle.load`;
* ``jsonschema``'s Draft 7 validator as the engine, the reference the stdlib
  validator is proven against (``tests/test_jsonschema.py``);
* :data:`KNOWN_UNDECLARED`, the catalog of fields codex really sends but the
  chosen flavor does not declare, per codex version,
  checked against live traffic by ``conformance/test_live_frames.py``, which
  is the default allow-list of this module's :class:`FrameValidator`;
* :class:`ServerVersionValidator`, the validator the pytest plugin attaches to
  every client: it validates a connection against the schema of the codex
  version the server says it is (the ``initialize`` response's
  ``userAgent``), so a live run against the oldest supported binary, or a
  replay of its recordings, is held to that binary's own schema.

Cost (CPython 3.11, jsonschema 4.26, warm caches, strict pass included):
about 0.08 ms for an ``item/agentMessage/delta``, 0.5 ms for a ``thread/start``
request and result, 0.8 ms for an ``item/completed`` (its ``ThreadItem``
``oneOf`` must try every branch), 0.4 ms per frame averaged over a real
46-frame turn with an approval -- roughly 150 times a ``json.loads`` of the
same line.  The strict walk is about a third of it, jsonschema the rest.
Loading a bundle takes under 10 ms.  So thousands of frames cost a second or
two per test run.
"""

from __future__ import annotations

import functools
import os
import re
from typing import Any, Dict, FrozenSet, Iterable, List, Mapping, Optional, Tuple

import jsonschema

from codexmini import CODEX_VERSION, _schema
from codexmini._binary import version_key
from codexmini._schema import (
    BUNDLE_FILE,
    CLIENT_NOTIFICATION,
    CLIENT_REQUEST,
    ENVELOPES,
    FLAVORS,
    IN,
    OUT,
    REQUEST_UNIONS,
    RESPONSE_OVERRIDES,
    SERVER_NOTIFICATION,
    SERVER_REQUEST,
    UNIONS,
    AllowList,
    KnownField,
    Problem,
    child_path,
)

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
FIXTURES = os.path.join(ROOT, "fixtures", "schema")

#: jsonschema's Draft 7 validator, the engine of every bundle loaded here.
JSONSCHEMA = _schema.jsonschema_engine(jsonschema)


# ---------------------------------------------------------------------------
# Known undeclared fields

_STABLE_EXPERIMENTAL = "an experimental field, sent even without experimentalApi"

#: ``config/read``'s ``config`` is ``Config``, which declares 27 settings and
#: ``additionalProperties: true``: codex's struct with a flattened map of every
#: other setting (about 140 more, varying by version: the ``config_write``
#: fixtures).  Allowed, never declared -- in both flavors of every version.
OPEN_CONFIG = KnownField(
    "response", "config/read", "$.result.config.*", "Config is an open map (additionalProperties: true)"
)

#: The requests whose result holds the wire ``Thread`` at ``thread``
#: (``thread/start``'s are listed on their own below), each recorded by the
#: thread scenarios (``fixtures/<version>/resume`` …).
_THREAD_RESULTS = (
    "thread/resume",
    "thread/fork",
    "thread/read",
    "thread/unarchive",
    "thread/rollback",
    "thread/revert",
)


def _thread_results(thread_fields: Tuple[str, ...], resume_fields: Tuple[str, ...]) -> List[KnownField]:
    """The experimental ``Thread`` fields in every result that holds a thread
    (``thread/list`` holds them in ``data``), and what ``thread/resume`` and
    ``thread/fork`` send beside thread/start's experimental ones."""
    return [
        *(
            KnownField("response", m, f"$.result.thread.{n}", _STABLE_EXPERIMENTAL)
            for m in _THREAD_RESULTS
            for n in thread_fields
        ),
        *(KnownField("response", "thread/list", f"$.result.data[].{n}", _STABLE_EXPERIMENTAL) for n in thread_fields),
        *(
            KnownField("response", m, f"$.result.{n}", _STABLE_EXPERIMENTAL)
            for m in ("thread/resume", "thread/fork")
            for n in ("activePermissionProfile", "multiAgentMode", "runtimeWorkspaceRoots")
        ),
        *(KnownField("response", "thread/resume", f"$.result.{n}", _STABLE_EXPERIMENTAL) for n in resume_fields),
    ]


#: Per flavor: what codex 0.149.1 sends that the flavor does not declare.
#: The experimental bundle declares everything the binary sends -- including
#: ``emittedAtMs``, which ``ServerNotification`` declares at the union level
#: (``properties`` beside ``oneOf``), easy to miss.  The
#: stable bundle leaves out the experimental fields the server sends anyway.
KNOWN_UNDECLARED_0_149_1: Mapping[str, FrozenSet[KnownField]] = {
    "experimental": frozenset([OPEN_CONFIG]),
    "stable": frozenset(
        [
            OPEN_CONFIG,
            *(
                KnownField("response", "thread/start", f"$.result.{name}", _STABLE_EXPERIMENTAL)
                for name in (
                    "activePermissionProfile",
                    "multiAgentMode",
                    "runtimeWorkspaceRoots",
                    "thread.canAcceptDirectInput",
                    "thread.extra",
                    "thread.historyMode",
                )
            ),
            *(
                KnownField("notification", "thread/started", f"$.params.thread.{name}", _STABLE_EXPERIMENTAL)
                for name in ("canAcceptDirectInput", "extra", "historyMode")
            ),
            KnownField(
                "notification",
                "thread/settings/updated",
                "$.params.threadSettings.multiAgentMode",
                _STABLE_EXPERIMENTAL,
            ),
            *(
                KnownField("request", "item/commandExecution/requestApproval", f"$.params.{name}", _STABLE_EXPERIMENTAL)
                for name in ("availableDecisions", "additionalPermissions")
            ),
            # Ours: codexmini initializes with experimentalApi and may steer a
            # turn's collaboration mode.
            KnownField("request", "turn/start", "$.params.collaborationMode", "experimental turn/start param"),
            *_thread_results(
                ("canAcceptDirectInput", "extra", "historyMode"),
                ("initialTurnsPage", "itemsBackwardsCursor", "turnsBackwardsCursor"),
            ),
        ]
    ),
}

#: The same for codex 0.171.0, from ``conformance/test_live_frames.py`` run
#: against it: ``historyMode`` is declared now, and the thread's
#: ``attachedToThreadId``, ``daybreakEnabled`` and ``environments`` are new
#: experimental fields sent without experimentalApi.  The approval, settings
#: and turn/start fields are still experimental-only in its bundles.
KNOWN_UNDECLARED_0_171_0: Mapping[str, FrozenSet[KnownField]] = {
    "experimental": frozenset([OPEN_CONFIG]),
    "stable": frozenset(
        [
            OPEN_CONFIG,
            *(
                KnownField("response", "thread/start", f"$.result.{name}", _STABLE_EXPERIMENTAL)
                for name in (
                    "activePermissionProfile",
                    "multiAgentMode",
                    "runtimeWorkspaceRoots",
                    "thread.attachedToThreadId",
                    "thread.canAcceptDirectInput",
                    "thread.daybreakEnabled",
                    "thread.environments",
                    "thread.extra",
                )
            ),
            *(
                KnownField("notification", "thread/started", f"$.params.thread.{name}", _STABLE_EXPERIMENTAL)
                for name in ("attachedToThreadId", "canAcceptDirectInput", "daybreakEnabled", "environments", "extra")
            ),
            *(
                k
                for k in KNOWN_UNDECLARED_0_149_1["stable"]
                if k.method in ("thread/settings/updated", "item/commandExecution/requestApproval", "turn/start")
            ),
            *_thread_results(
                ("attachedToThreadId", "canAcceptDirectInput", "daybreakEnabled", "environments", "extra"),
                ("initialTurnsPage",),
            ),
            KnownField("response", "thread/read", "$.result.readState", _STABLE_EXPERIMENTAL),
            KnownField("response", "thread/list", "$.result.readStates", _STABLE_EXPERIMENTAL),
            KnownField("response", "account/read", "$.result.workspaceRouting", _STABLE_EXPERIMENTAL),
        ]
    ),
}

#: codex version → its catalog.  A version without one is held to its schema
#: with nothing allowed undeclared.
KNOWN_UNDECLARED_BY_VERSION: Mapping[str, Mapping[str, FrozenSet[KnownField]]] = {
    "0.149.1": KNOWN_UNDECLARED_0_149_1,
    "0.171.0": KNOWN_UNDECLARED_0_171_0,
}


def known_undeclared(version: str) -> Mapping[str, FrozenSet[KnownField]]:
    """The catalog of codex ``version`` (flavor → fields), empty when it has none."""
    return KNOWN_UNDECLARED_BY_VERSION.get(version, {flavor: frozenset() for flavor in FLAVORS})


#: The pinned version's catalog.
KNOWN_UNDECLARED: Mapping[str, FrozenSet[KnownField]] = known_undeclared(CODEX_VERSION)


# ---------------------------------------------------------------------------
# The bundle and the validator, with this suite's defaults


class SchemaBundle(_schema.SchemaBundle):
    """A bundle validated by jsonschema; :meth:`load` reads the fixtures."""

    default_engine = JSONSCHEMA

    @classmethod
    def load(cls, version: str = CODEX_VERSION, flavor: str = "experimental") -> "SchemaBundle":
        """The bundle from ``fixtures/schema/<version>/<flavor>/`` (cached)."""
        return _load(version, flavor)

    @property
    def _validators(self) -> Dict[int, Any]:
        """The jsonschema validators built so far, one per schema object."""
        return self.engine.validators  # type: ignore[attr-defined,no-any-return]


def fixture_versions() -> List[str]:
    """The codex versions with a schema fixture, oldest first."""
    found = [v for v in os.listdir(FIXTURES) if os.path.isfile(os.path.join(FIXTURES, v, "stable", BUNDLE_FILE))]
    return sorted(found, key=lambda v: tuple(int(p) if p.isdigit() else 0 for p in v.split(".")))


@functools.lru_cache(maxsize=None)
def _load(version: str, flavor: str) -> SchemaBundle:
    if flavor not in FLAVORS:
        raise ValueError(f"flavor must be one of {FLAVORS}, not {flavor!r}")
    path = os.path.join(FIXTURES, version, flavor, BUNDLE_FILE)
    if not os.path.exists(path):
        raise FileNotFoundError(
            f"no schema fixture {path}; generate it with `make schema` "
            f"(python tools/schema_fixtures.py --write --version {version})"
        )
    return SchemaBundle.from_file(path, version, flavor)


class FrameValidator(_schema.FrameValidator):
    """:class:`codexmini._schema.FrameValidator` with this suite's defaults:
    the pinned experimental fixture and the bundle's version's catalog of
    known undeclared fields (:func:`known_undeclared`)."""

    def __init__(
        self,
        bundle: Optional[_schema.SchemaBundle] = None,
        strict: bool = True,
        allow_undeclared: Optional[AllowList] = None,
    ) -> None:
        bundle = bundle if bundle is not None else SchemaBundle.load()
        allowed = known_undeclared(bundle.version) if allow_undeclared is None else allow_undeclared
        super().__init__(bundle, strict, allowed)


#: ``codexmini/0.149.1 (Debian 12; x86_64) …``: the version after the originator.
_AGENT_VERSION = re.compile(r"^[^/\s]+/(\S+)")


def server_version(frame: Any) -> Optional[str]:
    """The codex version an ``initialize`` response's ``userAgent`` names, if
    that version has schema fixtures; otherwise ``None``."""
    result = frame.get("result") if isinstance(frame, dict) else None
    agent = result.get("userAgent") if isinstance(result, dict) else None
    match = _AGENT_VERSION.match(agent) if isinstance(agent, str) else None
    if match is None:
        return None
    try:
        version_key(match.group(1))
    except ValueError:
        return None
    return match.group(1) if match.group(1) in fixture_versions() else None


class ServerVersionValidator:
    """A strict :class:`FrameValidator` for the codex version the server says
    it is.  The frames of a connection wait until the first server frame: the
    ``initialize`` response, whose ``userAgent`` names the version
    (:func:`server_version`); the schema fixture of that version validates
    them and all that follow.  A first server frame that names no version
    with fixtures (a fake of another shape) means the pinned schema."""

    def __init__(self, default: str = CODEX_VERSION, flavor: str = "experimental", strict: bool = True) -> None:
        self.default = default
        self.flavor = flavor
        self.strict = strict
        self._waiting: List[Tuple[str, Any]] = []
        self._inner: Optional[FrameValidator] = None

    def tap(self, direction: str, frame: Any) -> None:
        self.check(direction, frame)

    def check(self, direction: str, frame: Any) -> List[Problem]:
        if self._inner is not None:
            return self._inner.check(direction, frame)
        self._waiting.append((direction, frame))
        if direction != _schema.IN:
            return []
        return self._decide(server_version(frame) or self.default)

    def _decide(self, version: str) -> List[Problem]:
        self._inner = FrameValidator(SchemaBundle.load(version, self.flavor), self.strict)
        waiting, self._waiting = self._waiting, []
        return [p for d, f in waiting for p in self._inner.check(d, f)]

    def _settled(self) -> FrameValidator:
        """The validator, deciding for the default if no server frame came."""
        if self._inner is None:
            self._decide(self.default)
        assert self._inner is not None
        return self._inner

    @property
    def bundle(self) -> _schema.SchemaBundle:
        return self._settled().bundle

    @property
    def problems(self) -> List[Problem]:
        return self._settled().problems

    @property
    def frames(self) -> int:
        return self._settled().frames

    @property
    def seen(self) -> List[Tuple[str, str, Optional[str]]]:
        return self._settled().seen


def validate_transcript(
    frames: Iterable[Tuple[str, Any]],
    bundle: Optional[_schema.SchemaBundle] = None,
    strict: bool = True,
    allow_undeclared: Optional[AllowList] = None,
) -> List[Problem]:
    """Run ``(direction, frame)`` pairs through one :class:`FrameValidator`."""
    validator = FrameValidator(bundle, strict=strict, allow_undeclared=allow_undeclared)
    for direction, frame in frames:
        validator.check(direction, frame)
    return validator.problems


__all__ = [
    "BUNDLE_FILE",
    "CLIENT_NOTIFICATION",
    "CLIENT_REQUEST",
    "ENVELOPES",
    "FIXTURES",
    "FLAVORS",
    "FrameValidator",
    "IN",
    "JSONSCHEMA",
    "KNOWN_UNDECLARED",
    "KNOWN_UNDECLARED_BY_VERSION",
    "KnownField",
    "OPEN_CONFIG",
    "OUT",
    "Problem",
    "REQUEST_UNIONS",
    "RESPONSE_OVERRIDES",
    "SERVER_NOTIFICATION",
    "SERVER_REQUEST",
    "SchemaBundle",
    "ServerVersionValidator",
    "UNIONS",
    "child_path",
    "fixture_versions",
    "known_undeclared",
    "server_version",
    "validate_transcript",
]
