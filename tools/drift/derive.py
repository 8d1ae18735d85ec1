"""Deriving codexmini's surface: never listed by hand, read from its evidence.

The surface is mapped onto the OLD bundle from these sources:

* *recorded transcripts* ``fixtures/<pinned>/*.frames.jsonl``: every request
  and notification codexmini sent, every path of their params and every enum
  value in them (role *sends*); every notification of a method
  :data:`codexmini._mapping.NOTIFICATIONS` handles and every response to a
  request codexmini sent, and every server request of a method
  ``permission.SERVER_REQUESTS`` answers: every path and enum value seen (role
  *reads*: ``ItemStarted``/``ItemCompleted`` hand the raw item to callers, so
  what was seen is what a caller may read); the answers codexmini sent to those
  server requests (*sends*).
* *the code's tables, run*: each handler of ``mapping.NOTIFICATIONS`` and the
  step fold (``steps.StepFold``, which applies ``mapping.TOOL_ITEMS``) run on
  params generated from the schema -- one sample per ``ThreadItem`` type for
  item notifications -- wrapped in a recording dict, so the paths they actually
  touch are reads (a variant of which only the discriminator and ``id`` were
  touched is mere dispatch and not counted); ``_rpc.thread_of`` the same way.
  Each method of ``permission.SERVER_REQUESTS`` is answered: ``describe`` and
  ``build_answer`` run on generated params (reads), and every answer
  ``build_answer`` gives for every ``Reply`` decision is mapped through the
  method's ``…Response`` definition (sends, with the values sent).
* *the code, parsed* (``ast``): string literals passed first to ``.request(`` /
  ``.notify(`` in ``codexmini/*.py``, with the keys of a literal params dict
  (sends; ``turn/steer`` and ``turn/interrupt`` are on the surface this way
  even without a recording of them).
* *value tables*: where codexmini sends an enum value known only from the
  transcripts, an upper-case tuple of ``codexmini._permission`` that holds that
  value and most of whose members the enum accepts (``SANDBOX_MODES``,
  ``APPROVAL_POLICIES``) is where the value comes from: its accepted members
  join the values sent there, the rejected ones are printed as notes.  (Values
  the code produced when run, such as answers, are complete already and are not
  extended.)
* the JSON-RPC envelopes (``JSONRPCRequest`` …) of every frame mapped.

Known blind spots: a field that only code outside these tables reads, and that
no recording shows, is not on the surface (the recordings cover what the
scenarios exercised); optional request fields codexmini sends only on some
calls (``optOutNotificationMethods``) are on it only if recorded.
"""

from __future__ import annotations

import ast
import functools
import glob
import json
import os
from typing import Any, Callable, Dict, FrozenSet, Iterable, Iterator, List, Mapping, Optional, Sequence, Set, Tuple

from codexmini import CODEX_VERSION
from codexmini import _mapping as mapping
from codexmini import _permission as permission
from codexmini._rpc import thread_of
from codexmini._stepfold import StepFold

from .bundle import (
    CLIENT_NOTIFICATION,
    CLIENT_REQUEST,
    ENVELOPE,
    ERROR_BODY,
    SERVER_NOTIFICATION,
    SERVER_REQUEST,
    Bundle,
    Node,
    node_at,
    render,
)
from .paths import FRAME_FIXTURES, PACKAGE_DIR, relative
from .probe import ReadLog, Sampler, watch
from .surface import READS, SENDS, UNKNOWN, Mapper, Surface


class _AnyAnswers(Mapping):  # type: ignore[type-arg]
    """A caller's ``Reply.answers`` that has an answer for whatever question is asked."""

    def __getitem__(self, key: Any) -> Any:
        return ["answer"]

    def __iter__(self) -> Iterator[Any]:
        return iter(())

    def __len__(self) -> int:
        return 0


def _quietly(call: Callable[[], Any]) -> Any:
    """Run code on a generated sample; what it read before failing still counts."""
    try:
        return call()
    except Exception:
        return None


class SurfaceBuilder:
    """Derives :class:`Surface` from the transcripts, the code's tables and the code."""

    def __init__(self, bundle: Bundle, version: str = CODEX_VERSION, package: str = PACKAGE_DIR) -> None:
        self.bundle = bundle
        self.version = version
        self.package = package
        self.surface = Surface(bundle)
        self.mapper = Mapper(bundle, self.surface)
        self.sampler = Sampler(bundle)

    def build(self) -> Surface:
        self.transcripts()
        self.notifications()
        self.server_requests()
        self.code_requests()
        self.value_tables()
        return self.surface

    # -- helpers --

    def _variant(self, union: str, method: str) -> Optional[Node]:
        node = self.bundle.defs.get(union) or {}
        return (node.get("variants") or {}).get(f"method={method}")

    def _params_node(self, union: str, method: str) -> Optional[Node]:
        variant = self._variant(union, method)
        if variant is None:
            return None
        return (variant.get("properties") or {}).get("params")

    def _method(self, union: str, method: str, role: str, source: str) -> bool:
        """Record a method (its union branch and discriminator); False if the bundle lacks it."""
        if self._variant(union, method) is None:
            self.surface.note(f"{source}: {method!r} is not a {union} method of this bundle")
            return False
        self.surface.method(union, method, source)
        branch = (f"<method={method}>",)
        self.surface.add(union, (), role, source)
        self.surface.add(union, branch, role, source)
        self.surface.add(union, branch + (".method",), role, source, method)
        return True

    def _frame(self, union: str, frame: Mapping[str, Any], role: str, source: str, **kw: Any) -> None:
        if self._method(union, frame.get("method", ""), role, source):
            self.mapper.map(union, frame, role, source, **kw)

    def response_definition(self, union: str, method: str) -> Optional[str]:
        """``<Params minus "Params">Response``: the answer definition of a request method."""
        params = self._params_node(union, method) or {}
        ref = params.get("ref")
        if isinstance(ref, str) and ref.endswith("Params"):
            name = ref[: -len("Params")] + "Response"
            if name in self.bundle.defs:
                return name
        self.surface.note(f"no …Response definition found for {method} (params {ref or 'none'})")
        return None

    # -- sources --

    def transcripts(self) -> None:
        """The recorded frames: what codexmini sent, and what it read."""
        pattern = os.path.join(FRAME_FIXTURES, self.version, "*.frames.jsonl")
        files = sorted(glob.glob(pattern))
        if not files:
            self.surface.note(f"no recorded transcripts match {relative(pattern)}")
        for path in files:
            source = "recorded:" + os.path.basename(path)[: -len(".frames.jsonl")]
            sent: Dict[Any, str] = {}  # request ids codexmini used → method
            asked: Dict[Any, str] = {}  # request ids codex used → method
            with open(path, encoding="utf-8") as fh:
                for line in fh:
                    if line.strip():
                        record = json.loads(line)
                        self._recorded(record["dir"], record["frame"], source, sent, asked)

    def _recorded(
        self, direction: str, frame: Mapping[str, Any], source: str, sent: Dict[Any, str], asked: Dict[Any, str]
    ) -> None:
        has_id, method = "id" in frame, frame.get("method")
        if direction == "out":
            if method is not None and has_id:
                sent[frame["id"]] = method
                self._frame(CLIENT_REQUEST, frame, SENDS, source)
                self.mapper.map(ENVELOPE["request"], frame, SENDS, source)
            elif method is not None:
                self._frame(CLIENT_NOTIFICATION, frame, SENDS, source)
                self.mapper.map(ENVELOPE["notification"], frame, SENDS, source)
            elif has_id and frame["id"] in asked:
                self._answer(asked[frame["id"]], frame, source)
            return
        if method is not None and has_id:
            asked[frame["id"]] = method
            if method in permission.SERVER_REQUESTS:
                self._frame(SERVER_REQUEST, frame, READS, source)
                self.mapper.map(ENVELOPE["request"], frame, READS, source)
        elif method is not None:
            if method in mapping.NOTIFICATIONS:  # the ignored ones are not read
                self._frame(SERVER_NOTIFICATION, frame, READS, source)
                self.mapper.map(ENVELOPE["notification"], frame, READS, source)
        elif has_id and frame["id"] in sent:
            if "result" in frame:
                self.mapper.map(ENVELOPE["response"], frame, READS, source)
                response = self.response_definition(CLIENT_REQUEST, sent[frame["id"]])
                if response is not None:
                    self.mapper.map(response, frame["result"], READS, source)
            elif "error" in frame:
                self.mapper.map(ENVELOPE["error"], frame, READS, source)

    def _answer(self, method: str, frame: Mapping[str, Any], source: str) -> None:
        if "result" in frame:
            self.mapper.map(ENVELOPE["response"], frame, SENDS, source)
            response = self.response_definition(SERVER_REQUEST, method)
            if response is not None:
                self.mapper.map(response, frame["result"], SENDS, source)
        elif "error" in frame:
            self.mapper.map(ENVELOPE["error"], frame, SENDS, source)

    def notifications(self) -> None:
        """Run each ``mapping.NOTIFICATIONS`` handler and the step fold on generated params."""
        for method in sorted(mapping.NOTIFICATIONS):
            source = f"code:mapping.NOTIFICATIONS[{method}]"
            params = self._params_node(SERVER_NOTIFICATION, method)
            if not self._method(SERVER_NOTIFICATION, method, READS, source) or params is None:
                continue
            for world in self.sampler.worlds(params):
                log = self._run_pipeline(method, world, source)
                self._map_reads(method, world, log)
                item = log.paths.get(("params", "item"))
                if item is not None and isinstance(world, dict):
                    self._item_variants(method, world, params)
                    break  # the item samples below replace the generic one

    def _run_pipeline(self, method: str, params: Any, source: str) -> ReadLog:
        log = ReadLog()
        frame = watch({"method": method, "params": params}, (), log)
        log.source = "code:rpc.thread_of"
        _quietly(lambda: thread_of(frame))
        log.source = source
        event = _quietly(lambda: mapping.to_event(method, frame["params"]))
        log.source = "code:steps.StepFold"
        folder = StepFold(step=1, model="m", new_id=lambda: "id")
        if event is not None:
            _quietly(lambda: folder.feed(event))
        _quietly(lambda: folder.finish(None))
        return log

    def _map_reads(self, method: str, params: Any, log: ReadLog, skip: Optional[Tuple[Any, ...]] = None) -> None:
        frame = {"method": method, "params": params}
        by_source: Dict[str, Set[Tuple[Any, ...]]] = {}
        for path, sources in log.paths.items():
            if skip is not None and path[: len(skip)] == skip and len(path) > len(skip):
                continue
            for source in sources:
                by_source.setdefault(source, set()).add(path)
        for source, paths in sorted(by_source.items()):
            only = _closed(paths, [(), ("method",)])
            self.mapper.map(SERVER_NOTIFICATION, frame, READS, source, values=False, only=only)

    def _item_variants(self, method: str, params_sample: Dict[str, Any], params: Node) -> None:
        """One run per variant of the item a notification carries (``ThreadItem``)."""
        params_def = self.mapper.resolve(params)
        item_node = self.mapper.resolve((params_def.get("properties") or {}).get("item") or {})
        for label, variant in sorted((item_node.get("variants") or {}).items()):
            key, _, value = label.partition("=")
            item_source = f"code:steps.StepFold+mapping.TOOL_ITEMS[{value}]" if value in mapping.TOOL_ITEMS else None
            for item in self.sampler.worlds(variant):
                world = dict(params_sample, item=item)
                log = self._run_pipeline(method, world, f"code:mapping.NOTIFICATIONS[{method}]")
                read = {p[2] for p in log.paths if len(p) > 2 and p[:2] == ("params", "item")}
                if not read - {key, "id"}:
                    break  # only dispatched on: not a use of this variant
                if item_source is not None:
                    for sources in log.paths.values():
                        if "code:steps.StepFold" in sources:
                            sources.discard("code:steps.StepFold")
                            sources.add(item_source)
                self._map_reads(method, world, log)

    def server_requests(self) -> None:
        """Answer each ``permission.SERVER_REQUESTS`` method for every decision; map reads and answers."""
        replies = [permission.Reply(d) for d in permission.DECISIONS]
        replies += [permission.Reply(d, answers=_AnyAnswers(), content={}) for d in permission.DECISIONS]
        for method in sorted(permission.SERVER_REQUESTS):
            source = f"code:permission.SERVER_REQUESTS[{method}]"
            params = self._params_node(SERVER_REQUEST, method)
            if not self._method(SERVER_REQUEST, method, READS, source) or params is None:
                continue
            response = self.response_definition(SERVER_REQUEST, method)
            for world in self.sampler.worlds(params):
                log = ReadLog()
                log.source = source
                answers = _answer_all(method, watch(world, ("params",), log), replies)
                only = log.closed([(), ("method",)])
                frame = {"id": 0, "method": method, "params": world}
                self.mapper.map(SERVER_REQUEST, frame, READS, source, values=False, only=only)
                for answer in answers:
                    if not isinstance(answer, permission.Answer):
                        continue
                    answer_source = f"code:permission.build_answer[{method}]"
                    if answer.error is not None:
                        self.mapper.map(ERROR_BODY, answer.error, SENDS, answer_source)
                    elif response is not None:
                        self.mapper.map(response, _plain(answer.result), SENDS, answer_source)

    def code_requests(self) -> None:
        """``.request("m", {...})`` and ``.notify("m", ...)`` calls in ``codexmini/*.py``."""
        for path in sorted(glob.glob(os.path.join(self.package, "*.py"))):
            with open(path, encoding="utf-8") as fh:
                tree = ast.parse(fh.read(), filename=path)
            for call in ast.walk(tree):
                found = _literal_call(call)
                if found is None:
                    continue
                kind, method, params = found
                source = f"ast:{os.path.basename(path)}:{call.lineno}"  # type: ignore[attr-defined]
                if kind == "request":
                    frame: Dict[str, Any] = {"id": 0, "method": method}
                    if params is not None:
                        frame["params"] = params
                    self._frame(CLIENT_REQUEST, frame, SENDS, source)
                else:
                    frame = {"method": method}
                    if params is not None:
                        frame["params"] = params
                    self._frame(CLIENT_NOTIFICATION, frame, SENDS, source)

    def value_tables(self) -> None:
        """Extend enum values codexmini sends with the ``codexmini._permission`` table they come from."""
        tables = {
            name: value
            for name, value in sorted(vars(permission).items())
            if name.isupper() and isinstance(value, tuple) and value and all(isinstance(v, str) for v in value)
        }
        for definition, paths in sorted(self.surface.entries.items()):
            for path, use in sorted(paths.items()):
                if SENDS not in use.roles or not use.values:
                    continue
                if any(src.startswith("code:") for srcs in use.values.values() for src in srcs):
                    continue  # values the code produced when run: already complete
                node = node_at(self.bundle, definition, path)
                allowed = set((node or {}).get("enum", ()))
                sent = {json.loads(v) for v in use.values}
                for name, table in tables.items():
                    if not sent & set(table):
                        continue
                    accepted = [v for v in table if v in allowed]
                    rejected = [v for v in table if v not in allowed]
                    if len(accepted) <= len(rejected):
                        continue  # mostly foreign to this enum: not the table these values come from
                    for value in accepted:
                        self.surface.add(definition, path, SENDS, f"code:permission.{name}", value)
                    if rejected:
                        self.surface.note(
                            f"permission.{name} has {', '.join(map(repr, rejected))}, which {definition} "
                            f"{render(path)} does not accept in this bundle"
                        )


def _answer_all(method: str, params: Mapping[str, Any], replies: Sequence[Any]) -> List[Any]:
    """``describe`` a server request, then ``build_answer`` it once per reply."""
    _quietly(lambda: permission.describe(method, params))
    return [_quietly(functools.partial(permission.build_answer, method, params, reply)) for reply in replies]


def _closed(paths: Iterable[Tuple[Any, ...]], roots: Iterable[Tuple[Any, ...]]) -> FrozenSet[Tuple[Any, ...]]:
    out = set(roots)
    for path in paths:
        out.update(path[:i] for i in range(len(path) + 1))
    return frozenset(out)


def _plain(value: Any) -> Any:
    """A result built from watched params, as plain JSON."""
    return json.loads(json.dumps(value, default=str))


def _literal_call(call: ast.AST) -> Optional[Tuple[str, str, Any]]:
    """``x.request("m", {"k": ...})`` → ("request", "m", {"k": value-or-UNKNOWN})."""
    if not isinstance(call, ast.Call) or not isinstance(call.func, ast.Attribute):
        return None
    if call.func.attr not in ("request", "notify") or not call.args:
        return None
    first = call.args[0]
    if not isinstance(first, ast.Constant) or not isinstance(first.value, str):
        return None
    params: Any = None
    if len(call.args) > 1 and isinstance(call.args[1], ast.Dict):
        literal = call.args[1]
        if all(isinstance(k, ast.Constant) and isinstance(k.value, str) for k in literal.keys):
            params = {
                k.value: (v.value if isinstance(v, ast.Constant) and isinstance(v.value, str) else UNKNOWN)  # type: ignore[union-attr]
                for k, v in zip(literal.keys, literal.values)
            }
    return call.func.attr, first.value, params


def derive_surface(bundle: Bundle, version: str = CODEX_VERSION) -> Surface:
    """codexmini's surface mapped onto ``bundle``."""
    return SurfaceBuilder(bundle, version).build()
