"""``python -m codexmini.testing fake BEHAVIOUR [ARGS] -- ARGV`` runs a fake app-server
behaviour over stdio; ``python -m codexmini.testing model SCRIPT.json [--port N]``
serves a scripted model."""

import sys
from typing import Callable, Dict, List, Optional

from . import fake_appserver, scripted_model

_COMMANDS: Dict[str, Callable[[List[str]], int]] = {"fake": fake_appserver.main, "model": scripted_model.main}


def main(argv: Optional[List[str]] = None) -> int:
    args = sys.argv[1:] if argv is None else argv
    command = _COMMANDS.get(args[0] if args else "")
    if command is None:
        sys.stderr.write(__doc__ + "\n")
        return 2
    return command(args[1:])


if __name__ == "__main__":
    sys.exit(main())
