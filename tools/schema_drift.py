#!/usr/bin/env python3
"""Schema drift: which changes between two codex releases touch what codexmini uses.

Usage::

    python tools/schema_drift.py OLD NEW [--flavor experimental|stable] [--json] [--verbose]
    python tools/schema_drift.py --surface [OLD] [--json]
    make drift TO=0.171.0          # the pinned version against TO

OLD and NEW are each a codex version or a path.  A version with checked-in
fixtures (``fixtures/schema/<version>/``, verbatim output of that binary,
checked by ``conformance/test_schema_fixture.py``) is read from there; any
other version is installed from the npm registry into
``.cache/codex/<version>/`` (``npm install --prefix``, once) and its schema is
generated next to it (``.cache/codex/<version>/schema/<flavor>/``, once).  A
path is a bundle file, a directory holding
``codex_app_server_protocol.schemas.json``, or one holding ``<flavor>/`` with
it.  The flavor is ``experimental`` by default: codexmini initializes with
``experimentalApi: true``.

Theory of operation
-------------------
1. **Canonical form.**  Every definition of a bundle (the v1 ones under
   ``definitions``, the v2 ones under ``definitions.v2``; one namespace, a
   v2 name becomes ``v2/<name>`` only if it collides with a different v1
   definition) is rewritten into a small canonical node: ``$ref`` becomes the
   bare definition name, so a definition that moves between v1 and v2 still
   compares equal; ``type`` becomes a sorted list without ``null`` plus a
   ``nullable`` flag, so ``["string", "null"]`` and ``anyOf [X, null]`` are the
   same thing; ``oneOf``/``anyOf`` branches that are plain string enums merge
   into one ``enum`` value set (codex writes ``CommandExecutionApprovalDecision``
   as a ``oneOf`` of one-value enums and objects); the remaining branches
   become *variants* labelled by their discriminator (``<method=turn/start>``,
   ``<type=commandExecution>``), else by their single required key
   (``<{granular}>``), their ``$ref`` name, their title, their JSON type.
   Descriptions, titles and defaults are kept apart as *docs*.
2. **Per-definition diff.**  Definitions present on both sides are compared
   node by node; every difference is a :class:`Change` with the definition, a
   JSON path inside it (``$.input[]``, ``$.*`` for map values,
   ``$<type=text>.text`` for a variant), a kind and, for enum values, the value.
3. **The surface** (:class:`Surface`) is what codexmini sends and reads,
   mapped onto the OLD bundle as (definition, path, role, values, sources).
   It is derived, never listed by hand:

   * *recorded transcripts* ``fixtures/<pinned>/*.frames.jsonl``: every
     request and notification codexmini sent, every path of their params and
     every enum value in them (role *sends*); every notification of a method
     :data:`codexmini.mapping.NOTIFICATIONS` handles and every response to a
     request codexmini sent, and every server request of a method
     ``permission.REQUESTS`` answers: every path and enum value seen (role
     *reads*: ``ItemStarted``/``ItemCompleted`` hand the raw item to
     callers, so what was seen is what a caller may read); the answers
     codexmini sent to those server requests (*sends*).
   * *the code's tables, run*: each handler of ``mapping.NOTIFICATIONS`` and
     the step fold (``steps.StepFolder``, which applies
     ``mapping.TOOL_ITEMS``) run on params generated from the schema -- one
     sample per ``ThreadItem`` type for item notifications -- wrapped in a
     recording dict, so the paths they actually touch are reads (a variant of
     which only the discriminator and ``id`` were touched is mere dispatch and
     not counted); ``client.thread_of`` the same way.  Each method of
     ``permission.REQUESTS`` is answered: ``describe`` and ``build_answer``
     run on generated params (reads), and every answer ``build_answer``
     gives for every ``Reply`` decision is mapped through the method's
     ``…Response`` definition (sends, with the values sent).
   * *the code, parsed* (``ast``): string literals passed first to
     ``.request(`` / ``.notify(`` in ``codexmini/*.py``, with the keys of a
     literal params dict (sends; ``turn/steer`` and ``turn/interrupt`` are
     on the surface this way even without a recording of them).
   * *value tables*: where codexmini sends an enum value known only from the
     transcripts, an upper-case tuple of ``codexmini.permission`` that holds
     that value and most of whose members the enum accepts
     (``SANDBOX_MODES``, ``APPROVAL_POLICIES``) is where the value comes
     from: its accepted members join the values sent there, the rejected
     ones are printed as notes.  (Values the code produced when run, such
     as answers, are complete already and are not extended.)
   * the JSON-RPC envelopes (``JSONRPCRequest`` …) of every frame mapped.

   Known blind spots: a field that only code outside these tables reads, and
   that no recording shows, is not on the surface (the recordings cover what
   the scenarios exercised); optional request fields codexmini sends only on
   some calls (``optOutNotificationMethods``) are on it only if recorded.
4. **Classification.**  Each change is *breaking*, *additive*,
   *outside the surface* or, with ``--verbose`` only, *docs*:

   breaking -- the change touches the surface and can break codexmini:

   * a method codexmini sends, reads or answers removed (a rename is a
     removal plus an addition; the report names a likely new name);
   * a definition, variant or field on the surface removed, or its ``$ref``
     pointed at a different shape, or its type changed (neither wider nor
     narrower);
   * an enum value on the surface removed (one codexmini sends, or one seen
     in what it reads);
   * a type **narrowed** where codexmini *sends* (``["string", "null"]`` →
     ``"string"``, a JSON type dropped, a plain string becoming an enum, a
     larger minimum or smaller maximum or a narrower integer format, objects
     closed with ``additionalProperties: false``);
   * a type **widened** by a JSON type where codexmini *reads* (``string`` →
     ``string | null``: a value of a type it never saw may arrive);
   * a **new required field**, or a field becoming required, in an object
     codexmini *sends* (request params, answers);
   * a field codexmini *reads* becoming optional.

   additive -- harmless for codexmini as it is: a new optional field, method,
   variant, enum value or definition, a widened type where codexmini sends, a
   narrowed type where it only reads, a ``$ref`` renamed to an identical
   shape; counted only in definitions the surface touches, and not inside a
   union branch it never uses (for a new definition: referenced from a
   touched one).

   outside the surface -- everything else: changes to definitions codexmini
   never touches, and removals or narrowings of fields it does not use.

Exit codes: 0 nothing breaking touches the surface, 1 something does, 2 usage
error, 3 a bundle could not be obtained (npm missing or failing, a codex that
reports another version, a failing generator).
"""

from __future__ import annotations

import argparse
import ast
import copy
import functools
import glob
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
from dataclasses import dataclass, field
from typing import Any, Callable, Dict, FrozenSet, Iterable, Iterator, List, Mapping, Optional, Sequence, Set, Tuple

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
if ROOT not in sys.path:  # run as a script from anywhere
    sys.path.insert(0, ROOT)

from codexmini import CODEX_VERSION, mapping, permission  # noqa: E402
from codexmini.binary import codex_version, native_in_npm_root  # noqa: E402
from codexmini.client import thread_of  # noqa: E402
from codexmini.steps import StepFolder  # noqa: E402

BUNDLE_FILE = "codex_app_server_protocol.schemas.json"
FLAVORS = ("experimental", "stable")
SCHEMA_FIXTURES = os.path.join(ROOT, "fixtures", "schema")
FRAME_FIXTURES = os.path.join(ROOT, "fixtures")
PACKAGE_DIR = os.path.join(ROOT, "codexmini")
CACHE = os.path.join(ROOT, ".cache", "codex")
VERSION_RE = re.compile(r"^\d+\.\d+\.\d+(?:-[0-9A-Za-z.-]+)?$")
NPM_TIMEOUT = 900
GENERATE_TIMEOUT = 120

# The four method unions and the JSON-RPC envelopes of the bundle.
CLIENT_REQUEST = "ClientRequest"
CLIENT_NOTIFICATION = "ClientNotification"
SERVER_REQUEST = "ServerRequest"
SERVER_NOTIFICATION = "ServerNotification"
ENVELOPE = {"request": "JSONRPCRequest", "notification": "JSONRPCNotification", "response": "JSONRPCResponse", "error": "JSONRPCError"}
ERROR_BODY = "JSONRPCErrorError"

SENDS = "sends"
READS = "reads"

BREAKING = "breaking"
ADDITIVE = "additive"
OUTSIDE = "outside"
DOCS = "docs"
VERDICTS = (BREAKING, ADDITIVE, OUTSIDE, DOCS)

# Change kinds.
DEFINITION_REMOVED = "definition-removed"
DEFINITION_ADDED = "definition-added"
METHOD_REMOVED = "method-removed"
METHOD_ADDED = "method-added"
VARIANT_REMOVED = "variant-removed"
VARIANT_ADDED = "variant-added"
FIELD_REMOVED = "field-removed"
REQUIRED_FIELD_ADDED = "required-field-added"
OPTIONAL_FIELD_ADDED = "optional-field-added"
FIELD_NOW_REQUIRED = "field-now-required"
FIELD_NOW_OPTIONAL = "field-now-optional"
ENUM_VALUE_REMOVED = "enum-value-removed"
ENUM_VALUE_ADDED = "enum-value-added"
NULL_REMOVED = "null-removed"
NULL_ADDED = "null-added"
TYPE_NARROWED = "type-narrowed"
TYPE_WIDENED = "type-widened"  # by a JSON type
CONSTRAINT_WIDENED = "constraint-widened"  # an enum, a limit or a closed object relaxed
TYPE_CHANGED = "type-changed"
REF_CHANGED = "ref-changed"
REF_RENAMED = "ref-renamed"
DOCS_CHANGED = "docs-changed"

#: Kinds that take something away: breaking when they touch any use.
_LOSSES = frozenset({DEFINITION_REMOVED, METHOD_REMOVED, VARIANT_REMOVED, FIELD_REMOVED, TYPE_CHANGED, REF_CHANGED})
#: Kinds that only add or relax: additive wherever the surface touches the definition.
_GAINS = frozenset(
    {
        DEFINITION_ADDED,
        METHOD_ADDED,
        VARIANT_ADDED,
        OPTIONAL_FIELD_ADDED,
        REQUIRED_FIELD_ADDED,
        FIELD_NOW_REQUIRED,
        FIELD_NOW_OPTIONAL,
        ENUM_VALUE_ADDED,
        NULL_ADDED,
        TYPE_WIDENED,
        CONSTRAINT_WIDENED,
        REF_RENAMED,
    }
)

Node = Dict[str, Any]  # a canonical schema node (plain JSON)
Path = Tuple[str, ...]  # rendered segments: ".name", "[]", ".*", "<label>"


class DriftError(Exception):
    """A bundle could not be obtained (exit 3)."""


class UsageError(Exception):
    """An argument is neither a version nor a path (exit 2)."""


def render(path: Path) -> str:
    return "$" + "".join(path)


# ---------------------------------------------------------------------------
# Obtaining a bundle


@dataclass(frozen=True)
class Side:
    """One side of the comparison: where its bundle file is and where it came from."""

    label: str
    flavor: str
    path: str
    origin: str

    def to_json(self) -> Dict[str, str]:
        return {"label": self.label, "flavor": self.flavor, "path": _relative(self.path), "origin": self.origin}


def _relative(path: str) -> str:
    full = os.path.abspath(path)
    return os.path.relpath(full, ROOT) if full.startswith(ROOT + os.sep) else full


def _stderr(message: str) -> None:
    print(message, file=sys.stderr)


def locate(arg: str, flavor: str, cache: str = CACHE, log: Callable[[str], None] = _stderr) -> Side:
    """The bundle for a command-line side: a path, or a version (fixtures, else the npm cache)."""
    if os.path.exists(arg):
        candidates = [arg] if os.path.isfile(arg) else [os.path.join(arg, BUNDLE_FILE), os.path.join(arg, flavor, BUNDLE_FILE)]
        for candidate in candidates:
            if os.path.isfile(candidate):
                return Side(arg, flavor, candidate, "path")
        raise UsageError(f"{arg} holds no {BUNDLE_FILE} (nor {flavor}/{BUNDLE_FILE})")
    if not VERSION_RE.match(arg):
        raise UsageError(f"{arg!r} is neither an existing path nor a codex version like {CODEX_VERSION}")
    fixture = os.path.join(SCHEMA_FIXTURES, arg, flavor, BUNDLE_FILE)
    if os.path.isfile(fixture):
        return Side(arg, flavor, fixture, "checked-in fixtures")
    return Side(arg, flavor, ensure_generated(arg, flavor, cache, log), "npm cache")


def ensure_generated(version: str, flavor: str, cache: str = CACHE, log: Callable[[str], None] = _stderr) -> str:
    """``<cache>/<version>/schema/<flavor>/<bundle>``, installing and generating on first use."""
    root = os.path.join(cache, version)
    out = os.path.join(root, "schema", flavor)
    bundle = os.path.join(out, BUNDLE_FILE)
    if os.path.isfile(bundle):
        return bundle
    codex = ensure_installed(version, root, log)
    log(f"generating the {flavor} schema of codex {version} into {_relative(out)}")
    generate(codex, out, flavor, scratch=root)
    return bundle


def ensure_installed(version: str, root: str, log: Callable[[str], None] = _stderr) -> str:
    """The native codex of ``version`` under ``root``, installed from npm if missing."""
    codex = native_in_npm_root(root) if os.path.isdir(root) else None
    if codex is None:
        npm = shutil.which("npm")
        if npm is None:
            raise DriftError(f"npm is not on PATH, so codex {version} cannot be installed; pass a schema directory instead")
        log(f"installing codex {version} from the npm registry into {_relative(root)} (once)")
        os.makedirs(root, exist_ok=True)
        argv = [npm, "install", "--silent", "--no-audit", "--no-fund", "--prefix", root, f"@openai/codex@{version}"]
        try:
            done = subprocess.run(argv, capture_output=True, timeout=NPM_TIMEOUT, check=False)
        except (OSError, subprocess.TimeoutExpired) as exc:
            raise DriftError(f"{' '.join(argv)} failed: {exc}") from None
        if done.returncode != 0:
            tail = done.stderr.decode("utf-8", "replace")[-2000:]
            raise DriftError(f"{' '.join(argv)} exited {done.returncode}: {tail}")
        codex = native_in_npm_root(root)
        if codex is None:
            raise DriftError(f"npm installed @openai/codex@{version} into {root}, but no codex binary is in it")
    found = codex_version(codex)
    if found != version:
        raise DriftError(f"{codex} reports version {found or 'unknown'}, not {version}; remove {root} and retry")
    return codex


def generate(codex: str, out: str, flavor: str, scratch: str) -> None:
    """``codex app-server generate-json-schema`` into ``out``, atomically.

    CODEX_HOME is a throw-away directory under ``scratch`` (not ``/tmp``:
    codex refuses to create helper binaries under a temporary dir there,
    protocol reference §1)."""
    os.makedirs(scratch, exist_ok=True)
    home = tempfile.mkdtemp(prefix=".home-", dir=scratch)
    staging = tempfile.mkdtemp(prefix=".schema-", dir=scratch)
    try:
        argv = [codex, "app-server", "generate-json-schema", "--out", staging]
        if flavor == "experimental":
            argv.append("--experimental")
        env = {**os.environ, "CODEX_HOME": home, "NO_COLOR": "1"}
        try:
            done = subprocess.run(argv, env=env, capture_output=True, timeout=GENERATE_TIMEOUT, check=False)
        except (OSError, subprocess.TimeoutExpired) as exc:
            raise DriftError(f"{' '.join(argv)} failed: {exc}") from None
        if done.returncode != 0 or not os.path.isfile(os.path.join(staging, BUNDLE_FILE)):
            tail = done.stderr.decode("utf-8", "replace")[-2000:]
            raise DriftError(f"{' '.join(argv)} exited {done.returncode} without writing {BUNDLE_FILE}: {tail}")
        os.chmod(staging, 0o755)  # mkdtemp made it private
        os.makedirs(os.path.dirname(out), exist_ok=True)
        shutil.rmtree(out, ignore_errors=True)
        os.replace(staging, out)
    finally:
        shutil.rmtree(home, ignore_errors=True)
        shutil.rmtree(staging, ignore_errors=True)


# ---------------------------------------------------------------------------
# Canonical form

_DOC_KEYS = ("description", "title", "default", "examples", "$comment", "deprecated", "readOnly", "writeOnly")
_LIMIT_KEYS = (
    "format",
    "minimum",
    "maximum",
    "exclusiveMinimum",
    "exclusiveMaximum",
    "minLength",
    "maxLength",
    "pattern",
    "minItems",
    "maxItems",
    "uniqueItems",
    "minProperties",
    "maxProperties",
    "multipleOf",
)
#: Ranges of the integer formats codex's generator writes (schemars names).
_INT_FORMATS = {
    "int8": (-(2**7), 2**7 - 1),
    "int16": (-(2**15), 2**15 - 1),
    "int32": (-(2**31), 2**31 - 1),
    "int64": (-(2**63), 2**63 - 1),
    "uint8": (0, 2**8 - 1),
    "uint16": (0, 2**16 - 1),
    "uint32": (0, 2**32 - 1),
    "uint64": (0, 2**64 - 1),
    "uint": (0, 2**64 - 1),
    "int": (-(2**63), 2**63 - 1),
}


class Bundle:
    """A schema bundle in canonical form: ``defs`` maps definition name → node."""

    def __init__(self, root: Mapping[str, Any], label: str = "?") -> None:
        self.label = label
        definitions = root.get("definitions") or {}
        v2 = definitions.get("v2") or {}
        self._names: Dict[str, str] = {}
        raw: Dict[str, Any] = {}
        for name, schema in definitions.items():
            if name != "v2":
                self._names[f"#/definitions/{name}"] = name
                raw[name] = schema
        for name, schema in v2.items():
            flat = name
            if name in raw and _strip_docs(raw[name]) != _strip_docs(schema):
                flat = f"v2/{name}"  # a different definition of the same name
            self._names[f"#/definitions/v2/{name}"] = flat
            raw.setdefault(flat, schema)
        self.defs: Dict[str, Node] = {name: self.canonical(schema) for name, schema in sorted(raw.items())}

    @classmethod
    def load(cls, path: str, label: str = "?") -> "Bundle":
        with open(path, encoding="utf-8") as fh:
            return cls(json.load(fh), label)

    def ref_name(self, pointer: str) -> str:
        return self._names.get(pointer, pointer)

    # -- canonicalisation ---------------------------------------------------

    def canonical(self, schema: Any) -> Node:
        if schema is True:
            return {}
        if schema is False:
            return {"never": True}
        if not isinstance(schema, Mapping):
            return {"other": {"schema": schema}}
        s = dict(schema)
        node: Node = {}
        docs = {k: s.pop(k) for k in _DOC_KEYS if k in s}
        s.pop("$schema", None)
        s.pop("definitions", None)
        all_of = s.pop("allOf", None)
        if all_of is not None:
            if len(all_of) == 1 and isinstance(all_of[0], Mapping):
                inner = dict(all_of[0])  # `allOf: [{$ref}]` is how a described $ref is written
                for key in _DOC_KEYS:
                    if key in inner:
                        docs.setdefault(key, inner.pop(key))
                for key, value in inner.items():
                    s.setdefault(key, value)
            else:
                node["allOf"] = [self.canonical(x) for x in all_of]
        nullable = False
        if "$ref" in s:
            node["ref"] = self.ref_name(s.pop("$ref"))
        if "type" in s:
            raw_type = s.pop("type")
            types = set(raw_type if isinstance(raw_type, list) else [raw_type])
            nullable = "null" in types
            node["type"] = sorted(types - {"null"})
        values: Optional[List[Any]] = None
        if "const" in s:
            values = [s.pop("const")]
        if "enum" in s:
            values = list(s.pop("enum"))
        if values is not None:
            if None in values:
                nullable = True
                values = [v for v in values if v is not None]
            node["enum"] = _sorted_values(values)
        branches = list(s.pop("anyOf", ())) + list(s.pop("oneOf", ()))
        if "properties" in s:
            node["properties"] = {k: self.canonical(v) for k, v in sorted(s.pop("properties").items())}
        if "required" in s:
            node["required"] = sorted(set(s.pop("required")))
        if "additionalProperties" in s:
            extra = s.pop("additionalProperties")
            if extra is False:
                node["closed"] = True
            elif extra is not True:
                node["additional"] = self.canonical(extra)
        if "patternProperties" in s:
            node["patterns"] = {k: self.canonical(v) for k, v in sorted(s.pop("patternProperties").items())}
        if "items" in s:
            items = s.pop("items")
            if isinstance(items, list):
                node["tuple"] = [self.canonical(x) for x in items]
            else:
                node["items"] = self.canonical(items)
        limits = {k: s.pop(k) for k in _LIMIT_KEYS if k in s}
        if limits:
            node["limits"] = limits
        if s:
            node["other"] = {k: s[k] for k in sorted(s)}
        if branches:
            nullable = self._branches(node, [self.canonical(b) for b in branches]) or nullable
        if nullable:
            node["nullable"] = True
        if docs:
            node["docs"] = docs
        return node

    def _branches(self, node: Node, branches: List[Node]) -> bool:
        """Fold ``anyOf``/``oneOf`` branches into ``node``; True if one allows null."""
        nullable = False
        values: List[Any] = []
        value_types: Set[str] = set()
        rest: List[Node] = []
        for b in branches:
            if set(b) - {"docs"} == {"type", "nullable"} and not b["type"]:
                nullable = True
            elif "enum" in b and set(b) - {"docs", "type", "nullable"} == {"enum"}:
                values += b["enum"]
                value_types.update(b.get("type", ()))
                nullable = nullable or bool(b.get("nullable"))
            else:
                if b.get("nullable"):
                    nullable = True
                    b = {k: v for k, v in b.items() if k != "nullable"}
                rest.append(b)
        if values:
            node["enum"] = _sorted_values(list(node.get("enum", ())) + values)
            if not rest and "type" not in node:
                node["type"] = sorted(value_types)
        single = len(rest) == 1 and not values and not (set(rest[0]) - {"docs"}) & set(node)
        if single and not _discriminated(rest[0]):
            inner = rest[0]
            for key, value in inner.items():
                if key == "docs":
                    node.setdefault("docs", {}).update({k: v for k, v in value.items() if k not in node.get("docs", {})})
                else:
                    node[key] = value
        elif rest:
            node["variants"] = _label_variants(rest)
            if "type" not in node and not values and all(b.get("type") == ["object"] for b in rest):
                node["type"] = ["object"]  # what the branches force anyway; keeps `type: object` beside a oneOf from being drift
        return nullable


def _discriminated(node: Node) -> bool:
    """An object with a one-value property: a union branch even when it is alone
    (``ClientNotification`` has one method; a second must not move its paths)."""
    return any(_const(p) is not _NOTHING for p in (node.get("properties") or {}).values())


def _strip_docs(schema: Any) -> Any:
    """A raw schema without its docs keywords (property *names* are kept)."""
    if isinstance(schema, list):
        return [_strip_docs(v) for v in schema]
    if not isinstance(schema, Mapping):
        return schema
    out = {}
    for key, value in schema.items():
        if key in _DOC_KEYS or key == "$schema":
            continue
        if key in ("properties", "patternProperties", "definitions") and isinstance(value, Mapping):
            out[key] = {name: _strip_docs(sub) for name, sub in value.items()}
        else:
            out[key] = _strip_docs(value)
    return out


def _shape(node: Any) -> Any:
    """A canonical node without its docs: what the wire sees."""
    if isinstance(node, dict):
        return {k: _shape(v) for k, v in node.items() if k != "docs"}
    if isinstance(node, list):
        return [_shape(v) for v in node]
    return node


def _sorted_values(values: Iterable[Any]) -> List[Any]:
    unique = {json.dumps(v, sort_keys=True): v for v in values}
    return [unique[k] for k in sorted(unique)]


def _const(node: Node) -> Any:
    """The single value of a one-value enum node, else a sentinel."""
    values = node.get("enum")
    if values is not None and len(values) == 1 and not node.get("nullable") and "variants" not in node:
        return values[0]
    return _NOTHING


_NOTHING = object()


def _label_variants(branches: List[Node]) -> Dict[str, Node]:
    """Stable labels for union branches (see the module docstring)."""
    common: Optional[Set[str]] = None
    for b in branches:
        consts = {k for k, p in b.get("properties", {}).items() if _const(p) is not _NOTHING}
        common = consts if common is None else common & consts
    for key in sorted(common or (), key=lambda k: (k not in ("type", "method"), k)):
        values = [b["properties"][key]["enum"][0] for b in branches]
        if len({json.dumps(v) for v in values}) == len(values):
            return {f"{key}={v}": b for v, b in zip(values, branches)}
    labels: Dict[str, Node] = {}
    for i, b in enumerate(branches):
        label = _own_label(b, branches)
        if label is None or label in labels:
            label = f"#{i}"
        labels[label] = b
    return labels


def _own_label(b: Node, branches: List[Node]) -> Optional[str]:
    required = b.get("required", [])
    if len(required) == 1:
        key = required[0]
        if sum(1 for other in branches if key in other.get("properties", {})) == 1:
            return "{" + key + "}"
    if "ref" in b:
        return b["ref"]
    title = b.get("docs", {}).get("title")
    if isinstance(title, str):
        return title
    if b.get("type"):
        return "|".join(b["type"])
    return None


# ---------------------------------------------------------------------------
# Per-definition diff


@dataclass
class Change:
    definition: str
    path: Path
    kind: str
    detail: str
    value: Any = None
    verdict: str = ""
    why: str = ""
    sources: List[str] = field(default_factory=list)

    @property
    def where(self) -> str:
        return render(self.path)

    def to_json(self) -> Dict[str, Any]:
        out: Dict[str, Any] = {
            "verdict": self.verdict,
            "definition": self.definition,
            "path": self.where,
            "kind": self.kind,
            "detail": self.detail,
        }
        if self.value is not None:
            out["value"] = self.value
        if self.why:
            out["why"] = self.why
        if self.sources:
            out["sources"] = self.sources
        return out


def _short(value: Any, limit: int = 80) -> str:
    text = json.dumps(value, sort_keys=True, ensure_ascii=False)
    return text if len(text) <= limit else text[: limit - 1] + "…"


class Differ:
    """Compares two canonical bundles definition by definition."""

    def __init__(self, old: Bundle, new: Bundle) -> None:
        self.old = old
        self.new = new
        self.changes: List[Change] = []

    def run(self) -> List[Change]:
        old, new = self.old.defs, self.new.defs
        for name in sorted(set(old) | set(new)):
            if name not in new:
                self._add(name, (), DEFINITION_REMOVED, "definition removed")
            elif name not in old:
                self._add(name, (), DEFINITION_ADDED, "new definition")
            else:
                self.node(name, (), old[name], new[name])
        return self.changes

    def _add(self, definition: str, path: Path, kind: str, detail: str, value: Any = None) -> None:
        self.changes.append(Change(definition, path, kind, detail, value))

    def same_shape(self, a: Node, b: Node) -> bool:
        return _shape(a) == _shape(b)

    def node(self, d: str, path: Path, a: Node, b: Node) -> None:
        if a.get("docs") != b.get("docs"):
            self._add(d, path, DOCS_CHANGED, _docs_detail(a.get("docs") or {}, b.get("docs") or {}))
        if a.get("ref") != b.get("ref"):
            self._ref(d, path, a, b)
        if a.get("nullable") != b.get("nullable"):
            if b.get("nullable"):
                self._add(d, path, NULL_ADDED, "now nullable")
            else:
                self._add(d, path, NULL_REMOVED, "no longer nullable")
        self._types(d, path, a.get("type"), b.get("type"))
        self._enum(d, path, a.get("enum"), b.get("enum"))
        self._limits(d, path, a.get("limits") or {}, b.get("limits") or {})
        if a.get("closed") != b.get("closed"):
            if b.get("closed"):
                self._add(d, path, TYPE_NARROWED, "no longer accepts undeclared fields (additionalProperties: false)")
            else:
                self._add(d, path, CONSTRAINT_WIDENED, "accepts undeclared fields")
        if a.get("never") != b.get("never"):
            self._add(d, path, TYPE_NARROWED if b.get("never") else TYPE_WIDENED, "now false" if b.get("never") else "was false")
        self._properties(d, path, a, b)
        self._child(d, path + (".*",), a.get("additional"), b.get("additional"), "map values")
        self._child(d, path + ("[]",), a.get("items"), b.get("items"), "array items")
        for key in ("patterns", "tuple", "allOf", "other"):
            if _shape(a.get(key)) != _shape(b.get(key)):
                self._add(d, path, TYPE_CHANGED, f"{key} changed: {_short(a.get(key))} → {_short(b.get(key))}")
        self._variants(d, path, a.get("variants") or {}, b.get("variants") or {})

    def _ref(self, d: str, path: Path, a: Node, b: Node) -> None:
        ra, rb = a.get("ref"), b.get("ref")
        old_target = self.old.defs.get(ra) if ra else {k: v for k, v in a.items() if k not in ("docs", "nullable")}
        new_target = self.new.defs.get(rb) if rb else {k: v for k, v in b.items() if k not in ("docs", "nullable")}
        if old_target is not None and new_target is not None and self.same_shape(old_target, new_target):
            self._add(d, path, REF_RENAMED, f"now {rb or 'inline'} (was {ra or 'inline'}), same shape")
        else:
            self._add(d, path, REF_CHANGED, f"now {rb or 'an inline schema'} (was {ra or 'an inline schema'})")

    def _types(self, d: str, path: Path, ta: Optional[List[str]], tb: Optional[List[str]]) -> None:
        if ta == tb:
            return
        if ta is None:
            self._add(d, path, TYPE_NARROWED, f"type now {'|'.join(tb or []) or 'null'} (was unconstrained)")
            return
        if tb is None:
            self._add(d, path, TYPE_WIDENED, f"type now unconstrained (was {'|'.join(ta) or 'null'})")
            return
        wa, wb = _widen_numbers(ta), _widen_numbers(tb)
        detail = f"type {'|'.join(ta) or 'null'} → {'|'.join(tb) or 'null'}"
        if wa <= wb:
            self._add(d, path, TYPE_WIDENED, detail)
        elif wb <= wa:
            self._add(d, path, TYPE_NARROWED, detail)
        else:
            self._add(d, path, TYPE_CHANGED, detail)

    def _enum(self, d: str, path: Path, ea: Optional[List[Any]], eb: Optional[List[Any]]) -> None:
        if ea == eb:
            return
        if ea is None:
            self._add(d, path, TYPE_NARROWED, f"now an enum of {_short(eb)}")
            return
        if eb is None:
            self._add(d, path, CONSTRAINT_WIDENED, "no longer an enum")
            return
        old_keys = {json.dumps(v, sort_keys=True): v for v in ea}
        new_keys = {json.dumps(v, sort_keys=True): v for v in eb}
        for key in sorted(set(old_keys) - set(new_keys)):
            self._add(d, path, ENUM_VALUE_REMOVED, f"enum value {key} removed", old_keys[key])
        for key in sorted(set(new_keys) - set(old_keys)):
            self._add(d, path, ENUM_VALUE_ADDED, f"enum value {key} added", new_keys[key])

    def _limits(self, d: str, path: Path, la: Mapping[str, Any], lb: Mapping[str, Any]) -> None:
        for key in sorted(set(la) | set(lb)):
            va, vb = la.get(key), lb.get(key)
            if va == vb:
                continue
            detail = f"{key} {_short(va)} → {_short(vb)}"
            self._add(d, path, _limit_kind(key, va, vb), detail)

    def _properties(self, d: str, path: Path, a: Node, b: Node) -> None:
        pa, pb = a.get("properties") or {}, b.get("properties") or {}
        ra, rb = set(a.get("required", ())), set(b.get("required", ()))
        for name in sorted(set(pa) | set(pb)):
            here = path + (f".{name}",)
            if name not in pb:
                self._add(d, here, FIELD_REMOVED, "field removed", name)
            elif name not in pa:
                if name in rb:
                    self._add(d, here, REQUIRED_FIELD_ADDED, "new required field", name)
                else:
                    self._add(d, here, OPTIONAL_FIELD_ADDED, "new optional field", name)
            else:
                if name in ra and name not in rb:
                    self._add(d, here, FIELD_NOW_OPTIONAL, "no longer required", name)
                elif name in rb and name not in ra:
                    self._add(d, here, FIELD_NOW_REQUIRED, "now required", name)
                self.node(d, here, pa[name], pb[name])
        for name in sorted((rb - ra) - set(pb)):  # required without a declared property
            self._add(d, path + (f".{name}",), FIELD_NOW_REQUIRED, "now required (undeclared)", name)

    def _child(self, d: str, path: Path, a: Optional[Node], b: Optional[Node], what: str) -> None:
        if a is None and b is None:
            return
        if a is None:
            self._add(d, path, TYPE_NARROWED, f"{what} now constrained")
        elif b is None:
            self._add(d, path, CONSTRAINT_WIDENED, f"{what} no longer constrained")
        else:
            self.node(d, path, a, b)

    def _variants(self, d: str, path: Path, va: Mapping[str, Node], vb: Mapping[str, Node]) -> None:
        gone = sorted(set(va) - set(vb))
        new = sorted(set(vb) - set(va))
        for label in gone:
            kind, what = (METHOD_REMOVED, "method removed") if label.startswith("method=") else (VARIANT_REMOVED, "variant removed")
            twin = self._twin(va[label], {k: vb[k] for k in new})
            self._add(d, path + (f"<{label}>",), kind, what + (f" (renamed to <{twin}>?)" if twin else ""), label)
        for label in new:
            kind, what = (METHOD_ADDED, "new method") if label.startswith("method=") else (VARIANT_ADDED, "new variant")
            self._add(d, path + (f"<{label}>",), kind, what, label)
        for label in sorted(set(va) & set(vb)):
            self.node(d, path + (f"<{label}>",), va[label], vb[label])

    def _twin(self, gone: Node, added: Mapping[str, Node]) -> Optional[str]:
        """An added variant with the same shape apart from its discriminator: a likely rename."""

        def body(n: Node) -> Any:
            props = {k: v for k, v in (n.get("properties") or {}).items() if _const(v) is _NOTHING}
            return _shape({**{k: v for k, v in n.items() if k != "properties"}, "properties": props})

        for label, node in added.items():
            if body(node) == body(gone):
                return label
        return None


def _widen_numbers(types: Sequence[str]) -> Set[str]:
    out = set(types)
    if "number" in out:
        out.add("integer")
    return out


def _limit_kind(key: str, old: Any, new: Any) -> str:
    if key == "format":
        if old is None:
            return TYPE_NARROWED
        if new is None:
            return CONSTRAINT_WIDENED
        if old in _INT_FORMATS and new in _INT_FORMATS:
            (lo_a, hi_a), (lo_b, hi_b) = _INT_FORMATS[old], _INT_FORMATS[new]
            if lo_b <= lo_a and hi_a <= hi_b:
                return CONSTRAINT_WIDENED
            if lo_a <= lo_b and hi_b <= hi_a:
                return TYPE_NARROWED
        return TYPE_CHANGED
    if old is None:
        return TYPE_NARROWED
    if new is None:
        return CONSTRAINT_WIDENED
    if isinstance(old, (int, float)) and isinstance(new, (int, float)) and not isinstance(old, bool):
        lower = key.startswith("min") or key == "exclusiveMinimum"
        tighter = new > old if lower else new < old
        if key == "multipleOf":
            return TYPE_CHANGED
        return TYPE_NARROWED if tighter else CONSTRAINT_WIDENED
    return TYPE_CHANGED


def _docs_detail(a: Mapping[str, Any], b: Mapping[str, Any]) -> str:
    keys = sorted(k for k in set(a) | set(b) if a.get(k) != b.get(k))
    return "docs changed: " + ", ".join(keys)


# ---------------------------------------------------------------------------
# The surface


@dataclass
class Use:
    """How codexmini uses one (definition, path)."""

    roles: Set[str] = field(default_factory=set)
    sources: Set[str] = field(default_factory=set)
    values: Dict[str, Set[str]] = field(default_factory=dict)  # JSON text of a value → sources


@dataclass
class MethodUse:
    union: str
    role: str  # "sends request", "sends notification", "reads notification", "answers server request"
    sources: Set[str] = field(default_factory=set)


_METHOD_ROLES = {
    CLIENT_REQUEST: "sends request",
    CLIENT_NOTIFICATION: "sends notification",
    SERVER_NOTIFICATION: "reads notification",
    SERVER_REQUEST: "answers server request",
}


class Surface:
    """What codexmini sends and reads, as uses of (definition, path) of one bundle."""

    def __init__(self, bundle: Bundle) -> None:
        self.bundle = bundle
        self.entries: Dict[str, Dict[Path, Use]] = {}
        self.methods: Dict[str, MethodUse] = {}
        self.notes: List[str] = []

    # -- recording --------------------------------------------------------

    def add(self, definition: str, path: Path, role: str, source: str, value: Any = _NOTHING) -> None:
        use = self.entries.setdefault(definition, {}).setdefault(path, Use())
        use.roles.add(role)
        use.sources.add(source)
        if value is not _NOTHING:
            use.values.setdefault(json.dumps(value, sort_keys=True), set()).add(source)

    def method(self, union: str, name: str, source: str) -> None:
        use = self.methods.setdefault(f"{union}:{name}", MethodUse(union, _METHOD_ROLES[union]))
        use.sources.add(source)

    def note(self, text: str) -> None:
        if text not in self.notes:
            self.notes.append(text)

    # -- queries ----------------------------------------------------------

    def touches(self, definition: str) -> bool:
        return bool(self.entries.get(definition))

    def at(self, definition: str, path: Path) -> Optional[Use]:
        return self.entries.get(definition, {}).get(path)

    def under(self, definition: str, path: Path) -> Use:
        """All uses at ``path`` or below it, merged."""
        merged = Use()
        n = len(path)
        for here, use in self.entries.get(definition, {}).items():
            if here[:n] == path:
                merged.roles |= use.roles
                merged.sources |= use.sources
                for value, sources in use.values.items():
                    merged.values.setdefault(value, set()).update(sources)
        return merged

    def value_use(self, definition: str, path: Path, value: Any) -> Set[str]:
        use = self.at(definition, path)
        if use is None:
            return set()
        return set(use.values.get(json.dumps(value, sort_keys=True), ()))

    def counts(self) -> Dict[str, int]:
        out = {role: 0 for role in _METHOD_ROLES.values()}
        for use in self.methods.values():
            out[use.role] += 1
        out["definitions"] = len([d for d in self.entries if self.entries[d]])
        out["paths"] = sum(len(paths) for paths in self.entries.values())
        return out

    def to_json(self) -> Dict[str, Any]:
        return {
            "methods": [
                {"method": key.split(":", 1)[1], "union": use.union, "role": use.role, "sources": sorted(use.sources)}
                for key, use in sorted(self.methods.items())
            ],
            "definitions": {
                d: [
                    {
                        "path": render(path),
                        "roles": sorted(use.roles),
                        "sources": sorted(use.sources),
                        **({"values": {json.loads(v): sorted(s) for v, s in sorted(use.values.items())}} if use.values else {}),
                    }
                    for path, use in sorted(paths.items())
                ]
                for d, paths in sorted(self.entries.items())
                if paths
            },
            "notes": list(self.notes),
        }


_UNKNOWN = object()  # a value the code computes at run time: its path is used, its shape unknown


class Mapper:
    """Walks an instance beside a definition and records every (definition, path) it passes."""

    def __init__(self, bundle: Bundle, surface: Surface) -> None:
        self.bundle = bundle
        self.surface = surface

    def map(
        self,
        definition: str,
        instance: Any,
        role: str,
        source: str,
        *,
        values: bool = True,
        only: Optional[FrozenSet[Tuple[Any, ...]]] = None,
    ) -> bool:
        """Record the uses ``instance`` makes of ``definition``; False if the bundle lacks it."""
        node = self.bundle.defs.get(definition)
        if node is None:
            return False
        self._walk(definition, (), node, instance, (), role, source, values, only, 0)
        return True

    def _walk(
        self,
        d: str,
        spath: Path,
        node: Node,
        value: Any,
        ipath: Tuple[Any, ...],
        role: str,
        source: str,
        values: bool,
        only: Optional[FrozenSet[Tuple[Any, ...]]],
        depth: int,
    ) -> None:
        if only is not None and ipath not in only:
            return
        if depth > 64:
            return
        scalar = isinstance(value, (str, int, float, bool)) and value is not _UNKNOWN
        record_value = values and scalar and "enum" in node
        self.surface.add(d, spath, role, source, value if record_value else _NOTHING)
        ref = node.get("ref")
        if ref is not None:
            target = self.bundle.defs.get(ref)
            if target is not None:
                self._walk(ref, (), target, value, ipath, role, source, values, only, depth + 1)
            return
        if value is None or value is _UNKNOWN:
            return
        if isinstance(value, dict):
            props = node.get("properties") or {}
            for key, child in value.items():
                if key in props:
                    self._walk(d, spath + (f".{key}",), props[key], child, ipath + (key,), role, source, values, only, depth + 1)
                elif "additional" in node:
                    self._walk(d, spath + (".*",), node["additional"], child, ipath + (key,), role, source, values, only, depth + 1)
        elif isinstance(value, list) and "items" in node:
            for child in value:
                self._walk(d, spath + ("[]",), node["items"], child, ipath + ("[]",), role, source, values, only, depth + 1)
        variants = node.get("variants")
        if variants and not (scalar and value in node.get("enum", ())):
            for label in self._matching(variants, value):
                self._walk(d, spath + (f"<{label}>",), variants[label], value, ipath, role, source, values, only, depth + 1)

    def _matching(self, variants: Mapping[str, Node], value: Any) -> List[str]:
        """The labels of the variants ``value`` could be; by the discriminator when there is one."""
        keys = {label.partition("=")[0] if "=" in label else None for label in variants}
        if len(keys) == 1 and None not in keys and isinstance(value, dict):
            key = keys.pop()
            if key in value:
                label = f"{key}={value[key]}"
                return [label] if label in variants and self.could_be(variants[label], value) else []
        return [label for label, branch in variants.items() if self.could_be(branch, value)]

    def resolve(self, node: Node) -> Node:
        seen = 0
        while "ref" in node and seen < 16:
            target = self.bundle.defs.get(node["ref"])
            if target is None:
                return {}
            node, seen = target, seen + 1
        return node

    def could_be(self, node: Node, value: Any) -> bool:
        """A cheap "could this branch describe value" (discriminators, required keys, JSON type)."""
        node = self.resolve(node)
        if value is None:
            return bool(node.get("nullable")) or not node.get("type")
        types = node.get("type")
        kind = _json_type(value)
        if types and kind not in types and not (kind == "integer" and "number" in types):
            return False
        if "enum" in node and isinstance(value, (str, int, float, bool)) and "variants" not in node:
            return value in node["enum"]
        if isinstance(value, dict):
            if any(key not in value for key in node.get("required", ())):
                return False
            for key, prop in (node.get("properties") or {}).items():
                const = _NOTHING if prop.get("nullable") else _const(self.resolve(prop))
                if const is not _NOTHING and key in value and value[key] != const:
                    return False
            if node.get("closed") and any(key not in (node.get("properties") or {}) for key in value):
                return False
            if "variants" in node:
                return any(self.could_be(v, value) for v in node["variants"].values())
        elif "properties" in node and not types:
            return False
        return True


def _json_type(value: Any) -> str:
    if isinstance(value, bool):
        return "boolean"
    if isinstance(value, int):
        return "integer"
    if isinstance(value, float):
        return "number"
    if isinstance(value, str):
        return "string"
    if isinstance(value, dict):
        return "object"
    if isinstance(value, list):
        return "array"
    return "null"


# -- samples from the schema -------------------------------------------------


class Sampler:
    """Instances generated from canonical nodes: every property present, the
    first enum value, the first variant, one element per array, one map key."""

    def __init__(self, bundle: Bundle) -> None:
        self.bundle = bundle

    def sample(self, node: Node, depth: int = 0) -> Any:
        if depth > 10:
            return None
        if "ref" in node:
            target = self.bundle.defs.get(node["ref"])
            return None if target is None else self.sample(target, depth + 1)
        if node.get("enum"):
            return node["enum"][0]
        if "variants" in node:
            first = self.sample(next(iter(node["variants"].values())), depth + 1)
            if not isinstance(first, dict) or "properties" not in node:
                return first
            own = {k: v for k, v in node.items() if k != "variants"}
            return {**self.sample(own, depth + 1), **first}
        types = node.get("type")
        if "properties" in node or (types and "object" in types) or "additional" in node:
            out = {k: self.sample(v, depth + 1) for k, v in (node.get("properties") or {}).items()}
            if "additional" in node:
                out["key"] = self.sample(node["additional"], depth + 1)
            return out
        if "items" in node or (types and "array" in types):
            return [self.sample(node["items"], depth + 1)] if "items" in node else []
        for kind, value in (("string", "x"), ("integer", 1), ("number", 1.5), ("boolean", True)):
            if types and kind in types:
                return value
        if types == [] and node.get("nullable"):
            return None
        return {}  # free-form JSON

    def worlds(self, node: Node) -> Iterator[Any]:
        """The full sample, then one with each optional or nullable top-level field left out."""
        full = self.sample(node)
        yield full
        target = self.bundle.defs.get(node["ref"], {}) if "ref" in node else node
        if not isinstance(full, dict):
            return
        required = set(target.get("required", ()))
        for key, prop in (target.get("properties") or {}).items():
            if key not in required or prop.get("nullable"):
                world = copy.deepcopy(full)
                if key in required:
                    world[key] = None
                else:
                    world.pop(key, None)
                yield world


# -- watching what code reads ------------------------------------------------


class ReadLog:
    """The instance paths code read, each with the source it was reading for."""

    def __init__(self) -> None:
        self.paths: Dict[Tuple[Any, ...], Set[str]] = {}
        self.source = "?"

    def add(self, path: Tuple[Any, ...]) -> None:
        self.paths.setdefault(path, set()).add(self.source)

    def closed(self, roots: Iterable[Tuple[Any, ...]] = ((),)) -> FrozenSet[Tuple[Any, ...]]:
        """Every path read plus all its prefixes (reading a.b reads a)."""
        out = set(roots)
        for path in self.paths:
            out.update(path[:i] for i in range(len(path) + 1))
        return frozenset(out)


class _Reads(dict):  # type: ignore[type-arg]
    """A dict that logs the keys code reads from it and wraps what it hands out."""

    def __init__(self, data: Mapping[str, Any], path: Tuple[Any, ...], log: ReadLog) -> None:
        super().__init__(data)
        self._path = path
        self._log = log

    def _child(self, key: Any, value: Any) -> Any:
        path = self._path + (key,)
        self._log.add(path)
        return watch(value, path, self._log)

    def __getitem__(self, key: Any) -> Any:
        return self._child(key, super().__getitem__(key))

    def get(self, key: Any, default: Any = None) -> Any:
        if super().__contains__(key):
            return self._child(key, super().__getitem__(key))
        self._log.add(self._path + (key,))  # asked for, absent
        return default

    def __contains__(self, key: object) -> bool:
        self._log.add(self._path + (key,))
        return super().__contains__(key)

    def items(self) -> Any:  # type: ignore[override]
        return [(k, self._child(k, v)) for k, v in super().items()]

    def values(self) -> Any:  # type: ignore[override]
        return [self._child(k, v) for k, v in super().items()]


class _ReadList(list):  # type: ignore[type-arg]
    def __init__(self, data: Sequence[Any], path: Tuple[Any, ...], log: ReadLog) -> None:
        super().__init__(data)
        self._path = path + ("[]",)
        self._log = log

    def __iter__(self) -> Iterator[Any]:
        for value in super().__iter__():
            self._log.add(self._path)
            yield watch(value, self._path, self._log)

    def __getitem__(self, index: Any) -> Any:
        self._log.add(self._path)
        return watch(super().__getitem__(index), self._path, self._log)


def watch(value: Any, path: Tuple[Any, ...], log: ReadLog) -> Any:
    if isinstance(value, Mapping):
        return _Reads(value, path, log)
    if isinstance(value, list):
        return _ReadList(value, path, log)
    return value


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


# -- deriving the surface ----------------------------------------------------


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
            self.surface.note(f"no recorded transcripts match {_relative(pattern)}")
        for path in files:
            source = "recorded:" + os.path.basename(path)[: -len(".frames.jsonl")]
            sent: Dict[Any, str] = {}  # request ids codexmini used → method
            asked: Dict[Any, str] = {}  # request ids codex used → method
            with open(path, encoding="utf-8") as fh:
                for line in fh:
                    if line.strip():
                        record = json.loads(line)
                        self._recorded(record["dir"], record["frame"], source, sent, asked)

    def _recorded(self, direction: str, frame: Mapping[str, Any], source: str, sent: Dict[Any, str], asked: Dict[Any, str]) -> None:
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
            if method in permission.REQUESTS:
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
        log.source = "code:client.thread_of"
        _quietly(lambda: thread_of(frame))
        log.source = source
        event = _quietly(lambda: mapping.to_event(method, frame["params"]))
        log.source = "code:steps.StepFolder"
        folder = StepFolder(step=1, model="m", new_id=lambda: "id")
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
            item_source = f"code:steps.StepFolder+mapping.TOOL_ITEMS[{value}]" if value in mapping.TOOL_ITEMS else None
            for item in self.sampler.worlds(variant):
                world = dict(params_sample, item=item)
                log = self._run_pipeline(method, world, f"code:mapping.NOTIFICATIONS[{method}]")
                read = {p[2] for p in log.paths if len(p) > 2 and p[:2] == ("params", "item")}
                if not read - {key, "id"}:
                    break  # only dispatched on: not a use of this variant
                if item_source is not None:
                    for sources in log.paths.values():
                        if "code:steps.StepFolder" in sources:
                            sources.discard("code:steps.StepFolder")
                            sources.add(item_source)
                self._map_reads(method, world, log)

    def server_requests(self) -> None:
        """Answer each ``permission.REQUESTS`` method for every decision; map reads and answers."""
        replies = [permission.Reply(d) for d in permission.DECISIONS]
        replies += [permission.Reply(d, answers=_AnyAnswers(), content={}) for d in permission.DECISIONS]
        for method in sorted(permission.REQUESTS):
            source = f"code:permission.REQUESTS[{method}]"
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
        """Extend enum values codexmini sends with the ``codexmini.permission`` table they come from."""
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
    """``x.request("m", {"k": ...})`` → ("request", "m", {"k": value-or-_UNKNOWN})."""
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
                k.value: (v.value if isinstance(v, ast.Constant) and isinstance(v.value, str) else _UNKNOWN)  # type: ignore[union-attr]
                for k, v in zip(literal.keys, literal.values)
            }
    return call.func.attr, first.value, params


def node_at(bundle: Bundle, definition: str, path: Path) -> Optional[Node]:
    """The canonical node at a rendered path of a definition."""
    node: Optional[Node] = bundle.defs.get(definition)
    for segment in path:
        if node is None:
            return None
        if segment == "[]":
            node = node.get("items")
        elif segment == ".*":
            node = node.get("additional")
        elif segment.startswith("<"):
            node = (node.get("variants") or {}).get(segment[1:-1])
        else:
            node = (node.get("properties") or {}).get(segment[1:])
    return node


def derive_surface(bundle: Bundle, version: str = CODEX_VERSION) -> Surface:
    """codexmini's surface mapped onto ``bundle``."""
    return SurfaceBuilder(bundle, version).build()


# ---------------------------------------------------------------------------
# Classification


def _sources(sources: Iterable[str], limit: int = 4) -> List[str]:
    ordered = sorted(set(sources), key=lambda s: (not s.startswith("recorded:"), s))
    return ordered[:limit] + ([f"… {len(ordered) - limit} more"] if len(ordered) > limit else [])


def classify(change: Change, surface: Surface, new_refs: Mapping[str, Set[Site]]) -> None:
    """Set ``change.verdict`` and ``change.why`` by the rules of the module docstring."""
    d, path, kind = change.definition, change.path, change.kind
    if kind == DOCS_CHANGED:
        change.verdict = DOCS
        return
    used = surface.under(d, path)
    parent = surface.at(d, path[:-1]) if path else None

    def breaking(why: str, sources: Iterable[str]) -> None:
        change.verdict, change.why, change.sources = BREAKING, why, _sources(sources)

    if kind in _LOSSES and used.roles:
        return breaking(f"codexmini {_doing(d, used.roles)} it", used.sources)
    if kind == ENUM_VALUE_REMOVED:
        users = surface.value_use(d, path, change.value)
        if users:
            return breaking(f"codexmini {_doing(d, used.roles)} this value", users)
    if kind in (REQUIRED_FIELD_ADDED, FIELD_NOW_REQUIRED) and parent is not None and SENDS in parent.roles:
        if kind == REQUIRED_FIELD_ADDED:
            return breaking("codexmini sends this object without it", parent.sources)
        return breaking("codexmini sends this object; it must now always carry the field", parent.sources)
    if kind == FIELD_NOW_OPTIONAL and READS in used.roles:
        return breaking("codexmini reads it and may now find it missing", used.sources)
    if kind in (NULL_ADDED, TYPE_WIDENED) and READS in used.roles:
        return breaking(f"codexmini reads it and may now get a value of another type ({change.detail})", used.sources)
    if kind in (NULL_REMOVED, TYPE_NARROWED) and SENDS in used.roles:
        return breaking("codexmini sends it; the server may now reject what it sends", used.sources)
    if kind == DEFINITION_ADDED:
        sites = sorted(
            f"{owner} {render(site)}"
            for owner, site in new_refs.get(d, ())
            if surface.touches(owner) and _in_used_branches(surface, owner, site + ("",))
        )
        if sites:
            change.verdict, change.why = ADDITIVE, "referenced from " + ", ".join(sites[:3])
        else:
            change.verdict = OUTSIDE
        return
    if used.roles or (kind in _GAINS and surface.touches(d) and _in_used_branches(surface, d, path)):
        change.verdict = ADDITIVE
        return
    change.verdict = OUTSIDE
    change.why = "codexmini does not use it" if surface.touches(d) else ""


def _in_used_branches(surface: Surface, definition: str, path: Path) -> bool:
    """False if the path runs through a union branch codexmini never uses
    (a new field of a ``ThreadItem`` type it never reads is outside)."""
    for i, segment in enumerate(path[:-1]):
        if segment.startswith("<") and not surface.under(definition, path[: i + 1]).roles:
            return False
    return True


def _doing(definition: str, roles: Iterable[str]) -> str:
    if definition == SERVER_REQUEST:
        return "answers"
    return " and ".join(sorted(roles))


Site = Tuple[str, Path]  # (definition, path) where a $ref is written


def references(bundle: Bundle) -> Dict[str, Set[Site]]:
    """definition → the places that ``$ref`` it."""
    out: Dict[str, Set[Site]] = {}

    def walk(owner: str, node: Node, path: Path) -> None:
        ref = node.get("ref")
        if isinstance(ref, str):
            out.setdefault(ref, set()).add((owner, path))
        for name, child in (node.get("properties") or {}).items():
            walk(owner, child, path + (f".{name}",))
        for key, segment in (("items", "[]"), ("additional", ".*")):
            if key in node:
                walk(owner, node[key], path + (segment,))
        for label, child in (node.get("variants") or {}).items():
            walk(owner, child, path + (f"<{label}>",))
        for key in ("patterns", "tuple", "allOf"):
            children = node.get(key) or {}
            for child in children.values() if isinstance(children, dict) else children:
                walk(owner, child, path)

    for name, node in bundle.defs.items():
        walk(name, node, ())
    return out


@dataclass
class Report:
    old: Side
    new: Side
    surface: Surface
    changes: List[Change]

    def by_verdict(self, verdict: str) -> List[Change]:
        return [c for c in self.changes if c.verdict == verdict]

    @property
    def breaking(self) -> bool:
        return bool(self.by_verdict(BREAKING))

    @property
    def exit_code(self) -> int:
        return 1 if self.breaking else 0

    def summary(self) -> Dict[str, int]:
        return {verdict: len(self.by_verdict(verdict)) for verdict in VERDICTS}


def classify_changes(old: Bundle, new: Bundle, surface: Surface) -> List[Change]:
    """Every change from ``old`` to ``new``, classified against ``surface``, breaking first."""
    changes = Differ(old, new).run()
    refs = references(new)
    for change in changes:
        classify(change, surface, refs)
    order = {v: i for i, v in enumerate(VERDICTS)}
    changes.sort(key=lambda c: (order[c.verdict], c.definition, c.path, c.kind, json.dumps(c.value)))
    return changes


def compare(old: Side, new: Side, version: str = CODEX_VERSION) -> Report:
    """Canonicalise both bundles, derive the surface on OLD, diff and classify."""
    a, b = Bundle.load(old.path, old.label), Bundle.load(new.path, new.label)
    surface = derive_surface(a, version)
    return Report(old, new, surface, classify_changes(a, b, surface))


# ---------------------------------------------------------------------------
# Output

_HEADINGS = {
    BREAKING: "BREAKING -- changes that touch what codexmini sends or reads",
    ADDITIVE: "ADDITIVE -- new or relaxed, in definitions codexmini uses",
    OUTSIDE: "OUTSIDE THE SURFACE -- definitions or fields codexmini does not use",
    DOCS: "DOCS -- descriptions, titles and defaults",
}


def _line(change: Change) -> str:
    return f"  {change.definition} {change.where}: {change.detail}"


def format_report(report: Report, verbose: bool = False) -> str:
    counts = report.surface.counts()
    lines = [
        f"codex schema drift: {report.old.label} → {report.new.label} ({report.old.flavor} flavor)",
        f"  old: {_relative(report.old.path)} ({report.old.origin})",
        f"  new: {_relative(report.new.path)} ({report.new.origin})",
        "  surface: requests sent {}, notifications sent {}, notifications read {}, server requests answered {}; "
        "{} definitions, {} paths (--surface lists them)".format(
            counts["sends request"],
            counts["sends notification"],
            counts["reads notification"],
            counts["answers server request"],
            counts["definitions"],
            counts["paths"],
        ),
    ]
    for verdict in VERDICTS:
        if verdict == DOCS and not verbose:
            continue
        changes = report.by_verdict(verdict)
        lines += ["", f"{_HEADINGS[verdict]} ({len(changes)})"]
        for change in changes:
            lines.append(_line(change))
            if verdict == BREAKING:
                lines.append(f"      {change.why}: {', '.join(change.sources)}")
            elif verbose and change.why:
                lines.append(f"      {change.why}")
        if not changes:
            lines.append("  (none)")
    summary = report.summary()
    lines += [
        "",
        "summary: {} breaking, {} additive, {} outside the surface{}".format(
            summary[BREAKING],
            summary[ADDITIVE],
            summary[OUTSIDE],
            f", {summary[DOCS]} docs" if verbose else f" ({summary[DOCS]} docs changes hidden; --verbose shows them)",
        ),
    ]
    if report.surface.notes:
        lines += ["", "notes on the surface:"] + [f"  {n}" for n in report.surface.notes]
    return "\n".join(lines)


def report_json(report: Report, verbose: bool = False) -> Dict[str, Any]:
    return {
        "old": report.old.to_json(),
        "new": report.new.to_json(),
        "summary": report.summary(),
        "exit": report.exit_code,
        "changes": [c.to_json() for c in report.changes if verbose or c.verdict != DOCS],
        "notes": list(report.surface.notes),
    }


def format_surface(surface: Surface, side: Side) -> str:
    lines = [f"codexmini's protocol surface on codex {side.label} ({side.flavor} flavor, {_relative(side.path)})"]
    for union, role in _METHOD_ROLES.items():
        rows = sorted((k.split(":", 1)[1], u) for k, u in surface.methods.items() if u.union == union)
        lines += ["", f"{role}s ({union}): {len(rows)}"]
        width = max((len(m) for m, _ in rows), default=0)
        lines += [f"  {m:<{width}}  {', '.join(_sources(u.sources, 6))}" for m, u in rows]
    lines += ["", "definitions and paths (S = sends, R = reads; = values seen or sent):"]
    for definition, paths in sorted(surface.entries.items()):
        if not paths:
            continue
        lines.append(f"  {definition}")
        for path, use in sorted(paths.items()):
            roles = ("S" if SENDS in use.roles else " ") + ("R" if READS in use.roles else " ")
            lines.append(f"    {roles} {render(path)}    {', '.join(_sources(use.sources, 3))}")
            for value, sources in sorted(use.values.items()):
                lines.append(f"         = {value}    {', '.join(_sources(sources, 3))}")
    if surface.notes:
        lines += ["", "notes:"] + [f"  {n}" for n in surface.notes]
    return "\n".join(lines)


# ---------------------------------------------------------------------------
# Command line


def main(argv: Optional[Sequence[str]] = None, out: Any = None) -> int:
    out = out or sys.stdout
    parser = argparse.ArgumentParser(
        prog="schema_drift.py",
        description="Classify the schema changes between two codex releases against the surface codexmini uses.",
    )
    parser.add_argument("old", nargs="?", metavar="OLD", help="a codex version or a schema directory/file")
    parser.add_argument("new", nargs="?", metavar="NEW", help="a codex version or a schema directory/file")
    parser.add_argument("--flavor", choices=FLAVORS, default="experimental", help="schema flavor (default experimental)")
    parser.add_argument("--json", action="store_true", help="machine-readable output")
    parser.add_argument("--verbose", action="store_true", help="also list docs changes and why changes are not breaking")
    parser.add_argument(
        "--surface", action="store_true", help=f"print codexmini's surface on OLD (default {CODEX_VERSION}) and exit"
    )
    parser.add_argument("--cache", default=CACHE, metavar="DIR", help="where versions are installed (default .cache/codex)")
    args = parser.parse_args(argv)
    if args.surface and args.new is not None:
        parser.error("--surface takes at most one side (OLD)")
    if not args.surface and (args.old is None or args.new is None):
        parser.error("OLD and NEW are required (or --surface)")
    try:
        old = locate(args.old or CODEX_VERSION, args.flavor, args.cache)
        if args.surface:
            surface = derive_surface(Bundle.load(old.path, old.label))
            if args.json:
                json.dump({"side": old.to_json(), **surface.to_json()}, out, indent=1, sort_keys=True)
                out.write("\n")
            else:
                print(format_surface(surface, old), file=out)
            return 0
        new = locate(args.new, args.flavor, args.cache)
    except UsageError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    except DriftError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 3
    report = compare(old, new)
    if args.json:
        json.dump(report_json(report, args.verbose), out, indent=1, sort_keys=True)
        out.write("\n")
    else:
        print(format_report(report, args.verbose), file=out)
    return report.exit_code


if __name__ == "__main__":
    sys.exit(main())
