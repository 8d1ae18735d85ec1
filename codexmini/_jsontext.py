"""JSON text, compact and unescaped, with CPython's C encoder built once.

``json.dumps(value, ensure_ascii=False, separators=(",", ":"))`` (with
``sort_keys`` as asked) builds a :class:`json.JSONEncoder` and then a C
encoder on every call -- several microseconds that add up when a tool call's
arguments or a session-log line are encoded per event.  :func:`encoder`
returns a function writing the same text, with the same errors, from an
encoder built once.  No I/O: importing this module imports only :mod:`json`.
"""

from __future__ import annotations

import json
from typing import Any, Callable, Dict, Optional

#: CPython's C encoder factory (typeshed does not declare it).
C_MAKE_ENCODER: Optional[Callable[..., Any]] = getattr(json.encoder, "c_make_encoder", None)


def _not_json(value: Any) -> Any:
    raise TypeError(f"Object of type {value.__class__.__name__} is not JSON serializable")


class Encoder:
    """The C encoder built once.  Its cycle markers are cleared after a
    failure, which may leave them half-filled."""

    def __init__(self, make: Callable[..., Any], sort_keys: bool = False, allow_nan: bool = True) -> None:
        self._markers: Dict[int, Any] = {}
        # (markers, default, encoder, indent, key sep, item sep, sort_keys, skipkeys, allow_nan): 3.9 to 3.13
        self._chunks = make(
            self._markers, _not_json, json.encoder.encode_basestring, None, ":", ",", sort_keys, False, allow_nan
        )

    def __call__(self, value: Any) -> str:
        try:
            return "".join(self._chunks(value, 0))
        except BaseException:
            self._markers.clear()
            raise


def encoder(
    make: Optional[Callable[..., Any]] = C_MAKE_ENCODER, sort_keys: bool = False, allow_nan: bool = True
) -> Callable[[Any], str]:
    """``json.dumps(…, ensure_ascii=False, separators=(",", ":"), sort_keys=…,
    allow_nan=…)``: the C encoder built once, or (an interpreter without
    ``_json``, or ``make=None``) the pure-Python one -- the same text either
    way.  ``allow_nan=False`` refuses NaN and the infinities (``ValueError``):
    JSON has no such numbers, and codex's parser rejects a line holding one."""
    if make is not None:
        return Encoder(make, sort_keys, allow_nan)
    return json.JSONEncoder(ensure_ascii=False, separators=(",", ":"), sort_keys=sort_keys, allow_nan=allow_nan).encode


__all__ = ["C_MAKE_ENCODER", "Encoder", "encoder"]
