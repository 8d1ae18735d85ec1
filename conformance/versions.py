"""The codex versions the suite knows, and what may differ between them.

codexmini supports codex ``OLDEST_CODEX_VERSION`` to the pin ``CODEX_VERSION``
and keeps recordings of both ends: ``fixtures/<version>/`` holds
each scenario recorded from that version's own binary, and
``fixtures/schema/<version>/`` its schema.  This module says which versions
have recordings (:func:`recorded_versions`), which binary the live suite runs
against (:func:`live_codex`: the one :func:`codexmini._binary.find_codex`
finds, so ``CODEXMINI_CODEX_BIN`` picks another installed version; ``make
test-live CODEX=0.149.1`` does exactly that), and how a scenario says that two
versions behave differently: a :class:`ByVersion` value, explicit for every
recorded version, never a loosened assertion.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from typing import Any, Dict, Generic, List, Mapping, Optional, TypeVar, Union

from codexmini import CODEX_VERSION, OLDEST_CODEX_VERSION
from codexmini._binary import codex_version, find_codex, version_key
from codexmini._errors import BinaryNotFound

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
FIXTURES_ROOT = os.path.join(REPO, "fixtures")
MANIFEST = "MANIFEST.json"

T = TypeVar("T")


def fixtures_dir(version: str) -> str:
    """``fixtures/<version>/``: the recordings made with that codex."""
    return os.path.join(FIXTURES_ROOT, version)


def recorded_versions() -> List[str]:
    """The codex versions with recordings (a ``MANIFEST.json``), oldest first."""
    found = []
    for name in os.listdir(FIXTURES_ROOT):
        try:
            version_key(name)
        except ValueError:
            continue  # fixtures/schema/
        if os.path.isfile(os.path.join(FIXTURES_ROOT, name, MANIFEST)):
            found.append(name)
    return sorted(found, key=version_key)


class UnknownVersion(LookupError):
    """A :class:`ByVersion` value has no entry for the version asked."""


class ByVersion(Generic[T]):
    """A value that differs between codex versions: ``ByVersion({"0.149.1":
    a, "0.171.0": b}, why="...")``.  :meth:`at` gives the value of one
    version; there is no default, so recording or replaying a version the
    scenario has not decided for fails with the versions it knows
    (``tests/test_scenarios.py`` checks every recorded version is covered)."""

    def __init__(self, values: Mapping[str, T], why: str) -> None:
        if not values:
            raise ValueError("ByVersion needs at least one version")
        for version in values:
            version_key(version)  # a typo is an error here, not a silent miss later
        self.values: Dict[str, T] = dict(values)
        self.why = why

    def at(self, version: str) -> T:
        try:
            return self.values[version]
        except KeyError:
            known = ", ".join(sorted(self.values, key=version_key))
            raise UnknownVersion(
                f"no value for codex {version} (known: {known}; {self.why}); say what {version} does"
            ) from None

    def __repr__(self) -> str:
        return f"ByVersion({self.values!r}, why={self.why!r})"


def at_version(value: Union[T, ByVersion[T]], version: str) -> T:
    """``value`` itself, or its entry for ``version`` when it is a :class:`ByVersion`."""
    return value.at(version) if isinstance(value, ByVersion) else value


@dataclass(frozen=True)
class LiveCodex:
    """The binary the live suite runs against, and the version it reports."""

    path: str
    version: Optional[str]

    @property
    def recorded(self) -> bool:
        return self.version in recorded_versions()


def live_codex() -> Union[LiveCodex, str]:
    """The live binary (``$CODEXMINI_CODEX_BIN``, else the project's ``.codex/``,
    else ``codex`` on PATH), or why there is none, for a skip message."""
    try:
        path = find_codex().path
    except BinaryNotFound as exc:
        return f"no codex binary (make setup installs the pinned {CODEX_VERSION}): {exc}"
    return LiveCodex(path, codex_version(path))


def not_recorded(live: LiveCodex) -> str:
    """The skip message for a live binary without recordings to compare with."""
    return (
        f"{live.path} is codex {live.version or 'of unknown version'}, which has no recordings "
        f"(recorded: {', '.join(recorded_versions())}; supported: {OLDEST_CODEX_VERSION} to {CODEX_VERSION}); "
        f"`make drift TO={live.version}` compares it with the pinned goldens"
    )


def codex_placeholder(value: Any, version: str) -> Any:
    """``value`` with codex's own version replaced by ``CODEX_VERSION`` where
    codex reports it (``cliVersion``, ``codexVersion``, the ``userAgent``), so
    two versions' recordings compare on behaviour, not on the number."""
    if isinstance(value, dict):
        return {k: _version_field(k, v, version) for k, v in value.items()}
    if isinstance(value, list):
        return [codex_placeholder(v, version) for v in value]
    return value


def _version_field(key: str, value: Any, version: str) -> Any:
    if isinstance(value, str):
        if key in ("cliVersion", "codexVersion") and value == version:
            return "CODEX_VERSION"
        if key == "userAgent":
            return value.replace(f"/{version} ", "/CODEX_VERSION ")
        return value
    return codex_placeholder(value, version)


__all__ = [
    "FIXTURES_ROOT",
    "ByVersion",
    "LiveCodex",
    "UnknownVersion",
    "at_version",
    "codex_placeholder",
    "fixtures_dir",
    "live_codex",
    "not_recorded",
    "recorded_versions",
]
