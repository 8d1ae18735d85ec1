"""Equivalent mutants: changes no test can see, each with the reason why.

Reviewed like code.  An entry names the module, the operator, the change
(``before``, ``after``) and the text of the mutated line, exactly as the
report prints them -- not a line number, so that edits elsewhere in the file
do not unhinge it.  Declared mutants still run: a declared mutant that is
killed, or an entry that matches no mutant any more, is reported as stale.
An entry matches every mutant with its key (an identical line elsewhere in
the module with the identical change included).
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class Equivalent:
    module: str  # "_session"
    operator: str
    before: str
    after: str
    line: str  # the mutated line's text, stripped
    reason: str

    @property
    def key(self) -> tuple[str, str, str, str, str]:
        return (self.module, self.operator, self.before, self.after, self.line)


_MISSES_THE_TABLE = (
    "the default only has to be a key the table does not hold: 'XX' misses it as surely as '' does, "
    "and a missing type is looked up, not shown"
)

EQUIVALENTS: tuple[Equivalent, ...] = (
    Equivalent(
        "_session",
        "compare",
        "good_end < os.path.getsize(log.path)",
        "good_end <= os.path.getsize(log.path)",
        "if good_end < os.path.getsize(log.path):",
        "when they are equal there is no torn tail: truncating a file to its own length leaves its bytes as they "
        "were, and the flush that follows has nothing to write",
    ),
    Equivalent(
        "_prompt",
        "string",
        "''",
        "'XX'",
        'project = _PROJECTIONS.get(event.get("type", ""))',
        _MISSES_THE_TABLE,
    ),
    Equivalent(
        "_prompt",
        "string",
        "''",
        "'XX'",
        'render = _BLOCK_RENDERERS.get(block.get("type", ""))',
        _MISSES_THE_TABLE,
    ),
)
