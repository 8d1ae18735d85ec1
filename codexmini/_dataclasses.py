"""The package's dataclasses and named tuples, made without compiling anything.  Pure.

Theory of operation.  What a class costs to define is what its machinery
does then.  ``dataclasses.dataclass`` writes each class's ``__init__``,
``__repr__``, ``__eq__``, ``__hash__`` (and, frozen, ``__setattr__`` and
``__delattr__``) as source text and compiles it; ``typing.NamedTuple``
compiles each field's annotation (a string, under ``from __future__ import
annotations``) and a ``__new__``.  Between them that was most of what
importing the package cost: some sixty classes on the way to
:mod:`codexmini.sync`, about half a millisecond each on a slow machine.
:func:`dataclass` and :class:`NamedTuple` here make the same classes from
functions written once below, closed over each class's fields: nothing is
compiled at import.  A class made by :func:`dataclass` (a *record*) works
out its fields the first time they are needed (an instance, a ``repr``,
``dataclasses.fields``): an import defines many classes it never uses.

A record keeps what the ``dataclasses`` module reads: ``__dataclass_fields__``
and ``__dataclass_params__`` are built the first time they are read, so
``dataclasses.fields``, ``replace``, ``asdict``, ``is_dataclass`` and a
subclass decorated with the real ``@dataclass`` work as on a dataclass,
without ``dataclasses`` imported before then; assigning a field of a frozen
record raises ``dataclasses.FrozenInstanceError``; ``inspect.signature`` of
the class names its fields.  A named tuple is a ``tuple`` subclass with what
``collections.namedtuple`` gives one (``_fields``, ``_field_defaults``,
``_make``, ``_replace``, ``_asdict``, the field getters, the ``repr``).

Type checkers see the standard library's: a module writes ::

    if TYPE_CHECKING:
        from dataclasses import dataclass, field
        from typing import NamedTuple
    else:
        from ._dataclasses import NamedTuple, dataclass, field

and keeps its ``@dataclass(frozen=True)``, ``field(...)`` and ``class
X(NamedTuple)`` lines as they are; ``tests/test_dataclasses.py`` holds each
to the standard library's behaviour.  What is supported is what the package
uses: ``frozen``; ``field(default=..., default_factory=..., repr=...,
compare=...)``; ``__post_init__``; a record extending a record; a class's
own ``__init__``, ``__repr__``, ``__eq__`` or ``__hash__`` kept; string
annotations (``from __future__ import annotations``); a named tuple's
defaults, docstring and methods.  Anything else (``order``, ``slots``,
``kw_only``, ``InitVar``, ``ClassVar``, a named tuple with another base ...)
is a ``TypeError`` (a record's fields: when they are first worked out), not
a silent difference.
"""

from __future__ import annotations

import collections
import sys
from _thread import get_ident
from operator import attrgetter
from types import CodeType, FunctionType
from typing import Any, Callable, Dict, Iterable, Optional, Set, Tuple, TypeVar

#: ``collections.namedtuple``'s field getter (in C, else its pure-Python fallback).
_tuplegetter: Callable[[int, str], Any] = vars(collections)["_tuplegetter"]

T = TypeVar("T", bound=type)


class _Missing:
    def __repr__(self) -> str:
        return "MISSING"


#: No default (``dataclasses.MISSING``, without importing ``dataclasses``).
MISSING: Any = _Missing()


class _Field:
    """One field of a record: what :func:`field` said, and its name and annotation."""

    __slots__ = ("default", "default_factory", "repr", "compare", "name", "type")

    def __init__(self, default: Any, default_factory: Any = MISSING, repr: bool = True, compare: bool = True) -> None:
        self.default = default
        self.default_factory = default_factory
        self.repr = repr
        self.compare = compare
        self.name = ""
        self.type: Any = None


class _Spec:
    """A record class's fields (``cls.__record__``), worked out the first time
    they are needed (an instance, a repr, ``dataclasses.fields`` ...), not when
    the class is defined: a package defines many classes an import never uses."""

    __slots__ = ("cls", "frozen", "given", "post_init", "fields", "names", "shown", "compared")
    fields: Dict[str, _Field]
    names: Tuple[str, ...]
    shown: Tuple[str, ...]
    compared: Callable[[Any], Tuple[Any, ...]]

    def __init__(self, cls: type, frozen: bool, given: Dict[str, _Field]) -> None:
        self.cls, self.frozen, self.given = cls, frozen, given
        self.post_init = hasattr(cls, "__post_init__")

    def __getattr__(self, name: str) -> Any:  # fields, names, shown, compared: not worked out yet
        if name not in ("fields", "names", "shown", "compared"):
            raise AttributeError(name)
        self._work_out()
        return getattr(self, name)

    def _work_out(self) -> None:
        cls = self.cls
        fields: Dict[str, _Field] = {}
        for base in cls.__mro__[-2:0:-1]:
            spec = base.__dict__.get("__record__")
            if spec is not None:
                fields.update(spec.fields)
        for name, annotation in cls.__dict__.get("__annotations__", {}).items():
            if not isinstance(annotation, str) or annotation.startswith(_PSEUDO_FIELDS):
                raise TypeError(
                    f"{cls.__qualname__}.{name}: a record's annotations are fields, as strings "
                    "(from __future__ import annotations)"
                )
            f = self.given.get(name) or _Field(cls.__dict__.get(name, MISSING))
            f.name, f.type = name, annotation
            fields[name] = f  # a field declared again keeps its place
        seen_default = ""
        for f in fields.values():
            if f.default is not MISSING or f.default_factory is not MISSING:
                seen_default = f.name
            elif seen_default:
                raise TypeError(
                    f"{cls.__qualname__}: non-default argument {f.name!r} follows default argument {seen_default!r}"
                )
        self.fields, self.names = fields, tuple(fields)
        self.shown = tuple(f.name for f in fields.values() if f.repr)
        self.compared = _values_of(tuple(f.name for f in fields.values() if f.compare))


def field(*, default: Any = MISSING, default_factory: Any = MISSING, repr: bool = True, compare: bool = True) -> Any:
    """A field's default or default factory, and whether ``repr`` and ``==`` use it."""
    if default is not MISSING and default_factory is not MISSING:
        raise ValueError("cannot specify both default and default_factory")
    return _Field(default, default_factory, repr, compare)


def dataclass(cls: Optional[T] = None, *, frozen: bool = False) -> Any:
    """``@dataclass`` or ``@dataclass(frozen=True)``: see the module docstring."""
    if cls is None:
        return lambda cls: _record(cls, frozen)
    return _record(cls, frozen)


def _spec_of(cls: type) -> Optional[_Spec]:
    for klass in cls.__mro__:
        spec: Optional[_Spec] = klass.__dict__.get("__record__")
        if spec is not None:
            return spec
    return None


def names(cls: type) -> Tuple[str, ...]:
    """A dataclass's field names, in order: ``dataclasses.fields`` without
    importing ``dataclasses`` when ``cls`` is a record."""
    spec = _spec_of(cls)
    if spec is not None:
        return spec.names
    import dataclasses

    return tuple(f.name for f in dataclasses.fields(cls))


def replace(obj: Any, /, **changes: Any) -> Any:
    """``dataclasses.replace`` of a record (without importing ``dataclasses``):
    a new one, its fields those of ``obj`` but for ``changes``."""
    values = {name: getattr(obj, name) for name in names(type(obj))}
    values.update(changes)
    return obj.__class__(**values)


# -- a record's methods, closed over its fields -----------------------------------------


def _values_of(names: Tuple[str, ...]) -> Callable[[Any], Tuple[Any, ...]]:
    """``lambda o: (o.a, o.b)`` (``attrgetter`` gives a tuple only for two names or more)."""
    if len(names) > 1:
        return attrgetter(*names)
    if names:
        one = attrgetter(names[0])
        return lambda o: (one(o),)
    return lambda o: ()


def _bind(spec: _Spec, args: Tuple[Any, ...], kwargs: Dict[str, Any]) -> Dict[str, Any]:
    """The fields' values of ``__init__(*args, **kwargs)``, defaults included,
    or the ``TypeError`` a dataclass's ``__init__`` raises."""
    call = f"{spec.cls.__qualname__}.__init__()"
    order, fields = spec.names, spec.fields
    if len(args) > len(order):
        required = sum(1 for f in fields.values() if f.default is MISSING and f.default_factory is MISSING)
        takes = f"{len(order) + 1}" if required == len(order) else f"from {required + 1} to {len(order) + 1}"
        raise TypeError(f"{call} takes {takes} positional arguments but {len(args) + 1} were given")
    given = dict(zip(order, args))
    for key in kwargs:
        if key in given:
            raise TypeError(f"{call} got multiple values for argument {key!r}")
        if key not in fields:
            raise TypeError(f"{call} got an unexpected keyword argument {key!r}")
    given.update(kwargs)
    values = {}
    missing = []
    for name in order:
        f = fields[name]
        if name in given:
            values[name] = given[name]
        elif f.default_factory is not MISSING:
            values[name] = f.default_factory()
        elif f.default is not MISSING:
            values[name] = f.default
        else:
            missing.append(repr(name))
    if missing:
        listed = missing[0] if len(missing) == 1 else f"{', '.join(missing[:-1])} and {missing[-1]}"
        plural = "argument" if len(missing) == 1 else "arguments"
        raise TypeError(f"{call} missing {len(missing)} required positional {plural}: {listed}")
    return values


def _init(spec: _Spec) -> Callable[..., None]:
    def __init__(self: Any, *args: Any, **kwargs: Any) -> None:
        order = spec.names
        if len(args) == len(order) and not kwargs:  # every field given, in order: the common case
            self.__dict__.update(zip(order, args))
        else:
            self.__dict__.update(_bind(spec, args, kwargs))
        if spec.post_init:
            self.__post_init__()

    return __init__


def _repr(spec: _Spec) -> Callable[[Any], str]:
    running: Set[Tuple[int, int]] = set()  # a record inside itself shows as "..."

    def __repr__(self: Any) -> str:
        key = (id(self), get_ident())
        if key in running:
            return "..."
        running.add(key)
        try:
            inner = ", ".join([f"{name}={getattr(self, name)!r}" for name in spec.shown])
        finally:
            running.discard(key)
        return f"{self.__class__.__qualname__}({inner})"

    return __repr__


def _eq(spec: _Spec) -> Callable[[Any, Any], Any]:
    def __eq__(self: Any, other: Any) -> Any:
        if other.__class__ is self.__class__:
            values = spec.compared
            return values(self) == values(other)
        return NotImplemented

    return __eq__


def _hash(spec: _Spec) -> Callable[[Any], int]:
    def __hash__(self: Any) -> int:
        return hash(spec.compared(self))

    return __hash__


def _frozen_error(name: str) -> Exception:
    from dataclasses import FrozenInstanceError

    return FrozenInstanceError(f"cannot assign to field {name!r}")


def _frozen(spec: _Spec) -> Tuple[Callable[..., None], Callable[..., None]]:
    owner: Any = spec.cls

    def __setattr__(self: Any, name: str, value: Any) -> None:
        if type(self) is owner or name in spec.fields:
            raise _frozen_error(name)
        super(owner, self).__setattr__(name, value)

    def __delattr__(self: Any, name: str) -> None:
        if type(self) is owner or name in spec.fields:
            raise _frozen_error(name)
        super(owner, self).__delattr__(name)

    return __setattr__, __delattr__


# -- what ``dataclasses``, ``inspect`` and ``match`` read, built when first read ---------------


class _Lazy:
    """A class attribute of every record, built from the record's fields on
    first access; ``cached``, the value then replaces it on that record."""

    __slots__ = ("name", "build", "cached")

    def __init__(self, name: str, build: Callable[[_Spec], Any], cached: bool) -> None:
        self.name, self.build, self.cached = name, build, cached

    def __get__(self, obj: Any, owner: Optional[type] = None) -> Any:
        klass = type(obj) if owner is None else owner
        spec = _spec_of(klass)
        if spec is None:  # pragma: no cover - only a record has this attribute
            raise AttributeError(self.name)
        if not self.cached:
            return self.build(spec) if spec.cls is klass else None
        value = self.build(spec)
        type.__setattr__(spec.cls, self.name, value)
        return value


def _dataclass_fields(spec: _Spec) -> Dict[str, Any]:
    import dataclasses

    found = {}
    for f in spec.fields.values():
        kinds: Dict[str, Any] = {"repr": f.repr, "compare": f.compare}
        if f.default is not MISSING:
            kinds["default"] = f.default
        if f.default_factory is not MISSING:
            kinds["default_factory"] = f.default_factory
        made = dataclasses.field(**kinds, **_KW_ONLY)
        made.name, made.type = f.name, f.type
        made._field_type = dataclasses._FIELD  # type: ignore[attr-defined]  # what fields() keeps
        found[f.name] = made
    return found


#: A field of a dataclass is not keyword-only (Python 3.10+ says so).
_KW_ONLY: Dict[str, Any] = {"kw_only": False} if sys.version_info >= (3, 10) else {}

#: ``dataclass()``'s parameters as a record has them (what any Python's ``_DataclassParams`` holds).
_PARAMS = {
    "init": True,
    "repr": True,
    "eq": True,
    "order": False,
    "unsafe_hash": False,
    "match_args": True,
    "kw_only": False,
    "slots": False,
    "weakref_slot": False,
}


def _dataclass_params(spec: _Spec) -> Any:
    import dataclasses

    kind = dataclasses._DataclassParams  # type: ignore[attr-defined]
    params = object.__new__(kind)
    values = dict(_PARAMS, frozen=spec.frozen)
    for name in kind.__slots__:
        setattr(params, name, values[name])
    return params


class _Factory:
    def __repr__(self) -> str:
        return "<factory>"


def _signature(spec: _Spec) -> Any:
    import inspect

    parameters = []
    for f in spec.fields.values():
        default = _Factory() if f.default_factory is not MISSING else f.default
        parameters.append(
            inspect.Parameter(
                f.name,
                inspect.Parameter.POSITIONAL_OR_KEYWORD,
                default=inspect.Parameter.empty if default is MISSING else default,
                annotation=f.type,
            )
        )
    return inspect.Signature(parameters, return_annotation=None)


_DATACLASS_FIELDS = _Lazy("__dataclass_fields__", _dataclass_fields, cached=True)
_DATACLASS_PARAMS = _Lazy("__dataclass_params__", _dataclass_params, cached=True)
_MATCH_ARGS = _Lazy("__match_args__", lambda spec: spec.names, cached=True)
_SIGNATURE = _Lazy("__signature__", _signature, cached=False)  # a subclass's is its own


# -- the decorator -------------------------------------------------------------------------

#: Annotations a dataclass treats as no field, which a record does not support.
_PSEUDO_FIELDS = ("ClassVar", "typing.ClassVar", "InitVar", "dataclasses.InitVar", "KW_ONLY", "dataclasses.KW_ONLY")


def _record(cls: T, frozen: bool) -> T:
    own = cls.__dict__
    qualname = cls.__qualname__
    if "__slots__" in own:
        raise TypeError(f"{qualname}: a record keeps its fields in __dict__ (no __slots__)")
    base_frozen = None
    for base in cls.__mro__[-2:0:-1]:
        spec = base.__dict__.get("__record__")
        if spec is not None:
            base_frozen = spec.frozen
        elif "__dataclass_fields__" in base.__dict__:
            raise TypeError(f"{qualname}: a record extends records only, not the dataclass {base.__qualname__}")
    if base_frozen is not None and base_frozen != frozen:
        raise TypeError(f"{qualname}: frozen and not frozen records cannot extend each other")
    given: Dict[str, _Field] = {}
    for name in own.get("__annotations__", ()):
        value = own.get(name)
        if value.__class__ is _Field:  # field(...): the class attribute is its default, as a dataclass has it
            given[name] = value
            if value.default is MISSING:
                delattr(cls, name)
            else:
                setattr(cls, name, value.default)
    spec = _Spec(cls, frozen, given)

    methods: Dict[str, Any] = {}
    if "__init__" not in own:
        methods["__init__"] = _init(spec)
    if "__repr__" not in own:
        methods["__repr__"] = _repr(spec)
    if "__eq__" not in own:
        methods["__eq__"] = _eq(spec)
    explicit_hash = own.get("__hash__", MISSING)
    if explicit_hash is MISSING or (explicit_hash is None and "__eq__" in own):
        methods["__hash__"] = _hash(spec) if frozen else None
    if frozen:
        if "__setattr__" in own or "__delattr__" in own:
            raise TypeError(f"cannot overwrite attribute __setattr__ or __delattr__ in class {cls.__name__}")
        methods["__setattr__"], methods["__delattr__"] = _frozen(spec)
    for name, method in methods.items():
        if method is not None:
            method.__qualname__ = f"{qualname}.{name}"
        type.__setattr__(cls, name, method)
    type.__setattr__(cls, "__record__", spec)
    type.__setattr__(cls, "__dataclass_fields__", _DATACLASS_FIELDS)
    type.__setattr__(cls, "__dataclass_params__", _DATACLASS_PARAMS)
    type.__setattr__(cls, "__signature__", _SIGNATURE)
    if "__match_args__" not in own:
        type.__setattr__(cls, "__match_args__", _MATCH_ARGS)
    if "__replace__" not in own:
        type.__setattr__(cls, "__replace__", replace)  # copy.replace (Python 3.13)
    if not own.get("__doc__"):
        type.__setattr__(cls, "__doc__", f"{cls.__name__}({', '.join(spec.names)})")
    return cls


# -- named tuples ------------------------------------------------------------------------------


#: ``tuple.__new__``, what every named tuple's ``__new__`` calls.
_TUPLE = tuple.__new__

# One ``__new__`` per number of fields, its parameters renamed for each class
# (``CodeType.replace``): the arguments are bound in C, as by the ``__new__``
# ``collections.namedtuple`` compiles, and nothing is compiled here.


def _new0(_cls: Any) -> Any:
    return _TUPLE(_cls, ())


def _new1(_cls: Any, a: Any) -> Any:
    return _TUPLE(_cls, (a,))


def _new2(_cls: Any, a: Any, b: Any) -> Any:
    return _TUPLE(_cls, (a, b))


def _new3(_cls: Any, a: Any, b: Any, c: Any) -> Any:
    return _TUPLE(_cls, (a, b, c))


def _new4(_cls: Any, a: Any, b: Any, c: Any, d: Any) -> Any:
    return _TUPLE(_cls, (a, b, c, d))


def _new5(_cls: Any, a: Any, b: Any, c: Any, d: Any, e: Any) -> Any:
    return _TUPLE(_cls, (a, b, c, d, e))


def _new6(_cls: Any, a: Any, b: Any, c: Any, d: Any, e: Any, f: Any) -> Any:
    return _TUPLE(_cls, (a, b, c, d, e, f))


def _new7(_cls: Any, a: Any, b: Any, c: Any, d: Any, e: Any, f: Any, g: Any) -> Any:
    return _TUPLE(_cls, (a, b, c, d, e, f, g))


def _new8(_cls: Any, a: Any, b: Any, c: Any, d: Any, e: Any, f: Any, g: Any, h: Any) -> Any:
    return _TUPLE(_cls, (a, b, c, d, e, f, g, h))


def _new9(_cls: Any, a: Any, b: Any, c: Any, d: Any, e: Any, f: Any, g: Any, h: Any, i: Any) -> Any:
    return _TUPLE(_cls, (a, b, c, d, e, f, g, h, i))


def _new10(_cls: Any, a: Any, b: Any, c: Any, d: Any, e: Any, f: Any, g: Any, h: Any, i: Any, j: Any) -> Any:
    return _TUPLE(_cls, (a, b, c, d, e, f, g, h, i, j))


def _new11(_cls: Any, a: Any, b: Any, c: Any, d: Any, e: Any, f: Any, g: Any, h: Any, i: Any, j: Any, k: Any) -> Any:
    return _TUPLE(_cls, (a, b, c, d, e, f, g, h, i, j, k))


def _new12(
    _cls: Any, a: Any, b: Any, c: Any, d: Any, e: Any, f: Any, g: Any, h: Any, i: Any, j: Any, k: Any, m: Any
) -> Any:
    return _TUPLE(_cls, (a, b, c, d, e, f, g, h, i, j, k, m))


_NEW: Tuple[Callable[..., Any], ...] = (
    _new0,
    _new1,
    _new2,
    _new3,
    _new4,
    _new5,
    _new6,
    _new7,
    _new8,
    _new9,
    _new10,
    _new11,
    _new12,
)

if sys.version_info >= (3, 11):

    def _named(code: CodeType, name: str) -> CodeType:
        return code.replace(co_name=name, co_qualname=name)

else:  # pragma: no cover - Python 3.9 and 3.10: a code object names itself only

    def _named(code: CodeType, name: str) -> CodeType:
        return code.replace(co_name=name)


def _tuple_new(name: str, fields: Tuple[str, ...], defaults: Dict[str, Any]) -> Callable[..., Any]:
    if len(fields) >= len(_NEW):
        raise TypeError(f"{name}: a NamedTuple of codexmini._dataclasses has at most {len(_NEW) - 1} fields")
    template = _NEW[len(fields)]
    code = _named(template.__code__.replace(co_varnames=("_cls", *fields)), f"{name}.__new__")
    new = FunctionType(code, template.__globals__, "__new__", tuple(defaults.values()) or None)
    new.__qualname__ = f"{name}.__new__"
    return new


def _make(cls: Any, iterable: Iterable[Any]) -> Any:
    result = tuple.__new__(cls, iterable)
    if len(result) != len(cls._fields):
        raise TypeError(f"Expected {len(cls._fields)} arguments, got {len(result)}")
    return result


def _tuple_replace(self: Any, /, **changes: Any) -> Any:
    result = self._make(map(changes.pop, self._fields, self))
    if changes:
        raise ValueError(f"Got unexpected field names: {list(changes)!r}")
    return result


def _tuple_repr(self: Any) -> str:
    inner = ", ".join([f"{name}={value!r}" for name, value in zip(self._fields, self)])
    return f"{self.__class__.__name__}({inner})"


def _asdict(self: Any) -> Dict[str, Any]:
    return dict(zip(self._fields, self))


def _getnewargs(self: Any) -> Tuple[Any, ...]:
    return tuple(self)


#: What a named tuple's class body may not define (``typing.NamedTuple`` refuses them too).
_TUPLE_OWN = frozenset(
    {
        "__new__",
        "__init__",
        "__slots__",
        "__getnewargs__",
        "_fields",
        "_field_defaults",
        "_make",
        "_replace",
        "_asdict",
        "_source",
    }
)


class _NamedTupleMeta(type):
    def __new__(mcs, name: str, bases: Tuple[type, ...], namespace: Dict[str, Any]) -> Any:
        if not bases:  # NamedTuple itself
            return super().__new__(mcs, name, bases, namespace)
        if bases != (NamedTuple,):
            raise TypeError(f"{name}: a NamedTuple of codexmini._dataclasses has no other base")
        fields = tuple(namespace.get("__annotations__", {}))
        defaults: Dict[str, Any] = {}
        for field_name in fields:
            if field_name in namespace:
                defaults[field_name] = namespace.pop(field_name)
            elif defaults:
                raise TypeError(
                    f"Non-default namedtuple field {field_name} cannot follow default field"
                    f"{'s' if len(defaults) > 1 else ''} {', '.join(defaults)}"
                )
        refused = _TUPLE_OWN.intersection(namespace)
        if refused:
            raise AttributeError(f"Cannot overwrite NamedTuple attribute {min(refused)}")
        namespace["__slots__"] = ()
        namespace["_fields"] = namespace["__match_args__"] = fields
        namespace["_field_defaults"] = defaults
        namespace["__new__"] = _tuple_new(name, fields, defaults)
        namespace["_make"] = classmethod(_make)
        namespace["_replace"] = _tuple_replace
        namespace["_asdict"] = _asdict
        namespace["__getnewargs__"] = _getnewargs
        namespace.setdefault("__repr__", _tuple_repr)
        if namespace.get("__doc__") is None:
            namespace["__doc__"] = f"{name}({', '.join(fields)})"
        for index, field_name in enumerate(fields):
            namespace[field_name] = _tuplegetter(index, f"Alias for field number {index}")
        return type(name, (tuple,), namespace)


class NamedTuple(metaclass=_NamedTupleMeta):
    """``class Point(NamedTuple): x: int; y: int = 0``: a ``tuple`` subclass with
    named fields, as ``typing.NamedTuple`` makes one (see the module docstring)."""


__all__ = ["MISSING", "NamedTuple", "dataclass", "field", "names", "replace"]
