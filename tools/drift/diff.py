"""The per-definition diff of two canonical bundles.

Definitions present on both sides are compared node by node; every difference
is a :class:`Change` with the definition, a JSON path inside it (``$.input[]``,
``$.*`` for map values, ``$<type=text>.text`` for a variant), a kind and, for
enum values, the value.  Whether a change matters to codexmini is decided
later, by ``classify``.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Any, Dict, List, Mapping, Optional, Sequence, Set

from .bundle import NOTHING, Bundle, Node, Path, const_of, render, shape

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
        return shape(a) == shape(b)

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
            self._add(
                d,
                path,
                TYPE_NARROWED if b.get("never") else TYPE_WIDENED,
                "now false" if b.get("never") else "was false",
            )
        self._properties(d, path, a, b)
        self._child(d, path + (".*",), a.get("additional"), b.get("additional"), "map values")
        self._child(d, path + ("[]",), a.get("items"), b.get("items"), "array items")
        for key in ("patterns", "tuple", "allOf", "other"):
            if shape(a.get(key)) != shape(b.get(key)):
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
            kind, what = (
                (METHOD_REMOVED, "method removed")
                if label.startswith("method=")
                else (VARIANT_REMOVED, "variant removed")
            )
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
            props = {k: v for k, v in (n.get("properties") or {}).items() if const_of(v) is NOTHING}
            return shape({**{k: v for k, v in n.items() if k != "properties"}, "properties": props})

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
