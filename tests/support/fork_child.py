"""Run as a script by tests/test_portal.py: a sync.Client open (on an in-memory
fake app-server), then a fork.  The child calls the inherited client, closes
it, and exits normally (its atexit hooks run); the parent reports what the
child said, whether it exited within its deadline, and that its own client
still works."""

import json
import os
import sys
import time

from codexmini import Launch, sync
from codexmini.testing import CodexLike, FakeAppServer

client = sync.Client(Launch(launcher=FakeAppServer(CodexLike).launch))
before = not client.closed
read, write = os.pipe()
pid = os.fork()
if pid == 0:  # the child: the client is not its own
    os.close(read)
    try:
        client.thread()
        said = "no error"
    except Exception as exc:  # what the child is told
        said = f"{type(exc).__name__}: {exc}"
    client.close()  # returns at once: nothing of the parent's is touched
    os.write(write, said.encode())
    os.close(write)
    sys.exit(0)  # a normal exit: the atexit hook runs
os.close(write)
deadline = time.monotonic() + 30
while time.monotonic() < deadline:
    done, status = os.waitpid(pid, os.WNOHANG)
    if done:
        break
    time.sleep(0.02)
else:
    os.kill(pid, 9)
    os.waitpid(pid, 0)
    status = -1
with os.fdopen(read) as f:
    child_said = f.read()
thread = client.thread()  # the parent's client still works
result = thread.run("hello")
client.close()
print(json.dumps({"before": before, "child": child_said, "exit": status, "after": result.final_response}))
