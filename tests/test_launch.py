"""How codex is started, pure: the Launch value checks itself, and plan() makes argv, env and cwd.

Nothing here starts a process: :func:`plan` is given the binary and the
parent environment.  What the child really receives is tested against a
real child in ``test_environment.py`` and ``test_client.py``.
"""

from __future__ import annotations

import dataclasses
import math
from types import MappingProxyType

import pytest

from codexmini import ConfigError, Launch, Limits, ModelEndpoint, Timeouts
from codexmini import _launch as launch_module
from codexmini._endpoint import API_KEY_ENV
from codexmini._launch import Plan, plan
from codexmini._wire import DEFAULT_MAX_FRAME_BYTES

PARENT = {"PATH": "/usr/bin", "HOME": "/home/u", "OPENAI_API_KEY": "sk-parent-secret", "LC_ALL": "C"}


async def a_launcher(argv, env, cwd):  # pragma: no cover - never called: plan() starts nothing
    raise AssertionError("not called")


# -- the defaults ------------------------------------------------------------------------


def test_launch_defaults_are_those_the_client_used_before():
    # _launch spells the wire's frame cap itself (so the agent's import loads no wire): the same number.
    assert vars(launch_module)["DEFAULT_MAX_FRAME_BYTES"] == DEFAULT_MAX_FRAME_BYTES
    assert Timeouts() == Timeouts(
        initialize=60.0, request=120.0, handler=300.0, close=5.0, model_retry=120.0, write=30.0, consumer=60.0
    )
    assert Limits() == Limits(
        max_frame_bytes=DEFAULT_MAX_FRAME_BYTES,
        queue_size=10000,
        unclaimed_threads=32,
        unclaimed_bytes=8 * 1024 * 1024,
        overflow="wait",  # back-pressure: a slow consumer loses nothing
    )
    launch = Launch()
    assert (launch.codex_bin, launch.config, launch.args, launch.endpoint) == (None, (), (), None)
    assert (dict(launch.env), launch.pass_env, launch.parent_env) == ({}, (), None)
    assert (launch.codex_home, launch.cwd, launch.launcher) == (None, None, None)
    assert (launch.timeouts, launch.limits) == (Timeouts(), Limits())


def test_launch_is_a_frozen_value_compared_by_value():
    one = Launch(config=["a=1"], env={"X": "1"})
    assert one == Launch(config=("a=1",), env={"X": "1"})
    assert one != Launch(config=["a=2"], env={"X": "1"})
    with pytest.raises(dataclasses.FrozenInstanceError):
        one.cwd = "/elsewhere"  # type: ignore[misc]
    # What was given is copied: changing the caller's lists or dicts changes nothing.
    config, args, names, env, parent = ["a=1"], ["--x"], ["K"], {"X": "1"}, {"PATH": "/p"}
    copied = Launch(config=config, args=args, pass_env=names, env=env, parent_env=parent)
    for given in (config, args, names):
        given.append("more=1")
    env["Y"] = parent["Y"] = "2"
    assert (copied.config, copied.args, copied.pass_env) == (("a=1",), ("--x",), ("K",))
    assert (dict(copied.env), dict(copied.parent_env or {})) == ({"X": "1"}, {"PATH": "/p"})
    assert isinstance(copied.env, MappingProxyType) and isinstance(copied.parent_env, MappingProxyType)
    with pytest.raises(TypeError):
        copied.env["Z"] = "3"  # type: ignore[index]
    assert dataclasses.replace(one, cwd="/w") == Launch(config=["a=1"], env={"X": "1"}, cwd="/w")


def test_launch_repr_shows_what_differs_and_no_environment_value():
    assert repr(Launch()) == "Launch()"
    shown = repr(
        Launch(
            codex_bin="/bin/codex",
            env={"MY_TOKEN": "tok-very-secret"},
            parent_env={"PATH": "/p", "API_KEY": "sk-parent-secret"},
            endpoint=ModelEndpoint("http://127.0.0.1:9/v1", "sk-endpoint-secret"),
            timeouts=Timeouts(request=5),
        )
    )
    assert shown.startswith("Launch(codex_bin='/bin/codex', ")
    assert "env=['MY_TOKEN']" in shown and "parent_env=['API_KEY', 'PATH']" in shown
    assert (
        "Timeouts(initialize=60.0, request=5, handler=300.0, close=5.0, model_retry=120.0, write=30.0, consumer=60.0)"
        in shown
    )
    for secret in ("tok-very-secret", "sk-parent-secret", "sk-endpoint-secret"):
        assert secret not in shown


def test_launch_for_workspace_sets_the_cwd_only_when_it_has_none():
    assert Launch().for_workspace("/ws") == Launch(cwd="/ws")
    own = Launch(cwd="/own")
    assert own.for_workspace("/ws") is own
    bare = Launch()
    assert bare.for_workspace(None) is bare


# -- what it refuses -----------------------------------------------------------------------


@pytest.mark.parametrize(
    "options, message",
    [
        ({"config": ["no-equals-sign"]}, "config items must be KEY=VALUE, not 'no-equals-sign'"),
        ({"config": ["=value"]}, "config items must be KEY=VALUE, not '=value'"),
        ({"config": ["  =value"]}, "config items must be KEY=VALUE, not '  =value'"),
        ({"config": "model=x"}, "Launch.config must be a sequence of strings, not 'model=x'"),
        ({"config": ["a=1", 3, ""]}, "Launch.config items must be non-empty strings, not 3"),
        ({"config": ["a=1", "x", "y"]}, "config items must be KEY=VALUE, not 'x'"),
        ({"config": None}, "Launch.config must be a sequence of strings, not None"),
        ({"args": "--flag"}, "Launch.args must be a sequence of strings"),
        ({"args": [""]}, "Launch.args items must be non-empty strings, not ''"),
        ({"pass_env": "OPENAI_API_KEY"}, "Launch.pass_env must be a sequence of strings"),
        ({"pass_env": [b"KEY"]}, "Launch.pass_env items must be non-empty strings"),
        ({"env": ["A=1"]}, "Launch.env must be a mapping of names to strings, not list"),
        ({"env": {"": "x"}}, "Launch.env has a name no environment can hold: ''"),
        ({"env": {"A=B": "x"}}, "Launch.env has a name no environment can hold: 'A=B'"),
        ({"env": {"A\0": "x"}}, "Launch.env has a name no environment can hold"),
        ({"env": {3: "x"}}, "Launch.env has a name no environment can hold: 3"),
        ({"env": {"A": 1}}, "Launch.env['A'] must be a string without NUL characters"),
        ({"env": {"A": "x\0y"}}, "Launch.env['A'] must be a string without NUL characters"),
        ({"parent_env": {"PATH": None}}, "Launch.parent_env['PATH'] must be a string"),
        ({"codex_bin": ""}, "Launch.codex_bin must be a non-empty path string or None, not ''"),
        ({"codex_home": 3}, "Launch.codex_home must be a non-empty path string or None, not 3"),
        ({"cwd": b"/ws"}, "Launch.cwd must be a non-empty path string or None"),
        ({"endpoint": "http://127.0.0.1:9/v1"}, "Launch.endpoint must be a ModelEndpoint or None, not str"),
        ({"launcher": "not callable"}, "Launch.launcher must be callable, not 'not callable'"),
        ({"timeouts": 30}, "Launch.timeouts must be a Timeouts, not int"),
        ({"limits": {"queue_size": 5}}, "Launch.limits must be a Limits, not dict"),
    ],
)
def test_launch_refuses_what_cannot_start_a_child(options, message):
    with pytest.raises(ConfigError, match="^" + message.replace("[", r"\[").replace("(", r"\(")):
        Launch(**options)


@pytest.mark.parametrize("field", ["initialize", "request", "handler", "close", "write"])
@pytest.mark.parametrize("bad", [0, -1, math.inf, math.nan, True, "5", None])
def test_timeouts_refuse_what_is_not_a_positive_number_of_seconds(field, bad):
    with pytest.raises(ConfigError, match=rf"^Timeouts\.{field} must be a positive number of seconds, not "):
        Timeouts(**{field: bad})


@pytest.mark.parametrize("field", ["max_frame_bytes", "queue_size", "unclaimed_threads", "unclaimed_bytes"])
@pytest.mark.parametrize("bad", [0, -5, 1.5, True, "10", None])
def test_limits_refuse_what_is_not_a_whole_number_of_at_least_one(field, bad):
    with pytest.raises(ConfigError, match=rf"^Limits\.{field} must be a whole number >= 1, not "):
        Limits(**{field: bad})


@pytest.mark.parametrize("field", ["model_retry", "consumer"])
@pytest.mark.parametrize("bad", [0, -1, math.inf, math.nan, True, "5"])
def test_timeouts_model_retry_and_consumer_are_a_positive_number_or_none(field, bad):
    assert getattr(Timeouts(**{field: None}), field) is None  # wait as long as codex retries, or the consumer takes
    with pytest.raises(ConfigError, match=rf"^Timeouts\.{field} must be a positive number of seconds, not "):
        Timeouts(**{field: bad})


@pytest.mark.parametrize("bad", ["block", "", None, 1, ["wait"]])
def test_limits_overflow_is_wait_or_drop(bad):
    assert Limits(overflow="drop").overflow == "drop"
    with pytest.raises(ConfigError, match=r"^Limits\.overflow must be one of 'wait', 'drop', not "):
        Limits(overflow=bad)


def test_timeouts_and_limits_take_the_smallest_valid_values():
    assert Timeouts(initialize=0.001, request=1, handler=1e-9, close=0.5).request == 1
    assert Limits(max_frame_bytes=1, queue_size=1, unclaimed_threads=1, unclaimed_bytes=1).queue_size == 1


# -- plan ------------------------------------------------------------------------------------


def test_plan_of_the_default_launch_is_codex_app_server_in_the_parent_cwd():
    planned = plan(Launch(), "/bin/codex", PARENT)
    assert planned == Plan(
        ("/bin/codex", "app-server"), {"PATH": "/usr/bin", "HOME": "/home/u", "LC_ALL": "C", "NO_COLOR": "1"}, None
    )


def test_plan_puts_the_endpoint_items_before_the_config_and_the_args_last():
    endpoint = ModelEndpoint("http://127.0.0.1:9/v1", "sk-endpoint")
    launch = Launch(config=['model="m"', "a.b=1"], args=["--x", "y"], endpoint=endpoint)
    argv = plan(launch, "codex", {}).argv
    provider, table = endpoint.config()
    assert argv == ("codex", "app-server", "-c", provider, "-c", table, "-c", 'model="m"', "-c", "a.b=1", "--x", "y")
    assert not [word for word in argv if "sk-endpoint" in word]  # the key is never on the command line


def test_plan_builds_the_environment_from_the_allowlist_names_env_key_and_home():
    endpoint = ModelEndpoint("http://127.0.0.1:9/v1", "sk-endpoint")
    launch = Launch(
        env={"HOME": "/elsewhere", "EXTRA": "1", API_KEY_ENV: "overwritten"},
        pass_env=["OPENAI_API_KEY", "NOT_IN_PARENT"],
        endpoint=endpoint,
        codex_home="/var/tmp/home",
        cwd="/ws",
    )
    planned = plan(launch, "codex", PARENT)
    assert planned.env == {
        "PATH": "/usr/bin",
        "HOME": "/elsewhere",  # env wins over the parent
        "LC_ALL": "C",
        "OPENAI_API_KEY": "sk-parent-secret",  # named, so passed
        "EXTRA": "1",
        API_KEY_ENV: "sk-endpoint",  # the endpoint's key wins over env
        "CODEX_HOME": "/var/tmp/home",  # codex_home wins over everything
        "NO_COLOR": "1",
    }
    assert planned.cwd == "/ws"


def test_plan_without_a_key_or_a_home_adds_neither():
    planned = plan(Launch(endpoint=ModelEndpoint("http://127.0.0.1:9/v1")), "codex", {"CODEX_HOME": "/parent/home"})
    assert API_KEY_ENV not in planned.env
    assert planned.env["CODEX_HOME"] == "/parent/home"  # the parent's, through the allowlist


def test_plan_reads_nothing_but_its_arguments(monkeypatch):
    # Pure: the process environment and working directory play no part.
    monkeypatch.setenv("OPENAI_API_KEY", "sk-process")
    monkeypatch.setenv("PATH", "/process/bin")
    monkeypatch.chdir("/")
    planned = plan(Launch(pass_env=["OPENAI_API_KEY"], launcher=a_launcher), "codex", {"PATH": "/given"})
    assert planned.env == {"PATH": "/given", "NO_COLOR": "1"} and planned.cwd is None
