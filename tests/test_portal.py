"""The portal (``codexmini._portal``): a private event loop in a daemon thread
that runs the blocking facade's coroutines, the registry of open sync objects,
and approval handlers run in a worker thread.

The portal is tested on plain coroutines: results and exceptions delivered
(base exceptions too), a deadline that cancels the call, a call that will not
settle given up after a grace, a call abandoned before it started, Ctrl-C
while waiting, the caller's wait in slices (``_POLL``), calls refused from
the portal's own thread and once it is closed, a close that fails the calls
still blocked; ``close_all`` closing the registry newest first.  The worker
thread (``in_worker_thread``) is tested through ``codexmini.sync.Client`` on
the in-memory fake.  After each test no ``codexmini-sync`` thread may be
left, and nothing open (:mod:`support.portal_checks`).  The facade itself is
tested in tests/test_sync.py.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import signal
import threading
from typing import Any, List, Optional

import pytest
from support import thread_behaviours as tb
from support.portal_checks import BOUND, nothing_left

from codexmini import ClientClosed, CodexminiError, CodexTimeout, Launch, Timeouts, _portal, sync
from codexmini._permission import ApprovalRequest, Reply
from codexmini.testing import FakeAppServer


@pytest.fixture(autouse=True)
def nothing_left_behind():
    with nothing_left():
        yield


# -- the portal ------------------------------------------------------------------------


def test_sync_portal_runs_coroutines_on_its_own_loop_thread():
    caller = threading.current_thread()

    async def where() -> threading.Thread:
        return threading.current_thread()

    with sync.Portal() as portal:
        assert portal.call(where()) is portal.loop_thread is not caller
        assert portal.loop_thread.daemon and not portal.in_loop_thread()
        with pytest.raises(ValueError, match="its own"):
            portal.call(raises(ValueError("its own")))
    assert portal.closed and not portal.loop_thread.is_alive()
    portal.close()  # idempotent


async def raises(exc: BaseException) -> None:
    raise exc


def test_sync_portal_delivers_base_exceptions_and_keeps_serving():
    with sync.Portal() as portal:
        with pytest.raises(SystemExit):
            portal.call(raises(SystemExit(3)))
        with pytest.raises(concurrent.futures.TimeoutError):  # the coroutine's own, not the call's deadline
            portal.call(raises(concurrent.futures.TimeoutError()), timeout=BOUND)
        assert portal.call(asyncio.sleep(0, "still here")) == "still here"


def test_sync_portal_timeout_cancels_the_call():
    cancelled = threading.Event()

    async def forever() -> None:
        try:
            await asyncio.sleep(3600)
        except asyncio.CancelledError:
            cancelled.set()
            raise

    with sync.Portal() as portal:
        with pytest.raises(CodexTimeout, match="did not finish within 0.05s"):
            portal.call(forever(), timeout=0.05)
        assert cancelled.is_set()  # settled before call() returned


def test_sync_portal_a_call_that_will_not_settle_is_given_up_after_the_grace():
    releases: List[asyncio.Event] = []

    async def stubborn() -> None:
        releases.append(asyncio.Event())  # made on the portal's loop (3.9 binds it to the current one)
        try:
            await asyncio.sleep(3600)
        except asyncio.CancelledError:
            await releases[0].wait()  # ignores the cancel until released

    portal = sync.Portal(cancel_grace=0.05)
    with pytest.raises(CodexTimeout):
        portal.call(stubborn(), timeout=0.05)
    portal.cancel_grace = BOUND
    portal.call(_set(releases[0]))
    portal.close()


async def _set(event: asyncio.Event) -> None:
    event.set()


def test_sync_portal_call_abandoned_before_it_started_never_runs():
    blocking, gate, ran = threading.Event(), threading.Event(), []

    async def block_the_loop() -> None:
        blocking.set()
        gate.wait(BOUND)  # synchronously: the loop can start nothing else meanwhile

    async def never() -> None:
        ran.append(True)  # pragma: no cover - must not run

    with sync.Portal() as portal:
        blocker = threading.Thread(target=portal.call, args=(block_the_loop(),))
        blocker.start()
        assert blocking.wait(BOUND)
        coro = never()
        with pytest.raises(CodexTimeout):
            portal.call(coro, timeout=0.05)
        assert coro.cr_frame is None  # closed by the caller: it never started
        gate.set()
        blocker.join(BOUND)
        portal.call(asyncio.sleep(0))  # the queued start has run (and found the call abandoned)
    assert ran == []


def test_sync_portal_keyboard_interrupt_while_waiting_cancels_the_call():
    started, cancelled = threading.Event(), threading.Event()

    async def forever() -> None:
        started.set()
        try:
            await asyncio.sleep(3600)
        except asyncio.CancelledError:
            cancelled.set()
            raise

    def press_ctrl_c() -> None:
        started.wait(BOUND)
        signal.pthread_kill(threading.main_thread().ident, signal.SIGINT)  # type: ignore[arg-type]

    assert threading.current_thread() is threading.main_thread()
    # A process started in the background by a shell without job control
    # inherits SIGINT ignored, and Python then leaves it so: the SIGINT below
    # would be dropped and the call would wait forever.  Ctrl-C's own handler,
    # for this test only.
    previous = signal.signal(signal.SIGINT, signal.default_int_handler)
    try:
        with sync.Portal() as portal:
            presser = threading.Thread(target=press_ctrl_c)
            presser.start()
            with pytest.raises(KeyboardInterrupt):
                portal.call(forever())
            presser.join(BOUND)
            assert cancelled.is_set()
    finally:
        signal.signal(signal.SIGINT, previous)


def test_sync_call_waits_in_slices_the_caller_never_sees(monkeypatch):
    # A waiting call wakes every _POLL seconds, so a Ctrl-C that lands just
    # before it blocks is still seen; with a timeout or without, the call
    # returns the coroutine's result.  The coroutine here cannot finish
    # before the caller has waited twice: a slice has surely run out.
    monkeypatch.setattr(_portal, "_POLL", 0.001)
    waits: List[Optional[float]] = []
    result = concurrent.futures.Future.result

    def counting(self: Any, timeout: Optional[float] = None) -> Any:
        if threading.current_thread() is threading.main_thread():
            waits.append(timeout)
        return result(self, timeout)

    monkeypatch.setattr(concurrent.futures.Future, "result", counting)

    async def after_two_waits() -> str:
        while len(waits) < 2:
            await asyncio.sleep(0.001)
        return "done"

    with sync.Portal() as portal:
        assert portal.call(after_two_waits()) == "done"
        assert len(waits) >= 2 and set(waits) == {0.001}
        waits.clear()
        assert portal.call(after_two_waits(), timeout=BOUND) == "done"
        assert len(waits) >= 2 and max(waits) <= 0.001  # type: ignore[type-var]


def test_sync_portal_refuses_blocking_calls_from_its_own_thread():
    with sync.Portal() as portal:

        async def reenter() -> None:
            portal.call(asyncio.sleep(0))

        async def close_from_inside() -> None:
            portal.close()

        with pytest.raises(CodexminiError, match="would wait for itself"):
            portal.call(reenter())
        with pytest.raises(CodexminiError, match="cannot be closed from its own"):
            portal.call(close_from_inside())


def test_sync_portal_closed_refuses_calls_and_closes_the_coroutine():
    portal = sync.Portal()
    portal.close()
    coro = asyncio.sleep(0)
    with pytest.raises(ClientClosed):
        portal.call(coro)
    assert coro.cr_frame is None  # closed: no "never awaited" warning


def test_sync_portal_close_cancels_a_call_blocked_in_another_thread():
    started = threading.Event()
    outcome: List[BaseException] = []

    async def forever() -> None:
        started.set()
        await asyncio.sleep(3600)

    portal = sync.Portal()

    def blocked() -> None:
        try:
            portal.call(forever())
        except BaseException as exc:
            outcome.append(exc)

    waiter = threading.Thread(target=blocked)
    waiter.start()
    assert started.wait(BOUND)
    portal.close()
    waiter.join(BOUND)
    assert [type(e) for e in outcome] == [ClientClosed]


def test_sync_portal_close_fails_a_call_that_ignores_its_cancellation():
    started = threading.Event()
    outcome: List[BaseException] = []

    async def deaf() -> None:
        started.set()
        while True:
            try:
                await asyncio.sleep(3600)
            except asyncio.CancelledError:
                continue  # never settles

    portal = sync.Portal(cancel_grace=0.05)

    def blocked() -> None:
        try:
            portal.call(deaf())
        except BaseException as exc:
            outcome.append(exc)

    waiter = threading.Thread(target=blocked)
    waiter.start()
    assert started.wait(BOUND)
    portal.close()  # the loop stops with the task still pending: its caller must not wait forever
    waiter.join(BOUND)
    assert [str(e) for e in outcome] == ["the codexmini.sync object closed before the call settled"]
    for task in asyncio.all_tasks(portal._loop):  # the deaf task, left pending in the closed loop
        task._log_destroy_pending = False  # type: ignore[attr-defined]
        task.get_coro().close()


def test_sync_close_all_closes_newest_first_and_survives_a_failing_close():
    closed: List[str] = []

    class Broken:
        def close(self) -> None:
            closed.append("broken")
            raise RuntimeError("cannot close")

    portal, broken = sync.Portal(), Broken()
    _portal.hold(broken)
    try:
        sync.close_all()
    finally:
        _portal.release(broken)
    assert closed == ["broken"] and portal.closed


# -- approvals in a worker thread ------------------------------------------------------


def test_sync_approval_handler_runs_in_a_worker_thread():
    where: List[threading.Thread] = []

    def handler(request: ApprovalRequest) -> Reply:
        where.append(threading.current_thread())
        return Reply("accept")

    with sync.Client(launch=Launch(launcher=FakeAppServer(tb.Approving).launch), approvals=handler) as client:
        assert client.run("approve it").final_response == "decision: accept"
        assert where[0].name == "codexmini-approval" and where[0] is not client.portal.loop_thread


def test_sync_approval_handler_that_raises_or_is_late_gets_the_fail_closed_answer():
    release = threading.Event()
    calls: List[str] = []

    def handler(request: ApprovalRequest) -> Reply:
        calls.append(request.kind)
        if len(calls) == 1:
            raise RuntimeError("the handler's own bug")
        release.wait(BOUND)  # past the client's handler deadline
        return Reply("accept")

    fake = FakeAppServer(tb.Approving)
    with sync.Client(launch=Launch(launcher=fake.launch, timeouts=Timeouts(handler=0.05)), approvals=handler) as client:
        assert client.run("approve it").final_response == "decision: decline"
        assert client.run("approve again").final_response == "decision: decline"
        release.set()  # the late reply finds its future done: dropped
        client.request("thread/loaded/list", {})
    assert calls == ["command", "command"]


@pytest.mark.parametrize("stop", [SystemExit(3), KeyboardInterrupt()], ids=["sys.exit", "KeyboardInterrupt"])
def test_sync_approval_handler_ending_the_process_its_way_is_answered_and_the_loop_lives(stop, caplog):
    def handler(request: ApprovalRequest) -> Reply:
        raise stop

    with sync.Client(launch=Launch(launcher=FakeAppServer(tb.Approving).launch), approvals=handler) as client:
        assert client.run("approve it").final_response == "decision: decline"
        assert client.run("approve again").final_response == "decision: decline"  # the loop thread lives
        assert client.portal.loop_thread.is_alive()
    assert f"the approval handler raised {type(stop).__name__}" in caplog.text


def test_sync_approval_reply_after_the_loop_closed_is_dropped():
    asked, release, finished = threading.Event(), threading.Event(), threading.Event()

    def handler(request: ApprovalRequest) -> Reply:
        asked.set()
        release.wait(BOUND)
        finished.set()
        return Reply("accept")

    client = sync.Client(launch=Launch(launcher=FakeAppServer(tb.Approving).launch), approvals=handler)
    outcome: List[Any] = []

    def run() -> None:
        try:
            outcome.append(client.run("approve it").final_response)
        except CodexminiError as exc:
            outcome.append(exc)

    runner = threading.Thread(target=run)
    runner.start()
    assert asked.wait(BOUND)
    client.close()  # ends the process and the loop while the handler still thinks
    runner.join(BOUND)
    workers = [t for t in threading.enumerate() if t.name == "codexmini-approval"]
    release.set()
    for worker in workers:
        worker.join(BOUND)
    assert finished.is_set() and not any(w.is_alive() for w in workers)
    # The run ends with the close, or -- when the fail-closed answer close()
    # writes first lets the server finish the turn before its process ends
    # (3.13 schedules it so) -- with that turn, the request declined: never
    # with the handler's late "accept".
    assert len(outcome) == 1 and (isinstance(outcome[0], ClientClosed) or outcome[0] == "decision: decline")


# -- fork: the child owns nothing of its parent's ---------------------------------------


# (A real fork, with a sync.Client open, runs in tests/reliability/test_wedges.py.)


def test_portal_seen_from_a_fork_child_refuses_calls_and_closes_without_its_loop():
    portal = _portal.Portal()
    parent = portal.pid
    try:
        portal.pid = parent + 1  # what a fork child sees: its pid is not the loop's

        async def never() -> None:  # pragma: no cover - refused before it runs
            raise AssertionError("ran in the child")

        with pytest.raises(ClientClosed, match=f"belongs to process {parent + 1}; a forked child cannot use it"):
            portal.call(never())

        class Owner:
            def close(self) -> None:
                _portal.shut(self, portal, never)

        owner = Owner()
        _portal.hold(owner)
        owner.close()  # returns at once, the loop untouched
        assert portal.closed and owner not in _portal._open
        assert portal.loop_thread.is_alive()  # the parent's loop thread was not stopped
    finally:
        portal.pid, portal._closed = parent, False
        portal.close()
    assert not portal.loop_thread.is_alive()


def test_portal_after_a_fork_the_child_registry_is_empty():
    saved, lock = dict(_portal._open), _portal._open_lock
    try:
        _portal._after_fork_in_child()
        assert _portal._open == {} and _portal._open_lock is not lock
    finally:
        _portal._open.update(saved)
        _portal._open_lock = lock
