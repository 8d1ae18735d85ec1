"""Where codex sends model requests: the model handover.  Pure.

``ModelEndpoint(base_url, api_key)`` becomes two ``-c`` flags naming a model
provider of codexmini's own, plus the key in the child's environment under
:data:`API_KEY_ENV` -- never on the command line, never in the session log.
"""

from __future__ import annotations

import json
from typing import TYPE_CHECKING, Dict, List, Mapping, Optional

from ._errors import ConfigError
from ._version import CODEX_VERSION, OLDEST_CODEX_VERSION

if TYPE_CHECKING:  # the checker sees the standard library; at run time, ._dataclasses (nothing compiled)
    from dataclasses import dataclass, field
else:
    from ._dataclasses import dataclass, field


#: The provider id codexmini configures in codex.
PROVIDER_ID = "codexmini"
#: The child's environment variable that carries the endpoint's key.
API_KEY_ENV = "CODEXMINI_API_KEY"


def _toml(value: str) -> str:
    # A TOML basic string; JSON's escapes are a subset TOML accepts.
    return json.dumps(value)


@dataclass(frozen=True)
class ModelEndpoint:
    """Where codex should send model requests.

    ``base_url``: a Responses API endpoint (``http://`` or ``https://``).
    ``api_key``: its key, kept out of ``repr``, argv and the session log (it
    travels in the child's environment; "" for a keyless local server).
    ``wire_api``: the wire protocol, ``"responses"`` -- the only one every
    supported codex accepts."""

    base_url: str
    api_key: str = field(default="", repr=False)
    wire_api: str = "responses"

    def __post_init__(self) -> None:
        if self.wire_api != "responses":
            # Every supported codex (0.149.1 and 0.171.0 alike) refuses
            # `wire_api = "chat"` at config load and the app-server dies
            # before answering; say so before spawning anything.
            raise ConfigError(
                f"wire_api {self.wire_api!r} is not supported by codex {OLDEST_CODEX_VERSION} to {CODEX_VERSION}: "
                "only the Responses API (wire_api='responses') works"
            )
        if not self.base_url.startswith(("http://", "https://")):
            raise ConfigError(f"model endpoint must be an http(s) URL, not {self.base_url!r}")

    def config(self) -> List[str]:
        """The ``-c`` items that select this endpoint."""
        # codex rejects a provider without a name at config load (both ends of the range).
        # env_key only when there is a key: codex fails a turn whose env_key
        # variable is missing or empty, while a keyless local endpoint is fine.
        key = f',env_key="{API_KEY_ENV}"' if self.api_key else ""
        table = f'{{name="{PROVIDER_ID}",base_url={_toml(self.base_url)},wire_api="{self.wire_api}"{key}}}'
        return [f'model_provider="{PROVIDER_ID}"', f"model_providers.{PROVIDER_ID}={table}"]

    def env(self) -> Dict[str, str]:
        """The child's environment additions (the key, if any)."""
        return {API_KEY_ENV: self.api_key} if self.api_key else {}


def endpoint_option(url: Optional[str], key_env: Optional[str], env: Mapping[str, str]) -> Optional[ModelEndpoint]:
    """The endpoint a command line names (``--provider-url``, and
    ``--api-key-env``: the variable of ``env`` holding its key), or ``None``
    for codex's own configuration; a :class:`~codexmini.ConfigError` for a
    key variable without a URL, or one that is not set."""
    if not url:
        if key_env:
            raise ConfigError("--api-key-env needs --provider-url")
        return None
    if key_env and key_env not in env:
        raise ConfigError(f"--api-key-env {key_env}: the variable is not set")
    return ModelEndpoint(url, env[key_env] if key_env else "")


__all__ = ["API_KEY_ENV", "PROVIDER_ID", "ModelEndpoint", "endpoint_option"]
