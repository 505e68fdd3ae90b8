"""Control sequences in text the TUI draws (a file read, a command's output, a reply) never
reach the terminal: Textual passed ESC through, so OSC 52 wrote the clipboard and OSC 0 the
window title (seen in tmux: the pane title changed)."""

from __future__ import annotations

from rich.console import Console
from rich.segment import Segment
from rich.style import Style
from textual.strip import Strip

import agentsh.tui.app  # noqa: F401  (installs agentsh.tui.terminal_safety)


def test_control_characters_in_drawn_text_are_dropped_and_styles_kept() -> None:
    console = Console(color_system="truecolor", force_terminal=True, width=80)
    text = "a\x1b]52;c;cHduZWQ=\x1b\\ b\x9b2J c\x1b]0;TITLE\x07 d\x00e\x7f"
    strip = Strip([Segment(text), Segment("red", Style(color="red"))])
    width = strip.cell_length
    out = strip.render(console)
    assert "\x1b]" not in out and "\x9b" not in out and "\x07" not in out and "\x00" not in out
    assert "]52;c;cHduZWQ=" in out and "]0;TITLE" in out  # shown, inert
    assert "\x1b[31mred" in out  # the style's own sequence stays
    assert strip.cell_length == width  # control characters take no cell: layout unchanged


def test_plain_text_is_rendered_as_before() -> None:
    console = Console(color_system="truecolor", force_terminal=True, width=80)
    strip = Strip([Segment("plain · ünïcode 中文\ttab", Style(bold=True))])
    assert "plain · ünïcode 中文\ttab" in strip.render(console)


# Trojan Source: the bidirectional overrides and isolates make a terminal that applies the
# Unicode bidi algorithm show text in another order than its bytes (the approval prompt and
# tool header show them as escapes; everywhere else the TUI draws, they are dropped).
BIDI = "\u202a\u202b\u202c\u202d\u202e\u2066\u2067\u2068\u2069"


def test_bidi_overrides_and_isolates_in_drawn_text_are_dropped() -> None:
    console = Console(color_system="truecolor", force_terminal=True, width=80)
    text = 'access = "user\u202e \u2066// admin?\u2069 \u2066" # comment'
    strip = Strip([Segment(text), Segment("\u2067x\u2069", Style(color="red"))])
    width = strip.cell_length
    out = strip.render(console)
    assert not any(ch in out for ch in BIDI)
    assert 'access = "user // admin? " # comment' in out  # the bytes' order, nothing lost
    assert strip.cell_length == width


def test_right_to_left_text_still_displays() -> None:
    console = Console(color_system="truecolor", force_terminal=True, width=80)
    # Arabic and Hebrew, with the marks real RTL text uses (RLM, LRM, ALM) and an emoji ZWJ.
    text = "مرحبا بالعالم \u200fשלום עולם\u200e \u061c👩\u200d💻"
    assert text in Strip([Segment(text)]).render(console)
