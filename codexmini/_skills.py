"""AGENTS.md as skills, and the ``/name`` gesture that injects them.

Theory of operation
-------------------
codex has no skill directory; its instruction files are ``AGENTS.md``.  They
are exposed as one skill, ``agents-md``, with two candidates:

* **project** -- every non-empty ``AGENTS.md`` from the working directory up to
  the git root (the nearest ancestor holding a ``.git`` file or directory;
  never past it; without a git root only the working directory itself),
  nearest directory first, merged with a blank line between files;
* **user** -- ``$CODEX_HOME/AGENTS.md`` (default ``~/.codex/AGENTS.md``).

Candidates are listed best first, so the project skill wins the name clash.
Files are read when asked (:meth:`SkillProvider.list` / :meth:`get`), never
cached: an edit between steps is seen, a vanished file is skipped.  The
environment is a parameter (``codex_home``, ``home``): nothing here reads
``os.environ``.

The gesture side is pure.  :func:`invoked_names` finds ``/name`` in the text
the user typed; :func:`inject_skills` loads each named skill and appends one
``skill-invocation`` user message per hit, holding the escaped content.  The
injected messages are logged like any other, so the skill text reaches the
model through the log (what the model sees is what is logged).
"""

from __future__ import annotations

import logging
import os
import re
import string
from typing import TYPE_CHECKING, Any, Callable, Dict, Iterable, List, Optional, Tuple

if TYPE_CHECKING:  # the checker sees the standard library; at run time, ._dataclasses (nothing compiled)
    from dataclasses import dataclass
else:
    from ._dataclasses import dataclass

logger = logging.getLogger("codexmini.skills")

AGENTS_MD = "AGENTS.md"
SKILL_NAME = "agents-md"


@dataclass(frozen=True)
class Skill:
    name: str
    content: str
    source: str  # "project" | "user"
    paths: Tuple[str, ...]
    user_invocable: bool = True


# -- discovery --------------------------------------------------------------


def git_root(start: str) -> Optional[str]:
    """The nearest directory at or above ``start`` holding ``.git`` (a file in
    worktrees and submodules, a directory otherwise), or None."""
    here = start
    while True:
        if os.path.exists(os.path.join(here, ".git")):
            return here
        parent = os.path.dirname(here)
        if parent == here:
            return None
        here = parent


def project_dirs(cwd: str) -> List[str]:
    """The directories searched for project files, nearest first."""
    cwd = os.path.abspath(cwd)
    root = git_root(cwd)
    if root is None:
        return [cwd]
    dirs = [cwd]
    while dirs[-1] != root:
        dirs.append(os.path.dirname(dirs[-1]))
    return dirs


def _read(path: str) -> Optional[str]:
    """The file's text with trailing whitespace removed, or None when it is
    missing, unreadable or blank."""
    try:
        with open(path, encoding="utf-8", errors="replace") as f:
            text = f.read().rstrip()
    except OSError as exc:  # vanished, a directory, no permission
        logger.debug("skipping %s: %s", path, exc)
        return None
    return text or None


def _merge(source: str, paths: Iterable[str]) -> Optional[Skill]:
    found = [(p, t) for p, t in ((p, _read(p)) for p in paths) if t is not None]
    if not found:
        return None
    return Skill(
        SKILL_NAME,
        "\n\n".join(t for _, t in found),
        source,
        tuple(p for p, _ in found),
    )


class SkillProvider:
    """The ``agents-md`` candidates for one working directory."""

    def __init__(self, cwd: str, codex_home: Optional[str] = None, home: Optional[str] = None):
        self.cwd = os.path.abspath(cwd)
        if not codex_home:
            # The one place a default is resolved; pass ``home`` to avoid it.
            codex_home = os.path.join(home or os.path.expanduser("~"), ".codex")
        self.codex_home = codex_home

    def list(self) -> List[Skill]:
        """Candidates, best first: the project skill, then the user skill."""
        candidates = [
            _merge("project", (os.path.join(d, AGENTS_MD) for d in project_dirs(self.cwd))),
            _merge("user", [os.path.join(self.codex_home, AGENTS_MD)]),
        ]
        return [c for c in candidates if c is not None]

    def get(self, name: str) -> Optional[Skill]:
        """The best candidate called ``name``, read now; None if none is left."""
        return next((s for s in self.list() if s.name == name), None)


# -- the /name gesture ------------------------------------------------------

#: ``/`` at the start of the text or after whitespace, then a name.
_GESTURE = r"(?<!\S)/([A-Za-z0-9][A-Za-z0-9_.:-]*)"  # (compiled at first use: re caches it)
#: What may follow a name.  Not ``/`` or ``\``: ``/usr/bin`` is a path.
_ENDS = frozenset(string.punctuation) - {"/", "\\"}
#: Sentence punctuation the name pattern swallows: ``run /agents-md.``
_TRAILING = ".:-"


def _gestures(text: str) -> Iterable[str]:
    for m in re.finditer(_GESTURE, text):
        after = text[m.end() : m.end() + 1]
        if after == "" or after.isspace() or after in _ENDS:
            yield m.group(1).rstrip(_TRAILING)


def invoked_names(messages: Iterable[Dict[str, Any]]) -> List[str]:
    """The ``/name`` gestures in user-typed text blocks, first occurrence
    first, de-duplicated.  Skill-invocation messages and reasoning blocks never
    invoke anything (an injected skill mentioning ``/x`` must not chain)."""
    names: Dict[str, None] = {}  # an ordered set
    for message in messages:
        if (message.get("source") or {}).get("kind") != "user":
            continue
        for block in message.get("content") or ():
            if block.get("type") == "text":
                names.update(dict.fromkeys(_gestures(block.get("text", ""))))
    return list(names)


def render_skill_content(name: str, content: str) -> str:
    import html  # here, not with the package: html imports its table of entities

    return f'<skill_content name="{html.escape(name)}">\n{html.escape(content, quote=False)}\n</skill_content>'


def inject_skills(
    messages: List[Dict[str, Any]],
    load: Callable[[str], Optional[Skill]],
    is_cancelled: Callable[[], bool] = lambda: False,
    new_id: Callable[[], str] = lambda: os.urandom(16).hex(),
) -> List[Dict[str, Any]]:
    """``messages`` plus one skill-invocation message per invoked skill.

    A load that raises, an unknown name and a skill the user may not invoke
    are skipped (logged at debug).  If ``is_cancelled()`` turns true while
    loading, nothing is injected: the original messages come back unchanged.
    """
    injected = []
    for name in invoked_names(messages):
        try:
            skill = load(name)
        except Exception as exc:
            logger.debug("skill %r failed to load: %s", name, exc)
            skill = None
        if is_cancelled():
            return list(messages)
        if skill is None or not skill.user_invocable:
            logger.debug("skill %r skipped (unknown or not user-invocable)", name)
            continue
        injected.append(
            {
                "id": new_id(),
                "content": [{"type": "text", "text": render_skill_content(name, skill.content)}],
                "source": {"kind": "skill-invocation", "name": name},
            }
        )
    return list(messages) + injected


__all__ = [
    "AGENTS_MD",
    "SKILL_NAME",
    "Skill",
    "SkillProvider",
    "git_root",
    "inject_skills",
    "invoked_names",
    "project_dirs",
    "render_skill_content",
]
