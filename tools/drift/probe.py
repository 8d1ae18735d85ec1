"""Running code on instances generated from the schema, and seeing what it reads.

:class:`Sampler` makes instances from canonical nodes; :func:`watch` wraps one
in dicts and lists that log every key and element the code reads into a
:class:`ReadLog`.  ``derive`` runs codexmini's handlers on them this way.
"""

from __future__ import annotations

import copy
from typing import Any, Dict, FrozenSet, Iterable, Iterator, Mapping, Sequence, Set, Tuple

from .bundle import Bundle, Node

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
