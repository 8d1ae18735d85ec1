"""Structured output: a JSON Schema for a turn's final answer.  Pure.

What codex does with ``turn/start.outputSchema`` (0.149.1, observed against
the scripted model; ``TurnStartParams.outputSchema`` is typed only as "JSON
Schema used to constrain the final assistant message for this turn"): every
model request of *that turn* carries it verbatim as the Responses API's
``text.format``::

    {"type": "json_schema", "name": "codex_output_schema", "strict": true, "schema": <outputSchema>}

The next turn without one sends no ``text`` at all, and ``null`` means none.
codex checks nothing: not the schema (``{"type": 5}`` and ``"hello"`` are
forwarded as they are) and not the answer (a non-JSON reply completes the turn
normally, with the text as it came).  So both checks are the client's, and
live here: :class:`OutputSchema` refuses a schema it cannot check before
anything is started, and :meth:`OutputSchema.parse` turns the final answer into
a value or an :class:`~codexmini.OutputValidationError`.

The checking is codexmini's stdlib validator (:mod:`._jsonschema`), whose
verdicts agree with ``jsonschema.Draft7Validator`` (the conformance suite
holds it to that), so there is nothing to gain from preferring ``jsonschema``
when it is installed -- and the package imports nothing outside the standard
library.  Its keywords are the Draft 7 subset it documents plus ``pattern``
and ``$defs``, which covers what OpenAI's strict mode accepts except
``multipleOf``; anything else is a :class:`~codexmini.SchemaError` up front,
never a keyword silently ignored.  The strict mode of the real API further
requires ``additionalProperties: false`` and every property ``required``;
codex does not add them, and this module does not impose them (other
endpoints take looser schemas).
"""

from __future__ import annotations

import json
from typing import Any, Mapping, NoReturn, Optional, Sequence

from ._errors import OutputValidationError, SchemaError


def _no_constant(name: str) -> NoReturn:
    # json.loads accepts NaN and Infinity, which JSON does not.
    raise ValueError(f"{name} is not JSON")


class OutputSchema:
    """A checked output schema: :attr:`wire` goes to ``turn/start``,
    :meth:`parse` judges the answer.  :class:`~codexmini.SchemaError` when the
    schema is not a JSON object, does not serialise, or uses a keyword the
    validator does not support."""

    def __init__(self, schema: Mapping[str, Any]) -> None:
        if not isinstance(schema, Mapping):
            raise SchemaError(f"an output schema must be a JSON object (a dict), not {type(schema).__name__}")
        try:
            # A copy through JSON: what is sent is what is checked, whatever
            # the caller does to its dict later.
            self.wire: Mapping[str, Any] = json.loads(json.dumps(schema, allow_nan=False))
        except (TypeError, ValueError) as exc:
            raise SchemaError(f"the output schema is not JSON: {exc}") from None
        from ._jsonschema import Validator  # here, not with the package: only a schema needs it

        self._validator = Validator(self.wire)
        self._validator.check_schema(self.wire)

    def errors(self, value: Any) -> Sequence[tuple[str, str]]:
        """``(json_path, message)`` for each reason ``value`` breaks the schema."""
        return self._validator.errors(value)

    def parse(self, text: Optional[str], result: Any = None) -> Any:
        """The JSON value of ``text``, valid against the schema; else an
        :class:`~codexmini.OutputValidationError` carrying ``text``, the
        reasons and ``result``."""
        if text is None:
            raise OutputValidationError(None, [("$", "the turn produced no agent message")], result)
        try:
            value = json.loads(text, parse_constant=_no_constant)
        except ValueError as exc:
            raise OutputValidationError(text, [("$", f"not JSON: {exc}")], result) from None
        errors = self.errors(value)
        if errors:
            raise OutputValidationError(text, errors, result)
        return value


def check_output_schema(schema: Optional[Mapping[str, Any]]) -> Optional[OutputSchema]:
    """``schema`` checked (:class:`~codexmini.SchemaError`), or ``None`` for none."""
    return None if schema is None else OutputSchema(schema)


__all__ = ["OutputSchema", "check_output_schema"]
