"""One call: ``codexmini.run()`` starts codex, runs one turn and closes it.

The model is a ``codexmini.testing.ScriptedModel`` on 127.0.0.1 that answers
from a script, so this runs offline; to talk to a real model, drop the
scripted model and pass ``launch=Launch(endpoint=ModelEndpoint(url, key))``
(or no ``launch`` at all: codex's own configuration and login).

Prints:

    answer: This project is a small client for codex app-server.
    status: completed, ok: True
    tokens: 10 in (2 cached), 5 out, 15 in all
"""

import asyncio
import shutil
import tempfile

import codexmini
from codexmini import Launch, ModelEndpoint
from codexmini.testing import ScriptedModel

#: What the scripted model answers: a message streamed in three pieces, and the
#: token counts it reports.
SCRIPT = {
    "default": {
        "output": [{"type": "message", "deltas": ["This project is ", "a small client ", "for codex app-server."]}],
        "usage": {"input_tokens": 10, "cached_tokens": 2, "output_tokens": 5},
    }
}


async def main() -> None:
    workspace = tempfile.mkdtemp(prefix="codexmini-example-")  # the directory codex works in
    try:
        with ScriptedModel(SCRIPT) as model:
            launch = Launch(endpoint=ModelEndpoint(model.url))  # codex sends its model requests there
            result = await codexmini.run("What does this project do?", cwd=workspace, launch=launch)
        print("answer:", result.final_response)
        print(f"status: {result.status}, ok: {result.ok}")
        usage = result.usage
        print(
            f"tokens: {usage.input_tokens} in ({usage.cached_input_tokens} cached), "
            f"{usage.output_tokens} out, {usage.total_tokens} in all"
        )
    finally:
        shutil.rmtree(workspace, ignore_errors=True)


if __name__ == "__main__":
    asyncio.run(main())
