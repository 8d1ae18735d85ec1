"""The real binary's frames pass the strict validator (KNOWN_UNDECLARED is right).

No model is needed: ``initialize`` and ``thread/start`` never call it, so the
provider points at an unused loopback port.  ``CODEX_HOME`` lives under
``/var/tmp``, never ``/tmp`` (codex refuses to create its helper binaries
under a temporary dir there, and says so on stderr).

The plugin's own validator (the ``conformance_frames`` fixture) must have seen
the handshake and the thread start with zero problems in strict mode against
the experimental bundle of the binary's own version.  The same frames are then
replayed against that version's stable bundle, whose catalog of
sent-but-undeclared fields (``KNOWN_UNDECLARED_BY_VERSION``) must match what
the binary really sends -- no more, no less -- for the methods seen here.
"""

from __future__ import annotations

import asyncio
import os
import shutil
import socket

import pytest

from codexmini import AppServerClient, Launch
from codexmini._subscriptions import ALL
from codexmini.testing.live import scratch_dir
from conformance.schema import SchemaBundle, fixture_versions, known_undeclared, validate_transcript
from conformance.versions import live_codex

pytestmark = pytest.mark.live


def _unused_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


async def _thread_start(home: str, workspace: str, tap) -> None:
    base_url = f"http://127.0.0.1:{_unused_port()}/v1"
    client = await AppServerClient.start(
        Launch(
            config=[
                'model_provider="codexmini"',
                'model_providers.codexmini={name="codexmini",base_url="%s",wire_api="responses",env_key="CODEXMINI_API_KEY"}'
                % base_url,
                'model="gpt-fake"',
            ],
            env={"CODEX_HOME": home, "CODEXMINI_API_KEY": "sk-unused"},
            cwd=workspace,
        ),
        tap=tap,
    )
    try:
        events = client.subscribe(ALL)
        result = await client.request(
            "thread/start", {"cwd": workspace, "approvalPolicy": "never", "sandbox": "read-only"}, timeout=60
        )
        assert result["thread"]["id"]
        # thread/started comes after the response.
        while (await events.get(timeout=30))["method"] != "thread/started":
            pass
    finally:
        await client.close()


def test_live_thread_start_frames_pass_strict_validation(conformance_frames):
    codex = live_codex()
    if isinstance(codex, str):
        pytest.skip(codex)
    if codex.version not in fixture_versions():
        pytest.skip(f"codex {codex.version} has no schema fixtures")
    home = scratch_dir("codexmini-live-")
    workspace = os.path.join(home, "ws")
    os.mkdir(workspace)
    transcript = []
    try:
        asyncio.run(asyncio.wait_for(_thread_start(home, workspace, lambda d, f: transcript.append((d, f))), 120))
    finally:
        shutil.rmtree(home, ignore_errors=True)

    (validator,) = conformance_frames
    assert validator.bundle.version == codex.version  # the server named its own version
    assert [p.headline for p in validator.problems] == []
    assert validator.frames == len(transcript)
    assert {
        ("out", "request", "initialize"),
        ("in", "response", "initialize"),
        ("out", "notification", "initialized"),
        ("out", "request", "thread/start"),
        ("in", "response", "thread/start"),
        ("in", "notification", "thread/started"),
    } <= set(validator.seen)

    stable = SchemaBundle.load(codex.version, "stable")
    sent = {(p.kind, p.method, p.path) for p in validate_transcript(transcript, stable, allow_undeclared=())}
    methods = {m for _, _, m in validator.seen}
    catalog = {(k.kind, k.method, k.path) for k in known_undeclared(codex.version)["stable"] if k.method in methods}
    assert sorted(sent) == sorted(catalog), f"codex {codex.version}: sent but not declared by its stable schema"
    assert [p.headline for p in validate_transcript(transcript, stable)] == []
