"""What a turn is given: codex's input items, built from plain values.  Pure.

A turn's input is a list of ``UserInput`` items of the schema.  :data:`Input`
is what every call taking one accepts: a string (one text item) or a list of
strings and items.  Images go by path (``localImage``): codex opens the file
itself, so the bytes never travel on the wire.
"""

from __future__ import annotations

from typing import Any, Dict, List, Sequence, Union

#: One ``UserInput`` item of the schema (``{"type": "localImage", "path": …}``).
InputItem = Dict[str, Any]
#: A turn's input: a string (one text item) or a list of strings and input items.
Input = Union[str, Sequence[Union[str, InputItem]]]


def text_input(text: str) -> InputItem:
    """A text item."""
    return {"type": "text", "text": text}


def image_input(path: str) -> InputItem:
    """A local image codex opens itself (``localImage``: a path, not bytes)."""
    return {"type": "localImage", "path": path}


def as_input(value: Input) -> List[InputItem]:
    """Normalise ``"text"`` or a list of strings and input items."""
    if isinstance(value, str):
        return [text_input(value)]
    return [text_input(v) if isinstance(v, str) else dict(v) for v in value]


__all__ = ["Input", "InputItem", "as_input", "image_input", "text_input"]
