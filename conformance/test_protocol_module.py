"""``codexmini/_generated/`` is what the pinned stable schema generates, and it holds.

Like the schema-fixture test: regenerate in memory, compare with the checked-in
files, and on any difference fail with the command that refreshes them
(``make protocol``).  Then: the tables cover every method of the bundle, the
types resolve under the running Python, every key of every recorded frame is
declared by the types of its method, :class:`codexmini.protocol.Calls` sends
what it says, and ``--without`` (the static drift mechanism) makes mypy fail on
code that reads the removed field.  ``codexmini/protocol.py``, hand-written, re-exports the
generated surface: every name typed for the checker, each fetched on first use at run time.
"""

from __future__ import annotations

import ast
import difflib
import functools
import glob
import hashlib
import importlib
import importlib.util
import inspect
import json
import os
import shutil
import subprocess
import sys
import types
from typing import Any, Dict, List, Literal, Mapping, Optional, Sequence, Tuple, Union, get_args, get_origin

import pytest

import codexmini
from codexmini import CODEX_VERSION, protocol
from codexmini._generated import protocol as surface
from conformance import schema
from conformance.schema import (
    CLIENT_REQUEST,
    KNOWN_UNDECLARED,
    SERVER_NOTIFICATION,
    SERVER_REQUEST,
    SchemaBundle,
    child_path,
)

gen = importlib.import_module("tools.gen_protocol")

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
PACKAGE = os.path.join(ROOT, "codexmini")
FRAMES = sorted(glob.glob(os.path.join(ROOT, "fixtures", CODEX_VERSION, "*.frames.jsonl")))


@functools.lru_cache(maxsize=None)
def _generated() -> Dict[str, str]:
    return gen.generate(CODEX_VERSION)


def _types_module() -> types.ModuleType:
    return importlib.import_module(f"codexmini.{gen.SUBPACKAGE}.{gen.TYPES_MODULE}")


def _is_typeddict(tp: Any) -> bool:
    return isinstance(tp, type) and issubclass(tp, dict) and hasattr(tp, "__required_keys__")


# -- the checked-in module is the generated one ----------------------------------


@pytest.mark.parametrize("name", sorted(gen.generate(CODEX_VERSION)))
def test_protocol_module_is_what_the_schema_generates(name: str) -> None:
    want = _generated()[name]
    path = os.path.join(PACKAGE, *name.split("/"))
    have = ""
    if os.path.exists(path):
        with open(path, encoding="utf-8") as fh:
            have = fh.read()
    if have != want:
        diff = difflib.unified_diff(
            have.splitlines(), want.splitlines(), f"checked-in {name}", "generated", lineterm=""
        )
        excerpt = "\n".join(list(diff)[:40])
        pytest.fail(f"{gen.stale_message(CODEX_VERSION, [name])}\n{excerpt}", pytrace=False)


def test_protocol_module_names_its_bundle() -> None:
    bundle = gen.bundle_path(CODEX_VERSION)
    with open(bundle, "rb") as fh:
        digest = hashlib.sha256(fh.read()).hexdigest()
    assert (protocol.SCHEMA_VERSION, protocol.SCHEMA_FLAVOR, protocol.SCHEMA_SHA256) == (
        CODEX_VERSION,
        "stable",
        digest,
    )
    for name in (gen.SURFACE_FILE, gen.TYPES_FILE):
        header = _generated()[name].splitlines()[:6]
        assert f"codex {CODEX_VERSION}" in header[0] and "#     make protocol" in header[2], header
        assert header[3] == f"# Bundle: fixtures/schema/{CODEX_VERSION}/stable/codex_app_server_protocol.schemas.json"
        assert header[4] == f"# sha256: {digest}"


def test_protocol_check_reports_stale_files_with_the_refresh_command(tmp_path, capsys) -> None:
    assert gen.main(["--check"]) == 0  # the checked-in files
    gen.write_module(str(tmp_path))
    assert gen.main(["--check", "--out", str(tmp_path)]) == 0
    (tmp_path / gen.TYPES_FILE).write_text("# edited\n", encoding="utf-8")
    assert gen.main(["--check", "--out", str(tmp_path)]) == 1
    err = capsys.readouterr().err
    assert "codexmini/_generated/protocol_types.py" in err and "`make protocol`" in err
    assert "protocol.py," not in err and "__init__.py" not in err  # only the edited file is listed


def test_protocol_subpackage_is_the_generators_alone() -> None:
    """Every file of ``codexmini/_generated/`` is one the generator writes; its ``__init__`` says so."""
    directory = os.path.join(PACKAGE, gen.SUBPACKAGE)
    present = {f"{gen.SUBPACKAGE}/{name}" for name in os.listdir(directory) if name.endswith(".py")}
    assert present == set(_generated()) == {gen.INIT_FILE, gen.SURFACE_FILE, gen.TYPES_FILE}
    init = ast.parse(_generated()[gen.INIT_FILE])
    assert len(init.body) == 1 and "tools/gen_protocol.py" in (ast.get_docstring(init) or "")


def test_protocol_generator_refuses_a_mutation_over_the_package() -> None:
    with pytest.raises(SystemExit) as exc:
        gen.main(["--without", "AgentMessageDeltaNotification.delta"])
    assert exc.value.code == 2


def test_protocol_generator_unknown_version_is_a_usage_error(capsys) -> None:
    assert gen.main(["--version", "0.0.0", "--out", "unused"]) == 2
    assert "no schema bundle" in capsys.readouterr().err


# -- the tables and the methods cover the bundle ---------------------------------


@pytest.fixture(scope="module")
def bundle() -> SchemaBundle:
    return SchemaBundle.load(CODEX_VERSION, "stable")


def test_protocol_tables_list_every_stable_method_with_its_types(bundle: SchemaBundle) -> None:
    assert list(protocol.CLIENT_REQUESTS) == bundle.methods(CLIENT_REQUEST)
    assert list(protocol.SERVER_NOTIFICATIONS) == bundle.methods(SERVER_NOTIFICATION)
    assert list(protocol.SERVER_REQUESTS) == bundle.methods(SERVER_REQUEST)
    # Not vacuous: the pinned schema has scores of each (95 and 10 in 0.149.1, 110 and 10 in 0.171.0).
    assert len(protocol.CLIENT_REQUESTS) >= 90 and len(protocol.SERVER_REQUESTS) >= 10
    for method, (params, result) in protocol.CLIENT_REQUESTS.items():
        assert (params, result) == (bundle.params_definition(CLIENT_REQUEST, method), bundle.response_name(method))
    for method, params in protocol.SERVER_NOTIFICATIONS.items():
        assert params == bundle.params_definition(SERVER_NOTIFICATION, method)
    for method, (params, result) in protocol.SERVER_REQUESTS.items():
        assert (params, result) == (bundle.params_definition(SERVER_REQUEST, method), bundle.response_name(method))


def _table_names() -> List[str]:
    names = {n for pair in protocol.CLIENT_REQUESTS.values() for n in pair if n is not None}
    names |= set(protocol.SERVER_NOTIFICATIONS.values())
    names |= {n for pair in protocol.SERVER_REQUESTS.values() for n in pair}
    return sorted(names)


@pytest.mark.parametrize("name", _table_names())
def test_protocol_table_type_is_defined_and_exported(name: str, bundle: SchemaBundle) -> None:
    assert bundle.has_definition(name)
    value = getattr(protocol, name)
    assert value is getattr(_types_module(), name)
    assert name in protocol.__all__


def test_protocol_method_names_follow_the_wire_method() -> None:
    assert gen.snake("thread/fork") == "thread_fork"
    assert gen.snake("account/rateLimits/read") == "account_rate_limits_read"
    assert gen.snake("config/value/write") == "config_value_write"
    assert gen.snake("fuzzyFileSearch/sessionStart") == "fuzzy_file_search_session_start"
    assert gen.snake("a/import") == "a_import" and gen.snake("import") == "import_"


def _run(coro: Any) -> Any:
    """Drive a coroutine that never suspends (the fake request below) to its result."""
    try:
        coro.send(None)
    except StopIteration as stop:
        return stop.value
    raise AssertionError("the coroutine suspended")  # pragma: no cover


@pytest.mark.parametrize("method", list(protocol.CLIENT_REQUESTS))
def test_protocol_calls_method_sends_its_request(method: str) -> None:
    sent: List[Tuple[str, Any, Any]] = []
    answer = {"answer": method}

    async def request(name: str, params: Optional[Mapping[str, Any]], timeout: Optional[float]) -> Any:
        sent.append((name, params, timeout))
        return answer

    calls = protocol.Calls(request)
    bound = getattr(calls, gen.snake(method))
    params_type, result_type = protocol.CLIENT_REQUESTS[method]
    signature = inspect.signature(bound)
    assert signature.return_annotation == result_type
    assert signature.parameters["timeout"].kind is inspect.Parameter.KEYWORD_ONLY
    if params_type is None:
        assert list(signature.parameters) == ["timeout"]
        assert _run(bound(timeout=2.5)) is answer
        assert sent == [(method, None, 2.5)]
    else:
        assert list(signature.parameters) == ["params", "timeout"]
        assert params_type in str(signature.parameters["params"].annotation)
        params = {"probe": 1}
        assert _run(bound(params)) is answer
        assert sent == [(method, params, None)]


def test_protocol_optional_params_default_to_none() -> None:
    # account/usage/read: the branch says ``anyOf [GetAccountTokenUsageParams, null]``.
    sent: List[Any] = []

    async def request(name: str, params: Optional[Mapping[str, Any]], timeout: Optional[float]) -> Any:
        sent.append(params)
        return {}

    _run(protocol.Calls(request).account_usage_read())
    assert sent == [None]
    assert inspect.signature(protocol.Calls.account_usage_read).parameters["params"].default is None


# -- importing it -------------------------------------------------------------------


def _modules_after(statement: str) -> List[str]:
    code = f"import sys, json; {statement}; print(json.dumps(sorted(sys.modules)))"
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, check=True, timeout=60, cwd=ROOT)
    return list(json.loads(done.stdout))


SURFACE_MODULES = {"codexmini.protocol", "codexmini._generated", "codexmini._generated.protocol"}


def test_protocol_import_is_cheap_and_loads_the_types_on_first_use() -> None:
    # `import codexmini` no longer imports typing (its TYPE_CHECKING is a constant); the
    # protocol's surface is typed, so typing comes with it, and nothing else.
    before = set(_modules_after("import codexmini; import typing"))
    loaded = set(_modules_after("import codexmini.protocol")) - before
    assert loaded == SURFACE_MODULES, loaded  # not asyncio, not the types
    # The surface's own names, dir() and __all__ need no type either.
    statement = "import codexmini.protocol as p; p.Calls, p.CLIENT_REQUESTS, p.SCHEMA_VERSION, dir(p), p.__all__"
    loaded = set(_modules_after(statement)) - before
    assert loaded == SURFACE_MODULES, loaded
    loaded = set(_modules_after("from codexmini.protocol import ThreadItem")) - before
    assert loaded == SURFACE_MODULES | {"codexmini._generated.protocol_types"}, loaded


def test_protocol_reexports_the_generated_surface() -> None:
    assert protocol.__all__ == surface.__all__ and protocol.__all__ is not surface.__all__
    for name in ("Calls", "CLIENT_REQUESTS", "SCHEMA_SHA256", "ThreadItem", "AgentMessageThreadItem"):
        assert getattr(protocol, name) is getattr(surface, name), name
    assert protocol.ThreadItem is _types_module().ThreadItem
    assert "ThreadItem" in vars(protocol)  # fetched once, then an attribute like any other


def test_protocol_star_import_binds_every_exported_name() -> None:
    namespace: Dict[str, Any] = {}
    exec("from codexmini.protocol import *", namespace)
    namespace.pop("__builtins__")
    assert set(namespace) == set(protocol.__all__) and len(namespace) > 700
    assert all(namespace[name] is getattr(surface, name) for name in namespace)


def test_protocol_dir_lists_every_exported_name_loaded_or_not() -> None:
    names = dir(protocol)
    assert names == sorted(names) and set(protocol.__all__) <= set(names)
    assert {"__doc__", "__all__"} <= set(names)


@pytest.mark.parametrize("module", [protocol, surface], ids=lambda m: m.__name__)
def test_protocol_unknown_name_is_an_attribute_error(module: types.ModuleType) -> None:
    for name in ("Nope", "_ThreadRequired"):  # unknown; a base class of the types module, not exported
        with pytest.raises(AttributeError, match=f"module '{module.__name__}' has no attribute '{name}'"):
            getattr(module, name)


def test_protocol_modules_show_type_checkers_no_module_getattr() -> None:
    """A module ``__getattr__`` a checker saw would make every name look defined: both modules
    install theirs through ``globals()`` (the mypy test below imports a name that does not exist)."""
    for path in (os.path.join(PACKAGE, "protocol.py"), os.path.join(PACKAGE, *gen.SURFACE_FILE.split("/"))):
        with open(path, encoding="utf-8") as fh:
            tree = ast.parse(fh.read())
        bound = {n.name for n in ast.walk(tree) if isinstance(n, ast.FunctionDef)}
        bound |= {n.id for n in ast.walk(tree) if isinstance(n, ast.Name)}
        assert "_resolve" in bound or "_load_type" in bound  # not vacuous
        assert "__getattr__" not in bound, path


def test_protocol_modules_import_typing_only() -> None:
    for name in (gen.SURFACE_FILE, gen.TYPES_FILE, gen.INIT_FILE):
        tree = ast.parse(_generated()[name])
        imported = set()
        for node in ast.walk(tree):
            if isinstance(node, ast.Import):
                imported |= {(0, alias.name) for alias in node.names}
            elif isinstance(node, ast.ImportFrom):
                imported.add((node.level, node.module or ""))
        assert imported <= {(0, "__future__"), (0, "typing"), (1, ""), (1, gen.TYPES_MODULE)}, (name, imported)


def _bindings(tree: ast.Module) -> List[str]:
    """Every name a module binds at its top level (inside ``if`` blocks too)."""
    names: List[str] = []
    for node in tree.body:
        body = [*node.body, *node.orelse] if isinstance(node, ast.If) else [node]
        for stmt in body:
            if isinstance(stmt, (ast.ClassDef, ast.FunctionDef, ast.AsyncFunctionDef)):
                names.append(stmt.name)
            elif isinstance(stmt, ast.Assign):
                names += [t.id for t in stmt.targets if isinstance(t, ast.Name)]
            elif isinstance(stmt, ast.AnnAssign) and isinstance(stmt.target, ast.Name):
                names.append(stmt.target.id)
            elif isinstance(stmt, ast.ImportFrom):
                names += [alias.asname or alias.name for alias in stmt.names]
    return names


def _twice(names: Sequence[str]) -> List[str]:
    return sorted({n for n in names if names.count(n) > 1})


def test_protocol_duplicate_finder_finds_a_duplicate() -> None:
    snippet = "from typing import Any\nif True:\n    class A: ...\nA = int\nB: Any = 1\ndef B(): ...\n"
    assert _twice(_bindings(ast.parse(snippet))) == ["A", "B"]


def test_protocol_modules_define_no_name_twice() -> None:
    types_tree = ast.parse(_generated()[gen.TYPES_FILE])
    surface_tree = ast.parse(_generated()[gen.SURFACE_FILE])
    type_names = _bindings(types_tree)
    surface_names = _bindings(surface_tree)
    assert _twice(type_names) == [] and _twice(surface_names) == []
    calls = next(n for n in surface_tree.body if isinstance(n, ast.ClassDef) and n.name == "Calls")
    methods = [n.name for n in calls.body if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef))]
    assert _twice(methods) == [] and len(methods) == 1 + len(protocol.CLIENT_REQUESTS)
    # protocol.py re-exports exactly the public names of the types module, and exports them all.
    public = {n for n in type_names if not n.startswith("_") and n not in ("annotations",)}
    public -= {"Any", "Dict", "List", "Literal", "Optional", "TypedDict", "Union"}
    imported = {
        a.name
        for n in ast.walk(surface_tree)
        if isinstance(n, ast.ImportFrom) and n.level and n.module == gen.TYPES_MODULE
        for a in n.names
    }
    assert imported == public and len(public) > 700
    typing_names = {a.name for n in surface_tree.body if isinstance(n, ast.ImportFrom) and not n.level for a in n.names}
    own = {n for n in surface_names if n not in imported | typing_names and not n.startswith("_")}
    assert own == {"Calls", "RequestCallable", "CLIENT_REQUESTS", "SERVER_NOTIFICATIONS", "SERVER_REQUESTS"} | {
        "SCHEMA_VERSION",
        "SCHEMA_FLAVOR",
        "SCHEMA_SHA256",
    }
    assert set(protocol.__all__) == public | own
    assert len(protocol.__all__) == len(set(protocol.__all__))


def _typeddicts() -> List[str]:
    module = _types_module()
    return sorted(n for n, v in vars(module).items() if _is_typeddict(v) and v.__module__ == module.__name__)


def test_protocol_types_resolve_under_this_python() -> None:
    """Every annotation evaluates (``typing.get_type_hints``) and every alias's forward references resolve."""
    import typing

    module = _types_module()
    names = _typeddicts()
    assert len(names) > 700
    for name in names:
        cls = getattr(module, name)
        hints = typing.get_type_hints(cls)
        assert set(hints) == cls.__required_keys__ | cls.__optional_keys__, name
    aliases = [n for n, v in vars(module).items() if not n.startswith("_") and get_origin(v) is not None]
    assert "ThreadItem" in aliases
    for name in aliases:
        holder = types.SimpleNamespace(__annotations__={"x": getattr(module, name)})
        typing.get_type_hints(holder, globalns=vars(module))


def test_protocol_tagged_union_branches_carry_their_tag() -> None:
    module = _types_module()
    branches = get_args(module.ThreadItem)
    tags = [get_args(_hints(_resolve(b))["type"]) for b in branches]
    schema_branches = SchemaBundle.load(CODEX_VERSION, "stable").resolve("#/definitions/v2/ThreadItem")
    assert len(branches) == len(schema_branches["oneOf"]) and all(len(tag) == 1 for tag in tags)  # type: ignore[index]
    assert ("agentMessage",) in [tuple(t) for t in tags] and len({t for (t,) in tags}) == len(tags)
    assert module.AgentMessageThreadItem.__required_keys__ == {"id", "text", "type"}
    assert "phase" in module.AgentMessageThreadItem.__optional_keys__


def _resolve(tp: Any) -> Any:
    """A ``ForwardRef`` left in an alias (``Union["UserMessageThreadItem", ...]``) → the type it names."""
    forward = getattr(tp, "__forward_arg__", None)
    return getattr(_types_module(), forward) if forward else tp


# -- recorded frames: every key is declared by its method's types -------------------


@functools.lru_cache(maxsize=None)
def _hints(cls: type) -> Dict[str, Any]:
    import typing

    return typing.get_type_hints(cls)


def _could_be(value: Any, tp: Any) -> bool:
    """Necessary conditions for ``value`` to be a ``tp`` (to pick a union branch)."""
    tp = _resolve(tp)
    origin = get_origin(tp)
    if tp is Any:
        return True
    if tp is type(None):
        return value is None
    if origin is Literal:
        return value in get_args(tp)
    if origin is list:
        return isinstance(value, list)
    if origin is dict:
        return isinstance(value, dict)
    if origin is Union:
        return any(_could_be(value, a) for a in get_args(tp))
    if _is_typeddict(tp):
        if not isinstance(value, dict) or not tp.__required_keys__ <= set(value):
            return False
        hints = _hints(tp)
        return all(_could_be(value[k], hints[k]) for k in value if k in hints and get_origin(hints[k]) is Literal)
    if tp is float:
        return isinstance(value, (int, float)) and not isinstance(value, bool)
    if tp is int:
        return isinstance(value, int) and not isinstance(value, bool)
    return isinstance(value, tp)


def undeclared(value: Any, tp: Any, path: str = "$") -> List[str]:
    """JSON paths of the object keys in ``value`` that the type ``tp`` does not declare."""
    tp = _resolve(tp)
    origin = get_origin(tp)
    if origin is Union:
        branches = [a for a in get_args(tp) if _could_be(value, a)] or list(get_args(tp))
        return min((undeclared(value, a, path) for a in branches), key=len)
    if _is_typeddict(tp) and isinstance(value, dict):
        hints = _hints(tp)
        out: List[str] = []
        for key, item in value.items():
            where = child_path(path, key)
            out += undeclared(item, hints[key], where) if key in hints else [where]
        return out
    if origin is list and isinstance(value, list):
        return [p for i, item in enumerate(value) for p in undeclared(item, get_args(tp)[0], child_path(path, i))]
    if origin is dict and isinstance(value, dict):
        return [p for k, item in value.items() for p in undeclared(item, get_args(tp)[1], child_path(path, k))]
    return []


def test_protocol_undeclared_finds_keys_the_types_do_not_name() -> None:
    module = _types_module()
    item = {"type": "agentMessage", "id": "i", "text": "t", "extra": 1}
    assert undeclared(item, module.ThreadItem, "$.item") == ["$.item.extra"]
    assert undeclared({"type": "reasoning", "id": "r", "summary": ["s"]}, module.ThreadItem) == []
    nested = {"threadId": "t", "turnId": "u", "tokenUsage": {"last": {"bogus": 1}, "total": {}}}
    assert undeclared(nested, module.ThreadTokenUsageUpdatedNotification) == ["$.tokenUsage.last.bogus"]


def _frames(path: str) -> List[Tuple[str, Dict[str, Any]]]:
    with open(path, encoding="utf-8") as fh:
        return [(line["dir"], line["frame"]) for line in map(json.loads, fh)]


def _known(kind: str, method: str, where: str) -> bool:
    return any(known.matches(kind, method, where) for known in KNOWN_UNDECLARED["stable"])


def test_protocol_recorded_frames_exist() -> None:
    assert len(FRAMES) >= 20, "no recorded frames; run `make record`"


@pytest.mark.parametrize("path", FRAMES, ids=[os.path.basename(p).split(".")[0] for p in FRAMES])
def test_protocol_types_declare_every_key_of_the_recorded_frames(path: str) -> None:
    module = _types_module()
    pending: Dict[Tuple[str, Any], str] = {}  # (direction of the request, id) → method
    checked = 0
    problems: List[str] = []
    for direction, frame in _frames(path):
        method = frame.get("method")
        if method is not None and "id" in frame:
            pending[(direction, frame["id"])] = method
            table = protocol.CLIENT_REQUESTS if direction == "out" else protocol.SERVER_REQUESTS
            kind, name, value, where = "request", table[method][0], frame.get("params"), "$.params"
        elif method is not None:
            if direction == "out":
                continue  # ``initialized``: a client notification, outside the generated surface
            kind, name, value, where = (
                "notification",
                protocol.SERVER_NOTIFICATIONS[method],
                frame["params"],
                "$.params",
            )
        else:
            asked = "in" if direction == "out" else "out"
            method = pending.pop((asked, frame["id"]))
            if "result" not in frame:
                continue  # a JSON-RPC error: the envelope, not a method's type
            table = protocol.SERVER_REQUESTS if direction == "out" else protocol.CLIENT_REQUESTS
            kind, name, value, where = "response", table[method][1], frame["result"], "$.result"
        if name is None:
            assert value is None, f"{method} takes no params but was sent {value!r}"
            continue
        checked += 1
        tp = getattr(module, name)
        problems += [f"{kind} {method}: {p}" for p in undeclared(value, tp, where) if not _known(kind, method, p)]
    assert checked >= 5, f"only {checked} frames of {path} were checked"  # command_exec has 6
    assert not problems, "keys the generated types do not declare:\n" + "\n".join(problems)


# -- generator units ------------------------------------------------------------------


def test_protocol_union_flattens_merges_literals_and_makes_null_optional() -> None:
    expr = gen.union([gen.literal(["a"]), gen.NONE, gen.name_expr("X"), gen.literal(["b", "a"]), gen.name_expr("X")])
    assert expr.flat() == 'Optional[Union[Literal["a", "b"], X]]'
    assert gen.union([gen.name_expr("X"), gen.ANY]).flat() == "Any"
    assert gen.union([gen.NONE]).flat() == "None"


def test_protocol_split_breaks_long_subscripts_like_the_formatter() -> None:
    expr = gen.Expr("Union", tuple(gen.name_expr("N" * 30 + str(i)) for i in range(5)))
    lines = gen.split("", "Alias = ", expr, "")
    assert lines[0] == "Alias = Union[" and lines[-1] == "]"
    assert all(line.startswith("    ") and line.endswith(",") for line in lines[1:-1]) and len(lines) == 7
    short = gen.Expr("Literal", tuple(gen.Expr(f'"{"v" * 20}{i}"') for i in range(4)))
    assert gen.split("", "Short = ", short, "") == [f"Short = {short.flat()}"]


TINY_BUNDLE: Dict[str, Any] = {
    "definitions": {
        "ClientNotification": {"oneOf": []},
        "ServerRequest": {"oneOf": []},
        "ClientRequest": {
            "oneOf": [
                {
                    "properties": {
                        "method": {"enum": ["tree/get"]},
                        "params": {"$ref": "#/definitions/v2/TreeGetParams"},
                    },
                },
                {"properties": {"method": {"enum": ["ping"]}, "params": {"type": "null"}}},
            ]
        },
        "ServerNotification": {
            "oneOf": [{"properties": {"method": {"enum": ["hook"]}, "params": {"$ref": "#/definitions/v2/Hook"}}}]
        },
        "v2": {
            "TreeGetParams": {"type": "object", "properties": {"from": {"type": "string"}}, "required": ["from"]},
            "TreeGetResponse": {
                "type": "object",
                "properties": {"root": {"$ref": "#/definitions/v2/Node"}, "json": {"$ref": "#/definitions/v2/Json"}},
                "required": ["root"],
            },
            "Node": {
                "description": "A node of a tree: recursive.",
                "type": "object",
                "properties": {
                    "children": {"type": "array", "items": {"$ref": "#/definitions/v2/Node"}},
                    "kind": {"oneOf": [{"enum": ["leaf"], "type": "string"}, {"enum": ["branch"], "type": "string"}]},
                    "meta": {"type": ["object", "null"], "additionalProperties": {"type": "integer"}},
                },
                "required": ["children"],
            },
            "Json": {
                "anyOf": [
                    {"type": ["string", "number", "boolean", "null"]},
                    {"type": "array", "items": {"$ref": "#/definitions/v2/Json"}},
                ]
            },
            "PingResponse": {"type": "object"},
            "Hook": {
                "type": "object",
                "properties": {"key": {"type": "string"}},
                "required": ["key"],
                "oneOf": [
                    {
                        "type": "object",
                        "properties": {"kind": {"enum": ["command"]}, "async": {"type": "boolean"}},
                        "required": ["kind"],
                    },
                    {"type": "object", "properties": {"kind": {"enum": ["prompt"]}}, "required": ["kind"]},
                ],
            },
        },
    }
}


def _load_tiny(
    tmp_path: Any, monkeypatch: pytest.MonkeyPatch, without: Sequence[str] = (), ping: str = "PingResponse"
) -> types.ModuleType:
    path = tmp_path / "tiny.json"
    path.write_text(json.dumps(TINY_BUNDLE), encoding="utf-8")
    monkeypatch.setitem(schema.RESPONSE_OVERRIDES, "ping", ping)  # no params to derive it from
    model = gen.build("9.9.9", without, str(path))
    source = gen.render_types(model)
    module = types.ModuleType("tiny_protocol_types")
    monkeypatch.setitem(sys.modules, module.__name__, module)
    exec(compile(source, "tiny_protocol_types.py", "exec"), module.__dict__)
    module.SOURCE = source  # type: ignore[attr-defined]
    module.SURFACE = gen.render_surface(model)  # type: ignore[attr-defined]
    return module


def test_protocol_generator_maps_a_small_schema(tmp_path: Any, monkeypatch: pytest.MonkeyPatch) -> None:
    import typing

    tiny = _load_tiny(tmp_path, monkeypatch)
    # a keyword key: the functional form; required keys stay required
    assert tiny.TreeGetParams.__required_keys__ == {"from"}
    # recursion, Literal merging, a nullable map, a recursive alias
    hints = typing.get_type_hints(tiny.Node)
    assert hints["children"] == List[tiny.Node]
    assert hints["kind"] == Literal["leaf", "branch"]
    assert hints["meta"] == Optional[Dict[str, int]]
    assert tiny.Node.__required_keys__ == {"children"} and tiny.Node.__doc__ == "A node of a tree: recursive."
    assert '\n\nJson = Optional[Union[str, float, bool, List["Json"]]]\n' in tiny.SOURCE
    assert get_origin(typing.get_type_hints(tiny.TreeGetResponse)["json"]) is Union
    # properties + oneOf: one TypedDict per branch with the common keys, named by its tag
    assert [getattr(b, "__forward_arg__", getattr(b, "__name__", None)) for b in get_args(tiny.Hook)] == [
        "CommandHook",
        "PromptHook",
    ]
    assert tiny.CommandHook.__required_keys__ == {"key", "kind"} and tiny.CommandHook.__optional_keys__ == {"async"}
    # an object with no properties is an empty TypedDict; ``ping`` takes no params
    assert tiny.PingResponse.__required_keys__ == frozenset() and tiny.PingResponse.__optional_keys__ == frozenset()
    assert "async def ping(self, *, timeout: Optional[float] = None) -> PingResponse:" in tiny.SURFACE
    assert '"ping": (None, "PingResponse"),' in tiny.SURFACE


def test_protocol_without_removes_one_key_or_says_why(tmp_path: Any, monkeypatch: pytest.MonkeyPatch) -> None:
    tiny = _load_tiny(tmp_path, monkeypatch, without=["Node.meta"])
    assert tiny.Node.__required_keys__ | tiny.Node.__optional_keys__ == {"children", "kind"}
    assert "MUTATED for drift checks: without Node.meta" in tiny.SURFACE
    for bad, message in (("Node.nope", "has no key 'nope'"), ("Nope.x", "no generated TypedDict"), ("Node", "want")):
        with pytest.raises(gen.GenerateError, match=message):
            _load_tiny(tmp_path, monkeypatch, without=[bad])


def test_protocol_generator_names_the_override_a_new_request_needs(
    tmp_path: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    with pytest.raises(gen.GenerateError, match="PingReply does not exist.*add 'ping' to RESPONSE_OVERRIDES"):
        _load_tiny(tmp_path, monkeypatch, ping="PingReply")
    monkeypatch.delitem(schema.RESPONSE_OVERRIDES, "ping")
    path = tmp_path / "tiny.json"
    with pytest.raises(gen.GenerateError, match="'ping' has no params definition.*RESPONSE_OVERRIDES"):
        gen.build("9.9.9", (), str(path))


# -- static drift detection: mypy sees a removed field -------------------------------

SNIPPET = """\
from __future__ import annotations

from .protocol import CLIENT_REQUESTS, AgentMessageDeltaNotification, Calls, ThreadItem


def f(p: AgentMessageDeltaNotification) -> str:
    return p["delta"]


def text(item: ThreadItem) -> str:
    if item["type"] == "agentMessage":
        return item["text"]  # narrowed to AgentMessageThreadItem
    return ""


async def fork(calls: Calls) -> str:
    response = await calls.thread_fork({"threadId": "t"})
    return response["thread"]["id"]


def result_type(method: str) -> str:
    return CLIENT_REQUESTS[method][1]
"""


def _mypy() -> List[str]:
    if importlib.util.find_spec("mypy") is None:
        pytest.skip("mypy is not installed (pip install mypy): the static drift check needs it")
    return [sys.executable, "-m", "mypy"]


def test_protocol_mypy_fails_on_a_removed_field_and_passes_without_the_mutation(tmp_path: Any) -> None:
    """Through the public re-export (``protocol.py``, copied beside each generated subpackage):
    the snippet passes against the plain module, fails on the one line that reads the removed
    field against the mutated one, and a name the schema does not define is an error too."""
    mypy = _mypy()
    gen.write_module(str(tmp_path / "plain"))
    assert gen.main(["--without", "AgentMessageDeltaNotification.delta", "--out", str(tmp_path / "mutated")]) == 0
    for package in ("plain", "mutated"):
        (tmp_path / package / "__init__.py").write_text("", encoding="utf-8")
        shutil.copy(os.path.join(PACKAGE, "protocol.py"), str(tmp_path / package / "protocol.py"))
        (tmp_path / package / "snippet.py").write_text(SNIPPET, encoding="utf-8")
    shutil.copytree(str(tmp_path / "plain"), str(tmp_path / "missing"))
    (tmp_path / "missing" / "snippet.py").write_text("from .protocol import NoSuchType, ThreadItem\n", encoding="utf-8")
    command = [*mypy, "--strict", "--cache-dir", str(tmp_path / ".mypy_cache"), "plain", "mutated", "missing"]
    done = subprocess.run(command, cwd=str(tmp_path), capture_output=True, text=True, timeout=600, check=False)
    errors = [line for line in done.stdout.splitlines() if ": error:" in line]
    assert done.returncode == 1, done.stdout + done.stderr
    found = {
        package: [line for line in errors if line.startswith(os.path.join(package, ""))]
        for package in ("plain", "mutated", "missing")
    }
    assert sum(map(len, found.values())) == len(errors) and found["plain"] == [], errors
    (unknown,) = found["missing"]
    assert unknown.startswith(os.path.join("missing", "snippet.py") + ":1: error:"), unknown
    assert 'Module "missing.protocol" has no attribute "NoSuchType"' in unknown, unknown
    # Only the line that reads the removed key fails (mypy adds "Returning Any" for the same line).
    mutated = found["mutated"]
    assert mutated and all(line.startswith(os.path.join("mutated", "snippet.py") + ":7: error:") for line in mutated)
    assert any('TypedDict "AgentMessageDeltaNotification" has no key "delta"' in line for line in mutated), errors


def _package_copy(target: Any) -> str:
    """A copy of ``codexmini/`` under ``target`` (no caches), for mypy to check."""
    dest = os.path.join(str(target), "codexmini")
    shutil.copytree(PACKAGE, dest, ignore=shutil.ignore_patterns("__pycache__", "*.pyc"))
    return dest


def _mypy_package(mypy: List[str], root: Any, cache: Any) -> "subprocess.CompletedProcess[str]":
    config = os.path.join(str(root), "mypy.ini")
    with open(config, "w", encoding="utf-8") as fh:  # the gate's settings ([tool.mypy]), nothing inherited
        fh.write("[mypy]\nstrict = True\nwarn_unreachable = True\n")
    command = [*mypy, "--config-file", config, "--cache-dir", str(cache), "-p", "codexmini"]
    return subprocess.run(command, cwd=str(root), capture_output=True, text=True, timeout=900, check=False)


def test_protocol_mypy_flags_the_package_reading_a_field_a_new_schema_removed(tmp_path: Any) -> None:
    """Static drift detection over the real package: codexmini as it is passes
    ``mypy --strict``; the same package against a protocol module generated
    without ``AgentMessageDeltaNotification.delta`` -- the field the mapping's
    hot path reads -- fails, on exactly the lines of ``_mapping.py`` that read it."""
    mypy = _mypy()
    plain, mutated = tmp_path / "plain", tmp_path / "mutated"
    _package_copy(plain)
    target = _package_copy(mutated)
    assert gen.main(["--without", "AgentMessageDeltaNotification.delta", "--out", target]) == 0
    with open(os.path.join(target, *gen.TYPES_FILE.split("/")), encoding="utf-8") as fh:
        assert "# MUTATED for drift checks" in fh.read()  # written over the copy's own subpackage
    unmutated = _mypy_package(mypy, plain, tmp_path / "cache")
    assert unmutated.returncode == 0, unmutated.stdout + unmutated.stderr
    done = _mypy_package(mypy, mutated, tmp_path / "cache")
    errors = [line for line in done.stdout.splitlines() if ": error:" in line]
    assert done.returncode == 1 and errors, done.stdout + done.stderr
    with open(os.path.join(PACKAGE, "_mapping.py"), encoding="utf-8") as fh:
        source = fh.read().splitlines()
    for line in errors:
        where, _, message = line.partition(": error: ")
        path, lineno = where.split(":")[:2]
        assert path == os.path.join("codexmini", "_mapping.py"), line
        assert '"delta"' in source[int(lineno) - 1] and '"object"' in message, line
    assert len(errors) >= 2  # the hot path and its precise-error fallback


#: The repository's lint gate (``[tool.ruff]`` in pyproject.toml), for a checkout that has none.
RUFF_GATE = ["--select", "E,F,W,I,B,C4,RUF100", "--ignore", "E501,C408"]


def test_protocol_generated_module_is_ruff_clean(tmp_path: Any) -> None:
    ruff = shutil.which("ruff") or shutil.which("ruff", path=os.path.dirname(sys.executable))
    if ruff is None:
        pytest.skip("ruff is not installed (pip install ruff==0.17.6): the layout check needs it")
    with open(os.path.join(ROOT, "pyproject.toml"), encoding="utf-8") as fh:
        configured = "[tool.ruff" in fh.read()
    # The generated text, checked where the repository's configuration applies.
    target = tmp_path / "codexmini"
    files = gen.write_module(str(target))
    settings = ["--config", os.path.join(ROOT, "pyproject.toml")] if configured else ["--isolated"]
    for args in (["format", "--check"], ["check", *([] if configured else RUFF_GATE)]):
        command = [ruff, *args, *settings, "--target-version", "py39", "--line-length", "120", *files]
        done = subprocess.run(command, capture_output=True, text=True, timeout=120, check=False, cwd=ROOT)
        assert done.returncode == 0, f"ruff {' '.join(args)}:\n{done.stdout}{done.stderr}"


def test_protocol_package_version_is_the_schema_version() -> None:
    assert codexmini.CODEX_VERSION == protocol.SCHEMA_VERSION
