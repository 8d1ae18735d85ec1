"""The wire: newline-delimited JSON frames, with no I/O.

Theory of operation
-------------------
``codex app-server`` speaks JSON-RPC without the ``"jsonrpc"`` member, one JSON
object per ``\\n``-terminated UTF-8 line, in both directions.  Lines of several
MiB are normal (a finished command with 1 MiB of output is one 1.2 MB line),
so the decoder never uses a line-length limit as a framing device: it keeps a
byte buffer, cuts it at newlines, and enforces an explicit, configurable
maximum frame size.  A line over the cap is *discarded as it streams in* (the
buffer never holds more than the cap) and reported once when its newline
arrives; the frames after it decode normally.

Anything that is not a JSON object -- invalid UTF-8, invalid JSON, JSON nested
deeper than :data:`MAX_DEPTH`, JSON that is an array or a number -- comes out
of :meth:`LineDecoder.feed` as a :class:`~codexmini._errors.ProtocolError`
*value* instead of raising, so one bad line can never kill a reader.  This
module reads no clock, spawns nothing and touches no file; the client feeds it
bytes (h11's receive buffer is the model).

The verdict on a line depends on its bytes only, never on how they arrive:
a line read whole is judged by a direct scan in the hot loop, a line cut by
a chunk boundary (or anything the scan does not take as a plain frame) by
:func:`_verdict`, and both apply the same limits -- the frame cap, the
nesting limit (an explicit count, not the interpreter's stack, which differs
between the two), the preview's length.

:func:`shape` holds the JSON-RPC shape rules, applied once per frame by the
RPC core (:mod:`._rpc`): ``id`` + ``method`` is a request, ``method`` alone a
notification, ``id`` + ``result`` a response, ``id`` + ``error`` an error.
codex drops frames whose ``id`` is ``null`` or a float without a reply, so
such ids are malformed here too.  :data:`MEMBERS` is what the schema asks of
each kind beyond that (every ``params`` and every ``result`` codex sends is
an object); a frame that breaks it keeps its kind and is reported.

:func:`encode` writes a frame, or raises
:class:`~codexmini._errors.UnencodableInput` naming the part of it that is
not JSON or not UTF-8 -- before anything is sent.
"""

from __future__ import annotations

import itertools
import json
import re
from typing import Any, Callable, Dict, Iterable, List, Optional, Tuple, Union

from ._errors import ConfigError, ProtocolError, UnencodableInput
from ._jsontext import encoder

#: Default cap on one frame, in bytes.  The largest frame seen from codex
#: 0.149.1 was 1.21 MB; users report 4 MiB.  64 MiB leaves room for both.
DEFAULT_MAX_FRAME_BYTES = 64 * 1024 * 1024

#: How deep a line may nest arrays and objects (the frame itself is the first
#: level); a line nested deeper is refused as "nested too deeply".  codex
#: parses with serde_json, which refuses more than 128 levels, so nothing it
#: sends comes near.  The limit is a count of the decoded value, so the
#: verdict is the same wherever the line is decoded: ``json``'s C scanner
#: recurses once per level, against the interpreter's recursion limit (1,000
#: by default) on 3.9-3.11, and a line decoded a few calls deeper than
#: another would otherwise fail where the other passed.  512 leaves the
#: caller about half of the default limit.
MAX_DEPTH = 512

REQUEST = "request"
NOTIFICATION = "notification"
RESPONSE = "response"
ERROR = "error"

Frame = Dict[str, Any]


#: What the decoder yields for one line: a JSON object, or why it is not one.
Decoded = Union[Frame, ProtocolError]

_PREVIEW = 120


def _preview(raw: Union[bytes, bytearray]) -> str:
    return raw[:_PREVIEW].decode("utf-8", "replace")


def is_valid_id(value: Any) -> bool:
    """JSON-RPC ids codex accepts: integers (not bools) and strings -- UTF-8
    strings: one holding a lone surrogate (decoded from a ``"\\ud800"``
    escape) could never be written back in an answer."""
    if isinstance(value, str):
        try:
            value.encode("utf-8")
        except UnicodeEncodeError:
            return False
        return True
    return isinstance(value, int) and not isinstance(value, bool)


def request_id(value: Any) -> Optional[Union[int, str]]:
    """``value`` if it is a JSON-RPC id codex accepts, else ``None``."""
    return value if is_valid_id(value) else None


#: What the schema asks of each kind of frame beyond its id and method: the
#: member that must be a JSON object (every supported version's schema:
#: each ServerRequest's and ServerNotification's ``params``, and every
#: response type, is an object).  A frame that breaks it keeps its kind --
#: the RPC core still answers such a request, still ends the call such a
#: response answers -- and is reported all the same.
MEMBERS: Dict[str, str] = {REQUEST: "params", NOTIFICATION: "params", RESPONSE: "result"}

#: JSON's names for the types ``json`` decodes to (what a reason shows).
_JSON_TYPES: Dict[type, str] = {
    dict: "an object",
    list: "an array",
    str: "a string",
    int: "an integer",
    float: "a number",
    bool: "a boolean",
    type(None): "null",
}


def _json_type(value: Any) -> str:
    return _JSON_TYPES.get(type(value), type(value).__name__)


def not_an_id(value: Any) -> str:
    """What a value that :func:`is_valid_id` refuses is, in a reason's words."""
    what = "a string that is not UTF-8 text" if isinstance(value, str) else _json_type(value)
    return f"is {what}, not an integer or a string"


def shape(obj: Any) -> Tuple[Optional[str], str]:
    """The kind of a decoded object and what in it breaks the rules:
    ``(kind, "")`` for a frame as the schema has it, ``(kind, problem)`` for
    one whose :data:`MEMBERS` member is wrong, ``(None, problem)`` for what
    is no JSON-RPC frame at all."""
    if not isinstance(obj, dict):
        return None, f"not a JSON-RPC frame ({type(obj).__name__})"
    has_id = "id" in obj
    if has_id and not is_valid_id(obj["id"]):
        return None, f"not a JSON-RPC frame: its id {not_an_id(obj['id'])}"
    if "method" in obj:
        method = obj["method"]
        if not isinstance(method, str):
            return None, f"not a JSON-RPC frame: its method is {_json_type(method)}, not a string"
        kind = REQUEST if has_id else NOTIFICATION
    elif not has_id:
        return None, "not a JSON-RPC frame: it has neither a method nor an id"
    elif ("result" in obj) == ("error" in obj):
        return None, "not a JSON-RPC frame: an answer holds exactly one of result and error"
    elif "result" in obj:
        kind = RESPONSE
    else:
        error = obj["error"]
        code = error.get("code") if isinstance(error, dict) else None
        if isinstance(code, int) and not isinstance(code, bool) and isinstance(error.get("message"), str):
            return ERROR, ""
        return None, "not a JSON-RPC frame: its error is not an object with an integer code and a string message"
    member = MEMBERS[kind]
    if member not in obj:
        return kind, f"{member} is missing"
    if type(obj[member]) is not dict:
        return kind, f"{member} is {_json_type(obj[member])}, not an object"
    return kind, ""


def classify(obj: Any) -> Optional[str]:
    """The kind of a decoded object, or ``None`` if it is not a frame (its
    members are for :func:`shape` to judge)."""
    return shape(obj)[0]


#: The C scanner behind ``json.loads``, called directly: a frame is one JSON
#: value filling its line, so the scan of ``json.loads`` (leading and trailing
#: whitespace, the BOM check, its Python-level wrappers) is only needed when
#: the direct scan does not consume exactly the whole line -- then ``json.loads``
#: decides, with its own result or error.  Same answers, a third less work per
#: frame (``make bench``).
_scan_once: Callable[[str, int], Tuple[Any, int]] = vars(json.JSONDecoder())["scan_once"]


def _loads(text: str) -> Any:
    try:
        value, end = _scan_once(text, 0)
    except (StopIteration, ValueError):
        return json.loads(text)  # raises the error json.loads would (or parses leading whitespace)
    if end != len(text):
        return json.loads(text)  # trailing whitespace is fine, anything else is an error
    return value


def _nests_deeper(value: Any) -> bool:
    """Whether a decoded value nests arrays and objects more than
    :data:`MAX_DEPTH` levels deep: one level at a time, each a list of the
    containers at that depth (no recursion: the stack plays no part)."""
    level = [value] if type(value) is dict or type(value) is list else []
    for _ in range(MAX_DEPTH):
        if not level:
            return False
        level = [
            child
            for container in level
            for child in (container.values() if type(container) is dict else container)
            if type(child) is dict or type(child) is list
        ]
    return bool(level)


#: The shortest object nested deeper than MAX_DEPTH is ``{"":[[…]]}``, 2 ×
#: MAX_DEPTH + 5 characters: a line no longer than this cannot be one, so the
#: hot loop measures no depth (nine lines in ten are deltas, far shorter).
_SHALLOW = 2 * MAX_DEPTH + 4

#: What of a line's text does not nest: a JSON string (escapes included),
#: a run of characters that are neither brackets nor quotes, a quote that
#: opens no string (for the depth of a line that is no JSON,
#: :func:`_text_nests_deeper`; a line holds no "\n" for "." to miss).
_NOT_NESTING = r'"[^"\\]*(?:\\.[^"\\]*)*"|[^\[\]{}"]+|"'  # (compiled at first use: re caches it)
_STEP = {"[": 1, "{": 1, "]": -1, "}": -1}


def _text_nests_deeper(text: str) -> bool:
    """Whether the brackets of ``text`` outside its strings open more than
    :data:`MAX_DEPTH` levels at some point: the depth of a line that does not
    parse.  At least as deep as what the parser recursed into before the
    error (its strings are the parser's until then), so a parse that ran out
    of stack and one that failed on the error agree."""
    brackets = re.sub(_NOT_NESTING, "", text)
    steps: Iterable[int] = map(_STEP.__getitem__, brackets)
    return max(itertools.accumulate(steps, initial=0)) > MAX_DEPTH


_TOO_DEEP = f"invalid JSON: nested too deeply (more than {MAX_DEPTH} levels)"


def _verdict(text: str, line: Union[bytes, bytearray, None] = None) -> Decoded:
    """The one judgement of a line (its text without the newline or a final
    ``"\\r"``; ``line``, its bytes, when the caller has them) that is not
    plainly a frame, whichever way its bytes came: a JSON object, or why it
    is not one.  Depth is judged before anything else: a line nested too
    deeply gets that verdict whether the parse succeeded, failed on a syntax
    error after the deep part, or ran out of stack."""
    try:
        obj = _loads(text)
    except ValueError as exc:
        reason = _TOO_DEEP if _text_nests_deeper(text) else f"invalid JSON: {exc}"
    except RecursionError:  # [[[[… deeper than this caller's stack, however deep that is
        reason = _TOO_DEEP
    else:
        if _nests_deeper(obj):
            reason = _TOO_DEEP
        elif type(obj) is dict:
            return obj
        else:
            reason = f"not a JSON-RPC frame ({type(obj).__name__})"
    raw = text.encode("utf-8") if line is None else line
    return ProtocolError(reason, len(raw), _preview(raw))


def decode_line(line: Union[bytes, bytearray]) -> Decoded:
    """Decode one line (without its newline) into a JSON object, or a
    :class:`~codexmini._errors.ProtocolError` saying why it is not one."""
    try:
        text = line.decode("utf-8")
    except UnicodeDecodeError as exc:
        return ProtocolError(f"invalid UTF-8 at byte {exc.start}", len(line), _preview(line))
    return _verdict(text, line)


#: ``line.decode()``: UTF-8, strict (mapped over a chunk's lines).
_decode: Callable[[bytes], str] = bytes.decode

#: Compact, unescaped (codexmini._jsontext), and without NaN or the
#: infinities, which JSON has no numbers for (codex rejects such a line).
_encode = encoder(allow_nan=False)

#: What the encoder raises for a value that is not JSON or not UTF-8 (a
#: ``UnicodeEncodeError`` is a ``ValueError``; nesting too deep for the
#: encoder's stack is a ``RecursionError``).
_NOT_ENCODABLE = (TypeError, ValueError, RecursionError)


def encode(frame: Frame) -> bytes:
    """Serialize one frame as a single UTF-8 line, or raise
    :class:`~codexmini._errors.UnencodableInput` naming the part of it that
    is not JSON or not UTF-8 (the encoder's error chained)."""
    try:
        return _encode(frame).encode("utf-8") + b"\n"
    except _NOT_ENCODABLE as exc:
        raise _unencodable(frame, exc) from exc


def check_encodable(value: Any, what: str) -> None:
    """Raise :class:`~codexmini._errors.UnencodableInput` (``what`` it is,
    the path inside ``value``) unless ``value`` would go on the wire: a
    caller's value checked before anything takes it (an agent's message)."""
    try:
        _encode(value).encode("utf-8")
    except _NOT_ENCODABLE as exc:
        raise _refused(value, what, exc) from exc


def _unencodable(frame: Frame, error: BaseException) -> UnencodableInput:
    method, rid = frame.get("method"), frame.get("id")
    if method is None:
        what = f"the answer to request {rid!r}"
    else:
        what = f"{'notification' if rid is None else 'request'} {method}"
    return _refused(frame, what, error)


def _refused(value: Any, what: str, error: BaseException) -> UnencodableInput:
    if isinstance(error, RecursionError):  # every part of it would say the same, at length
        return UnencodableInput(what, "", "nested too deeply to encode")
    path, reason = _culprit(value)
    return UnencodableInput(what, path, reason)


def _fault(value: Any) -> str:
    """Why ``value`` does not encode ("" if it does).  A string is judged on
    its own, so a lone surrogate's position is its index in the string."""
    try:
        if type(value) is str:
            value.encode("utf-8")
        else:
            _encode(value).encode("utf-8")
    except _NOT_ENCODABLE as exc:
        return str(exc)
    return ""


def _culprit(value: Any) -> Tuple[str, str]:
    """Where in ``value`` (which does not encode) the innermost part that does
    not encode is, and why: the first failing member of each container, as
    the encoder meets them, down to a part whose members all encode (a leaf,
    or a container whose fault is its own: a key, a cycle)."""
    path, seen = "", set()
    while id(value) not in seen:  # it ends where no member fails (value stays), or where a cycle closes
        seen.add(id(value))
        members: Iterable[Tuple[str, Any]] = ()
        if type(value) is dict:
            members = ((_member(path, key), child) for key, child in value.items())
        elif type(value) is list or type(value) is tuple:
            members = ((f"{path}[{index}]", child) for index, child in enumerate(value))
        for member_path, child in members:
            if _fault(child):
                path, value = member_path, child
                break
    return path, _fault(value)


def _member(path: str, key: Any) -> str:
    if isinstance(key, str) and key.isidentifier():
        return f"{path}.{key}" if path else key
    return f"{path}[{key!r}]"


class LineDecoder:
    """Cut a byte stream into frames, with an explicit maximum frame size.

    ``feed(data)`` returns everything that became complete; ``close()``
    returns what an unterminated last line held (codex always terminates its
    lines, but a killed writer may not).
    """

    def __init__(self, max_frame_bytes: int = DEFAULT_MAX_FRAME_BYTES) -> None:
        if max_frame_bytes < 1:
            raise ConfigError("max_frame_bytes must be positive")
        self.max_frame_bytes = max_frame_bytes
        self._buf = bytearray()  # the start of a line whose newline has not arrived
        self._skipping = 0  # >0: size so far of an oversized line being discarded
        self._skip_cr = False  # the last byte skipped is a "\r" (not counted if the "\n" follows)
        self._skip_head = b""  # the first bytes of the line being discarded (its preview)

    def feed(self, data: bytes) -> List[Decoded]:
        """Every frame ``data`` completes.  The chunk is split once, as bytes,
        and each line decoded on its own (an ASCII line decodes as ASCII,
        whatever else the chunk holds: one non-ASCII character would make a
        whole chunk's text two bytes a character, to split and cut).  Only a
        line cut by a chunk boundary is copied into the buffer."""
        out: List[Decoded] = []
        if type(data) is not bytes:  # a bytearray or memoryview: split into bytes, not views
            data = bytes(data)
        if self._skipping:
            cut = data.find(b"\n")
            # Under a cap shorter than a preview, the line's first bytes are still arriving.
            self._skip_head = (self._skip_head + data[:_PREVIEW])[:_PREVIEW]
            if cut < 0:
                self._skipping += len(data)
                self._skip_cr = data[-1:] == b"\r" if data else self._skip_cr
                return out
            self._skipping += cut
            self._skip_cr = data[cut - 1 : cut] == b"\r" if cut else self._skip_cr
            out.append(self._oversized())
            data = data[cut + 1 :]
        if b"\n" not in data:  # (memchr: split would look at each byte) the middle of a long line
            self._buf += data
            self._check_cap()
            return out
        lines = data.split(b"\n")  # two parts at least: data holds a newline
        rest = lines.pop()  # the start of the next line (b"" when data ends with its newline)
        if self._buf:
            self._buf += lines[0]
            line, self._buf = self._buf, bytearray()  # no copy: a multi-MiB line is decoded where it lies
            out.append(self._line(line))
            del lines[0]
        if lines:
            out += self._lines(lines, len(data))
        if rest:
            self._buf += rest
            self._check_cap()
        return out

    def messages(self, texts: List[str]) -> List[Decoded]:
        """The frames of whole messages, decoded, one each (a WebSocket's
        text messages): nothing is cut or buffered, and each is held to the
        cap (here in characters; the WebSocket held it to the cap in bytes)."""
        if sum(map(len, texts)) <= self.max_frame_bytes:
            return self._texts(texts)
        cap = self.max_frame_bytes
        return [self._too_long(text) if len(text) > cap else self._texts([text])[0] for text in texts]

    def _too_long(self, text: str) -> ProtocolError:
        size = len(text.encode("utf-8", "surrogatepass"))  # its size on the wire (an error's cost, once)
        return ProtocolError(self._too_big(size), size, _preview(text[:_PREVIEW].encode("utf-8", "surrogatepass")))

    def _lines(self, lines: List[bytes], size: int) -> List[Decoded]:
        """The frames of whole lines (without their newlines) of a chunk of
        ``size`` bytes.  A chunk that may hold a line over the cap, or a line
        that is not valid UTF-8, goes line by line, so the bad line is the
        only one reported."""
        if size <= self.max_frame_bytes:
            try:
                texts = list(map(_decode, lines))
            except UnicodeDecodeError:
                pass
            else:
                return self._texts(texts)
        line_of = self._line
        return [line_of(line) for line in lines]

    def _texts(self, texts: List[str]) -> List[Decoded]:
        """The frames of whole lines, decoded, none over the cap.  The hot
        loop: one direct scan per line; anything unusual (a "\r",
        whitespace, a value that is not an object, an error) goes the long
        way, through _text_line."""
        # Builtins as locals (as in every per-frame loop here): 3.9
        # caches no global lookup in a function called fewer than
        # 1,024 times, and this one runs once a chunk.
        # A line long enough to nest too deeply has its depth
        # measured, as _verdict would (stop is its length here: a
        # comparison more per line, for nothing else when it is
        # shorter than _SHALLOW, as nine lines in ten are).
        out: List[Decoded] = []
        append, scan, slow, len_, type_, dict_ = out.append, _scan_once, self._text_line, len, type, dict
        shallow, deeper = _SHALLOW, _nests_deeper
        for text in texts:
            try:
                value, stop = scan(text, 0)
            except (StopIteration, ValueError, RecursionError):
                append(slow(text))
                continue
            if stop == len_(text) and type_(value) is dict_ and (stop <= shallow or not deeper(value)):
                append(value)
            else:
                append(slow(text))
        return out

    @staticmethod
    def _text_line(line: str) -> Decoded:
        return _verdict(line[:-1] if line[-1:] == "\r" else line)

    def _check_cap(self) -> None:
        # A trailing "\r" may be half of a CRLF whose "\n" is still in flight;
        # it does not count against the cap (so the buffer holds cap + 1 at most).
        if len(self._buf) - self._buf.endswith(b"\r") > self.max_frame_bytes:
            self._skipping = len(self._buf)
            self._skip_cr = self._buf.endswith(b"\r")
            self._skip_head = bytes(self._buf[:_PREVIEW])
            self._buf.clear()

    def close(self) -> List[Decoded]:
        out: List[Decoded] = []
        if self._skipping:
            out.append(self._oversized())
        elif self._buf.strip():
            out.append(self._line(bytes(self._buf)))
        self._buf.clear()
        return out

    @property
    def buffered(self) -> int:
        """Bytes held for an incomplete line (never more than the cap, plus a
        trailing ``\r``)."""
        return len(self._buf)

    def _line(self, line: Union[bytes, bytearray]) -> Decoded:
        if line[-1:] == b"\r":
            line = line[:-1]
        if len(line) > self.max_frame_bytes:
            return ProtocolError(self._too_big(len(line)), len(line), _preview(line))
        return decode_line(line)

    def _oversized(self) -> ProtocolError:
        # A CRLF line's "\r" is not part of its size, wherever the chunks cut
        # it, nor of its preview: the line's first bytes, as _line shows them.
        size, head = self._skipping - self._skip_cr, self._skip_head
        self._skipping, self._skip_cr, self._skip_head = 0, False, b""
        return ProtocolError(self._too_big(size), size, _preview(head[:size]))

    def _too_big(self, size: int) -> str:
        return f"frame of {size} bytes exceeds the cap of {self.max_frame_bytes} bytes"


__all__ = [
    "DEFAULT_MAX_FRAME_BYTES",
    "MAX_DEPTH",
    "MEMBERS",
    "REQUEST",
    "NOTIFICATION",
    "RESPONSE",
    "ERROR",
    "Frame",
    "Decoded",
    "LineDecoder",
    "check_encodable",
    "classify",
    "decode_line",
    "encode",
    "is_valid_id",
    "not_an_id",
    "request_id",
    "shape",
]
