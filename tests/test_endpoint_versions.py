"""The model endpoint refuses what no supported codex accepts, naming the range."""

from __future__ import annotations

import pytest

from codexmini import CODEX_VERSION, OLDEST_CODEX_VERSION, ConfigError, ModelEndpoint


def test_endpoint_chat_wire_is_refused_for_the_whole_supported_range():
    # codex 0.149.1 and 0.171.0 both refuse `wire_api = "chat"` at config load.
    with pytest.raises(ConfigError) as info:
        ModelEndpoint("http://127.0.0.1:1/v1", "sk", wire_api="chat")
    assert str(info.value) == (
        f"wire_api 'chat' is not supported by codex {OLDEST_CODEX_VERSION} to {CODEX_VERSION}: "
        "only the Responses API (wire_api='responses') works"
    )
