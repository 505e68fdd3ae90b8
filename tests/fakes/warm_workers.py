"""Finding and ending model worker processes that belong to a test run (their home is under
the run's temporary folder): for the tests of :mod:`agentsh.llm.warm_worker`, and the session's
end, which ends the warm workers the run's agentsh processes shared (tests/conftest.py)."""

from __future__ import annotations

import contextlib
import os
import signal
from pathlib import Path


def worker_processes(under: Path) -> list[int]:
    """Model worker processes (the warm one and what it forked) whose home is under ``under``."""
    folder = os.fsencode(str(under.resolve()))
    found = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit() or int(entry.name) == os.getpid():
            continue
        try:
            command = (entry / "cmdline").read_bytes()
            if b"agentsh.llm.worker" not in command:
                continue
            environ = (entry / "environ").read_bytes().split(b"\0")
        except OSError:
            continue
        homes = [v for v in environ if v.startswith((b"AGENTSH_HOME=", b"HOME="))]
        values = [home.split(b"=", 1)[1] for home in homes]
        if any(v == folder or v.startswith(folder + b"/") for v in values):
            found.append(int(entry.name))
    return found


def warm_workers(under: Path) -> list[int]:
    """The warm workers among them: adopted by init, their folder ``/``."""
    warm = []
    for pid in worker_processes(under):
        with contextlib.suppress(OSError):
            if str(Path(f"/proc/{pid}/cwd").readlink()) == "/":
                warm.append(pid)
    return warm


def end_warm_workers(under: Path) -> None:
    """End the warm workers under ``under``."""
    for pid in warm_workers(under):
        with contextlib.suppress(ProcessLookupError):
            os.kill(pid, signal.SIGTERM)


def warm_worker_env() -> dict[str, str]:
    """What an environment built from scratch needs to share the run's warm model workers
    (tests/conftest.py): its runtime folder and their idle time."""
    names = ("XDG_RUNTIME_DIR", "AGENTSH_WARM_WORKER_S")
    return {name: os.environ[name] for name in names if name in os.environ}
