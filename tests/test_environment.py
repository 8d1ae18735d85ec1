"""The child's environment: pure allowlist tests, then one real child.

The last test spawns a tiny fake ``codex`` through ``AppServerClient.start`` and
reads back, from its ``initialize`` answer, the environment it actually got.
That answer goes through the conformance plugin's validator like every other
frame, so it has the exact shape of the real ``InitializeResponse``.
"""

from __future__ import annotations

import asyncio
import json
import sys
from pathlib import Path

import pytest

from codexmini import Launch
from codexmini import _environment as environment
from codexmini._client import AppServerClient
from codexmini._environment import (
    ALLOWED,
    ALLOWED_PREFIXES,
    MIN_SECRET_LEN,
    child_environment,
    redact,
    secret_values,
)

PARENT = {
    "PATH": "/usr/bin:/bin",
    "HOME": "/home/me",
    "USER": "me",
    "LANG": "en_US.UTF-8",
    "LC_ALL": "C.UTF-8",
    "LC_CTYPE": "C.UTF-8",
    "TERM": "xterm",
    "TMPDIR": "/var/tmp",
    "TZ": "UTC",
    "CODEX_HOME": "/home/me/.codex",
    "HTTPS_PROXY": "http://proxy:3128",
    "no_proxy": "localhost",
    "SSL_CERT_FILE": "/etc/ssl/ca.pem",
    "OPENAI_API_KEY": "sk-secret",
    "AWS_SECRET_ACCESS_KEY": "aws-secret",
    "GITHUB_TOKEN": "ghp-secret",
    "PYTHONPATH": "/somewhere",
    "NO_COLOR": "0",
    "LCX_NOT_A_LOCALE": "x",
}
SECRETS = {"OPENAI_API_KEY", "AWS_SECRET_ACCESS_KEY", "GITHUB_TOKEN", "PYTHONPATH", "LCX_NOT_A_LOCALE"}


def test_child_environment_keeps_allowlisted_names_and_locale_categories():
    env = child_environment(PARENT)
    expected = {name: value for name, value in PARENT.items() if name not in SECRETS and name != "NO_COLOR"}
    expected["NO_COLOR"] = "1"
    assert env == expected
    assert env["LC_ALL"] == env["LC_CTYPE"] == "C.UTF-8"


def test_child_environment_drops_secrets_by_default():
    env = child_environment(PARENT)
    assert not SECRETS & set(env)


def test_child_environment_passes_named_secrets_only():
    env = child_environment(PARENT, pass_names=["OPENAI_API_KEY"])
    assert env["OPENAI_API_KEY"] == "sk-secret"
    assert "GITHUB_TOKEN" not in env and "AWS_SECRET_ACCESS_KEY" not in env


def test_child_environment_pass_names_accepts_any_iterable():
    env = child_environment(PARENT, pass_names=(name for name in ["GITHUB_TOKEN", "PYTHONPATH"]))
    assert env["GITHUB_TOKEN"] == "ghp-secret" and env["PYTHONPATH"] == "/somewhere"


def test_child_environment_named_but_absent_name_ignored():
    env = child_environment(PARENT, pass_names=["NOT_SET_ANYWHERE"])
    assert "NOT_SET_ANYWHERE" not in env
    assert env == child_environment(PARENT)


def test_child_environment_extra_wins():
    env = child_environment(
        PARENT,
        extra={"PATH": "/opt/bin", "OPENAI_API_KEY": "sk-explicit", "CODEXMINI_API_KEY": "k"},
        pass_names=["OPENAI_API_KEY"],
    )
    assert env["PATH"] == "/opt/bin"
    assert env["OPENAI_API_KEY"] == "sk-explicit"
    assert env["CODEXMINI_API_KEY"] == "k"


def test_child_environment_no_color_always_one():
    assert child_environment({})["NO_COLOR"] == "1"
    assert child_environment({"NO_COLOR": "0"})["NO_COLOR"] == "1"
    assert child_environment({}, extra={"NO_COLOR": ""}, pass_names=["NO_COLOR"])["NO_COLOR"] == "1"


def test_child_environment_does_not_mutate_inputs():
    parent, extra = dict(PARENT), {"A": "b"}
    child_environment(parent, extra=extra, pass_names=["OPENAI_API_KEY"])
    assert parent == PARENT and extra == {"A": "b"}


def test_child_environment_allowlist_covers_the_spec():
    # The allowlist: PATH, HOME, USER, LANG, LC_*, TERM, TMPDIR, TZ, CODEX_HOME, proxy and CA variables.
    assert {"PATH", "HOME", "USER", "LANG", "TERM", "TMPDIR", "TZ", "CODEX_HOME"} <= ALLOWED
    assert {"HTTP_PROXY", "HTTPS_PROXY", "NO_PROXY", "http_proxy", "https_proxy", "no_proxy"} <= ALLOWED
    assert {"SSL_CERT_FILE", "SSL_CERT_DIR"} <= ALLOWED
    assert ALLOWED_PREFIXES == ("LC_",)
    assert "OPENAI_API_KEY" not in ALLOWED


def test_environment_all_names_exist():
    for name in environment.__all__:
        assert hasattr(environment, name), name


# -- secrets: found by name, redacted from text ------------------------------------------


def test_secret_values_are_the_long_values_of_secret_names():
    env = {
        "OPENAI_API_KEY": "sk-proj-0123456789",
        "GITHUB_TOKEN": "ghp_abcdefghij",
        "PATH": "/usr/local/bin:/usr/bin",  # long, but not a secret's name
        "HOME": "/home/someone",
        "SESSION_SECRET": "short",  # a secret's name, but too short to redact
    }
    assert secret_values(env) == ["sk-proj-0123456789", "ghp_abcdefghij"]
    # PARENT's three secrets: the two of ten characters (in either order), then the one of nine.
    found = secret_values(PARENT)
    assert sorted(found[:2]) == ["aws-secret", "ghp-secret"] and found[2:] == ["sk-secret"]


@pytest.mark.parametrize(
    "name",
    ["OPENAI_API_KEY", "GITHUB_TOKEN", "AWS_SECRET_ACCESS_KEY", "DB_PASSWORD", "FTP_PASSWD", "GCP_CREDENTIAL"]
    + ["key", "github_token", "Client_Secret", "password", "passwd", "credentials"],
)
def test_secret_values_recognise_each_secret_word_in_any_case(name):
    assert secret_values({name: "0123456789"}) == ["0123456789"]


@pytest.mark.parametrize("name", ["PATH", "HOME", "USER", "TOK", "PASS", "CRED", "SECRE", "KY", ""])
def test_secret_values_ignore_other_names(name):
    assert secret_values({name: "0123456789abcdef"}) == []


def test_secret_values_minimum_length_is_eight():
    assert MIN_SECRET_LEN == 8
    env = {"A_KEY": "1234567", "B_KEY": "12345678", "C_KEY": "123456789", "D_KEY": ""}
    assert secret_values(env) == ["123456789", "12345678"]
    assert secret_values({"A_KEY": "x" * (MIN_SECRET_LEN - 1)}) == []
    assert secret_values({"A_KEY": "x" * MIN_SECRET_LEN}) == ["x" * MIN_SECRET_LEN]


def test_secret_values_longest_first_without_duplicates():
    env = {"SHORT_TOKEN": "abcdefgh", "LONG_TOKEN": "abcdefghijkl", "MID_TOKEN": "abcdefghij", "SAME_KEY": "abcdefgh"}
    assert secret_values(env) == ["abcdefghijkl", "abcdefghij", "abcdefgh"]
    assert secret_values({}) == []


def test_redact_replaces_every_occurrence_of_every_secret():
    text = "key sk-proj-0123456789 then ghp_abcdefghij and sk-proj-0123456789 again"
    assert redact(text, ["sk-proj-0123456789", "ghp_abcdefghij"]) == "key *** then *** and *** again"


def test_redact_without_secrets_or_matches_returns_the_text_unchanged():
    assert redact("nothing to hide", []) == "nothing to hide"
    assert redact("nothing to hide", ["sk-proj-0123456789"]) == "nothing to hide"
    assert redact("", ["sk-proj-0123456789"]) == ""


def test_redact_with_secret_values_leaves_no_piece_of_a_longer_secret():
    # One secret is the start of another: longest first, so the longer one goes whole.
    env = {"SHORT_TOKEN": "abcdefgh", "LONG_TOKEN": "abcdefghijkl", "PATH": "/bin"}
    text = "long=abcdefghijkl short=abcdefgh path=/bin"
    assert redact(text, secret_values(env)) == "long=*** short=*** path=/bin"
    # The other order would leave the tail of the longer one behind.
    assert redact(text, ["abcdefgh", "abcdefghijkl"]) == "long=***ijkl short=*** path=/bin"


def test_redact_keeps_short_values_of_secret_names():
    env = {"OPENAI_API_KEY": "sk-proj-0123456789", "DEBUG_TOKEN": "on"}
    text = "DEBUG_TOKEN=on OPENAI_API_KEY=sk-proj-0123456789 turned on"
    assert redact(text, secret_values(env)) == "DEBUG_TOKEN=on OPENAI_API_KEY=*** turned on"


# -- a real child ---------------------------------------------------------------

# Answers initialize like codex 0.149.1 (the four InitializeResponse fields,
# codexHome absolute), with the environment it was given JSON-encoded in
# userAgent; then reads until stdin closes, which is how close() ends codex.
ENV_DUMPER = """#!{python}
import json, os, sys

for line in sys.stdin:
    frame = json.loads(line)
    if frame.get("method") == "initialize":
        result = {{
            "userAgent": json.dumps({{"argv": sys.argv[1:], "env": dict(os.environ)}}),
            "codexHome": {home!r},
            "platformFamily": "unix",
            "platformOs": "linux",
        }}
        sys.stdout.write(json.dumps({{"id": frame["id"], "result": result}}) + "\\n")
        sys.stdout.flush()
"""


def env_dumper(tmp_path: Path) -> Path:
    script = tmp_path / "codex"
    script.write_text(ENV_DUMPER.format(python=sys.executable, home=str(tmp_path / "codex-home")))
    script.chmod(0o755)
    return script


async def child_sees(codex: Path, **launch) -> dict:
    client = await AppServerClient.start(Launch(codex_bin=str(codex), cwd=str(codex.parent), **launch))
    try:
        seen = json.loads(client.server_info["userAgent"])
    finally:
        await client.close()
    assert seen["argv"] == ["app-server"]
    assert client.returncode == 0
    return seen["env"]


@pytest.mark.parametrize("pass_env", [[], ["OPENAI_API_KEY"]], ids=["default", "named"])
def test_client_env_allowlist_reaches_child(tmp_path, pass_env):
    parent = {
        "PATH": "/usr/bin:/bin",
        "HOME": str(tmp_path),
        "LANG": "C.UTF-8",
        "OPENAI_API_KEY": "sk-secret",
        "GITHUB_TOKEN": "ghp-secret",
        "NO_COLOR": "0",
    }
    seen = asyncio.run(
        asyncio.wait_for(
            child_sees(env_dumper(tmp_path), parent_env=parent, pass_env=pass_env, env={"CODEXMINI_API_KEY": "k"}),
            60,
        )
    )
    # The child is Python: PEP 538 may add LC_CTYPE to its own environ when the
    # locale is "C"; that is the interpreter's doing, not ours.
    seen.pop("LC_CTYPE", None)
    expected = {
        "PATH": "/usr/bin:/bin",
        "HOME": str(tmp_path),
        "LANG": "C.UTF-8",
        "CODEXMINI_API_KEY": "k",
        "NO_COLOR": "1",
    }
    if pass_env:
        expected["OPENAI_API_KEY"] = "sk-secret"
    assert seen == expected


# Every name of the allowlist, spelled out: widening what reaches codex (which
# runs the model's commands) is a change a reviewer should see in a test.
ALLOWLIST = [
    "PATH", "HOME", "USER", "LOGNAME", "SHELL", "LANG", "LANGUAGE", "TERM", "TMPDIR", "TZ",
    "CODEX_HOME", "RUST_LOG",
    "XDG_CONFIG_HOME", "XDG_CACHE_HOME", "XDG_DATA_HOME", "XDG_RUNTIME_DIR",
    "HTTP_PROXY", "HTTPS_PROXY", "ALL_PROXY", "NO_PROXY", "http_proxy", "https_proxy", "all_proxy", "no_proxy",
    "SSL_CERT_FILE", "SSL_CERT_DIR", "REQUESTS_CA_BUNDLE", "CURL_CA_BUNDLE", "NODE_EXTRA_CA_CERTS",
    "CODEX_CA_CERTIFICATE",
]  # fmt: skip


@pytest.mark.parametrize("name", ALLOWLIST)
def test_child_environment_passes_each_allowlisted_variable(name):
    assert child_environment({name: "v", "OPENAI_API_KEY": "sk"}) == {name: "v", "NO_COLOR": "1"}


def test_child_environment_allowlist_is_exactly_the_reviewed_one():
    assert ALLOWED == frozenset(ALLOWLIST)
