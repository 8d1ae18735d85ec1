"""Schema drift between two codex releases, classified against what codexmini uses.

``tools/schema_drift.py`` is the command line; this package does the work, one
step per module:

1. ``sides`` -- each side (a codex version or a path) as a bundle file:
   checked-in fixtures, else installed from npm and generated, once.
2. ``bundle`` -- the canonical form, so that layout (a definition moved between
   v1 and v2, a nullable type spelled as ``anyOf``, a described ``$ref``) is
   not drift.
3. ``diff`` -- the per-definition diff: one :class:`Change` per difference.
4. ``surface`` -- what codexmini sends and reads, as uses of (definition,
   path) of the OLD bundle; ``derive`` derives it from the recorded
   transcripts, the code's tables (run on samples that ``probe`` makes and
   watches) and the code itself.
5. ``classify`` -- each change *breaking*, *additive*, *outside the surface*
   or *docs*; the rules are written down there, and only there.
6. ``report`` -- the report as text or JSON, and the ``--surface`` listing.
7. ``behaviour`` -- with ``--behaviour``: every recorded scenario run live
   against NEW and compared with the pinned goldens (same / differs / fails),
   because a schema diff cannot see behaviour.

``paths`` says where things are in the repository.  This module re-exports
what the command line and the tests use.
"""

from __future__ import annotations

from .bundle import Bundle
from .classify import ADDITIVE, BREAKING, DOCS, OUTSIDE, VERDICTS, Report, classify_changes, compare
from .derive import derive_surface
from .diff import (
    CONSTRAINT_WIDENED,
    DEFINITION_ADDED,
    DEFINITION_REMOVED,
    DOCS_CHANGED,
    ENUM_VALUE_ADDED,
    ENUM_VALUE_REMOVED,
    FIELD_NOW_OPTIONAL,
    FIELD_NOW_REQUIRED,
    FIELD_REMOVED,
    METHOD_ADDED,
    METHOD_REMOVED,
    NULL_ADDED,
    NULL_REMOVED,
    OPTIONAL_FIELD_ADDED,
    REF_CHANGED,
    REF_RENAMED,
    REQUIRED_FIELD_ADDED,
    TYPE_CHANGED,
    TYPE_NARROWED,
    TYPE_WIDENED,
    VARIANT_ADDED,
    VARIANT_REMOVED,
    Change,
)
from .paths import CACHE
from .report import format_report, format_surface, report_json
from .sides import BUNDLE_FILE, FLAVORS, DriftError, Side, UsageError, binary_for, locate
from .surface import READS, SENDS, Surface

__all__ = [
    # sides
    "BUNDLE_FILE",
    "CACHE",
    "FLAVORS",
    "DriftError",
    "Side",
    "UsageError",
    "binary_for",
    "locate",
    # bundle, diff
    "Bundle",
    "Change",
    "CONSTRAINT_WIDENED",
    "DEFINITION_ADDED",
    "DEFINITION_REMOVED",
    "DOCS_CHANGED",
    "ENUM_VALUE_ADDED",
    "ENUM_VALUE_REMOVED",
    "FIELD_NOW_OPTIONAL",
    "FIELD_NOW_REQUIRED",
    "FIELD_REMOVED",
    "METHOD_ADDED",
    "METHOD_REMOVED",
    "NULL_ADDED",
    "NULL_REMOVED",
    "OPTIONAL_FIELD_ADDED",
    "REF_CHANGED",
    "REF_RENAMED",
    "REQUIRED_FIELD_ADDED",
    "TYPE_CHANGED",
    "TYPE_NARROWED",
    "TYPE_WIDENED",
    "VARIANT_ADDED",
    "VARIANT_REMOVED",
    # surface
    "READS",
    "SENDS",
    "Surface",
    "derive_surface",
    # classify
    "ADDITIVE",
    "BREAKING",
    "DOCS",
    "OUTSIDE",
    "VERDICTS",
    "Report",
    "classify_changes",
    "compare",
    # report
    "format_report",
    "format_surface",
    "report_json",
]
