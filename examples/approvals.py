"""Approvals: codex asks before it runs a command; an async handler answers.

With ``sandbox="workspace-write"`` and ``approval_policy="on-request"``, a
command the model wants to run outside the sandbox (``require_escalated``) is
a server request: it reaches the ``approvals`` handler as an
``ApprovalRequest`` and the handler returns a ``Reply`` -- ``accept``,
``acceptForSession``, ``decline`` or ``cancel``.  Without a handler (or when
it fails or takes too long) codex gets the fail-closed answer, ``decline``.
Here the scripted model asks for two commands; the first is accepted, the
second declined.

Prints:

    codex asks (command): create approved.txt -> accept
    codex asks (command): create declined.txt -> decline
    answer: One file created; the other command was declined.
    files: ['approved.txt']
"""

import asyncio
import os
import shutil
import tempfile
from typing import Any, Dict

import codexmini
from codexmini import ApprovalRequest, Launch, ModelEndpoint, Reply
from codexmini.testing import ScriptedModel


def command(call_id: str, cmd: str, why: str) -> Dict[str, Any]:
    """The model's answer: run ``cmd`` with codex's command tool, outside the sandbox."""
    arguments = {"cmd": cmd, "yield_time_ms": 10000, "sandbox_permissions": "require_escalated", "justification": why}
    return {"output": [{"type": "function_call", "call_id": call_id, "name": "exec_command", "arguments": arguments}]}


SCRIPT = {
    "rules": [
        {
            "when": {"last_call_id": "call_2"},
            "respond": {
                "output": [{"type": "message", "deltas": ["One file created; ", "the other command was declined."]}]
            },
        },
        {"when": {"last_call_id": "call_1"}, "respond": command("call_2", "touch declined.txt", "create declined.txt")},
    ],
    "default": command("call_1", "touch approved.txt", "create approved.txt"),
}


async def approve(request: ApprovalRequest) -> Reply:
    """Accept what creates approved.txt, decline anything else."""
    decision = "accept" if "approved.txt" in request.summary else "decline"
    print(f"codex asks ({request.kind}): {request.params.get('reason')} -> {decision}")
    return Reply(decision)


async def main() -> None:
    workspace = tempfile.mkdtemp(prefix="codexmini-example-")
    try:
        with ScriptedModel(SCRIPT) as model:
            result = await codexmini.run(
                "Create two files.",
                cwd=workspace,
                launch=Launch(endpoint=ModelEndpoint(model.url)),
                model="gpt-5.5",  # a slug for which codex offers its command tool
                sandbox="workspace-write",
                approval_policy="on-request",
                approvals=approve,
            )
        print("answer:", result.final_response)
        print("files:", sorted(os.listdir(workspace)))
    finally:
        shutil.rmtree(workspace, ignore_errors=True)


if __name__ == "__main__":
    asyncio.run(main())
