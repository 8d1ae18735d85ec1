"""The mutants of one module, found by walking its ``ast``.

Operators (``Mutant.operator``; one mutant per change, never two at once):

=========  ==================================================================
compare    ``<``↔``<=``, ``>``↔``>=``, ``==``↔``!=``, ``in``↔``not in``,
           ``is``↔``is not`` (each operator of a chain on its own)
negate     the test of an ``if``/``while``/conditional expression/comprehension
           filter: ``x`` → ``not x``, ``not x`` → ``x`` (not when the test is
           ``a == b``-like: that is the ``compare`` mutant)
not        any other ``not x`` → ``x``
boolop     ``and``↔``or``
arith      ``+``↔``-``, also in ``+=``/``-=``
number     an integer constant ± 1 (two mutants)
bool       ``True``↔``False``
string     a string or bytes constant blanked (``""``), an empty one altered
           (``"XX"``), an f-string blanked -- wherever it is, module-level
           tables (dict/set/frozenset/tuple literals) included
return     ``return x`` → ``return None``; a lambda's body → ``None``
delete     a simple statement → ``pass``: expressions, assignments,
           ``raise``, ``del``, a bare ``return``, ``break``, ``continue``;
           an annotated assignment to a name a nested function declares
           ``nonlocal`` keeps its annotation (``x: T = v`` → ``x: T``):
           without a binding the ``nonlocal`` would not compile
=========  ==================================================================

Not mutated, because no test could or should see the change:

* docstrings and every other bare constant statement (``...``);
* ``__all__`` (a test compares it with what is exported; mutating it tests
  that test);
* type annotations (a bare ``x: int`` included), type aliases (``Event = Dict[str, Any]``) and the type
  arguments of ``cast``/``TypeVar``/``NewType``: with ``from __future__
  import annotations`` nothing reads them at run time;
* ``if TYPE_CHECKING:`` blocks, which never run, and ``assert`` statements:
  they state invariants for the reader and the type checker, and no test can
  break one without a bug elsewhere;
* the message text of a logging call (``logger.warning("%s", w)``'s
  ``"%s"``): it is prose for a human, and pinning it in tests would only make
  rewording expensive.  Whether the call happens, and the values it logs,
  are still mutated (``delete``, and the other arguments);
* ``import`` statements, ``def``/``class`` statements as a whole, and
  compound statements as a whole (their tests and bodies are mutated).

A mutant is applied by calling :attr:`Mutant.apply`, which edits the tree
:func:`find_mutants` returned *in place*; the runner does that in a forked
child, so the parent's tree stays pristine.  :func:`mutated_source` applies
one mutant to a fresh tree, for tests and ``--show``.
"""

from __future__ import annotations

import ast
import copy
from dataclasses import dataclass, field
from typing import Callable

#: Calls whose first argument is a type, not a value.
_TYPE_CALLS = frozenset({"cast", "TypeVar", "NewType"})
#: ``<name>.<method>(message, ...)`` is a logging call for these names and methods.
_LOGGERS = frozenset({"logger", "log", "logging", "_logger", "_log", "LOGGER"})
_LOG_METHODS = frozenset({"debug", "info", "warning", "warn", "error", "exception", "critical", "log"})
#: Names whose subscript on the right of a module-level assignment makes it a type alias.
_TYPING = frozenset(
    [
        "Any",
        "Callable",
        "ClassVar",
        "Dict",
        "FrozenSet",
        "Iterable",
        "Iterator",
        "List",
        "Literal",
        "Mapping",
        "MutableMapping",
        "Optional",
        "Sequence",
        "Set",
        "Tuple",
        "Type",
        "Union",
    ]
)
#: Fields holding type annotations.
_ANNOTATION_FIELDS = frozenset({"annotation", "returns", "type_params", "type_comment"})

_COMPARE_SWAPS = {
    ast.Lt: ast.LtE,
    ast.LtE: ast.Lt,
    ast.Gt: ast.GtE,
    ast.GtE: ast.Gt,
    ast.Eq: ast.NotEq,
    ast.NotEq: ast.Eq,
    ast.In: ast.NotIn,
    ast.NotIn: ast.In,
    ast.Is: ast.IsNot,
    ast.IsNot: ast.Is,
}
_NEGATING = frozenset({ast.Eq, ast.NotEq, ast.In, ast.NotIn, ast.Is, ast.IsNot})
_ARITH_SWAPS = {ast.Add: ast.Sub, ast.Sub: ast.Add}
_DELETABLE = (
    ast.Expr,
    ast.Assign,
    ast.AugAssign,
    ast.AnnAssign,
    ast.Raise,
    ast.Delete,
    ast.Break,
    ast.Continue,
)
_TEXT_LIMIT = 100

Put = Callable[[ast.AST], None]


@dataclass(frozen=True)
class Mutant:
    """One change to one module.  ``before``/``after`` are the changed node's
    source, normalised to one line; ``source`` is the text of its first line.
    Together with the module and the operator they are the mutant's
    :attr:`key`, which survives edits elsewhere in the file."""

    module: str
    path: str
    line: int
    operator: str
    before: str
    after: str
    source: str
    apply: Callable[[], None] = field(compare=False, repr=False)

    @property
    def key(self) -> tuple[str, str, str, str, str]:
        return (self.module, self.operator, self.before, self.after, self.source)

    @property
    def where(self) -> str:
        return f"{self.path}:{self.line}"

    @property
    def change(self) -> str:
        return f"{self.before} → {self.after}"


def _text(node: ast.AST) -> str:
    text = " ".join(ast.unparse(node).split())
    return text if len(text) <= _TEXT_LIMIT else text[: _TEXT_LIMIT - 1] + "…"


def _slot(parent: ast.AST, name: str, index: int | None) -> Put:
    def put(new: ast.AST) -> None:
        if index is None:
            setattr(parent, name, new)
        else:
            getattr(parent, name)[index] = new

    return put


def _name(node: ast.AST) -> str:
    """``cast`` for ``cast`` and ``typing.cast``."""
    if isinstance(node, ast.Name):
        return node.id
    if isinstance(node, ast.Attribute):
        return node.attr
    return ""


def _is_type_checking(node: ast.AST) -> bool:
    return isinstance(node, ast.If) and _name(node.test) == "TYPE_CHECKING"


def _is_constant_statement(node: ast.AST) -> bool:
    """A docstring, or any other bare constant (``...``)."""
    return isinstance(node, ast.Expr) and isinstance(node.value, ast.Constant)


def _is_dunder_all(node: ast.AST) -> bool:
    targets: list[ast.expr] = []
    if isinstance(node, ast.Assign):
        targets = node.targets
    elif isinstance(node, (ast.AugAssign, ast.AnnAssign)):
        targets = [node.target]
    return any(isinstance(t, ast.Name) and t.id == "__all__" for t in targets)


def _is_type_alias(node: ast.AST) -> bool:
    if not (isinstance(node, ast.Assign) and len(node.targets) == 1 and isinstance(node.targets[0], ast.Name)):
        return False
    value = node.value
    if isinstance(value, ast.Subscript):
        value = value.value
    return _name(value) in _TYPING


def _quiet_arguments(call: ast.Call) -> list[ast.expr]:
    """The arguments of ``call`` that are types or logging prose."""
    func = call.func
    if _name(func) in _TYPE_CALLS and call.args:
        return call.args[:1]
    if isinstance(func, ast.Attribute) and func.attr in _LOG_METHODS and _name(func.value) in _LOGGERS:
        index = 1 if func.attr == "log" else 0
        message = call.args[index : index + 1]
        return [m for m in message if isinstance(m, (ast.Constant, ast.JoinedStr))]
    return []


class _Finder:
    def __init__(self, source: str, module: str, path: str, nonlocal_names: frozenset[str] = frozenset()) -> None:
        self.lines = source.splitlines()
        self.module = module
        self.path = path
        self.found: list[Mutant] = []
        self._quiet: set[int] = set()  # id() of nodes not to mutate
        self._nonlocal = nonlocal_names  # names some function of the module declares nonlocal

    def emit(self, operator: str, old: ast.AST, new: ast.AST, put: Put) -> None:
        ast.copy_location(new, old)
        line = getattr(old, "lineno", 0)
        source = self.lines[line - 1].strip() if 0 < line <= len(self.lines) else ""
        after = "pass" if isinstance(new, ast.Pass) else _text(new)
        self.found.append(Mutant(self.module, self.path, line, operator, _text(old), after, source, lambda: put(new)))

    def skipped(self, node: ast.AST) -> bool:
        return (
            id(node) in self._quiet
            or _is_type_checking(node)
            or _is_constant_statement(node)
            or _is_dunder_all(node)
            or _is_type_alias(node)
            or isinstance(node, (ast.Import, ast.ImportFrom, ast.Global, ast.Nonlocal, ast.Assert))
        )

    def visit(self, node: ast.AST, put: Put, test: bool = False) -> None:
        if self.skipped(node):
            return
        if isinstance(node, ast.Call):
            self._quiet.update(id(a) for a in _quiet_arguments(node))
        self.mutate(node, put, test)
        if isinstance(node, ast.JoinedStr):
            # The literal parts belong to the f-string mutant; the expressions are code.
            for part in node.values:
                if isinstance(part, ast.FormattedValue):
                    self.visit(part.value, _slot(part, "value", None))
            return
        for name, value in ast.iter_fields(node):
            if name in _ANNOTATION_FIELDS:
                continue
            is_test = (isinstance(node, (ast.If, ast.While, ast.IfExp)) and name == "test") or (
                isinstance(node, ast.comprehension) and name == "ifs"
            )
            if isinstance(value, list):
                for index, child in enumerate(value):
                    if isinstance(child, ast.AST):
                        self.visit(child, _slot(node, name, index), is_test)
            elif isinstance(value, ast.AST):
                self.visit(value, _slot(node, name, None), is_test)

    def mutate(self, node: ast.AST, put: Put, test: bool) -> None:
        operand = _not_operand(node)
        if test and isinstance(node, ast.expr) and not _is_self_negating(node):
            self.emit("negate", node, ast.UnaryOp(ast.Not(), node) if operand is None else operand, put)
        elif operand is not None:
            self.emit("not", node, operand, put)
        if isinstance(node, ast.Compare):
            for index, op in enumerate(node.ops):
                swap = _COMPARE_SWAPS.get(type(op))
                if swap is not None:
                    new = copy.copy(node)
                    new.ops = [swap() if i == index else o for i, o in enumerate(node.ops)]
                    self.emit("compare", node, new, put)
        elif isinstance(node, ast.BoolOp):
            other = ast.Or() if isinstance(node.op, ast.And) else ast.And()
            self.emit("boolop", node, ast.BoolOp(other, node.values), put)
        elif isinstance(node, (ast.BinOp, ast.AugAssign)) and type(node.op) in _ARITH_SWAPS:
            new_op = _ARITH_SWAPS[type(node.op)]()
            if isinstance(node, ast.BinOp):
                self.emit("arith", node, ast.BinOp(node.left, new_op, node.right), put)
            else:
                self.emit("arith", node, ast.AugAssign(node.target, new_op, node.value), put)
        elif isinstance(node, ast.Constant):
            self.mutate_constant(node, put)
        elif isinstance(node, ast.JoinedStr):
            self.emit("string", node, ast.Constant(""), put)
        elif isinstance(node, ast.Return) and node.value is not None and not _is_none(node.value):
            self.emit("return", node, ast.Return(ast.Constant(None)), put)
        elif isinstance(node, ast.Lambda) and not _is_none(node.body):
            self.emit("return", node.body, ast.Constant(None), _slot(node, "body", None))
        if _deletable(node):
            self.emit("delete", node, self._deleted(node), put)

    def _deleted(self, node: ast.AST) -> ast.stmt:
        """What a deleted statement becomes: ``pass``, or the bare annotation of
        a ``nonlocal`` name's binding (the name stays bound, only the value goes)."""
        if isinstance(node, ast.AnnAssign) and isinstance(node.target, ast.Name) and node.target.id in self._nonlocal:
            return ast.AnnAssign(target=node.target, annotation=node.annotation, value=None, simple=node.simple)
        return ast.Pass()

    def mutate_constant(self, node: ast.Constant, put: Put) -> None:
        value = node.value
        if isinstance(value, bool):
            self.emit("bool", node, ast.Constant(not value), put)
        elif isinstance(value, int):
            self.emit("number", node, ast.Constant(value + 1), put)
            self.emit("number", node, ast.Constant(value - 1), put)
        elif isinstance(value, str):
            self.emit("string", node, ast.Constant("" if value else "XX"), put)
        elif isinstance(value, bytes):
            self.emit("string", node, ast.Constant(b"" if value else b"XX"), put)


def _deletable(node: ast.AST) -> bool:
    if isinstance(node, ast.AnnAssign):
        return node.value is not None  # a bare ``x: int`` is an annotation
    return isinstance(node, _DELETABLE) or (isinstance(node, ast.Return) and node.value is None)


def _is_self_negating(node: ast.AST) -> bool:
    """``a == b`` and the like: negating the test is the ``compare`` mutant again."""
    return isinstance(node, ast.Compare) and len(node.ops) == 1 and type(node.ops[0]) in _NEGATING


def _not_operand(node: ast.AST) -> ast.expr | None:
    """``x`` for ``not x``, else None."""
    return node.operand if isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.Not) else None


def _is_none(node: ast.AST) -> bool:
    return isinstance(node, ast.Constant) and node.value is None


def find_mutants(source: str, module: str, path: str) -> tuple[ast.Module, list[Mutant]]:
    """Parse ``source`` and list its mutants, in source order.  Each mutant's
    ``apply`` edits the returned tree in place (apply at most one)."""
    tree = ast.parse(source, filename=path)
    nonlocal_names = frozenset(name for node in ast.walk(tree) if isinstance(node, ast.Nonlocal) for name in node.names)
    finder = _Finder(source, module, path, nonlocal_names)
    for index, statement in enumerate(tree.body):
        finder.visit(statement, _slot(tree, "body", index))
    finder.found.sort(key=lambda m: m.line)  # stable: the walk's order within a line
    return tree, finder.found


def mutated_source(source: str, module: str, path: str, index: int) -> str:
    """The source of mutant number ``index``, applied to a fresh tree."""
    tree, mutants = find_mutants(source, module, path)
    mutants[index].apply()
    return ast.unparse(tree)
