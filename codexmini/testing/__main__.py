"""``python -m codexmini.testing fake SPEC [ARGS] -- ARGV`` runs a fake app-server
behaviour over stdio; ``python -m codexmini.testing model SCRIPT.json [--port N]``
serves a scripted model."""

import sys
from typing import Callable, Dict, List

from . import fake_appserver, scripted_model

_COMMANDS: Dict[str, Callable[[List[str]], int]] = {"fake": fake_appserver.main, "model": scripted_model.main}

if __name__ == "__main__":
    command = _COMMANDS.get(sys.argv[1] if len(sys.argv) > 1 else "")
    if command is None:
        sys.stderr.write(__doc__ + "\n")
        sys.exit(2)
    sys.exit(command(sys.argv[2:]))
