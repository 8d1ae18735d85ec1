"""The recorded transcripts (``fixtures/*/*.frames.jsonl``), read and routed.

Shared by the tests that run every recorded frame through a validator
(``test_jsonschema.py``, ``test_schema.py``).
"""

from __future__ import annotations

import glob
import json
import os
from typing import Any, Dict, Iterator, List, Tuple

from codexmini import _schema

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
FRAME_FILES = sorted(glob.glob(os.path.join(ROOT, "fixtures", "*", "*.frames.jsonl")))


def recorded() -> Iterator[Tuple[str, List[Tuple[str, Any]]]]:
    for path in FRAME_FILES:
        with open(path, encoding="utf-8") as fh:
            lines = [json.loads(line) for line in fh if line.strip()]
        yield os.path.relpath(path, ROOT), [(line["dir"], line["frame"]) for line in lines]


def routed(bundle: _schema.SchemaBundle, frames: List[Tuple[str, Any]]) -> Iterator[Tuple[Any, List[str]]]:
    """Each frame with the pointers FrameValidator checks it against: its
    envelope, plus its union branch and the union's own properties, or the
    ``result`` wrapper of the method it answers.  (Written out again here
    rather than borrowed, so a routing bug cannot hide on both sides.)"""
    pending: Dict[Tuple[str, str], str] = {}
    for direction, frame in frames:
        if "method" in frame:
            kind = "request" if "id" in frame else "notification"
            union = {
                ("out", "request"): _schema.CLIENT_REQUEST,
                ("in", "request"): _schema.SERVER_REQUEST,
                ("out", "notification"): _schema.CLIENT_NOTIFICATION,
                ("in", "notification"): _schema.SERVER_NOTIFICATION,
            }[(direction, kind)]
            if kind == "request":
                pending[(direction, json.dumps(frame["id"]))] = frame["method"]
            pointers = [bundle.definition_pointer(_schema.ENVELOPES[kind])]
            branch = bundle.branch_pointer(union, frame["method"])
            if branch is not None:
                pointers.append(branch)
                pointers.extend(p for p in [bundle.union_properties(union)] if p)
        else:
            kind = "response" if "result" in frame else "error"
            asker = "in" if direction == "out" else "out"
            method = pending.pop((asker, json.dumps(frame["id"])), None)
            pointers = [bundle.definition_pointer(_schema.ENVELOPES[kind])]
            if kind == "response" and method is not None:
                try:
                    pointers.append(bundle.result_wrapper(method))
                except KeyError:  # a method this bundle does not have: the envelope only
                    pass
        yield frame, pointers


def frame_count() -> int:
    total = 0
    for path in FRAME_FILES:
        with open(path, encoding="utf-8") as fh:
            total += sum(1 for line in fh if line.strip())
    return total
