"""Normalisation of recorded frames and session logs.

A recording from the real binary is full of values that change on every run:
UUIDv7 thread/turn/item ids, epoch timestamps, process ids, the temporary
workspace and ``CODEX_HOME`` paths, the rollout file name, the machine in the
user agent.  :class:`Normaliser` rewrites them to stable placeholders so that
re-recording gives a small diff, replays are exact, and a live run can be
compared with a golden file.  Every placeholder keeps the JSON type (and for
ids the UUID shape) of the value it replaces, so a normalised frame still
validates against the schema.

Paths are replaced in both directions: :meth:`normalise` maps the run's real
directories to ``/WORKSPACE``, ``/CODEX_HOME``…, :meth:`denormalise` maps them
back to another run's directories (the replay server does this so the client
under test sees real paths).
"""

from __future__ import annotations

import re
from typing import Any, Dict, List, Mapping, Optional, Sequence, Tuple

UUID_RE = re.compile(r"[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}")
ROLLOUT_RE = re.compile(r"\d{4}/\d{2}/\d{2}/rollout-\d{4}-\d{2}-\d{2}T\d{2}-\d{2}-\d{2}")
ROLLOUT_STABLE = "2000/01/01/rollout-2000-01-01T00-00-00"
AGENT_RE = re.compile(r"^(?P<name>[^/ ]+)/(?P<version>\S+) \(.*\)(?P<rest>.*)$")
PORT_RE = re.compile(r"http://127\.0\.0\.1:\d+")

#: Keys whose integer values are clock readings or durations.
TIME_KEYS = frozenset(
    {
        "emittedAtMs",
        "startedAtMs",
        "completedAtMs",
        "createdAt",
        "updatedAt",
        "recencyAt",
        "startedAt",
        "completedAt",
        "durationMs",
        "elapsedMs",  # tool/result: how long an abandoned tool ran, by the agent's clock
        "ts",
    }
)
#: Keys whose string values are OS process ids.
PID_KEYS = frozenset({"processId"})


def placeholder_uuid(n: int) -> str:
    return f"00000000-0000-7000-8000-{n:012d}"


class Normaliser:
    """Rewrites volatile values; one instance per recording (its UUID
    numbering follows the order of first appearance)."""

    def __init__(self, paths: Optional[Mapping[str, str]] = None, version: Optional[str] = None) -> None:
        # Longest path first, so /root/ws is replaced before /root.
        self.paths: List[Tuple[str, str]] = sorted(dict(paths or {}).items(), key=lambda kv: -len(kv[0]))
        self.version = version
        self._uuids: Dict[str, str] = {}

    # -- strings -----------------------------------------------------------

    def _uuid(self, match: "re.Match[str]") -> str:
        value = match.group(0)
        if value.startswith("00000000-0000-7000-8000-"):
            return value
        if value not in self._uuids:
            self._uuids[value] = placeholder_uuid(len(self._uuids) + 1)
        return self._uuids[value]

    def text(self, value: str) -> str:
        for real, stable in self.paths:
            value = value.replace(real, stable)
        value = UUID_RE.sub(self._uuid, value)
        value = ROLLOUT_RE.sub(ROLLOUT_STABLE, value)
        value = PORT_RE.sub("http://127.0.0.1:PORT", value)
        if self.version:
            value = value.replace(f"codexmini/{self.version}", "codexmini/VERSION")
        return value

    def denormalise_text(self, value: str) -> str:
        for real, stable in self.paths:
            value = value.replace(stable, real)
        return value

    # -- values --------------------------------------------------------------

    def normalise(self, value: Any, key: str = "") -> Any:
        if isinstance(value, dict):
            return {k: self.normalise(v, k) for k, v in value.items()}
        if isinstance(value, list):
            return [self.normalise(v, key) for v in value]
        if isinstance(value, bool) or value is None:
            return value
        if isinstance(value, (int, float)) and key in TIME_KEYS:
            return 0
        if isinstance(value, str):
            if key in PID_KEYS:
                return "1"
            if key == "userAgent":
                return self._agent(value)
            if key in ("version", "codexminiVersion") and self.version and value == self.version:
                return "VERSION"
            return self.text(value)
        return value

    def denormalise(self, value: Any) -> Any:
        if isinstance(value, dict):
            return {k: self.denormalise(v) for k, v in value.items()}
        if isinstance(value, list):
            return [self.denormalise(v) for v in value]
        if isinstance(value, str):
            return self.denormalise_text(value)
        return value

    def _agent(self, value: str) -> str:
        # "codexmini/0.149.1 (Debian 12.0.0; x86_64) xterm (codexmini; 0.1.0)"
        match = AGENT_RE.match(value)
        if not match:
            return self.text(value)
        return f"{match.group('name')}/{match.group('version')} (OS) TERM (CLIENT)"


def normalise_argv(argv: Sequence[str], normaliser: Normaliser, python: str) -> List[str]:
    """The codex command line without the binary, stable across machines."""
    out = []
    for arg in argv[1:]:
        out.append(normaliser.text(arg.replace(python, "PYTHON")))
    return out


__all__ = ["Normaliser", "TIME_KEYS", "normalise_argv", "placeholder_uuid"]
