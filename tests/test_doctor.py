"""``codexmini doctor`` and ``codexmini install-codex`` (``codexmini._doctor``).

The doctor runs against the real codex with the scripted model (every check
holding; a model that refuses; a model nobody serves, which codex retries
until ``--timeout``), against fake codex processes (one that dies at start,
one whose account and threads are refused), and without any binary.
install-codex runs a fake ``npm`` on ``PATH`` (a real process writing the
npm layout), one that fails, one that installs nothing, and none at all.
"""

from __future__ import annotations

import io
import os
import shutil
import socket

import pytest
from support.fake_client import codex_bin

from codexmini import CODEX_VERSION
from codexmini import _cli as cli
from codexmini._binary import BinaryNotFound, find_codex, native_in_npm_root
from codexmini._doctor import account_line
from codexmini.testing.live import scratch_dir
from codexmini.testing.scripted_model import ScriptedModel


def have_codex() -> bool:
    try:
        find_codex()
        return True
    except BinaryNotFound:
        return False


live = pytest.mark.skipif(not have_codex(), reason="the pinned codex is not installed (make setup)")


@pytest.fixture
def home():
    root = scratch_dir("codexmini-doctor-")  # codex refuses helper binaries under /tmp
    yield root
    shutil.rmtree(root, ignore_errors=True)


def call(argv, env):
    out, err = io.StringIO(), io.StringIO()
    code = cli.main(argv, stdin=io.StringIO(), stdout=out, stderr=err, env=env)
    return code, out.getvalue(), err.getvalue()


def codex_env(home, **more):
    return {"PATH": os.environ["PATH"], "HOME": home, "CODEX_HOME": home, "NO_COLOR": "1", **more}


def lines(out):
    """The check lines, verdict and text, without what varies (paths, seconds)."""
    return [line[:8].strip() for line in out.splitlines() if line.startswith("  ")]


# -- the real codex ---------------------------------------------------------------------


@pytest.mark.live
@live
def test_doctor_every_check_holds_against_the_scripted_model(home):
    answer = {"output": [{"type": "message", "deltas": ["OK"]}]}
    with ScriptedModel({"default": answer}) as model:
        code, out, err = call(["doctor", "--provider-url", model.url, "--model", "gpt-fake"], codex_env(home))
    assert code == 0, out + err
    assert lines(out) == ["ok"] * 5
    assert f"codex version {CODEX_VERSION} (supported: " in out
    assert "login: none (" in out and "model answered in " in out and ": 'OK'" in out


@pytest.mark.live
@live
def test_doctor_without_the_model_asks_nothing(home):
    with ScriptedModel({"default": {"output": []}}) as model:
        code, out, _ = call(["doctor", "--no-model", "--provider-url", model.url], codex_env(home))
        assert model.requests == []
    assert code == 0 and lines(out) == ["ok", "ok", "ok", "ok", "--"]
    assert "model: not asked (--no-model)" in out


@pytest.mark.live
@live
def test_doctor_reports_a_model_that_refuses(home):
    refusal = {"http_status": 400, "body": {"error": {"message": "nope", "type": "invalid_request_error"}}}
    with ScriptedModel({"default": refusal}) as model:
        code, out, _ = call(["doctor", "--provider-url", model.url, "--model", "gpt-fake"], codex_env(home))
    assert code == 1 and lines(out)[-1] == "FAIL"
    assert "model: the turn failed: " in out and "nope" in out


@pytest.mark.live
@live
def test_doctor_reports_a_model_nobody_serves_with_codex_reason(home):
    with socket.socket() as held:  # a port of our own, nobody listening on it
        held.bind(("127.0.0.1", 0))
        url = f"http://127.0.0.1:{held.getsockname()[1]}/v1"
        code, out, _ = call(["doctor", "--provider-url", url, "--timeout", "2"], codex_env(home))
    assert code == 1 and lines(out)[-1] == "FAIL"
    assert "model: unreachable after 2s: " in out


# -- fake codex processes, no codex at all --------------------------------------------------


def test_doctor_a_codex_that_dies_at_start_is_exit_3(home):
    dying = os.path.join(home, "codex")
    with open(dying, "w") as f:
        f.write('#!/bin/sh\necho "error: bad config in config.toml" >&2\nexit 1\n')
    os.chmod(dying, 0o755)
    code, out, _ = call(["doctor", "--codex-bin", dying], codex_env(home))
    assert code == 3 and lines(out) == ["ok", "FAIL", "FAIL"]
    assert "app-server: codex app-server exited with code 1: error: bad config in config.toml" in out


def test_doctor_reports_refused_login_and_thread_checks(home):
    fake = codex_bin(home, "doctor_refusals")
    code, out, _ = call(["doctor", "--codex-bin", fake, "--timeout", "20"], codex_env(home))
    assert code == 1
    assert "login: account/read failed: " in out and "account/read is broken here" in out
    assert "model: RpcError: " in out and "thread/start is broken here" in out


def test_doctor_without_a_binary_says_how_to_install_one(home):
    code, out, _ = call(["doctor", "--codex-bin", os.path.join(home, "none")], {"PATH": home, "HOME": home})
    assert code == 3 and lines(out) == ["FAIL"]
    assert f"npm install -g @openai/codex@{CODEX_VERSION}" in out


@pytest.mark.parametrize(
    "argv, message",
    [
        (["--api-key-env", "KEY"], "--api-key-env needs --provider-url"),
        (
            ["--provider-url", "http://127.0.0.1:9/v1", "--api-key-env", "KEY"],
            "--api-key-env KEY: the variable is not set",
        ),
        (["--timeout", "0"], "--timeout must be a positive number of seconds, not 0.0"),
    ],
)
def test_doctor_refuses_a_bad_command_line(home, argv, message):
    code, out, _ = call(["doctor", *argv], codex_env(home))
    assert code == 2 and f"codexmini: {message}\n" in out


def test_doctor_account_line_names_the_login_never_a_key():
    assert account_line({"account": None, "requiresOpenaiAuth": True}).startswith("login: none (needs one;")
    assert "the configured provider needs none" in account_line({"requiresOpenaiAuth": False})
    assert account_line({"account": {"type": "apiKey"}, "requiresOpenaiAuth": True}) == "login: apiKey"
    chatgpt = {"type": "chatgpt", "email": "a@example.com", "planType": "plus"}
    assert account_line({"account": chatgpt, "requiresOpenaiAuth": True}) == "login: chatgpt a@example.com"


# -- install-codex ------------------------------------------------------------------------

FAKE_NPM = """#!/bin/sh
# A fake npm: `npm install --prefix DIR PACKAGE` lays out what the real one does.
echo "npm $*" >> "$(dirname "$0")/calls"
case "$MODE" in
  fail) echo "npm ERR! 404" >&2; exit 1 ;;
  empty) exit 0 ;;
esac
bin="$3/node_modules/@openai/codex-linux-x64/vendor/x86_64-unknown-linux-musl/bin"
mkdir -p "$bin" && printf '#!/bin/sh\\n' > "$bin/codex" && chmod +x "$bin/codex"
"""


@pytest.fixture
def npm(home):
    tools = os.path.join(home, "tools")
    os.makedirs(tools)
    with open(os.path.join(tools, "npm"), "w") as f:
        f.write(FAKE_NPM)
    os.chmod(os.path.join(tools, "npm"), 0o755)
    return tools


def npm_calls(tools):
    with open(os.path.join(tools, "calls")) as f:
        return f.read().splitlines()


def test_install_codex_into_the_user_cache_where_find_codex_looks(home, npm):
    env = {"PATH": f"{npm}:/usr/bin:/bin", "HOME": home}
    code, out, _ = call(["install-codex"], env)
    cache = os.path.join(home, ".cache", "codexmini", "codex", CODEX_VERSION)
    assert code == 0, out
    assert npm_calls(npm) == [f"npm install --prefix {cache} @openai/codex@{CODEX_VERSION}"]
    assert out.startswith(f"$ {npm}/npm install --prefix {cache} @openai/codex@{CODEX_VERSION}\n")
    found = native_in_npm_root(cache)  # what find_codex takes from the cache (tests/test_binary.py)
    assert found is not None and f"installed: {found}\n" in out and "CODEXMINI_CODEX_BIN" not in out


def test_install_codex_elsewhere_says_how_to_point_at_it(home, npm):
    prefix = os.path.join(home, "elsewhere")
    code, out, _ = call(["install-codex", "--prefix", prefix], {"PATH": f"{npm}:/usr/bin:/bin", "XDG_CACHE_HOME": home})
    assert code == 0 and f"CODEXMINI_CODEX_BIN={prefix}/node_modules/" in out


def test_install_codex_dry_run_prints_the_command_only(home, npm):
    code, out, _ = call(["install-codex", "--dry-run"], {"PATH": npm, "XDG_CACHE_HOME": home})
    assert (
        code == 0
        and out
        == f"$ {npm}/npm install --prefix {home}/codexmini/codex/{CODEX_VERSION} @openai/codex@{CODEX_VERSION}\n"
    )
    assert not os.path.exists(os.path.join(npm, "calls"))


@pytest.mark.parametrize(
    "mode, code, said",
    [("fail", 1, "npm install failed (its output is above)"), ("empty", 1, "npm installed nothing codexmini can run")],
)
def test_install_codex_when_npm_fails_or_installs_nothing(home, npm, mode, code, said):
    got, out, _ = call(["install-codex"], {"PATH": f"{npm}:/usr/bin:/bin", "HOME": home, "MODE": mode})
    assert got == code and said in out


def test_install_codex_without_npm_or_a_cache(home):
    code, out, _ = call(["install-codex"], {"PATH": home, "HOME": home})
    assert code == 3 and "npm is not on PATH: install Node.js" in out
    code, out, _ = call(["install-codex"], {"PATH": home})
    assert code == 2 and "give --prefix DIR" in out
