"""docs/api.md, the API reference, is what tools/gen_apiref.py writes from the docstrings.

The reference is generated (``make apiref``) and committed; the first test
fails when it is stale and says the command to run.  It runs on every Python
of ``make test-matrix``, so it also proves the output does not depend on the
interpreter.  The rest test the generator's parts on made-up input: the
grouping read from ``_EXPORTS``' comments, signatures as written, the reST it
turns into Markdown, the field bullets of a dataclass's docstring.
"""

from __future__ import annotations

import ast
import os
import re
from typing import List

import pytest

import codexmini
import codexmini.sync
import codexmini.testing
from tools import gen_apiref


@pytest.fixture(scope="module")
def rendered() -> str:
    return gen_apiref.render()


def test_apiref_docs_api_md_is_current(rendered: str) -> None:
    with open(gen_apiref.OUT, encoding="utf-8") as fh:
        current = fh.read()
    assert current == rendered, "docs/api.md is stale: run `make apiref` (python tools/gen_apiref.py)"


def test_apiref_documents_every_public_name(rendered: str) -> None:
    anchors = set(re.findall(r'<a id="([^"]+)"></a>', rendered))
    wanted = [
        *codexmini.__all__,
        *(f"sync.{n}" for n in codexmini.sync.__all__),
        *(f"testing.{n}" for n in codexmini.testing.__all__),
    ]
    assert [name for name in wanted if name not in anchors] == []
    # every link of the reference leads to one of its anchors
    targets = set(re.findall(r"\]\(#([^)]+)\)", rendered))
    assert targets and targets <= anchors, sorted(targets - anchors)
    assert "Thread.start" in anchors and "Launch" in targets  # members have anchors; docstrings link


def test_apiref_shows_no_object_representation(rendered: str) -> None:
    # What would differ between interpreters or runs: reprs with addresses, evaluated annotations.
    assert not re.search(r" at 0x[0-9a-f]+|<function |<class |typing\.|ForwardRef", rendered)


def test_apiref_check_says_the_command_and_writing_makes_it_current(tmp_path, monkeypatch, capsys) -> None:
    out = tmp_path / "api.md"
    monkeypatch.setattr(gen_apiref, "OUT", str(out))
    assert gen_apiref.main(["--check"]) == 1  # no file yet
    out.write_text("# stale\n", encoding="utf-8")
    assert gen_apiref.main(["--check"]) == 1
    assert "run `make apiref`" in capsys.readouterr().err
    assert out.read_text(encoding="utf-8") == "# stale\n"  # --check writes nothing
    assert gen_apiref.main([]) == 0 and "wrote docs/api.md" in capsys.readouterr().out
    assert gen_apiref.main(["--check"]) == 0
    assert out.read_text(encoding="utf-8") == gen_apiref.render()


def test_apiref_missing_lists_what_has_no_docstring(capsys) -> None:
    writer = gen_apiref.build()
    assert gen_apiref.main(["--missing"]) == 0
    assert capsys.readouterr().out.splitlines() == writer.missing
    # every public class has a docstring (tests/test_public_api.py): none is listed
    assert not [m for m in writer.missing if m in codexmini.__all__ and isinstance(getattr(codexmini, m), type)]


# -- the parts, on made-up input ----------------------------------------------------------


def test_apiref_groups_are_the_comments_of_exports() -> None:
    source = (
        "_EXPORTS: Dict[str, str] = {\n"
        "    # one call\n"
        '    "run": "_run",\n'
        "    # approvals: what codex asks (events(), not a turn)\n"
        '    "Reply": "_permission",\n'
        '    "ApprovalRequest": "_permission",\n'
        "}\n"
    )
    assert gen_apiref.export_groups(source) == [
        ("One call", "", ["run"]),
        ("Approvals", "What codex asks.", ["Reply", "ApprovalRequest"]),
    ]
    with open(gen_apiref.INIT, encoding="utf-8") as fh:
        groups = gen_apiref.export_groups(fh.read())
    assert sorted(n for _, _, names in groups for n in names) == sorted(codexmini._EXPORTS)


def test_apiref_annotations_are_normalised_source_text() -> None:
    assert gen_apiref.annotation('Optional["Turn"]') == "Optional[Turn]"
    assert gen_apiref.annotation("'_threads.Thread'") == "codexmini.Thread"  # public under that name
    assert gen_apiref.annotation("_rpc.Outgoing") == "Outgoing"
    assert gen_apiref.annotation("Callable[\n    [str],\n    None,\n]") == "Callable[[str], None]"
    assert gen_apiref.annotation("Optional[Literal['a', \"b\"]]") == "Optional[Literal['a', \"b\"]]"
    assert gen_apiref.annotation('Dict["K", \'List["V"]\']') == "Dict[K, List[V]]"
    assert gen_apiref._one_line('(\n    "a",\n)') == '("a")'  # what a formatter split...
    assert gen_apiref._one_line('("a",)') == '("a",)'  # ...but a 1-tuple stays one


def _def(source: str) -> "gen_apiref.Function":
    node = ast.parse(source).body[0]
    assert isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef))
    return node


def test_apiref_parameters_are_as_written() -> None:
    source = 'def f(self, a, /, b: "int" = 1, *args: str, c: Optional[X] = None, **kw: Any) -> "Y": ...\n'
    parts, returns = gen_apiref.parameters(source, _def(source), drop_first=True)
    assert parts == ["a", "/", "b: int = 1", "*args: str", "c: Optional[X] = None", "**kw: Any"]
    assert returns == "Y"
    source = "async def g(x=time.time, *, y: float = 2.0): ...\n"
    parts, returns = gen_apiref.parameters(source, _def(source), drop_first=False)
    assert (parts, returns) == (["x=time.time", "*", "y: float = 2.0"], None)


def test_apiref_a_long_signature_gets_one_parameter_a_line() -> None:
    assert gen_apiref.call("f", ["a: int", "b: str"], "None", "def ") == "def f(a: int, b: str) -> None"
    long = [f"parameter_{i}: Optional[str] = None" for i in range(4)]
    text = gen_apiref.call("f", ["*", *long], "int")
    assert text.splitlines() == ["f(", "    *,", *(f"    {p}," for p in long), ") -> int"]
    assert gen_apiref.wrap_alias("A", "Union[int, str]") == "A = Union[int, str]"
    wrapped = gen_apiref.wrap_alias("A", "Union[" + ", ".join(f"Name{i}[int, str]" for i in range(9)) + "]")
    assert wrapped.splitlines()[:2] == ["A = Union[", "    Name0[int, str],"] and wrapped.endswith("\n]")


def _links(*anchors: str) -> "gen_apiref.Links":
    links = gen_apiref.Links()
    for anchor in anchors:
        links.add(anchor)
    links.inside["Thread.id"] = "Thread"
    return links


def test_apiref_roles_become_links_to_what_is_documented() -> None:
    links = _links("Launch", "Thread", "Thread.start", "sync.Turn", "sync.Turn.interrupt", "testing.ScriptedModel")
    md = gen_apiref.inline
    assert md(":class:`~codexmini.Launch`", links) == "[`Launch`](#Launch)"
    assert md(":class:`codexmini.Launch`", links) == "[`codexmini.Launch`](#Launch)"
    assert md(":meth:`start`", links, "", "Thread") == "[`start()`](#Thread.start)"
    assert md(":meth:`Thread.start\n<codexmini.Thread.start>`", links) == "[`Thread.start`](#Thread.start)"
    assert md(":meth:`Thread.start`", links) == "[`Thread.start()`](#Thread.start)"
    assert md(":attr:`Thread.id`", links) == "[`Thread.id`](#Thread)"  # an attribute: its class
    assert md(":meth:`interrupt`", links, "sync.", "Turn") == "[`interrupt()`](#sync.Turn.interrupt)"
    assert md(":class:`Turn`", links, "sync.", "") == "[`Turn`](#sync.Turn)"
    assert md(":class:`~codexmini.testing.scripted_model.ScriptedModel`", links) == (
        "[`ScriptedModel`](#testing.ScriptedModel)"
    )
    assert md(":func:`._binary.find_codex`", links) == "`_binary.find_codex()`"  # private: no link
    assert md("``a `b` c``, ``x``", links) == "`` a `b` c ``, `x`"
    assert md("(``0``: off) waits ``d/2 +\nd`` s", links) == "(`0`: off) waits `d/2 + d` s"
    assert md("fixtures/<version>/ and a < b", links) == "fixtures/&lt;version>/ and a < b"


def test_apiref_literal_blocks_are_fenced() -> None:
    doc = "Use it so::\n\n    with x:\n        y()\n\nThen more.\n\n::\n\n    $ make apiref\n\nEnd ::\n\n    z = 1"
    assert gen_apiref.markdown(doc, _links()).split("\n\n") == [
        "Use it so:",
        "```python\nwith x:\n    y()\n```",
        "Then more.",
        "```sh\n$ make apiref\n```",
        "End",
        "```python\nz = 1\n```",
    ]
    with pytest.raises(SystemExit, match="clashes"):
        _links("Run", "run")


def test_apiref_field_bullets_are_taken_out_for_the_fields_list() -> None:
    doc = "An event.\n\n* ``item_id``: the item,\n  on two lines.\n* ``delta``: the text.\n* ``other``: not a field.\n\nMore."
    rest, docs = gen_apiref.field_bullets(doc, {"item_id", "delta"})
    assert docs == {"item_id": "the item, on two lines.", "delta": "the text."}
    assert rest == "An event.\n\n{{fields}}\n* ``other``: not a field.\n\nMore."


def test_apiref_a_sync_member_without_docstring_points_at_its_async_twin() -> None:
    writer = gen_apiref.Writer(_links("Agent", "Agent.steer", "AppServerClient", "AppServerClient.pid"))
    writer.prose("", "sync.", "Agent", "sync.Agent.steer", call=True)
    writer.prose("", "sync.", "Client", "sync.Client.pid")  # sync.Client's twin is AppServerClient
    writer.prose("", "sync.", "Agent", "sync.Agent.nothing")
    writer.prose("", "", "Thread", "Thread.interrupt")
    assert writer.lines == [
        "As [`Agent.steer()`](#Agent.steer).",
        "",
        "As [`AppServerClient.pid`](#AppServerClient.pid).",
        "",
    ]
    assert writer.missing == ["sync.Agent.steer", "sync.Client.pid", "sync.Agent.nothing", "Thread.interrupt"]


def test_apiref_dataclass_fields_are_read_from_the_source() -> None:
    fields: List[gen_apiref.Field] = gen_apiref.dataclass_fields(codexmini.Launch)
    by_name = {f.name: f for f in fields}
    assert by_name["env"].line() == "`env: Mapping[str, str] = dict()`"  # default_factory
    assert by_name["timeouts"].line() == "`timeouts: Timeouts = Timeouts()`"
    assert by_name["launcher"].note == "Optional[Launcher]"  # the forward reference unquoted
    rate_limits = {f.name: f for f in gen_apiref.dataclass_fields(codexmini.TurnCompleted)}["rate_limits"]
    assert rate_limits.doc.startswith("The account's last rate-limit snapshot")  # its #: comment
    assert os.path.basename(gen_apiref.OUT) == "api.md"


def test_apiref_an_alias_is_found_where_it_is_defined() -> None:
    import codexmini._run
    import codexmini.testing.live

    tree = ast.parse("from .x import A\nfrom ..y import B\nfrom os import C\n")
    assert gen_apiref._import_source(tree, "codexmini.sync", "A") == "codexmini.x"
    assert gen_apiref._import_source(tree, "codexmini.testing", "A") == "codexmini.testing.x"  # a package's own
    assert gen_apiref._import_source(tree, "codexmini.testing.live", "B") == "codexmini.y"
    assert gen_apiref._import_source(tree, "codexmini.sync", "C") == "os"
    # run()'s ApprovalHandler is imported from _permission, where it is the async one
    where, written, doc = gen_apiref.find_alias("ApprovalHandler", codexmini._run.__name__) or ("", "", "")
    assert (where, written) == ("codexmini._permission", "Callable[[ApprovalRequest], Awaitable[Reply]]")
    assert doc.startswith("Answers one approval")
    assert gen_apiref.find_alias("Launch", "codexmini._run") is None  # a class, not an alias
    assert gen_apiref.find_alias("Thread", "codexmini.testing.live") is None  # not there at all
