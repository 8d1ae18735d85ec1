"""The public API: ``from codexmini import …`` is the whole surface.

``__all__`` is the list the README's table of public names shows (the one
place a user reads them; ``_EXPORTS`` in ``codexmini/__init__.py`` is the one
place it is written), every name imports and has a docstring, and importing
the package stays cheap: no ``asyncio`` or ``subprocess`` until a name that
needs them is used.  Every public class has a docstring of its own -- not
inherited, not the ``Name(field: type, ...)`` one ``dataclasses`` generates for
a class without one -- and every public dataclass names each of its fields in
it.
"""

from __future__ import annotations

import dataclasses
import inspect
import json
import os
import re
import subprocess
import sys
import typing
from typing import List

import pytest

import codexmini
from tools import gen_public

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
TABLE_HEAD = "The public names, by what they are for:"


def readme_names(text: str) -> List[str]:
    """The names the README's table of public names shows, in its order (a
    submodule such as ``codexmini.sync`` is not a name of ``__all__``)."""
    table = text.split(TABLE_HEAD, 1)[1].split("\n\n", 2)[1]
    found: List[str] = []
    for row in table.splitlines()[2:]:
        for name in re.findall(r"`([A-Za-z_][A-Za-z0-9_.]*)`", row.split("|")[2]):
            if "." not in name and name not in found:
                found.append(name)
    return found


with open(os.path.join(ROOT, "README.md"), encoding="utf-8") as _fh:
    #: The documented public names: the README's table (the one place a user reads them).
    DOCUMENTED: List[str] = readme_names(_fh.read())


def test_public_api_all_is_the_documented_list() -> None:
    assert sorted(codexmini.__all__) == sorted(DOCUMENTED)
    assert len(codexmini.__all__) == len(set(codexmini.__all__))


def test_public_api_readme_table_reader_reads_names_not_submodules() -> None:
    text = f"x\n{TABLE_HEAD}\n\n| | |\n|---|---|\n| a | `run`, `Thread` (`Turn`); `codexmini.sync` |\n| b | `run` |\n\nmore `X`\n"
    assert readme_names(text) == ["run", "Thread", "Turn"]


@pytest.mark.parametrize("name", DOCUMENTED)
def test_public_api_name_imports_and_is_documented(name: str) -> None:
    value = getattr(codexmini, name)
    if name in ("__version__", "CODEX_VERSION", "OLDEST_CODEX_VERSION"):
        assert isinstance(value, str) and value.count(".") == 2
        return
    if typing.get_origin(value) is not None:  # a typing alias (Event, SandboxMode, …): documented in its module
        assert name in ("Event", "SandboxMode", "ApprovalPolicy")
        return
    assert inspect.getdoc(value), f"codexmini.{name} has no docstring"


def test_public_api_type_checkers_see_what_the_table_exports() -> None:
    # The TYPE_CHECKING block is written from _EXPORTS (make public), never by hand.
    with open(gen_public.INIT, encoding="utf-8") as fh:
        source = fh.read()
    assert gen_public.render(source) == source, "stale: run `make public`"
    assert gen_public.exports(source.partition(gen_public.MARK)[0]) == codexmini._EXPORTS
    assert gen_public.main(["--check"]) == 0


def test_public_api_block_follows_a_changed_table(tmp_path, monkeypatch, capsys) -> None:
    with open(gen_public.INIT, encoding="utf-8") as fh:
        source = fh.read()
    changed = source.replace('    "Agent": "_agent",\n', '    "Agent": "_agent",\n    "Extra": "_agent",\n')
    assert changed != source
    block = gen_public.render(changed).partition(gen_public.MARK)[2]
    assert "    from ._agent import Extra as Extra\n" in block
    copy = tmp_path / "__init__.py"
    copy.write_text(changed, encoding="utf-8")
    monkeypatch.setattr(gen_public, "INIT", str(copy))
    assert gen_public.main(["--check"]) == 1 and "run `make public`" in capsys.readouterr().err
    assert gen_public.main([]) == 0 and gen_public.main(["--check"]) == 0
    with pytest.raises(SystemExit, match="is missing"):
        gen_public.render(source.replace(gen_public.MARK, ""))
    with pytest.raises(SystemExit, match="has no `_EXPORTS"):
        gen_public.exports("x = 1\n")


@pytest.mark.parametrize("name", DOCUMENTED)
def test_public_api_class_docstring_is_its_own(name: str) -> None:
    value = getattr(codexmini, name)
    if not inspect.isclass(value):
        return
    doc = value.__dict__.get("__doc__")
    assert doc, f"codexmini.{name} has no docstring of its own"
    # dataclasses gives a class without a docstring "Name(field: type, ...)".
    assert not doc.startswith(f"{value.__name__}("), f"codexmini.{name} has only the docstring dataclasses generates"


@pytest.mark.parametrize("name", DOCUMENTED)
def test_public_api_dataclass_docstring_names_its_fields(name: str) -> None:
    value = getattr(codexmini, name)
    if not (inspect.isclass(value) and dataclasses.is_dataclass(value)):
        return
    doc = value.__dict__.get("__doc__") or ""
    missing = [f.name for f in dataclasses.fields(value) if not re.search(rf"\b{re.escape(f.name)}\b", doc)]
    assert not missing, f"codexmini.{name}'s docstring does not name {missing}"


def test_public_api_unknown_name_is_an_attribute_error() -> None:
    with pytest.raises(AttributeError, match="no attribute 'nope'"):
        getattr(codexmini, "nope")  # noqa: B009 - the attribute lookup is what is tested
    assert "Agent" in dir(codexmini)


def _modules_after(statement: str) -> List[str]:
    code = f"import sys, json; {statement}; print(json.dumps(sorted(sys.modules)))"
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, check=True, timeout=60)
    return list(json.loads(done.stdout))


@pytest.mark.parametrize(
    "statement",
    [
        "import codexmini",
        "from codexmini import SessionLog, read_log, Usage, TurnCompleted, ItemCompleted",
        "import codexmini._mapping, codexmini._stepfold, codexmini._prompt",
    ],
)
def test_public_api_import_is_cheap(statement: str) -> None:
    loaded = _modules_after(statement)
    # (logging imports threading; that is not what a pure user should avoid)
    heavy = sorted({"asyncio", "subprocess", "socket", "selectors"} & set(loaded))
    assert not heavy, f"{statement!r} imported {heavy}"


def test_public_api_asyncio_comes_with_the_client() -> None:
    assert "asyncio" in _modules_after("from codexmini import AppServerClient")
