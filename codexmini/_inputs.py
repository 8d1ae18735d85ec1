"""What a turn is given: codex's input items, built from plain values.  Pure.

A turn's input is a list of ``UserInput`` items of the schema.  :data:`Input`
is what every call taking one accepts: a string (one text item) or a list of
strings and items.  The helpers build each kind of item (:func:`text_input`,
:func:`image_input`, :func:`image_url_input`, :func:`skill_input`,
:func:`mention_input`); :func:`as_input` checks what it is given against
:data:`INPUT_KINDS` before anything is sent, so a misspelt kind
(``"local_image"``) or a missing field is a :class:`~codexmini.ConfigError`
that says what to write, not a cryptic refusal from codex.  Images go by
path (``localImage``): codex opens the file itself, so the bytes never travel
on the wire.
"""

from __future__ import annotations

from typing import Any, Dict, List, Mapping, Sequence, Tuple, Union

from ._errors import ConfigError

InputItem = Dict[str, Any]
Input = Union[str, Sequence[Union[str, Mapping[str, Any]]]]

#: Each input kind codex accepts → the string fields it needs; a tuple of
#: alternatives where one of several will do (an image by ``url`` or by
#: ``fileId``).  codex 0.149.1 to 0.171.0 accept these kinds (0.171.0 adds
#: ``audio``).
INPUT_KINDS: Dict[str, Tuple[Union[str, Tuple[str, ...]], ...]] = {
    "text": ("text",),
    "localImage": ("path",),
    "image": (("url", "fileId"),),
    "skill": ("name", "path"),
    "mention": ("name", "path"),
    "audio": (("url", "fileId"),),
}
#: What people write for a kind, and what they mean.
_MEANT = {"local_image": "localImage", "localimage": "localImage", "image_url": "image", "input_text": "text"}


def text_input(text: str) -> InputItem:
    """A text item."""
    return {"type": "text", "text": text}


def image_input(path: str) -> InputItem:
    """A local image codex opens itself (``localImage``: a path, not bytes)."""
    return {"type": "localImage", "path": path}


def image_url_input(url: str) -> InputItem:
    """An image by URL (``image``).  codex 0.149.1 to 0.171.0 refuse a remote
    (``http(s)``) URL at ``turn/start``; a ``data:`` URL carries the bytes."""
    return {"type": "image", "url": url}


def skill_input(name: str, path: str) -> InputItem:
    """A skill for this turn (``skill``: its name and the path of its ``SKILL.md``)."""
    return {"type": "skill", "name": name, "path": path}


def mention_input(name: str, path: str) -> InputItem:
    """A mention of a file or resource (``mention``: a name and its path)."""
    return {"type": "mention", "name": name, "path": path}


def check_item(item: Any, where: str) -> InputItem:
    """``item`` as a dict, if it is an input item :data:`INPUT_KINDS` knows
    with the fields its kind needs; else a :class:`ConfigError` at ``where``."""
    if not isinstance(item, Mapping):
        raise ConfigError(f"{where} must be a string or an input item (a dict), not {type(item).__name__}")
    kind = item.get("type")
    if not isinstance(kind, str) or kind not in INPUT_KINDS:
        meant = _MEANT.get(kind) if isinstance(kind, str) else None
        hint = f" (did you mean {meant!r}?)" if meant else ""
        raise ConfigError(f"{where} has type {kind!r}{hint}: an input item's type is one of {', '.join(INPUT_KINDS)}")
    for need in INPUT_KINDS[kind]:
        names = need if isinstance(need, tuple) else (need,)
        if not any(isinstance(item.get(name), str) for name in names):
            wanted = " or ".join(repr(name) for name in names)
            raise ConfigError(f"{where}: an item of type {kind!r} needs {wanted} (a string)")
    return dict(item)


def as_input(value: Input) -> List[InputItem]:
    """Normalise ``"text"`` or a list of strings and input items, each checked."""
    if isinstance(value, str):
        return [text_input(value)]
    if isinstance(value, (bytes, Mapping)) or not isinstance(value, Sequence):
        raise ConfigError(f"input must be a string or a list of strings and input items, not {type(value).__name__}")
    return [text_input(v) if isinstance(v, str) else check_item(v, f"input[{i}]") for i, v in enumerate(value)]


__all__ = [
    "INPUT_KINDS",
    "Input",
    "InputItem",
    "as_input",
    "check_item",
    "image_input",
    "image_url_input",
    "mention_input",
    "skill_input",
    "text_input",
]
