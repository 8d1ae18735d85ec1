"""The schema fixtures are exactly what the pinned binary prints.

Like codex's own schema-fixture test: regenerate both flavors into a temporary
directory, compare every file (JSON canonicalised), and on any difference fail
with the list and the command that refreshes the fixtures (``make schema``).
The comparison itself is unit-tested without the binary.
"""

from __future__ import annotations

import importlib.util
import json
import os
import sys

import pytest

from codexmini import CODEX_VERSION
from codexmini._binary import find_codex
from codexmini._errors import BinaryNotFound

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def _tool():
    """``tools/`` is not a package: load the script as a module."""
    name = "_codexmini_tools_schema_fixtures"
    if name not in sys.modules:
        spec = importlib.util.spec_from_file_location(name, os.path.join(ROOT, "tools", "schema_fixtures.py"))
        module = importlib.util.module_from_spec(spec)
        sys.modules[name] = module  # dataclasses look their module up there
        spec.loader.exec_module(module)
    return sys.modules[name]


schema_fixtures = _tool()


def test_schema_fixture_directories_exist():
    for flavor in schema_fixtures.FLAVORS:
        bundle = os.path.join(schema_fixtures.FIXTURES, CODEX_VERSION, flavor, "codex_app_server_protocol.schemas.json")
        assert os.path.isfile(bundle), f"missing {bundle}; run `{schema_fixtures.REFRESH}`"


def test_schema_fixture_compare_trees_canonicalises_json(tmp_path):
    want, got = tmp_path / "want", tmp_path / "got"
    for top in (want, got):
        (top / "v2").mkdir(parents=True)
    (want / "a.json").write_text('{"b": 1, "a": [1, 2]}')
    (got / "a.json").write_text('{\n  "a": [1, 2],\n  "b": 1\n}\n')  # same JSON, other layout
    (want / "v2" / "c.json").write_text('{"x": 1}')
    (got / "v2" / "c.json").write_text('{"x": 2}')
    (want / "gone.json").write_text("{}")
    (got / "new.json").write_text("{}")
    diff = schema_fixtures.compare_trees(str(want), str(got))
    assert (diff.added, diff.removed, diff.changed) == (["new.json"], ["gone.json"], ["v2/c.json"])
    message = schema_fixtures.report(diff, "9.9.9")
    assert "make schema" in message and "changed: v2/c.json" in message and "(3 file(s))" in message


@pytest.mark.live
def test_schema_fixture_matches_the_pinned_binary():
    try:
        codex = find_codex().path
    except BinaryNotFound as exc:
        pytest.skip(f"the pinned codex binary is not installed ({exc})")
    try:
        codex = schema_fixtures.resolve_codex(codex, CODEX_VERSION)
    except schema_fixtures.SchemaFixtureError as exc:
        pytest.fail(str(exc), pytrace=False)
    diff = schema_fixtures.check(codex, CODEX_VERSION)
    if diff:
        pytest.fail(schema_fixtures.report(diff, CODEX_VERSION), pytrace=False)
    # And the fixtures parse: the validator loads them.
    for flavor in schema_fixtures.FLAVORS:
        path = os.path.join(schema_fixtures.FIXTURES, CODEX_VERSION, flavor, "codex_app_server_protocol.schemas.json")
        with open(path, encoding="utf-8") as fh:
            assert "v2" in json.load(fh)["definitions"]
