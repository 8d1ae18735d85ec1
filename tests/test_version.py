"""The versions (``codexmini._version``): this package's and the supported codex range.

Each is a plain ``MAJOR.MINOR.PATCH``; the oldest supported codex is not
newer than the pin (compared as codexmini compares codex versions,
:func:`codexmini._binary.version_key`); and what the Makefile and the CI
script read out of ``_version.py`` with ``sed`` is what Python reads.
"""

from __future__ import annotations

import os
import re
import subprocess
from typing import List, Tuple

import pytest

from codexmini import _version
from codexmini._binary import version_key

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
VERSION_FILE = "codexmini/_version.py"
NAMES = ("__version__", "CODEX_VERSION", "OLDEST_CODEX_VERSION")
#: A ``sed -n 's/^NAME = "\(.*\)"/\1/p' codexmini/_version.py`` in a shell line.
SED = re.compile(r"""sed -n '(s/\^(\w+) = [^']*/p)' """ + re.escape(VERSION_FILE))


@pytest.mark.parametrize("name", NAMES)
def test_version_is_major_minor_patch(name):
    assert re.fullmatch(r"(0|[1-9][0-9]*)\.(0|[1-9][0-9]*)\.(0|[1-9][0-9]*)", getattr(_version, name))


def test_version_the_oldest_supported_codex_is_not_newer_than_the_pin():
    assert version_key(_version.OLDEST_CODEX_VERSION) <= version_key(_version.CODEX_VERSION)


def sed_readings(path: str) -> List[Tuple[str, str]]:
    """Each (name, sed expression) the file at ``path`` reads ``_version.py`` with."""
    with open(os.path.join(ROOT, path), encoding="utf-8") as fh:
        return [(m.group(2), m.group(1)) for m in SED.finditer(fh.read())]


@pytest.mark.parametrize("path", ["Makefile", ".ci/run"])
def test_version_what_sed_reads_is_what_python_reads(path):
    readings = sed_readings(path)
    if path == "Makefile":  # the supported range: the pin and the oldest
        assert sorted(name for name, _ in readings) == ["CODEX_VERSION", "OLDEST_CODEX_VERSION"]
    for name, expression in readings:
        done = subprocess.run(["sed", "-n", expression, VERSION_FILE], cwd=ROOT, capture_output=True, text=True)
        assert done.returncode == 0, done.stderr
        assert done.stdout == getattr(_version, name) + "\n", f"{path}: sed reads {name} as {done.stdout!r}"
