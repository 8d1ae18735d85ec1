"""``codexmini.sync`` has every call of the async API, with the same parameters.

Each blocking class is compared with its async twin (:data:`PAIRS`), and each
public coroutine function of ``codexmini`` with the ``sync`` function of the
same name:

1. every public member of the async class -- method, property, class
   attribute, and every public attribute its methods set (``self.x = …``) --
   has a twin of the same name (or the name :data:`RENAMED` gives) in the
   blocking class, unless :data:`NO_TWIN` says why not;
2. the twin of a coroutine, or of a method that returns an async iterator,
   is a plain function, of the same kind (method, classmethod, staticmethod;
   a value -- property or attribute -- for a value);
3. its parameters are the async ones, in order: the same names, kinds,
   defaults and annotations (the annotations as written, mapped async →
   blocking by :data:`MAPPED`).  A blocking twin may add one parameter, a
   last ``timeout: Optional[float] = None`` (before a ``**options``), when
   the async call has none: it bounds the whole call.  Any other difference
   is in :data:`PARAMS`, with its reason;
4. its return annotation is the async one, mapped (``AsyncIterator`` →
   ``Iterator``, ``AppServerClient`` → ``Client``), unless :data:`RETURNS`
   says why not;
5. a public member of the blocking class with no async twin is in
   :data:`SYNC_ONLY`, with its reason -- and the shorthands among them are
   compared with what they stand for (:data:`SHORTHANDS`);
6. every public class of ``codexmini`` with a coroutine method is in
   :data:`PAIRS`, and no entry of the tables is stale.

The client's constructor is its ``start`` and ``connect``: compared with
both by :func:`test_sync_client_constructor_is_start_and_connect`.  The
comparison itself is shown to catch each kind of drift on made-up classes.
The README's agent section is checked to name every knob of the agent.
"""

from __future__ import annotations

import ast
import dataclasses
import inspect
import os
import re
import textwrap
from typing import Any, Callable, Dict, Iterator, List, Optional, Set, Tuple

import codexmini
from codexmini import _agent, _run, _subscriptions, _threads, sync
from codexmini._client import AppServerClient

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))

#: (blocking class, async class), each shown as ``<async class name>.<member>`` in the tables.
PAIRS: List[Tuple[type, type]] = [
    (sync.Client, AppServerClient),
    (sync.Thread, _threads.Thread),
    (sync.Turn, _threads.Turn),
    (sync.Subscription, _subscriptions.Subscription),
    (sync.Agent, _agent.Agent),
]

#: Names in annotations, async → blocking (whole words; quotes are dropped first).
MAPPED = {
    "AppServerClient": "Client",
    "AsyncIterator": "Iterator",
    "Handler": "RequestHandler",
}

#: Async members whose blocking twin has another name.
RENAMED = {
    "__aenter__": "__enter__",
    "__aexit__": "__exit__",
    "__aiter__": "__iter__",
    "aclose": "close",
}

#: Async members with no blocking twin, and why; where a blocking equivalent exists, what it is.
NO_TWIN = {
    "AppServerClient.__init__": "wraps a started transport; a blocking client is built by its constructor, "
    "the twin of start and connect",
    "AppServerClient.start": "the blocking start is the constructor, sync.Client(launch, ...) "
    "(test_sync_client_constructor_is_start_and_connect)",
    "AppServerClient.connect": "the blocking connect is the constructor with connect= and token= "
    "(test_sync_client_constructor_is_start_and_connect)",
    "AppServerClient.call": "the name is sync.Client.call(coro), which runs a coroutine on the client's loop; "
    "the typed requests are blocking as client.call(client.aio.call.<name>(params)), typed the same",
    "AppServerClient.SIGNAL_GRACES": "how close() signals the child: a setting of the async class, "
    "which sync.Client.close() runs",
    "Thread.__init__": "a blocking thread is made by the facade (Thread.start/resume/fork) around an async one",
    "Turn.__init__": "a blocking turn is made by the facade (Thread.turn/review) around an async one",
    "Turn.__anext__": "a blocking turn is iterated with for: its __iter__ is a generator, each step one blocking call",
    "Turn.books": "the turn's fold lives on the loop's thread and changes with every event; id, usage, items and "
    "completed read what a caller needs of it",
    "Subscription.__init__": "made by the facade (Client.subscribe) around an async one",
    "Subscription.__anext__": "a blocking subscription is iterated with for: its __iter__ is a generator, "
    "each step one blocking call",
    "Agent.approvals": "a constructor argument; the async agent holds a loop-side wrapper of the blocking handler",
    "Agent.before_step": "a constructor argument; the async agent holds a loop-side wrapper of the blocking hook",
    "Agent.on_event": "a constructor argument, read by the agent's loop only",
    "Agent.new_id": "a constructor argument, read by the agent's loop only",
    "Agent.inbox": "the agent's queue, changed on the loop's thread; followup, steer and inject are its calls",
    "Agent.child": "the agent's child supervisor, changed on the loop's thread; phase says what it does",
}

#: Parameters that differ between twins, and why: (member, parameter).
PARAMS = {
    ("connect_daemon", "approvals"): "approvals as a plain function, installed in a worker thread as sync.Client's "
    "(the async caller registers handlers on the client it gets)",
}

#: Return annotations that differ between twins, and why.
RETURNS = {
    "Subscription.__aiter__": "the async subscription is its own iterator (__anext__ gives frames); the blocking "
    "one's __iter__ is a generator of the same frames",
}

#: Public members of the blocking classes with no async twin, and why.
SYNC_ONLY = {
    "Client.__init__": "the blocking start and connect (test_sync_client_constructor_is_start_and_connect)",
    "Client.portal": "the private loop the client's calls run on",
    "Client.aio": "the async client, for coroutines given to call()",
    "Client.call": "runs a coroutine of the async API on the client's loop",
    "Client.thread": "shorthand of Thread.start(client, ...) (SHORTHANDS)",
    "Client.run": "shorthand of sync.run(prompt, client=client, ...) (SHORTHANDS)",
    "Thread.__init__": "made by the facade around an async thread",
    "Thread.portal": "the client's loop",
    "Thread.aio": "the async thread",
    "Turn.__init__": "made by the facade around an async turn",
    "Turn.portal": "the client's loop",
    "Turn.aio": "the async turn",
    "Subscription.__init__": "made by the facade around an async subscription",
    "Subscription.portal": "the client's loop",
    "Subscription.aio": "the async subscription",
    "Agent.portal": "the private loop the agent runs on",
    "Agent.aio": "the async agent",
}

#: Blocking shorthands and what they stand for: (stands for, its parameters the shorthand fills in).
SHORTHANDS: Dict[str, Tuple[Callable[..., Any], Tuple[str, ...]]] = {
    "Client.thread": (_threads.Thread.start, ("client",)),
    "Client.run": (_run.run, ("client", "launch", "connect", "approvals")),
}

#: Parameters of AppServerClient.start/connect the constructor leaves out, and why.
CONSTRUCTOR_LEFT_OUT = {
    "retry_sleep": "an async sleep between retries, for tests of the retry policy; sync callers set retry=",
}
#: What the constructor adds to start's and connect's parameters, and why.
CONSTRUCTOR_ADDS = {
    "approvals": "a plain approval handler, run in a worker thread (installed once the client is open)",
    "timeout": "bounds the whole start (a blocking call)",
}


# -- reading a class --------------------------------------------------------------------------


#: A member no class body holds: an attribute a method sets on ``self``.
SET = object()

#: The special methods compared (each protocol's, and the constructor).
DUNDERS = {
    "__init__",
    "__aenter__",
    "__aexit__",
    "__aiter__",
    "__anext__",
    "__enter__",
    "__exit__",
    "__iter__",
    "__next__",
}


@dataclasses.dataclass
class Member:
    owner: str  # the class the member is named by in the tables
    name: str
    raw: Any  # what the class body holds (a function, classmethod, property, value), or SET

    @property
    def key(self) -> str:
        return f"{self.owner}.{self.name}"

    @property
    def kind(self) -> str:
        if isinstance(self.raw, classmethod):
            return "classmethod"
        if isinstance(self.raw, staticmethod):
            return "staticmethod"
        if inspect.isfunction(self.raw):
            return "method"
        return "value"  # a property, a class attribute or an attribute a method sets

    @property
    def function(self) -> Any:
        return self.raw.__func__ if isinstance(self.raw, (classmethod, staticmethod)) else self.raw


def _public(name: str) -> bool:
    return name in DUNDERS or not name.startswith("_")


def _set_attributes(cls: type) -> Set[str]:
    """The public attributes the methods of ``cls`` set on ``self``."""
    try:
        tree = ast.parse(textwrap.dedent(inspect.getsource(cls)))
    except (OSError, TypeError):  # made up in a test, without a source file
        return set()
    found = set()
    (body,) = [node for node in tree.body if isinstance(node, ast.ClassDef)]
    for method in body.body:
        if not isinstance(method, (ast.FunctionDef, ast.AsyncFunctionDef)):
            continue
        for node in ast.walk(method):
            if isinstance(node, ast.Assign):
                targets = node.targets
            elif isinstance(node, ast.AnnAssign):
                targets = [node.target]
            else:
                continue
            for target in targets:
                if (
                    isinstance(target, ast.Attribute)
                    and isinstance(target.value, ast.Name)
                    and target.value.id == "self"
                ):
                    if not target.attr.startswith("_"):
                        found.add(target.attr)
    return found


def members(cls: type, owner: str) -> Dict[str, Member]:
    found: Dict[str, Member] = {}
    for klass in reversed(cls.__mro__[:-1]):  # object's members are nobody's API
        for name in _set_attributes(klass):
            found[name] = Member(owner, name, SET)
        for name, raw in vars(klass).items():
            if _public(name):
                found[name] = Member(owner, name, raw)
    return found


def _annotation(text: Any, mapped: bool) -> str:
    if text is inspect.Parameter.empty or text is inspect.Signature.empty:
        return ""
    shown = re.sub(r"[\"'\s]", "", str(text))
    if mapped:
        for old, new in MAPPED.items():
            shown = re.sub(rf"\b{old}\b", new, shown)
    return shown


def _parameters(function: Any, drop_first: bool) -> List[inspect.Parameter]:
    found = list(inspect.signature(function).parameters.values())
    return found[1:] if drop_first else found


def _same_default(a: Any, b: Any) -> bool:
    return a is b or (type(a) is type(b) and a == b)


def compare_calls(
    where: str,
    aio: Any,
    blocking: Any,
    used: Set[Any],
    drop_first: bool = False,
    fills: Tuple[str, ...] = (),
    check_return: bool = True,
) -> List[str]:
    """What differs between an async call and its blocking twin (rules 2-4).
    ``drop_first``: both take ``self`` (or ``cls``) first.  ``fills``: the
    async parameters a blocking shorthand fills in (and its own ``self``)."""
    problems: List[str] = []
    if inspect.iscoroutinefunction(blocking) or inspect.isasyncgenfunction(blocking):
        problems.append(f"{where}: the blocking twin is a coroutine function")
    ours = [p for p in _parameters(aio, drop_first) if p.name not in fills]
    theirs = _parameters(blocking, drop_first or bool(fills))
    names = {p.name for p in ours}
    added = [p for p in theirs if p.name not in names]
    for p in added:
        if (where, p.name) in PARAMS:
            used.add((where, p.name))
            continue
        rest = [q for q in theirs if q.kind is not inspect.Parameter.VAR_KEYWORD]
        if p.name == "timeout" and p is rest[-1] and p.default is None and "timeout" not in names:
            continue  # the blocking call's own bound
        problems.append(f"{where}: parameter {p.name!r} has no async twin")
    kept = [p for p in theirs if p.name in names]
    for a, b in zip(ours, kept):
        if (where, a.name) in PARAMS:
            used.add((where, a.name))
            continue
        if a.name != b.name:
            problems.append(f"{where}: parameter {a.name!r} is {b.name!r} here (or out of order)")
            continue
        if a.kind != b.kind:
            problems.append(f"{where}: parameter {a.name!r} is {b.kind.description}, not {a.kind.description}")
        if not _same_default(a.default, b.default):
            problems.append(f"{where}: parameter {a.name!r} defaults to {b.default!r}, not {a.default!r}")
        if _annotation(a.annotation, True) != _annotation(b.annotation, False):
            problems.append(
                f"{where}: parameter {a.name!r} is {_annotation(b.annotation, False)!r}, "
                f"not {_annotation(a.annotation, True)!r}"
            )
    for a in ours[len(kept) :]:
        if (where, a.name) not in PARAMS:
            problems.append(f"{where}: parameter {a.name!r} is missing")
    if check_return:
        wanted = _annotation(inspect.signature(aio).return_annotation, True)
        got = _annotation(inspect.signature(blocking).return_annotation, False)
        if wanted != got:
            if where in RETURNS:
                used.add(where)
            else:
                problems.append(f"{where}: returns {got!r}, not {wanted!r}")
    return problems


def compare_classes(blocking: type, aio: type, used: Set[Any]) -> List[str]:
    """What differs between an async class and its blocking twin (rules 1-5)."""
    owner = aio.__name__
    ours = members(aio, owner)
    theirs = members(blocking, owner)
    problems: List[str] = []
    twinned: Set[str] = set()
    for name, member in sorted(ours.items()):
        if member.key in NO_TWIN:
            used.add(member.key)
            continue
        twin_name = RENAMED.get(name, name)
        twin = theirs.get(twin_name)
        if twin is None:
            problems.append(f"{member.key}: no blocking twin {blocking.__name__}.{twin_name}")
            continue
        twinned.add(twin_name)
        if member.kind != twin.kind:
            problems.append(f"{member.key}: the blocking twin is a {twin.kind}, not a {member.kind}")
            continue
        if member.kind == "value":
            if member.raw is not SET and not isinstance(member.raw, property):
                if not isinstance(twin.raw, type(member.raw)) or twin.raw != member.raw:
                    problems.append(f"{member.key}: the blocking twin is {twin.raw!r}, not {member.raw!r}")
            elif isinstance(member.raw, property) and isinstance(twin.raw, property):
                got = _annotation(inspect.signature(twin.raw.fget).return_annotation, False)
                wanted = _annotation(inspect.signature(member.raw.fget).return_annotation, True)
                if got != wanted:
                    problems.append(f"{member.key}: is {got!r}, not {wanted!r}")
            continue
        problems += compare_calls(member.key, member.function, twin.function, used, member.kind != "staticmethod")
    for name in sorted(theirs):
        key = f"{blocking.__name__}.{name}"
        if name in twinned:
            continue
        if key in SYNC_ONLY:
            used.add(key)
            continue
        problems.append(f"{key}: no async twin, and not in SYNC_ONLY")
    return problems


def everything() -> Tuple[List[str], Set[Any]]:
    used: Set[Any] = set()
    problems: List[str] = []
    for blocking, aio in PAIRS:
        problems += compare_classes(blocking, aio, used)
    for name in codexmini.__all__:
        function = getattr(codexmini, name)
        if inspect.iscoroutinefunction(function):
            twin = getattr(sync, name, None)
            if twin is None:
                problems.append(f"{name}: no blocking twin sync.{name}")
            else:
                problems += compare_calls(name, function, twin, used)
    for key, (stands_for, fills) in SHORTHANDS.items():
        owner, name = key.split(".")
        shorthand = getattr(getattr(sync, owner), name)
        problems += compare_calls(key, stands_for, shorthand, used, fills=fills, check_return=False)
        used.add(key)
    return problems, used


# -- the tests --------------------------------------------------------------------------------


def test_sync_parity_every_async_call_has_a_blocking_twin_with_the_same_parameters():
    problems, _ = everything()
    assert problems == []


def test_sync_parity_no_entry_of_the_tables_is_stale():
    _, used = everything()
    tables = [*NO_TWIN, *PARAMS, *RETURNS, *SYNC_ONLY]
    assert [entry for entry in tables if entry not in used] == []
    assert all(reason.strip() for table in (NO_TWIN, PARAMS, RETURNS, SYNC_ONLY) for reason in table.values())


def test_sync_parity_every_public_async_class_is_paired():
    def is_async(value: Any) -> bool:
        function = value.__func__ if isinstance(value, (classmethod, staticmethod)) else value
        return inspect.iscoroutinefunction(function) or inspect.isasyncgenfunction(function)

    with_coroutines = {
        name
        for name in codexmini.__all__
        if inspect.isclass(getattr(codexmini, name))
        and any(is_async(v) for k in getattr(codexmini, name).__mro__ for v in vars(k).values())
    }
    assert with_coroutines == {"Agent", "AppServerClient", "Thread", "Turn"}  # a new one gets a pair
    paired = {aio.__name__ for _, aio in PAIRS}
    assert with_coroutines <= paired
    # and every blocking class is public in codexmini.sync
    assert all(getattr(sync, blocking.__name__) is blocking for blocking, _ in PAIRS)


def test_sync_client_constructor_is_start_and_connect():
    init = {p.name: p for p in _parameters(sync.Client.__init__, drop_first=True)}
    problems = []
    for aio, renames in ((AppServerClient.start, {}), (AppServerClient.connect, {"target": "connect"})):
        for p in _parameters(aio, drop_first=False):  # bound classmethods: no cls
            if p.name in CONSTRUCTOR_LEFT_OUT:
                continue
            twin = init.get(renames.get(p.name, p.name))
            if twin is None:
                problems.append(f"{aio.__name__}: {p.name} missing")
                continue
            if p.name in renames:  # connect's target: the keyword that says "connect, don't start"
                assert twin.kind is inspect.Parameter.KEYWORD_ONLY and twin.default is None
                continue
            if (p.kind, p.default, _annotation(p.annotation, True)) != (
                twin.kind,
                twin.default,
                _annotation(twin.annotation, False),
            ):
                problems.append(f"{aio.__name__}: {p.name} differs")
    start = {p.name for p in _parameters(AppServerClient.start, False)}
    connect = {p.name for p in _parameters(AppServerClient.connect, False)}
    assert problems == []
    assert set(init) - start - connect - {"connect"} == set(CONSTRUCTOR_ADDS)
    assert set(CONSTRUCTOR_LEFT_OUT) <= start & connect


# -- the comparison catches drift -------------------------------------------------------------


class _Async:
    LIMIT = 3

    def __init__(self) -> None:
        self.state = 1

    async def fetch(self, key: str, *, retries: int = 2) -> Optional["AppServerClient"]: ...

    async def gone(self) -> None: ...

    async def drifted(self, a: int, b: str = "x") -> None: ...

    def listing(self) -> "AsyncIterator[int]": ...  # type: ignore[name-defined] # noqa: F821

    @classmethod
    async def open(cls, where: str) -> "_Async": ...

    async def wait(self) -> None: ...


class _Blocking:
    LIMIT = 4  # another value

    async def fetch(self, key: str, *, retries: int = 2) -> Optional["Client"]: ...  # still a coroutine  # noqa: F821

    def drifted(self, b: str = "y", a: int = 0, extra: bool = False) -> None: ...

    def listing(self) -> "AsyncIterator[int]": ...  # type: ignore[name-defined] # noqa: F821

    def open(self, where: str) -> "_Async": ...  # a method, not a classmethod

    def wait(self, when: Optional[float] = None) -> None: ...  # a bound, but not called timeout

    def more(self) -> None: ...  # no async twin


def test_sync_parity_the_comparison_reports_each_kind_of_drift():
    used: Set[Any] = set()
    problems = compare_classes(_Blocking, _Async, used)
    said = "\n".join(problems)
    for expected in [
        "_Async.LIMIT: the blocking twin is 4, not 3",  # a constant
        "_Async.__init__: no blocking twin",  # nothing built
        "_Async.state: no blocking twin",  # an attribute a method sets
        "_Async.gone: no blocking twin",  # a call left out
        "_Async.fetch: the blocking twin is a coroutine function",
        "_Async.drifted: parameter 'a' is 'b' here (or out of order)",
        "_Async.drifted: parameter 'extra' has no async twin",
        "_Async.listing: returns 'AsyncIterator[int]', not 'Iterator[int]'",
        "_Async.open: the blocking twin is a method, not a classmethod",
        "_Async.wait: parameter 'when' has no async twin",
        "_Blocking.more: no async twin, and not in SYNC_ONLY",
    ]:
        assert expected in said, said
    assert "_Async.fetch: returns" not in said  # AppServerClient maps to Client
    assert used == set()

    def aio(x: int = 1, *, y: str = "a") -> int: ...

    def blocking(x: int = 2, y: str = "a", timeout: Optional[float] = None) -> int: ...

    def typed(x: float = 1, *, y: str = "a") -> int: ...

    def fewer(x: int = 1) -> int: ...

    assert compare_calls("f", aio, blocking, used) == [
        "f: parameter 'x' defaults to 2, not 1",
        "f: parameter 'y' is positional or keyword, not keyword-only",
    ]
    assert compare_calls("f", aio, typed, used) == ["f: parameter 'x' is 'float', not 'int'"]
    assert compare_calls("f", aio, fewer, used) == ["f: parameter 'y' is missing"]


# -- the README's agent section names every knob -----------------------------------------------


def _agent_section() -> str:
    with open(os.path.join(REPO, "README.md"), encoding="utf-8") as fh:
        readme = fh.read()
    start = readme.index("**The agent over a durable log.**")
    end = readme.index("\n**", start + 10)
    return readme[start:end]


def _knobs() -> Iterator[str]:
    yield from (f.name for f in dataclasses.fields(codexmini.AgentConfig))
    yield from (p.name for p in _parameters(_agent.Agent.__init__, True) if p.kind is inspect.Parameter.KEYWORD_ONLY)
    for name, member in members(_agent.Agent, "Agent").items():
        if not name.startswith("_") and member.key not in NO_TWIN:
            yield name
    yield from (p.name for p in _parameters(_agent.Agent.cancel, True))


def test_sync_parity_the_readme_agent_section_names_every_knob():
    section = re.sub(r"^```.*?^```", "", _agent_section(), flags=re.S | re.M)  # the prose and the table
    named = {word for code in re.findall(r"`([^`]+)`", section) for word in re.findall(r"\w+", code)}
    assert sorted(set(_knobs()) - named) == []
    assert "sync.Agent" in section
