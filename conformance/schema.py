"""Schema loading and the one frame validator every source of frames goes through.

Theory of operation
-------------------
``codex app-server generate-json-schema`` prints one bundle file,
``codex_app_server_protocol.schemas.json``, that holds every definition: the
v1 ones (``InitializeParams``, the unions, the JSON-RPC envelope) directly
under ``definitions`` and the v2 ones nested under ``definitions.v2``
(referenced as ``#/definitions/v2/X``).  :class:`SchemaBundle` loads that file
from ``fixtures/schema/<version>/<flavor>/`` (the verbatim copy
``tools/schema_fixtures.py`` keeps) and answers three questions:

* **which schema?**  Each of the four unions (``ClientRequest``,
  ``ServerRequest``, ``ServerNotification``, ``ClientNotification``) is a
  ``oneOf`` whose branches carry ``properties.method.enum == [method]``; the
  bundle indexes them by method, so a frame is checked against its own branch
  and the messages are precise (a failed ``oneOf`` over 150 branches says
  nothing useful).  A response is checked against the ``…Response``
  definition of the method it answers: ``<params definition minus
  "Params">Response``, or :data:`RESPONSE_OVERRIDES` where that does not exist.
* **is it valid?**  :meth:`SchemaBundle.validate` runs jsonschema's Draft 7
  validator.  Validators are built once per schema object and reused (the
  root validator's ``evolve`` keeps the bundle's ``$ref`` resolver), because a
  test run validates thousands of frames.
* **is everything declared?**  The schemas almost never say
  ``additionalProperties: false`` (protocol reference §0.1), so plain
  validation cannot see a field codex sends but does not declare.
  :meth:`SchemaBundle.undeclared` walks the instance beside its schema and
  lists the JSON paths of object keys no applicable schema names.  "Applicable"
  follows ``$ref``, ``allOf``, the ``anyOf``/``oneOf`` branches the instance
  actually validates against, ``properties``, ``patternProperties``,
  ``additionalProperties`` *schemas* and ``items``.  A key that is merely
  *allowed* (``additionalProperties`` absent or ``true``) is still undeclared:
  that is the point of strict mode.  A value whose only schema is free-form
  JSON (``true`` or ``{}``, e.g. ``JSONRPCErrorError.data`` or an MCP
  ``_meta``) is opaque and not descended into.

:class:`FrameValidator` is the stateful per-connection check (SPEC §6).  It is
a frame tap -- ``check(direction, frame)`` with ``"out"`` = client→server and
``"in"`` = server→client -- and remembers request ids per direction, so a
response is routed to the method it answers.  Every frame is also checked
against its JSON-RPC envelope definition (``JSONRPCRequest`` etc.), which is
where the bundle declares the optional request ``trace`` member; the
``ServerNotification`` union itself declares the top-level ``emittedAtMs``
codex puts on every notification (``properties`` beside its ``oneOf``).  A
``"jsonrpc"`` member, a frame of no JSON-RPC shape, an unknown method and a
response to an id nobody asked are problems.  Each :class:`Problem` names
direction, method, id, JSON path and message, and keeps the frame.

:data:`KNOWN_UNDECLARED` is the catalog of fields codex 0.149.1 really sends
but the chosen flavor does not declare (protocol reference §5), checked
against live traffic by ``conformance/test_live_frames.py``.

Cost (CPython 3.11, jsonschema 4.26, warm caches, strict pass included):
about 0.08 ms for an ``item/agentMessage/delta``, 0.5 ms for a ``thread/start``
request and result, 0.8 ms for an ``item/completed`` (its ``ThreadItem``
``oneOf`` must try every branch), 0.4 ms per frame averaged over a real
46-frame turn with an approval -- roughly 150 times a ``json.loads`` of the
same line.  The strict walk is about a third of it, jsonschema the rest.
Loading a bundle takes under 10 ms.  So thousands of frames cost a second or
two per test run.  Reusing validators saves about a quarter (evolving them is
cheap with the ``referencing`` resolver; the ``$ref`` lookups it caches are
what the reuse keeps).
"""

from __future__ import annotations

import functools
import json
import os
import re
from dataclasses import dataclass, field
from typing import (
    Any,
    Collection,
    Dict,
    FrozenSet,
    Iterable,
    Iterator,
    List,
    Mapping,
    Optional,
    Sequence,
    Tuple,
    Union,
)

import jsonschema
from jsonschema.exceptions import best_match

from codexmini import CODEX_VERSION

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
FIXTURES = os.path.join(ROOT, "fixtures", "schema")
BUNDLE_FILE = "codex_app_server_protocol.schemas.json"
FLAVORS = ("stable", "experimental")

CLIENT_REQUEST = "ClientRequest"
SERVER_REQUEST = "ServerRequest"
SERVER_NOTIFICATION = "ServerNotification"
CLIENT_NOTIFICATION = "ClientNotification"
UNIONS = (CLIENT_REQUEST, SERVER_REQUEST, SERVER_NOTIFICATION, CLIENT_NOTIFICATION)
REQUEST_UNIONS = (CLIENT_REQUEST, SERVER_REQUEST)

OUT = "out"  # client → server
IN = "in"  # server → client

#: Request methods whose response definition is not ``<Params minus
#: "Params">Response``.  Found by ``test_schema_every_request_method_has_a_response``,
#: which resolves every request method of both flavors; it also fails on an
#: override the derivation no longer needs.
RESPONSE_OVERRIDES: Dict[str, str] = {
    # No params at all (the branch says ``params: {"type": "null"}``).
    "account/logout": "LogoutAccountResponse",
    "account/rateLimits/read": "GetAccountRateLimitsResponse",
    "account/workspaceMessages/read": "GetWorkspaceMessagesResponse",
    "config/mcpServer/reload": "McpServerRefreshResponse",
    "configRequirements/read": "ConfigRequirementsReadResponse",
    "externalAgentConfig/import/readHistories": "ExternalAgentConfigImportHistoriesReadResponse",
    "memory/reset": "MemoryResetResponse",  # experimental only
    "remoteControl/status/read": "RemoteControlStatusReadResponse",  # experimental only
    "windowsSandbox/readiness": "WindowsSandboxReadinessResponse",
    # Two write methods share one response type.
    "config/value/write": "ConfigWriteResponse",
    "config/batchWrite": "ConfigWriteResponse",
}

#: The JSON-RPC envelope definition of each frame kind.
ENVELOPES = {
    "request": "JSONRPCRequest",
    "notification": "JSONRPCNotification",
    "response": "JSONRPCResponse",
    "error": "JSONRPCError",
}

_MESSAGE_LIMIT = 300
_FRAME_LIMIT = 400
_STRUCTURAL = frozenset(
    {
        "$ref",
        "type",
        "enum",
        "const",
        "properties",
        "patternProperties",
        "additionalProperties",
        "items",
        "additionalItems",
        "allOf",
        "anyOf",
        "oneOf",
        "not",
        "if",
        "required",
    }
)

Schema = Union[Mapping[str, Any], bool]


# ---------------------------------------------------------------------------
# Known undeclared fields


@dataclass(frozen=True)
class KnownField:
    """A field codex sends that the bundle does not declare.

    ``kind`` is the frame kind (``request``, ``notification``, ``response``,
    ``error``), ``method`` the frame's method (for a response: the method it
    answers; ``*`` for any), ``path`` the JSON path with array indices written
    ``[]`` (``$.result.thread.turns[].items``).
    """

    kind: str
    method: str
    path: str
    why: str = field(default="", compare=False)

    def matches(self, kind: str, method: Optional[str], path: str) -> bool:
        return (
            self.kind in ("*", kind)
            and self.method in ("*", method)
            and self.path == _INDEX.sub("[]", path)
        )


_INDEX = re.compile(r"\[\d+\]")

_STABLE_EXPERIMENTAL = "an experimental field, sent even without experimentalApi (protocol reference §5)"

#: Per flavor: what codex 0.149.1 sends that the flavor does not declare.
#: The experimental bundle declares everything the binary sends -- including
#: ``emittedAtMs``, which ``ServerNotification`` declares at the union level
#: (``properties`` beside ``oneOf``) and the reference's harness missed.  The
#: stable bundle leaves out the experimental fields the server sends anyway.
KNOWN_UNDECLARED: Mapping[str, FrozenSet[KnownField]] = {
    "experimental": frozenset(),
    "stable": frozenset(
        [
            *(
                KnownField("response", "thread/start", f"$.result.{name}", _STABLE_EXPERIMENTAL)
                for name in (
                    "activePermissionProfile",
                    "multiAgentMode",
                    "runtimeWorkspaceRoots",
                    "thread.canAcceptDirectInput",
                    "thread.extra",
                    "thread.historyMode",
                )
            ),
            *(
                KnownField("notification", "thread/started", f"$.params.thread.{name}", _STABLE_EXPERIMENTAL)
                for name in ("canAcceptDirectInput", "extra", "historyMode")
            ),
            KnownField(
                "notification",
                "thread/settings/updated",
                "$.params.threadSettings.multiAgentMode",
                _STABLE_EXPERIMENTAL,
            ),
            *(
                KnownField("request", "item/commandExecution/requestApproval", f"$.params.{name}", _STABLE_EXPERIMENTAL)
                for name in ("availableDecisions", "additionalPermissions")
            ),
            # Ours: codexmini initializes with experimentalApi and may steer a
            # turn's collaboration mode.
            KnownField("request", "turn/start", "$.params.collaborationMode", "experimental turn/start param"),
        ]
    ),
}

AllowList = Union[Mapping[str, Collection[KnownField]], Collection[KnownField]]


# ---------------------------------------------------------------------------
# JSON paths


def child_path(path: str, key: Union[str, int]) -> str:
    """``$`` + ``.key`` / ``["odd key"]`` / ``[3]``."""
    if isinstance(key, int):
        return f"{path}[{key}]"
    if re.fullmatch(r"[A-Za-z_][A-Za-z0-9_]*", key):
        return f"{path}.{key}"
    return f"{path}[{json.dumps(key)}]"


def _join(path: str, parts: Iterable[Union[str, int]]) -> str:
    for part in parts:
        path = child_path(path, part)
    return path


def _short(text: str, limit: int = _MESSAGE_LIMIT) -> str:
    return text if len(text) <= limit else f"{text[:limit]}…<{len(text)} chars>"


# ---------------------------------------------------------------------------
# The bundle


class SchemaBundle:
    """One schema bundle (a codex version and flavor), with cached validators."""

    def __init__(self, root: Mapping[str, Any], version: str = "?", flavor: str = "?", path: Optional[str] = None):
        self.root = root
        self.version = version
        self.flavor = flavor
        self.path = path
        self.definitions: Mapping[str, Any] = root["definitions"]
        self.v2: Mapping[str, Any] = self.definitions.get("v2", {})
        self._branches: Dict[str, Dict[str, int]] = {union: self._index(union) for union in UNIONS}
        self._root_validator = jsonschema.Draft7Validator(root)
        self._validators: Dict[int, Any] = {}
        self._pointers: Dict[str, Schema] = {}

    def __repr__(self) -> str:
        return f"SchemaBundle({self.version!r}, {self.flavor!r})"

    @classmethod
    def load(cls, version: str = CODEX_VERSION, flavor: str = "experimental") -> "SchemaBundle":
        """The bundle from ``fixtures/schema/<version>/<flavor>/`` (cached)."""
        return _load(version, flavor)

    @classmethod
    def from_file(cls, path: str, version: str = "?", flavor: str = "?") -> "SchemaBundle":
        with open(path, encoding="utf-8") as fh:
            return cls(json.load(fh), version, flavor, path)

    # -- lookup ------------------------------------------------------------

    def _index(self, union: str) -> Dict[str, int]:
        index = {}
        for i, branch in enumerate(self.definitions[union].get("oneOf", ())):
            for method in branch.get("properties", {}).get("method", {}).get("enum", ()):
                index[method] = i
        return index

    def methods(self, union: str) -> List[str]:
        """Every method of a union, in schema order."""
        return list(self._branches[union])

    def branch_pointer(self, union: str, method: str) -> Optional[str]:
        """``#/definitions/<union>/oneOf/<i>`` for ``method``, or ``None``."""
        i = self._branches[union].get(method)
        return None if i is None else f"#/definitions/{union}/oneOf/{i}"

    def branch(self, union: str, method: str) -> Optional[Mapping[str, Any]]:
        pointer = self.branch_pointer(union, method)
        return None if pointer is None else self.resolve(pointer)  # type: ignore[return-value]

    def definition_pointer(self, name: str) -> str:
        """The pointer of a named definition (v1 first, then v2); ``KeyError``."""
        if name in self.definitions and name != "v2":
            return f"#/definitions/{name}"
        if name in self.v2:
            return f"#/definitions/v2/{name}"
        raise KeyError(f"no definition {name!r} in the {self.flavor} bundle of codex {self.version}")

    def has_definition(self, name: str) -> bool:
        return (name in self.definitions and name != "v2") or name in self.v2

    def params_definition(self, union: str, method: str) -> Optional[str]:
        """The name of a method's params definition: the branch's ``params``
        ``$ref``, or the ``$ref`` inside a nullable ``anyOf`` (``account/usage/read``)."""
        branch = self.branch(union, method)
        if branch is None:
            raise KeyError(f"{method!r} is not a {union} method")
        params = branch.get("properties", {}).get("params") or {}
        for candidate in [params, *params.get("anyOf", ())]:
            ref = candidate.get("$ref") if isinstance(candidate, Mapping) else None
            if ref:
                return ref.rsplit("/", 1)[1]
        return None

    def response_name(self, method: str) -> str:
        """The name of the ``…Response`` definition answering a request method."""
        if method in RESPONSE_OVERRIDES:
            return RESPONSE_OVERRIDES[method]
        for union in REQUEST_UNIONS:
            if method in self._branches[union]:
                params = self.params_definition(union, method)
                if params is None or not params.endswith("Params"):
                    raise KeyError(f"{method!r} has no params definition to derive its response from; add an override")
                return params[: -len("Params")] + "Response"
        raise KeyError(f"{method!r} is not a request method of the {self.flavor} bundle")

    def response_definition(self, method: str) -> str:
        """The pointer of the ``…Response`` definition for a client or server request method."""
        return self.definition_pointer(self.response_name(method))

    # Two synthetic schemas, made once and kept under a pseudo-pointer so the
    # validators cached by schema identity stay valid.

    def result_wrapper(self, method: str) -> str:
        """A pointer (``#result/<method>``) to a schema that checks a whole
        response frame's ``result`` against the method's ``…Response``."""
        pointer = f"#result/{method}"
        if pointer not in self._pointers:
            self._pointers[pointer] = {"properties": {"result": {"$ref": self.response_definition(method)}}}
        return pointer

    def union_properties(self, union: str) -> Optional[str]:
        """A pointer (``#union/<union>``) to the union's own ``properties``
        without its ``oneOf``, or ``None`` if it has none."""
        props = self.definitions[union].get("properties")
        if not props:
            return None
        pointer = f"#union/{union}"
        if pointer not in self._pointers:
            self._pointers[pointer] = {"properties": props}
        return pointer

    def resolve(self, pointer: str) -> Schema:
        """The schema at ``#/definitions/...`` (JSON pointer into the bundle)."""
        found = self._pointers.get(pointer)
        if found is None:
            if not pointer.startswith("#"):
                raise KeyError(f"only local pointers are supported, not {pointer!r}")
            node: Any = self.root
            for part in pointer[1:].split("/")[1:]:
                part = part.replace("~1", "/").replace("~0", "~")
                node = node[int(part)] if isinstance(node, list) else node[part]
            found = self._pointers[pointer] = node
        return found

    # -- validation --------------------------------------------------------

    def _validator(self, schema: Schema) -> Any:
        key = id(schema)
        validator = self._validators.get(key)
        if validator is None:
            # ``evolve`` keeps the root validator's resolver, so the ``$ref``s
            # of any subschema resolve against the whole bundle.
            validator = self._validators[key] = self._root_validator.evolve(schema=schema)
        return validator

    def validate(self, instance: Any, pointer: str, path: str = "$") -> List[str]:
        """Draft 7 errors of ``instance`` against the schema at ``pointer``,
        each prefixed with its JSON path (``path`` names the instance)."""
        return [f"{where}: {message}" for where, message in self.errors(instance, pointer, path)]

    def errors(self, instance: Any, pointer: str, path: str = "$") -> List[Tuple[str, str]]:
        """Like :meth:`validate`, as ``(json_path, message)`` pairs."""
        pairs = []
        for error in self._validator(self.resolve(pointer)).iter_errors(instance):
            where = _join(path, error.absolute_path)
            message = _short(error.message)
            if error.context:
                # A failed anyOf/oneOf: say which branch came closest and why.
                closest = best_match(error.context)
                message += f" (closest branch: {_join(where, closest.path)}: {_short(closest.message)})"
            pairs.append((where, message))
        return pairs

    def is_valid(self, instance: Any, pointer: str) -> bool:
        return bool(self._validator(self.resolve(pointer)).is_valid(instance))

    # -- strict mode ---------------------------------------------------------

    def undeclared(self, instance: Any, pointer: Union[str, Sequence[str]], path: str = "$") -> List[str]:
        """JSON paths of the object keys in ``instance`` that no applicable
        schema declares.  ``pointer`` may be a list: the keys declared by any
        of them count (a frame's branch plus its envelope)."""
        pointers = [pointer] if isinstance(pointer, str) else list(pointer)
        out: List[str] = []
        self._walk([self.resolve(p) for p in pointers], instance, path, out)
        return out

    def _walk(self, schemas: Sequence[Schema], instance: Any, path: str, out: List[str]) -> None:
        if isinstance(instance, dict):
            views = self._expand(schemas, instance)
            for key, value in instance.items():
                subs: List[Schema] = []
                declared = False
                for view in views:
                    props = view.get("properties") or {}
                    if key in props:
                        subs.append(props[key])
                        declared = True
                        continue
                    patterned = [s for pat, s in (view.get("patternProperties") or {}).items() if re.search(pat, key)]
                    if patterned:
                        subs.extend(patterned)
                        declared = True
                        continue
                    extra = view.get("additionalProperties")
                    if isinstance(extra, Mapping):  # a schema for every other key: declared
                        subs.append(extra)
                        declared = True
                if not declared:
                    out.append(child_path(path, key))
                elif isinstance(value, (dict, list)):
                    self._descend(subs, value, child_path(path, key), out)
        elif isinstance(instance, list):
            views = self._expand(schemas, instance)
            for i, item in enumerate(instance):
                if not isinstance(item, (dict, list)):
                    continue
                subs = []
                for view in views:
                    items = view.get("items")
                    if isinstance(items, list):
                        subs.append(items[i] if i < len(items) else view.get("additionalItems", True))
                    elif items is not None:
                        subs.append(items)
                self._descend(subs, item, child_path(path, i), out)

    def _descend(self, subs: Sequence[Schema], value: Any, path: str, out: List[str]) -> None:
        structured = [s for s in subs if not _free_form(s)]
        if structured:  # only free-form JSON declared here: opaque, nothing to report
            self._walk(structured, value, path, out)

    def _expand(self, schemas: Sequence[Schema], instance: Any) -> List[Mapping[str, Any]]:
        """Every schema that applies to ``instance``: follow ``$ref`` and
        ``allOf``; of ``anyOf``/``oneOf`` keep the branches it validates against
        (all of them if none does -- validation reports that)."""
        views: List[Mapping[str, Any]] = []
        seen = set()
        stack = [s for s in schemas if isinstance(s, Mapping)]
        while stack:
            schema = stack.pop()
            if id(schema) in seen:
                continue
            seen.add(id(schema))
            ref = schema.get("$ref")
            if ref is not None:  # Draft 7: siblings of $ref are ignored
                target = self.resolve(ref)
                if isinstance(target, Mapping):
                    stack.append(target)
                continue
            views.append(schema)
            stack.extend(s for s in schema.get("allOf", ()) if isinstance(s, Mapping))
            for keyword in ("anyOf", "oneOf"):
                branches = [s for s in schema.get(keyword, ()) if isinstance(s, Mapping)]
                if branches:
                    chosen = [b for b in branches if self._could_match(b, instance)]
                    stack.extend(chosen or branches)
        return views

    def _could_match(self, branch: Mapping[str, Any], instance: Any) -> bool:
        target = branch
        while "$ref" in target:
            target = self.resolve(target["$ref"])  # type: ignore[assignment]
            if not isinstance(target, Mapping):
                return bool(target)
        # Cheap necessary conditions first: a tagged union's discriminator
        # (``type`` of ThreadItem, ``method`` of the unions) rules most
        # branches out without running a validator.
        if isinstance(instance, dict):
            for key, prop in (target.get("properties") or {}).items():
                enum = prop.get("enum") if isinstance(prop, Mapping) else None
                if enum is not None and key in instance and instance[key] not in enum:
                    return False
            if any(key not in instance for key in target.get("required", ())):
                return False
        elif "properties" in target and target.get("type") == "object":
            return False
        return bool(self._validator(branch).is_valid(instance))


def _free_form(schema: Schema) -> bool:
    """``true`` or a schema with no structural keyword: any JSON value."""
    if isinstance(schema, bool):
        return schema
    return not any(key in schema for key in _STRUCTURAL)


@functools.lru_cache(maxsize=None)
def _load(version: str, flavor: str) -> SchemaBundle:
    if flavor not in FLAVORS:
        raise ValueError(f"flavor must be one of {FLAVORS}, not {flavor!r}")
    path = os.path.join(FIXTURES, version, flavor, BUNDLE_FILE)
    if not os.path.exists(path):
        raise FileNotFoundError(
            f"no schema fixture {path}; generate it with `make schema` "
            f"(python tools/schema_fixtures.py --write --version {version})"
        )
    return SchemaBundle.from_file(path, version, flavor)


# ---------------------------------------------------------------------------
# Frames


@dataclass(frozen=True)
class Problem:
    """One thing wrong with one frame."""

    direction: str  # "out" (client → server) or "in" (server → client)
    kind: str  # request, notification, response, error, or "frame" when it has no JSON-RPC shape
    method: Optional[str]
    id: Any
    path: str
    message: str
    frame: Any = field(default=None, repr=False, compare=False)

    @property
    def headline(self) -> str:
        """Everything but the frame -- what ``frame_problems`` substrings match."""
        arrow = "client→server" if self.direction == OUT else "server→client"
        who = f" {self.method}" if self.method else ""
        rid = "" if self.id is None else f" id={self.id!r}"
        return f"{self.direction} ({arrow}) {self.kind}{who}{rid} at {self.path}: {self.message}"

    def __str__(self) -> str:
        try:
            text = json.dumps(self.frame, ensure_ascii=False, sort_keys=False)
        except (TypeError, ValueError):
            text = repr(self.frame)
        return f"{self.headline}\n    frame: {_short(text, _FRAME_LIMIT)}"


def _allowed_for(allow: AllowList, flavor: str) -> Tuple[KnownField, ...]:
    if isinstance(allow, Mapping):
        return tuple(allow.get(flavor, ()))
    return tuple(allow)


def _key(rid: Any) -> Any:
    try:
        hash(rid)
        return (type(rid).__name__, rid)  # 1 and "1" are different ids
    except TypeError:
        return ("unhashable", repr(rid))


class FrameValidator:
    """Validate the frames of one connection, in order (SPEC §6).

    ``check(direction, frame)`` returns the problems of that frame and adds
    them to :attr:`problems`; :meth:`tap` does the same with the signature of
    a client frame tap.  ``strict`` also reports undeclared fields, except
    those in ``allow_undeclared`` (a collection of :class:`KnownField`, or a
    mapping flavor → collection, of which the bundle's flavor is used).
    """

    def __init__(
        self,
        bundle: Optional[SchemaBundle] = None,
        strict: bool = True,
        allow_undeclared: AllowList = KNOWN_UNDECLARED,
    ) -> None:
        self.bundle = bundle if bundle is not None else SchemaBundle.load()
        self.strict = strict
        self.allowed = _allowed_for(allow_undeclared, self.bundle.flavor)
        self.problems: List[Problem] = []
        self.frames = 0
        #: (direction, kind, method) of every frame checked, for "did we see X?" assertions.
        self.seen: List[Tuple[str, str, Optional[str]]] = []
        self._pending: Dict[Tuple[str, Any], str] = {}  # (direction of the request, id) → method

    def tap(self, direction: str, frame: Any) -> None:
        """The frame-tap signature :class:`~codexmini.client.AppServerClient` calls."""
        self.check(direction, frame)

    def check(self, direction: str, frame: Any) -> List[Problem]:
        if direction not in (OUT, IN):
            raise ValueError(f"direction must be 'out' or 'in', not {direction!r}")
        self.frames += 1
        try:
            found = list(self._check(direction, frame))
        except Exception as exc:  # a validator bug must surface, not vanish in the client's tap guard
            found = [Problem(direction, "frame", None, None, "$", f"validator crashed: {exc!r}", frame)]
        self.problems.extend(found)
        return found

    # -- routing -----------------------------------------------------------

    def _check(self, direction: str, frame: Any) -> Iterator[Problem]:
        if not isinstance(frame, dict):
            self.seen.append((direction, "frame", None))
            yield Problem(direction, "frame", None, None, "$", f"not a JSON object ({type(frame).__name__})", frame)
            return
        rid = frame.get("id")
        method = frame.get("method") if isinstance(frame.get("method"), str) else None
        if "method" in frame:
            kind = "request" if "id" in frame else "notification"
        elif "id" in frame and ("result" in frame) != ("error" in frame):
            kind = "response" if "result" in frame else "error"
        else:
            self.seen.append((direction, "frame", None))
            shape = "not a JSON-RPC frame: needs method, or id with exactly one of result/error"
            yield Problem(direction, "frame", None, rid, "$", shape, frame)
            return
        if kind in ("response", "error"):
            method = self._pending.pop((_opposite(direction), _key(rid)), None)
        self.seen.append((direction, kind, method))

        def problem(path: str, message: str) -> Problem:
            return Problem(direction, kind, method, rid, path, message, frame)

        if "jsonrpc" in frame:
            yield problem("$.jsonrpc", "codex's protocol has no 'jsonrpc' member (SPEC §3); do not send it")

        # Which definitions apply: the JSON-RPC envelope always (it declares
        # the optional request ``trace``), plus the union branch and the
        # union's own properties, or the definition of the answered method.
        pointers = [self.bundle.definition_pointer(ENVELOPES[kind])]
        if kind in ("request", "notification"):
            if method is None:
                yield problem("$.method", "method is not a string")
                return
            union = _UNION[(direction, kind)]
            if kind == "request":
                self._pending[(direction, _key(rid))] = method
            branch = self.bundle.branch_pointer(union, method)
            if branch is None:
                flavor = self.bundle.flavor
                yield problem("$.method", f"unknown method {method!r}: not in the {flavor} schema's {union}")
                return
            pointers += [branch, *self._union_properties(union)]
        elif kind == "response":
            if method is None:
                yield problem("$.id", f"response to unknown request id {rid!r}: {_nobody_asked(direction)}")
                return
            try:
                pointers.append(self.bundle.result_wrapper(method))
            except KeyError as exc:
                yield problem("$.result", f"cannot check the result: {exc.args[0]}")
                return
        elif method is None:  # an error answering nothing
            yield problem("$.id", f"error for unknown request id {rid!r}: {_nobody_asked(direction)}")

        reported = set()
        for pointer in pointers:
            for where, message in self.bundle.errors(frame, pointer):
                if (where, message) not in reported:  # the envelope and the branch both check ``id``
                    reported.add((where, message))
                    yield problem(where, message)
        if self.strict:
            for where in self.bundle.undeclared(frame, pointers):
                if where == "$.jsonrpc":
                    continue  # already reported above
                if any(known.matches(kind, method, where) for known in self.allowed):
                    continue
                yield problem(where, "field not declared by the schema (strict mode)")

    def _union_properties(self, union: str) -> List[str]:
        # ServerNotification declares emittedAtMs in ``properties`` beside its
        # oneOf; checking the branch alone would not see that declaration.
        pointer = self.bundle.union_properties(union)
        return [] if pointer is None else [pointer]


_UNION = {
    (OUT, "request"): CLIENT_REQUEST,
    (IN, "request"): SERVER_REQUEST,
    (OUT, "notification"): CLIENT_NOTIFICATION,
    (IN, "notification"): SERVER_NOTIFICATION,
}


def _nobody_asked(direction: str) -> str:
    return f"{'the client' if direction == IN else 'the server'} sent no request with this id"


def _opposite(direction: str) -> str:
    return IN if direction == OUT else OUT


def validate_transcript(
    frames: Iterable[Tuple[str, Any]],
    bundle: Optional[SchemaBundle] = None,
    strict: bool = True,
    allow_undeclared: AllowList = KNOWN_UNDECLARED,
) -> List[Problem]:
    """Run ``(direction, frame)`` pairs through one :class:`FrameValidator`."""
    validator = FrameValidator(bundle, strict=strict, allow_undeclared=allow_undeclared)
    for direction, frame in frames:
        validator.check(direction, frame)
    return validator.problems


__all__ = [
    "CLIENT_NOTIFICATION",
    "CLIENT_REQUEST",
    "ENVELOPES",
    "FLAVORS",
    "FrameValidator",
    "IN",
    "KNOWN_UNDECLARED",
    "KnownField",
    "OUT",
    "Problem",
    "RESPONSE_OVERRIDES",
    "SERVER_NOTIFICATION",
    "SERVER_REQUEST",
    "SchemaBundle",
    "UNIONS",
    "child_path",
    "validate_transcript",
]
