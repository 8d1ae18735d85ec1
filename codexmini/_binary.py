"""Find the codex binary and check its version.

Supported versions are :data:`~codexmini.OLDEST_CODEX_VERSION` to the pin
:data:`~codexmini.CODEX_VERSION`, both included; :func:`check_version` says
whether a version is in that range (compared numerically, ``0.99.0`` before
``0.149.1``, a pre-release before its release) and warns
(:class:`CodexVersionWarning`) when it is not.  A binary outside the range
still works; its frames may just not be what codexmini was tested against.

Resolution order: ``$CODEXMINI_CODEX_BIN``, then a project-local npm install
(``.codex/`` in the launching process's working directory or one of its
parents, or next to this package), then the user cache ``codexmini
install-codex`` fills (:func:`user_cache`), then ``codex`` on ``PATH``.  Inside an npm install the
*native* binary (``node_modules/@openai/codex-<platform>/vendor/<triple>/bin/
codex``) is preferred over the ``node_modules/.bin/codex`` Node launcher: the
launcher cannot forward SIGKILL, so killing it orphans the real app-server.
"""

from __future__ import annotations

import os
import re
import warnings
from typing import TYPE_CHECKING, Any, Iterator, Mapping, Optional, Set, Tuple

from ._environment import child_environment
from ._errors import BinaryNotFound
from ._version import CODEX_VERSION, OLDEST_CODEX_VERSION

if TYPE_CHECKING:  # the checker sees the standard library; at run time, ._dataclasses (nothing compiled)
    from dataclasses import dataclass
else:
    from ._dataclasses import dataclass

ENV_VAR = "CODEXMINI_CODEX_BIN"
LOCAL_DIR = ".codex"

#: Where the npm package keeps the native binary, newest layout first.
_NATIVE_GLOBS = (
    "node_modules/@openai/codex-*/vendor/*/bin/codex",
    "node_modules/@openai/codex-*/vendor/*/codex/codex",
    "node_modules/@openai/codex/vendor/*/codex/codex",
)

#: The repository this package sits in, if it is a checkout (a vendored or
#: pip-installed copy has no Makefile beside it).
_CHECKOUT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def in_checkout(root: str = _CHECKOUT) -> bool:
    """Whether ``root`` is codexmini's own repository (where ``make setup`` works)."""
    return all(os.path.isfile(os.path.join(root, name)) for name in ("Makefile", "pyproject.toml", ".ci/run"))


def install_hint(checkout: bool) -> str:
    """How to get the pinned codex: npm for anyone, ``make setup`` in a checkout."""
    ways = [
        f"`npm install -g @openai/codex@{CODEX_VERSION}` (or `codexmini install-codex`, into a user cache)",
        f"set {ENV_VAR} to a codex binary",
    ]
    if checkout:
        ways.insert(
            0,
            f"`make setup` in the repository (it runs `npm install --prefix {LOCAL_DIR} @openai/codex@{CODEX_VERSION}`)",
        )
    return "install the pinned codex with " + ", or ".join(ways)


INSTALL_HINT = install_hint(in_checkout())


def user_cache(env: Mapping[str, str], version: str = CODEX_VERSION) -> Optional[str]:
    """Where ``codexmini install-codex`` puts codex ``version`` for this user:
    ``$XDG_CACHE_HOME/codexmini/codex/<version>`` (else ``~/.cache/…``);
    ``None`` when ``env`` names neither."""
    base = env.get("XDG_CACHE_HOME") or (os.path.join(env["HOME"], ".cache") if env.get("HOME") else "")
    return os.path.join(base, "codexmini", "codex", version) if base else None


class CodexVersionWarning(UserWarning):
    """The codex binary found is outside the supported range of versions."""


@dataclass(frozen=True)
class CodexBinary:
    path: str
    source: str  # "explicit", "env", "local", "cache" or "path"


def native_in_npm_root(root: str) -> Optional[str]:
    """The native codex inside an npm install root, else its Node launcher."""
    import glob

    for pattern in _NATIVE_GLOBS:
        for hit in sorted(glob.glob(os.path.join(root, pattern))):
            if os.access(hit, os.X_OK):
                return hit
    launcher = os.path.join(root, "node_modules", ".bin", "codex")
    return launcher if os.access(launcher, os.X_OK) else None


def _native_behind_launcher(path: str) -> str:
    """``codex`` on PATH is often the npm launcher; find the native binary it runs."""
    real = os.path.realpath(path)
    if not real.endswith(".js"):
        return path
    package = os.path.dirname(os.path.dirname(real))  # …/@openai/codex
    for root in (package, os.path.dirname(os.path.dirname(os.path.dirname(package)))):
        found = native_in_npm_root(root)
        if found and not found.endswith(os.path.join(".bin", "codex")):
            return found
    return path


def _local_roots(start: str) -> Iterator[str]:
    here = os.path.abspath(start)
    while True:
        yield os.path.join(here, LOCAL_DIR)
        parent = os.path.dirname(here)
        if parent == here:
            break
        here = parent
    yield os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), LOCAL_DIR)


def find_codex(
    explicit: Optional[str] = None,
    env: Optional[Mapping[str, str]] = None,
    search_from: Optional[str] = None,
) -> CodexBinary:
    """Locate codex, or raise :class:`BinaryNotFound` saying how to install it.

    ``env`` is where ``$CODEXMINI_CODEX_BIN`` and ``PATH`` are read (default
    this process's); ``search_from`` is where the search for a ``.codex/``
    install starts (default this process's working directory)."""
    env = os.environ if env is None else env
    for given, source in ((explicit, "explicit"), (env.get(ENV_VAR), "env")):
        if given:
            if os.path.isfile(given) and os.access(given, os.X_OK):
                # Absolute: the client may spawn it from another working directory.
                return CodexBinary(os.path.abspath(given), source)
            raise BinaryNotFound(f"codex binary {given!r} ({source}) is not an executable file; {INSTALL_HINT}")
    for root in _local_roots(search_from or os.getcwd()):
        found = native_in_npm_root(root) if os.path.isdir(root) else None
        if found:
            return CodexBinary(found, "local")
    cache = user_cache(env)
    found = native_in_npm_root(cache) if cache and os.path.isdir(cache) else None
    if found:
        return CodexBinary(found, "cache")
    import shutil  # here, not with the package (as glob and subprocess): only a start looks for the binary

    on_path = shutil.which("codex", path=env.get("PATH", ""))
    if on_path:
        return CodexBinary(_native_behind_launcher(on_path), "path")
    raise BinaryNotFound(f"codex not found; {INSTALL_HINT}")


_VERSION_RE = r"(\d+\.\d+\.\d+(?:[-+.][0-9A-Za-z.]+)?)"  # (compiled at first use: re caches it)


def parse_version(output: str) -> Optional[str]:
    """``codex-cli 0.149.1`` → ``0.149.1``."""
    match = re.search(_VERSION_RE, output)
    return match.group(1) if match else None


def codex_version(path: str, timeout: float = 30.0) -> Optional[str]:
    """Ask the binary for its version (``codex --version``); ``None`` if it cannot say."""
    import subprocess

    try:
        done = subprocess.run(
            [path, "--version"],
            capture_output=True,
            timeout=timeout,
            env=child_environment(os.environ),
            check=False,
        )
    except (OSError, subprocess.TimeoutExpired):
        return None
    return parse_version(done.stdout.decode("utf-8", "replace"))


_KEY_RE = r"^(\d+)\.(\d+)\.(\d+)(?:-([0-9A-Za-z.-]+))?(?:\+[0-9A-Za-z.-]+)?$"


def version_key(version: str) -> Tuple[int, int, int, Tuple[Tuple[int, int, str], ...]]:
    """A sort key for ``MAJOR.MINOR.PATCH[-PRERELEASE][+BUILD]``, compared as
    semver does: numerically, a pre-release before its release (``0.150.0-alpha.3``
    < ``0.150.0``), numeric pre-release parts before alphanumeric ones; the
    build part is ignored.  Raises ``ValueError`` for anything else."""
    match = re.match(_KEY_RE, version)
    if match is None:
        raise ValueError(f"not a codex version: {version!r}")
    major, minor, patch, pre = match.groups()
    # A release sorts after every pre-release of it: (1, …) > (0, …).
    parts = tuple((0, int(p), "") if p.isdigit() else (1, 0, p) for p in pre.split(".")) if pre else ((2, 0, ""),)
    return int(major), int(minor), int(patch), parts


def in_supported_range(found: Optional[str], oldest: str = OLDEST_CODEX_VERSION, newest: str = CODEX_VERSION) -> bool:
    """True when ``found`` is a version from ``oldest`` to ``newest``, both included."""
    try:
        return found is not None and version_key(oldest) <= version_key(found) <= version_key(newest)
    except ValueError:
        return False


def supported_range(oldest: str = OLDEST_CODEX_VERSION, newest: str = CODEX_VERSION) -> str:
    """The range as people read it: ``0.149.1 to 0.171.0`` (or one version)."""
    return oldest if oldest == newest else f"{oldest} to {newest}"


def check_version(found: Optional[str], oldest: str = OLDEST_CODEX_VERSION, newest: str = CODEX_VERSION) -> bool:
    """True when ``found`` is in the supported range; otherwise warn
    (:class:`CodexVersionWarning`, naming the range) and return False."""
    if in_supported_range(found, oldest, newest):
        return True
    warnings.warn(
        f"codex {found or 'of unknown version'} found; codexmini supports codex {supported_range(oldest, newest)} "
        f"(pinned {newest}): frames may not match the recorded protocol",
        CodexVersionWarning,
        stacklevel=2,
    )
    return False


#: Versions already warned about in this process (each is said once).
_warned: Set[str] = set()


def warn_if_unsupported(found: Optional[str]) -> None:
    """:func:`check_version`, once per version and process; nothing for an unknown version."""
    if found is not None and found not in _warned and not in_supported_range(found):
        _warned.add(found)
        check_version(found)


def server_version(info: Mapping[str, Any]) -> Optional[str]:
    """The codex version an ``initialize`` answer names (``userAgent``:
    ``codex_cli_rs/0.171.0 (Debian …) …``), if it names one."""
    return parse_version(str(info.get("userAgent") or "").split(" ")[0])


__all__ = [
    "ENV_VAR",
    "INSTALL_HINT",
    "in_checkout",
    "install_hint",
    "user_cache",
    "CodexBinary",
    "CodexVersionWarning",
    "check_version",
    "codex_version",
    "find_codex",
    "in_supported_range",
    "native_in_npm_root",
    "parse_version",
    "server_version",
    "supported_range",
    "version_key",
    "warn_if_unsupported",
]
