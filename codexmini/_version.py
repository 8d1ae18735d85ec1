"""The versions: this package's, and the range of codex releases it supports.

The supported codex releases are :data:`OLDEST_CODEX_VERSION` to
:data:`CODEX_VERSION`, both ends included: each end has its own schema
fixtures and recordings (``fixtures/schema/<v>/``, ``fixtures/<v>/``) and is
tested live.  :data:`CODEX_VERSION` is the pin: what ``make setup`` installs.
The Makefile and CI read these lines with ``sed``: keep each a plain string.
"""

__version__ = "0.4.0"
CODEX_VERSION = "0.171.0"
OLDEST_CODEX_VERSION = "0.149.1"

__all__ = ["CODEX_VERSION", "OLDEST_CODEX_VERSION", "__version__"]
