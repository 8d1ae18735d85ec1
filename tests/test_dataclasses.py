"""The package's dataclasses and named tuples (``codexmini._dataclasses``) behave as the standard library's.

Each sample class is made twice from the same body -- once by
``dataclasses.dataclass`` (or ``typing.NamedTuple``), once by ``_dataclasses`` --
and the two are held to the same answers: fields, ``repr``, ``==`` and
``hash``, what a frozen one refuses, ``dataclasses.replace`` / ``asdict`` /
``fields``, ``inspect.signature``, the errors of a bad call, pickling.  Then
every record the package defines is worked out (its fields are read when
first needed, so a mistake in one would otherwise wait for its first use).
"""

from __future__ import annotations

import copy
import dataclasses
import importlib
import inspect
import pickle
import sys
import typing
from typing import Any, Dict, List, Optional, Tuple

import pytest

from codexmini import _dataclasses
from tests.test_imports import MODULES

# -- samples: a class body, made both ways ------------------------------------------------


#: Stands for ``field(...)`` in a sample: each maker puts its own ``field`` there.
class FIELD:
    def __init__(self, **kwargs: Any) -> None:
        self.kwargs = kwargs


def _post_init(self: Any) -> None:
    if self.size < 0:
        raise ValueError("size < 0")
    object.__setattr__(self, "items", tuple(self.items))


#: name → (docstring, annotations, class attributes)
SAMPLES: Dict[str, Tuple[str, Dict[str, str], Dict[str, Any]]] = {
    "Plain": (
        "A plain record.",
        {"name": "str", "count": "int", "tags": "List[str]"},
        {"count": 0, "tags": FIELD(default_factory=list)},
    ),
    "Secret": (
        "repr=False and compare=False fields.",
        {"user": "str", "key": "str", "seen": "int"},
        {"key": FIELD(default="", repr=False), "seen": FIELD(default=0, compare=False)},
    ),
    "Checked": (
        "A __post_init__.",
        {"size": "int", "items": "Tuple[str, ...]"},
        {"items": (), "__post_init__": _post_init},
    ),
    "OwnMethods": (
        "Its own __repr__ and __eq__: kept.",
        {"x": "int"},
        {"__repr__": lambda self: "<own>", "__eq__": lambda self, other: True},
    ),
    "Empty": ("No field at all.", {}, {}),
}


def _make(name: str, frozen: bool, std: bool) -> type:
    doc, annotations, attributes = SAMPLES[name]
    make_field = dataclasses.field if std else _dataclasses.field
    qualname = f"{'Std' if std else 'Our'}{name}{'Frozen' if frozen else ''}"
    namespace: Dict[str, Any] = {"__module__": __name__, "__qualname__": qualname, "__doc__": doc}
    namespace["__annotations__"] = dict(annotations)
    for key, value in attributes.items():
        namespace[key] = make_field(**value.kwargs) if isinstance(value, FIELD) else value
    decorate = dataclasses.dataclass(frozen=frozen) if std else _dataclasses.dataclass(frozen=frozen)
    cls: type = decorate(type(qualname, (), namespace))
    globals()[qualname] = cls  # pickle finds it by name
    return cls


def both(name: str, frozen: bool) -> Tuple[type, type]:
    std, ours = _make(name, frozen, std=True), _make(name, frozen, std=False)
    assert "__record__" in vars(ours) and "__record__" not in vars(std)
    return std, ours


def _args(cls: type) -> Dict[str, Any]:
    values = {"name": "n", "count": 3, "tags": ["a"], "user": "u", "key": "k" * 9, "seen": 2, "size": 1, "x": 1}
    return {f.name: values[f.name] for f in dataclasses.fields(cls) if f.name in values}


def _hash_of(value: Any) -> Any:
    try:
        return hash(value)
    except TypeError as exc:
        return str(exc)


@pytest.mark.parametrize("frozen", [True, False])
@pytest.mark.parametrize("name", sorted(SAMPLES))
def test_record_agrees_with_dataclass(name: str, frozen: bool) -> None:
    std, ours = both(name, frozen)
    assert dataclasses.is_dataclass(ours) and dataclasses.is_dataclass(ours(**_args(std)))
    # fields, as dataclasses reads them
    shape = lambda cls: [  # noqa: E731
        (f.name, f.type, f.default, f.default_factory, f.repr, f.compare, f.init, f.hash)
        for f in dataclasses.fields(cls)
    ]
    assert shape(ours) == shape(std)
    assert _dataclasses.names(ours) == _dataclasses.names(std) == tuple(f.name for f in dataclasses.fields(std))
    assert vars(ours).get("__doc__") == vars(std).get("__doc__")
    assert ours.__match_args__ == getattr(std, "__match_args__", ours.__match_args__)
    assert str(inspect.signature(ours)) == str(inspect.signature(std))
    assert ours.__dataclass_params__.frozen is frozen  # type: ignore[attr-defined]
    for attribute in ("count", "key", "seen", "items"):  # a default is the class attribute, as a dataclass has it
        assert getattr(ours, attribute, None) == getattr(std, attribute, None)
    assert not hasattr(ours, "tags") and not hasattr(std, "tags")
    # instances
    a_std, a_ours = std(**_args(std)), ours(**_args(std))
    positional = [getattr(a_ours, n) for n in _dataclasses.names(ours)]
    assert ours(*positional) == a_ours
    assert repr(a_ours) == repr(a_std).replace(std.__qualname__, ours.__qualname__)
    assert (a_ours == ours(**_args(std))) == (a_std == std(**_args(std)))
    if name != "OwnMethods":
        assert a_ours != a_std  # another class: NotImplemented both ways, then identity
    assert dataclasses.asdict(a_ours) == dataclasses.asdict(a_std)
    assert dataclasses.astuple(a_ours) == dataclasses.astuple(a_std)
    if _dataclasses.names(ours):
        first = _dataclasses.names(ours)[0]
        changed = dataclasses.replace(a_ours, **{first: getattr(a_std, first)})
        assert changed == a_ours and changed is not a_ours
        assert _dataclasses.replace(a_ours) == a_ours
    if std.__hash__ is None:
        assert ours.__hash__ is None
    else:
        assert _hash_of(a_ours) == _hash_of(a_std)
    if frozen:
        for attribute in [*_dataclasses.names(ours), "other"]:
            with pytest.raises(dataclasses.FrozenInstanceError) as raised:
                setattr(a_ours, attribute, 1)
            with pytest.raises(dataclasses.FrozenInstanceError):
                setattr(a_std, attribute, 1)
            assert str(raised.value) == f"cannot assign to field {attribute!r}"
            with pytest.raises(dataclasses.FrozenInstanceError):
                delattr(a_ours, attribute)
    else:
        if _dataclasses.names(ours):
            setattr(a_ours, first, "changed")
            assert getattr(a_ours, first) == "changed"
    assert pickle.loads(pickle.dumps(a_ours)) == a_ours
    assert copy.copy(a_ours) == a_ours and copy.deepcopy(a_ours) == a_ours


@pytest.mark.parametrize("frozen", [True, False])
def test_record_bad_calls_raise_type_errors_as_dataclasses(frozen: bool) -> None:
    std, ours = both("Plain", frozen)
    calls: List[Tuple[Tuple[Any, ...], Dict[str, Any]]] = [
        ((), {}),  # missing
        (("n", 1, [], "extra"), {}),  # too many
        (("n",), {"name": "m"}),  # twice
        (("n",), {"colour": "red"}),  # unknown
    ]
    for args, kwargs in calls:
        with pytest.raises(TypeError) as from_std:
            std(*args, **kwargs)
        with pytest.raises(TypeError) as from_ours:
            ours(*args, **kwargs)
        # Python 3.10+ names the class in the message; both say the same thing.
        expected = str(from_std.value).split("__init__()", 1)[-1]
        assert str(from_ours.value).endswith(expected), (str(from_ours.value), str(from_std.value))
    with pytest.raises(TypeError, match=r"missing 2 required positional arguments: 'size' and 'x'"):
        _dataclasses.dataclass(type("Two", (), {"__annotations__": {"size": "int", "x": "int"}}))()


def test_record_default_factory_is_called_per_instance_and_post_init_runs() -> None:
    _, ours = both("Plain", True)
    a, b = ours("a"), ours("b")
    assert a.tags == [] and a.tags is not b.tags
    _, checked = both("Checked", True)
    assert checked(2, ["x"]).items == ("x",)
    with pytest.raises(ValueError, match="size < 0"):
        checked(-1)


def test_record_repr_of_a_record_inside_itself() -> None:
    _, ours = both("Plain", False)
    a = ours("a")
    a.tags.append(a)
    assert repr(a) == f"{ours.__qualname__}(name='a', count=0, tags=[...])"


def test_record_subclasses() -> None:
    _, base = both("Plain", True)

    class Plain(base):  # type: ignore[valid-type,misc]  # not decorated: the base's fields and methods
        pass

    assert _dataclasses.names(Plain) == _dataclasses.names(base)
    assert repr(Plain("x")) == f"{Plain.__qualname__}(name='x', count=0, tags=[])"
    assert inspect.signature(Plain) is not None

    @_dataclasses.dataclass(frozen=True)
    class More(base):  # type: ignore[valid-type,misc]
        """One more field; a field declared again keeps its place."""

        extra: str = "e"
        name: str = "default"

    assert _dataclasses.names(More) == ("name", "count", "tags", "extra")
    assert More().name == "default" and More("n", 1, [], "x") == More("n", 1, [], "x")
    with pytest.raises(dataclasses.FrozenInstanceError):
        More().extra = "y"  # type: ignore[misc]

    @dataclasses.dataclass(frozen=True)
    class Std(base):  # type: ignore[valid-type,misc]  # the real decorator on a record: it reads our fields
        """A dataclass over a record."""

        extra: int = 0

    assert [f.name for f in dataclasses.fields(Std)] == ["name", "count", "tags", "extra"]
    assert Std("n").extra == 0 and Std("n") == Std("n")
    with pytest.raises(TypeError, match="non-frozen"):
        dataclasses.dataclass(type("Thaw", (base,), {"__annotations__": {"z": "int"}, "z": 0}))


class Mixin:
    """A plain base between records."""

    def shout(self) -> str:
        return "!"


def test_record_keeps_what_the_class_defines_and_passes_through_a_plain_base() -> None:
    def own_init(self: Any, a: int) -> None:
        object.__setattr__(self, "a", a * 2)

    namespace = {
        "__annotations__": {"a": "int"},
        "__init__": own_init,
        "__hash__": lambda self: 7,
        "__match_args__": ("own",),
        "__replace__": None,
        "__doc__": "Its own.",
    }
    cls = _dataclasses.dataclass(frozen=True)(type("Own", (Mixin,), namespace))
    assert cls(2).a == 4 and hash(cls(2)) == 7 and cls.__match_args__ == ("own",) and cls.__replace__ is None
    assert cls(2) == cls(2) and cls(2).shout() == "!" and _dataclasses.names(cls) == ("a",)
    with pytest.raises(AttributeError):
        vars(cls)["__record__"].nothing  # noqa: B018 - only the worked-out fields are computed

    _, frozen = both("Plain", True)
    sub = type("Sub", (frozen,), {})("n")  # a subclass's own attributes are its business
    sub.other = 1
    assert sub.other == 1
    del sub.other
    assert not hasattr(sub, "other")
    with pytest.raises(dataclasses.FrozenInstanceError):
        sub.name = "m"


def test_record_refuses_what_it_does_not_support() -> None:
    def made(namespace: Dict[str, Any], frozen: bool = True, bases: Tuple[type, ...] = ()) -> type:
        cls = _dataclasses.dataclass(frozen=frozen)(type("Bad", bases, namespace))
        _dataclasses.names(cls)  # fields are worked out on first use
        return cls

    with pytest.raises(TypeError, match="no __slots__"):
        made({"__slots__": ("a",), "__annotations__": {"a": "int"}})
    for annotation in ("ClassVar[int]", "typing.ClassVar[int]", "InitVar[int]"):
        with pytest.raises(TypeError, match="annotations are fields"):
            made({"__annotations__": {"a": annotation}})
    with pytest.raises(TypeError, match="annotations are fields"):
        made({"__annotations__": {"a": int}})
    with pytest.raises(TypeError, match="non-default argument 'b' follows default argument 'a'"):
        made({"__annotations__": {"a": "int", "b": "int"}, "a": 0})
    with pytest.raises(TypeError, match="cannot overwrite attribute __setattr__"):
        made({"__setattr__": lambda self, name, value: None})
    with pytest.raises(ValueError, match="both default and default_factory"):
        _dataclasses.field(default=1, default_factory=list)
    frozen = made({"__annotations__": {"a": "int"}})
    with pytest.raises(TypeError, match="frozen and not frozen"):
        made({}, frozen=False, bases=(frozen,))
    std = dataclasses.dataclass(type("Std", (), {"__annotations__": {"a": "int"}}))
    with pytest.raises(TypeError, match="extends records only"):
        made({}, bases=(std,))


def test_record_names_of_a_dataclass_and_a_missing_doc() -> None:
    std = dataclasses.dataclass(type("Std", (), {"__annotations__": {"a": "int", "b": "str"}}))
    assert _dataclasses.names(std) == ("a", "b")
    ours = _dataclasses.dataclass(type("NoDoc", (), {"__annotations__": {"a": "int", "b": "str"}}))
    assert ours.__doc__ == "NoDoc(a, b)"
    assert repr(_dataclasses.MISSING) == "MISSING"
    assert (
        repr(
            inspect.signature(
                _dataclasses.dataclass(
                    type("F", (), {"__annotations__": {"a": "list"}, "a": _dataclasses.field(default_factory=list)})
                )
            )
        ).count("<factory>")
        == 1
    )


@pytest.mark.skipif(sys.version_info < (3, 13), reason="copy.replace is Python 3.13's")
def test_record_copy_replace() -> None:  # pragma: no cover - run on 3.13 only
    _, ours = both("Plain", True)
    assert copy.replace(ours("a"), count=2) == ours("a", 2)  # type: ignore[attr-defined]


# -- named tuples ---------------------------------------------------------------------------


def _point(base: Any, qualname: str) -> type:
    class Point(base):  # type: ignore[valid-type,misc]
        """A point, with a method."""

        x: int
        y: int = 0
        label: Optional[str] = None

        def norm(self) -> int:
            return abs(self.x) + abs(self.y)

    Point.__qualname__ = qualname
    globals()[qualname] = Point  # pickle finds it by name
    return Point


def test_named_tuple_agrees_with_typing() -> None:
    std, ours = _point(typing.NamedTuple, "StdPoint"), _point(_dataclasses.NamedTuple, "OurPoint")
    for cls in (std, ours):
        assert cls.__mro__[1:] == (tuple, object)
    assert ours._fields == std._fields and ours._field_defaults == std._field_defaults  # type: ignore[attr-defined]
    assert ours.__match_args__ == getattr(std, "__match_args__", ours._fields)  # type: ignore[attr-defined]  # (3.10+)
    assert ours.__doc__ == std.__doc__ and ours.x.__doc__ == std.x.__doc__  # type: ignore[attr-defined]
    for args, kwargs in [((1,), {}), ((1, 2), {}), ((1,), {"label": "a"}), ((), {"x": 3, "y": 4}), ((1, 2, "z"), {})]:
        a, b = std(*args, **kwargs), ours(*args, **kwargs)
        assert tuple(a) == tuple(b) and b == tuple(a) and repr(a) == repr(b)  # (both named Point)
        assert b.x == a.x and b.y == a.y and b.label == a.label and b.norm() == a.norm()
        assert b._asdict() == a._asdict() and b._replace(y=9) == a._replace(y=9)  # type: ignore[attr-defined]
        assert type(b._replace(y=9)) is ours and ours._make(tuple(a)) == b  # type: ignore[attr-defined]
        assert pickle.loads(pickle.dumps(b)) == b and type(copy.copy(b)) is ours
        assert hash(a) == hash(b)
    for args, kwargs in [((), {}), ((1, 2, 3, 4), {}), ((1,), {"x": 2}), ((1,), {"z": 2})]:
        with pytest.raises(TypeError) as from_std:
            std(*args, **kwargs)
        with pytest.raises(TypeError) as from_ours:
            ours(*args, **kwargs)
        assert str(from_ours.value).split("() ", 1)[-1] == str(from_std.value).split("() ", 1)[-1]
    with pytest.raises(TypeError, match="Expected 3 arguments, got 2"):
        ours._make((1, 2))  # type: ignore[attr-defined]
    with pytest.raises(ValueError, match="unexpected field names"):
        ours(1)._replace(z=1)  # type: ignore[attr-defined]
    with pytest.raises(AttributeError):
        ours(1).x = 2  # type: ignore[misc]


def test_named_tuple_refuses_what_typing_refuses() -> None:
    with pytest.raises(TypeError, match="Non-default namedtuple field b cannot follow default field a"):
        type.__call__(
            type(_dataclasses.NamedTuple),
            "Bad",
            (_dataclasses.NamedTuple,),
            {"__annotations__": {"a": "int", "b": "int"}, "a": 0},
        )
    with pytest.raises(AttributeError, match="Cannot overwrite NamedTuple attribute _make"):
        type(_dataclasses.NamedTuple)("Bad", (_dataclasses.NamedTuple,), {"__annotations__": {}, "_make": None})
    with pytest.raises(TypeError, match="no other base"):
        type(_dataclasses.NamedTuple)("Bad", (_dataclasses.NamedTuple, int), {})
    bare = type(_dataclasses.NamedTuple)("Bare", (_dataclasses.NamedTuple,), {"__annotations__": {"a": "int"}})
    assert bare.__doc__ == "Bare(a)" and repr(bare(1)) == "Bare(a=1)"
    many = {f"f{i}": "int" for i in range(13)}
    with pytest.raises(TypeError, match="at most 12 fields"):
        type(_dataclasses.NamedTuple)("Many", (_dataclasses.NamedTuple,), {"__annotations__": many})
    for count in range(13):  # each number of fields has its own __new__
        fields = dict(list(many.items())[:count])
        made = type(_dataclasses.NamedTuple)(f"N{count}", (_dataclasses.NamedTuple,), {"__annotations__": fields})
        assert made(*range(count)) == tuple(range(count)) and made._fields == tuple(fields)  # type: ignore[attr-defined]
    assert made(*range(11), f11=7).f11 == 7  # type: ignore[attr-defined]


# -- the package's own records ---------------------------------------------------------------


def _package_records() -> List[type]:
    found = []
    for name in sorted(MODULES):
        if name.rsplit(".", 1)[-1] == "__main__":
            continue
        module = importlib.import_module(f"codexmini.{name}")
        for value in vars(module).values():
            if isinstance(value, type) and value.__module__ == module.__name__ and "__record__" in vars(value):
                found.append(value)
    return found


def test_record_every_package_record_works_out_its_fields() -> None:
    records = _package_records()
    assert len(records) >= 25  # the events, the approval values, the endpoint ...
    for cls in records:
        names = _dataclasses.names(cls)
        assert names == tuple(f.name for f in dataclasses.fields(cls)), cls
        assert str(inspect.signature(cls)).startswith("("), cls
