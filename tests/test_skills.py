from __future__ import annotations

import logging
import os
from itertools import count

import pytest

from codexmini._skills import (
    Skill,
    SkillProvider,
    git_root,
    inject_skills,
    invoked_names,
    project_dirs,
    render_skill_content,
)


def write(path, text):
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text, encoding="utf-8")
    return str(path)


@pytest.fixture
def tree(tmp_path):
    """outer/AGENTS.md (above the repo), repo/.git, repo/AGENTS.md, repo/a/b (cwd)."""
    outer = tmp_path / "outer"
    repo = outer / "repo"
    cwd = repo / "a" / "b"
    cwd.mkdir(parents=True)
    (repo / ".git").mkdir()
    write(outer / "AGENTS.md", "OUTSIDE THE REPO")
    home = tmp_path / "home"
    home.mkdir()
    return {"outer": outer, "repo": repo, "cwd": cwd, "home": home}


def provider(tree, codex_home=None):
    return SkillProvider(str(tree["cwd"]), codex_home=codex_home, home=str(tree["home"]))


# -- discovery ------------------------------------------------------------------


def test_skills_project_files_nearest_first_up_to_git_root(tree):
    p_root = write(tree["repo"] / "AGENTS.md", "root rules\n\n")
    p_a = write(tree["repo"] / "a" / "AGENTS.md", "a rules")
    p_b = write(tree["cwd"] / "AGENTS.md", "b rules\n")
    [skill] = provider(tree).list()
    assert skill == Skill("agents-md", "b rules\n\na rules\n\nroot rules", "project", (p_b, p_a, p_root))


def test_skills_never_past_the_git_root(tree):
    # outer/AGENTS.md exists but lies above repo/.git.
    assert provider(tree).list() == []
    assert project_dirs(str(tree["cwd"])) == [str(tree["cwd"]), str(tree["repo"] / "a"), str(tree["repo"])]


def test_skills_git_root_as_a_file(tree):
    # A worktree or submodule: .git is a file.  a/ becomes the root.
    write(tree["repo"] / "a" / ".git", "gitdir: /elsewhere\n")
    write(tree["repo"] / "AGENTS.md", "above the worktree")
    p_a = write(tree["repo"] / "a" / "AGENTS.md", "worktree rules")
    assert git_root(str(tree["cwd"])) == str(tree["repo"] / "a")
    [skill] = provider(tree).list()
    assert (skill.content, skill.paths) == ("worktree rules", (p_a,))


def test_skills_cwd_is_the_git_root(tree):
    p = write(tree["repo"] / "AGENTS.md", "root")
    prov = SkillProvider(str(tree["repo"]), home=str(tree["home"]))
    assert [s.paths for s in prov.list()] == [(p,)]


def test_skills_without_git_root_only_cwd(tmp_path):
    if git_root(str(tmp_path)) is not None:
        pytest.skip("the temporary directory lies inside a git repository")
    cwd = tmp_path / "x"
    write(tmp_path / "AGENTS.md", "parent")
    p = write(cwd / "AGENTS.md", "here")
    prov = SkillProvider(str(cwd), home=str(tmp_path / "nohome"))
    assert [(s.content, s.paths) for s in prov.list()] == [("here", (p,))]
    assert project_dirs(str(cwd)) == [str(cwd)]


def test_skills_empty_files_skipped(tree):
    write(tree["cwd"] / "AGENTS.md", "  \n\t\n")
    p = write(tree["repo"] / "AGENTS.md", "real")
    (tree["repo"] / "a" / "AGENTS.md").mkdir()  # not a file: skipped too
    [skill] = provider(tree).list()
    assert (skill.content, skill.paths) == ("real", (p,))


def test_skills_user_file_default_codex_home(tree):
    p = write(tree["home"] / ".codex" / "AGENTS.md", "user rules\n")
    assert provider(tree).list() == [Skill("agents-md", "user rules", "user", (p,))]


def test_skills_user_file_codex_home_parameter(tree, tmp_path):
    write(tree["home"] / ".codex" / "AGENTS.md", "not this one")
    p = write(tmp_path / "ch" / "AGENTS.md", "from CODEX_HOME")
    [skill] = provider(tree, codex_home=str(tmp_path / "ch")).list()
    assert (skill.source, skill.content, skill.paths) == ("user", "from CODEX_HOME", (p,))


def test_skills_empty_codex_home_means_default(tree):
    write(tree["home"] / ".codex" / "AGENTS.md", "user")
    assert provider(tree, codex_home="").codex_home == str(tree["home"] / ".codex")


def test_skills_home_defaults_to_the_user_home(tmp_path):
    prov = SkillProvider(str(tmp_path))
    assert prov.codex_home == os.path.join(os.path.expanduser("~"), ".codex")


def test_skills_project_wins_name_clash(tree):
    write(tree["home"] / ".codex" / "AGENTS.md", "user")
    write(tree["repo"] / "AGENTS.md", "project")
    prov = provider(tree)
    assert [(s.name, s.source) for s in prov.list()] == [("agents-md", "project"), ("agents-md", "user")]
    assert prov.get("agents-md").content == "project"


def test_skills_get_reads_at_call_time_and_skips_vanished_files(tree):
    p_b = write(tree["cwd"] / "AGENTS.md", "b")
    p_root = write(tree["repo"] / "AGENTS.md", "root")
    p_user = write(tree["home"] / ".codex" / "AGENTS.md", "user")
    prov = provider(tree)
    assert prov.get("agents-md").paths == (p_b, p_root)
    os.remove(p_b)
    write(tree["repo"] / "AGENTS.md", "root v2")
    assert prov.get("agents-md") == Skill("agents-md", "root v2", "project", (p_root,))
    os.remove(p_root)
    assert prov.get("agents-md").source == "user"
    os.remove(p_user)
    assert prov.get("agents-md") is None
    assert prov.get("other") is None


# -- gestures -----------------------------------------------------------------------


def user(*texts, kind="user"):
    return {"id": "m", "content": [{"type": "text", "text": t} for t in texts], "source": {"kind": kind}}


@pytest.mark.parametrize(
    "text, names",
    [
        ("/agents-md", ["agents-md"]),
        ("please read\n/agents-md now", ["agents-md"]),
        ("first /b then /a and /b again", ["b", "a"]),
        ("see a/b and x/agents-md", []),
        ("cat /etc/hosts or /usr/bin", []),
        ("C:\\dir /win\\path", []),
        ("use /agents-md. Then /fix: /v1.2, (/x) /y!", ["agents-md", "fix", "v1.2", "y"]),
        ("/ alone, /-dash, /_under", []),
        ("/ns:skill_1 and\t/tab", ["ns:skill_1", "tab"]),
        ("/über /abcé", []),
        ("https://example.com/path", []),
    ],
)
def test_invoked_names_gestures(text, names):
    assert invoked_names([user(text)]) == names


def test_invoked_names_across_messages_and_blocks_in_order():
    msgs = [user("/one", "/two /one"), user("/three /two")]
    assert invoked_names(msgs) == ["one", "two", "three"]


def test_invoked_names_only_user_typed_text():
    msgs = [
        user("/skillx", kind="skill-invocation"),
        {
            "id": "r",
            "content": [
                {"type": "reasoning", "text": "/reason"},
                {"type": "image", "path": "/img"},
                {"type": "text", "text": "/typed"},
            ],
            "source": {"kind": "user"},
        },
        {"id": "n", "content": [{"type": "text", "text": "/nosource"}]},
        {"id": "e", "content": None, "source": {"kind": "user"}},
        {"id": "t", "content": [{"type": "text"}], "source": {"kind": "user"}},
    ]
    assert invoked_names(msgs) == ["typed"]


# -- rendering and injection --------------------------------------------------------------


def test_render_skill_content_escapes():
    assert render_skill_content("a\"<b>&'", 'x < y && z > "q"\n') == (
        '<skill_content name="a&quot;&lt;b&gt;&amp;&#x27;">\nx &lt; y &amp;&amp; z &gt; "q"\n\n</skill_content>'
    )


def ids():
    c = count(1)
    return lambda: f"id{next(c)}"


SKILLS = {
    "agents-md": Skill("agents-md", "Be <brief>.", "project", ("/r/AGENTS.md",)),
    "other": Skill("other", "Other.", "user", ("/u/AGENTS.md",)),
    "hidden": Skill("hidden", "no", "user", (), user_invocable=False),
}


def test_inject_skills_appends_after_the_batch_in_gesture_order():
    batch = [user("/other then /agents-md /other"), user("plain")]
    out = inject_skills(batch, SKILLS.get, new_id=ids())
    assert out[:2] == batch
    assert out[2:] == [
        {
            "id": "id1",
            "content": [{"type": "text", "text": '<skill_content name="other">\nOther.\n</skill_content>'}],
            "source": {"kind": "skill-invocation", "name": "other"},
        },
        {
            "id": "id2",
            "content": [
                {"type": "text", "text": '<skill_content name="agents-md">\nBe &lt;brief&gt;.\n</skill_content>'}
            ],
            "source": {"kind": "skill-invocation", "name": "agents-md"},
        },
    ]
    assert batch == [user("/other then /agents-md /other"), user("plain")]  # not mutated


def test_inject_skills_without_gestures_returns_the_batch():
    batch = [user("no gestures")]
    assert inject_skills(batch, SKILLS.get) == batch


def test_inject_skills_default_ids_are_unique_hex():
    out = inject_skills([user("/agents-md /other")], SKILLS.get)
    a, b = out[1]["id"], out[2]["id"]
    assert a != b and int(a, 16) >= 0 and len(a) == 32


def test_inject_skills_skips_unknown_failing_and_not_user_invocable(caplog):
    def load(name):
        if name == "boom":
            raise OSError("disk gone")
        return SKILLS.get(name)

    with caplog.at_level(logging.DEBUG, logger="codexmini.skills"):
        out = inject_skills([user("/boom /nope /hidden /other")], load, new_id=ids())
    assert [m["source"] for m in out[1:]] == [{"kind": "skill-invocation", "name": "other"}]
    assert out[1]["id"] == "id1"
    assert "boom" in caplog.text and "nope" in caplog.text and "hidden" in caplog.text


def test_inject_skills_cancelled_drops_the_whole_injection():
    state = {"loads": 0}

    def load(name):
        state["loads"] += 1
        return SKILLS.get(name)

    batch = [user("/agents-md /other")]
    out = inject_skills(batch, load, is_cancelled=lambda: state["loads"] >= 2, new_id=ids())
    assert out == batch
    assert state["loads"] == 2


def test_inject_skills_cancelled_before_first_hit():
    batch = [user("/agents-md")]
    assert inject_skills(batch, SKILLS.get, is_cancelled=lambda: True) == batch


def test_inject_skills_with_provider(tree):
    write(tree["repo"] / "AGENTS.md", "Use tabs & <spaces>.")
    out = inject_skills([user("/agents-md")], provider(tree).get, new_id=ids())
    assert out[1]["content"][0]["text"] == (
        '<skill_content name="agents-md">\nUse tabs &amp; &lt;spaces&gt;.\n</skill_content>'
    )
