"""pytest plugin: every frame of every test goes through the schema validator.

Loaded for the whole suite by ``addopts = "-p conformance.plugin"``
(pyproject.toml).  Theory of operation:

* An autouse fixture, :func:`conformance_frames`, registers a factory with
  :func:`codexmini._client.observe_clients` for the duration of each test, so
  every :class:`~codexmini._client.AppServerClient` created during the test --
  against the real binary, a replayed transcript or a hand-written fake --
  gets its own strict :class:`~conformance.schema.ServerVersionValidator`
  (experimental bundle of the codex version the server names in its
  ``initialize`` response, else of the pin) as a frame tap.  The fixture's
  value is the list of those validators, for tests that want to assert what
  was seen.
* A ``pytest_runtest_makereport`` hook judges the problems the validators
  collected.  Problems found by the end of the test body fail the test itself
  (its call phase), with a readable listing; problems from frames exchanged
  later, during fixture teardown, fail its teardown.  Doing this in the report
  hook rather than by raising in the fixture's teardown means a bad frame
  shows up as a FAILED test, not as a passed test plus an error.
* ``@pytest.mark.frame_problems("substring", ...)`` is for tests that exchange
  invalid frames on purpose: every substring must match at least one problem's
  headline (direction, kind, method, id, path, message), and every problem
  must match some substring.  An expected problem that never happened fails the
  test too, so the marker cannot outlive the behaviour it excuses.

A client created in one test and used by a later one (a module-scoped fixture)
keeps the validator of the test that created it; its later problems are not
attributed.  Create clients per test.

The plugin refuses to load without ``jsonschema``: silently skipping
validation would turn the conformance suite into a no-op.
"""

from __future__ import annotations

from typing import List, Optional, Set, Tuple

import pytest

try:
    import jsonschema  # noqa: F401
except ImportError as exc:  # pragma: no cover - exercised in a subprocess by test_validator
    raise ImportError(
        "the conformance plugin (-p conformance.plugin) validates every frame with jsonschema, "
        "which is not installed; install the test extra: pip install -e '.[test]' "
        "(or pip install 'jsonschema>=4.17')"
    ) from exc

from codexmini import CODEX_VERSION
from codexmini._binary import version_key
from codexmini._client import Tap, observe_clients

from .schema import FrameValidator, Problem, SchemaBundle, ServerVersionValidator

MARKER = "frame_problems"
_LISTED = 50  # problems listed in one failure; the rest are counted


def pytest_configure(config: pytest.Config) -> None:
    config.addinivalue_line(
        "markers",
        f"{MARKER}(*substrings): this test exchanges invalid frames on purpose; each substring must match "
        "at least one frame problem and every problem must match a substring (conformance plugin)",
    )


class TestFrames:
    """The validators of one test's clients and the verdict on their problems."""

    __test__ = False  # not a test class, whatever its name says

    def __init__(self, expected: Tuple[str, ...]) -> None:
        self.expected = expected
        self.validators: List[ServerVersionValidator] = []
        self._judged: Set[int] = set()  # id() of problems already reported
        self._checked_expected = False

    def factory(self) -> Tap:
        validator = ServerVersionValidator(strict=True)
        self.validators.append(validator)
        return validator.tap

    @property
    def problems(self) -> List[Problem]:
        return [p for v in self.validators for p in v.problems]

    @property
    def frames(self) -> int:
        return sum(v.frames for v in self.validators)

    def verdict(self) -> Optional[str]:
        """A failure message, or ``None``.  Each problem is judged once; the
        expected substrings are checked the first time a verdict is asked."""
        problems = self.problems
        fresh = [p for p in problems if id(p) not in self._judged]
        self._judged.update(id(p) for p in fresh)
        unexpected = [p for p in fresh if not any(s in p.headline for s in self.expected)]
        missing: List[str] = []
        if not self._checked_expected:
            self._checked_expected = True
            missing = [s for s in self.expected if not any(s in p.headline for p in problems)]
        if not unexpected and not missing:
            return None
        versions = ", ".join(sorted({v.bundle.version for v in self.validators}, key=version_key)) or CODEX_VERSION
        lines = []
        if unexpected:
            lines.append(
                f"{len(unexpected)} frame problem(s) found by the conformance validator "
                f"(strict, experimental schema of codex {versions}, {self.frames} frame(s) checked):"
            )
            for n, problem in enumerate(unexpected[:_LISTED], 1):
                lines.append(f"  {n}. {problem}")
            if len(unexpected) > _LISTED:
                lines.append(f"  … and {len(unexpected) - _LISTED} more")
            lines.append(
                f"If this test exchanges invalid frames on purpose, mark it "
                f'@pytest.mark.{MARKER}("<substring of each problem>", ...).'
            )
        if missing:
            lines.append(f"@pytest.mark.{MARKER} expected problems that did not happen: {list(missing)!r}")
            if problems:
                lines.append("problems that did happen:")
                lines += [f"  - {p.headline}" for p in problems[:_LISTED]]
            else:
                lines.append("no frame problem happened at all (remove the marker?)")
        return "\n".join(lines)


_STATE = pytest.StashKey[TestFrames]()


def _expected(node: pytest.Item) -> Tuple[str, ...]:
    found: List[str] = []
    for marker in node.iter_markers(MARKER):
        if not marker.args or not all(isinstance(a, str) and a for a in marker.args):
            raise pytest.UsageError(f"@pytest.mark.{MARKER} needs one or more non-empty substrings ({node.nodeid})")
        found.extend(marker.args)
    return tuple(found)


@pytest.fixture(autouse=True)
def conformance_frames(request: pytest.FixtureRequest):
    """Validate every frame of every client this test creates; the value is
    the list of their :class:`FrameValidator` objects."""
    state = TestFrames(_expected(request.node))
    request.node.stash[_STATE] = state
    unregister = observe_clients(state.factory)
    try:
        yield state.validators
    finally:
        unregister()


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_makereport(item: pytest.Item, call: pytest.CallInfo):
    outcome = yield
    if call.when == "setup":
        return
    state = item.stash.get(_STATE, None)
    if state is None:
        return
    report = outcome.get_result()
    if call.when == "teardown" or (report.skipped and not hasattr(report, "wasxfail")):
        # Expected problems are "missing" only after a test body that ran to
        # its end; a skipped test, or one whose setup failed, judges only
        # the problems that did happen.
        state._checked_expected = True
    message = state.verdict()
    if message is None:
        return
    if report.failed or hasattr(report, "wasxfail"):
        # Already failing (or an expected failure): add the problems, keep the cause.
        report.sections.append(("conformance: frame problems", message))
    else:
        report.outcome = "failed"
        report.longrepr = message


@pytest.fixture(scope="session")
def schema_bundle() -> SchemaBundle:
    """The experimental schema bundle of the pinned codex version."""
    return SchemaBundle.load()


@pytest.fixture
def frame_validator(schema_bundle: SchemaBundle) -> FrameValidator:
    """A fresh strict validator (not attached to any client)."""
    return FrameValidator(schema_bundle, strict=True)
