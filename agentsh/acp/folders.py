"""The additional directories an editor passes with ``session/new`` and ``session/load``.

ACP's ``additionalDirectories`` widen a session's file scope beyond its ``cwd`` (an editor's
multi-root workspace). agentsh takes each as a folder the model may read without asking, as if
the user had allowed reads beneath it for the session; a write there still asks, as every write
outside the project does: an editor's list of roots is no consent to changes outside the folder
it opened (``--add-dir``, which the user types, is). The client is not trusted: each path must
be absolute, name an existing folder and be printable, and the folder it leads to may be
neither the filesystem's root nor the home folder or one holding it, nor a hidden folder in
the home folder (``~/.ssh``, ``~/.aws``, ``~/.config/gh``: where secrets live; a workspace
root is never there). Any of those would open the user's secrets to reads without a question.
A path refused is a line of warning in the thread, not a failed session; a folder inside the
project adds nothing and is left out.
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from pathlib import Path

from agentsh.tools.granted_folders import checked_folder

#: More roots than any workspace has: the rest is refused, in one line.
MAX_FOLDERS = 32


def client_folders(given: Sequence[object] | None, project: Path) -> tuple[list[Path], list[str]]:
    """The editor's ``given`` directories agentsh takes, resolved (links followed), and a
    problem for each one it does not."""
    folders: list[Path] = []
    problems: list[str] = []
    items = list(given or [])
    if len(items) > MAX_FOLDERS:
        problems.append(
            f"the editor gave {len(items)} additional folders; only the first {MAX_FOLDERS} "
            "were considered"
        )
        items = items[:MAX_FOLDERS]
    root = Path(os.path.realpath(project))
    for item in items:
        problem, folder = checked_folder(item)
        if problem:
            problems.append(f"the editor's additional folder {problem}; not added")
        elif folder is not None and folder not in folders and not folder.is_relative_to(root):
            folders.append(folder)
    return folders, problems


def model_note(folders: Sequence[Path]) -> str:
    """What the model is told about the folders (appended to its system prompt)."""
    listed = "\n".join(f"- {folder}" for folder in folders)
    return (
        "# Additional folders\n\nBesides the project, the editor added these folders to the "
        "session: files in them may be read like the project's; a write there needs the "
        f"user's approval:\n{listed}"
    )


def thread_note(folders: Sequence[Path]) -> str:
    """What the user is told in the thread."""
    listed = ", ".join(str(folder) for folder in folders)
    return (
        f"agentsh: the editor's additional folders are read without asking (a write there "
        f"still asks): {listed}"
    )
