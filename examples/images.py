"""Images: a turn's input can hold local images; codex reads the file itself.

A prompt is a string, or a list of strings and input items; an image on disk
is ``image_input(path)`` (``{"type": "localImage", "path": ...}``) -- codex opens the file and sends it
to the model inline, so the bytes never travel over the app-server pipe.
Here the picture is a 1x1 PNG written into the scratch workspace, and the
scripted model's request log shows what reached the model.

Prints:

    answer: A single red pixel.
    the model received: 'What is in this picture?' and 1 image (image/png)
"""

import asyncio
import base64
import os
import shutil
import tempfile
from typing import Any, List

import codexmini
from codexmini import Launch, ModelEndpoint, image_input
from codexmini.testing import ScriptedModel

#: A 1x1 red PNG.
PIXEL = base64.b64decode("iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAIAAACQd1PeAAAADElEQVR4nGP4z8AAAAMBAQDJ/pLvAAAAAElFTkSuQmCC")

SCRIPT = {"default": {"output": [{"type": "message", "deltas": ["A single ", "red pixel."]}]}}


def last_user_message(body: Any) -> List[Any]:
    """The content parts of the last user message of a Responses API request."""
    messages = [i for i in body["input"] if i.get("type") == "message" and i.get("role") == "user"]
    parts: List[Any] = messages[-1]["content"]
    return parts


async def main() -> None:
    workspace = tempfile.mkdtemp(prefix="codexmini-example-")
    try:
        picture = os.path.join(workspace, "pixel.png")
        with open(picture, "wb") as f:
            f.write(PIXEL)
        with ScriptedModel(SCRIPT) as model:
            result = await codexmini.run(
                ["What is in this picture?", image_input(picture)],
                cwd=workspace,
                launch=Launch(endpoint=ModelEndpoint(model.url)),
                model="gpt-5.5",  # a slug codex knows to take images
            )
            parts = last_user_message(model.requests[-1]["body"])
        print("answer:", result.final_response)
        # codex sends the prompt, then each image inline (a data: URL) between two text markers
        prompt = parts[0]["text"]
        images = [p["image_url"].split(";")[0][len("data:") :] for p in parts if p["type"] == "input_image"]
        print(f"the model received: {prompt!r} and {len(images)} image ({', '.join(images)})")
    finally:
        shutil.rmtree(workspace, ignore_errors=True)


if __name__ == "__main__":
    asyncio.run(main())
