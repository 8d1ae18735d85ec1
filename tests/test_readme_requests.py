"""docs/requests.md's table of client requests is the generated protocol module's.

``codexmini.protocol.Calls`` has one typed method per client request of the
pinned stable schema; docs/requests.md lists every one of them, with its result
type and the helper that wraps it, if any.  When the schema (and so the module)
changes, this test fails and prints the table to paste.
"""

from __future__ import annotations

import inspect
import os
import re
from typing import Dict, List

from codexmini import protocol

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
REQUESTS = os.path.join(ROOT, "docs", "requests.md")
BEGIN, END = "<!-- requests: begin -->", "<!-- requests: end -->"

#: The helpers over a request (the README's table of helper calls says more of each).
HELPERS: Dict[str, str] = {
    "initialize": "`AppServerClient.start()`",
    "thread/start": "`Thread.start`",
    "thread/resume": "`Thread.resume`",
    "thread/fork": "`Thread.fork`",
    "thread/list": "`Thread.list`",
    "thread/read": "`thread.read()`",
    "thread/turns/list": "`thread.rollback()` (paginated threads)",
    "thread/revert": "`thread.rollback()` (paginated threads)",
    "thread/compact/start": "`thread.compact()`",
    "thread/archive": "`thread.archive()`",
    "thread/unarchive": "`thread.unarchive()`",
    "thread/name/set": "`thread.set_name()`",
    "turn/start": "`thread.turn()`, `thread.run()`, `codexmini.run()`",
    "turn/steer": "`turn.steer()`",
    "turn/interrupt": "`turn.interrupt()`",
    "review/start": "`thread.review()`",
    "model/list": "`client.models()`",
    "config/read": "`client.read_config()`",
    "config/value/write": "`client.write_config()`",
    "account/read": "`client.read_account()`",
    "account/rateLimits/read": "`client.read_rate_limits()`",
    "command/exec": "`client.exec()`",
}


def rows() -> List[str]:
    """One table row per ``Calls`` method, in the module's order."""
    out = []
    for name, function in protocol.Calls.__dict__.items():
        if name.startswith("_") or not inspect.iscoroutinefunction(function):
            continue
        method = re.match(r"``([^`]+)``", inspect.getdoc(function) or "")
        assert method, f"Calls.{name} does not name its method"
        result = inspect.signature(function).return_annotation
        out.append(f"| `{method.group(1)}` | `{name}` → `{result}` | {HELPERS.get(method.group(1), '')} |")
    return out


def table() -> str:
    return "\n".join(["| method | `client.call.…` → result | helper |", "|---|---|---|", *rows()])


def test_docs_list_every_client_request_of_the_protocol_module() -> None:
    with open(REQUESTS, encoding="utf-8") as f:
        text = f.read()
    assert BEGIN in text and END in text, f"docs/requests.md has no {BEGIN} … {END} block"
    listed = text.split(BEGIN, 1)[1].split(END, 1)[0].strip()
    assert listed == table(), "docs/requests.md's request table is stale; paste this:\n" + table()


def test_every_helper_names_a_request_the_module_has() -> None:
    methods = {row.split("`")[1] for row in rows()}
    assert set(HELPERS) <= methods, set(HELPERS) - methods
    assert len(methods) == len(rows())  # one method per request
