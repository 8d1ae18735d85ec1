"""The conversation and the prompt text, as pure functions of the session log.

Theory of operation
-------------------
Every step runs on a *fresh* codex thread, so codex remembers nothing: the
model's whole context is the text produced here from the session log.  Hence
the invariant **what the model sees is exactly what is logged** -- the prompt
is a pure function of the log prefix, and nothing reaches the model that a
reader of the log cannot see (``docs/session-log.md`` describes the result).

Two stages:

* :func:`derive_messages` projects events onto messages.  Only four event
  types are projected (``user/message``, ``assistant/message``,
  ``tool/result``, ``session/compaction``); ``tool/call`` is not, because the assistant message that
  precedes it already carries the same call as a ``tool-call`` block.  The
  projection looks at one event at a time, so
  ``derive(a + b) == derive(a) + derive(b)``.  A tool result's message is
  its blocks after one bracketed line saying how the call ended when it did
  not simply run and succeed (:func:`result_note`: who declined it, a
  non-zero exit code, a failure, how long it ran before the turn ended
  without it), with ``(no output)`` for the empty output of a call that ran:
  the four ends the next step must tell apart read differently, and each is
  derived from the logged ``status``, ``exitCode``, ``approval``,
  ``stepEnd`` and ``elapsedMs`` alone.
* :func:`serialize` renders each message as one tagged section and joins the
  sections with a blank line.  Reasoning blocks are not transcribed (the model
  reasons afresh on every query); images become a placeholder naming the file
  (the bytes travel as ``localImage`` items, by path).

Because both stages work message by message, an appended event can never
change an earlier section.  :class:`Transcript` exploits that: it renders each
message once and appends it to the text it keeps (and keeps nothing else), so
a long session costs linear work in the log rather than quadratic, a resumed
log is rendered as it streams from the file, and the next step's prompt costs
what its new events add.

Bounded prompts (issue 30).  The log keeps every tool output whole; the
prompt does not have to.  With an ``output_budget`` a tool result's text
block longer than it is cut to its head and tail around one marker line that
says how much was left out and which event (``seq``) holds all of it
(:func:`cut_output`): a 200 KB command output costs the later prompts a few
KB each, and nothing is lost to a reader of the log.  And a
``session/compaction`` event (the agent writes one when the prompt passes its
budget: ``_agent``) is projected as a ``summary`` message that *replaces*
everything before it: :func:`serialize` and :class:`Transcript` start again
from the last one.  The summary's text was produced by the model from
:func:`compaction_request`, a pure function of the prompt it replaces, so
the prompt stays a pure function of the log.

No I/O, no clock, no environment: events are plain dicts, as read from the
log (the agent streams them from the file: ``SessionLog.events``).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Callable, Dict, Iterable, Iterator, List, Mapping, Optional, Tuple

if TYPE_CHECKING:  # the checker sees the standard library; at run time, ._dataclasses (nothing compiled)
    from typing import NamedTuple
else:
    from ._dataclasses import NamedTuple

Block = Dict[str, Any]
LogEntry = Mapping[str, Any]

#: Shown instead of an empty body, so the model never sees an empty section.
NO_CONTENT = "(no content)"


class Message(NamedTuple):
    """One conversation message derived from one log event.  A tuple, not a
    dataclass: one object per message instead of two (no ``__dict__``), which
    keeps the garbage collector's work linear in a long log (``make bench``:
    ``serialize_scaling``)."""

    role: str  # "user" | "assistant" | "tool" | "summary"
    content: Tuple[Block, ...]
    call_id: Optional[str] = None
    is_error: bool = False
    source: Optional[Dict[str, Any]] = None


# -- blocks (the content of messages and results) --------------------------


def text_block(text: str) -> Block:
    return {"type": "text", "text": text}


def reasoning_block(text: str) -> Block:
    return {"type": "reasoning", "text": text}


def tool_call_block(id: str, name: str, arguments: str) -> Block:
    return {"type": "tool-call", "id": id, "name": name, "arguments": arguments}


def image_block(path: str) -> Block:
    return {"type": "image", "path": path}


# -- derive ---------------------------------------------------------------


def _content(data: Mapping[str, Any]) -> Tuple[Block, ...]:
    return tuple(data.get("content") or ())


def _user(data: Mapping[str, Any]) -> Message:
    return Message("user", _content(data), source=data.get("source"))


def _assistant(data: Mapping[str, Any]) -> Message:
    return Message("assistant", _content(data), source=data.get("source"))


#: Shown instead of the empty output of a tool that ran (``completed`` or
#: ``failed``): the model tells "ran, printed nothing" from "did not run".
NO_OUTPUT = "(no output)"

#: Who declined a call (``tool/result.approval.by``, the ``by`` of its
#: ``approval/decision``) → how its result says so.
_DECLINED_BY = {
    "handler": "declined by the user",
    "default": "declined by default: no one was asked",
    "timeout": "declined: no answer in time",
    "error": "declined: the approval handler failed",
    "close": "declined: the client closed before anyone answered",
}

#: How the step of an abandoned tool ended (``tool/result.stepEnd``) → what
#: happened to the tool, and why.
_ABANDONED_BY = {
    "completed": ("timed out", "still running when the turn ended"),
    "aborted": ("interrupted", "the turn was cancelled"),
    "blocked": ("interrupted", "an approval was answered cancel"),
    "error": ("cut short", "the turn ended in an error"),
}


def _declined(approval: Any) -> str:
    if not isinstance(approval, Mapping):
        return "declined"
    by, decision = approval.get("by"), approval.get("decision")
    said = _DECLINED_BY.get(by) if isinstance(by, str) else None
    said = said or (f"declined ({by})" if by else "declined")
    return f"{said} (approval: {decision})" if decision else said


def _abandoned(data: Mapping[str, Any]) -> Optional[str]:
    elapsed = data.get("elapsedMs")
    after = f" after {elapsed / 1000:.1f} s" if type(elapsed) is int else ""
    step_end = data.get("stepEnd")
    what, why = _ABANDONED_BY.get(step_end if isinstance(step_end, str) else "", ("did not finish", ""))
    if not why:  # an older log: the result's text says all it knows
        return f"{what}{after}" if after else None
    return f"{what}{after}: {why}"


def result_note(data: Mapping[str, Any]) -> Optional[str]:
    """The one line that says how a tool call ended, from its ``tool/result``
    data: who declined it, how long it ran before the turn ended without it,
    a non-zero exit code, a failure -- ``None`` for a call that ran and
    succeeded.  Shown in brackets above the result's output."""
    status = data.get("status")
    if status == "declined":
        return _declined(data.get("approval"))
    if status == "abandoned":
        return _abandoned(data)
    code = data.get("exitCode")
    if type(code) is int and code != 0:
        return f"exit code {code}"
    return "failed" if status == "failed" else None


#: The statuses of a call that ran: its empty output is shown as NO_OUTPUT.
_RAN = frozenset({"completed", "failed"})


def _has_output(content: Tuple[Block, ...]) -> bool:
    for block in content:
        if block.get("type") != "text" or block.get("text"):
            return True
    return False


def _tool(data: Mapping[str, Any]) -> Message:
    # The content the model reads: the note (how the call ended), then the
    # output -- or, for a call that ran and printed nothing, NO_OUTPUT.  The
    # common case (ran, exit code 0 or none, some output) costs two lookups.
    content = _content(data)
    status = data.get("status")
    note = None if status == "completed" and not data.get("exitCode") else result_note(data)
    if status in _RAN and not _has_output(content):
        content = (text_block(NO_OUTPUT),)
    if note is not None:
        content = (text_block(f"[{note}]"), *content)
    return Message("tool", content, data.get("callId"), bool(data.get("isError")))


#: The event type the agent writes when it compacts the session (``_agent``).
COMPACTION = "session/compaction"


def compaction_note(data: Mapping[str, Any]) -> str:
    """The bracketed first line of a summary: what it stands for, and where
    the whole record is."""
    return (
        f"[a summary of the session up to event seq {data.get('throughSeq')}; the whole record is in the session log]"
    )


def _summary(data: Mapping[str, Any]) -> Optional[Message]:
    # A compaction without a string summary (a writer's bug, a hand edit)
    # counts as absent: the events before it stay in the prompt.
    summary = data.get("summary")
    if not isinstance(summary, str):
        return None
    return Message("summary", (text_block(compaction_note(data)), text_block(summary)))


#: The projected event types; every other type is not part of the conversation.
_PROJECTIONS: Dict[str, Callable[[Mapping[str, Any]], Optional[Message]]] = {
    "user/message": _user,
    "assistant/message": _assistant,
    "tool/result": _tool,
    COMPACTION: _summary,
}


def is_compaction(event: Mapping[str, Any]) -> bool:
    """Whether ``event`` is a ``session/compaction`` that counts (its summary
    is a string): the fold of the log (``_session``) keeps the last one."""
    data = event.get("data")
    return event.get("type") == COMPACTION and isinstance(data, Mapping) and isinstance(data.get("summary"), str)


#: The default of :attr:`AgentConfig.tool_output_budget <codexmini.AgentConfig.tool_output_budget>`:
#: the characters of one tool output kept in the prompt (about 4,000 tokens).
TOOL_OUTPUT_BUDGET = 16_000


def cut_middle(text: str, budget: int, where: str) -> str:
    """``text`` if it is at most ``budget`` characters long, else its first
    ``budget // 2`` and last ``budget - budget // 2`` characters around one
    marker line saying how many were left out and ``where`` they all are.
    The head shows how it started, the tail how it ended (a command's error
    or summary line; a session's latest work), which a reader needs most."""
    if len(text) <= budget:
        return text
    head = budget // 2
    left = len(text) - budget
    return f"{text[:head]}\n[... {left} of {len(text)} characters left out here; {where} ...]\n{text[len(text) - (budget - head) :]}"


def cut_output(text: str, budget: int, seq: Any) -> str:
    """A tool output cut to ``budget`` (:func:`cut_middle`), its marker naming
    the log event (``seq``) that holds it whole."""
    return cut_middle(text, budget, f"the whole output is in the session log, event seq {seq}")


def _cut(data: Mapping[str, Any], budget: int, seq: Any) -> Mapping[str, Any]:
    """A ``tool/result``'s data with each text block of its output longer
    than ``budget`` cut (:func:`cut_output`), before the projection adds its
    note; ``data`` itself when nothing is that long (nothing copied)."""
    content = data.get("content") or ()
    for block in content:  # (a loop, not all(): one output block, one check, no generator)
        if len(str(block.get("text", ""))) > budget:
            break
    else:
        return data
    cut = [
        dict(b, text=cut_output(str(b.get("text", "")), budget, seq)) if b.get("type") == "text" else b for b in content
    ]
    return dict(data, content=cut)


def iter_messages(events: Iterable[LogEntry], output_budget: Optional[int] = None) -> Iterator[Message]:
    """The conversation held by ``events``, in log order, one message at a
    time; with ``output_budget``, each tool result's long text blocks cut to
    it (:func:`cut_output`)."""
    for event in events:
        project = _PROJECTIONS.get(event.get("type", ""))
        if project is not None:
            data = event.get("data") or {}
            if output_budget is not None and project is _tool:
                data = _cut(data, output_budget, event.get("seq"))
            message = project(data)
            if message is not None:
                yield message


def derive_messages(events: Iterable[LogEntry], output_budget: Optional[int] = None) -> List[Message]:
    """The conversation held by ``events``, in log order (see :func:`iter_messages`)."""
    return list(iter_messages(events, output_budget))


# -- serialize --------------------------------------------------------------


def _arguments(block: Block) -> str:
    args = block.get("arguments", "")
    # The log stores arguments as JSON *text*; anything else was built by hand
    # and is shown as the JSON it stands for rather than as a Python repr.
    if isinstance(args, str):
        return args
    import json  # here, not with the agent: only for arguments built by hand

    return json.dumps(args, ensure_ascii=False)


#: How each block type is transcribed.  A type missing here -- ``reasoning``,
#: or one a newer writer invented -- is not transcribed.
_BLOCK_RENDERERS: Dict[str, Callable[[Block], str]] = {
    "text": lambda b: str(b.get("text", "")),
    "tool-call": lambda b: f"[tool call: {b.get('name', '')}({_arguments(b)})]",
    "image": lambda b: f"[image: {b.get('path', '')}]",
}


def _tag(message: Message) -> str:
    if message.role == "tool":
        return "tool-result-error" if message.is_error else "tool-result"
    return message.role


def _pieces(message: Message) -> List[str]:
    """One message's section as the strings that make it up, in order.

    The block texts are the log's own string objects, not copies: a caller that
    joins many sections at once copies each text exactly once."""
    tag = _tag(message)
    pieces = [f"<{tag}>\n"]
    for block in message.content:
        render = _BLOCK_RENDERERS.get(block.get("type", ""))
        if render is not None:
            pieces += (render(block), "\n")
    if len(pieces) == 1 or (len(pieces) == 3 and not pieces[1]):
        pieces = [pieces[0], NO_CONTENT, "\n"]  # no body, or one empty one
    pieces.append(f"</{tag}>")
    return pieces


def render_section(message: Message) -> str:
    """One message as its tagged section (no separator)."""
    return "".join(_pieces(message))


SEPARATOR = "\n\n"


def serialize(messages: Iterable[Message]) -> str:
    """The prompt text for ``messages``: sections joined by a blank line,
    from the last ``summary`` on (a compaction replaces what came before it)."""
    kept: List[Message] = []
    for message in messages:
        if message.role == "summary":
            kept = []
        kept.append(message)
    return SEPARATOR.join(render_section(m) for m in kept)


#: What the model is asked to do with a prompt that passed its budget; the
#: summary call's input is this, a blank line, and that prompt
#: (:func:`compaction_request`).
COMPACTION_INSTRUCTION = (
    "You are compacting an agent session that no longer fits the model's context. Below is the session so far, "
    "as the model saw it. Write the summary that will replace it: the user's requests and constraints, the "
    "decisions made and why, what was done (commands run, files changed) and what came of it, the current state, "
    "and what remains to do, with the exact names, paths and values the work depends on. Do not run any command "
    "or tool: answer with the summary alone."
)


def compaction_request(prompt: str, budget: Optional[int] = None) -> str:
    """The input of the summary call that compacts ``prompt``: the
    instruction, a blank line, and ``prompt`` -- cut to ``budget`` characters
    (:func:`cut_middle`: the head keeps the previous summary, the tail the
    latest work) when it is longer, so that the summary call too stays within
    the budget however much one codex turn added.  Pure, so a compaction is
    reproducible from the log: ``prompt`` is that of the events up to the
    compaction's ``throughSeq``."""
    if budget is not None:
        prompt = cut_middle(prompt, budget, "the whole session is in the session log")
    return f"{COMPACTION_INSTRUCTION}{SEPARATOR}{prompt}"


#: A transcript joins the pieces rendered since it last did once this many
#: are pending (a few hundred KB of text, still in the cache).
JOIN_PIECES = 512


class Transcript:
    """An append-only, incrementally rendered :func:`serialize`.

    ``Transcript().extend(events).text() == serialize(derive_messages(events))``
    for every event list, however it is split across ``extend`` calls: each
    message is rendered exactly once, when its event is appended.  Feed it the
    log as it grows (``extend(new_events)``); never feed an event twice.

    It holds the text itself and nothing else: the rendered pieces are joined
    a block at a time (every :data:`JOIN_PIECES`, while they are fresh) and the
    block appended to the text.  The text grows in place when nothing else
    holds it (CPython resizes a string only its owner refers to; for a large
    one the C library moves its pages instead of copying them), so a session
    costs memory for its text once, a resumed log is rendered as it streams
    from the file, and the next step's prompt costs what the new events add.
    A caller still holding the last :meth:`text` makes the next append a copy:
    the same text, at the cost of a join.

    ``Transcript(output_budget)`` cuts long tool outputs as
    ``derive_messages(events, output_budget)`` does; a compaction's summary
    starts the text afresh (the text before it is dropped, as
    :func:`serialize` drops it), so a session's prompt is bounded by its
    budget, not by its length.
    """

    def __init__(self, output_budget: Optional[int] = None) -> None:
        self._text = ""
        self._pending: List[str] = []  # the pieces rendered since the last join
        self._sections = 0
        self._base = 0  # 1 when the first section is a summary (nothing a compaction would replace)
        #: Each tool output's budget in the prompt (None: whole).
        self.output_budget = output_budget

    def extend(self, events: Iterable[LogEntry]) -> "Transcript":
        # Message by message, never a list of them: a message is dropped as
        # soon as its pieces exist, so a long log leaves no trail of live
        # tuples for the collector to walk (``make bench``: serialize_scaling).
        pending = self._pending
        for message in iter_messages(events, self.output_budget):
            if message.role == "summary":  # a compaction: what came before is gone from the prompt
                self._text, self._sections, self._base = "", 0, 1
                del pending[:]
            if self._sections:
                pending.append(SEPARATOR)
            pending += self.render(message)
            self._sections += 1
            if len(pending) >= JOIN_PIECES:
                self._join()
                pending = self._pending
        return self

    def _join(self) -> None:
        """Append the pending pieces to the text."""
        block = "".join(self._pending)
        self._pending = []
        text, self._text = self._text, ""  # this local is then the text's only owner ...
        text += block  # ... so CPython appends in place
        self._text = text

    def render(self, message: Message) -> List[str]:
        """One section's pieces; called once per message (a hook for tests)."""
        return _pieces(message)

    def __len__(self) -> int:
        """How many sections (messages) it holds."""
        return self._sections

    def size_with(self, messages: Iterable[Mapping[str, Any]]) -> int:
        """How long :meth:`text` would be with the user messages ``messages``
        (``user/message`` data, not logged yet) appended: the prompt a step
        is about to send, measured before anything of it is written."""
        size, separated = len(self.text()), bool(self._sections)  # (the first section has no separator)
        for data in messages:
            size += (len(SEPARATOR) if separated else 0) + len(render_section(_user(data)))
            separated = True
        return size

    def compactable(self) -> bool:
        """Whether it holds anything a compaction would replace: a section
        that is not the summary it starts with."""
        return self._sections > self._base

    def text(self) -> str:
        if self._pending:
            self._join()
        return self._text


__all__ = [
    "COMPACTION",
    "COMPACTION_INSTRUCTION",
    "JOIN_PIECES",
    "NO_CONTENT",
    "NO_OUTPUT",
    "Message",
    "TOOL_OUTPUT_BUDGET",
    "Transcript",
    "compaction_note",
    "compaction_request",
    "cut_middle",
    "cut_output",
    "derive_messages",
    "image_block",
    "is_compaction",
    "iter_messages",
    "reasoning_block",
    "render_section",
    "result_note",
    "serialize",
    "text_block",
    "tool_call_block",
]
