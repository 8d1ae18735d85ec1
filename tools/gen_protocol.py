#!/usr/bin/env python3
"""Generate ``codexmini/_generated/``: the wire types and one typed method per client request.

Usage::

    python tools/gen_protocol.py                      # write codexmini/_generated/ (make protocol)
    python tools/gen_protocol.py --check              # exit 1 if the checked-in files are stale
    python tools/gen_protocol.py --version 0.171.0    # from another checked-in schema
    python tools/gen_protocol.py --without AgentMessageDeltaNotification.delta --out DIR

The subpackage ``codexmini/_generated/`` is the generator's alone; three files
are written there:

* ``protocol.py`` -- the surface: ``SCHEMA_VERSION``/``_FLAVOR``/``_SHA256``,
  the method tables, :class:`Calls`, and every type name (imported for type
  checkers; at run time loaded on first use through a PEP 562 ``__getattr__``);
* ``protocol_types.py`` -- the types themselves.  Building ~770
  ``TypedDict`` classes costs ~50 ms (CPython 3.11; ``typing`` compiles a
  ``ForwardRef`` per annotation), so the client, which needs only
  :class:`Calls`, does not pay it: ``import codexmini.protocol`` stays ~1 ms;
* ``__init__.py`` -- a docstring saying so.

Users import the hand-written ``codexmini/protocol.py``, which re-exports the
surface (every name typed for the checker, each fetched on first use at run time).

Theory of operation
-------------------
The input is the **stable** bundle of one codex version,
``fixtures/schema/<version>/stable/codex_app_server_protocol.schemas.json``,
read through :class:`conformance.schema.SchemaBundle` (which indexes the four
unions by method and derives a request's ``…Response`` definition).  The roots
are the params and results of every ``ClientRequest``, every
``ServerNotification`` and every ``ServerRequest``; every definition reachable
from them by ``$ref`` becomes one Python type, under its schema name:

* an object (``properties``) → a ``TypedDict``; required keys in a base class
  ``_FooRequired`` and optional ones in ``Foo(_FooRequired, total=False)``
  (``NotRequired`` does not exist on Python 3.9).  Keys that are not Python
  identifiers or are keywords (``HookMetadata``'s ``async``) use the functional
  ``TypedDict("Foo", {...})`` form;
* ``enum`` → ``Literal[...]``; ``anyOf``/``oneOf`` → ``Union[...]``, with a
  ``null`` branch (or ``"type": [..., "null"]``) → ``Optional[...]``;
  ``array`` → ``List[...]``; a map (``additionalProperties`` schema) →
  ``Dict[str, ...]``; free-form JSON (``true``, ``{}``) → ``Any``;
  ``integer``/``number`` → ``int``/``float``;
* an inline object (a tagged-union branch, a nested object) gets its own
  ``TypedDict``, named by its ``title`` (``AgentMessageThreadItem``), or, for
  an untitled branch, by its discriminator value and the union's name
  (``CommandHookMetadata``), or else parent name + key.  A branch's
  discriminator stays a one-value ``Literal`` (``type: Literal["agentMessage"]``)
  so a checker narrows ``item["type"] == "agentMessage"``;
* an object with ``properties`` *and* a ``oneOf`` (``HookMetadata``,
  ``McpServerElicitationRequestParams``: a Rust struct with a flattened enum)
  → a union of one ``TypedDict`` per branch, each holding the common keys too.

The output is deterministic: definitions in name order (an alias of one
later name follows it), each class right after its ``_…Required`` base, tables
and methods in schema order.  It uses
``from __future__ import annotations``, so annotations never need quoting; the
right-hand sides of aliases are evaluated at import, so a name an alias uses
before its definition is written as a string.  The code is emitted already in
``ruff format --line-length 120`` layout (a small right-hand-split printer
below), so the generator needs nothing outside the standard library and the
suite's own ``conformance.schema``.

``--without Definition.field`` removes one key from one generated
``TypedDict`` (a definition or an inline branch, by its generated name): the
module a newer schema that dropped the field would give.  Running mypy over
code that reads the field against that module is static drift detection
(``conformance/test_protocol_module.py`` proves the mechanism).

Exit codes: 0 written / up to date, 1 stale (``--check``), 2 usage error
(unknown version, unknown ``--without`` target).
"""

from __future__ import annotations

import argparse
import hashlib
import json
import keyword
import os
import re
import sys
import textwrap
from dataclasses import dataclass, field
from typing import Any, Dict, Iterable, List, Mapping, Optional, Sequence, Set, Tuple, Union

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
if ROOT not in sys.path:  # run as a script from anywhere
    sys.path.insert(0, ROOT)

from codexmini import CODEX_VERSION  # noqa: E402
from conformance.schema import (  # noqa: E402
    BUNDLE_FILE,
    CLIENT_REQUEST,
    FIXTURES,
    SERVER_NOTIFICATION,
    SERVER_REQUEST,
    SchemaBundle,
)

PACKAGE = os.path.join(ROOT, "codexmini")
FLAVOR = "stable"
REFRESH = "make protocol"
LINE_LENGTH = 120
INDENT = "    "

Schema = Union[Mapping[str, Any], bool]


class GenerateError(Exception):
    """The schema has a shape the generator does not map, or a bad ``--without``."""


# ---------------------------------------------------------------------------
# Type expressions: a tiny tree that prints flat or split like ruff format.


@dataclass(frozen=True)
class Expr:
    """``head`` or ``head[arg, …]``; a leaf naming a generated type has ``ref`` set."""

    head: str
    args: Tuple[Expr, ...] = ()
    ref: Optional[str] = None  # the generated type a leaf names (for forward quoting)

    def flat(self) -> str:
        if not self.args:
            return self.head
        return f"{self.head}[{', '.join(arg.flat() for arg in self.args)}]"

    def quoted(self, later: Set[str]) -> Expr:
        """This expression with every reference to a name in ``later`` as a string."""
        if self.ref is not None and self.ref in later:
            return Expr(json.dumps(self.ref), ref=None)
        if not self.args:
            return self
        return Expr(self.head, tuple(arg.quoted(later) for arg in self.args), self.ref)

    def names(self) -> Iterable[str]:
        if self.ref is not None:
            yield self.ref
        for arg in self.args:
            yield from arg.names()


ANY = Expr("Any")
NONE = Expr("None")


def name_expr(name: str) -> Expr:
    return Expr(name, ref=name)


def literal(values: Sequence[Any]) -> Expr:
    return Expr("Literal", tuple(Expr(json.dumps(v, ensure_ascii=False)) for v in values))


def union(members: Sequence[Expr]) -> Expr:
    """``Union``/``Optional`` of ``members``: flattened, de-duplicated, literals merged."""
    flat: List[Expr] = []
    stack = list(reversed(members))
    while stack:
        member = stack.pop()
        if member.head in ("Union", "Optional"):
            stack.extend(reversed([*member.args, *([NONE] if member.head == "Optional" else [])]))
        else:
            flat.append(member)
    if ANY in flat:
        return ANY
    out: List[Expr] = []
    values: List[Expr] = []  # every Literal's values, merged into one Literal at the first one's place
    for member in flat:
        if member == NONE:
            continue
        if member.head == "Literal":
            if not values:
                out.append(member)
            values.extend(v for v in member.args if v not in values)
        elif member not in out:
            out.append(member)
    out = [Expr("Literal", tuple(values)) if m.head == "Literal" else m for m in out]
    if not out:
        return NONE
    core = out[0] if len(out) == 1 else Expr("Union", tuple(out))
    return Expr("Optional", (core,)) if NONE in flat else core


def split(indent: str, prefix: str, expr: Expr, suffix: str) -> List[str]:
    """``prefix + expr + suffix`` at ``indent``, split at brackets when too long
    (ruff's right-hand split: the bracket's contents on one line if they fit,
    else one per line with a trailing comma)."""
    line = f"{indent}{prefix}{expr.flat()}{suffix}"
    if len(line) <= LINE_LENGTH or not expr.args:
        return [line]
    inner = indent + INDENT
    body = ", ".join(arg.flat() for arg in expr.args)
    if len(inner) + len(body) <= LINE_LENGTH and len(expr.args) > 1:
        lines = [inner + body]
    else:
        lines = []
        for arg in expr.args:
            lines.extend(split(inner, "", arg, ","))
    return [f"{indent}{prefix}{expr.head}[", *lines, f"{indent}]{suffix}"]


# ---------------------------------------------------------------------------
# The model: what the module defines.


@dataclass
class Field:
    key: str
    type: Expr
    required: bool


@dataclass
class Record:
    """One ``TypedDict``."""

    name: str
    fields: List[Field]
    doc: str = ""


@dataclass
class Alias:
    """``name = <expr>``."""

    name: str
    type: Expr
    doc: str = ""


@dataclass
class Method:
    method: str
    python: str
    params: Optional[str]  # the params type; None: no params argument
    params_optional: bool  # the branch allows ``null`` (``account/usage/read``)
    result: str


@dataclass
class Model:
    version: str
    flavor: str
    bundle_path: str
    sha256: str
    types: Dict[str, Union[Record, Alias]] = field(default_factory=dict)
    client_requests: List[Method] = field(default_factory=list)
    server_notifications: List[Tuple[str, str]] = field(default_factory=list)
    server_requests: List[Tuple[str, str, str]] = field(default_factory=list)
    without: List[str] = field(default_factory=list)


def pascal(text: str) -> str:
    """``openai/form`` → ``OpenaiForm``, ``mcpTool`` → ``McpTool``."""
    parts = re.split(r"[^A-Za-z0-9]+", text)
    return "".join(p[:1].upper() + p[1:] for p in parts if p)


def snake(method: str) -> str:
    """``account/rateLimits/read`` → ``account_rate_limits_read``."""
    camel = re.compile(r"(?<=[a-z0-9])(?=[A-Z])|(?<=[A-Z])(?=[A-Z][a-z])")
    words = [camel.sub("_", part).lower() for part in re.split(r"[^A-Za-z0-9]+", method) if part]
    name = "_".join(words)
    return name + "_" if keyword.iskeyword(name) else name


def _doc(schema: Schema) -> str:
    """The first paragraph of a description, whitespace collapsed."""
    if not isinstance(schema, Mapping):
        return ""
    text = str(schema.get("description") or "").strip()
    return " ".join(text.split("\n\n")[0].split())


def _normal(schema: Any) -> Any:
    """A definition without the keys that differ between a v1 and v2 copy."""
    if isinstance(schema, Mapping):
        return {k: v for k, v in schema.items() if k not in ("$schema", "title", "description")}
    return schema


class Builder:
    """Walk the schema from the roots and fill a :class:`Model`."""

    def __init__(self, bundle: SchemaBundle, model: Model) -> None:
        self.bundle = bundle
        self.model = model
        self.pending: List[str] = []
        self.done: Set[str] = set()
        # Every definition name is reserved, so an inline title never shadows one.
        self.reserved: Set[str] = {n for n in bundle.definitions if n != "v2"} | set(bundle.v2)
        self.inline: Dict[str, str] = {}  # generated inline name → its schema, canonical (to reuse identical ones)

    # -- definitions -------------------------------------------------------

    def definition(self, name: str) -> Schema:
        v1 = self.bundle.definitions.get(name) if name != "v2" else None
        v2 = self.bundle.v2.get(name)
        if v1 is not None and v2 is not None and _normal(v1) != _normal(v2):
            raise GenerateError(f"{name} is defined differently in v1 and v2; the generator needs a naming rule")
        found = v2 if v2 is not None else v1
        if found is None:
            raise GenerateError(f"no definition {name!r}")
        return found  # type: ignore[no-any-return]

    def want(self, name: str) -> Expr:
        if name not in self.done:
            self.done.add(name)
            self.pending.append(name)
        return name_expr(name)

    def run(self) -> None:
        while self.pending:
            name = self.pending.pop()
            self.emit_named(name, self.definition(name))

    def add(self, item: Union[Record, Alias]) -> None:
        if item.name in self.model.types:
            raise GenerateError(f"two generated types are named {item.name}")
        self.model.types[item.name] = item

    def emit_named(self, name: str, schema: Schema) -> None:
        """A definition: a TypedDict if it is an object, else an alias."""
        if isinstance(schema, Mapping):
            if "properties" in schema and "oneOf" in schema:
                self.add(Alias(name, self.flattened_union(name, schema), _doc(schema)))
                return
            if self.is_object(schema):
                self.add(Record(name, self.fields(name, schema), _doc(schema)))
                return
        self.add(Alias(name, self.expr(name, schema), _doc(schema)))

    @staticmethod
    def is_object(schema: Mapping[str, Any]) -> bool:
        """A schema that is a record: properties, or an object with no map schema."""
        types = schema.get("type")
        if "properties" in schema:
            return True
        if types == "object" and not any(k in schema for k in ("anyOf", "oneOf", "allOf", "$ref")):
            return schema.get("additionalProperties") is None  # {"type": "object"}: an empty record
        return False

    def fields(self, owner: str, schema: Mapping[str, Any], extra: Sequence[Field] = ()) -> List[Field]:
        required = set(schema.get("required", ()))
        out = list(extra)
        seen = {f.key for f in out}
        for key, sub in sorted((schema.get("properties") or {}).items()):
            if key in seen:
                raise GenerateError(f"{owner}.{key} is declared twice")
            out.append(Field(key, self.expr(_child(owner, key), sub), key in required))
        return out

    def flattened_union(self, name: str, schema: Mapping[str, Any]) -> Expr:
        """Common ``properties`` + a ``oneOf`` of object branches: one TypedDict per branch."""
        common = self.fields(name, schema)
        members = []
        for i, branch in enumerate(schema["oneOf"]):
            if not (isinstance(branch, Mapping) and "properties" in branch):
                raise GenerateError(f"{name}: branch {i} of a properties+oneOf schema is not an object")
            members.append(self.inline_object(name, branch, i, common, schema["oneOf"]))
        return union(members)

    # -- inline objects ----------------------------------------------------

    def inline_name(
        self, parent: str, schema: Mapping[str, Any], index: Optional[int], siblings: Sequence[Schema] = ()
    ) -> str:
        """A branch's ``title``; else its tag or the key only it requires, then
        the union's name (``CommandHookMetadata``, ``TextResourceContent``);
        else the union's name and the branch's index."""
        title = schema.get("title")
        if isinstance(title, str) and re.fullmatch(r"[A-Za-z_][A-Za-z0-9_]*", title):
            return title
        if index is not None:
            tag = _discriminator(schema) or _own_required_key(schema, siblings)
            return f"{pascal(tag)}{parent}" if tag else f"{parent}{index}"
        return parent

    def inline_object(
        self,
        parent: str,
        schema: Mapping[str, Any],
        index: Optional[int] = None,
        common: Sequence[Field] = (),
        siblings: Sequence[Schema] = (),
    ) -> Expr:
        name = self.inline_name(parent, schema, index, siblings)
        key = json.dumps([schema, [(f.key, f.type.flat(), f.required) for f in common]], sort_keys=True)
        if name in self.inline and self.inline[name] == key:
            return name_expr(name)
        if name in self.reserved or name in self.inline:
            base, n = name, 2
            while name in self.reserved or name in self.inline:
                name, n = f"{base}{n}", n + 1
        self.inline[name] = key
        self.add(Record(name, self.fields(name, schema, common), _doc(schema)))
        return name_expr(name)

    # -- schema → type expression ---------------------------------------------

    def expr(self, where: str, schema: Schema) -> Expr:
        if isinstance(schema, bool):
            if not schema:
                raise GenerateError(f"{where}: a `false` schema matches nothing")
            return ANY
        if "$ref" in schema:
            return self.want(schema["$ref"].rsplit("/", 1)[1])
        if "allOf" in schema:
            parts = schema["allOf"]
            if len(parts) != 1:
                raise GenerateError(f"{where}: allOf with {len(parts)} parts is not mapped")
            return self.expr(where, parts[0])
        for keyword_ in ("anyOf", "oneOf"):
            if keyword_ in schema:
                if "properties" in schema:
                    return self.flattened_inline(where, schema)
                branches = schema[keyword_]
                return union([self.branch(where, b, i, branches) for i, b in enumerate(branches)])
        if "enum" in schema:
            values = list(schema["enum"])
            core = literal([v for v in values if v is not None])
            return union([core, NONE]) if None in values else core
        if "const" in schema:
            return literal([schema["const"]])
        types = _types(schema)
        if not types:
            if "properties" in schema:
                return self.inline_object(where, schema)
            if any(k in schema for k in ("items", "additionalProperties")):
                raise GenerateError(f"{where}: untyped structural schema {schema}")
            return ANY  # free-form: no structural keyword
        return union([self.typed(where, schema, t) for t in sorted(types, key=_TYPE_ORDER.index)])

    def flattened_inline(self, where: str, schema: Mapping[str, Any]) -> Expr:
        common = self.fields(where, schema)
        branches = schema["oneOf"]
        members = [self.inline_object(where, b, i, common, branches) for i, b in enumerate(branches)]
        return union(members)

    def branch(self, where: str, schema: Schema, index: int, siblings: Sequence[Schema]) -> Expr:
        if isinstance(schema, Mapping) and "properties" in schema and "$ref" not in schema:
            return self.inline_object(where, schema, index, siblings=siblings)
        return self.expr(where, schema)

    def typed(self, where: str, schema: Mapping[str, Any], json_type: str) -> Expr:
        if json_type in _SCALARS:
            return _SCALARS[json_type]
        if json_type == "array":
            items = schema.get("items", True)
            if isinstance(items, list):
                raise GenerateError(f"{where}: tuple-typed arrays are not mapped")
            return Expr("List", (self.expr(where + "Item", items),))
        # object
        if "properties" in schema:
            return self.inline_object(where, schema)
        extra = schema.get("additionalProperties")
        if isinstance(extra, Mapping):
            return Expr("Dict", (Expr("str"), self.expr(where + "Value", extra)))
        return Expr("Dict", (Expr("str"), ANY))


_SCALARS = {
    "string": Expr("str"),
    "integer": Expr("int"),
    "number": Expr("float"),
    "boolean": Expr("bool"),
    "null": NONE,
}
_TYPE_ORDER = ["object", "array", "string", "integer", "number", "boolean", "null"]


def _child(owner: str, key: str) -> str:
    """The name of an inline object under ``owner[key]``: ``ThreadTokenUsage`` + ``Total``.

    An externally tagged branch (``{"acceptWithExecpolicyAmendment": {...}}``,
    titled ``AcceptWithExecpolicyAmendmentCommandExecutionApprovalDecision``)
    already starts with its key: its payload is the owner's ``Body``."""
    return owner + "Body" if owner.startswith(pascal(key)) else owner + pascal(key)


def _types(schema: Mapping[str, Any]) -> Set[str]:
    found = schema.get("type")
    if found is None:
        return set()
    return {found} if isinstance(found, str) else set(found)


def _discriminator(schema: Mapping[str, Any]) -> Optional[str]:
    """The value of a branch's one-value string ``enum`` property (``type``, ``mode``, ``handlerType``)."""
    for key in ("type", "mode", "handlerType", "kind", "method"):
        prop = (schema.get("properties") or {}).get(key)
        if isinstance(prop, Mapping) and isinstance(prop.get("enum"), list) and len(prop["enum"]) == 1:
            return str(prop["enum"][0])
    for prop in (schema.get("properties") or {}).values():
        if isinstance(prop, Mapping) and isinstance(prop.get("enum"), list) and len(prop["enum"]) == 1:
            return str(prop["enum"][0])
    return None


def _own_required_key(schema: Mapping[str, Any], siblings: Sequence[Schema]) -> Optional[str]:
    """The first key this branch requires and no other branch declares (``text`` vs ``blob``)."""
    others: Set[str] = set()
    for sibling in siblings:
        if sibling is not schema and isinstance(sibling, Mapping):
            others |= set(sibling.get("properties") or ())
    own = sorted(set(schema.get("required", ())) - others)
    return own[0] if own else None


# ---------------------------------------------------------------------------
# Building and rendering


def bundle_path(version: str, flavor: str = FLAVOR) -> str:
    return os.path.join(FIXTURES, version, flavor, BUNDLE_FILE)


def build(version: str = CODEX_VERSION, without: Sequence[str] = (), path: Optional[str] = None) -> Model:
    """The model of the module for ``version``'s stable bundle (or the bundle at ``path``)."""
    path = path or bundle_path(version)
    if not os.path.isfile(path):
        raise GenerateError(f"no schema bundle {path}; check it in with `make schema` for codex {version}")
    with open(path, "rb") as fh:
        raw = fh.read()
    bundle = SchemaBundle(json.loads(raw), version, FLAVOR, path)
    shown = os.path.relpath(path, ROOT) if os.path.abspath(path).startswith(ROOT + os.sep) else path
    model = Model(version, FLAVOR, shown, hashlib.sha256(raw).hexdigest())
    builder = Builder(bundle, model)

    def response(method: str) -> str:
        try:
            name = bundle.response_name(method)
        except KeyError as exc:
            name = None
            why = str(exc.args[0])
        else:
            why = f"its response definition {name} does not exist"
        if name is None or not bundle.has_definition(name):
            raise GenerateError(
                f"{why} (codex {version}); add {method!r} to RESPONSE_OVERRIDES in conformance/schema.py"
            )
        return name

    pythons: Dict[str, str] = {}
    for method in bundle.methods(CLIENT_REQUEST):
        params = bundle.params_definition(CLIENT_REQUEST, method)
        branch = bundle.branch(CLIENT_REQUEST, method) or {}
        params_schema = branch.get("properties", {}).get("params") or {}
        optional = "anyOf" in params_schema or "params" not in branch.get("required", ())
        result = response(method)
        if params is not None:
            builder.want(params)
        builder.want(result)
        python = snake(method)
        if python in pythons:
            raise GenerateError(f"{method} and {pythons[python]} both become Calls.{python}")
        pythons[python] = method
        model.client_requests.append(Method(method, python, params, optional and params is not None, result))
    for method in bundle.methods(SERVER_NOTIFICATION):
        params = bundle.params_definition(SERVER_NOTIFICATION, method)
        if params is None:
            raise GenerateError(f"notification {method} has no params definition")
        builder.want(params)
        model.server_notifications.append((method, params))
    for method in bundle.methods(SERVER_REQUEST):
        params = bundle.params_definition(SERVER_REQUEST, method)
        if params is None:
            raise GenerateError(f"server request {method} has no params definition")
        result = response(method)
        builder.want(params)
        builder.want(result)
        model.server_requests.append((method, params, result))
    builder.run()
    for target in without:
        remove_field(model, target)
    model.without = list(without)
    return model


def remove_field(model: Model, target: str) -> None:
    """Drop ``Definition.field`` from the generated TypedDict of that name."""
    name, _, key = target.partition(".")
    item = model.types.get(name)
    if not key or not isinstance(item, Record):
        raise GenerateError(f"--without {target!r}: no generated TypedDict {name!r} (want Definition.field)")
    kept = [f for f in item.fields if f.key != key]
    if len(kept) == len(item.fields):
        raise GenerateError(f"--without {target!r}: {name} has no key {key!r}")
    item.fields = kept


#: The subpackage the generated modules live in, and the types module's name inside it.
SUBPACKAGE = "_generated"
TYPES_MODULE = "protocol_types"
_TYPING = ("Any", "Dict", "List", "Literal", "Optional", "TypedDict", "Union")
_SURFACE_TYPING = ("TYPE_CHECKING", "Any", "Awaitable", "Callable", "Mapping", "Optional", "Tuple", "cast")
#: What protocol.py defines itself.
_OWN: Tuple[str, ...] = ("CLIENT_REQUESTS", "SERVER_NOTIFICATIONS", "SERVER_REQUESTS", "SCHEMA_FLAVOR")
_OWN += ("SCHEMA_SHA256", "SCHEMA_VERSION", "Calls", "RequestCallable")
_BUILTINS = {"str", "int", "float", "bool", "None"}


def _docstring(indent: str, text: str) -> List[str]:
    """A docstring ruff format leaves alone: no trailing quote or backslash trouble."""
    text = text.replace("\\", "\\\\").replace('"""', '\\"\\"\\"').strip()
    if text.endswith('"'):
        text += " "
    one = f'{indent}"""{text}"""'
    if len(one) <= LINE_LENGTH:
        return [one]
    # Room for both quotes on every line: ruff joins a one-line body with its closing quotes.
    width = LINE_LENGTH - len(indent) - 6
    lines = textwrap.wrap(text, width, break_long_words=False, break_on_hyphens=False)
    return [f'{indent}"""{lines[0]}', *(f"{indent}{line}" for line in lines[1:]), f'{indent}"""']


def _functional(name: str, fields: Sequence[Field], total: bool) -> List[str]:
    opening = f'{name} = TypedDict("{name}", {{'
    closing = "}" + ("" if total else ", total=False") + ")"
    entries = [f"{json.dumps(f.key)}: {_string(f.type.flat())}" for f in fields]
    flat = opening + ", ".join(entries) + closing
    if len(flat) <= LINE_LENGTH:
        return [flat]
    inner = f"{INDENT}{INDENT}"
    head = [f"{name} = TypedDict(", f'{INDENT}"{name}",', f"{INDENT}{{"]
    tail = [f"{INDENT}}},", *([f"{INDENT}total=False,"] if not total else []), ")"]
    return [*head, *(f"{inner}{e}," for e in entries), *tail]


def _string(text: str) -> str:
    """A string literal as ruff format writes it: double quotes unless the text has some."""
    if '"' in text and "'" not in text and "\\" not in text:
        return f"'{text}'"
    return json.dumps(text, ensure_ascii=False)


def _needs_functional(item: Record) -> bool:
    """Keys that cannot be class attributes: not identifiers, keywords, or a
    name the class's own annotations use (``str: str`` would shadow it)."""
    used = {n for f in item.fields for n in f.type.names()} | _BUILTINS | set(_TYPING)
    return any(_bad_attribute(f.key) or f.key in used for f in item.fields)


def _bad_attribute(key: str) -> bool:
    """Not a class-body annotation: not an identifier, a keyword, or ``__x`` (name-mangled)."""
    return not key.isidentifier() or keyword.iskeyword(key) or (key.startswith("__") and not key.endswith("__"))


def _field(f: Field) -> List[str]:
    return split(INDENT, f"{f.key}: ", f.type, "")


def render_dict(item: Record) -> List[str]:
    required = [f for f in item.fields if f.required]
    optional = [f for f in item.fields if not f.required]
    doc = _docstring(INDENT, item.doc) if item.doc else []
    if _needs_functional(item):
        # The functional form's values are evaluated at import: strings.
        if not (required and optional):
            return _functional(item.name, item.fields, total=bool(required) or not item.fields)
        base_r, base_o = f"_{item.name}Required", f"_{item.name}Optional"
        parts = _functional(base_r, required, True) + [""] + _functional(base_o, optional, False)
        head = bracketed("", f"class {item.name}", [base_r, base_o], ":")
        return parts + ["", "", *head, *(doc or [f"{INDENT}pass"])]
    lines: List[str] = []
    if required and optional:
        base = f"_{item.name}Required"
        lines += [f"class {base}(TypedDict):", *(ln for f in required for ln in _field(f))]
        lines += ["", "", *bracketed("", f"class {item.name}", [base, "total=False"], ":")]
        body = optional
    else:
        lines += [f"class {item.name}(TypedDict{'' if required or not item.fields else ', total=False'}):"]
        body = item.fields
    if doc:
        lines += doc
        if body:
            lines.append("")
    lines += [ln for f in body for ln in _field(f)]
    if not doc and not body:
        lines.append(f"{INDENT}pass")
    return lines


def _header(model: Model) -> List[str]:
    lines = [
        f"# Generated by tools/gen_protocol.py from the {model.flavor} schema bundle of codex {model.version}.",
        "# Do not edit: regenerate with",
        f"#     {_command(model)}",
        f"# Bundle: {model.bundle_path}",
        f"# sha256: {model.sha256}",
    ]
    if model.without:
        lines.append(f"# MUTATED for drift checks: without {', '.join(model.without)}")
    return lines


def _check_names(model: Model) -> List[str]:
    names = sorted(model.types)
    clash = set(names) & (set(_OWN) | set(_TYPING) | set(_SURFACE_TYPING) | {TYPES_MODULE})
    clash |= {n for n in names if n.startswith("_")}
    if clash:
        raise GenerateError(f"schema names clash with the module's own names: {sorted(clash)}")
    return names


def render_types(model: Model) -> str:
    """``codexmini/_generated/protocol_types.py``: every wire type."""
    names = _check_names(model)
    used = {"TypedDict"} if any(isinstance(t, Record) for t in model.types.values()) else set()
    body: List[str] = []
    pending = set(names)  # not defined yet, at this point of the module
    for name in _emission_order(model, names):
        item = model.types[name]
        if isinstance(item, Record):
            lines = render_dict(item)
            exprs = [f.type for f in item.fields]
        else:
            # An alias is evaluated at import: a name defined below it (or
            # itself, for a recursive alias) is a string.
            lines = split("", f"{name} = ", item.type.quoted(pending), "")
            lines += _docstring("", item.doc) if item.doc else []
            exprs = [item.type]
        # isort wants one blank line between the imports and a statement, the formatter two before a class.
        body += [""] if not body and not lines[0].startswith("class ") else ["", ""]
        body += lines
        used |= {h for e in exprs for h in _heads(e)} & set(_TYPING)
        pending.discard(name)
    imported = [n for n in _TYPING if n in used]
    out = _header(model) + [
        f'"""The wire types of codex {model.version} ({model.flavor} schema), generated: import them from',
        ":mod:`codexmini.protocol`, which loads this module on first use (building every ``TypedDict``",
        "takes tens of milliseconds; the client, the tables and :class:`~codexmini.protocol.Calls` need none).",
        '"""',
        "",
        "from __future__ import annotations",
        "",
        f"from typing import {', '.join(imported)}",
    ]
    return "\n".join(out + body) + "\n"


def _emission_order(model: Model, names: Sequence[str]) -> List[str]:
    """Name order, except that an alias of a single name defined later
    (``ImageGenerationFailure = UsageLimitExceededImageGenerationFailure``)
    follows its target: ``X = "Y"`` would be a string, not an alias."""
    order: List[str] = []
    waiting: Dict[str, List[str]] = {}
    done: Set[str] = set()

    def emit(name: str) -> None:
        order.append(name)
        done.add(name)
        for follower in waiting.pop(name, []):
            emit(follower)

    for name in names:
        item = model.types[name]
        target = item.type.ref if isinstance(item, Alias) else None
        if target is not None and target not in done and target in model.types:
            waiting.setdefault(target, []).append(name)
        else:
            emit(name)
    if waiting:
        raise GenerateError(f"aliases of each other with no type: {sorted(waiting)}")
    return order


def _heads(expr: Expr) -> Iterable[str]:
    yield expr.head
    for arg in expr.args:
        yield from _heads(arg)


def render_surface(model: Model) -> str:
    """``codexmini/_generated/protocol.py``: the tables, :class:`Calls`, and the types, loaded lazily."""
    names = _check_names(model)
    exported = sorted([*names, *_OWN], key=_all_order)
    out = _header(model) + [
        '"""The codex app-server protocol, typed from its schema: wire types, method tables, typed calls.',
        "",
        f"Generated from the {model.flavor} schema of codex {model.version} (``SCHEMA_VERSION``).  Every",
        "definition the client, server-notification and server-request methods reach is a ``TypedDict``",
        "(or an alias) under its schema name, keyed by the wire's camelCase names; optional keys are",
        "``total=False``, nullable values ``Optional``.  A tagged union (``ThreadItem``, ``UserInput``) is a",
        "``Union`` of one ``TypedDict`` per branch whose tag is a one-value ``Literal``, so",
        '``item["type"] == "agentMessage"`` narrows it.  :class:`Calls` has one typed method per client',
        "request; ``CLIENT_REQUESTS``, ``SERVER_NOTIFICATIONS`` and ``SERVER_REQUESTS`` name each method's",
        "types.",
        "",
        "Import it as :mod:`codexmini.protocol`, which re-exports every name.  Importing this module is",
        f"cheap: the types live in ``codexmini.{SUBPACKAGE}.{TYPES_MODULE}``, imported for type checkers only",
        "and on the first run-time use of a type name (PEP 562 ``__getattr__``).",
        '"""',
        "",
        "from __future__ import annotations",
        "",
        f"from typing import {', '.join(_SURFACE_TYPING)}",
        "",
        "if TYPE_CHECKING:",
        f"{INDENT}from .{TYPES_MODULE} import (",
        *(f"{INDENT * 2}{name}," for name in sorted(names, key=_import_order)),
        f"{INDENT})",
        "",
        f'SCHEMA_VERSION = "{model.version}"',
        f'SCHEMA_FLAVOR = "{model.flavor}"',
        f'SCHEMA_SHA256 = "{model.sha256}"',
        "",
        "__all__ = [",
        *(f'{INDENT}"{name}",' for name in exported),
        "]",
    ]
    out += _tables(model)
    out += _calls(model)
    out += [
        "",
        "",
        "def _load_type(name: str) -> Any:",
        f'    """A wire type, from ``{TYPES_MODULE}``, imported on first use (PEP 562)."""',
        "    if name not in __all__:",
        '        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")',
        f"    from . import {TYPES_MODULE}",
        "",
        f"    value = getattr({TYPES_MODULE}, name)",
        "    globals()[name] = value",
        "    return value",
        "",
        "",
        "# Installed through globals(): a module ``__getattr__`` that type checkers saw would make",
        "# every name of this module look defined, and a type a new schema removed would go unnoticed.",
        'globals()["__getattr__"] = _load_type',
    ]
    return "\n".join(out) + "\n"


def _all_order(name: str) -> Tuple[int, List[Union[int, str]]]:
    """ruff's RUF022 order: SCREAMING_CASE, then CamelCase, then the rest; natural sort within."""
    group = 0 if name.isupper() else 1 if name[:1].isupper() else 2
    return group, [int(part) if part.isdigit() else part for part in re.split(r"(\d+)", name)]


def _import_order(name: str) -> Tuple[int, List[Union[int, str]]]:
    """ruff's isort order of imported names: constants, classes, the rest; case-insensitive, natural."""
    group = 0 if name.isupper() else 1 if name[:1].isupper() else 2
    return group, [int(part) if part.isdigit() else part for part in re.split(r"(\d+)", name.lower())]


def _command(model: Model) -> str:
    if model.without:
        args = " ".join(f"--without {w}" for w in model.without)
        return f"python tools/gen_protocol.py --version {model.version} {args} --out DIR"
    if model.version == CODEX_VERSION:
        return f"{REFRESH}  (python tools/gen_protocol.py)"
    return f"python tools/gen_protocol.py --version {model.version}"


def _table(name: str, annotation: str, doc: str, rows: Sequence[Tuple[str, Sequence[Optional[str]]]]) -> List[str]:
    """A dict display, one row per method; a row's value is a name or a tuple of names."""
    lines = ["", "", f"#: {doc}", f"{name}: {annotation} = {{"]
    for key, names in rows:
        values = ["None" if n is None else json.dumps(n) for n in names]
        prefix = f"{json.dumps(key)}: "
        if len(values) == 1:
            lines.append(f"{INDENT}{prefix}{values[0]},")
        else:
            lines += bracketed(INDENT, prefix, values, ",", explode=True)
    return lines + ["}"]


def _tables(model: Model) -> List[str]:
    out = _table(
        "CLIENT_REQUESTS",
        "Mapping[str, Tuple[Optional[str], str]]",
        "Client request method → (params type name, or None when it takes none; response type name).",
        [(m.method, (m.params, m.result)) for m in model.client_requests],
    )
    out += _table(
        "SERVER_NOTIFICATIONS",
        "Mapping[str, str]",
        "Server notification method → params type name.",
        [(method, (params,)) for method, params in model.server_notifications],
    )
    out += _table(
        "SERVER_REQUESTS",
        "Mapping[str, Tuple[str, str]]",
        "Server request method → (params type name, response type name).",
        [(method, (params, result)) for method, params, result in model.server_requests],
    )
    return out


def bracketed(indent: str, head: str, items: Sequence[str], tail: str, explode: bool = False) -> List[str]:
    """``head(item, …)tail`` on one line, or split like ruff: the items on one
    indented line if they fit (calls, defs, class bases), else one per line with
    a trailing comma (always so for a tuple display: ``explode``)."""
    body = ", ".join(items)
    flat = f"{indent}{head}({body}){tail}"
    if len(flat) <= LINE_LENGTH:
        return [flat]
    inner = indent + INDENT
    if not explode and len(inner) + len(body) <= LINE_LENGTH:
        return [f"{indent}{head}(", inner + body, f"{indent}){tail}"]
    return [f"{indent}{head}(", *(f"{inner}{item}," for item in items), f"{indent}){tail}"]


def _calls(model: Model) -> List[str]:
    out = [
        "",
        "",
        "#: What :class:`Calls` sends through: ``(method, params or None, timeout or None) -> result``.",
        "RequestCallable = Callable[[str, Optional[Mapping[str, Any]], Optional[float]], Awaitable[Any]]",
        "",
        "",
        "class Calls:",
        '    """One typed method per client request: ``await calls.thread_fork(params)``.',
        "",
        "    Each sends its method through the request callable it was made with and casts the result",
        "    to the method's response type (nothing is checked at run time).  ``timeout`` is passed on.",
        '    """',
        "",
        '    __slots__ = ("_request",)',
        "",
        "    def __init__(self, request: RequestCallable) -> None:",
        "        self._request = request",
    ]
    for m in model.client_requests:
        params = ["self"]
        if m.params is not None:
            params.append(f"params: Optional[{m.params}] = None" if m.params_optional else f"params: {m.params}")
        params += ["*", "timeout: Optional[float] = None"]
        sent = "params" if m.params is not None else "None"
        out += ["", *bracketed(INDENT, f"async def {m.python}", params, f" -> {m.result}:")]
        out.append(f'{INDENT * 2}"""``{m.method}``."""')
        call = f'await self._request("{m.method}", {sent}, timeout)'
        line = f'{INDENT * 2}return cast("{m.result}", {call})'
        if len(line) <= LINE_LENGTH:
            out.append(line)
        else:
            out += [f"{INDENT * 2}result = {call}", f'{INDENT * 2}return cast("{m.result}", result)']
    return out


#: The generated files, by path inside the package (``/``-separated).
SURFACE_FILE = f"{SUBPACKAGE}/protocol.py"
TYPES_FILE = f"{SUBPACKAGE}/{TYPES_MODULE}.py"
INIT_FILE = f"{SUBPACKAGE}/__init__.py"

#: The subpackage's ``__init__.py``: the same for every schema.
INIT_SOURCE = '''"""Generated code: every module of this subpackage is written by tools/gen_protocol.py
(``make protocol``) and is never edited by hand.
"""
'''


def generate(version: str = CODEX_VERSION, without: Sequence[str] = (), path: Optional[str] = None) -> Dict[str, str]:
    """``{path inside the package: source}`` of the generated files for ``version`` (optionally with fields removed)."""
    model = build(version, without, path)
    return {INIT_FILE: INIT_SOURCE, SURFACE_FILE: render_surface(model), TYPES_FILE: render_types(model)}


def _path(directory: str, name: str) -> str:
    return os.path.join(directory, *name.split("/"))


def write_module(directory: str, version: str = CODEX_VERSION, without: Sequence[str] = ()) -> List[str]:
    """Write the generated files into ``directory/_generated/`` (``directory``: the package,
    or a copy of it; the modules import each other relatively) and return their paths.
    For drift checks: copy the package, write a mutated subpackage over its own, run mypy."""
    os.makedirs(os.path.join(directory, SUBPACKAGE), exist_ok=True)
    written = []
    for name, source in generate(version, without).items():
        target = _path(directory, name)
        with open(target, "w", encoding="utf-8", newline="\n") as fh:
            fh.write(source)
        written.append(target)
    return written


def stale(version: str = CODEX_VERSION, directory: str = PACKAGE) -> List[str]:
    """The generated files under ``directory`` (the package) that differ from what ``version`` generates."""
    out = []
    for name, source in generate(version).items():
        try:
            with open(_path(directory, name), encoding="utf-8") as fh:
                current = fh.read()
        except FileNotFoundError:
            current = None
        if current != source:
            out.append(name)
    return out


def stale_message(version: str, files: Sequence[str]) -> str:
    command = REFRESH if version == CODEX_VERSION else f"python tools/gen_protocol.py --version {version}"
    listed = ", ".join(f"codexmini/{name}" for name in files)
    return f"{listed}: not what the codex {version} schema generates; refresh with `{command}`"


def main(argv: Optional[Sequence[str]] = None) -> int:
    parser = argparse.ArgumentParser(prog="gen_protocol.py", description="Generate codexmini/_generated/.")
    parser.add_argument("--version", default=CODEX_VERSION, help=f"codex version (default: the pin, {CODEX_VERSION})")
    parser.add_argument("--check", action="store_true", help="write nothing; exit 1 if the checked-in files are stale")
    parser.add_argument("--without", action="append", default=[], metavar="Definition.field", help="drop one key")
    parser.add_argument("--out", metavar="DIR", help="write into DIR/_generated/ (DIR: a package copy)")
    args = parser.parse_args(argv)
    if args.without and (args.check or not args.out):
        parser.error("--without needs --out (and no --check): a mutated module must not replace codexmini's own")
    try:
        if args.check:
            files = stale(args.version, args.out or PACKAGE)
            if files:
                print(stale_message(args.version, files), file=sys.stderr)
                return 1
            return 0
        written = write_module(args.out or PACKAGE, args.version, args.without)
    except GenerateError as exc:
        print(f"gen_protocol: {exc}", file=sys.stderr)
        return 2
    for path in written:
        print(f"wrote {os.path.relpath(path)}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
