"""Structured output: ask for JSON that fits a schema, get the parsed value.

``output_schema`` (a JSON Schema) is sent to codex with the turn; the final
answer is then parsed and checked against it by codexmini (codex checks
neither): ``result.value`` holds the parsed value.  An answer that is not
JSON, or that the schema rejects, raises ``OutputValidationError``, which
carries the raw text and the reasons.  The scripted model answers the first
question in JSON and the second in prose.

Prints:

    value: {'city': 'Paris', 'population_millions': 2.1}
    city: Paris
    refused: 'Paris, about two million people.' ($: not JSON: Expecting value: line 1 column 1 (char 0))
"""

import asyncio
import shutil
import tempfile

import codexmini
from codexmini import Launch, ModelEndpoint, OutputValidationError
from codexmini.testing import ScriptedModel

SCHEMA = {
    "type": "object",
    "properties": {"city": {"type": "string"}, "population_millions": {"type": "number"}},
    "required": ["city", "population_millions"],
    "additionalProperties": False,
}

SCRIPT = {
    "rules": [
        {
            "when": {"user_contains": "in prose"},
            "respond": {"output": [{"type": "message", "deltas": ["Paris, about ", "two million people."]}]},
        }
    ],
    "default": {"output": [{"type": "message", "deltas": ['{"city": "Paris", ', '"population_millions": 2.1}']}]},
}


async def main() -> None:
    workspace = tempfile.mkdtemp(prefix="codexmini-example-")
    try:
        with ScriptedModel(SCRIPT) as model:
            launch = Launch(endpoint=ModelEndpoint(model.url))
            result = await codexmini.run(
                "Which is the capital of France, and how many live there?",
                cwd=workspace,
                launch=launch,
                output_schema=SCHEMA,
            )
            print("value:", result.value)
            print("city:", result.value["city"])
            try:
                await codexmini.run("The same, in prose.", cwd=workspace, launch=launch, output_schema=SCHEMA)
            except OutputValidationError as exc:  # exc.result is the turn's RunResult
                path, reason = exc.errors[0]
                print(f"refused: {exc.text!r} ({path}: {reason})")
    finally:
        shutil.rmtree(workspace, ignore_errors=True)


if __name__ == "__main__":
    asyncio.run(main())
