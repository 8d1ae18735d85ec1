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

Anything that is not a JSON object -- invalid UTF-8, invalid JSON (nested too
deeply for ``json`` included), JSON that is an array or a number -- comes out of :meth:`LineDecoder.feed` as a
:class:`~codexmini._errors.ProtocolError` *value* instead of raising, so one
bad line can never kill a reader.  This module reads no clock, spawns nothing
and touches no file; the client feeds it bytes (h11's receive buffer is the
model).

:func:`classify` holds the JSON-RPC shape rules, applied once per
frame by the RPC core (:mod:`._rpc`): ``id`` + ``method`` is a request,
``method`` alone a notification, ``id`` + ``result`` a response, ``id`` +
``error`` an error.  codex drops frames whose ``id`` is ``null`` or a float
without a reply, so such ids are malformed here too.
"""

from __future__ import annotations

import json
from typing import Any, Callable, Dict, List, Optional, Tuple, Union

from ._errors import ConfigError, ProtocolError
from ._jsontext import encoder

#: Default cap on one frame, in bytes.  The largest frame seen from codex
#: 0.149.1 was 1.21 MB; users report 4 MiB.  64 MiB leaves room for both.
DEFAULT_MAX_FRAME_BYTES = 64 * 1024 * 1024

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
    """JSON-RPC ids codex accepts: integers (not bools) and strings."""
    return isinstance(value, str) or (isinstance(value, int) and not isinstance(value, bool))


def request_id(value: Any) -> Optional[Union[int, str]]:
    """``value`` if it is a JSON-RPC id codex accepts, else ``None``."""
    return value if is_valid_id(value) else None


def classify(obj: Any) -> Optional[str]:
    """Return the kind of a decoded object, or ``None`` if it is not a frame."""
    if not isinstance(obj, dict):
        return None
    has_id = "id" in obj
    if has_id and not is_valid_id(obj["id"]):
        return None
    method = obj.get("method")
    if "method" in obj:
        # Whatever its params: a request must be answered (an unanswered one
        # blocks codex), and what a notification's params hold is for the
        # mapping to judge.
        if not isinstance(method, str):
            return None
        return REQUEST if has_id else NOTIFICATION
    if not has_id:
        return None
    if "result" in obj and "error" not in obj:
        return RESPONSE
    error = obj.get("error")
    if "result" not in obj and isinstance(error, dict):
        code = error.get("code")
        if isinstance(code, int) and not isinstance(code, bool) and isinstance(error.get("message"), str):
            return ERROR
    return None


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


def decode_line(line: Union[bytes, bytearray]) -> Decoded:
    """Decode one line (without its newline) into a JSON object, or a
    :class:`~codexmini._errors.ProtocolError` saying why it is not one."""
    try:
        text = line.decode("utf-8")
    except UnicodeDecodeError as exc:
        return ProtocolError(f"invalid UTF-8 at byte {exc.start}", len(line), _preview(line))
    try:
        obj = _loads(text)
    except ValueError as exc:
        return ProtocolError(f"invalid JSON: {exc}", len(line), _preview(line))
    except RecursionError:  # [[[[… nested deeper than the interpreter's stack
        return ProtocolError("invalid JSON: nested too deeply", len(line), _preview(line))
    if not isinstance(obj, dict):
        return ProtocolError(f"not a JSON-RPC frame ({type(obj).__name__})", len(line), _preview(line))
    return obj


#: ``line.decode()``: UTF-8, strict (mapped over a chunk's lines).
_decode: Callable[[bytes], str] = bytes.decode

_encode = encoder()  # compact, unescaped: the session log's encoder (codexmini._jsontext)


def encode(frame: Frame) -> bytes:
    """Serialize one frame as a single UTF-8 line."""
    return _encode(frame).encode("utf-8") + b"\n"


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
        self._skip_preview = ""

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
                # The hot loop: one direct scan per line; anything unusual (a
                # "\r", whitespace, a value that is not an object, an error)
                # goes the long way, through _text_line.
                # Builtins as locals (as in every per-frame loop here): 3.9
                # caches no global lookup in a function called fewer than
                # 1,024 times, and this one runs once a chunk.
                out: List[Decoded] = []
                append, scan, slow, len_, type_, dict_ = out.append, _scan_once, self._text_line, len, type, dict
                for text in texts:
                    try:
                        value, stop = scan(text, 0)
                    except (StopIteration, ValueError, RecursionError):
                        append(slow(text))
                        continue
                    append(value if stop == len_(text) and type_(value) is dict_ else slow(text))
                return out
        line_of = self._line
        return [line_of(line) for line in lines]

    @staticmethod
    def _text_line(line: str) -> Decoded:
        if line[-1:] == "\r":
            line = line[:-1]
        try:
            obj = _loads(line)
        except ValueError as exc:
            raw = line.encode("utf-8")
            return ProtocolError(f"invalid JSON: {exc}", len(raw), _preview(raw))
        except RecursionError:  # [[[[… nested deeper than the interpreter's stack
            raw = line.encode("utf-8")
            return ProtocolError("invalid JSON: nested too deeply", len(raw), _preview(raw))
        if type(obj) is not dict:
            raw = line.encode("utf-8")
            return ProtocolError(f"not a JSON-RPC frame ({type(obj).__name__})", len(raw), _preview(raw))
        return obj

    def _check_cap(self) -> None:
        # A trailing "\r" may be half of a CRLF whose "\n" is still in flight;
        # it does not count against the cap (so the buffer holds cap + 1 at most).
        if len(self._buf) - self._buf.endswith(b"\r") > self.max_frame_bytes:
            self._skipping = len(self._buf)
            self._skip_cr = self._buf.endswith(b"\r")
            self._skip_preview = _preview(bytes(self._buf))
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
        # A CRLF line's "\r" is not part of its size, wherever the chunks cut it.
        size, preview = self._skipping - self._skip_cr, self._skip_preview
        self._skipping, self._skip_cr, self._skip_preview = 0, False, ""
        return ProtocolError(self._too_big(size), size, preview)

    def _too_big(self, size: int) -> str:
        return f"frame of {size} bytes exceeds the cap of {self.max_frame_bytes} bytes"


__all__ = [
    "DEFAULT_MAX_FRAME_BYTES",
    "REQUEST",
    "NOTIFICATION",
    "RESPONSE",
    "ERROR",
    "Frame",
    "Decoded",
    "LineDecoder",
    "classify",
    "decode_line",
    "encode",
    "is_valid_id",
    "request_id",
]
