"""Raw WebSocket servers for the tests of what codex never does: a handler
per connection on 127.0.0.1, speaking bytes (the upgrade and the frames come
from :mod:`codexmini.testing.fake_socket`)."""

from __future__ import annotations

import asyncio
from typing import Awaitable, Callable, Tuple

Handler = Callable[[asyncio.StreamReader, asyncio.StreamWriter], Awaitable[None]]


async def raw_server(handler: Handler) -> Tuple[asyncio.AbstractServer, str]:
    """A server running ``handler`` for each connection (closing it after); its ``ws://`` URL."""

    async def closing(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        try:
            await handler(reader, writer)
        finally:
            writer.close()

    server = await asyncio.start_server(closing, "127.0.0.1", 0)
    return server, f"ws://127.0.0.1:{server.sockets[0].getsockname()[1]}"
