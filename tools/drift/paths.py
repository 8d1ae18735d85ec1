"""Where the drift tool finds things in the repository, and how it prints a path.

Every path is anchored at the repository root, not the working directory, so
``tools/schema_drift.py`` runs the same from anywhere.
"""

from __future__ import annotations

import os

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
SCHEMA_FIXTURES = os.path.join(ROOT, "fixtures", "schema")
FRAME_FIXTURES = os.path.join(ROOT, "fixtures")
PACKAGE_DIR = os.path.join(ROOT, "codexmini")
CACHE = os.path.join(ROOT, ".cache", "codex")
LOCAL_CODEX = os.path.join(ROOT, ".codex")  # where `make setup` installs the pin


def relative(path: str) -> str:
    """``path`` relative to the repository root when it is inside it, else absolute."""
    full = os.path.abspath(path)
    return os.path.relpath(full, ROOT) if full.startswith(ROOT + os.sep) else full
