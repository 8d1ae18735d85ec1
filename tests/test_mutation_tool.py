"""The mutation tool's own pure parts: which mutants it makes, what it leaves
alone, how it serves a mutant, and how it judges equivalents.  The forked
runs themselves are exercised by ``make mutation`` (whose canary run per
module proves the served code is what the tests import)."""

from __future__ import annotations

import ast
import importlib
import json
import os
import sys
import textwrap

import pytest

from tools.mutation import equivalents, mutants, report, runner, targets
from tools.mutation.runner import KILLED, SURVIVED, Outcome

SAMPLE = textwrap.dedent(
    '''
    """Module docstring."""
    from __future__ import annotations

    import logging
    from typing import TYPE_CHECKING, Dict, Optional

    if TYPE_CHECKING:
        from os import PathLike

    logger = logging.getLogger("sample")
    Table = Dict[str, int]
    TABLE = {"key": 3}
    FLAGS = frozenset({"on"})


    def f(x: Optional[int], items: list) -> bool:
        """Docstring."""
        assert x is not None
        if x < 2 and x in items:
            logger.warning("prose %s", x)
            return True
        while not items:
            break
        total: int = x + 1
        return total == 0


    __all__ = ["f"]
    '''
)


def changes(source: str = SAMPLE) -> set:
    _, found = mutants.find_mutants(source, "_sample", "codexmini/_sample.py")
    return {(m.operator, m.before, m.after) for m in found}


def test_mutants_cover_every_operator():
    found = changes()
    assert {
        ("compare", "x < 2", "x <= 2"),
        ("compare", "x in items", "x not in items"),
        ("compare", "total == 0", "total != 0"),
        ("boolop", "x < 2 and x in items", "x < 2 or x in items"),
        ("negate", "x < 2 and x in items", "not (x < 2 and x in items)"),
        ("negate", "not items", "items"),
        ("number", "2", "3"),
        ("number", "2", "1"),
        ("arith", "x + 1", "x - 1"),
        ("bool", "True", "False"),
        ("string", "'key'", "''"),
        ("string", "'on'", "''"),
        ("string", "'sample'", "''"),
        ("return", "return total == 0", "return None"),
        ("delete", "break", "pass"),
        ("delete", "logger.warning('prose %s', x)", "pass"),
        ("delete", "total: int = x + 1", "pass"),
    } <= found


def test_mutants_leave_alone_what_no_test_should_see():
    # Whether the warning is logged is mutated (deleting the call), its prose is not.
    text = " ".join(f"{before} {after}" for op, before, after in changes() if op != "delete")
    for untouched in ("Docstring", "PathLike", "prose", "Optional", "Dict[str, int]", "__all__", "is not None"):
        assert untouched not in text


def test_mutants_negate_an_equality_test_once():
    # `not a == b` would be the compare mutant `a != b` a second time.
    found = changes("def g(a, b):\n    if a == b:\n        return 1\n")
    assert ("compare", "a == b", "a != b") in found
    assert not any(op == "negate" for op, _, _ in found)


def test_mutants_delete_the_value_of_a_nonlocal_binding_and_keep_the_module_compiling():
    # Deleting `target: ... = None` to `pass` would leave `nonlocal target` without a binding: a SyntaxError, which
    # the runner can only report as an error of its own.  The bare annotation keeps the name local, without a value.
    source = textwrap.dedent(
        """
        def outer():
            target: Optional[int] = None
            other: int = 1

            def inner():
                nonlocal target
                target = 2
                return other

            return inner
        """
    )
    found = changes(source)
    assert ("delete", "target: Optional[int] = None", "target: Optional[int]") in found
    assert ("delete", "other: int = 1", "pass") in found
    _, listed = mutants.find_mutants(source, "_n", "n.py")
    for index in range(len(listed)):
        compile(mutants.mutated_source(source, "_n", "n.py", index), "n.py", "exec")


def test_mutated_source_applies_exactly_one_change():
    source = "def g(a):\n    return a + 1 < 3\n"
    _, found = mutants.find_mutants(source, "_g", "g.py")
    assert len({m.key for m in found}) == len(found)
    texts = [mutants.mutated_source(source, "_g", "g.py", i) for i in range(len(found))]
    original = ast.unparse(ast.parse(source))
    assert len(set(texts)) == len(texts) and original not in texts
    assert "def g(a):\n    return a - 1 < 3" in texts


def test_mutant_key_survives_edits_elsewhere_in_the_file():
    before = {m.key: m.line for m in mutants.find_mutants("x = 1\n", "_m", "m.py")[1]}
    after = {m.key: m.line for m in mutants.find_mutants("y = 2\n\n\nx = 1\n", "_m", "m.py")[1]}
    assert set(before) <= set(after) and {after[k] for k in before} == {4}


def test_served_module_is_the_given_code_under_the_real_name_and_file(tmp_path):
    path = tmp_path / "probe_mod.py"
    path.write_text("VALUE = 1\n")
    code = compile("VALUE = 2\n", str(path), "exec")
    finder = runner._Serve("probe_mod", str(path), code)
    sys.meta_path.insert(0, finder)
    try:
        module = importlib.import_module("probe_mod")
        assert module.VALUE == 2 and module.__file__ == str(path)
        assert finder.find_spec("json", None) is None  # everything else loads as usual
    finally:
        sys.meta_path.remove(finder)
        sys.modules.pop("probe_mod", None)


def test_fresh_import_forgets_the_repository_modules_only():
    import codexmini
    import conformance.plugin

    assert runner._from_repository(codexmini) and runner._from_repository(conformance.plugin)
    assert not runner._from_repository(json) and not runner._from_repository(pytest)


def run_of(*results):
    target = targets.Target("_sample", ("tests/test_sample.py",))
    found = [
        mutants.Mutant("_sample", target.path, n, "string", f"'{n}'", "''", f"X = '{n}'", lambda: None)
        for n in range(len(results))
    ]
    return report.ModuleRun(target, results=[(m, Outcome(s, 0.1, "")) for m, s in zip(found, results)])


def entry(n, reason="no test can see it"):
    return equivalents.Equivalent("_sample", "string", f"'{n}'", "''", f"X = '{n}'", reason)


def test_scores_leave_out_declared_equivalents_only():
    run = run_of(KILLED, KILLED, runner.TIMEOUT, SURVIVED, SURVIVED)
    summary = report.summarize(run, {entry(3).key})
    assert (summary.mutants, summary.killed, summary.timeouts, summary.survived, summary.equivalent) == (5, 2, 1, 2, 1)
    assert summary.score == 60.0 and summary.score_without_equivalents == 75.0
    assert report.failed([run], {entry(3).key}, 75.0, 0) is False
    assert report.failed([run], {entry(3).key}, 76.0, 0) is True


def test_stale_equivalents_are_reported():
    run = run_of(KILLED, SURVIVED)
    found = report.stale([run], [entry(0), entry(1), entry(7), equivalents.Equivalent("_other", "", "", "", "", "x")])
    assert [(e.before, why) for e, why in found] == [
        ("'0'", "not equivalent: the mutant was killed"),
        ("'7'", "matches no mutant"),
    ]


def test_declared_equivalents_are_reviewed():
    known = set(targets.TARGETS)
    keys = [e.key for e in equivalents.EQUIVALENTS]
    assert len(keys) == len(set(keys))
    for e in equivalents.EQUIVALENTS:
        assert e.module in known and e.reason.strip() and e.line.strip()


def test_every_present_module_of_the_table_has_its_test_files():
    for target in targets.targets():
        if target.exists():
            assert target.missing_tests() == ()
            assert all(os.path.isfile(os.path.join(targets.ROOT, t)) for t in target.tests)
