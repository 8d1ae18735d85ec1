#!/usr/bin/env python3
"""A tiny MCP server over stdio, for the ``mcp_elicitation`` scenario.

codex starts it as ``mcp_servers.probe`` (``-c mcp_servers.probe.command=…
-c mcp_servers.probe.args=[…]``) and talks JSON-RPC 2.0 to it, one JSON
object per line on stdin/stdout.  It answers just what codex 0.149.1 asks of
a tool server: ``initialize``, the
``notifications/initialized`` notification, ``tools/list`` with one ``echo``
tool, and ``tools/call`` (``echo: <text>``, plus ``structuredContent``).
Anything else gets ``-32601``; notifications get nothing.  Standard library
only, any Python 3; it exits when codex closes its stdin.
"""

from __future__ import annotations

import json
import sys
from typing import Any, Dict, Optional

PROTOCOL = "2025-06-18"  # what codex's MCP client announces

ECHO_TOOL = {
    "name": "echo",
    "description": "Echo the text back.",
    "inputSchema": {
        "type": "object",
        "properties": {"text": {"type": "string", "description": "what to echo"}},
        "required": ["text"],
    },
}


def handle(message: Dict[str, Any]) -> Optional[Dict[str, Any]]:
    """The reply to one message, or ``None`` for a notification."""
    method = message.get("method")
    if "id" not in message:
        return None  # notifications/initialized, notifications/cancelled, …
    rid = message["id"]
    params = message.get("params") or {}
    if method == "initialize":
        result: Any = {
            "protocolVersion": params.get("protocolVersion") or PROTOCOL,
            "capabilities": {"tools": {"listChanged": False}},
            "serverInfo": {"name": "codexmini-probe", "version": "0.1.0"},
        }
    elif method == "tools/list":
        result = {"tools": [ECHO_TOOL]}
    elif method == "tools/call" and params.get("name") == "echo":
        text = str((params.get("arguments") or {}).get("text", ""))
        result = {
            "content": [{"type": "text", "text": f"echo: {text}"}],
            "structuredContent": {"echoed": text},
            "isError": False,
        }
    elif method == "ping":
        result = {}
    else:
        return {"jsonrpc": "2.0", "id": rid, "error": {"code": -32601, "message": f"method not found: {method}"}}
    return {"jsonrpc": "2.0", "id": rid, "result": result}


def main() -> int:
    for line in sys.stdin:
        if not line.strip():
            continue
        try:
            message = json.loads(line)
        except ValueError:
            continue
        if not isinstance(message, dict):
            continue
        reply = handle(message)
        if reply is not None:
            sys.stdout.write(json.dumps(reply) + "\n")
            sys.stdout.flush()
    return 0


if __name__ == "__main__":
    sys.exit(main())
