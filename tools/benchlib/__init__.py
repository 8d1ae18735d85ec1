"""The pieces of ``make bench`` (``tools/bench.py`` is the command line).

Theory of operation
-------------------
Every figure is a ratio to a baseline measured in the same run, on the same
pipe and the same interpreter, so the table means the same on a laptop and on
a 2-core CI box.  The parts, one job each:

* :mod:`.workload` builds the byte streams from the recorded fixtures (real
  frame shapes, fresh ids) and writes them, with the server's answers, to a
  scratch directory;
* :mod:`.fake_appserver` is a stdlib script that plays ``codex app-server``:
  it answers ``initialize``, ``thread/start``, ``turn/start`` and
  ``turn/interrupt`` with the recorded shapes and writes the pre-built turn as
  fast as the pipe takes it;
* :mod:`.stream`, :mod:`.e2e`, :mod:`.serialize`, :mod:`.concurrency` (turns
  at once: the client's, and a minimal asyncio client's, the floor) and
  :mod:`.biglog` (a log of a million events, written for the run and deleted)
  are the *contenders*: each
  call runs in a fresh interpreter (``python -m tools.benchlib.<module>``), so
  its peak RSS (``VmHWM``) is its own, and prints one JSON object;
* :mod:`.runner` spawns those processes (own process group, deadline, kill)
  and interleaves the runs of competing contenders;
* :mod:`.imports` measures ``python -X importtime``;
* :mod:`.report` turns medians into the table and the JSON document.

Nothing here asserts a timing; the tests (``tests/test_bench.py``) check the
structure and that every delta was delivered, on a tiny workload.
"""
