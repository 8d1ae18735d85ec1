"""The fake codex of ``codexmini.testing.codex_like``: :class:`CodexLike` itself.

Its turns are used everywhere (tests/test_threads.py, the agent's, the
run's); here is what it does outside a turn: an unknown method refused as
codex refuses it, and a behaviour passed as an instance taking its variant
from the fake's args.  In memory; every frame is validated by the
conformance plugin.
"""

from __future__ import annotations

import pytest
from support import thread_behaviours as tb
from support.canned import client_for_behaviour

from codexmini._errors import RpcError
from codexmini._threads import Thread
from codexmini.testing import CodexLike


async def test_codex_like_refuses_a_method_it_does_not_know():
    # As codex does (-32600 for every error): the fake never leaves a request unanswered.
    async with await client_for_behaviour(CodexLike) as client:
        with pytest.raises(RpcError, match="unknown method 'model/list'") as caught:
            await client.request("model/list", {}, timeout=30)
        assert caught.value.code == -32600


async def test_codex_like_instance_takes_its_variant_from_the_fake_s_args():
    # A behaviour passed as an instance is not re-created per launch; the
    # fake's args still choose its variant.
    async with await client_for_behaviour(tb.Failed(), "interrupted") as client:
        thread = await Thread.start(client)
        assert (await thread.turn("hi").run()).status == "interrupted"
