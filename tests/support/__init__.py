"""Helpers of the test suite that are not tests themselves (``from support import …``:
pytest puts ``tests/`` on ``sys.path`` for the test files there).

* :mod:`support.behaviours` -- fake app-server behaviours (``async def name(server)``)
  for the client's tests, in memory or, named ``"support.behaviours:name"``, as a
  child process over real pipes.
* :mod:`support.thread_behaviours` -- scripted codex turns (:class:`CodexLike`
  behaviours) for the thread, run and agent tests.
* :mod:`support.fake_client` -- a client on a fake app-server playing a
  behaviour, in memory or as a child process, an agent config from flat
  options, and process checks.
* :mod:`support.run_support` -- what the ``run()``, structured-output and
  sync-facade tests share: the :class:`Echo` turn and the live setup.
* :mod:`support.canned` -- :class:`Canned`, a fake codex answering each
  method with the recordings' own answers, for the client's requests, the
  utility requests and the thread lifecycle.
* :mod:`support.portal_checks` -- what a sync or portal test may leave
  behind: no loop thread, nothing open.
* :mod:`support.recorded_frames` -- the recorded transcripts
  (``fixtures/*/*.frames.jsonl``), read and routed, for the validator tests.
* :mod:`support.mcp_server` -- a tiny MCP server over stdio, run by codex as a
  script (by path) in the ``mcp_elicitation`` scenario.

The reliability suite (``tests/reliability/``) keeps its own helpers there.
"""
