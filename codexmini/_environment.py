"""The child's environment: an allowlist of the parent's, plus what is asked for.

Pure: the parent environment is a parameter.  A secret such as
``OPENAI_API_KEY`` reaches codex only when the caller names it in
``pass_names`` or passes it in ``extra``.  ``NO_COLOR=1`` is always
set because codex colours its stderr even when it is not a terminal.
"""

from __future__ import annotations

import re
from typing import Dict, Iterable, List, Mapping, Optional

#: Variables copied from the parent when present.
ALLOWED = frozenset(
    {
        "PATH",
        "HOME",
        "USER",
        "LOGNAME",
        "SHELL",
        "LANG",
        "LANGUAGE",
        "TERM",
        "TMPDIR",
        "TZ",
        "CODEX_HOME",
        "RUST_LOG",
        "XDG_CONFIG_HOME",
        "XDG_CACHE_HOME",
        "XDG_DATA_HOME",
        "XDG_RUNTIME_DIR",
        # proxies, both spellings
        "HTTP_PROXY",
        "HTTPS_PROXY",
        "ALL_PROXY",
        "NO_PROXY",
        "http_proxy",
        "https_proxy",
        "all_proxy",
        "no_proxy",
        # certificate authorities
        "SSL_CERT_FILE",
        "SSL_CERT_DIR",
        "REQUESTS_CA_BUNDLE",
        "CURL_CA_BUNDLE",
        "NODE_EXTRA_CA_CERTS",
        "CODEX_CA_CERTIFICATE",
    }
)

#: Prefixes copied from the parent (locale categories).
ALLOWED_PREFIXES = ("LC_",)

#: Names whose values are secrets (OPENAI_API_KEY, GITHUB_TOKEN, AWS_SECRET_ACCESS_KEY …):
#: passed to codex when named, and then kept out of what codexmini reports of it.
#: A pattern, matched ignoring case (compiled at first use: ``re`` caches it).
SECRET_NAME = r"KEY|TOKEN|SECRET|PASSWORD|PASSWD|CREDENTIAL"
#: Shorter values are not redacted: they would blank out ordinary words.
MIN_SECRET_LEN = 8


def child_environment(
    parent: Mapping[str, str],
    extra: Optional[Mapping[str, str]] = None,
    pass_names: Iterable[str] = (),
) -> Dict[str, str]:
    """Build the environment for ``codex app-server``.

    ``parent`` is filtered through the allowlist; ``pass_names`` adds named
    parent variables (for secrets); ``extra`` is set as given and wins.
    """
    env = {name: value for name, value in parent.items() if name in ALLOWED or name.startswith(ALLOWED_PREFIXES)}
    for name in pass_names:
        if name in parent:
            env[name] = parent[name]
    env.update(extra or {})
    env["NO_COLOR"] = "1"
    return env


def secret_values(env: Mapping[str, str]) -> List[str]:
    """The values in ``env`` that are secrets (by the variable's name), longest
    first, so that redacting one never leaves a piece of another."""
    found = {v for k, v in env.items() if len(v) >= MIN_SECRET_LEN and re.search(SECRET_NAME, k, re.IGNORECASE)}
    return sorted(found, key=len, reverse=True)


def redact(text: str, secrets: Iterable[str]) -> str:
    for secret in secrets:
        text = text.replace(secret, "***")
    return text


__all__ = [
    "ALLOWED",
    "ALLOWED_PREFIXES",
    "MIN_SECRET_LEN",
    "SECRET_NAME",
    "child_environment",
    "redact",
    "secret_values",
]
