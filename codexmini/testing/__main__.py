"""``python -m codexmini.testing``: the test tools as commands.

``model SCRIPT.json [--port N]`` serves a scripted model (prints its URL);
``fake BEHAVIOUR [ARGS] -- ARGV`` plays a fake app-server behaviour over
stdio (what ``FakeAppServer.executable`` writes a ``codex`` for).  ``--help``
on each says more; docs/testing.md in the repository shows them in use.
"""

import argparse
import sys
from typing import Callable, Dict, List, Optional

from . import fake_appserver, scripted_model

#: Each command: (what it does, what runs it with the rest of the command line).
_COMMANDS: Dict[str, Callable[[List[str]], int]] = {"fake": fake_appserver.main, "model": scripted_model.main}
_HELP = {
    "model": "serve a scripted Responses API on 127.0.0.1 (SCRIPT.json [--port N]); prints its base URL",
    "fake": "play a fake app-server behaviour over stdio (BEHAVIOUR [ARGS] -- ARGV; BEHAVIOUR is module:name)",
}


def parser() -> argparse.ArgumentParser:
    top = argparse.ArgumentParser(
        prog="python -m codexmini.testing",
        description="Test tools for code that drives codex through codexmini: a scripted model, a fake app-server.",
        epilog="In Python: codexmini.testing.ScriptedModel, FakeAppServer, CodexLike; "
        "pytest fixtures: -p codexmini_pytest.",
    )
    sub = top.add_subparsers(dest="command", metavar="COMMAND")
    for name in _COMMANDS:
        sub.add_parser(name, help=_HELP[name], add_help=False)  # the command parses the rest itself
    return top


def main(argv: Optional[List[str]] = None) -> int:
    args = sys.argv[1:] if argv is None else list(argv)
    if args and args[0] in _COMMANDS:
        return _COMMANDS[args[0]](args[1:])
    top = parser()
    if args[:1] in (["-h"], ["--help"]):
        top.print_help()
        return 0
    top.print_usage(sys.stderr)
    problem = f"unknown command {args[0]!r}" if args else "a command is needed"
    sys.stderr.write(f"{top.prog}: error: {problem}: one of {', '.join(_COMMANDS)} (--help says more)\n")
    return 2


if __name__ == "__main__":
    sys.exit(main())
