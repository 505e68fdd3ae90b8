"""Folders another program asks agentsh to open to the tools: an ACP editor's
``additionalDirectories`` (:mod:`agentsh.acp.folders`) and the ``addDirectories`` a Claude Agent
SDK host sends with an approval (:mod:`agentsh.headless.permission_updates`).

Neither program is trusted: each path must be absolute (or, where a base is given, relative to
it), name an existing folder and be printable, and the folder it leads to (links followed) may
be neither the filesystem's root nor the home folder or one holding it, nor a hidden folder in
the home folder (``~/.ssh``, ``~/.aws``, ``~/.config/gh``: where secrets live; no workspace root
is there). Any of those would open the user's secrets to the tools without a question.
"""

from __future__ import annotations

import os
from pathlib import Path

from agentsh.termsafe import one_line

_SHOWN_CHARS = 200


def checked_folder(item: object, *, base: Path | None = None) -> tuple[str, Path | None]:
    """``("", folder)`` for a folder that may be granted (resolved, links followed), else
    ``(problem, None)``: why not, in words that name the path (``"~/.ssh is a hidden
    folder..."``). ``base``: relative paths are taken from it (else refused)."""
    if not isinstance(item, str) or not item:
        return "is not a path", None
    shown = one_line(item[:_SHOWN_CHARS]) + ("…" if len(item) > _SHOWN_CHARS else "")
    if one_line(item) != item or "\x00" in item:
        return f"{shown} holds control characters", None
    path = Path(item)
    if not path.is_absolute():
        if base is None:
            return f"{shown} is not an absolute path", None
        path = base / path
    try:
        real = Path(os.path.realpath(path))
        is_dir = real.is_dir()
    except (OSError, ValueError):
        is_dir = False
    if not is_dir:
        return f"{shown} is not a folder", None
    if real == Path(real.anchor):
        return f"{shown} is the filesystem's root", None
    home = home_folder()
    if home is not None and home.is_relative_to(real):
        return f"{shown} is the home folder or holds it", None
    if _hidden_under(real, home):
        return f"{shown} is a hidden folder of the home folder (where secrets live)", None
    return "", real


def _hidden_under(real: Path, home: Path | None) -> bool:
    if home is None or not real.is_relative_to(home):
        return False
    return any(part.startswith(".") for part in real.relative_to(home).parts)


def home_folder() -> Path | None:
    """The home folder, links followed; None when there is none."""
    try:
        return Path(os.path.realpath(Path.home()))
    except (RuntimeError, KeyError, OSError):
        return None
