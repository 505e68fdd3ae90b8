"""Whether a command an allow rule matched reaches outside the project (then it does not cover it).

A rule such as ``Bash(cat:*)`` or ``Bash(rm:*)`` is written for the project's files; ``cat
~/.ssh/id_ed25519``, ``rm -rf ../other`` or ``ls /`` are not what it was for, nor is any command
run after a ``cd`` out of the project (``cd /elsewhere && rm -rf x``, ``cd ..; git push``).
:func:`names_a_path_outside` finds a word (or an option's value, ``--file=/etc/x``, ``-f/etc/x``)
that names a place outside the project root: one that starts with ``~``, climbs out with
``..``, leads out through a link, or is an absolute path outside the root whose first folder
exists (``/etc/passwd``; not a sed address or a URL path such as ``/api/v1``). Words are
matched as bash hands them over, unquoted (``'/etc/x'`` is ``/etc/x``); a line bash would
make words up for (``"$HOME/x"``, ``$'\\x2fetc'``) matches no allow rule at all.
:func:`outside_folder` says whether the folder a command runs in is outside.
"""

from __future__ import annotations

import os.path
from pathlib import Path

_HARMLESS = frozenset({"/dev/null", "/dev/stdin", "/dev/stdout", "/dev/stderr", "/dev/tty"})


def names_a_path_outside(
    words: list[str], cwd: Path | None, root: Path, named: frozenset[str] = frozenset()
) -> bool:
    """Whether the arguments of a simple command (its words, the program first) name a
    place outside ``root`` (see the module docstring); ``cwd``: where it runs, None when
    the line moved somewhere not known first (then any word of the first kinds counts);
    ``named``: words the user's rule names as written, which count as inside."""
    for word in words[1:]:
        if word in named:
            continue
        if word.startswith("--"):
            values = [word.partition("=")[2]] if "=" in word else []
        elif word.startswith("-") and len(word) > 2:
            # a short option's value written against it (-f/etc/x, -aF~/y)
            values = [word[i:] for i in range(2, len(word)) if word[i] in "/~."]
        else:
            values = [word]
        if any(outside(value, cwd, root, strict=False) for value in values):
            return True
    return False


def outside(value: str, cwd: Path | None, root: Path, *, strict: bool = True) -> bool:
    """Whether ``value`` names a place outside ``root``; ``strict``: every absolute path
    counts (git's words are paths), else one whose first folder exists."""
    if value.startswith("file:"):
        value = value.removeprefix("file:").removeprefix("//")
    elif "://" in value or "::" in value:
        return False
    colon, slash = value.find(":"), value.find("/")
    if colon >= 0 and (slash < 0 or colon < slash):
        return False  # host:path, or a revision's path (HEAD:src/x)
    if not value or value in _HARMLESS:
        return False
    if value.startswith("/") and not strict:
        first = value.lstrip("/").split("/", 1)[0]
        if first and not os.path.lexists("/" + first):
            return False  # /api/v1, a sed address: no such place
    looks = value.startswith(("/", "~")) or ".." in value.split("/")
    if cwd is None:
        return looks
    try:
        where = os.path.normpath(cwd / Path(value).expanduser())
    except RuntimeError:  # ~user with no such user, or no home: not known, so outside
        return True
    if looks and not beneath(where, os.path.normpath(root)):
        return True
    # ... or through a link inside the project (a repository can carry one to /home/...)
    return not beneath(os.path.realpath(where), os.path.realpath(root))


def outside_folder(folder: Path | None, root: Path) -> bool:
    """Whether a command runs in a folder outside ``root`` (None: one not known)."""
    if folder is None:
        return True
    lexical = os.path.normpath(folder)
    if not beneath(lexical, os.path.normpath(root)):
        return True
    return not beneath(os.path.realpath(lexical), os.path.realpath(root))


def beneath(path: str, top: str) -> bool:
    return path == top or path.startswith(top.rstrip("/") + "/")
