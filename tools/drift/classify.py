"""Classification: which changes can break codexmini, by the rules below.

Each change is *breaking*, *additive*, *outside the surface* or, with
``--verbose`` only, *docs*:

breaking -- the change touches the surface and can break codexmini:

* a method codexmini sends, reads or answers removed (a rename is a removal
  plus an addition; the report names a likely new name);
* a definition, variant or field on the surface removed, or its ``$ref``
  pointed at a different shape, or its type changed (neither wider nor
  narrower);
* an enum value on the surface removed (one codexmini sends, or one seen in
  what it reads);
* a type **narrowed** where codexmini *sends* (``["string", "null"]`` →
  ``"string"``, a JSON type dropped, a plain string becoming an enum, a larger
  minimum or smaller maximum or a narrower integer format, objects closed with
  ``additionalProperties: false``);
* a type **widened** by a JSON type where codexmini *reads* (``string`` →
  ``string | null``: a value of a type it never saw may arrive);
* a **new required field**, or a field becoming required, in an object
  codexmini *sends* (request params, answers);
* a field codexmini *reads* becoming optional.

additive -- harmless for codexmini as it is: a new optional field, method,
variant, enum value or definition, a widened type where codexmini sends, a
narrowed type where it only reads, a ``$ref`` renamed to an identical shape;
counted only in definitions the surface touches, and not inside a union branch
it never uses (for a new definition: referenced from a touched one).

outside the surface -- everything else: changes to definitions codexmini never
touches, and removals or narrowings of fields it does not use.

:func:`compare` runs the whole comparison: canonical bundles, the surface on
OLD, the diff, and these verdicts, as a :class:`Report`.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Dict, Iterable, List, Mapping, Set, Tuple

from codexmini import CODEX_VERSION

from .bundle import SERVER_REQUEST, Bundle, Node, Path, render
from .derive import derive_surface
from .diff import (
    CONSTRAINT_WIDENED,
    DEFINITION_ADDED,
    DEFINITION_REMOVED,
    DOCS_CHANGED,
    ENUM_VALUE_ADDED,
    ENUM_VALUE_REMOVED,
    FIELD_NOW_OPTIONAL,
    FIELD_NOW_REQUIRED,
    FIELD_REMOVED,
    METHOD_ADDED,
    METHOD_REMOVED,
    NULL_ADDED,
    NULL_REMOVED,
    OPTIONAL_FIELD_ADDED,
    REF_CHANGED,
    REF_RENAMED,
    REQUIRED_FIELD_ADDED,
    TYPE_CHANGED,
    TYPE_NARROWED,
    TYPE_WIDENED,
    VARIANT_ADDED,
    VARIANT_REMOVED,
    Change,
    Differ,
)
from .sides import Side
from .surface import READS, SENDS, Surface

BREAKING = "breaking"
ADDITIVE = "additive"
OUTSIDE = "outside"
DOCS = "docs"
VERDICTS = (BREAKING, ADDITIVE, OUTSIDE, DOCS)

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


def short_sources(sources: Iterable[str], limit: int = 4) -> List[str]:
    """At most ``limit`` of ``sources``, recorded ones first, then how many were left out."""
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
        change.verdict, change.why, change.sources = BREAKING, why, short_sources(sources)

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
