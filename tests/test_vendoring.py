"""Vendoring: the package copied as ``somewhere/_vendor/cm/`` imports and works.

The copy runs in a fresh interpreter started with ``-S`` (no site-packages at
all, so nothing but the standard library is available) and with only
``somewhere`` on ``PYTHONPATH``, from a working directory where the original
package is not importable either.  It imports every module, does one pure
operation, and drives a tiny fake app-server through the vendored client.

The conformance plugin cannot tap a client in another process, so the child
prints the frames it exchanged and this test replays them through every tap
registered with ``observe_clients`` (the plugin's validator among them).
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

import codexmini
from codexmini import _client as client_mod
from conformance.versions import live_codex

PACKAGE_DIR = Path(codexmini.__file__).resolve().parent


def _module_name(path: Path) -> str:
    """``_wire`` for ``codexmini/_wire.py``, ``_generated`` for ``codexmini/_generated/__init__.py``."""
    parts = path.relative_to(PACKAGE_DIR).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


FAKE_APP_SERVER = """#!{python}
import json, sys

for line in sys.stdin:
    frame = json.loads(line)
    method = frame.get("method")
    if method == "initialize":
        result = {{"userAgent": "fake/0.149.1", "codexHome": {home!r}, "platformFamily": "unix", "platformOs": "linux"}}
    elif method == "thread/loaded/list":
        result = {{"data": [], "nextCursor": None}}
    else:
        continue
    sys.stdout.write(json.dumps({{"id": frame["id"], "result": result}}) + "\\n")
    sys.stdout.flush()
"""

CHILD = textwrap.dedent(
    """
    import asyncio, importlib, json, os, pkgutil, sys

    report = {}
    try:
        import codexmini  # noqa: F401
    except ImportError:
        report["original_importable"] = False
    else:
        report["original_importable"] = codexmini.__file__

    import _vendor.cm as cm

    # Every module, those of the subpackages (the generated protocol's) too.
    found = pkgutil.walk_packages(cm.__path__, "_vendor.cm.")
    # (The opt-in pytest plugin is codexmini_pytest.py, outside the package: it needs pytest.)
    skipped = ("__main__",)
    names = sorted(m.name[len("_vendor.cm."):] for m in found if m.name.rsplit(".", 1)[-1] not in skipped)
    for name in names:
        importlib.import_module("_vendor.cm." + name)
    report["modules"] = names
    report["file"] = cm.__file__
    report["version"] = cm.__version__
    report["codex_version"] = cm.CODEX_VERSION
    report["foreign"] = sorted(m for m in sys.modules if m == "codexmini" or m.startswith("codexmini."))
    report["site_packages"] = [p for p in sys.path if "site-packages" in p]

    from _vendor.cm._wire import LineDecoder

    decoder = LineDecoder(1024)
    report["decoded"] = decoder.feed(b'{"method":"x",') + decoder.feed(b'"params":{}}\\n')

    from _vendor.cm import AppServerClient, Launch, Timeouts

    async def drive():
        frames = []
        launch = Launch(
            codex_bin=sys.argv[1], parent_env={"PATH": os.defpath}, cwd=os.getcwd(), timeouts=Timeouts(request=60)
        )
        client = await AppServerClient.start(launch, tap=lambda direction, frame: frames.append([direction, frame]))
        try:
            report["server_info"] = client.server_info
            report["listed"] = await client.request("thread/loaded/list", {})
        finally:
            await client.close()
        report["frames"] = frames

    asyncio.run(drive())
    print(json.dumps(report))
    """
)


def test_vendoring_copy_imports_and_works(tmp_path):
    somewhere = tmp_path / "somewhere"
    vendored = somewhere / "_vendor" / "cm"
    shutil.copytree(PACKAGE_DIR, vendored, ignore=shutil.ignore_patterns("__pycache__", "*.pyc"))
    (somewhere / "_vendor" / "__init__.py").write_text("")
    fake = tmp_path / "fake-codex"
    fake.write_text(FAKE_APP_SERVER.format(python=sys.executable, home=str(tmp_path / "codex-home")))
    fake.chmod(0o755)

    env = {
        "PATH": os.environ.get("PATH", os.defpath),
        "PYTHONPATH": str(somewhere),
        "PYTHONDONTWRITEBYTECODE": "1",
        "PYTHONWARNINGS": "error",
    }
    done = subprocess.run(
        [sys.executable, "-S", "-c", CHILD, str(fake)],
        env=env,
        cwd=str(tmp_path),
        capture_output=True,
        timeout=120,
        check=False,
    )
    assert done.returncode == 0, done.stderr.decode(errors="replace")
    report = json.loads(done.stdout)

    assert report["original_importable"] is False
    assert report["foreign"] == []
    assert report["site_packages"] == []
    assert report["file"] == str(vendored / "__init__.py")
    expected_modules = sorted(
        name
        for name in map(_module_name, PACKAGE_DIR.rglob("*.py"))
        if name and name.rsplit(".", 1)[-1] not in ("__main__",)
    )
    assert {"protocol", "_generated", "_generated.protocol", "_generated.protocol_types"} <= set(expected_modules)
    assert report["modules"] == expected_modules
    assert report["version"] == codexmini.__version__
    assert report["codex_version"] == codexmini.CODEX_VERSION
    assert report["decoded"] == [{"method": "x", "params": {}}]
    assert report["server_info"]["userAgent"] == "fake/0.149.1"
    assert report["listed"] == {"data": [], "nextCursor": None}

    frames = report["frames"]
    assert [(d, f.get("method")) for d, f in frames] == [
        ("out", "initialize"),
        ("in", None),
        ("out", "initialized"),
        ("out", "thread/loaded/list"),
        ("in", None),
    ]
    assert frames[0][1]["params"]["clientInfo"] == {"name": "codexmini", "version": codexmini.__version__}
    # Hold the vendored client's traffic to the same schema as everyone else's.
    for factory in list(client_mod._observers):
        tap = factory()
        if tap is not None:
            for direction, frame in frames:
                tap(direction, frame)


@pytest.mark.live
def test_vendoring_copy_runs_the_smoke_with_every_frame_validated(tmp_path):
    # The restricted environment: the package copied as `cm`, no repository,
    # no site-packages (so no jsonschema), only the standard library; the
    # smoke must still validate every frame, with its own validator.
    codex = live_codex()
    if isinstance(codex, str):
        pytest.skip(codex)
    shutil.copytree(PACKAGE_DIR, tmp_path / "cm", ignore=shutil.ignore_patterns("__pycache__", "*.pyc"))
    env = {
        "PATH": os.environ.get("PATH", os.defpath),
        "HOME": str(tmp_path),
        "NO_COLOR": "1",
        "PYTHONDONTWRITEBYTECODE": "1",
        "CODEXMINI_CODEX_BIN": codex.path,
    }
    done = subprocess.run(
        [sys.executable, "-S", "-m", "cm", "smoke"],
        env=env,
        cwd=str(tmp_path),
        capture_output=True,
        text=True,
        timeout=240,
        check=False,
    )
    assert done.returncode == 0, done.stdout + done.stderr
    summaries = [line for line in done.stdout.splitlines() if line.startswith("steps ")]
    assert len(summaries) == 3  # over stdio, ws and unix
    for summary in summaries:
        seen = int(summary.split("frames seen ")[1].split()[0])
        validated = int(summary.split("frames validated ")[1].split()[0])
        assert seen == validated > 50, summary
        assert f"(strict, codex {codex.version}'s own schema)" in summary
    assert "FAIL" not in done.stdout and done.stdout.count("smoke passed over ") == 3
