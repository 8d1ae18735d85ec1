"""Schema bundles and the one frame validator every source of frames goes through.

``codex app-server generate-json-schema --out DIR [--experimental]`` writes
one bundle file, ``DIR/codex_app_server_protocol.schemas.json``, holding every
definition (the v2 ones nested under ``definitions.v2``).  A
:class:`SchemaBundle` is one such file and answers three questions:

* **which schema?**  A request or notification is checked against its own
  branch of its union (``ClientRequest`` …, indexed by method), a response
  against the ``…Response`` definition of the method it answers (by name, or
  :data:`RESPONSE_OVERRIDES`);
* **is it valid?**  An *engine* decides: :class:`StdlibEngine` (the default,
  :mod:`._jsonschema`, so a vendored copy validates too) or
  :class:`JsonschemaEngine` (``jsonschema``, passed in by the caller: the
  package never imports it).  Both agree on accept/reject;
* **is everything declared?**  The schemas almost never say
  ``additionalProperties: false``, so :meth:`SchemaBundle.undeclared` walks
  the instance beside its schema and lists the keys no applicable schema
  names (strict mode).

:class:`FrameValidator` checks the frames of one connection in order: it is a
frame tap (``check(direction, frame)``, ``"out"`` = client→server), remembers
request ids per direction to route responses, checks every frame's JSON-RPC
envelope too, and records each :class:`Problem` (direction, method, id, JSON
path, message, the frame).  ``docs/conformance.md`` has the details.

Everything here is pure except :func:`generate_schema` (and
:func:`bundle_for_binary`, which calls it), which runs the codex binary, and
:meth:`SchemaBundle.from_file`, which reads the bundle.
"""

from __future__ import annotations

import functools
import json
import os
import re
import subprocess
from collections.abc import Collection, Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Callable, ClassVar, Protocol, Union

from ._errors import ConfigError, SchemaError
from ._jsonschema import Schema, Validator, child_path

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
#: which resolves every request method of both flavors of every supported
#: codex; ``test_schema_response_overrides_are_all_needed`` fails on an
#: override that no supported version needs.
RESPONSE_OVERRIDES: Mapping[str, str] = {
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
    # New in 0.171.0, params-less or named apart from their response.
    "rollout/compress": "RolloutCompressResponse",  # experimental only
    "account/gatewayOAuth/cancel": "GatewayOAuthCancelResponse",
    "account/securitySetup/read": "GetAccountSecuritySetupResponse",
    "accountSession/list": "AccountSessionsResponse",  # params AccountSessionsListParams
    # The binary has no ModelProviderDefaultSetResponse type (its strings list
    # ModelProviderConfigWrite{Params,Response} and ModelProviderDefaultSetParams
    # only): the config write's response is the one it shares.  codexmini never
    # sends it; the override only keeps the validator total.
    "modelProvider/default/set": "ModelProviderConfigWriteResponse",
}

#: The JSON-RPC envelope definition of each frame kind.
ENVELOPES: Mapping[str, str] = {
    "request": "JSONRPCRequest",
    "notification": "JSONRPCNotification",
    "response": "JSONRPCResponse",
    "error": "JSONRPCError",
}

_MESSAGE_LIMIT = 300
_FRAME_LIMIT = 400
#: Keywords that constrain or describe structure; a schema with none of them
#: accepts any JSON value (free-form), which the undeclared walk treats as opaque.
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


# ---------------------------------------------------------------------------
# Engines


class Engine(Protocol):
    """What a bundle needs of a JSON Schema validator built over its document."""

    def is_valid(self, instance: Any, schema: Schema) -> bool:
        """Whether ``instance`` is valid against ``schema`` (a node of the document)."""

    def errors(self, instance: Any, schema: Schema, path: str) -> list[tuple[str, str]]:
        """``(json_path, message)`` per reason ``instance`` is invalid; ``path`` names it."""

    def check_schema(self, schema: Schema) -> None:
        """Raise now if this engine could not validate against ``schema``."""


#: Builds an engine over a bundle's root document.
EngineFactory = Callable[[Mapping[str, Any]], Engine]


class StdlibEngine:
    """The standard-library validator (:mod:`._jsonschema`)."""

    name = "stdlib"

    def __init__(self, root: Mapping[str, Any]) -> None:
        self.validator = Validator(root)

    def is_valid(self, instance: Any, schema: Schema) -> bool:
        return self.validator.is_valid(instance, schema)

    def errors(self, instance: Any, schema: Schema, path: str) -> list[tuple[str, str]]:
        return self.validator.errors(instance, schema, path)

    def check_schema(self, schema: Schema) -> None:
        self.validator.check_schema(schema)


class JsonschemaEngine:
    """``jsonschema.Draft7Validator``, given the ``jsonschema`` module itself.

    Validators are built once per schema object and reused (the root
    validator's ``evolve`` keeps the bundle's ``$ref`` resolver), because a
    test run validates thousands of frames.
    """

    name = "jsonschema"

    def __init__(self, root: Mapping[str, Any], jsonschema: Any) -> None:
        self._best_match = jsonschema.exceptions.best_match
        self._root = jsonschema.Draft7Validator(root)
        self.validators: dict[int, Any] = {}  # id(schema) → validator

    def _validator(self, schema: Schema) -> Any:
        validator = self.validators.get(id(schema))
        if validator is None:
            # ``evolve`` keeps the root validator's resolver, so the ``$ref``s
            # of any subschema resolve against the whole bundle.
            validator = self.validators[id(schema)] = self._root.evolve(schema=schema)
        return validator

    def is_valid(self, instance: Any, schema: Schema) -> bool:
        return bool(self._validator(schema).is_valid(instance))

    def errors(self, instance: Any, schema: Schema, path: str) -> list[tuple[str, str]]:
        pairs = []
        for error in self._validator(schema).iter_errors(instance):
            where = _join(path, error.absolute_path)
            message = _short(error.message)
            if error.context:
                # A failed anyOf/oneOf: say which branch came closest and why.
                closest = self._best_match(error.context)
                message += f" (closest branch: {_join(where, closest.path)}: {_short(closest.message)})"
            pairs.append((where, message))
        return pairs

    def check_schema(self, schema: Schema) -> None:
        pass  # jsonschema knows every Draft 7 keyword: nothing to refuse


def jsonschema_engine(jsonschema: Any) -> EngineFactory:
    """An engine factory for :class:`JsonschemaEngine` over the given module
    (``import jsonschema`` is the caller's business, never the package's)."""
    return functools.partial(JsonschemaEngine, jsonschema=jsonschema)


# ---------------------------------------------------------------------------
# Known undeclared fields


@dataclass(frozen=True)
class KnownField:
    """A field codex sends that the bundle does not declare.

    ``kind`` is the frame kind (``request``, ``notification``, ``response``,
    ``error``), ``method`` the frame's method (for a response: the method it
    answers; ``*`` for any), ``path`` the JSON path with array indices written
    ``[]`` (``$.result.thread.turns[].items``); a path ending in ``.*``
    names every key below it (``$.result.config.*``: an open map).
    """

    kind: str
    method: str
    path: str
    why: str = field(default="", compare=False)

    def matches(self, kind: str, method: str | None, path: str) -> bool:
        if not (self.kind in ("*", kind) and self.method in ("*", method)):
            return False
        path = _INDEX.sub("[]", path)
        return self.path == path or (self.path.endswith(".*") and path.startswith(self.path[:-1]))


_INDEX = re.compile(r"\[\d+\]")

AllowList = Union[Mapping[str, Collection[KnownField]], Collection[KnownField]]


# ---------------------------------------------------------------------------
# JSON paths


def _join(path: str, parts: Iterable[str | int]) -> str:
    for part in parts:
        path = child_path(path, part)
    return path


def _short(text: str, limit: int = _MESSAGE_LIMIT) -> str:
    return text if len(text) <= limit else f"{text[:limit]}…<{len(text)} chars>"


# ---------------------------------------------------------------------------
# The bundle


class SchemaBundle:
    """One schema bundle (a codex version and flavor) and its engine."""

    #: The engine a bundle gets when none is named.
    default_engine: ClassVar[EngineFactory] = StdlibEngine

    def __init__(
        self,
        root: Mapping[str, Any],
        version: str = "?",
        flavor: str = "?",
        path: str | None = None,
        engine: EngineFactory | None = None,
    ) -> None:
        self.root = root
        self.version = version
        self.flavor = flavor
        self.path = path
        self.definitions: Mapping[str, Any] = root["definitions"]
        self.v2: Mapping[str, Any] = self.definitions.get("v2", {})
        self._branches: dict[str, dict[str, int]] = {union: self._index(union) for union in UNIONS}
        self.engine: Engine = (engine or type(self).default_engine)(root)
        self._pointers: dict[str, Schema] = {}

    def __repr__(self) -> str:
        return f"SchemaBundle({self.version!r}, {self.flavor!r})"

    @classmethod
    def from_file(
        cls, path: str, version: str = "?", flavor: str = "?", engine: EngineFactory | None = None
    ) -> SchemaBundle:
        with open(path, encoding="utf-8") as fh:
            return cls(json.load(fh), version, flavor, path, engine)

    @classmethod
    def from_directory(
        cls, directory: str, flavor: str = "?", version: str = "?", engine: EngineFactory | None = None
    ) -> SchemaBundle:
        """The bundle ``generate-json-schema --out DIRECTORY`` wrote, with every
        definition checked against the engine now (the stdlib engine refuses a
        keyword it does not support here, not in the middle of a run)."""
        path = os.path.join(directory, BUNDLE_FILE)
        if not os.path.isfile(path):
            raise FileNotFoundError(
                f"no {BUNDLE_FILE} in {directory} (written by codex app-server generate-json-schema)"
            )
        bundle = cls.from_file(path, version, flavor, engine)
        bundle.check_supported()
        return bundle

    def check_supported(self) -> None:
        """Compile every definition with the engine (``SchemaError`` if the
        stdlib engine meets a keyword it does not support)."""
        for pointer in self.definition_pointers():
            self.engine.check_schema(self.resolve(pointer))

    # -- lookup ------------------------------------------------------------

    def _index(self, union: str) -> dict[str, int]:
        index = {}
        for i, branch in enumerate(self.definitions[union].get("oneOf", ())):
            for method in branch.get("properties", {}).get("method", {}).get("enum", ()):
                index[method] = i
        return index

    def methods(self, union: str) -> list[str]:
        """Every method of a union, in schema order."""
        return list(self._branches[union])

    def definition_pointers(self) -> list[str]:
        """The pointer of every definition, v1 then v2."""
        v1 = [f"#/definitions/{name}" for name in self.definitions if name != "v2"]
        return v1 + [f"#/definitions/v2/{name}" for name in self.v2]

    def branch_pointer(self, union: str, method: str) -> str | None:
        """``#/definitions/<union>/oneOf/<i>`` for ``method``, or ``None``."""
        i = self._branches[union].get(method)
        return None if i is None else f"#/definitions/{union}/oneOf/{i}"

    def branch(self, union: str, method: str) -> Mapping[str, Any] | None:
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

    def params_definition(self, union: str, method: str) -> str | None:
        """The name of a method's params definition: the branch's ``params``
        ``$ref``, or the ``$ref`` inside a nullable ``anyOf`` (``account/usage/read``)."""
        branch = self.branch(union, method)
        if branch is None:
            raise KeyError(f"{method!r} is not a {union} method")
        params = branch.get("properties", {}).get("params") or {}
        for candidate in [params, *params.get("anyOf", ())]:
            ref = candidate.get("$ref") if isinstance(candidate, Mapping) else None
            if ref:
                return str(ref).rsplit("/", 1)[1]
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
    # engines' caches (keyed by schema identity) stay valid.

    def result_wrapper(self, method: str) -> str:
        """A pointer (``#result/<method>``) to a schema that checks a whole
        response frame's ``result`` against the method's ``…Response``."""
        pointer = f"#result/{method}"
        if pointer not in self._pointers:
            self._pointers[pointer] = {"properties": {"result": {"$ref": self.response_definition(method)}}}
        return pointer

    def union_properties(self, union: str) -> str | None:
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
        """The schema at ``#/definitions/...`` (JSON pointer into the bundle); ``KeyError``."""
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

    def validate(self, instance: Any, pointer: str, path: str = "$") -> list[str]:
        """Draft 7 errors of ``instance`` against the schema at ``pointer``,
        each prefixed with its JSON path (``path`` names the instance)."""
        return [f"{where}: {message}" for where, message in self.errors(instance, pointer, path)]

    def errors(self, instance: Any, pointer: str, path: str = "$") -> list[tuple[str, str]]:
        """Like :meth:`validate`, as ``(json_path, message)`` pairs."""
        return self.engine.errors(instance, self.resolve(pointer), path)

    def is_valid(self, instance: Any, pointer: str) -> bool:
        return self.engine.is_valid(instance, self.resolve(pointer))

    # -- strict mode ---------------------------------------------------------

    def undeclared(self, instance: Any, pointer: str | Sequence[str], path: str = "$") -> list[str]:
        """JSON paths of the object keys in ``instance`` that no applicable
        schema declares.  ``pointer`` may be a list: the keys declared by any
        of them count (a frame's branch plus its envelope)."""
        pointers = [pointer] if isinstance(pointer, str) else list(pointer)
        out: list[str] = []
        self._walk([self.resolve(p) for p in pointers], instance, path, out)
        return out

    def _walk(self, schemas: Sequence[Schema], instance: Any, path: str, out: list[str]) -> None:
        if isinstance(instance, dict):
            views = self._expand(schemas, instance)
            for key, value in instance.items():
                subs: list[Schema] = []
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

    def _descend(self, subs: Sequence[Schema], value: Any, path: str, out: list[str]) -> None:
        structured = [s for s in subs if not _free_form(s)]
        if structured:  # only free-form JSON declared here: opaque, nothing to report
            self._walk(structured, value, path, out)

    def _expand(self, schemas: Sequence[Schema], instance: Any) -> list[Mapping[str, Any]]:
        """Every schema that applies to ``instance``: follow ``$ref`` and
        ``allOf``; of ``anyOf``/``oneOf`` keep the branches it validates against
        (all of them if none does -- validation reports that)."""
        views: list[Mapping[str, Any]] = []
        seen = set()
        stack = [s for s in schemas if isinstance(s, Mapping)]
        while stack:
            schema = stack.pop()
            if id(schema) in seen:
                continue
            seen.add(id(schema))
            ref = schema.get("$ref")
            if ref is not None:  # Draft 7: siblings of $ref are ignored
                stack.extend(t for t in (self.resolve(ref),) if isinstance(t, Mapping))
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
        target: Schema = branch
        while isinstance(target, Mapping) and "$ref" in target:
            target = self.resolve(target["$ref"])
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
        return self.engine.is_valid(instance, branch)


def _free_form(schema: Schema) -> bool:
    """``true`` or a schema with no structural keyword: any JSON value."""
    if isinstance(schema, bool):
        return schema
    return not any(key in schema for key in _STRUCTURAL)


# ---------------------------------------------------------------------------
# Frames


@dataclass(frozen=True)
class Problem:
    """One thing wrong with one frame."""

    direction: str  # "out" (client → server) or "in" (server → client)
    kind: str  # request, notification, response, error, or "frame" when it has no JSON-RPC shape
    method: str | None
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


def _allowed_for(allow: AllowList, flavor: str) -> tuple[KnownField, ...]:
    if isinstance(allow, Mapping):
        return tuple(allow.get(flavor, ()))
    return tuple(allow)


def _key(rid: Any) -> Any:
    try:
        hash(rid)
        return (type(rid).__name__, rid)  # 1 and "1" are different ids
    except TypeError:
        return ("unhashable", repr(rid))


#: Which union a request or notification belongs to, by direction.
_UNION = {
    (OUT, "request"): CLIENT_REQUEST,
    (IN, "request"): SERVER_REQUEST,
    (OUT, "notification"): CLIENT_NOTIFICATION,
    (IN, "notification"): SERVER_NOTIFICATION,
}


class FrameValidator:
    """Validate the frames of one connection, in order.

    ``check(direction, frame)`` returns the problems of that frame and adds
    them to :attr:`problems`; :meth:`tap` does the same with the signature of
    a client frame tap.  ``strict`` also reports undeclared fields, except
    those in ``allow_undeclared`` (a collection of :class:`KnownField`, or a
    mapping flavor → collection, of which the bundle's flavor is used).
    """

    def __init__(self, bundle: SchemaBundle, strict: bool = True, allow_undeclared: AllowList = ()) -> None:
        self.bundle = bundle
        self.strict = strict
        self.allowed = _allowed_for(allow_undeclared, self.bundle.flavor)
        self.problems: list[Problem] = []
        self.frames = 0
        #: (direction, kind, method) of every frame checked, for "did we see X?" assertions.
        self.seen: list[tuple[str, str, str | None]] = []
        self._pending: dict[tuple[str, Any], str] = {}  # (direction of the request, id) → method

    def tap(self, direction: str, frame: Any) -> None:
        """The frame-tap signature the client calls."""
        self.check(direction, frame)

    def check(self, direction: str, frame: Any) -> list[Problem]:
        if direction not in (OUT, IN):
            raise ValueError(f"direction must be 'out' or 'in', not {direction!r}")
        self.frames += 1
        try:
            found = list(self._check(direction, frame))
        except Exception as exc:
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
            yield problem("$.jsonrpc", "codex's protocol has no 'jsonrpc' member; do not send it")

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

    def _union_properties(self, union: str) -> list[str]:
        # ServerNotification declares emittedAtMs in ``properties`` beside its
        # oneOf; checking the branch alone would not see that declaration.
        pointer = self.bundle.union_properties(union)
        return [] if pointer is None else [pointer]


def _nobody_asked(direction: str) -> str:
    return f"{'the client' if direction == IN else 'the server'} sent no request with this id"


def _opposite(direction: str) -> str:
    return IN if direction == OUT else OUT


def validate_transcript(
    frames: Iterable[tuple[str, Any]],
    bundle: SchemaBundle,
    strict: bool = True,
    allow_undeclared: AllowList = (),
) -> list[Problem]:
    """Run ``(direction, frame)`` pairs through one :class:`FrameValidator`."""
    validator = FrameValidator(bundle, strict=strict, allow_undeclared=allow_undeclared)
    for direction, frame in frames:
        validator.check(direction, frame)
    return validator.problems


# ---------------------------------------------------------------------------
# The schema the binary prints (the only I/O in this module)


class SchemaGenerationFailed(SchemaError):
    """``codex app-server generate-json-schema`` did not produce a bundle."""


def generate_schema(
    binary: str,
    directory: str,
    experimental: bool = True,
    timeout: float = 60.0,
    env: Mapping[str, str] | None = None,
) -> str:
    """Run ``BINARY app-server generate-json-schema --out DIRECTORY
    [--experimental]`` and return the path of the bundle it wrote.

    ``env`` is the child's environment (default: this process's), always with
    ``NO_COLOR=1`` so an error message carries no escape codes.
    """
    command = [binary, "app-server", "generate-json-schema", "--out", directory]
    if experimental:
        command.append("--experimental")
    child_env = dict(os.environ if env is None else env, NO_COLOR="1")
    try:
        done = subprocess.run(
            command, stdin=subprocess.DEVNULL, capture_output=True, timeout=timeout, env=child_env, check=False
        )
    except subprocess.TimeoutExpired:
        raise SchemaGenerationFailed(f"{' '.join(command)} did not finish within {timeout:g} s") from None
    except OSError as exc:
        raise SchemaGenerationFailed(f"cannot run {binary}: {exc}") from exc
    if done.returncode != 0:
        tail = done.stderr.decode("utf-8", "replace").strip()[-500:]
        raise SchemaGenerationFailed(f"{' '.join(command)} exited with code {done.returncode}: {tail}")
    path = os.path.join(directory, BUNDLE_FILE)
    if not os.path.isfile(path):
        raise SchemaGenerationFailed(f"{' '.join(command)} wrote no {BUNDLE_FILE}")
    return path


def bundle_for_binary(
    binary: str,
    directory: str,
    flavor: str = "experimental",
    version: str = "?",
    engine: EngineFactory | None = None,
    timeout: float = 60.0,
    env: Mapping[str, str] | None = None,
) -> SchemaBundle:
    """The bundle ``binary`` prints, generated into ``DIRECTORY/<flavor>/``
    and checked against the engine (:meth:`SchemaBundle.from_directory`)."""
    if flavor not in FLAVORS:
        raise ConfigError(f"flavor must be one of {FLAVORS}, not {flavor!r}")
    out = os.path.join(directory, flavor)
    generate_schema(binary, out, experimental=flavor == "experimental", timeout=timeout, env=env)
    return SchemaBundle.from_directory(out, flavor, version, engine)


__all__ = [
    "BUNDLE_FILE",
    "CLIENT_NOTIFICATION",
    "CLIENT_REQUEST",
    "ENVELOPES",
    "FLAVORS",
    "IN",
    "OUT",
    "REQUEST_UNIONS",
    "RESPONSE_OVERRIDES",
    "SERVER_NOTIFICATION",
    "SERVER_REQUEST",
    "UNIONS",
    "AllowList",
    "Engine",
    "EngineFactory",
    "FrameValidator",
    "JsonschemaEngine",
    "KnownField",
    "Problem",
    "SchemaBundle",
    "SchemaGenerationFailed",
    "StdlibEngine",
    "bundle_for_binary",
    "child_path",
    "generate_schema",
    "jsonschema_engine",
    "validate_transcript",
]
