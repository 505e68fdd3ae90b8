"""Text that reaches a terminal outside the TUI: control sequences made visible, never run.

A model reply, a file the model read or a project's AGENTS.md may hold terminal control
sequences: OSC 52 writes the clipboard, CSI 2J clears the screen, OSC 8 hides a link behind
innocent text, a lone CR or backspaces overwrite what was printed before. agentsh prints such
text in ``-p`` text output, ``sessions show``, the Markdown export and its own one-line messages;
there, every C0 and C1 control character except newline and tab is shown as a visible escape
(``\\x1b``, ``\\x9b``, ``\\r``), so the text is readable and nothing is executed. Carriage returns
of a CRLF line ending are dropped rather than shown. The TUI draws through Textual, which passes ESC
through: :mod:`agentsh.tui.terminal_safety` drops control characters from every line it draws.
"""

from __future__ import annotations

import contextlib
import re
import sys
from collections.abc import Iterable, Iterator
from typing import Any, TextIO

# C0 controls but tab and newline, DEL, the C1 controls, and the bidirectional overrides
# that reorder what a reader sees (the "Trojan Source" characters).
_CONTROL = re.compile("[\x00-\x08\x0b-\x1f\x7f-\x9f\u202a-\u202e\u2066-\u2069]")
_NAMES = {"\r": "\\r", "\x1b": "\\x1b", "\x07": "\\a", "\x08": "\\b", "\x0c": "\\f", "\x0b": "\\v"}


def _shown(match: re.Match[str]) -> str:
    return _escape(match.group())


def _escape(char: str) -> str:
    name = _NAMES.get(char)
    if name is not None:
        return name
    code = ord(char)
    if code < 0x100:
        return f"\\x{code:02x}"
    return f"\\u{code:04x}" if code < 0x10000 else f"\\U{code:08x}"


def printable(text: str) -> str:
    """``text`` safe to write to a terminal: control characters shown as escapes."""
    if text.isprintable() or not _CONTROL.search(text):
        return text
    return _CONTROL.sub(_shown, text.replace("\r\n", "\n"))


# What draws as nothing, or as a blank that is not whitespace (a terminal does not fold it):
# zero-width and format characters, fillers, the Braille blank, invisible tag characters.
# Padding made of them pushes the tail of a command out of the box that shows it. Not the
# joiner and the marks that emoji and Arabic, Hebrew or Persian text need (U+200C-200F).
_INVISIBLE = re.compile(
    "[\u00ad\u034f\u061c\u115f\u1160\u17b4\u17b5\u180e\u200b\u2028\u2029"
    "\u2060-\u2064\u206a-\u206f\u2800\u3164\ufeff\uffa0\ufff9-\ufffb\U000e0000-\U000e007f]"
)


def exact(text: str) -> str:
    """``printable``, with invisible and blank-looking characters shown as escapes too: for
    what the user approves, which must read as what runs."""
    shown = printable(text)
    if shown.isascii():
        return shown
    return _INVISIBLE_RUN.sub(_shown_run, shown)


_INVISIBLE_RUN = re.compile(f"({_INVISIBLE.pattern})\\1*")


def _shown_run(match: re.Match[str]) -> str:
    """One escape, and how many there are when it repeats: ``\\u3164×3000``."""
    count = len(match.group())
    one = _escape(match.group(1))
    return one if count == 1 else f"{one}×{count}"


def one_line(text: str) -> str:
    """``printable`` for a one-line message: line breaks shown too."""
    return printable(text).replace("\n", "\\n")


# What JSON may carry raw but a terminal acts on: the C1 controls (U+009B is CSI, U+009D OSC)
# and the bidirectional overrides. JSON escapes C0 itself.
_JSON_UNSAFE = re.compile("[\x80-\x9f\u202a-\u202e\u2066-\u2069]")


def json_safe(text: str) -> str:
    """JSON text with the characters above written as ``\\uXXXX`` escapes: the same JSON
    to a parser (they can only occur inside strings), inert on a terminal."""
    if text.isascii():
        return text
    return _JSON_UNSAFE.sub(lambda m: f"\\u{ord(m.group()):04x}", text)


# Colour, cursor and title sequences (CSI, terminated OSC, two-byte ESC): noise to the model
# and garbage in a plain-text view. An unterminated OSC stays as text, so no output is lost.
_ANSI = re.compile(r"\x1b\[[0-?]*[ -/]*[@-~]|\x1b\][^\x07\x1b]*(?:\x07|\x1b\\)|\x1b[@-Z\\-_]")

# Every escape sequence, whole, for a short field that someone else wrote (a session name):
# CSI in its 7- and 8-bit forms, the string sequences (OSC 52 clipboard writes, OSC 8 links,
# DCS...) up to their terminator or the end, and any other ESC sequence.
_ANY_SEQUENCE = re.compile(
    r"(?:\x1b\[|\x9b)[0-?]*[ -/]*[@-~]?"
    r"|(?:\x1b[\]PX^_]|[\x90\x98\x9d\x9e\x9f]).*?(?:\x07|\x1b\\|\x9c|$)"
    r"|\x1b[ -/]*[0-~]?",
    re.DOTALL,
)


def strip_ansi(text: str) -> str:
    """``text`` without the terminal sequences commands print (colours, cursor moves, titles)."""
    return _ANSI.sub("", text)


def without_sequences(text: str, replacement: str = " ") -> str:
    """``text`` with every escape sequence and what it carried replaced by ``replacement``."""
    return _ANY_SEQUENCE.sub(replacement, text)


class SafeWriter:
    """A text stream that makes control characters visible on the way to ``target``;
    ``buffer`` (raw bytes) and everything else are the target's own."""

    def __init__(self, target: TextIO, *, json: bool = False) -> None:
        self._target = target
        self._safe = json_safe if json else printable

    def write(self, text: str) -> int:
        self._target.write(self._safe(text))
        return len(text)

    def writelines(self, lines: Iterable[str]) -> None:
        for line in lines:
            self.write(line)

    def __getattr__(self, name: str) -> Any:
        return getattr(self._target, name)


@contextlib.contextmanager
def terminal_safe(*, stdout: bool = True) -> Iterator[None]:
    """Within the block, what is printed to stderr (and stdout) shows control characters
    instead of sending them; with ``stdout=False`` stdout carries JSON, whose C0 controls
    are escaped already and whose C1 controls and bidi overrides :func:`json_safe` escapes."""
    saved = sys.stdout, sys.stderr
    sys.stderr = SafeWriter(sys.stderr)
    sys.stdout = SafeWriter(sys.stdout, json=not stdout)
    try:
        yield
    finally:
        sys.stdout, sys.stderr = saved
