"""The codex app-server protocol, typed from its schema: wire types, method tables, typed calls.

Every definition the client, server-notification and server-request methods of the pinned
stable schema (``SCHEMA_VERSION``) reach is a ``TypedDict`` (or an alias) under its schema
name, keyed by the wire's camelCase names; optional keys are ``total=False``, nullable values
``Optional``.  A tagged union (``ThreadItem``, ``UserInput``) is a ``Union`` of one
``TypedDict`` per branch whose tag is a one-value ``Literal``, so
``item["type"] == "agentMessage"`` narrows it.  :class:`Calls` has one typed method per client
request; ``CLIENT_REQUESTS``, ``SERVER_NOTIFICATIONS`` and ``SERVER_REQUESTS`` name each
method's types.

This module is hand-written; what it exports is generated, in ``codexmini._generated``
(``tools/gen_protocol.py``, ``make protocol``).  Type checkers read every name, with its type,
from the generated module (the ``from … import *`` below).  At run time a name is fetched from
it on first use and kept here (PEP 562): importing this module stays cheap, and the ~770 types
are built only when one of them is first used.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, List

from ._generated import protocol as _surface

if TYPE_CHECKING:
    from ._generated.protocol import *  # noqa: F403
    from ._generated.protocol import __all__ as __all__

__all__ = list(_surface.__all__)

_EXPORTED = frozenset(__all__)


def _resolve(name: str) -> Any:
    """An exported name, fetched from the generated module on first use and kept (PEP 562)."""
    if name not in _EXPORTED:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    value = getattr(_surface, name)
    globals()[name] = value
    return value


def __dir__() -> List[str]:
    """The module's names and every exported one, fetched yet or not."""
    return sorted({*globals(), *__all__})


# Installed through globals(): a module ``__getattr__`` that type checkers saw would make
# every name of this module look defined, and a type a new schema removed would go unnoticed.
globals()["__getattr__"] = _resolve
