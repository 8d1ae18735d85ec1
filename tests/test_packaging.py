"""The package as a user gets it: the sdist and the wheel.

Built once per run (``python -m build --no-isolation``, no network): the
metadata passes ``twine check`` and says what a user needs (an SPDX license
with its file, the Python range, no dependencies, the console script); the
wheel holds the ``codexmini`` package -- ``py.typed``, ``testing/``,
``_generated/`` -- and nothing else of the repository.  Live: a fresh
virtualenv with only that wheel installed runs the README's quick start
exactly as written, against the npm-installed codex, and prints what the
README shows.
"""

from __future__ import annotations

import email
import os
import re
import shutil
import subprocess
import sys
import zipfile
from typing import Dict, Iterator, List

import pytest

from codexmini import __version__
from codexmini._binary import find_codex
from codexmini._errors import BinaryNotFound
from codexmini.testing.live import scratch_dir

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


@pytest.fixture(scope="module")
def dist() -> Iterator[Dict[str, str]]:
    out = scratch_dir("codexmini-dist-")
    try:
        subprocess.run(
            [sys.executable, "-m", "build", "--no-isolation", "--outdir", out, ROOT],
            check=True,
            capture_output=True,
            timeout=300,
        )
        built = {
            name.rsplit(".", 1)[-1] if name.endswith(".whl") else "sdist": os.path.join(out, name)
            for name in os.listdir(out)
        }
        yield built
    finally:
        shutil.rmtree(out, ignore_errors=True)


def test_packaging_metadata_passes_twine_and_says_what_a_user_needs(dist):
    done = subprocess.run(
        [sys.executable, "-m", "twine", "check", "--strict", dist["whl"], dist["sdist"]],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 0, done.stdout + done.stderr
    with zipfile.ZipFile(dist["whl"]) as wheel:
        meta = email.message_from_bytes(wheel.read(f"codexmini-{__version__}.dist-info/METADATA"))
        entry_points = wheel.read(f"codexmini-{__version__}.dist-info/entry_points.txt").decode()
    assert meta["License-Expression"] == "Apache-2.0" and meta["License-File"] == "LICENSE"
    assert meta["Requires-Python"] == ">=3.9"
    runtime = [r for r in meta.get_all("Requires-Dist") or () if "extra ==" not in r]
    assert runtime == []  # the standard library only; the test extra aside
    assert "Typing :: Typed" in meta.get_all("Classifier") and meta["Version"] == __version__
    assert "codexmini = codexmini._cli:main" in entry_points


def test_packaging_the_wheel_is_the_package_and_nothing_else(dist):
    with zipfile.ZipFile(dist["whl"]) as wheel:
        names = wheel.namelist()
    outside = [n for n in names if not n.startswith(("codexmini/", f"codexmini-{__version__}.dist-info/"))]
    assert outside == ["codexmini_pytest.py"]  # the opt-in pytest plugin, beside the package
    for wanted in (
        "codexmini/py.typed",
        "codexmini/testing/scripted_model.py",
        "codexmini/_generated/protocol_types.py",
    ):
        assert wanted in names
    package = sorted(
        os.path.relpath(os.path.join(d, f), ROOT)
        for d, _, files in os.walk(os.path.join(ROOT, "codexmini"))
        for f in files
        if f.endswith((".py", ".typed"))
    )
    assert sorted(n for n in names if n.startswith("codexmini/")) == package
    assert f"codexmini-{__version__}.dist-info/licenses/LICENSE" in names


def quick_start(readme: str) -> List[str]:
    """The README's quick start: its first python block, and the output shown after it."""
    section = re.split(r"^## ", readme, flags=re.M)
    text = next(part for part in section if part.startswith("Quick start"))
    code, shown = re.findall(r"^```(?:python)?\n(.*?)^```", text, flags=re.M | re.S)[:2]
    return [code, shown]


def test_packaging_quick_start_reader_takes_the_code_and_what_it_prints():
    readme = "# x\n## Quick start\nsay\n```python\nprint(1)\n```\n\n```\n1\n```\n## Next\n```python\nno\n```\n"
    assert quick_start(readme) == ["print(1)\n", "1\n"]


@pytest.mark.live
def test_packaging_a_fresh_virtualenv_with_only_the_wheel_runs_the_quick_start_as_written(dist):
    try:
        codex = find_codex().path
    except BinaryNotFound as exc:
        pytest.skip(f"no codex binary: {exc}")
    with open(os.path.join(ROOT, "README.md"), encoding="utf-8") as f:
        code, shown = quick_start(f.read())
    root = scratch_dir("codexmini-wheel-")
    try:
        venv = os.path.join(root, "venv")
        subprocess.run([sys.executable, "-m", "venv", venv], check=True, timeout=120)
        python = os.path.join(venv, "bin", "python")
        pip = [python, "-m", "pip", "install", "-q", "--no-index", "--no-deps", "--disable-pip-version-check"]
        subprocess.run([*pip, dist["whl"]], check=True, timeout=120)
        with open(os.path.join(root, "quick_start.py"), "w", encoding="utf-8") as f:
            f.write(code)
        home = os.path.join(root, "home")
        os.makedirs(home)
        env = {"PATH": os.environ["PATH"], "HOME": home, "CODEX_HOME": home, "CODEXMINI_CODEX_BIN": codex}
        done = subprocess.run(
            [python, "quick_start.py"], cwd=root, env=env, capture_output=True, text=True, timeout=120
        )
    finally:
        shutil.rmtree(root, ignore_errors=True)
    assert done.returncode == 0, done.stderr
    assert done.stdout == shown
