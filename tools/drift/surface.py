"""The surface: what codexmini sends and reads, as uses of one bundle.

A :class:`Surface` maps (definition, path) of the OLD bundle to a :class:`Use`:
its roles (*sends*, *reads*), the sources that showed it, and the enum values
seen or sent there; it also lists the methods codexmini sends, reads or
answers.  :class:`Mapper` records the uses an instance (a frame, params, an
answer) makes of a definition by walking the two side by side.  Where the
instances come from is ``derive``.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Any, Dict, FrozenSet, List, Mapping, Optional, Set, Tuple

from .bundle import (
    CLIENT_NOTIFICATION,
    CLIENT_REQUEST,
    NOTHING,
    SERVER_NOTIFICATION,
    SERVER_REQUEST,
    Bundle,
    Node,
    Path,
    const_of,
    render,
)

SENDS = "sends"
READS = "reads"


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


METHOD_ROLES = {
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

    def add(self, definition: str, path: Path, role: str, source: str, value: Any = NOTHING) -> None:
        use = self.entries.setdefault(definition, {}).setdefault(path, Use())
        use.roles.add(role)
        use.sources.add(source)
        if value is not NOTHING:
            use.values.setdefault(json.dumps(value, sort_keys=True), set()).add(source)

    def method(self, union: str, name: str, source: str) -> None:
        use = self.methods.setdefault(f"{union}:{name}", MethodUse(union, METHOD_ROLES[union]))
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
        out = dict.fromkeys(METHOD_ROLES.values(), 0)
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
                        **(
                            {"values": {json.loads(v): sorted(s) for v, s in sorted(use.values.items())}}
                            if use.values
                            else {}
                        ),
                    }
                    for path, use in sorted(paths.items())
                ]
                for d, paths in sorted(self.entries.items())
                if paths
            },
            "notes": list(self.notes),
        }


UNKNOWN = object()  # a value the code computes at run time: its path is used, its shape unknown


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
        scalar = isinstance(value, (str, int, float, bool)) and value is not UNKNOWN
        record_value = values and scalar and "enum" in node
        self.surface.add(d, spath, role, source, value if record_value else NOTHING)
        ref = node.get("ref")
        if ref is not None:
            target = self.bundle.defs.get(ref)
            if target is not None:
                self._walk(ref, (), target, value, ipath, role, source, values, only, depth + 1)
            return
        if value is None or value is UNKNOWN:
            return
        if isinstance(value, dict):
            props = node.get("properties") or {}
            for key, child in value.items():
                if key in props:
                    self._walk(
                        d,
                        spath + (f".{key}",),
                        props[key],
                        child,
                        ipath + (key,),
                        role,
                        source,
                        values,
                        only,
                        depth + 1,
                    )
                elif "additional" in node:
                    self._walk(
                        d,
                        spath + (".*",),
                        node["additional"],
                        child,
                        ipath + (key,),
                        role,
                        source,
                        values,
                        only,
                        depth + 1,
                    )
        elif isinstance(value, list) and "items" in node:
            for child in value:
                self._walk(
                    d, spath + ("[]",), node["items"], child, ipath + ("[]",), role, source, values, only, depth + 1
                )
        variants = node.get("variants")
        if variants and not (scalar and value in node.get("enum", ())):
            for label in self._matching(variants, value):
                self._walk(
                    d, spath + (f"<{label}>",), variants[label], value, ipath, role, source, values, only, depth + 1
                )

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
                const = NOTHING if prop.get("nullable") else const_of(self.resolve(prop))
                if const is not NOTHING and key in value and value[key] != const:
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
