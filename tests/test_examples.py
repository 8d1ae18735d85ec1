"""examples/: every script runs against the real codex and prints what its docstring says.

Each ``examples/*.py`` documents its output in its module docstring, in the
indented block under a line ``Prints:``.  The live test runs the script as a
user would -- ``python examples/NAME.py``, no arguments, the package on
``PYTHONPATH`` like an installed copy -- against the pinned codex
(``CODEXMINI_CODEX_BIN``), with ``CODEX_HOME``, ``HOME`` and ``TMPDIR`` in a
scratch root of its own (not under ``/tmp``), and requires exit status 0 and
exactly the documented output.  The offline tests keep the listing and the
docstrings honest: every script is in ``examples/README.md`` and documents
what it prints.
"""

from __future__ import annotations

import ast
import os
import re
import shutil
import subprocess
import sys
import textwrap
from typing import Dict, Iterator, List, Optional

import pytest

from codexmini._binary import find_codex
from codexmini._errors import BinaryNotFound
from codexmini.testing.live import scratch_dir

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
EXAMPLES = os.path.join(ROOT, "examples")
SCRATCH_PREFIX = "codexmini-example-"  # what the scripts name their scratch directories


def example_names() -> List[str]:
    return sorted(n for n in os.listdir(EXAMPLES) if n.endswith(".py"))


def expected_output(docstring: str) -> Optional[str]:
    """The indented block under the docstring's ``Prints:`` line, dedented
    (``None`` without one)."""
    lines = docstring.splitlines()
    if "Prints:" not in lines:
        return None
    block: List[str] = []
    for line in lines[lines.index("Prints:") + 1 :]:
        if line.strip() and not line.startswith((" ", "\t")):
            break
        block.append(line)
    text = textwrap.dedent("\n".join(block)).strip("\n")
    return text + "\n" if text else None


def docstring_of(name: str) -> str:
    with open(os.path.join(EXAMPLES, name), encoding="utf-8") as fh:
        return ast.get_docstring(ast.parse(fh.read())) or ""


# -- offline --------------------------------------------------------------------------------


def test_examples_expected_output_is_the_block_under_prints() -> None:
    doc = "Title.\n\nPrints:\n\n    one\n      two\n\n    three\nAfter.\n"
    assert expected_output(doc) == "one\n  two\n\nthree\n"
    assert expected_output("Title.\n\nPrints: one\n") is None
    assert expected_output("Title.\n\nPrints:\n\nNothing indented.\n") is None


def test_examples_there_are_examples_and_the_readme_lists_each() -> None:
    names = example_names()
    assert {"one_call.py", "sync_script.py", "threads_and_turns.py", "agent_session.py"} <= set(names)
    with open(os.path.join(EXAMPLES, "README.md"), encoding="utf-8") as fh:
        listed = re.findall(r"^\| \[(\w+\.py)\]\(\1\) \|", fh.read(), re.M)
    assert listed and sorted(listed) == names


@pytest.mark.parametrize("name", example_names())
def test_examples_each_documents_what_it_prints(name: str) -> None:
    doc = docstring_of(name)
    assert doc.splitlines()[0].strip(), f"examples/{name}: no one-line summary"
    assert expected_output(doc), f"examples/{name}: its docstring has no indented block under a line `Prints:`"


# -- live -----------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def codex() -> str:
    try:
        return find_codex().path
    except BinaryNotFound:  # pragma: no cover - make test installs it
        pytest.skip("the pinned codex is not installed (make setup)")


@pytest.fixture
def environment(codex: str) -> Iterator[Dict[str, str]]:
    root = scratch_dir("codexmini-examples-")  # not under /tmp: codex refuses it for CODEX_HOME
    try:
        for sub in ("home", "codex-home", "tmp"):
            os.makedirs(os.path.join(root, sub))
        env = {k: v for k, v in os.environ.items() if not k.startswith(("CODEX", "OPENAI")) and k != "PYTHONPATH"}
        env.update(
            HOME=os.path.join(root, "home"),  # no login profile of this machine in codex's `bash -lc`
            CODEX_HOME=os.path.join(root, "codex-home"),
            CODEXMINI_CODEX_BIN=codex,
            TMPDIR=os.path.join(root, "tmp"),
            NO_COLOR="1",
            PYTHONPATH=ROOT,  # the package as checked out, like an installed copy
        )
        yield env
    finally:
        shutil.rmtree(root, ignore_errors=True)


@pytest.mark.live
@pytest.mark.parametrize("name", example_names())
def test_example_runs_and_prints_what_it_says(name: str, environment: Dict[str, str]) -> None:
    done = subprocess.run(
        [sys.executable, os.path.join("examples", name)],
        cwd=ROOT,
        env=environment,
        stdin=subprocess.DEVNULL,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 0, f"examples/{name} exited {done.returncode}:\n{done.stderr}"
    assert done.stdout == expected_output(docstring_of(name)), f"examples/{name} printed:\n{done.stdout}"
    left = [n for n in os.listdir(environment["TMPDIR"]) if n.startswith(SCRATCH_PREFIX)]
    assert left == [], f"examples/{name} left its scratch directory behind"
