"""Real frames recorded from codex 0.149.1, copied verbatim as literals.

One real frame per server frame kind, copied from recordings of codex 0.149.1
(the scenario is named beside each frame below; the recorder cut strings over
160 characters, which keeps them strings).  Client
frames are what codexmini sends.  The conformance tests use them as positives
(they must validate, strict mode included) and as the base of negatives.
"""

from __future__ import annotations

THREAD = "01a22879-9bfc-7961-a05c-6859166dc5e2"
TURN = "01a22879-9c13-7550-ac03-cd56cb48bc99"

# -- scenario approval_accept, in order ---------------------------------------

INITIALIZE = {
    "id": 1,
    "method": "initialize",
    "params": {"clientInfo": {"name": "codexmini", "version": "0.1.0"}, "capabilities": {"experimentalApi": True}},
}

INITIALIZE_RESULT = {
    "id": 1,
    "result": {
        "userAgent": "codexmini-probe/0.149.1 (Debian 12.0.0; x86_64) xterm (codexmini-probe; 0.0.1)",
        "codexHome": "/scratch/cxp/homes/approval_accept",
        "platformFamily": "unix",
        "platformOs": "linux",
    },
}

INITIALIZED = {"method": "initialized"}

THREAD_START = {
    "id": 2,
    "method": "thread/start",
    "params": {"cwd": "/scratch/cxp/ws/approval_accept", "approvalPolicy": "on-request", "sandbox": "workspace-write"},
}

THREAD_START_RESULT = {
    "id": 2,
    "result": {
        "thread": {
            "id": THREAD,
            "extra": None,
            "sessionId": THREAD,
            "forkedFromId": None,
            "parentThreadId": None,
            "preview": "",
            "ephemeral": False,
            "section": None,
            "sectionEnteredAt": None,
            "projectId": None,
            "historyMode": "legacy",
            "modelProvider": "fake",
            "createdAt": 1795975388,
            "updatedAt": 1795975388,
            "recencyAt": 1795975388,
            "status": {"type": "idle"},
            "path": "/scratch/cxp/homes/approval_accept/sessions/2026/11/29/"
            "rollout-2026-11-29T18-03-08-01a22879-9bfc-7961-a05c-6859166dc5e2.jsonl",
            "cwd": "/scratch/cxp/ws/approval_accept",
            "cliVersion": "0.149.1",
            "source": "vscode",
            "canAcceptDirectInput": True,
            "threadSource": None,
            "agentNickname": None,
            "agentRole": None,
            "gitInfo": None,
            "name": None,
            "turns": [],
        },
        "model": "gpt-fake",
        "modelProvider": "fake",
        "serviceTier": None,
        "cwd": "/scratch/cxp/ws/approval_accept",
        "runtimeWorkspaceRoots": ["/scratch/cxp/ws/approval_accept"],
        "instructionSources": [],
        "approvalPolicy": "on-request",
        "approvalsReviewer": "user",
        "sandbox": {
            "type": "workspaceWrite",
            "writableRoots": [],
            "networkAccess": False,
            "excludeTmpdirEnvVar": False,
            "excludeSlashTmp": False,
        },
        "activePermissionProfile": None,
        "reasoningEffort": None,
        "multiAgentMode": "explicitRequestOnly",
    },
}

TURN_START = {
    "id": 3,
    "method": "turn/start",
    "params": {"threadId": THREAD, "input": [{"type": "text", "text": "run the command"}]},
}

TURN_START_RESULT = {
    "id": 3,
    "result": {
        "turn": {
            "id": TURN,
            "items": [],
            "itemsView": "notLoaded",
            "status": "inProgress",
            "error": None,
            "startedAt": None,
            "completedAt": None,
            "durationMs": None,
        }
    },
}

COMMAND_APPROVAL = {
    "method": "item/commandExecution/requestApproval",
    "id": 0,
    "params": {
        "threadId": THREAD,
        "turnId": TURN,
        "itemId": "call_cmd_1",
        "startedAtMs": 1795975388290,
        "environmentId": "local",
        "reason": "Need to write outside the sandbox",
        "command": "/bin/bash -lc 'echo escalated-ran > escalated.txt; echo done'",
        "cwd": "/scratch/cxp/ws/approval_accept",
        "commandActions": [{"type": "unknown", "command": "echo escalated-ran > escalated.txt; echo done"}],
        "proposedExecpolicyAmendment": ["/bin/bash", "-lc", "echo escalated-ran > escalated.txt; echo done"],
        "availableDecisions": [
            "accept",
            {
                "acceptWithExecpolicyAmendment": {
                    "execpolicy_amendment": ["/bin/bash", "-lc", "echo escalated-ran > escalated.txt; echo done"]
                }
            },
            "cancel",
        ],
    },
}

COMMAND_APPROVAL_ANSWER = {"id": 0, "result": {"decision": "accept"}}

AGENT_MESSAGE_DELTA = {
    "method": "item/agentMessage/delta",
    "params": {
        "threadId": THREAD,
        "turnId": TURN,
        "itemId": "msg_final",
        "delta": "Command finished. Last tool output: Chunk ID: 120fc2\nWall time: 0.0100 ",
    },
    "emittedAtMs": 1795975388489,
}

THREAD_STARTED = {
    "method": "thread/started",
    "params": {"thread": dict(THREAD_START_RESULT["result"]["thread"])},
    "emittedAtMs": 1795975388177,
}

#: One connection, both directions, in the order the binary exchanged them.
TRANSCRIPT = [
    ("out", INITIALIZE),
    ("in", INITIALIZE_RESULT),
    ("out", INITIALIZED),
    ("out", THREAD_START),
    ("in", THREAD_START_RESULT),
    ("in", THREAD_STARTED),
    ("out", TURN_START),
    ("in", TURN_START_RESULT),
    ("in", COMMAND_APPROVAL),
    ("out", COMMAND_APPROVAL_ANSWER),
    ("in", AGENT_MESSAGE_DELTA),
]

# -- the params of the other server requests that were recorded ---------------

FILE_CHANGE_APPROVAL_PARAMS = {  # scenario patch_approval_accept
    "threadId": "01a2287a-139c-78e0-a726-6ce2dcee4baf",
    "turnId": "01a2287a-13af-7612-b297-4eef3c825984",
    "itemId": "call_patch_1",
    "startedAtMs": 1795975418871,
    "reason": None,
    "grantRoot": None,
}

PERMISSIONS_APPROVAL_PARAMS = {  # scenario permissions_deny
    "threadId": "01a2287a-e913-78e2-98c4-2241fc084644",
    "turnId": "01a2287a-e922-78a0-a01c-903f11b09cc7",
    "itemId": "call_perm_1",
    "environmentId": "local",
    "startedAtMs": 1795975473572,
    "cwd": "/scratch/cxp/ws/permissions_deny",
    "reason": "Need to write the build output outside the workspace",
    "permissions": {
        "network": {"enabled": True},
        "fileSystem": {
            "read": None,
            "write": ["/scratch/cxp/outside"],
            "entries": [{"path": {"type": "path", "path": "/scratch/cxp/outside"}, "access": "write"}],
        },
    },
}

USER_INPUT_PARAMS = {  # scenario user_input_default_feature
    "threadId": "01a2287a-8398-7250-96dd-43fb389bf2f3",
    "turnId": "01a2287a-83ab-7202-bb6b-a5e452087915",
    "itemId": "call_rui_1",
    "questions": [
        {
            "id": "color",
            "header": "Color",
            "question": "Which color should the button be?",
            "isOther": True,
            "isSecret": False,
            "options": [
                {"label": "Blue (Recommended)", "description": "Matches the theme."},
                {"label": "Red", "description": "Stands out."},
            ],
        },
        {
            "id": "size",
            "header": "Size",
            "question": "How big?",
            "isOther": True,
            "isSecret": False,
            "options": [
                {"label": "Small", "description": "Compact."},
                {"label": "Large", "description": "Easy to hit."},
            ],
        },
    ],
    "isBlocking": False,
    "autoResolutionMs": None,
}

ELICITATION_PARAMS = {  # scenario mcp_elicitation_accept (an MCP tool approval)
    "threadId": "01a2287b-a89f-7b81-bca1-a47bf27b440f",
    "turnId": "01a2287b-a8d7-7161-94b6-20fc7659ccc6",
    "serverName": "probe",
    "mode": "form",
    "_meta": {
        "codex_approval_kind": "mcp_tool_call",
        "persist": ["session", "always"],
        "tool_description": "Asks the user a question through MCP elicitation.",
        "tool_params": {},
        "tool_params_display": [],
    },
    "message": 'Allow the probe MCP server to run tool "ask"?',
    "requestedSchema": {"type": "object", "properties": {}},
}
