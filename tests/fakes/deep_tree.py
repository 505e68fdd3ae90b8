"""Folders nested past Python's recursion limit (``root/d/d/.../d/f.txt``), made and removed
one level at a time: ``os.makedirs`` and ``shutil.rmtree`` both recurse once per level.

Remove every tree made here before the test ends (:func:`remove_deep_trees` in a fixture):
pytest's own clean-up of old temporary folders is an ``rmtree``, and a tree left in place made
a later run end with a RecursionError printed under its results.
"""

from __future__ import annotations

import os
import shutil
from pathlib import Path

#: deeper than Python's default recursion limit (1,000), shallower than PATH_MAX (4,096)
DEPTH = 1_200
DEEP = "/".join(["d"] * DEPTH)


def make_deep(root: Path, text: bytes) -> None:
    """``root/d/d/.../d/f.txt``, made one folder at a time."""
    fd = os.open(root, os.O_RDONLY)
    try:
        for _ in range(DEPTH):
            if not os.path.lexists(f"/proc/self/fd/{fd}/d"):
                os.mkdir("d", dir_fd=fd)
            inner = os.open("d", os.O_RDONLY, dir_fd=fd)
            os.close(fd)
            fd = inner
        out = os.open("f.txt", os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o644, dir_fd=fd)
        os.write(out, text)
        os.close(out)
    finally:
        os.close(fd)


def read_deep(root: Path) -> bytes:
    fd = os.open(root, os.O_RDONLY)
    for _ in range(DEPTH):
        inner = os.open("d", os.O_RDONLY, dir_fd=fd)
        os.close(fd)
        fd = inner
    try:
        out = os.open("f.txt", os.O_RDONLY, dir_fd=fd)
        try:
            return os.read(out, 100)
        finally:
            os.close(out)
    finally:
        os.close(fd)


def remove_deep(root: Path) -> None:
    """Delete ``root/d/d/...`` from the bottom up."""
    fds = [os.open(root, os.O_RDONLY | os.O_DIRECTORY)]
    try:
        while True:
            try:
                fds.append(
                    os.open("d", os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW, dir_fd=fds[-1])
                )
            except (FileNotFoundError, NotADirectoryError):
                break
        for depth in range(len(fds) - 1, 0, -1):
            for name in os.listdir(fds[depth]):  # noqa: PTH208 (a folder fd)
                if name == "d":
                    continue  # the level below, gone already
                try:
                    os.unlink(name, dir_fd=fds[depth])
                except IsADirectoryError:
                    shutil.rmtree(name, dir_fd=fds[depth])  # a shallow folder beside the chain
            os.rmdir("d", dir_fd=fds[depth - 1])
    finally:
        for fd in fds:
            os.close(fd)


def remove_deep_trees(tmp_path: Path) -> None:
    """Remove the deep trees made in ``tmp_path`` or in a folder directly in it."""
    for folder in [tmp_path, *(p for p in tmp_path.iterdir() if p.is_dir() and not p.is_symlink())]:
        if (folder / "d").is_dir() and not (folder / "d").is_symlink():
            remove_deep(folder)
