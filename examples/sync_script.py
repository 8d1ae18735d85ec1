"""Without an event loop: ``codexmini.sync`` has the same calls, blocking.

``sync.run()`` is one call, like ``codexmini.run()``; ``sync.Client`` keeps one
codex process for several threads and turns, and a turn is a plain iterator
of the same typed events as the async API.  (It is also safe in a thread
whose event loop runs, such as a notebook cell.)  The model is a scripted
one on 127.0.0.1, so this runs offline.

Prints:

    run(): Hello from a blocking call.
    streamed: Counting: one, two, three.
    last event: TurnCompleted completed
    second thread: Hello from a blocking call.
"""

import shutil
import tempfile

from codexmini import AgentMessageDelta, Launch, ModelEndpoint, TurnCompleted, sync
from codexmini.testing import ScriptedModel

SCRIPT = {
    "rules": [
        {
            "when": {"user_contains": "count"},
            "respond": {"output": [{"type": "message", "deltas": ["Counting: ", "one, ", "two, ", "three."]}]},
        }
    ],
    "default": {"output": [{"type": "message", "deltas": ["Hello from ", "a blocking call."]}]},
}


def main() -> None:
    workspace = tempfile.mkdtemp(prefix="codexmini-example-")
    try:
        with ScriptedModel(SCRIPT) as model:
            launch = Launch(endpoint=ModelEndpoint(model.url))

            # One call: start codex, run one turn, close codex.
            result = sync.run("Say hello.", cwd=workspace, launch=launch)
            print("run():", result.final_response)

            # One process, several threads and turns.
            with sync.Client(launch) as client:
                thread = client.thread(cwd=workspace, sandbox="read-only", approval_policy="never")
                text, last = "", ""
                with thread.turn("Please count to three.") as turn:
                    for event in turn:  # each event as codex sends it
                        if isinstance(event, AgentMessageDelta):
                            text += event.delta
                        elif isinstance(event, TurnCompleted):
                            last = f"{type(event).__name__} {event.status}"
                print("streamed:", text)
                print("last event:", last)
                again = client.run("Say hello.", cwd=workspace)  # a new thread on the same process
                print("second thread:", again.final_response)
    finally:
        shutil.rmtree(workspace, ignore_errors=True)


if __name__ == "__main__":
    main()
