"""A fake codex whose answers are the real binary's: :class:`Canned` answers
a method with answers taken from the recordings (:func:`recorded`), so every
frame it sends is one a real codex sent -- and the conformance plugin
validates it anyway, strictly, against the schema of the version the fake's
``initialize`` names.  Shared by the tests of the client's requests, of the
utility requests (``_extras``) and of the thread lifecycle.
"""

from __future__ import annotations

import copy
import json
import os
from typing import Any, Dict, List, Mapping, Sequence, Tuple

from codexmini import Launch
from codexmini._client import AppServerClient
from codexmini.testing import CodexLike, FakeAppServer
from codexmini.testing.codex_like import INIT_RESULT

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


def recorded(scenario: str, method: str, index: int = 0, version: str = "0.149.1") -> Dict[str, Any]:
    """The ``index``-th answer (``result`` or ``error`` frame) codex ``version``
    gave to ``method`` in the recording of ``scenario``."""
    path = os.path.join(ROOT, "fixtures", version, f"{scenario}.frames.jsonl")
    with open(path, encoding="utf-8") as fh:
        lines = [json.loads(line) for line in fh]
    asked = {
        (line.get("conn", 0), line["frame"]["id"])
        for line in lines
        if line["dir"] == "out" and line["frame"].get("method") == method
    }
    answers = [
        line["frame"]
        for line in lines
        if line["dir"] == "in" and (line.get("conn", 0), line["frame"].get("id")) in asked
    ]
    frame = copy.deepcopy(answers[index])
    del frame["id"]
    return frame


class Canned(CodexLike):
    """Answers each method of ``answers`` with its answers in turn (the last
    repeats): an answer frame without its ``id`` (``{"result": …}`` or
    ``{"error": …}``), or a callable ``(server, params) -> frame``.  The
    ``initialize`` answer names ``version``, whose schema then validates."""

    def __init__(self, answers: Mapping[str, Sequence[Any]], version: str = "0.149.1") -> None:
        super().__init__()
        self.answers = {method: list(queue) for method, queue in answers.items()}
        self.version = version
        self.asked: List[Tuple[str, Dict[str, Any]]] = []

    async def on_initialize(self, rid: Any, params: Mapping[str, Any]) -> None:
        self.write({"id": rid, "result": dict(INIT_RESULT, userAgent=f"codexmini-fake/{self.version} (fake)")})

    def __getattribute__(self, name: str) -> Any:
        if name.startswith("on_"):  # a canned answer beats CodexLike's own handler
            for method, queue in object.__getattribute__(self, "answers").items():
                if name == "on_" + method.replace("/", "_"):
                    return lambda rid, params, method=method, queue=queue: self._canned(rid, params, method, queue)
        return object.__getattribute__(self, name)

    async def _canned(self, rid: Any, params: Mapping[str, Any], method: str, queue: List[Any]) -> None:
        self.asked.append((method, dict(params)))
        answer = queue.pop(0) if len(queue) > 1 else queue[0]
        if callable(answer):
            answer = answer(self, params)
        if answer is not None:  # None: never answered
            self.write({"id": rid, **answer})


async def client_for(fake: Canned, **options: Any) -> AppServerClient:
    """A client on ``fake`` in memory (``options`` to ``AppServerClient.start``)."""
    return await AppServerClient.start(Launch(launcher=FakeAppServer(fake).launch), **options)


async def client_for_behaviour(behaviour: Any, *args: str) -> AppServerClient:
    """A client on the in-memory fake playing ``behaviour`` (given the fake's ``args``)."""
    return await AppServerClient.start(Launch(launcher=FakeAppServer(behaviour, *args).launch))
