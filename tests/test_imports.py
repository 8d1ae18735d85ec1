"""What the package may import, read from its source with ``ast``.

Three rules (standard library only, vendorable, a pure core inside an I/O shell),
and a pin of what each public import loads (import cost):

* every module of ``codexmini/`` imports the standard library and the package
  itself only, and the package itself only relatively (so it stays
  vendorable under another name);
* the pure modules import no I/O or clock module (directly, or through a
  module of the package that does) and never read ``os.environ``;
* ``__all__`` says exactly what the package exports, and every module's
  ``__all__`` names exist;
* ``from codexmini import AppServerClient`` (``Agent``, ``sync``) loads,
  beyond ``asyncio``, the package modules pinned here and of the standard
  library ``json`` (and the session log's ``fcntl``) only: what some calls
  need is imported where it is used (checked in a fresh interpreter).

The checks are run against small snippets first, so a checker that silently
found nothing would fail here rather than pass vacuously.
"""

from __future__ import annotations

import ast
import copy
import importlib
import importlib.util
import os
import subprocess
import sys
import sysconfig
from pathlib import Path
from typing import Dict, Iterator, List, Optional, Set, Tuple

import pytest

import codexmini
from tools import floors

PACKAGE_DIR = Path(codexmini.__file__).resolve().parent


def _dotted(path: Path) -> str:
    """``_wire`` for ``codexmini/_wire.py``, ``testing.scripted_model`` in a subpackage."""
    return ".".join(path.relative_to(PACKAGE_DIR).with_suffix("").parts)


MODULES: Dict[str, Path] = {_dotted(path): path for path in sorted(PACKAGE_DIR.rglob("*.py"))}

PURE = (
    "_wire",
    "_rpc",
    "_turnfold",
    "_items",
    "_inbox",
    "_endpoint",
    "_mapping",
    "_permission",
    "_prompt",
    "_environment",
    "_errors",
    "_events",
    "_stepfold",
    "_jsonschema",
    "_structured",
    "_retry",
    "_extras",
    "_jsontext",
    "_version",
    "_launch",
    "_knobs",
    "_inputs",
    "_transport",
    "_connect",
    "_websocket",
    "_dataclasses",
    # the protocol: typing only, so importing it never starts anything
    "protocol",
    "_generated.__init__",
    "_generated.protocol",
    "_generated.protocol_types",
)
PURE_REQUIRED = ("_wire", "_rpc", "_turnfold", "_inbox", "_permission", "_prompt", "_environment")
FORBIDDEN_IN_PURE = frozenset({"asyncio", "subprocess", "threading", "socket", "selectors", "signal", "time"})
ENVIRON_READERS = frozenset({"environ", "environb", "getenv", "getenvb", "putenv", "unsetenv"})


# -- what counts as the standard library ----------------------------------------


def _real(path: Optional[str]) -> str:
    return os.path.realpath(path) if path else ""


def _inside(path: str, directory: str) -> bool:
    return bool(directory) and (path == directory or path.startswith(directory.rstrip(os.sep) + os.sep))


def is_stdlib_by_location(name: str) -> bool:
    """Python 3.9 has no ``sys.stdlib_module_names``: ask where the module lives.

    A top-level module is standard library when it is built in or frozen, or
    when its file is under the interpreter's ``stdlib``/``platstdlib``
    directory but not under a site-packages directory (those sit inside the
    stdlib directory on a default install).
    """
    if name in sys.builtin_module_names:
        return True
    try:
        spec = importlib.util.find_spec(name)
    except (ImportError, ValueError):
        return False
    if spec is None:
        return False
    if spec.origin in ("built-in", "frozen"):
        return True
    location = spec.origin if spec.has_location else None
    if location is None and spec.submodule_search_locations:
        location = list(spec.submodule_search_locations)[0]
    location = _real(location)
    if not location:
        return False
    stdlib_dirs = {_real(sysconfig.get_path(key)) for key in ("stdlib", "platstdlib")}
    site_dirs = {_real(sysconfig.get_path(key)) for key in ("purelib", "platlib")}
    site_dirs |= {
        _real(p) for p in sys.path if os.path.basename(p.rstrip(os.sep)) in ("site-packages", "dist-packages")
    }
    return any(_inside(location, d) for d in stdlib_dirs) and not any(_inside(location, d) for d in site_dirs)


def is_stdlib(name: str) -> bool:
    names = getattr(sys, "stdlib_module_names", None)  # 3.10+
    if names is not None:
        return name in names
    return is_stdlib_by_location(name)


# -- reading imports -----------------------------------------------------------


def parse(path: Path) -> ast.Module:
    return ast.parse(path.read_text(encoding="utf-8"), filename=str(path))


def imports(tree: ast.AST) -> Iterator[Tuple[int, int, str]]:
    """``(line, level, dotted name)`` of every import, function-level ones included.

    ``from . import x`` gives ``(line, 1, "x")``; ``from .a import b`` gives
    ``(line, 1, "a")``; ``import a.b`` gives ``(line, 0, "a.b")``.  Literal
    ``importlib.import_module("x")`` and ``__import__("x")`` calls count too.
    """
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            for alias in node.names:
                yield node.lineno, 0, alias.name
        elif isinstance(node, ast.ImportFrom):
            if node.level and not node.module:
                for alias in node.names:
                    yield node.lineno, node.level, alias.name
            else:
                yield node.lineno, node.level, node.module or ""
        elif isinstance(node, ast.Call) and node.args and isinstance(node.args[0], ast.Constant):
            func = node.func
            called = func.attr if isinstance(func, ast.Attribute) else getattr(func, "id", "")
            if called in ("import_module", "__import__") and isinstance(node.args[0].value, str):
                level = len(node.args[0].value) - len(node.args[0].value.lstrip("."))
                yield node.lineno, level, node.args[0].value.lstrip(".")


#: Non-stdlib imports the package may make: none.  (The smoke run validates
#: frames with codexmini's own stdlib validator; it no longer reaches into the
#: repository's conformance suite.)  The set stays so that an exception would
#: have to be written here, with its reason.
OPTIONAL_IMPORTS: Set[Tuple[str, str]] = set()  # the opt-in pytest plugin is codexmini_pytest.py, outside


def import_problems(tree: ast.AST, module: str = "") -> List[str]:
    """Imports that break the stdlib-only, relative-only rule."""
    problems = []
    depth = module.count(".") + 1  # how many levels a relative import may climb
    for line, level, name in imports(tree):
        top = name.split(".")[0]
        if (module, name) in OPTIONAL_IMPORTS:
            continue
        if level > depth:
            problems.append(f"line {line}: relative import beyond the package ({'.' * level}{name})")
        elif level:
            continue
        elif top == "codexmini":
            problems.append(f"line {line}: absolute import of {name!r}; use a relative import (vendoring)")
        elif not is_stdlib(top):
            problems.append(f"line {line}: {name!r} is not in the standard library")
    return problems


def _without_type_checking(tree: ast.AST) -> ast.AST:
    """``tree`` minus its ``if TYPE_CHECKING:`` blocks (never run, so no import)."""
    tree = copy.deepcopy(tree)
    for node in ast.walk(tree):
        for field in ("body", "orelse"):
            body = getattr(node, field, None)
            if isinstance(body, list):
                body[:] = [
                    n
                    for n in body
                    if not (isinstance(n, ast.If) and isinstance(n.test, ast.Name) and n.test.id == "TYPE_CHECKING")
                ]
    return tree


def _module_of(parts: List[str]) -> Optional[str]:
    """The key in MODULES of a dotted path inside the package: a module, or a package's ``__init__``."""
    dotted = ".".join(parts)
    for name in (dotted, f"{dotted}.__init__" if dotted else "__init__"):
        if name in MODULES:
            return name
    return None


def internal_targets(tree: ast.AST, module: str = "") -> Set[str]:
    """Package modules a module imports relatively when it runs (keys of MODULES;
    ``if TYPE_CHECKING:`` blocks do not count).  ``from .x import y`` in
    ``_generated.protocol`` runs ``_generated.x``, and ``_generated.x.y`` too if
    that is a module; a name that is no module is its package's ``__init__``."""
    package = module.split(".")[:-1]
    runtime = _without_type_checking(tree)
    targets = set()
    for _, level, name in imports(runtime):
        if level:
            base = package[: len(package) - level + 1]
            targets.add(_module_of([*base, *name.split(".")]) or _module_of(base) or "__init__")
    for node in ast.walk(runtime):  # ``from .pkg import sub``: the submodule runs too
        if isinstance(node, ast.ImportFrom) and node.level and node.module:
            base = [*package[: len(package) - node.level + 1], *node.module.split(".")]
            targets |= {found for alias in node.names if (found := _module_of([*base, alias.name]))}
    return targets


def boundary_problems(tree: ast.AST) -> List[str]:
    """I/O or clock imports and environment reads in a module that must be pure."""
    problems = []
    for line, level, name in imports(tree):
        if level == 0 and name.split(".")[0] in FORBIDDEN_IN_PURE:
            problems.append(f"line {line}: imports {name}")
    os_names = {"os"}
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            os_names |= {alias.asname for alias in node.names if alias.name == "os" and alias.asname}
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom) and node.level == 0 and node.module == "os":
            for alias in node.names:
                if alias.name in ENVIRON_READERS or alias.name == "*":
                    problems.append(f"line {node.lineno}: from os import {alias.name}")
        elif (
            isinstance(node, ast.Attribute)
            and node.attr in ENVIRON_READERS
            and isinstance(node.value, ast.Name)
            and node.value.id in os_names
        ):
            problems.append(f"line {node.lineno}: reads {node.value.id}.{node.attr}")
    return problems


# -- the checkers themselves ---------------------------------------------------


@pytest.mark.parametrize(
    "source, expected",
    [
        ("import json\nfrom typing import Any\nfrom . import wire\nfrom .errors import X", []),
        ("import __future__\nfrom __future__ import annotations\nimport os.path", []),
        ("def f():\n    import pytest", ["'pytest' is not in the standard library"]),
        ("from jsonschema import validators", ["'jsonschema' is not in the standard library"]),
        ("import codexmini._wire", ["absolute import of 'codexmini._wire'"]),
        ("from codexmini import wire", ["absolute import of 'codexmini'"]),
        ("from .. import x", ["relative import beyond the package"]),
        ("import importlib\nimportlib.import_module('yaml')", ["'yaml' is not in the standard library"]),
        ("__import__('codexmini')", ["absolute import of 'codexmini'"]),
    ],
)
def test_imports_checker_flags_what_it_should(source, expected):
    problems = import_problems(ast.parse(source))
    assert len(problems) == len(expected), problems
    for problem, fragment in zip(problems, expected):
        assert fragment in problem


@pytest.mark.parametrize(
    "source, flagged",
    [
        ("import json\nimport os\nos.path.join('a', 'b')", 0),
        ("import asyncio.subprocess", 1),
        ("from time import monotonic", 1),
        ("def f():\n    import threading", 1),
        ("import os\nos.environ.get('X')", 1),
        ("import os as _os\n_os.getenv('X')", 1),
        ("from os import environ", 1),
        ("from os import getenv as g", 1),
        ("import signal, socket, selectors", 3),
    ],
)
def test_imports_boundary_checker_flags_what_it_should(source, flagged):
    assert len(boundary_problems(ast.parse(source))) == flagged


def test_imports_stdlib_detection_by_location_agrees_with_the_interpreter():
    names = {
        name.split(".")[0]
        for module, path in MODULES.items()
        for _, level, name in imports(parse(path))
        if not level and (module, name) not in OPTIONAL_IMPORTS
    }
    names |= {"json", "asyncio", "os", "sys", "__future__", "collections", "dataclasses", "typing", "_thread"}
    assert all(is_stdlib_by_location(name) for name in names), [n for n in names if not is_stdlib_by_location(n)]
    for third_party in ("pytest", "_pytest", "jsonschema", "no_such_module_anywhere"):
        assert not is_stdlib_by_location(third_party), third_party
    if hasattr(sys, "stdlib_module_names"):
        assert {n for n in names if is_stdlib_by_location(n)} <= set(sys.stdlib_module_names)


# -- the package ---------------------------------------------------------------


def test_imports_package_modules_found():
    assert {"__init__", "_wire", "_client", "_binary", "_environment", "_errors", "testing.scripted_model"} <= set(
        MODULES
    )
    assert {"protocol", "_generated.__init__", "_generated.protocol", "_generated.protocol_types"} <= set(MODULES)


@pytest.mark.parametrize(
    "module, source, expected",
    [
        ("_mapping", "from ._wire import x\nfrom . import _errors, CODEX_VERSION", {"_wire", "_errors", "__init__"}),
        ("_mapping", "if TYPE_CHECKING:\n    from .protocol import ThreadItem", set()),
        ("protocol", "from ._generated import protocol as p", {"_generated.__init__", "_generated.protocol"}),
        ("_generated.protocol", "def f():\n    from . import protocol_types", {"_generated.protocol_types"}),
        ("_generated.protocol", "from .. import _wire\nfrom ..protocol import X", {"_wire", "protocol"}),
        ("_generated.protocol", "from . import nothing_here", {"_generated.__init__"}),
    ],
)
def test_imports_internal_targets_resolve_inside_subpackages(module, source, expected):
    assert internal_targets(ast.parse(source), module) == expected


@pytest.mark.parametrize("name", sorted(MODULES))
def test_imports_stdlib_and_relative_only(name):
    problems = import_problems(parse(MODULES[name]), name)
    assert not problems, f"codexmini/{name}.py: " + "; ".join(problems)


def test_imports_pure_modules_exist():
    missing = [name for name in PURE_REQUIRED if name not in MODULES]
    assert not missing


@pytest.mark.parametrize("name", ["__init__", *PURE])
def test_imports_pure_modules_do_no_io(name):
    if name not in MODULES:
        pytest.skip(f"codexmini/{name}.py does not exist (yet)")
    tree = parse(MODULES[name])
    problems = boundary_problems(tree)
    # Importing a module of the package runs it, so a pure module may only
    # import other pure modules (and the package, whose __init__ is checked here too).
    allowed = set(PURE) | {"__init__"}
    problems += [
        f"imports codexmini.{target}, which is not pure" for target in sorted(internal_targets(tree, name) - allowed)
    ]
    assert not problems, f"codexmini/{name}.py: " + "; ".join(problems)


# -- __all__ -------------------------------------------------------------------


def importable_modules() -> List[str]:
    # __main__ runs the CLI when imported; it defines nothing to export.
    return [name for name in sorted(MODULES) if name.rsplit(".", 1)[-1] not in ("__init__", "__main__")]


@pytest.mark.parametrize("name", importable_modules())
def test_imports_module_all_names_exist(name):
    module = importlib.import_module(f"codexmini.{name}")
    names = getattr(module, "__all__", None)
    if names is None:
        pytest.skip(f"codexmini.{name} defines no __all__")
    assert len(names) == len(set(names)), f"duplicates in codexmini.{name}.__all__"
    assert all(isinstance(n, str) for n in names)
    missing = [n for n in names if not hasattr(module, n)]
    assert not missing, f"codexmini.{name}.__all__ names missing attributes: {missing}"


# -- the floor plan (tools/floors.py) --------------------------------------------


def test_imports_no_cycle_and_nobody_imports_the_package_face():
    edges = floors.graph()
    assert set(edges) == {"__init__" if name == "__init__" else name for name in floors.modules()}
    assert floors.cycles(edges) == []
    assert floors.face_imports(edges) == []
    assert floors.main(["--check"]) == 0


def test_imports_floor_checks_catch_a_cycle_and_an_import_of_the_face(capsys):
    edges = {"__init__": {"_a"}, "_a": {"_b"}, "_b": {"_a", "_c"}, "_c": {"__init__"}}
    assert floors.cycles(edges) == [["_a", "_b", "_a"], ["__init__", "_a", "_b", "_c", "__init__"]]
    assert floors.face_imports(edges) == ["_c"]
    assert floors.floors({"_x": {"_y"}, "_y": set(), "_z": {"_x", "_y"}}) == {"_x": 2, "_y": 1, "_z": 3}
    assert floors.plan({"_x": {"_y"}, "_y": set()}) == "floor 2  _x\nfloor 1  _y\n"


def test_imports_floor_graph_reads_every_kind_of_relative_import(tmp_path):
    package = tmp_path / "pkg"
    (package / "sub").mkdir(parents=True)
    (package / "__init__.py").write_text("from ._a import A\n")
    (package / "_a.py").write_text("from . import _b\nfrom .sub import leaf\nA = 1\n")
    (package / "_b.py").write_text("def f():\n    from .sub.leaf import x\n    return x\n")
    (package / "sub" / "__init__.py").write_text("")
    (package / "sub" / "leaf.py").write_text("from .. import _b\nfrom .._a import A\nx = 1\n")
    edges = floors.graph(str(package))
    assert edges == {
        "__init__": {"_a"},
        "_a": {"_b", "sub", "sub.leaf"},  # from .sub import leaf runs sub too
        "_b": {"sub.leaf"},
        "sub": set(),
        "sub.leaf": {"_b", "_a"},
    }


def test_imports_the_documented_floor_plan_is_current():
    with open(os.path.join(floors.ROOT, "docs", "architecture.md"), encoding="utf-8") as fh:
        text = fh.read()
    shown = text.split("<!-- floors: begin -->\n```\n", 1)[1].split("```\n<!-- floors: end -->", 1)[0]
    assert shown == floors.plan(floors.graph()), "docs/architecture.md: paste what `python tools/floors.py` prints"


# -- what the public imports load (their cost: make bench, section 3) ----------------------

ROOT = str(PACKAGE_DIR.parent)

#: Beyond ``import asyncio`` (which the client needs anyway), the standard library an
#: import of the package may load: ``json`` (the wire's) and ``fcntl`` (the session
#: log's lock; the asyncio of Python 3.11 loads it already).  Anything else -- pathlib,
#: shutil, glob, random, hashlib, hmac, urllib.parse, uuid, platform, html, dataclasses,
#: numbers ... -- is imported where it is used, not with the package.
IMPORT_STDLIB = frozenset({"__future__", "json", "json.decoder", "json.encoder", "json.scanner", "_json", "fcntl"})

_CLIENT = {
    "_client",
    "_rpc",
    "_wire",
    "_jsontext",
    "_subscriptions",
    "_extras",
    "_deadline",
    "_retry",
    "_permission",
    "_launch",
}
_CORE = {"__init__", "_version", "_errors", "_dataclasses"}  # (the agent loads neither the wire nor json)
_AGENT = {
    "_agent",
    "_events",
    "_prompt",
    "_inbox",
    "_inputs",
    "_permission",
    "_launch",
}
# The blocking facade names the client stack in its signatures only (under TYPE_CHECKING)
# and imports it when a Client or a daemon call starts one.
_SYNC = _AGENT | {"sync", "_run", "_portal"}

#: What each public import loads of the package, exactly: a module added to one of these
#: paths is a decision (its cost shows in the bench), not an accident of an import line.
#: The client's stdio child, the binary finder, the transports, the typed events, the
#: schema validator, the skills: where they are used.  The agent and ``sync`` import
#: the client when they start codex, a turn's folds (and the event mapping) at a turn,
#: the async thread (``_threads``) at the first one; the session log is the caller's.
PUBLIC_IMPORTS = {
    "from codexmini import AppServerClient": _CORE | _CLIENT,
    "from codexmini import Agent": _CORE | _AGENT,
    "import codexmini.sync": _CORE | _SYNC,
    "from codexmini import sync": _CORE | _SYNC,
}


def loaded_beyond_asyncio(statement: str) -> Tuple[Set[str], Set[str]]:
    """(the package's modules, the standard library's) that ``statement`` loads in a
    fresh interpreter after ``import asyncio`` (no site: nothing imported at start-up
    but the interpreter's own)."""
    code = (
        f"import sys; sys.path.insert(0, {ROOT!r}); import asyncio; before = set(sys.modules); {statement}; "
        "print(sorted(set(sys.modules) - before))"
    )
    done = subprocess.run([sys.executable, "-I", "-S", "-c", code], capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    names = ast.literal_eval(done.stdout.strip().splitlines()[-1])
    ours = {"__init__" if n == "codexmini" else n.split(".", 1)[1] for n in names if n.split(".")[0] == "codexmini"}
    return ours, {n for n in names if n.split(".")[0] != "codexmini"}


@pytest.mark.parametrize("statement", sorted(PUBLIC_IMPORTS))
def test_imports_what_a_public_import_loads(statement: str) -> None:
    ours, stdlib = loaded_beyond_asyncio(statement)
    assert stdlib <= IMPORT_STDLIB, f"{statement!r} imports {sorted(stdlib - IMPORT_STDLIB)} (import them where used)"
    assert ours == PUBLIC_IMPORTS[statement], (
        f"{statement!r} loads {sorted(ours - PUBLIC_IMPORTS[statement])} more"
        f" and {sorted(PUBLIC_IMPORTS[statement] - ours)} less than pinned"
    )


def test_imports_the_package_alone_loads_its_version_only() -> None:
    code = f"import sys; sys.path.insert(0, {ROOT!r}); before = set(sys.modules); import codexmini; print(sorted(set(sys.modules) - before))"
    done = subprocess.run([sys.executable, "-I", "-S", "-c", code], capture_output=True, text=True, timeout=120)
    assert ast.literal_eval(done.stdout.strip().splitlines()[-1]) == ["__future__", "codexmini", "codexmini._version"]


def test_imports_the_load_check_sees_what_a_call_imports() -> None:
    # The check can fail: a retry's jitter imports random, a Connect urllib.parse.
    _, stdlib = loaded_beyond_asyncio("from codexmini._retry import default_jitter; default_jitter()")
    assert "random" in stdlib and "random" not in IMPORT_STDLIB
    ours, stdlib = loaded_beyond_asyncio("from codexmini import Connect; Connect('ws://127.0.0.1:1')")
    assert "urllib.parse" in stdlib and "_connect" in ours
