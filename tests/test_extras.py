"""The utility requests (``codexmini._extras``): what each sends, and the pages.

:func:`pages` follows a cursor and stops on an empty page or a cursor it has
seen; ``models``, ``read_config``/``write_config``, ``read_account``,
``read_rate_limits`` and ``exec`` send their options in codex's names.  The
fake is :class:`support.canned.Canned`: its answers are the recordings', and
every frame is validated by the conformance plugin.
"""

from __future__ import annotations

from typing import Any, Dict, List

from support.canned import Canned, client_for, recorded

from codexmini._extras import pages
from codexmini.testing.codex_like import RATE_LIMITS_EXHAUSTED

SNAPSHOT = RATE_LIMITS_EXHAUSTED


# -- pages -----------------------------------------------------------------------------


async def test_pages_stop_on_an_empty_page_and_on_a_repeated_cursor() -> None:
    served: List[Dict[str, Any]] = []
    answers = [
        {"data": [1, 2], "nextCursor": "a"},
        {"data": [3], "nextCursor": "b"},
        {"data": [4], "nextCursor": "a"},  # a cursor named before: stop after this page
        {"data": [5], "nextCursor": None},
    ]

    async def fetch(params: Dict[str, Any]) -> Any:
        served.append(params)
        return answers[len(served) - 1]

    assert [x async for x in pages(fetch, {"limit": 2})] == [1, 2, 3, 4]
    assert served == [{"limit": 2}, {"limit": 2, "cursor": "a"}, {"limit": 2, "cursor": "b"}]
    empty = [{"data": [], "nextCursor": "z"}]

    async def fetch_empty(params: Dict[str, Any]) -> Any:
        return empty[0]

    assert [x async for x in pages(fetch_empty, {})] == []


# -- what each request sends -----------------------------------------------------------


async def test_models_send_their_filters() -> None:
    first = recorded("models", "model/list", 0, version="0.171.0")
    fake = Canned({"model/list": [first, {"result": {"data": [], "nextCursor": None}}]}, version="0.171.0")
    async with await client_for(fake) as client:
        models = [m["id"] async for m in client.models(include_hidden=True, limit=2, provider="openai")]
        assert len(models) == 2
        assert fake.asked[0] == ("model/list", {"includeHidden": True, "limit": 2, "modelProvider": "openai"})


async def test_config_account_and_exec_send_their_options() -> None:
    fake = Canned(
        {
            "config/read": [recorded("config_write", "config/read")],
            "config/value/write": [recorded("config_write", "config/value/write")],
            "account/read": [recorded("account", "account/read")],
            "command/exec": [recorded("command_exec", "command/exec")],
        }
    )
    async with await client_for(fake) as client:
        await client.read_config(cwd="/w", include_layers=True)
        await client.write_config(
            "tools.update_plan", {"enabled": True}, merge="upsert", file_path="/c.toml", expected_version="v1"
        )
        await client.read_account(refresh_token=True)
        done = await client.exec(
            ["ls"],
            cwd="/w",
            env={"A": "1", "B": None},
            timeout_ms=5000,
            sandbox_policy={"type": "dangerFullAccess"},
            params={"tty": False},
        )
        assert done == {"exitCode": 3, "stdout": "out\n", "stderr": "err\n"}
    assert fake.asked == [
        ("config/read", {"cwd": "/w", "includeLayers": True}),
        (
            "config/value/write",
            {
                "keyPath": "tools.update_plan",
                "value": {"enabled": True},
                "mergeStrategy": "upsert",
                "filePath": "/c.toml",
                "expectedVersion": "v1",
            },
        ),
        ("account/read", {"refreshToken": True}),
        (
            "command/exec",
            {
                "command": ["ls"],
                "cwd": "/w",
                "env": {"A": "1", "B": None},
                "timeoutMs": 5000,
                "sandboxPolicy": {"type": "dangerFullAccess"},
                "tty": False,
            },
        ),
    ]


async def test_read_rate_limits_with_a_chatgpt_login_returns_the_snapshot() -> None:
    # The recordings use an API key (codex refuses); with a ChatGPT login codex
    # answers the schema's GetAccountRateLimitsResponse: the snapshot.
    fake = Canned({"account/rateLimits/read": [{"result": {"rateLimits": SNAPSHOT}}]})
    async with await client_for(fake) as client:
        assert await client.read_rate_limits() == {"rateLimits": SNAPSHOT}
        assert fake.asked == [("account/rateLimits/read", {})]


async def test_config_and_account_requests_return_codex_answers_and_a_write_replaces_by_default() -> None:
    read, written = recorded("config_write", "config/read"), recorded("config_write", "config/value/write")
    account = recorded("account", "account/read")
    fake = Canned({"config/read": [read], "config/value/write": [written], "account/read": [account]})
    async with await client_for(fake) as client:
        assert await client.read_config() == read["result"]
        assert await client.write_config("model", "gpt-5") == written["result"]
        assert await client.read_account() == account["result"]
    assert fake.asked == [
        ("config/read", {}),
        ("config/value/write", {"keyPath": "model", "value": "gpt-5", "mergeStrategy": "replace"}),
        ("account/read", {}),
    ]
