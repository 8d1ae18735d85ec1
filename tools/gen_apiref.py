#!/usr/bin/env python3
"""Write ``docs/api.md``, the API reference, from the docstrings of the public names.

Usage::

    python tools/gen_apiref.py            # rewrite docs/api.md (make apiref)
    python tools/gen_apiref.py --check    # exit 1 if docs/api.md is stale

What it documents: ``codexmini.__all__``, grouped as the comments of the
``_EXPORTS`` table in ``codexmini/__init__.py`` group it (a name added to the
table lands in its group), then ``codexmini.sync`` and ``codexmini.testing``
(each module's ``__all__``), then the type aliases their signatures name.
For a class: its constructor, docstring, fields (a dataclass's, with their
types, defaults and the docs its docstring gives them), attributes and public
methods and properties; for a function: its signature and docstring.

The output does not depend on the interpreter that writes it (the suite
checks it on every Python of ``make test-matrix``): signatures, annotations,
defaults and aliases are the *source text* of their expressions, read with
``ast`` from the module files (every module uses ``from __future__ import
annotations``, so nothing is evaluated or printed by ``inspect``); forward
references lose their quotes and whitespace is collapsed.  Docstrings are
cleaned with :func:`inspect.cleandoc` and their reST turned into Markdown:
roles (``:class:`~codexmini.Launch```) become links when the target is
documented here, inline literals code spans, ``::`` blocks fenced code.
Standard library only.
"""

from __future__ import annotations

import argparse
import ast
import dataclasses
import functools
import importlib
import inspect
import os
import re
import sys
import typing
from typing import Any, Dict, Iterator, List, Optional, Sequence, Set, Tuple

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
OUT = os.path.join(ROOT, "docs", "api.md")
INIT = os.path.join(ROOT, "codexmini", "__init__.py")
COMMAND = "make apiref"
WIDTH = 88  # a signature longer than this gets one parameter a line

HEADER = """\
# API reference

<!-- Generated from the docstrings by tools/gen_apiref.py (`make apiref`); do not edit.
     tests/test_apiref.py fails when this file is stale. -->

Everything below is importable from `codexmini` (`codexmini.__all__`), except the two public
submodules at the end: [`codexmini.sync`](#sync), the same API as blocking calls, and
[`codexmini.testing`](#testing), the fakes for tests. Every other module of the package is
private. Where to start: the [README](../README.md); runnable scripts: [examples/](../examples/).
"""


# -- source text --------------------------------------------------------------------------


_SOURCES: Dict[str, Tuple[str, ast.Module]] = {}


def _module_source(name: str) -> Tuple[str, ast.Module]:
    """The source of module ``name`` and its parsed tree (cached)."""
    if name not in _SOURCES:
        path = inspect.getsourcefile(sys.modules[name])
        assert path is not None, name
        with open(path, encoding="utf-8") as fh:
            text = fh.read()
        _SOURCES[name] = (text, ast.parse(text))
    return _SOURCES[name]


@functools.lru_cache(maxsize=None)
def _lines(source: str) -> List[bytes]:
    return [line.encode("utf-8") for line in source.splitlines(keepends=True)]


def _segment(source: str, node: ast.AST) -> str:
    """The source text of ``node``, on one line (``ast.get_source_segment``,
    with the source split once: the offsets are of UTF-8 bytes)."""
    lines = _lines(source)
    first, last = node.lineno - 1, node.end_lineno - 1  # type: ignore[attr-defined]
    start, end = node.col_offset, node.end_col_offset  # type: ignore[attr-defined]
    if first == last:
        text = lines[first][start:end]
    else:
        text = lines[first][start:] + b"".join(lines[first + 1 : last]) + lines[last][:end]
    return _one_line(text.decode("utf-8"))


def _one_line(text: str) -> str:
    """Source text spread over lines, on one: what a formatter split (and the
    trailing comma it added) joined back."""
    text = re.sub(r",?\s*\n\s*([\])}])", r"\1", text.strip())
    text = re.sub(r"([\[({])\s*\n\s*", r"\1", text)
    return re.sub(r"\s*\n\s*", " ", text)


def annotation(text: str) -> str:
    """An annotation's source text, normalised: forward references unquoted,
    one line, no trailing commas, no private module (``Optional["_threads.Turn"]``
    -> ``Optional[codexmini.Turn]``)."""
    text = _unquote(_one_line(text))
    return re.sub(r"\b_[a-z]\w*\.([A-Za-z]\w*)", _public_name, text)


def _unquote(text: str) -> str:
    """``text`` (an expression) with its forward references unquoted: every
    string in it but those of a ``Literal[...]``."""
    try:
        tree = ast.parse(text, mode="eval")
    except SyntaxError:
        return text
    spans: List[Tuple[int, int, str]] = []

    def visit(node: ast.AST) -> None:
        if isinstance(node, ast.Subscript) and re.search(r"\bLiteral$", _segment(text, node.value)):
            return
        if isinstance(node, ast.Constant) and isinstance(node.value, str):
            spans.append((node.col_offset, node.end_col_offset or 0, _unquote(node.value)))
        for child in ast.iter_child_nodes(node):
            visit(child)

    visit(tree)
    data = text.encode("utf-8")  # the offsets are of UTF-8 bytes
    for start, end, value in sorted(spans, reverse=True):
        data = data[:start] + value.encode("utf-8") + data[end:]
    return data.decode("utf-8")


def _public_name(match: "re.Match[str]") -> str:
    """``_threads.Thread`` -> ``codexmini.Thread`` (public), ``_rpc.Outgoing`` -> ``Outgoing``."""
    import codexmini

    name = match.group(1)
    return f"codexmini.{name}" if name in codexmini.__all__ else name


def _annotation_of(source: str, node: Optional[ast.expr]) -> Optional[str]:
    return None if node is None else annotation(_segment(source, node))


def _comment_before(source: str, lineno: int) -> str:
    """The ``#:`` comment lines right above line ``lineno`` (1-based), joined."""
    lines = source.splitlines()
    found: List[str] = []
    index = lineno - 2
    while index >= 0 and lines[index].strip().startswith("#:"):
        found.insert(0, lines[index].strip()[2:].strip())
        index -= 1
    return " ".join(found)


def _class_node(cls: type) -> Optional[ast.ClassDef]:
    """The ``class`` statement of ``cls`` in its module, found by qualified name."""
    try:
        _, tree = _module_source(cls.__module__)
    except (TypeError, KeyError):
        return None
    body: Sequence[ast.stmt] = tree.body
    node: Optional[ast.ClassDef] = None
    for part in cls.__qualname__.split("."):
        node = next((n for n in body if isinstance(n, ast.ClassDef) and n.name == part), None)
        if node is None:
            return None
        body = node.body
    return node


Function = typing.Union[ast.FunctionDef, ast.AsyncFunctionDef]


def _function_node(func: Any) -> Optional[Tuple[str, Function]]:
    """The module source and ``def`` statement of ``func``, found by its first line."""
    func = inspect.unwrap(func)
    code = getattr(func, "__code__", None)
    if code is None or not code.co_filename.endswith(".py") or func.__module__ not in sys.modules:
        return None  # not from a file: a dataclass's generated __init__, a builtin
    if func.__module__.rpartition(".")[2] == "_dataclasses":
        return None  # a record's __init__, __repr__ ...: the dataclass's own, written once for all (codexmini._dataclasses)
    source, tree = _module_source(func.__module__)
    for node in ast.walk(tree):
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)) and node.name == func.__name__:
            first = node.decorator_list[0].lineno if node.decorator_list else node.lineno
            if code.co_firstlineno in (first, node.lineno):
                return source, node
    return None


# -- signatures ---------------------------------------------------------------------------


def _param(source: str, arg: ast.arg, default: Optional[ast.expr], star: str = "") -> str:
    text = star + arg.arg
    note = _annotation_of(source, arg.annotation)
    if note is not None:
        text += f": {note}"
    if default is not None:
        text += f" = {_segment(source, default)}" if note is not None else f"={_segment(source, default)}"
    return text


def parameters(source: str, node: Function, drop_first: bool) -> Tuple[List[str], Optional[str]]:
    """The parameters of a ``def`` as written (``self``/``cls`` dropped when
    ``drop_first``), and its return annotation."""
    a = node.args
    positional = [*a.posonlyargs, *a.args]
    defaults: List[Optional[ast.expr]] = [None] * (len(positional) - len(a.defaults)) + list(a.defaults)
    parts = [_param(source, arg, d) for arg, d in zip(positional, defaults)]
    if a.posonlyargs:
        parts.insert(len(a.posonlyargs), "/")
    if a.vararg is not None:
        parts.append(_param(source, a.vararg, None, "*"))
    elif a.kwonlyargs:
        parts.append("*")
    parts += [_param(source, arg, d) for arg, d in zip(a.kwonlyargs, a.kw_defaults)]
    if a.kwarg is not None:
        parts.append(_param(source, a.kwarg, None, "**"))
    if drop_first and positional:
        parts.pop(0)
        if parts and parts[0] == "/":
            parts.pop(0)
    return parts, _annotation_of(source, node.returns)


def call(name: str, parts: Sequence[str], returns: Optional[str] = None, prefix: str = "") -> str:
    """``prefix name(parts) -> returns``, on one line when it fits, else one part a line."""
    tail = f" -> {returns}" if returns else ""
    line = f"{prefix}{name}({', '.join(parts)}){tail}"
    if len(line) <= WIDTH or not parts:
        return line
    inner = "".join(f"    {p},\n" for p in parts)
    return f"{prefix}{name}(\n{inner}){tail}"


def split_top(text: str) -> List[str]:
    """``text`` split at its commas outside brackets and strings."""
    parts, depth, quote, start = [], 0, "", 0
    for i, ch in enumerate(text):
        if quote:
            quote = "" if ch == quote else quote
        elif ch in "'\"":
            quote = ch
        elif ch in "([{":
            depth += 1
        elif ch in ")]}":
            depth -= 1
        elif ch == "," and depth == 0:
            parts.append(text[start:i].strip())
            start = i + 1
    parts.append(text[start:].strip())
    return [p for p in parts if p]


def wrap_alias(name: str, value: str) -> str:
    """``name = value``, its outer brackets' items one a line when too long."""
    line = f"{name} = {value}"
    match = re.match(r"^([\w.]+)\[(.*)\]$", value)
    if len(line) <= WIDTH or match is None:
        return line
    items = split_top(match.group(2))
    return f"{name} = {match.group(1)}[\n" + "".join(f"    {item},\n" for item in items) + "]"


# -- docstrings -> Markdown -----------------------------------------------------------------


class Links:
    """The anchors of the reference, and how a docstring's role finds one."""

    def __init__(self) -> None:
        self.anchors: Set[str] = set()
        #: Names documented inside another's entry (a field, an attribute) -> that entry's anchor.
        self.inside: Dict[str, str] = {}

    def add(self, anchor: str) -> str:
        clash = [a for a in self.anchors if a.lower() == anchor.lower()]
        if clash:
            raise SystemExit(f"gen_apiref: the anchor {anchor!r} clashes with {clash[0]!r}")
        self.anchors.add(anchor)
        return anchor

    def resolve(self, target: str, section: str, owner: str) -> Optional[str]:
        """The anchor a role's ``target`` names, seen from ``owner`` (a class
        name or "") in ``section`` ("", "sync." or "testing.")."""
        target = target.lstrip(".")
        if target.startswith("codexmini."):
            target = target[len("codexmini.") :]
            last = target.rsplit(".", 1)[-1]
            head = target.split(".", 1)[0]
            candidates = [target, f"{head}.{last}" if head in ("sync", "testing") else last]
        else:
            candidates = [f"{section}{owner}.{target}", f"{section}{target}", f"{owner}.{target}", target]
        found = next((c for c in candidates if c in self.anchors), None)
        return found or next((self.inside[c] for c in candidates if c in self.inside), None)


_ROLE = r":(?:py:)?(?P<role>\w+):`(?P<tilde>~?)(?P<body>[^`]+)`"
_LITERAL = r"``(?P<literal>[^`].*?)``"
_INLINE = re.compile(f"{_ROLE}|{_LITERAL}", re.S)


def _code(text: str) -> str:
    text = " ".join(text.split())
    return f"`` {text} ``" if "`" in text else f"`{text}`"


def _prose(text: str) -> str:
    """Markdown-safe prose: no raw HTML."""
    return re.sub(r"<(?=[A-Za-z/!?])", "&lt;", text)


def inline(text: str, links: Links, section: str = "", owner: str = "") -> str:
    """Roles and inline literals of one paragraph of reST as Markdown."""
    out: List[str] = []
    end = 0
    for match in _INLINE.finditer(text):
        out.append(_prose(text[end : match.start()]))
        end = match.end()
        if match.group("literal") is not None:
            out.append(_code(match.group("literal")))
            continue
        body = " ".join(match.group("body").split())
        titled = re.match(r"^(.*?)\s*<([^>]+)>$", body)
        title, target = (titled.group(1), titled.group(2)) if titled else (None, body)
        shown = title or (target.rsplit(".", 1)[-1] if match.group("tilde") else target.lstrip("."))
        if match.group("role") in ("meth", "func") and not title and not shown.endswith(")"):
            shown += "()"
        anchor = links.resolve(target, section, owner)
        out.append(f"[{_code(shown)}](#{anchor})" if anchor else _code(shown))
    out.append(_prose(text[end:]))
    return "".join(out)


def markdown(doc: str, links: Links, section: str = "", owner: str = "") -> str:
    """A cleaned docstring as Markdown: ``::`` blocks fenced, the rest :func:`inline`."""
    lines = doc.split("\n")
    out: List[str] = []
    text: List[str] = []
    i = 0
    while i < len(lines):
        line = lines[i]
        if not line.rstrip().endswith("::"):
            text.append(line)
            i += 1
            continue
        lead = line.rstrip()[:-2].rstrip()
        if lead:
            text.append(lead + ("" if line.rstrip().endswith(" ::") else ":"))
        i += 1
        block: List[str] = []
        base = len(line) - len(line.lstrip())
        while i < len(lines) and (not lines[i].strip() or len(lines[i]) - len(lines[i].lstrip()) > base):
            block.append(lines[i])
            i += 1
        while block and not block[-1].strip():
            i -= 1
            block.pop()
        out.append(inline("\n".join(text), links, section, owner))
        text = []
        body = inspect.cleandoc("\n".join(block))
        lang = "sh" if any(b.startswith("$ ") for b in body.splitlines()) else "python"
        out.append(f"```{lang}\n{body}\n```")
    out.append(inline("\n".join(text), links, section, owner))
    return "\n\n".join(part.strip("\n") for part in out if part.strip())


def docstring(obj: Any) -> str:
    """``obj``'s own docstring, cleaned ("" when it has none)."""
    doc = obj.__dict__.get("__doc__") if inspect.isclass(obj) else getattr(obj, "__doc__", None)
    return inspect.cleandoc(doc) if isinstance(doc, str) else ""


# -- the reference's items --------------------------------------------------------------------


@dataclasses.dataclass
class Field:
    name: str
    note: Optional[str]
    default: Optional[str]
    doc: str = ""

    def line(self) -> str:
        text = self.name + (f": {self.note}" if self.note else "") + (f" = {self.default}" if self.default else "")
        return _code(text)


def dataclass_fields(cls: type) -> List[Field]:
    """A dataclass's fields as written in its class bodies (the nearest wins)."""
    found: List[Field] = []
    for f in dataclasses.fields(cls):
        note: Optional[str] = None
        default: Optional[str] = None
        doc = ""
        for klass in cls.__mro__:
            node = _class_node(klass)
            if node is None:
                continue
            source, _ = _module_source(klass.__module__)
            stmt = next(
                (
                    s
                    for s in node.body
                    if isinstance(s, ast.AnnAssign) and isinstance(s.target, ast.Name) and s.target.id == f.name
                ),
                None,
            )
            if stmt is None:
                continue
            note = _annotation_of(source, stmt.annotation)
            value = stmt.value
            if isinstance(value, ast.Call) and _segment(source, value.func) in ("field", "dataclasses.field"):
                keywords = {k.arg: k.value for k in value.keywords}
                if "default" in keywords:
                    default = _segment(source, keywords["default"])
                elif "default_factory" in keywords:
                    default = _segment(source, keywords["default_factory"]) + "()"
            elif value is not None:
                default = _segment(source, value)
            doc = _comment_before(source, stmt.lineno)
            break
        found.append(Field(f.name, note, default, doc))
    return found


_BULLET = re.compile(r"^\* ``(\w+)``: (.*(?:\n  .*)*)", re.M)


def field_bullets(doc: str, names: Set[str]) -> Tuple[str, Dict[str, str]]:
    """The docstring's ``* ``field``: text`` bullets for ``names``, taken out
    (the first such bullet becomes a ``{{fields}}`` mark where the list goes)."""
    docs: Dict[str, str] = {}

    def take(match: "re.Match[str]") -> str:
        if match.group(1) not in names:
            return match.group(0)
        first = not docs
        docs[match.group(1)] = " ".join(match.group(2).split())
        return "{{fields}}" if first else "\x00"

    doc = _BULLET.sub(take, doc)
    doc = re.sub(r"\n?\x00", "", doc)
    return doc, docs


def init_attributes(cls: type, skip: Set[str]) -> List[Field]:
    """The public attributes ``__init__`` sets on ``self`` (as written: an
    annotation, else the annotation of the parameter assigned), with their ``#:`` docs."""
    init = next((k.__dict__["__init__"] for k in cls.__mro__ if "__init__" in k.__dict__), None)
    found = _function_node(init) if inspect.isfunction(init) else None
    if found is None:
        return []
    source, node = found
    params = {a.arg: a.annotation for a in [*node.args.args, *node.args.kwonlyargs]}
    attrs: Dict[str, Field] = {}
    assignments = [n for n in ast.walk(node) if isinstance(n, (ast.Assign, ast.AnnAssign))]
    for stmt in sorted(assignments, key=lambda n: n.lineno):
        targets = list(stmt.targets) if isinstance(stmt, ast.Assign) else [stmt.target]
        for target in targets:
            if not (isinstance(target, ast.Attribute) and isinstance(target.value, ast.Name)):
                continue
            name = target.attr
            if target.value.id != "self" or name.startswith("_") or name in skip or name in attrs:
                continue
            if any(hasattr(k, name) for k in cls.__mro__ if not _defined_in_package(k)):
                continue  # BaseException's args, ...
            note: Optional[str] = None
            if isinstance(stmt, ast.AnnAssign):
                note = _annotation_of(source, stmt.annotation)
            elif isinstance(stmt.value, ast.Name) and params.get(stmt.value.id) is not None:
                note = _annotation_of(source, params[stmt.value.id])
            attrs[name] = Field(name, note, None, _comment_before(source, stmt.lineno))
    return list(attrs.values())


def _defined_in_package(owner: type) -> bool:
    return owner.__module__.split(".")[0] == "codexmini"


def constructor(cls: type, shown: str) -> str:
    """``Name(parameters)``: a dataclass's fields, else the package's ``__init__``."""
    for klass in cls.__mro__:
        if "__init__" not in klass.__dict__:
            continue
        init = klass.__dict__["__init__"]
        if dataclasses.is_dataclass(klass) and _function_node(init) is None:
            parts = []
            for f, spec in zip(dataclass_fields(klass), dataclasses.fields(klass)):
                if spec.init:
                    parts.append(f.name + (f": {f.note}" if f.note else "") + (f" = {f.default}" if f.default else ""))
            return call(shown, parts)
        if _defined_in_package(klass) and inspect.isfunction(init):
            found = _function_node(init)
            if found is not None:
                parts, _ = parameters(found[0], found[1], drop_first=True)
                return call(shown, parts)
        break
    return call(shown, ["*args"] if issubclass(cls, BaseException) else [])


@dataclasses.dataclass
class Member:
    name: str
    kind: str  # "method", "classmethod", "staticmethod", "property", "attribute"
    obj: Any
    owner: type


def members(cls: type) -> List[Member]:
    """The public methods, properties and class attributes of ``cls`` and of its
    bases in the package: its own first, each class's in definition order."""
    seen: Set[str] = set()
    fields = {f.name for f in dataclasses.fields(cls)} if dataclasses.is_dataclass(cls) else set()
    found: List[Member] = []
    for klass in cls.__mro__:
        if not _defined_in_package(klass):
            continue
        for name, value in klass.__dict__.items():
            if name.startswith("_") or name in seen or name in fields:
                continue
            seen.add(name)
            if isinstance(value, classmethod):
                found.append(Member(name, "classmethod", value.__func__, klass))
            elif isinstance(value, staticmethod):
                found.append(Member(name, "staticmethod", value.__func__, klass))
            elif isinstance(value, property):
                found.append(Member(name, "property", value, klass))
            elif inspect.isfunction(value):
                found.append(Member(name, "method", value, klass))
            elif not inspect.isclass(value):
                found.append(Member(name, "attribute", value, klass))
    return found


_PROTOCOLS = (
    ("__aenter__", "async with"),
    ("__enter__", "with"),
    ("__aiter__", "async for"),
    ("__iter__", "for"),
    ("__add__", "+"),
)


def protocols(cls: type) -> List[str]:
    """What ``cls`` supports of ``with``, ``async for``... (defined in the package)."""
    return [
        what for dunder, what in _PROTOCOLS if any(dunder in k.__dict__ for k in cls.__mro__ if _defined_in_package(k))
    ]


def class_attribute(member: Member) -> Field:
    node = _class_node(member.owner)
    source, _ = _module_source(member.owner.__module__)
    note: Optional[str] = None
    default: Optional[str] = None
    doc = ""
    for stmt in node.body if node is not None else []:
        if isinstance(stmt, ast.AnnAssign) and isinstance(stmt.target, ast.Name) and stmt.target.id == member.name:
            note = _annotation_of(source, stmt.annotation)
            default = _segment(source, stmt.value) if stmt.value is not None else None
            doc = _comment_before(source, stmt.lineno)
        elif isinstance(stmt, ast.Assign) and any(
            isinstance(t, ast.Name) and t.id == member.name for t in stmt.targets
        ):
            default = _segment(source, stmt.value)
            doc = _comment_before(source, stmt.lineno)
    if default == member.name and isinstance(member.obj, (str, int, float, bool, type(None))):
        default = repr(member.obj)  # `ALL = ALL`: a constant imported under its own name
    return Field(member.name, note, default, doc)


def attributes_of(cls: type) -> List[Field]:
    """The public attributes of ``cls`` that are neither fields nor members:
    what ``__init__`` sets, then the class attributes."""
    skip = {f.name for f in dataclasses.fields(cls)} if dataclasses.is_dataclass(cls) else set()
    skip |= {m.name for m in members(cls)}
    found = init_attributes(cls, skip)
    return found + [class_attribute(m) for m in members(cls) if m.kind == "attribute"]


# -- rendering ------------------------------------------------------------------------------


#: ``codexmini.sync`` classes whose async twin has another name.
_SYNC_TWINS = {"Client": "AppServerClient"}


class Writer:
    """The reference, as Markdown lines."""

    def __init__(self, links: Links) -> None:
        self.links = links
        self.lines: List[str] = []
        #: What has no docstring (or ``#:`` comment), for ``--missing``.
        self.missing: List[str] = []
        #: Every name a signature shows, with the module it is seen from.
        self.aliases: Set[Tuple[str, str]] = set()

    def emit(self, *lines: str) -> None:
        self.lines.extend(lines)

    def heading(self, level: int, anchor: str, title: str) -> None:
        self.emit(f'<a id="{anchor}"></a>', "", f"{'#' * level} {title}", "")

    def code(self, text: str) -> None:
        self.emit("```python", text, "```", "")

    def prose(self, doc: str, section: str, owner: str, what: str, call: bool = False) -> None:
        if doc:
            self.emit(markdown(doc, self.links, section, owner), "")
            return
        self.missing.append(what)
        twin = what[len("sync.") :]
        for blocking, aio in _SYNC_TWINS.items():
            twin = re.sub(rf"^{blocking}\.", f"{aio}.", twin)
        if section == "sync." and owner and (twin in self.links.anchors or twin in self.links.inside):
            # a blocking method without a docstring of its own: point at what it carries
            anchor = twin if twin in self.links.anchors else self.links.inside[twin]
            shown = f"{twin}()" if call else twin
            self.emit(f"As [`{shown}`](#{anchor}).", "")

    def note_aliases(self, text: str, module: str) -> None:
        self.aliases.update((name, module) for name in re.findall(r"\b[A-Za-z_]\w*\b", text))

    # -- one name

    def function(self, shown: str, func: Any, section: str, owner: str = "", kind: str = "") -> None:
        found = _function_node(func)
        prefix = "async def " if inspect.iscoroutinefunction(func) or inspect.isasyncgenfunction(func) else "def "
        lines = [f"@{kind}"] if kind in ("classmethod", "staticmethod") else []
        if found is not None:
            parts, returns = parameters(found[0], found[1], drop_first=kind in ("method", "classmethod"))
        else:
            parts, returns = ["..."], None
        lines.append(call(shown, parts, returns, prefix))
        self.note_aliases("\n".join(lines), func.__module__)
        self.code("\n".join(lines))
        self.prose(docstring(func), section, owner, f"{section}{owner + '.' if owner else ''}{shown}", call=True)

    def klass(self, anchor: str, shown: str, cls: type, section: str) -> None:
        name = cls.__name__
        sig = constructor(cls, name)
        self.note_aliases(sig, cls.__module__)
        self.code(f"class {sig}")
        facts = []
        bases = [b for b in cls.__bases__ if b is not object and not b.__name__.startswith("_")]
        if bases:
            facts.append("Bases: " + ", ".join(self._link(b.__name__, section) for b in bases) + ".")
        uses = protocols(cls)
        if uses:
            facts.append("Supports " + ", ".join(f"`{u}`" for u in uses) + ".")
        if facts:
            self.emit(" ".join(facts), "")
        fields = dataclass_fields(cls) if dataclasses.is_dataclass(cls) else []
        doc, bullet_docs = field_bullets(docstring(cls), {f.name for f in fields})
        for f in fields:
            f.doc = bullet_docs.get(f.name) or f.doc
            self.note_aliases(f.note or "", cls.__module__)
        listed = [f for f in fields if f.name in bullet_docs]
        rest = [f for f in fields if f.name not in bullet_docs]
        if listed:  # the enriched bullets go where the docstring had them
            doc = doc.replace("{{fields}}", "\n".join(f"* {{{{field:{f.name}}}}}" for f in listed))
        rendered = markdown(doc, self.links, section, name) if doc else ""
        for f in listed:
            rendered = rendered.replace(f"{{{{field:{f.name}}}}}", self._field(f, section, name))
        if rendered:
            self.emit(rendered, "")
        if any(f.doc for f in rest):  # else the constructor above says it all
            self.emit("Other fields:" if listed else "Fields:", "")
            self.emit(*(f"* {self._field(f, section, name)}" for f in rest), "")
        attributes = attributes_of(cls)
        if attributes:
            for a in attributes:
                self.note_aliases(a.note or "", cls.__module__)
            self.emit("Attributes:", "")
            self.emit(*(f"* {self._field(a, section, name)}" for a in attributes), "")
        for member in members(cls):
            if member.kind == "attribute":
                continue
            self.heading(4, f"{anchor}.{member.name}", f"`{shown}.{member.name}`")
            if member.kind == "property":
                fget = member.obj.fget
                found = _function_node(fget)
                returns = parameters(found[0], found[1], True)[1] if found else None
                line = f"{member.name}: {returns}" if returns else member.name
                self.note_aliases(line, fget.__module__)
                settable = " (settable)" if member.obj.fset is not None else ""
                self.code(f"@property{settable}\n{line}")
                self.prose(docstring(fget), section, name, f"{shown}.{member.name}")
            else:
                self.function(member.name, member.obj, section, name, member.kind)

    def _link(self, name: str, section: str) -> str:
        target = self.links.resolve(name, section, "")
        return f"[`{name}`](#{target})" if target else f"`{name}`"

    def _field(self, f: Field, section: str, owner: str) -> str:
        doc = inline(f.doc, self.links, section, owner) if f.doc else ""
        return f.line() + (f" -- {doc}" if doc else "")

    def value(self, shown: str, obj: Any, module: str, section: str) -> None:
        """A module-level constant or type alias, as its assignment is written."""
        source, tree = _module_source(module)
        stmt = _assignment(tree, shown)
        if stmt is None:
            raise SystemExit(f"gen_apiref: {module}.{shown} is not assigned in its module")
        note = _annotation_of(source, stmt.annotation) if isinstance(stmt, ast.AnnAssign) else None
        value = stmt.value
        assert value is not None
        written = _segment(source, value)
        doc = _comment_before(source, stmt.lineno)
        if _is_alias(obj):
            self.note_aliases(written, module)
            self.code(wrap_alias(shown, annotation(written)))
            members_ = [a for a in typing.get_args(obj) if inspect.isclass(a)]
            self.prose(doc, section, "", section + shown)
            if typing.get_origin(obj) is typing.Union and members_:
                linked = []
                for m in members_:
                    target = self.links.resolve(m.__name__, section, "")
                    linked.append(f"[`{m.__name__}`](#{target})" if target else f"`{m.__name__}`")
                self.emit("One of " + ", ".join(linked) + ".", "")
            return
        kind = note or type(obj).__name__
        literal = isinstance(value, ast.Constant)
        self.code(f"{shown}: {kind}" + ("" if literal else f" = {written}"))
        self.prose(doc, section, "", section + shown)


def _top(tree: ast.Module) -> Iterator[ast.stmt]:
    """The module's statements, those under a top-level ``if`` (``TYPE_CHECKING``) included."""
    for stmt in tree.body:
        yield stmt
        if isinstance(stmt, ast.If):
            yield from stmt.body
            yield from stmt.orelse


def _assignment(tree: ast.Module, name: str) -> Optional[typing.Union[ast.Assign, ast.AnnAssign]]:
    for stmt in _top(tree):
        if isinstance(stmt, ast.AnnAssign) and isinstance(stmt.target, ast.Name) and stmt.target.id == name:
            return stmt
        if isinstance(stmt, ast.Assign) and any(isinstance(t, ast.Name) and t.id == name for t in stmt.targets):
            return stmt
    return None


def _is_alias(obj: Any) -> bool:
    """A typing construct (``Union[...]``, ``Callable[...]``), not a value."""
    return typing.get_origin(obj) is not None


def _import_source(tree: ast.Module, module: str, name: str) -> Optional[str]:
    """The module ``name`` is imported from in ``module``'s ``tree``, absolute."""
    for stmt in _top(tree):
        if isinstance(stmt, ast.ImportFrom) and any((a.asname or a.name) == name for a in stmt.names):
            if stmt.level:
                # a package's own `from .x` is inside it; a module's, beside it
                base = module.split(".") + ([""] if hasattr(sys.modules[module], "__path__") else [])
                package = ".".join(base[: len(base) - stmt.level])
                return f"{package}.{stmt.module}" if stmt.module else package
            return stmt.module
    return None


def find_alias(name: str, module: str, depth: int = 0) -> Optional[Tuple[str, str, str]]:
    """Where the type alias ``name`` seen from ``module`` is defined: ``(module,
    written value, doc)``, following ``from … import`` inside the package."""
    if depth > 5 or not module.startswith("codexmini") or module not in sys.modules:
        return None
    source, tree = _module_source(module)
    stmt = _assignment(tree, name)
    if stmt is not None:
        obj = getattr(sys.modules[module], name, None)
        if not _is_alias(obj) or stmt.value is None:
            return None
        return module, annotation(_segment(source, stmt.value)), _comment_before(source, stmt.lineno)
    origin = _import_source(tree, module, name)
    if origin is None:
        return None
    try:
        importlib.import_module(origin)
    except ImportError:
        return None
    return find_alias(name, origin, depth + 1)


# -- the document ---------------------------------------------------------------------------


def export_groups(source: str) -> List[Tuple[str, str, List[str]]]:
    """The ``_EXPORTS`` table's names under its comments, in order: ``(title,
    intro, names)``; ``# approvals: what codex asks`` is the title "Approvals"
    and the intro "What codex asks." (a parenthesis is left out)."""
    body = source.split("_EXPORTS: Dict[str, str] = {", 1)[1].split("\n}", 1)[0]
    groups: List[Tuple[str, str, List[str]]] = []
    for line in body.splitlines():
        line = line.strip()
        if line.startswith("#"):
            comment = line.lstrip("#").strip()
            while re.search(r"\([^()]*\)", comment):  # innermost first: "(events(), ...)"
                comment = re.sub(r"\s*\([^()]*\)", "", comment)
            title, _, intro = comment.partition(":")
            intro = intro.strip()
            intro = intro[:1].upper() + intro[1:] + ("" if not intro or intro.endswith(".") else ".")
            groups.append((title[:1].upper() + title[1:], intro, []))
        else:
            match = re.match(r"""^["'](\w+)["']\s*:""", line)
            if match:
                if not groups:
                    groups.append(("Other names", "", []))
                groups[-1][2].append(match.group(1))
    return groups


def _slug(title: str) -> str:
    return re.sub(r"[^a-z0-9]+", "-", title.lower()).strip("-")


Entry = Tuple[str, Any, str]  # (name, object, the module it is documented from)
Section = Tuple[str, str, str, List[Entry]]  # (title, anchor, intro, entries)


def _source_order(module: Any) -> List[str]:
    """``module.__all__``: what the module defines, in source order, then what it imports."""
    _, tree = _module_source(module.__name__)
    lines: Dict[str, int] = {}
    for stmt in tree.body:
        if isinstance(stmt, (ast.ClassDef, ast.FunctionDef, ast.AsyncFunctionDef)):
            lines.setdefault(stmt.name, stmt.lineno)
        elif isinstance(stmt, ast.Assign):
            for target in stmt.targets:
                if isinstance(target, ast.Name):
                    lines.setdefault(target.id, stmt.lineno)
    names: List[str] = list(module.__all__)
    return sorted(names, key=lambda n: (lines.get(n, len(names) + 10**9), names.index(n)))


def sections() -> List[Section]:
    """Every section of the reference: the package's groups, sync, testing."""
    import codexmini
    import codexmini.sync
    import codexmini.testing

    with open(INIT, encoding="utf-8") as fh:
        groups = export_groups(fh.read())
    grouped = [name for _, _, names in groups for name in names]
    exports: Dict[str, str] = codexmini._EXPORTS
    if sorted(grouped) != sorted(exports):
        raise SystemExit("gen_apiref: the names under the comments of _EXPORTS are not its names")
    versions = [n for n in codexmini.__all__ if n not in exports]
    found: List[Section] = []
    for title, intro, names in [*groups, ("Versions", "", versions)]:
        entries = []
        for name in names:
            module = f"codexmini.{exports[name]}" if name in exports else "codexmini._version"
            entries.append((name, getattr(codexmini, name), module))
        found.append((title, _slug(title), intro, entries))
    for short, mod in (("sync", codexmini.sync), ("testing", codexmini.testing)):
        entries = [(name, getattr(mod, name), mod.__name__) for name in _source_order(mod)]
        found.append((f"`codexmini.{short}`", short, docstring(mod), entries))
    return found


def _prefix(anchor: str) -> str:
    return "" if anchor not in ("sync", "testing") else f"{anchor}."


def _register(links: Links, parts: List[Section]) -> None:
    """Every anchor of the reference, before anything is written (a docstring
    may name what comes later); fields and attributes lead to their class."""
    for _, anchor, _, entries in parts:
        links.add(anchor)
        prefix = _prefix(anchor)
        for name, obj, _ in entries:
            links.add(prefix + name)
            if not inspect.isclass(obj):
                continue
            for member in members(obj):
                if member.kind != "attribute":
                    links.add(f"{prefix}{name}.{member.name}")
            inside = [f.name for f in attributes_of(obj)]
            inside += [f.name for f in dataclasses.fields(obj)] if dataclasses.is_dataclass(obj) else []
            for attribute in inside:
                links.inside[f"{prefix}{name}.{attribute}"] = prefix + name


def render() -> str:
    """The whole of ``docs/api.md``."""
    return "\n".join(build().lines).rstrip("\n") + "\n"


def build() -> Writer:
    """The reference, written."""
    parts = sections()
    links = Links()
    _register(links, parts)
    writer = Writer(links)
    writer.emit(HEADER)
    writer.emit("## Contents", "")
    for title, anchor, _, entries in parts:
        prefix = _prefix(anchor)
        names = ", ".join(f"[`{n}`](#{prefix}{n})" for n, _, _ in entries)
        writer.emit(f"* [{title}](#{anchor}): {names}")
    writer.emit("* [Types in signatures](#types)", "")
    for title, anchor, intro, entries in parts:
        prefix = _prefix(anchor)
        writer.heading(2, anchor, title)
        if intro:
            writer.emit(markdown(intro, links, prefix, ""), "")
        errors = [obj for _, obj, _ in entries if inspect.isclass(obj) and issubclass(obj, BaseException)]
        if len(errors) > 3:
            writer.emit(*_tree(errors, prefix), "")
        for name, obj, module in entries:
            writer.heading(3, prefix + name, f"`{prefix}{name}`")
            if inspect.isclass(obj):
                writer.klass(prefix + name, prefix + name, obj, prefix)
            elif inspect.isfunction(obj):
                writer.function(name, obj, prefix)
            else:
                writer.value(name, obj, module, prefix)
    _types(writer, [(name, obj) for part in parts for name, obj, _ in part[3]])
    return writer


def _tree(errors: List[type], prefix: str) -> List[str]:
    """The classes of ``errors`` as a nested list, each under its bases among them."""
    lines = ["The tree:", ""]

    def walk(cls: type, depth: int) -> Iterator[str]:
        yield f"{'  ' * depth}* [`{cls.__name__}`](#{prefix}{cls.__name__})"
        for child in errors:
            if cls in child.__bases__:
                yield from walk(child, depth + 1)

    for root in errors:
        if not any(b in errors for b in root.__bases__):
            lines.extend(walk(root, 0))
    return lines


def _types(writer: Writer, public: List[Tuple[str, Any]]) -> None:
    """The type aliases the signatures name, each as written, with its doc
    (and the aliases those name); none that is documented above."""
    writer.heading(2, writer.links.add("types"), "Types in signatures")
    writer.emit(
        "The type aliases the signatures above name. The names of `codexmini.protocol`, the wire's",
        "types generated from codex's schema, are not repeated here.",
        "",
    )
    found: Dict[Tuple[str, str], Tuple[str, str]] = {}  # (name, module) -> (written, doc)
    pending = sorted(writer.aliases)
    seen: Set[Tuple[str, str]] = set()
    while pending:
        name, module = pending.pop(0)
        if (name, module) in seen:
            continue
        seen.add((name, module))
        alias = find_alias(name, module)
        if alias is None:
            continue
        where, written, doc = alias
        if any(name == shown and getattr(sys.modules[where], name) is obj for shown, obj in public):
            continue
        found[(name, where)] = (written, doc)
        pending.extend((inner, where) for inner in re.findall(r"\b[A-Za-z_]\w*\b", written))
        pending.sort()
    names = [name for name, _ in found]
    for (name, where), (written, doc) in sorted(found.items(), key=lambda item: (item[0][0].lower(), item[0][1])):
        anchor = writer.links.add(f"type-{name}" if names.count(name) == 1 else f"type-{name}-{_slug(where)}")
        writer.heading(3, anchor, f"`{name}`" if names.count(name) == 1 else f"`{name}` (in `{where}`)")
        writer.code(wrap_alias(name, written))
        writer.prose(doc, "", "", f"{name} (a type alias in {where})")


def main(argv: Optional[Sequence[str]] = None) -> int:
    parser = argparse.ArgumentParser(prog="gen_apiref.py", description=__doc__.splitlines()[0])
    parser.add_argument("--check", action="store_true", help="write nothing; exit 1 if docs/api.md is stale")
    parser.add_argument("--missing", action="store_true", help="write nothing; list what has no docstring")
    args = parser.parse_args(argv)
    if args.missing:
        print("\n".join(build().missing))
        return 0
    wanted = render()
    try:
        with open(OUT, encoding="utf-8") as fh:
            current: Optional[str] = fh.read()
    except FileNotFoundError:
        current = None
    if wanted == current:
        return 0
    if args.check:
        print(f"docs/api.md is stale: run `{COMMAND}` (python tools/gen_apiref.py)", file=sys.stderr)
        return 1
    with open(OUT, "w", encoding="utf-8") as fh:
        fh.write(wanted)
    print("wrote docs/api.md")
    return 0


if __name__ == "__main__":
    sys.path.insert(0, ROOT)
    sys.exit(main())
