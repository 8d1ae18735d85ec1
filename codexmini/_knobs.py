"""The session's knobs: what the log has chosen for the next step.  Pure.

A knob is a log entry that changes how later steps run: ``sandbox/mode``,
``approval/policy``, ``model/choice``, ``model/endpoint`` and
``model/reasoning``.  They are logged
like every other entry, so a resumed session keeps them; the last *valid* one
of each kind wins, and an invalid value counts as absent.  :class:`Knobs`
holds a session's knob entries (fed as they are appended) and answers what
they amount to: the model, the endpoint, the reasoning settings, and the
permission pair a thread is started with -- folded again every step, so a knob change acts on the next one.

The permission fold: full access wins; ``ask`` means ``workspace-write`` with
``on-request`` approvals; anything else is the fail-closed default
(``read-only``, ``never``).  A configured pin (``AgentConfig.sandbox`` /
``approval_policy``) overrides its own field only.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Callable, Dict, Iterable, List, Literal, Mapping, Optional, cast

from ._errors import ConfigError
from ._permission import APPROVAL_POLICIES, SANDBOX_MODES, ApprovalPolicy, SandboxMode

if TYPE_CHECKING:  # the checker sees the standard library; at run time, ._dataclasses (nothing compiled)
    from dataclasses import dataclass
else:
    from ._dataclasses import dataclass


#: The knob entries' types.
KNOB_TYPES = frozenset({"sandbox/mode", "approval/policy", "model/choice", "model/endpoint", "model/reasoning"})
#: What an ``approval/policy`` knob may say (the CLI's ``--approval-policy``).
APPROVAL_KNOBS = ("ask", "never")
#: What a reasoning summary may be (codex's ``ReasoningSummary``, 0.149.1 to 0.171.0).
ReasoningSummary = Literal["auto", "concise", "detailed", "none"]
REASONING_SUMMARIES = ("auto", "concise", "detailed", "none")


@dataclass(frozen=True)
class ThreadPermissions:
    """The pair passed to ``thread/start`` (``sandbox``, ``approvalPolicy``)."""

    sandbox: SandboxMode
    approval_policy: ApprovalPolicy


#: Nothing recorded, or nothing valid: read-only and never ask.
DEFAULT_PERMISSIONS = ThreadPermissions("read-only", "never")

_PERMISSION_KNOBS = {"sandbox/mode": ("mode", SANDBOX_MODES), "approval/policy": ("policy", APPROVAL_KNOBS)}


def last_knob(entries: Iterable[Mapping[str, Any]], kind: str) -> Optional[str]:
    """The last *valid* value of a permission knob (``sandbox/mode`` or
    ``approval/policy``) among ``entries``, or ``None``."""
    key, allowed = _PERMISSION_KNOBS[kind]
    value = None
    for entry in entries:
        if entry.get("type") == kind:
            candidate = (entry.get("data") or {}).get(key)
            if candidate in allowed:
                value = candidate
    return value


def fold(sandbox_knob: Optional[str], approval_knob: Optional[str]) -> ThreadPermissions:
    """Full access wins; ``ask`` means workspace-write + on-request; anything
    else is the fail-closed default."""
    if sandbox_knob == "danger-full-access":
        return ThreadPermissions("danger-full-access", "never")
    if approval_knob == "ask":
        return ThreadPermissions("workspace-write", "on-request")
    return DEFAULT_PERMISSIONS


def resolve_permissions(
    entries: Iterable[Mapping[str, Any]],
    pin_sandbox: Optional[str] = None,
    pin_approval: Optional[str] = None,
) -> ThreadPermissions:
    """Fold the knobs among ``entries``, then let each pin override its own field."""
    entries = list(entries)
    folded = fold(last_knob(entries, "sandbox/mode"), last_knob(entries, "approval/policy"))
    if pin_sandbox is not None and pin_sandbox not in SANDBOX_MODES:
        raise ConfigError(f"sandbox pin must be one of {SANDBOX_MODES}, not {pin_sandbox!r}")
    if pin_approval is not None and pin_approval not in APPROVAL_POLICIES:
        raise ConfigError(f"approval pin must be one of {APPROVAL_POLICIES}, not {pin_approval!r}")
    # (checked just above: the pins are of their Literal types)
    return ThreadPermissions(
        cast(SandboxMode, pin_sandbox or folded.sandbox), cast(ApprovalPolicy, pin_approval or folded.approval_policy)
    )


def last_model(entries: Iterable[Mapping[str, Any]]) -> Optional[str]:
    """The model the session chose last (``model/choice``), if any: a
    non-empty string; anything else counts as absent."""
    model = None
    for entry in entries:
        if entry.get("type") == "model/choice":
            value = (entry.get("data") or {}).get("model")
            if isinstance(value, str) and value:
                model = value
    return model


def last_endpoint(entries: Iterable[Mapping[str, Any]]) -> Optional[Mapping[str, Any]]:
    """The model endpoint the session chose last (``model/endpoint``: its
    ``baseUrl``, ``wireApi`` and the *name* of the variable holding the key,
    never the key), or ``None``; a ``baseUrl`` of ``null`` means codex's own
    configuration and is returned as such."""
    endpoint: Optional[Mapping[str, Any]] = None
    for entry in entries:
        if entry.get("type") == "model/endpoint":
            data = entry.get("data") or {}
            url = data.get("baseUrl")
            if url is None or isinstance(url, str):
                endpoint = data
    return endpoint


def check_reasoning(effort: Any, summary: Any) -> None:
    """A :class:`~codexmini.ConfigError` unless ``effort`` is ``None`` or a
    non-empty string (codex takes the efforts the model advertises: ``low``,
    ``medium``, ``high``...) and ``summary`` ``None`` or one of
    :data:`REASONING_SUMMARIES`."""
    if effort is not None and not (isinstance(effort, str) and effort):
        raise ConfigError(f"a reasoning effort must be a non-empty string or None, not {effort!r}")
    if summary is not None and summary not in REASONING_SUMMARIES:
        raise ConfigError(f"a reasoning summary must be one of {REASONING_SUMMARIES} or None, not {summary!r}")


def last_reasoning(entries: Iterable[Mapping[str, Any]]) -> Optional[Mapping[str, Any]]:
    """The reasoning settings the session chose last (``model/reasoning``:
    ``effort`` and ``summary``, either ``null`` where the session left it to
    the configuration), or ``None``; an entry with a value
    :func:`check_reasoning` refuses counts as absent."""
    chosen: Optional[Mapping[str, Any]] = None
    for entry in entries:
        if entry.get("type") == "model/reasoning":
            data = entry.get("data") or {}
            try:
                check_reasoning(data.get("effort"), data.get("summary"))
            except ConfigError:
                continue
            chosen = data
    return chosen


class Knobs:
    """A session's knobs: fed every entry of the log in order (:meth:`feed`
    ignores all but the knobs), asked what they amount to.  It keeps the last
    valid entry of each kind only -- the one each answer comes from -- so a
    log of any length costs it the same memory."""

    #: The entry types it keeps (a caller may skip feeding it any other).
    TYPES = KNOB_TYPES

    def __init__(self, entries: Iterable[Mapping[str, Any]] = ()) -> None:
        self._last: Dict[str, Mapping[str, Any]] = {}
        self._fed = 0
        for entry in entries:
            self.feed(entry)

    def feed(self, entry: Mapping[str, Any]) -> None:
        """Take ``entry`` into account if it is a knob."""
        kind = entry.get("type")
        if kind in KNOB_TYPES:
            self._fed += 1
            if _VALID[kind]([entry]) is not None:
                self._last[kind] = entry

    def __len__(self) -> int:
        """How many knob entries it was fed (valid or not)."""
        return self._fed

    @property
    def _entries(self) -> List[Mapping[str, Any]]:
        return list(self._last.values())

    @property
    def model(self) -> Optional[str]:
        """The session's model choice, if any."""
        return last_model(self._entries)

    @property
    def endpoint(self) -> Optional[Mapping[str, Any]]:
        """The session's endpoint choice (see :func:`last_endpoint`), if any."""
        return last_endpoint(self._entries)

    @property
    def reasoning(self) -> Optional[Mapping[str, Any]]:
        """The session's reasoning settings (see :func:`last_reasoning`), if any."""
        return last_reasoning(self._entries)

    def permissions(self, pin_sandbox: Optional[str] = None, pin_approval: Optional[str] = None) -> ThreadPermissions:
        """The thread's (sandbox, approval policy), the pins over the knobs."""
        return resolve_permissions(self._entries, pin_sandbox, pin_approval)


#: Each knob kind's fold: a single entry that folds to something is valid.
_VALID: Dict[str, Callable[[Iterable[Mapping[str, Any]]], Any]] = {
    "sandbox/mode": lambda entries: last_knob(entries, "sandbox/mode"),
    "approval/policy": lambda entries: last_knob(entries, "approval/policy"),
    "model/choice": last_model,
    "model/endpoint": last_endpoint,
    "model/reasoning": last_reasoning,
}


__all__ = [
    "APPROVAL_KNOBS",
    "DEFAULT_PERMISSIONS",
    "KNOB_TYPES",
    "Knobs",
    "REASONING_SUMMARIES",
    "ReasoningSummary",
    "ThreadPermissions",
    "check_reasoning",
    "fold",
    "last_endpoint",
    "last_knob",
    "last_model",
    "last_reasoning",
    "resolve_permissions",
]
