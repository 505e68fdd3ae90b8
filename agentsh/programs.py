"""Programs agentsh starts on its own (``git``, ``rg``, ``bash``), found where the user put them.

``shutil.which`` and ``subprocess`` honour ``.`` and empty entries of ``PATH``, which name the
current folder (for a child process, the folder it starts in): some users have one, and in a
cloned repository its own ``git``, ``rg`` or ``bash`` would then run in place of the real one,
before anyone approved anything. agentsh looks its programs up on the absolute entries only.
"""

from __future__ import annotations

import os
import shutil
from collections.abc import Mapping
from pathlib import Path


def find_program(name: str, env: Mapping[str, str] | None = None) -> str | None:
    """The absolute path of ``name`` on the absolute entries of ``PATH``, or None."""
    env = os.environ if env is None else env
    entries = env.get("PATH", os.defpath).split(os.pathsep)
    return shutil.which(name, path=os.pathsep.join(e for e in entries if Path(e).is_absolute()))
