"""The root conftest.py's coroutine hook: an ``async def`` test runs in a
fresh event loop of its own, with its fixtures, under one deadline that
``@pytest.mark.timeout_s`` changes.

The passing cases run here, as the coroutine tests of the suite do; the
failing ones (a failed assertion, a test past its deadline, a wrong marker)
run in a subprocess pytest (``pytester``) with the suite's own configuration
and the root conftest loaded as a plugin, so their failures are the inner
run's, not ours.
"""

from __future__ import annotations

import asyncio
import os
import textwrap

import pytest

pytest_plugins = ["pytester"]

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


@pytest.fixture
def conftest(request):
    """The root conftest.py as pytest loaded it (its module name, ``conftest``,
    is every conftest's: importing it by name may find another one)."""
    path = os.path.join(ROOT, "conftest.py")
    (module,) = [p for p in request.config.pluginmanager.get_plugins() if getattr(p, "__file__", None) == path]
    return module


async def test_a_coroutine_test_runs_in_a_running_loop_with_its_fixtures(tmp_path, request):
    loop = asyncio.get_running_loop()
    assert loop.is_running() and asyncio.current_task() is not None
    assert tmp_path.is_dir() and request.node.name == "test_a_coroutine_test_runs_in_a_running_loop_with_its_fixtures"
    await asyncio.sleep(0)


@pytest.mark.parametrize("n", [1, 2])
async def test_a_coroutine_test_gets_its_parameters(n, request):
    assert n == request.node.callspec.params["n"]


@pytest.mark.timeout_s(5)
async def test_a_coroutine_test_may_set_its_own_deadline(request, conftest):
    assert request.node.get_closest_marker("timeout_s").args == (5,)
    assert conftest._deadline(request.node) == 5.0


def test_the_deadline_is_the_module_constant_unless_marked(request, conftest):
    assert conftest._deadline(request.node) == conftest.ASYNC_TEST_TIMEOUT_S > 0


INNER_TESTS = textwrap.dedent(
    """
    import asyncio

    import pytest

    LOOPS = []


    async def test_passes(tmp_path):
        LOOPS.append(asyncio.get_running_loop())
        assert tmp_path.is_dir()


    async def test_gets_a_fresh_loop():
        (first,) = LOOPS
        assert first.is_closed() and asyncio.get_running_loop() is not first


    def test_plain_tests_are_left_alone():
        with pytest.raises(RuntimeError):
            asyncio.get_running_loop()


    async def test_fails():
        await asyncio.sleep(0)
        assert 1 + 1 == 3, "arithmetic"


    @pytest.mark.timeout_s(0.5)
    async def test_hangs():
        await asyncio.Event().wait()  # never set


    async def test_raises_its_own_timeout():
        await asyncio.wait_for(asyncio.Event().wait(), 0.01)


    @pytest.mark.timeout_s("soon")
    async def test_marked_wrongly():
        pass
    """
)


def test_failing_and_hanging_coroutine_tests_fail_and_say_why(pytester, monkeypatch):
    monkeypatch.setenv("PYTHONPATH", ROOT + os.pathsep + os.environ.get("PYTHONPATH", ""))
    monkeypatch.setenv("COLUMNS", "400")  # the summary's reasons in full
    path = pytester.makepyfile(test_inner=INNER_TESTS)
    result = pytester.runpytest_subprocess(
        "-c",
        os.path.join(ROOT, "pyproject.toml"),  # the suite's options: strict markers, warnings are errors
        "--rootdir",
        str(pytester.path),
        "-p",
        "conftest",  # the root conftest, found on PYTHONPATH
        "-p",
        "no:cacheprovider",
        "-rA",
        str(path),
    )
    result.assert_outcomes(passed=3, failed=4)
    result.stdout.fnmatch_lines_random(
        [
            "PASSED test_inner.py::test_passes",
            "PASSED test_inner.py::test_gets_a_fresh_loop",
            "PASSED test_inner.py::test_plain_tests_are_left_alone",
            "FAILED test_inner.py::test_fails - AssertionError: arithmetic*",
            "FAILED test_inner.py::test_hangs - Failed: test_inner.py::test_hangs: the coroutine test did not finish within 0.5 s and was cancelled*",
            "FAILED test_inner.py::test_raises_its_own_timeout - *TimeoutError",  # asyncio's own before 3.11
            "FAILED test_inner.py::test_marked_wrongly - *timeout_s takes one positive number of seconds*",
        ]
    )
    (own,) = [line for line in result.outlines if line.startswith("FAILED test_inner.py::test_raises_its_own_timeout")]
    assert "did not finish" not in own  # a TimeoutError of the test's own is not the deadline
    # Where the hanging test waited is in its report.
    result.stdout.fnmatch_lines(["*await asyncio.Event().wait()  # never set*"])
    assert "was never awaited" not in result.stdout.str() + result.stderr.str()
