"""The model endpoint (``codexmini._endpoint``), pure: the ``-c`` flags codex
is given, the child's environment additions, and what is refused up front,
naming the supported codex range.  (The agent's tests run an agent against
an endpoint; these need no process.)"""

from __future__ import annotations

import dataclasses

import pytest

from codexmini import CODEX_VERSION, OLDEST_CODEX_VERSION, ConfigError, ModelEndpoint
from codexmini._endpoint import API_KEY_ENV, PROVIDER_ID


def test_endpoint_with_a_key_names_the_variable_not_the_key():
    endpoint = ModelEndpoint("https://models.example/v1", "sk-x")
    assert endpoint.config() == [
        'model_provider="codexmini"',
        'model_providers.codexmini={name="codexmini",base_url="https://models.example/v1",'
        'wire_api="responses",env_key="CODEXMINI_API_KEY"}',
    ]
    assert endpoint.env() == {"CODEXMINI_API_KEY": "sk-x"}
    assert (PROVIDER_ID, API_KEY_ENV) == ("codexmini", "CODEXMINI_API_KEY")
    assert not any("sk-x" in item for item in endpoint.config())


def test_endpoint_without_a_key_sets_no_env_key():
    # codex fails a turn whose env_key variable is missing or empty.
    endpoint = ModelEndpoint("http://127.0.0.1:5/v1")
    assert endpoint.api_key == "" and endpoint.wire_api == "responses"
    assert endpoint.config() == [
        'model_provider="codexmini"',
        'model_providers.codexmini={name="codexmini",base_url="http://127.0.0.1:5/v1",wire_api="responses"}',
    ]
    assert endpoint.env() == {}


def test_endpoint_url_is_a_quoted_toml_string():
    endpoint = ModelEndpoint('http://h/v1?q="x"\\y')
    assert 'base_url="http://h/v1?q=\\"x\\"\\\\y"' in endpoint.config()[1]


def test_endpoint_key_stays_out_of_repr_and_the_value_is_frozen():
    endpoint = ModelEndpoint("http://127.0.0.1:5/v1", "sk-secret")
    assert "sk-secret" not in repr(endpoint) and "127.0.0.1:5" in repr(endpoint)
    with pytest.raises(dataclasses.FrozenInstanceError):
        endpoint.api_key = "other"  # type: ignore[misc]
    assert endpoint == ModelEndpoint("http://127.0.0.1:5/v1", "sk-secret")


@pytest.mark.parametrize("url", ["127.0.0.1:1/v1", "ftp://h/v1", "", "HTTP//h"])
def test_endpoint_refuses_what_is_not_an_http_url(url):
    with pytest.raises(ConfigError) as info:
        ModelEndpoint(url, "k")
    assert str(info.value) == f"model endpoint must be an http(s) URL, not {url!r}"


@pytest.mark.parametrize("url", ["http://h", "https://h"])
def test_endpoint_accepts_both_schemes(url):
    assert ModelEndpoint(url).base_url == url


# -- the supported range ---------------------------------------------------------------


def test_endpoint_chat_wire_is_refused_for_the_whole_supported_range():
    # codex 0.149.1 and 0.171.0 both refuse `wire_api = "chat"` at config load.
    with pytest.raises(ConfigError) as info:
        ModelEndpoint("http://127.0.0.1:1/v1", "sk", wire_api="chat")
    assert str(info.value) == (
        f"wire_api 'chat' is not supported by codex {OLDEST_CODEX_VERSION} to {CODEX_VERSION}: "
        "only the Responses API (wire_api='responses') works"
    )
