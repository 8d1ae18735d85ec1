"""The README's Python examples run as written, against the real codex.

Every ``python`` block of the README's "Quick start" and "As a library"
sections is executed in a fresh interpreter whose working directory is a
scratch workspace.  The examples say ``cwd="."`` and use codex's own
configuration, so the test gives codex one: a ``CODEX_HOME`` whose
``config.toml`` points ``model_provider`` at a :class:`ScriptedModel` on
127.0.0.1 (no key).  Nothing in a block is edited before it runs; what it
prints is checked against what the scripted model answered.
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
from typing import Dict, Iterator, List, Tuple

import pytest

from codexmini._binary import find_codex
from codexmini._errors import BinaryNotFound
from codexmini.testing.live import scratch_dir
from codexmini.testing.scripted_model import ScriptedModel

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
README = os.path.join(ROOT, "README.md")
SECTIONS = ("Quick start", "As a library")

#: The scripted answers: the structured-output example asks for JSON.
SCRIPT = {
    "rules": [
        {
            "when": {"user_contains": "Reply in JSON"},
            "respond": {"output": [{"type": "message", "deltas": ['{"answer": ', '"4"}']}]},
        }
    ],
    "default": {
        "output": [{"type": "message", "deltas": ["It is a ", "small client."]}],
        "usage": {"input_tokens": 10, "cached_tokens": 2, "output_tokens": 5, "reasoning_tokens": 1},
    },
}

#: What each block must print, in block order (a regular expression searched in stdout).
EXPECTED = [
    r"^Hello from a model on 127\.0\.0\.1\.$",  # the quick start: its own scripted model
    r"^completed \{'answer': '4'\} \d+$",  # output_schema
    r"It is a small client\.\n\s*completed Usage\(",  # Thread / Turn streaming
    r"^completed \{",  # Agent over a SessionLog
    r"AgentMessageDelta[\s\S]*TurnCompleted$",  # sync.Client
    r"^It is a small client\.\nTrue True 2\n0 hi$",  # resume in a new process, fork, list, read, exec
]


def python_blocks(text: str, sections: Tuple[str, ...] = SECTIONS) -> List[Tuple[str, str]]:
    """``(section, code)`` for every fenced ``python`` block under one of ``sections``."""
    blocks: List[Tuple[str, str]] = []
    for part in re.split(r"^## ", text, flags=re.M)[1:]:
        title = part.split("\n", 1)[0].strip()
        if title in sections:
            blocks.extend((title, code) for code in re.findall(r"^```python\n(.*?)^```", part, re.S | re.M))
    return blocks


def test_the_readme_has_the_blocks_this_test_expects() -> None:
    with open(README, encoding="utf-8") as f:
        blocks = python_blocks(f.read())
    assert [title for title, _ in blocks] == ["Quick start"] + ["As a library"] * 5
    assert len(EXPECTED) == len(blocks)


def test_python_blocks_finds_only_the_named_sections() -> None:
    text = "# t\n## A\n```python\na = 1\n```\n## B\n```python\nb = 2\n```\n```sh\nc\n```\n"
    assert python_blocks(text, ("B",)) == [("B", "b = 2\n")]


@pytest.fixture(scope="module")
def world() -> Iterator[Dict[str, str]]:
    try:
        codex = find_codex().path
    except BinaryNotFound:  # pragma: no cover - make test installs it
        pytest.skip("the pinned codex is not installed (make setup)")
    root = scratch_dir("codexmini-readme-")  # not under /tmp: codex refuses it
    model = ScriptedModel(SCRIPT).start()
    try:
        ws, home = os.path.join(root, "ws"), os.path.join(root, "home")
        os.makedirs(ws)
        os.makedirs(home)
        with open(os.path.join(ws, "README.md"), "w", encoding="utf-8") as f:
            f.write("# a project\n")
        with open(os.path.join(home, "config.toml"), "w", encoding="utf-8") as f:
            f.write(
                'model_provider = "scripted"\n'
                'model = "gpt-5.5"\n'
                "[model_providers.scripted]\n"
                'name = "scripted"\n'
                f'base_url = "{model.url}"\n'
                'wire_api = "responses"\n'
            )
        env = {k: v for k, v in os.environ.items() if not k.startswith(("CODEX", "OPENAI")) and k != "PYTHONPATH"}
        env.update(
            HOME=root,
            CODEX_HOME=home,
            CODEXMINI_CODEX_BIN=codex,
            NO_COLOR="1",
            PYTHONPATH=ROOT,  # the package as checked out, like an installed copy
        )
        yield {"ws": ws, "root": root, **{f"env:{k}": v for k, v in env.items()}}
    finally:
        model.stop()
        shutil.rmtree(root, ignore_errors=True)


def _blocks() -> List[Tuple[str, str]]:
    with open(README, encoding="utf-8") as f:
        return python_blocks(f.read())


@pytest.mark.live
@pytest.mark.parametrize("index", range(len(EXPECTED)))
def test_readme_block_runs_as_written(world: Dict[str, str], index: int) -> None:
    title, code = _blocks()[index]
    env = {k[4:]: v for k, v in world.items() if k.startswith("env:")}
    done = subprocess.run(
        [sys.executable, "-c", code],
        cwd=world["ws"],
        env=env,
        stdin=subprocess.DEVNULL,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 0, f"{title} block {index} failed:\n{done.stderr}"
    out = done.stdout.strip()
    assert re.search(EXPECTED[index], out, re.M), f"{title} block {index} printed:\n{out}\n{done.stderr}"
