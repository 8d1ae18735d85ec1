"""codexmini: drive ``codex app-server`` from Python, with the standard library only.

The package is vendorable: every import inside it is relative, so the folder
can be copied anywhere under any name.
"""

from __future__ import annotations

__version__ = "0.1.0"

#: The codex release this package is recorded against (fixtures, schema).
CODEX_VERSION = "0.149.1"

from ._errors import (  # noqa: E402
    BinaryNotFound,
    ClientClosed,
    CodexminiError,
    ConfigError,
    ProcessExited,
    ProtocolError,
    RequestTimeout,
    RpcError,
    SessionLogError,
    TransportError,
)

__all__ = [
    "__version__",
    "CODEX_VERSION",
    "BinaryNotFound",
    "ClientClosed",
    "CodexminiError",
    "ConfigError",
    "ProcessExited",
    "ProtocolError",
    "RequestTimeout",
    "RpcError",
    "SessionLogError",
    "TransportError",
]
