"""How the file tools reach a file: binary sniffing, OS errors as sentences, the regular-file
check, and the bytes an editor holds for it.

Shared by ``read`` (:mod:`agentsh.tools.file_read`) and ``write``/``edit``
(:mod:`agentsh.tools.files`), so the three answer the same way about the same file: a PNG is
named, not dumped; a FIFO is refused before it blocks; an errno becomes a sentence naming the
path. With a :class:`~agentsh.tools.host.ToolHost` (an editor over ACP) the text of a file in the
session's folder comes from the editor, unsaved changes included.
"""

from __future__ import annotations

import asyncio
import codecs
import os
import stat
from pathlib import Path

from agentsh.tools.base import (
    ToolContext,
    ToolError,
    ToolResult,
    display_path,
    missing_path_message,
)
from agentsh.tools.host import hosted_path

# Magic numbers of the binary files a model most often tries to read, for a clearer message.
_SIGNATURES: tuple[tuple[bytes, str], ...] = (
    (b"\x89PNG\r\n\x1a\n", "PNG image"),
    (b"\xff\xd8\xff", "JPEG image"),
    (b"GIF87a", "GIF image"),
    (b"GIF89a", "GIF image"),
    (b"%PDF-", "PDF document"),
    (b"PK\x03\x04", "zip archive"),
    (b"\x7fELF", "ELF executable"),
    (b"\x1f\x8b", "gzip archive"),
    (b"SQLite format 3\x00", "SQLite database"),
    (b"\xca\xfe\xba\xbe", "Java class or Mach-O binary"),
)

# Bytes that text files do not contain (everything below 0x20 but tab, LF, FF, CR, ESC, BS).
_CONTROL_BYTES = frozenset(range(32)) - {8, 9, 10, 12, 13, 27}

# A file that is not UTF-8 is still shown (with U+FFFD for the bad bytes) when it reads like
# text in a legacy 8-bit encoding: few control bytes, and bad bytes scattered among ASCII (an
# accented letter here and there), not making up a large share of it.
_CONTROL_RATIO = 0.10
_UNDECODABLE_RATIO = 0.30


def sniff_binary(head: bytes) -> str | None:
    """What kind of binary file starts with ``head``, or None when it looks like text."""
    for signature, kind in _SIGNATURES:
        if head.startswith(signature):
            return kind
    if b"\x00" in head:
        return "binary data"
    if sum(1 for byte in head if byte in _CONTROL_BYTES) > len(head) * _CONTROL_RATIO:
        return "binary data"
    try:
        codecs.getincrementaldecoder("utf-8")().decode(head, final=False)
    except UnicodeDecodeError:
        text = head.decode("utf-8", "replace")
        if text.count("\ufffd") > len(text) * _UNDECODABLE_RATIO:
            return "binary data"
    return None


def os_error_message(exc: OSError, shown: str) -> str:
    """An OSError as a sentence naming the path (no errno numbers, no traceback)."""
    match exc:
        case PermissionError():
            return f"Permission denied: {shown}."
        case IsADirectoryError():
            return f"{shown} is a directory, not a file."
        case NotADirectoryError():
            return f"A part of {shown} is a file, not a folder."
        case FileNotFoundError():
            return f"Not found: {shown}."
        case _:
            return f"Cannot access {shown}: {exc.strerror or exc}."


def error_result(exc: ToolError | OSError, shown: str) -> ToolResult:
    """A failed check or OS error as the error result the model reads."""
    text = str(exc) if isinstance(exc, ToolError) else os_error_message(exc, shown)
    return ToolResult(text, is_error=True)


def no_link_out(path: Path, root: Path, cwd: Path) -> None:
    """A ToolError when ``path`` names a place inside the project ``root`` but a symlink on
    the way leads out of it: a cloned repository's ``docs/setup.md`` linked to
    ``~/.ssh/id_ed25519`` must not pass for a project file. The message names the target, so
    a file the user wants is read by its own path, visibly."""
    if not path.is_relative_to(root):
        return  # asked for by a path outside the project: what it says is what it is
    real = Path(os.path.realpath(path))
    if real.is_relative_to(Path(os.path.realpath(root))):
        return
    shown = display_path(path, cwd)
    raise ToolError(
        f"{shown} leads out of the project through a symlink (to {real}): not followed. If "
        "the user wants that file or folder, name it by its own path."
    )


def regular_file(path: Path, cwd: Path) -> Path:
    """``path`` if it is a regular file; otherwise a ToolError saying what it is instead."""
    shown = display_path(path, cwd)
    try:
        mode = path.stat().st_mode
    except FileNotFoundError:
        raise ToolError(missing_path_message(path, cwd)) from None
    except OSError as exc:
        raise ToolError(os_error_message(exc, shown)) from None
    if stat.S_ISDIR(mode):
        raise ToolError(f"{shown} is a directory, not a file. Use ls to list it.")
    if not stat.S_ISREG(mode):
        # A FIFO or a device would block the read forever or never end.
        raise ToolError(f"{shown} is not a regular file (a pipe, socket or device).")
    return path


def read_regular(path: Path, shown: str) -> bytes | None:
    """The bytes of the regular file ``path``, None when nothing is there; a ToolError for a
    FIFO or a device (open() of a FIFO waits forever for a writer, ``/dev/zero`` never ends:
    either hung agentsh past Ctrl+C). Checked on the opened descriptor, so a FIFO swapped in
    after a check is refused too."""
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | os.O_CLOEXEC)
    except FileNotFoundError:
        return None
    with os.fdopen(fd, "rb") as handle:
        mode = os.fstat(fd).st_mode
        if stat.S_ISDIR(mode):
            raise ToolError(f"{shown} is a directory, not a file.")
        if not stat.S_ISREG(mode):
            raise ToolError(f"{shown} is not a regular file (a pipe, socket or device).")
        return handle.read()


def decode_utf8(data: bytes) -> str | None:
    """``data`` as UTF-8 text, or None when it is not."""
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError:
        return None


async def held_bytes(path: Path, ctx: ToolContext) -> bytes | None:
    """The file's content as the host holds it (an editor's unsaved buffer), or None when the
    disk is read instead: no host for it, no such regular file, or a binary one (the host
    speaks text; the local sniff decides)."""
    where = hosted_path(path, ctx.cwd, ctx.host, write=False)
    if where is None or ctx.host is None:
        return None
    head = await asyncio.to_thread(_head, path, ctx.settings.tools.binary_sniff_bytes)
    if head is None or sniff_binary(head) is not None:
        return None
    return (await ctx.host.read_text(where)).encode("utf-8")


def _head(path: Path, size: int) -> bytes | None:
    """The start of a regular file; None when there is none at ``path``."""
    if not path.is_file():
        return None
    with path.open("rb") as f:
        return f.read(size)
