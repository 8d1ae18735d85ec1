"""Equivalent mutants: changes no test can see, each with the reason why.

Reviewed like code.  An entry names the module, the operator, the change
(``before``, ``after``) and the text of the mutated line, exactly as the
report prints them -- not a line number, so that edits elsewhere in the file
do not unhinge it.  Declared mutants still run: a declared mutant that is
killed, or an entry that matches no mutant any more, is reported as stale.
An entry matches every mutant with its key (an identical line elsewhere in
the module with the identical change included).
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class Equivalent:
    module: str  # "_session"
    operator: str
    before: str
    after: str
    line: str  # the mutated line's text, stripped
    reason: str

    @property
    def key(self) -> tuple[str, str, str, str, str]:
        return (self.module, self.operator, self.before, self.after, self.line)


_MISSES_THE_TABLE = (
    "the default only has to be a key the table does not hold: 'XX' misses it as surely as '' does, "
    "and a missing type is looked up, not shown"
)

_INDEX_START = (
    "a new index's count and end are overwritten by the pass that reads the log back (SessionLog.open, read_log) "
    "before anything reads them; a log never opened reads as empty either way (range(-1) is empty too)"
)
_PID_READS = (
    "how often, and how far apart, a refused writer reads the holder's pid file while the holder writes it: "
    "timing, which no test can see (the pid is there, or after the reads it is unknown)"
)
_JOIN_SIZE = (
    "how many rendered pieces wait before they are joined is a size, not a meaning: a block one piece longer or "
    "shorter makes the same text (the join is tested a block at a time, not per message: "
    "tests/test_prompt.py); make bench sees the difference, no test can"
)

_READ_SIZES_LINE = "READ_FIRST, READ_MAX = 64 << 10, 1 << 20"
_READ_SIZE = (
    "how much a pass reads at a time is a size, not a meaning: every line is read whole across reads, and the "
    "tests read a few bytes at a time (tests/test_session_stream.py); make bench sees the difference, no test can"
)
_STRIDE = (
    "how many events apart the index keeps an offset is a size: any stride finds every event (the tests use the "
    "constant); it changes only how much an index holds and how far a lookup reads on"
)
_WANT_LINE = 'chunk = read(pos, want) if want > 0 else b""'
_EMPTY_READ = "a read of 0 bytes returns b'', which is what the other branch gives: the pass ends alike"
_SCAN_FALLBACK = (
    "the scanner's result is trusted only when it took the whole line (end == len(text)); any other start or any "
    "other marker sends the line to json.loads, which gives the same value or the same error, only slower"
)
_SLOTS = "__slots__ only spares each object its __dict__ (memory); the attributes are the same with or without it"
_NONZERO_STEP = "a range's step is never 0: < 0, <= 0 and < 1 pick the same ranges"
_MAX = "a turn equal to the highest so far leaves the highest where it was: > and >= fold the same maximum"
_IDENTITY = (
    "the identity of a log never opened is never compared: open() sets it before anything appends, and a log "
    "never opened has no event to read back (its index is empty)"
)
_INDENT_LEVEL = (
    "the C encoder's second argument is the starting indent level, read only to indent: this encoder is built "
    "with indent None (compact lines), so any level writes the same text (every Python 3.9-3.13)"
)
_SKIP_CR_INIT = 'self._skip_cr = False  # the last byte skipped is a "\\r" (not counted if the "\\n" follows)'
_SKIP_RESET = 'self._skipping, self._skip_cr, self._skip_head = 0, False, b""'
_SKIP_HEAD_INIT = 'self._skip_head = b""  # the first bytes of the line being discarded (its preview)'
_SETTLED = (
    "settled is read only as a truth value, by _begin_segment(), which resets it to 0 before the next tool adds "
    "to it (so it is 0 or 1, or with the mutant 0 or -1 / 0 or 2: truthy alike); nothing outside the fold reads it"
)
_KIND_NAMES = (
    "classify()'s kinds are compared only with these same constants (_rpc: kind == _wire.REQUEST ...), never "
    "shown, logged or compared with a literal; blanking one leaves the four kinds distinct from each other and "
    "from None, so every frame is classified and dispatched alike"
)
_NEGATIVE_SCAN_INDEX = (
    "the C scanner refuses a negative index (ValueError 'idx cannot be negative', every Python 3.9-3.13), which "
    "sends the line down the json.loads path: the same value or the same error for every line, only slower "
    "(make bench sees it; no test can)"
)
_SET_BEFORE_READ = (
    "read only by _oversized() and the skipping branch of feed(), both only while _skipping > 0, and _check_cap() "
    "-- the one place _skipping becomes positive -- sets _skip_cr and _skip_head in the same breath: the initial "
    "(and reset) value is always overwritten before anything reads it"
)
_SAME_FRAMES_OTHER_PATH = (
    "only chooses between two paths that give the same frames: a chunk whose lines are not decoded at once is "
    "decoded line by line, with the same results; what changes is the speed, not the output"
)
_UNCLAIMED_RELEASE = (
    "the default is used only for a thread nobody claimed; any default <= 1 makes left <= 0, and popping a thread "
    "that is not in the table is a no-op either way"
)

_RPC_HOT_PATH = (
    "only chooses between receive()'s inlined hot path and _event(), which makes the same Notification for a "
    "claimed thread's notification (and counts it in frames_in the same): the same events, only slower"
)

_KEYWORD_TAG = (
    "an _Error's keyword is read only by _closest(), which compares it with 'type', 'false', 'enum' and 'const' "
    "(errors() returns paths and messages only): this keyword, blanked, is still none of the four, so every "
    "distance, every closest branch and every message stays the same"
)
_FAST_PATH = (
    "only chooses between a shortcut and the general code, which give the same answer for every instance: "
    "the same verdicts, only slower"
)
_SAME_ORDER = (
    "_FIRST only orders the checks valid() runs (every one must pass); this change keeps type, enum/const and "
    "required ahead of every other keyword and only reorders those four among themselves, and they are pure and "
    "never raise (no $ref behind them to compile): the same verdicts, and the same SchemaError or none"
)
_FIRST_LINE = '_FIRST = {"type": 0, "enum": 1, "const": 1, "required": 2}'

EQUIVALENTS: tuple[Equivalent, ...] = (
    Equivalent(
        "_jsontext",
        "number",
        "0",
        "1",
        'return "".join(self._chunks(value, 0))',
        _INDENT_LEVEL,
    ),
    Equivalent(
        "_jsontext",
        "number",
        "0",
        "-1",
        'return "".join(self._chunks(value, 0))',
        _INDENT_LEVEL,
    ),
    Equivalent("_rpc", "string", "'method'", "''", 'method = item.get("method")', _RPC_HOT_PATH),
    Equivalent(
        "_rpc",
        "boolop",
        "tid == last or tid in claimed",
        "tid == last and tid in claimed",
        "if type_(tid) is str_ and (tid == last or tid in claimed):",
        "last is set only on the hot path, so with `and` the hot path is never taken; " + _RPC_HOT_PATH,
    ),
    Equivalent(
        "_rpc",
        "compare",
        "type_(method) is str_",
        "type_(method) is not str_",
        'if type_(method) is str_ and type_(params) is dict_ and method != "serverRequest/resolved":',
        _RPC_HOT_PATH,
    ),
    *(
        Equivalent("_session", op, before, after, line, _INDEX_START)
        for op, before, after, line in (
            ("number", "0", "-1", "self.count = 0"),
            ("delete", "self.end = 0", "pass", "self.end = 0"),
            ("number", "0", "1", "self.end = 0"),
            ("number", "0", "-1", "self.end = 0"),
        )
    ),
    Equivalent(
        "_session",
        "compare",
        "os.fstat(file.fileno()).st_size > self._index.end",
        "os.fstat(file.fileno()).st_size >= self._index.end",
        "if os.fstat(file.fileno()).st_size > self._index.end:",
        "when they are equal the failed append left nothing: truncating a file to its own length leaves its bytes "
        "as they were, and the sync that follows has nothing to write",
    ),
    Equivalent(
        "_session",
        "delete",
        "f.flush()",
        "pass",
        "f.flush()",
        "the log's file is an unbuffered io.FileIO: its flush() has nothing to write (the data went with write())",
    ),
    Equivalent(
        "_session",
        "delete",
        "time.sleep(PID_READ_INTERVAL_S)",
        "pass",
        "time.sleep(PID_READ_INTERVAL_S)",
        _PID_READS,
    ),
    Equivalent("_session", "number", "20", "21", "PID_READS, PID_READ_INTERVAL_S = 20, 0.001", _PID_READS),
    Equivalent("_session", "number", "20", "19", "PID_READS, PID_READ_INTERVAL_S = 20, 0.001", _PID_READS),
    Equivalent(
        "_session",
        "number",
        "32",
        "33",
        "pid = int(f.read(32))",
        "a pid has at most 7 digits and a newline: 31, 32 or 33 bytes read all of it",
    ),
    Equivalent(
        "_session",
        "number",
        "32",
        "31",
        "pid = int(f.read(32))",
        "a pid has at most 7 digits and a newline: 31, 32 or 33 bytes read all of it",
    ),
    Equivalent(
        "_session",
        "delete",
        "_fcntl = None",
        "pass",
        "_fcntl = None",
        "the import's fallback runs only where fcntl is missing: tests/test_session_lock.py plays that by loading the "
        "module's own source with fcntl hidden, a copy the tool does not serve mutated (the same code path on the "
        "served module, with _fcntl set to None, is tested and mutated)",
    ),
    *(
        Equivalent("_session", "number", before, after, _READ_SIZES_LINE, _READ_SIZE)
        for before, after in (
            ("64", "65"),
            ("64", "63"),
            ("10", "11"),
            ("10", "9"),
            ("1", "2"),
            ("20", "21"),
            ("20", "19"),
        )
    ),
    Equivalent(
        "_session", "delete", "size = min(size * 2, READ_MAX)", "pass", "size = min(size * 2, READ_MAX)", _READ_SIZE
    ),
    Equivalent("_session", "number", "2", "3", "size = min(size * 2, READ_MAX)", _READ_SIZE),
    Equivalent("_session", "number", "2", "1", "size = min(size * 2, READ_MAX)", _READ_SIZE),
    Equivalent("_session", "number", "32", "33", "INDEX_STRIDE = 32", _STRIDE),
    Equivalent("_session", "number", "32", "31", "INDEX_STRIDE = 32", _STRIDE),
    Equivalent("_session", "compare", "want > 0", "want >= 0", _WANT_LINE, _EMPTY_READ),
    Equivalent("_session", "number", "0", "-1", _WANT_LINE, _EMPTY_READ),
    Equivalent(
        "_session",
        "number",
        "1",
        "0",
        "if len(lines) == 1:  # the middle of a long line",
        "a read without a newline then goes the general way: joined with the line's start and carried on whole, "
        "the same lines in the end; the special case only spares a long line one copy per read (make bench sees "
        "it, no test can)",
    ),
    Equivalent("_session", "number", "0", "1", "event, end = scan(text, 0)", _SCAN_FALLBACK),
    Equivalent("_session", "number", "1", "2", "end = -1", _SCAN_FALLBACK),
    Equivalent(
        "_session",
        "number",
        "1",
        "2",
        "if stop is None and ends_the_read and not read(pos, 1):",
        "one byte or two: the read only asks whether the file goes on after the line, and any byte says it does",
    ),
    Equivalent(
        "_session",
        "delete",
        "__slots__ = ('count', 'end', 'marks')",
        "pass",
        '__slots__ = ("count", "end", "marks")',
        _SLOTS,
    ),
    Equivalent(
        "_session",
        "delete",
        "__slots__ = ('_path', '_index', '_reading', '_span')",
        "pass",
        '__slots__ = ("_path", "_index", "_reading", "_span")',
        _SLOTS,
    ),
    Equivalent(
        "_session",
        "number",
        "1",
        "2",
        "return next(self._read(seq, seq + 1))  # (_read yields it, or raises)",
        "next() takes the first event the range yields, the one asked for; a range one event longer is never read "
        "further (its generator is dropped)",
    ),
    Equivalent("_session", "compare", "span.step < 0", "span.step <= 0", "if span.step < 0:", _NONZERO_STEP),
    Equivalent("_session", "number", "0", "1", "if span.step < 0:", _NONZERO_STEP),
    Equivalent(
        "_session", "compare", "turn > top", "turn >= top", "if type(turn) is int and turn > top:  # (not a bool)", _MAX
    ),
    Equivalent(
        "_session",
        "compare",
        "turn > self._top_turn",
        "turn >= self._top_turn",
        "if isinstance(turn, int) and not isinstance(turn, bool) and turn > self._top_turn:",
        _MAX,
    ),
    *(
        Equivalent(
            "_session", op, before, after, "self._identity = (0, 0)  # (st_dev, st_ino) of the file open()ed", _IDENTITY
        )
        for op, before, after in (
            ("delete", "self._identity = (0, 0)", "pass"),
            ("number", "0", "1"),
            ("number", "0", "-1"),
        )
    ),
    Equivalent(
        "_prompt",
        "string",
        "''",
        "'XX'",
        'project = _PROJECTIONS.get(event.get("type", ""))',
        _MISSES_THE_TABLE,
    ),
    # -- _wire ---------------------------------------------------------------
    Equivalent("_wire", "string", "'request'", "''", 'REQUEST = "request"', _KIND_NAMES),
    Equivalent("_wire", "string", "'notification'", "''", 'NOTIFICATION = "notification"', _KIND_NAMES),
    Equivalent("_wire", "string", "'response'", "''", 'RESPONSE = "response"', _KIND_NAMES),
    Equivalent("_wire", "string", "'error'", "''", 'ERROR = "error"', _KIND_NAMES),
    Equivalent("_wire", "number", "0", "-1", "value, end = _scan_once(text, 0)", _NEGATIVE_SCAN_INDEX),
    Equivalent("_wire", "delete", "self._skip_cr = False", "pass", _SKIP_CR_INIT, _SET_BEFORE_READ),
    Equivalent("_wire", "bool", "False", "True", _SKIP_CR_INIT, _SET_BEFORE_READ),
    Equivalent("_wire", "delete", "self._skip_head = b''", "pass", _SKIP_HEAD_INIT, _SET_BEFORE_READ),
    Equivalent("_wire", "string", "b''", "b'XX'", _SKIP_HEAD_INIT, _SET_BEFORE_READ),
    Equivalent("_wire", "bool", "False", "True", _SKIP_RESET, _SET_BEFORE_READ),
    Equivalent("_wire", "string", "b''", "b'XX'", _SKIP_RESET, _SET_BEFORE_READ),
    Equivalent(
        "_wire",
        "compare",
        "size <= self.max_frame_bytes",
        "size < self.max_frame_bytes",
        "if size <= self.max_frame_bytes:",
        "a chunk of exactly the cap then goes line by line instead of at once; " + _SAME_FRAMES_OTHER_PATH,
    ),
    # -- _rpc ------------------------------------------------------------------
    Equivalent(
        "_rpc",
        "number",
        "0",
        "-1",
        "left = self._claimed.get(thread_id, 0) - 1",
        _UNCLAIMED_RELEASE,
    ),
    Equivalent(
        "_rpc",
        "number",
        "0",
        "1",
        "left = self._claimed.get(thread_id, 0) - 1",
        _UNCLAIMED_RELEASE,
    ),
    # -- _mapping ----------------------------------------------------------------
    Equivalent(
        "_mapping",
        "number",
        "0",
        "-1",
        'raise ProtocolError(f"item.{key} holds an element that is not {kinds[0].__name__}")',
        "every row of _ITEM_ELEMENTS allows exactly one element type, so kinds[0] and kinds[-1] are the same class",
    ),
    Equivalent(
        "_mapping",
        "string",
        "''",
        "'XX'",
        'kind: str = item.get("type", "")',
        _MISSES_THE_TABLE
        + " (tool_call() puts kind in its ToolCall only when the table holds it: a type the item has)",
    ),
    # -- _stepfold ------------------------------------------------------------------
    Equivalent(
        "_stepfold",
        "delete",
        "self._text_at: Dict[str, int] = {}",
        "pass",
        "self._text_at: Dict[str, int] = {}  # agent message id → its block in the held message",
        "read only when a message is held (self.held is not None and item_id in self._text_at), and _held() -- "
        "the only place a held message is made -- assigns a fresh table first",
    ),
    Equivalent("_stepfold", "arith", "self.settled += 1", "self.settled -= 1", "self.settled += 1", _SETTLED),
    Equivalent("_stepfold", "number", "1", "2", "self.settled += 1", _SETTLED),
    Equivalent(
        "_stepfold",
        "return",
        "return ''",
        "return None",
        'return ""',
        "_reasoning_text() is private and its one caller only tests the result's truth (if text:): '' and None "
        "both mean no reasoning block",
    ),
    Equivalent(
        "_prompt",
        "string",
        "''",
        "'XX'",
        'render = _BLOCK_RENDERERS.get(block.get("type", ""))',
        _MISSES_THE_TABLE,
    ),
    Equivalent("_prompt", "number", "512", "513", "JOIN_PIECES = 512", _JOIN_SIZE),
    Equivalent("_prompt", "number", "512", "511", "JOIN_PIECES = 512", _JOIN_SIZE),
    Equivalent(
        "_prompt",
        "compare",
        "len(pending) >= JOIN_PIECES",
        "len(pending) > JOIN_PIECES",
        "if len(pending) >= JOIN_PIECES:",
        _JOIN_SIZE,
    ),
    Equivalent(
        "_prompt",
        "string",
        "''",
        "'XX'",
        'text, self._text = self._text, ""  # this local is then the text\'s only owner ...',
        "the placeholder only drops the transcript's own reference while the text is appended to; the very next "
        "statements append and store the text back, so no one reads it (an append raising MemoryError aside)",
    ),
    Equivalent(
        "_errors",
        "number",
        "0",
        "-1",
        'self.args = (f"{self.args[0]} (the limit resets at {resets_at}, Unix time)",)',
        "args holds exactly one message here (TurnFailed.__init__ passes one to Exception.__init__): its first "
        "item is its last",
    ),
    # -- _jsonschema ----------------------------------------------------------
    Equivalent(
        "_jsonschema",
        "delete",
        "__slots__ = ('explain', 'trivial', 'valid')",
        "pass",
        '__slots__ = ("explain", "trivial", "valid")',
        "_Node is private and nothing sets any attribute on one but its three: without __slots__ each node only "
        "carries a __dict__ as well (memory, not behaviour)",
    ),
    Equivalent(
        "_jsonschema",
        "boolop",
        "kind is int or kind is float",
        "kind is int and kind is float",
        "if kind is int or kind is float:",
        "the shortcut is never taken, and the general test that follows (not a bool and a numbers.Number) is true "
        "for every int and float as well; " + _FAST_PATH,
    ),
    Equivalent(
        "_jsonschema",
        "bool",
        "True",
        "False",
        "_ANY = _Node(_accept, _no_reasons, trivial=True)",
        "trivial only lets callers skip a node that accepts everything (_all_of, properties, items, "
        "additionalProperties/Items): not skipped, _accept still accepts everything and its explain is never run; "
        + _FAST_PATH,
    ),
    Equivalent(
        "_jsonschema",
        "number",
        "1",
        "0",
        "if len(checks) == 1:",
        "checks is not empty here (the line before returns for it), so the shortcut is never taken and the loop "
        "over one check returns what that check returns; " + _FAST_PATH,
    ),
    Equivalent(
        "_jsonschema",
        "number",
        "0",
        "-1",
        "return checks[0]",
        "reached only when checks holds exactly one check: its first is its last",
    ),
    Equivalent(
        "_jsonschema",
        "number",
        "1",
        "0",
        "elif not classes and len(predicates) == 1:",
        "predicates is not empty in this branch (the if before took that case), so the shortcut is never taken and "
        "isinstance(instance, ()) or any(p(instance) for p in predicates) is the one predicate's bool; " + _FAST_PATH,
    ),
    Equivalent(
        "_jsonschema",
        "number",
        "0",
        "-1",
        "valid = predicates[0]",
        "reached only when predicates holds exactly one predicate: its first is its last",
    ),
    Equivalent(
        "_jsonschema",
        "string",
        "'required'",
        "''",
        'yield _Error(path, f"{name!r} is a required property", "required")',
        _KEYWORD_TAG,
    ),
    Equivalent("_jsonschema", "string", "'pattern'", "''", '"pattern",', _KEYWORD_TAG),
    Equivalent(
        "_jsonschema",
        "string",
        "'additionalProperties'",
        "''",
        'yield _Error(path, f"{listed} {verb} not match any of the regexes: {regexes}", "additionalProperties")',
        _KEYWORD_TAG,
    ),
    Equivalent(
        "_jsonschema",
        "string",
        "'additionalProperties'",
        "''",
        'yield _Error(path, message, "additionalProperties")',
        _KEYWORD_TAG,
    ),
    Equivalent(
        "_jsonschema",
        "string",
        "'additionalItems'",
        "''",
        'yield _Error(path, f"Additional items are not allowed ({listed} {verb} unexpected)", "additionalItems")',
        _KEYWORD_TAG,
    ),
    Equivalent(
        "_jsonschema",
        "string",
        "'anyOf'",
        "''",
        'yield _Error(path, message + _closest(nodes, instance, path), "anyOf")',
        _KEYWORD_TAG,
    ),
    Equivalent("_jsonschema", "string", "'oneOf'", "''", 'yield _Error(path, message, "oneOf")', _KEYWORD_TAG),
    Equivalent(
        "_jsonschema",
        "string",
        "'oneOf'",
        "''",
        'yield _Error(path, message + _closest(nodes, instance, path), "oneOf")',
        _KEYWORD_TAG,
    ),
    Equivalent("_jsonschema", "string", "'not'", "''", '"not",', _KEYWORD_TAG),
    Equivalent("_jsonschema", "number", "0", "1", _FIRST_LINE, _SAME_ORDER + " (type ties with enum and const)"),
    Equivalent("_jsonschema", "number", "0", "-1", _FIRST_LINE, _SAME_ORDER + " (the very same order)"),
    Equivalent("_jsonschema", "number", "1", "2", _FIRST_LINE, _SAME_ORDER + " (enum or const ties with required)"),
    Equivalent("_jsonschema", "number", "1", "0", _FIRST_LINE, _SAME_ORDER + " (enum or const ties with type)"),
    Equivalent("_jsonschema", "number", "2", "1", _FIRST_LINE, _SAME_ORDER + " (required ties with enum and const)"),
    Equivalent(
        "_jsonschema",
        "number",
        "3",
        "4",
        "by_cost = sorted(compiled, key=lambda pair: _FIRST.get(pair[0], 3))",
        _SAME_ORDER + " (the very same order: every other keyword still comes after required's 2)",
    ),
)
