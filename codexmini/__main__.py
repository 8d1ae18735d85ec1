"""``python -m codexmini``: see :mod:`codexmini.cli`."""

import sys

from .cli import main

if __name__ == "__main__":  # pragma: no cover - exercised by the CLI subprocess tests
    sys.exit(main())
