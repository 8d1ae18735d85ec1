#!/usr/bin/env python3
"""Print the path of a native codex binary of one version, installing it first if needed.

Usage: ``python tools/codex_bin.py VERSION``.  The pin lives in ``.codex/``
(``make setup``); any other version is installed from the npm registry into
``.cache/codex/<version>/`` once (the drift tool's cache, git-ignored), so the
Makefile's ``CODEX=<version>`` targets (``make record``, ``make schema``,
``make test-live``) and ``make drift`` share one install per version.

Exit codes: 0 the path is printed, 2 not a version, 3 it cannot be installed
(npm missing or failing, a binary that reports another version).
"""

from __future__ import annotations

import os
import sys
from typing import List, Optional

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
if ROOT not in sys.path:  # run as a script from anywhere
    sys.path.insert(0, ROOT)

from tools.drift.sides import VERSION_RE, DriftError, binary_for  # noqa: E402


def main(argv: Optional[List[str]] = None) -> int:
    args = sys.argv[1:] if argv is None else argv
    if len(args) != 1 or not VERSION_RE.match(args[0]):
        print("usage: python tools/codex_bin.py VERSION   (e.g. 0.149.1)", file=sys.stderr)
        return 2
    try:
        print(binary_for(args[0]))
    except DriftError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 3
    return 0


if __name__ == "__main__":
    sys.exit(main())
