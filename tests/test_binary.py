"""Locating the codex binary, over fake npm install trees in ``tmp_path``.

``find_codex`` also looks for ``.codex/`` next to the package, and next to the
real package (``/work/main/.codex``) there is a real install.  The
``package_home`` fixture therefore points ``binary.__file__`` into
``tmp_path``; ``_local_roots`` reads that global at call time, so the real
"next to the package" code path still runs, only against a directory the test
controls.
"""

from __future__ import annotations

import os
import stat
import warnings
from pathlib import Path

import pytest

from codexmini import CODEX_VERSION, OLDEST_CODEX_VERSION
from codexmini import _binary as binary
from codexmini._binary import (
    ENV_VAR,
    INSTALL_HINT,
    CodexBinary,
    CodexVersionWarning,
    check_version,
    codex_version,
    find_codex,
    native_in_npm_root,
    parse_version,
)
from codexmini._errors import BinaryNotFound

PLATFORM_PACKAGE = "@openai/codex-linux-x64"
TRIPLE = "x86_64-unknown-linux-musl"
NATIVE = f"node_modules/{PLATFORM_PACKAGE}/vendor/{TRIPLE}/bin/codex"

FAKE_CODEX = f"""#!/bin/sh
if [ "$1" = "--version" ]; then
  echo "codex-cli {CODEX_VERSION}"
  exit 0
fi
echo "fake codex: $*" >&2
exit 2
"""


def executable(path: Path, text: str = FAKE_CODEX) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text)
    path.chmod(path.stat().st_mode | stat.S_IXUSR | stat.S_IXGRP | stat.S_IXOTH)
    return path


def npm_install(prefix: Path, native: bool = True, launcher: bool = True) -> Path:
    """Lay out ``prefix/node_modules`` like ``npm install --prefix prefix @openai/codex``.

    The launcher is what npm makes it: ``node_modules/.bin/codex`` a symlink to
    ``../@openai/codex/bin/codex.js``.
    """
    if native:
        executable(prefix / NATIVE)
    if launcher:
        js = executable(prefix / "node_modules/@openai/codex/bin/codex.js")
        link = prefix / "node_modules/.bin/codex"
        link.parent.mkdir(parents=True, exist_ok=True)
        link.symlink_to(os.path.relpath(js, link.parent))
    return prefix


@pytest.fixture
def package_home(tmp_path, monkeypatch) -> Path:
    """Where ``find_codex`` believes the package lives: ``<it>/codexmini/_binary.py``."""
    home = tmp_path / "site"
    (home / "codexmini").mkdir(parents=True)
    monkeypatch.setattr(binary, "__file__", str(home / "codexmini" / "binary.py"))
    return home


@pytest.fixture
def bare(tmp_path, package_home) -> Path:
    """A working directory with no ``.codex`` anywhere above it."""
    cwd = tmp_path / "bare" / "deep"
    cwd.mkdir(parents=True)
    for parent in [cwd, *cwd.parents]:
        if (parent / ".codex" / "node_modules").exists():  # a stray install above tmp_path
            pytest.skip(f"a codex install exists at {parent / '.codex'}")
    return cwd


@pytest.fixture
def empty_path(tmp_path) -> str:
    empty = tmp_path / "empty-bin"
    empty.mkdir()
    return str(empty)


# -- resolution order ------------------------------------------------------


def test_find_codex_explicit_beats_env_local_and_path(tmp_path, package_home):
    project = npm_install(tmp_path / "project" / ".codex").parent
    explicit = executable(tmp_path / "explicit" / "codex")
    from_env = executable(tmp_path / "env" / "codex")
    on_path = executable(tmp_path / "bin" / "codex")
    env = {ENV_VAR: str(from_env), "PATH": str(on_path.parent)}
    assert find_codex(str(explicit), env=env, search_from=str(project)) == CodexBinary(str(explicit), "explicit")


def test_find_codex_env_beats_local_and_path(tmp_path, package_home):
    project = npm_install(tmp_path / "project" / ".codex").parent
    from_env = executable(tmp_path / "env" / "codex")
    on_path = executable(tmp_path / "bin" / "codex")
    env = {ENV_VAR: str(from_env), "PATH": str(on_path.parent)}
    assert find_codex(env=env, search_from=str(project)) == CodexBinary(str(from_env), "env")


def test_find_codex_empty_env_var_is_ignored(tmp_path, package_home):
    project = npm_install(tmp_path / "project" / ".codex").parent
    found = find_codex(env={ENV_VAR: "", "PATH": ""}, search_from=str(project))
    assert found.source == "local"


def test_find_codex_local_beats_path(tmp_path, package_home):
    project = npm_install(tmp_path / "project" / ".codex").parent
    on_path = executable(tmp_path / "bin" / "codex")
    found = find_codex(env={"PATH": str(on_path.parent)}, search_from=str(project))
    assert found == CodexBinary(str(project / ".codex" / NATIVE), "local")


def test_find_codex_local_found_from_a_parent_directory(tmp_path, package_home):
    project = npm_install(tmp_path / "project" / ".codex").parent
    deep = project / "src" / "pkg" / "sub"
    deep.mkdir(parents=True)
    found = find_codex(env={"PATH": ""}, search_from=str(deep))
    assert found == CodexBinary(str(project / ".codex" / NATIVE), "local")


def test_find_codex_nearest_local_install_wins(tmp_path, package_home):
    outer = npm_install(tmp_path / "outer" / ".codex").parent
    inner = npm_install(outer / "inner" / ".codex").parent
    assert find_codex(env={"PATH": ""}, search_from=str(inner)).path == str(inner / ".codex" / NATIVE)


def test_find_codex_local_install_next_to_the_package(bare, package_home, empty_path):
    npm_install(package_home / ".codex")
    found = find_codex(env={"PATH": empty_path}, search_from=str(bare))
    assert found == CodexBinary(str(package_home / ".codex" / NATIVE), "local")


def test_find_codex_dot_codex_without_install_is_skipped(tmp_path, bare, package_home):
    # ~/.codex is codex's own CODEX_HOME: a .codex directory that is not an
    # npm install must not stop the search.
    (bare / ".codex").mkdir()
    on_path = executable(tmp_path / "bin" / "codex")
    assert find_codex(env={"PATH": str(on_path.parent)}, search_from=str(bare)) == CodexBinary(str(on_path), "path")


def test_find_codex_path_used_last(tmp_path, bare):
    on_path = executable(tmp_path / "bin" / "codex")
    found = find_codex(
        env={"PATH": os.pathsep.join([str(tmp_path / "nothing"), str(on_path.parent)])}, search_from=str(bare)
    )
    assert found == CodexBinary(str(on_path), "path")


def test_find_codex_defaults_to_process_env_and_cwd(tmp_path, package_home, monkeypatch):
    project = npm_install(tmp_path / "project" / ".codex").parent
    monkeypatch.delenv(ENV_VAR, raising=False)
    monkeypatch.chdir(project)
    assert find_codex() == CodexBinary(str(project / ".codex" / NATIVE), "local")
    from_env = executable(tmp_path / "env" / "codex")
    monkeypatch.setenv(ENV_VAR, str(from_env))
    assert find_codex() == CodexBinary(str(from_env), "env")


def test_find_codex_relative_explicit_path_is_made_absolute(tmp_path, package_home, monkeypatch):
    executable(tmp_path / "bin" / "codex")
    elsewhere = tmp_path / "workspace"
    elsewhere.mkdir()
    monkeypatch.chdir(tmp_path)
    found = find_codex(os.path.join("bin", "codex"), env={"PATH": ""}, search_from=str(elsewhere))
    assert found.path == str(tmp_path / "bin" / "codex")


# -- native binary over the Node launcher -----------------------------------


def test_native_in_npm_root_prefers_native_over_launcher(tmp_path):
    root = npm_install(tmp_path / ".codex")
    assert native_in_npm_root(str(root)) == str(root / NATIVE)


def test_native_in_npm_root_launcher_when_no_native(tmp_path, package_home):
    project = npm_install(tmp_path / "project" / ".codex", native=False).parent
    found = find_codex(env={"PATH": ""}, search_from=str(project))
    assert found == CodexBinary(str(project / ".codex" / "node_modules" / ".bin" / "codex"), "local")


def test_native_in_npm_root_skips_non_executable_native(tmp_path):
    root = npm_install(tmp_path / ".codex")
    (root / NATIVE).chmod(0o644)
    assert native_in_npm_root(str(root)) == str(root / "node_modules" / ".bin" / "codex")


@pytest.mark.parametrize(
    "native",
    [
        "node_modules/@openai/codex-linux-arm64/vendor/aarch64-unknown-linux-musl/codex/codex",
        "node_modules/@openai/codex/vendor/x86_64-unknown-linux-musl/codex/codex",
    ],
    ids=["platform-package-codex-dir", "bundled-vendor"],
)
def test_native_in_npm_root_older_layouts(tmp_path, native):
    executable(tmp_path / native)
    assert native_in_npm_root(str(tmp_path)) == str(tmp_path / native)


def test_native_in_npm_root_nothing(tmp_path):
    assert native_in_npm_root(str(tmp_path)) is None


@pytest.mark.parametrize("layout", ["hoisted", "nested"])
def test_find_codex_path_launcher_symlink_resolves_to_native(tmp_path, bare, layout):
    # `npm install -g @openai/codex`: prefix/bin/codex -> ../lib/node_modules/@openai/codex/bin/codex.js,
    # the platform package hoisted next to it or nested inside it.
    prefix = tmp_path / "npm-global"
    package = prefix / "lib" / "node_modules" / "@openai" / "codex"
    js = executable(package / "bin" / "codex.js")
    native_root = prefix / "lib" if layout == "hoisted" else package
    native = executable(native_root / NATIVE)
    link = prefix / "bin" / "codex"
    link.parent.mkdir(parents=True)
    link.symlink_to(os.path.relpath(js, link.parent))
    found = find_codex(env={"PATH": str(link.parent)}, search_from=str(bare))
    assert found == CodexBinary(str(native), "path")


def test_find_codex_path_launcher_without_native_stays_launcher(tmp_path, bare):
    # A project install's .bin on PATH, but the platform package is missing:
    # the only candidate is the launcher itself.
    root = npm_install(tmp_path / "elsewhere" / ".codex", native=False)
    bin_dir = root / "node_modules" / ".bin"
    assert find_codex(env={"PATH": str(bin_dir)}, search_from=str(bare)) == CodexBinary(str(bin_dir / "codex"), "path")


def test_find_codex_path_project_bin_dir_resolves_to_native(tmp_path, bare):
    root = npm_install(tmp_path / "elsewhere" / ".codex")
    bin_dir = root / "node_modules" / ".bin"
    assert find_codex(env={"PATH": str(bin_dir)}, search_from=str(bare)) == CodexBinary(str(root / NATIVE), "path")


# -- nothing usable ----------------------------------------------------------


def assert_install_hint(message: str) -> None:
    assert "make setup" in message
    assert ENV_VAR in message
    assert CODEX_VERSION in message
    assert INSTALL_HINT in message


def test_find_codex_non_executable_explicit_raises_with_hint(tmp_path, package_home):
    project = npm_install(tmp_path / "project" / ".codex").parent
    plain = tmp_path / "codex"
    plain.write_text(FAKE_CODEX)  # no x bit
    with pytest.raises(BinaryNotFound) as info:
        find_codex(str(plain), env={"PATH": ""}, search_from=str(project))
    assert str(plain) in str(info.value) and "(explicit)" in str(info.value)
    assert_install_hint(str(info.value))


@pytest.mark.parametrize("what", ["missing", "directory"])
def test_find_codex_bad_env_var_raises_instead_of_falling_back(tmp_path, package_home, what):
    # A set but wrong CODEXMINI_CODEX_BIN is a mistake to report, not a hint to ignore.
    project = npm_install(tmp_path / "project" / ".codex").parent
    bad = tmp_path / "no-such-codex"
    if what == "directory":
        bad.mkdir()
    with pytest.raises(BinaryNotFound) as info:
        find_codex(env={ENV_VAR: str(bad), "PATH": ""}, search_from=str(project))
    assert "(env)" in str(info.value)
    assert_install_hint(str(info.value))


def test_find_codex_nothing_anywhere_raises_with_hint(bare, empty_path):
    with pytest.raises(BinaryNotFound) as info:
        find_codex(env={"PATH": empty_path}, search_from=str(bare))
    assert str(info.value).startswith("codex not found")
    assert_install_hint(str(info.value))


def test_find_codex_no_path_variable_raises(bare):
    with pytest.raises(BinaryNotFound):
        find_codex(env={}, search_from=str(bare))


# -- versions ----------------------------------------------------------------


@pytest.mark.parametrize(
    "output, version",
    [
        ("codex-cli 0.149.1\n", "0.149.1"),
        ("codex-cli 0.149.1", "0.149.1"),
        ("codex-cli 0.150.0-alpha.3\n", "0.150.0-alpha.3"),
        ("\x1b[1mcodex-cli\x1b[0m 1.2.3", "1.2.3"),
        ("", None),
        ("codex-cli\n", None),
        ("version 1.2", None),
    ],
)
def test_parse_version(output, version):
    assert parse_version(output) == version


def test_codex_version_of_fake_binary(tmp_path):
    assert codex_version(str(executable(tmp_path / "codex"))) == CODEX_VERSION


def test_codex_version_missing_path_is_none(tmp_path):
    assert codex_version(str(tmp_path / "nope")) is None


def test_codex_version_silent_binary_is_none(tmp_path):
    assert codex_version(str(executable(tmp_path / "codex", "#!/bin/sh\nexit 0\n"))) is None


def test_codex_version_hanging_binary_times_out(tmp_path):
    # exec: the script *is* the sleeping process, so the timeout's kill ends it.
    hang = executable(tmp_path / "codex", "#!/bin/sh\nexec sleep 600\n")
    assert codex_version(str(hang), timeout=0.2) is None


def test_codex_version_child_gets_no_color(tmp_path):
    script = executable(tmp_path / "codex", '#!/bin/sh\necho "codex-cli 9.9.$NO_COLOR"\n')
    assert codex_version(str(script)) == "9.9.1"


@pytest.mark.parametrize(
    "lower, higher",
    [
        ("0.99.0", "0.149.1"),  # numeric, not lexicographic
        ("0.149.1", "0.149.10"),
        ("0.149.9", "0.150.0"),
        ("0.9.9", "1.0.0"),
        ("0.150.0-alpha.3", "0.150.0"),  # a pre-release comes before its release
        ("0.150.0-alpha.3", "0.150.0-alpha.10"),
        ("0.150.0-alpha", "0.150.0-alpha.1"),
        ("0.150.0-1", "0.150.0-alpha"),  # numeric identifiers before alphanumeric ones
        ("0.150.0-alpha", "0.150.0-beta"),
    ],
)
def test_version_key_orders_like_semver(lower, higher):
    assert binary.version_key(lower) < binary.version_key(higher)


def test_version_key_ignores_build_metadata_and_refuses_non_versions():
    assert binary.version_key("0.171.0+abc") == binary.version_key("0.171.0")
    for bad in ("", "0.171", "v0.171.0", "0.171.0.1", "0.171.x"):
        with pytest.raises(ValueError, match="not a codex version"):
            binary.version_key(bad)


@pytest.mark.parametrize(
    "found, supported",
    [
        ("0.149.1", True),
        ("0.160.2", True),
        ("0.171.0", True),
        ("0.149.0", False),
        ("0.99.9", False),  # below, although "0.99.9" > "0.149.1" as a string
        ("0.171.1", False),
        ("0.171.0-alpha.1", True),  # before 0.171.0, after 0.149.1
        ("0.149.1-alpha.1", False),  # before the oldest
        ("not-a-version", False),
        (None, False),
    ],
)
def test_in_supported_range_includes_both_ends(found, supported):
    assert binary.in_supported_range(found, "0.149.1", "0.171.0") is supported


def test_supported_range_reads_naturally():
    assert binary.supported_range("0.149.1", "0.171.0") == "0.149.1 to 0.171.0"
    assert binary.supported_range("0.171.0", "0.171.0") == "0.171.0"


def test_check_version_in_range_is_silent():
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert check_version(CODEX_VERSION) is True
        assert check_version(OLDEST_CODEX_VERSION) is True
        assert check_version("0.160.0", oldest="0.149.1", newest="0.171.0") is True


@pytest.mark.parametrize("found", ["0.148.9", "99.0.0", "garbage", None])
def test_check_version_outside_the_range_warns_naming_it(found):
    with pytest.warns(CodexVersionWarning) as record:
        assert check_version(found) is False
    message = str(record[0].message)
    assert (found or "of unknown version") in message
    assert f"supports codex {binary.supported_range()}" in message
    assert OLDEST_CODEX_VERSION in message and CODEX_VERSION in message
    assert record[0].filename == __file__  # stacklevel points at the caller


def test_check_version_names_the_range_it_was_given():
    with pytest.warns(CodexVersionWarning, match=r"supports codex 1\.0\.0 to 1\.2\.0 \(pinned 1\.2\.0\)"):
        assert check_version("1.3.0", oldest="1.0.0", newest="1.2.0") is False


def test_binary_all_names_exist():
    for name in binary.__all__:
        assert hasattr(binary, name), name


# -- the real install ----------------------------------------------------------

PROJECT = Path(__file__).resolve().parent.parent


@pytest.mark.live
def test_find_codex_real_local_install_is_native():
    if not (PROJECT / ".codex" / "node_modules").is_dir():
        pytest.skip("no project-local codex install (run `make setup`)")
    found = find_codex(env={"PATH": ""}, search_from=str(PROJECT))
    assert found.source == "local"
    assert "/vendor/" in found.path and ".bin" not in found.path, found.path
    assert os.path.realpath(found.path).startswith(str(PROJECT / ".codex"))
    assert codex_version(found.path) == CODEX_VERSION


# -- for a user without the repository ----------------------------------------


def test_install_hint_for_a_pip_user_is_npm_never_make(tmp_path):
    hint = binary.install_hint(checkout=False)
    assert f"`npm install -g @openai/codex@{CODEX_VERSION}`" in hint and "codexmini install-codex" in hint
    assert ENV_VAR in hint and "make setup" not in hint
    assert binary.install_hint(checkout=True).startswith("install the pinned codex with `make setup` in the repository")
    assert binary.in_checkout(os.path.dirname(os.path.dirname(binary.__file__))) is True
    assert binary.in_checkout(str(tmp_path)) is False  # a pip-installed or vendored copy


def test_user_cache_is_under_xdg_cache_home_else_home():
    assert binary.user_cache({"XDG_CACHE_HOME": "/c", "HOME": "/h"}) == f"/c/codexmini/codex/{CODEX_VERSION}"
    assert binary.user_cache({"HOME": "/h"}, "0.1.0") == "/h/.cache/codexmini/codex/0.1.0"
    assert binary.user_cache({}) is None


def test_find_codex_takes_the_user_cache_after_a_local_install_and_before_path(bare, tmp_path, empty_path):
    cache = tmp_path / "xdg"
    env = {"XDG_CACHE_HOME": str(cache), "PATH": empty_path}
    with pytest.raises(BinaryNotFound):
        find_codex(env=env, search_from=str(bare))
    npm_install(Path(binary.user_cache(env) or ""))
    assert find_codex(env=env, search_from=str(bare)) == CodexBinary(
        str(Path(binary.user_cache(env) or "") / NATIVE), "cache"
    )
    local = npm_install(bare / ".codex")
    assert find_codex(env=env, search_from=str(bare)).path == str(local / NATIVE)


def test_warn_if_unsupported_warns_once_per_version(monkeypatch):
    monkeypatch.setattr(binary, "_warned", set())
    with pytest.warns(CodexVersionWarning) as record:
        binary.warn_if_unsupported("0.100.0")
        binary.warn_if_unsupported("0.100.0")
        binary.warn_if_unsupported("9.0.0")
    assert ["0.100.0" in str(w.message) for w in record] == [True, False]
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        binary.warn_if_unsupported(CODEX_VERSION)
        binary.warn_if_unsupported(None)  # a server that names no version


def test_server_version_is_read_from_the_initialize_user_agent():
    agent = "codex_cli_rs/0.171.0 (Debian 12.0.0; x86_64) xterm (codexmini; 0.3.0)"
    assert binary.server_version({"userAgent": agent}) == "0.171.0"
    assert binary.server_version({"userAgent": "something else"}) is None
    assert binary.server_version({}) is None
