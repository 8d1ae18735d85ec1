"""``codexmini_pytest``: the fixtures a downstream project gets,
and docs/testing.md, whose every Python block is a downstream test file run here.

A downstream test file is run by pytest's own ``pytester`` (in this process):
it enables the plugin the way a user would, and uses each fixture -- the
fake app-server in memory, the scripted model, the real codex on a scripted
model (skipped, with the reason, when there is no codex binary).
"""

from __future__ import annotations

import os
import re

import pytest
from support.run_support import HAVE_CODEX

from codexmini._binary import find_codex

pytest_plugins = ["pytester"]

DOWNSTREAM = """
from codexmini import Launch, ModelEndpoint, sync

pytest_plugins = ["codexmini_pytest"]

ANSWER = {"output": [{"type": "message", "deltas": ["from ", "the model"]}]}


def test_code_under_test_on_the_fake(fake_appserver):
    fake = fake_appserver()
    assert sync.run("hi", launch=Launch(launcher=fake.launch)).final_response == "Hello"


def test_code_under_test_reads_the_scripted_model(scripted_model):
    model = scripted_model({"default": ANSWER})
    assert model.url.startswith("http://127.0.0.1:") and model.requests == []


def test_code_under_test_on_the_real_codex(live_codex):
    live = live_codex({"default": ANSWER})
    result = sync.run("hi", launch=live.launch, cwd=live.ws, model="gpt-fake")
    assert result.final_response == "from the model"
    assert live.requests and live.alive() == []
"""


@pytest.mark.live
def test_pytest_plugin_fixtures_in_a_downstream_test_file(pytester, monkeypatch):
    if not HAVE_CODEX:
        pytest.skip("the pinned codex is not installed (make setup)")
    monkeypatch.setenv("CODEXMINI_CODEX_BIN", find_codex().path)
    pytester.makepyfile(test_downstream=DOWNSTREAM)
    result = pytester.runpytest("-p", "no:cacheprovider")
    result.assert_outcomes(passed=3)


def test_pytest_plugin_live_codex_skips_with_the_reason_without_a_binary(pytester, monkeypatch, tmp_path):
    monkeypatch.setenv("CODEXMINI_CODEX_BIN", str(tmp_path / "no-codex"))
    pytester.makepyfile(test_downstream=DOWNSTREAM)
    result = pytester.runpytest("-p", "no:cacheprovider", "-rs")
    result.assert_outcomes(passed=2, skipped=1)
    result.stdout.fnmatch_lines(["*no codex binary: codex binary '*no-codex' (env) is not an executable file*"])


DOCS = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "docs", "testing.md")


def doc_blocks():
    with open(DOCS, encoding="utf-8") as f:
        return re.findall(r"^```python\n(.*?)^```", f.read(), flags=re.M | re.S)


@pytest.mark.live
def test_pytest_plugin_every_python_block_of_docs_testing_md_passes_as_a_test_file(pytester, monkeypatch):
    if not HAVE_CODEX:
        pytest.skip("the pinned codex is not installed (make setup)")
    monkeypatch.setenv("CODEXMINI_CODEX_BIN", find_codex().path)
    blocks = doc_blocks()
    assert len(blocks) == 5
    pytester.makepyfile(**{f"test_docs_{n}": block for n, block in enumerate(blocks)})
    pytester.syspathinsert()  # the fake process imports its behaviour from the test file
    result = pytester.runpytest("-p", "no:cacheprovider")
    result.assert_outcomes(passed=6)
