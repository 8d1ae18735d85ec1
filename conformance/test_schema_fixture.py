"""The schema fixtures are exactly what each binary prints.

Both ends of the supported range have fixtures (``fixtures/schema/<v>/``); the
live test checks those of the binary the live suite runs against (the pin in
``make test``, another with ``make test-live CODEX=<v>``).

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

from codexmini import CODEX_VERSION, OLDEST_CODEX_VERSION
from conformance.versions import live_codex

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


@pytest.mark.parametrize("version", sorted({OLDEST_CODEX_VERSION, CODEX_VERSION}))
def test_schema_fixture_directories_exist(version):
    for flavor in schema_fixtures.FLAVORS:
        bundle = os.path.join(schema_fixtures.FIXTURES, version, flavor, "codex_app_server_protocol.schemas.json")
        assert os.path.isfile(bundle), f"missing {bundle}; run `make schema CODEX={version}`"


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
def test_schema_fixture_matches_the_binary():
    codex = live_codex()
    if isinstance(codex, str):
        pytest.skip(codex)
    if codex.version not in (OLDEST_CODEX_VERSION, CODEX_VERSION):
        pytest.skip(f"codex {codex.version} is neither end of the supported range: no fixtures to compare")
    try:
        path = schema_fixtures.resolve_codex(codex.path, codex.version)
    except schema_fixtures.SchemaFixtureError as exc:
        pytest.fail(str(exc), pytrace=False)
    diff = schema_fixtures.check(path, codex.version)
    if diff:
        pytest.fail(schema_fixtures.report(diff, codex.version), pytrace=False)
    # And the fixtures parse: the validator loads them.
    for flavor in schema_fixtures.FLAVORS:
        path = os.path.join(schema_fixtures.FIXTURES, codex.version, flavor, "codex_app_server_protocol.schemas.json")
        with open(path, encoding="utf-8") as fh:
            assert "v2" in json.load(fh)["definitions"]
