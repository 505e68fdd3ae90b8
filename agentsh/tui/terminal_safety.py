"""Text on screen never reaches the terminal as control sequences.

Textual removes only BEL, BS, VT, FF and CR from the text it draws: an ESC in a file the model
read, a command's output, a reply or a file name went to the terminal as it was, so a README
holding ``ESC ] 52 ; c ; ...`` wrote the user's clipboard (OSC 52), ``ESC ] 0 ;`` set the window
title, and CSI sequences moved the cursor over the screen. Every line Textual writes is a
:class:`~textual.strip.Strip` rendered by ``Strip.render``; :func:`install` makes that drop the
control characters (C0 but tab, DEL, C1) from the *text* of its segments first. They take no
cell, so the layout is unchanged; the sequences Textual itself makes for styles, links and
cursor moves are not text and are kept.

The bidirectional overrides and isolates (U+202A-202E, U+2066-2069) are dropped the same way:
a terminal that applies the Unicode bidi algorithm reorders the text around them, so a reply, a
file or a command's output could show the user another order than its bytes ("Trojan Source").
They take no cell either. Right-to-left letters and the marks real Arabic and Hebrew text uses
(RLM, LRM, ALM) are kept, so such text displays as before. Where the user decides (the approval
prompt, a tool's header) :func:`agentsh.termsafe.printable` shows all of these as escapes
before the layout is made.
"""

from __future__ import annotations

import re
from typing import TYPE_CHECKING

from rich.segment import Segment
from textual.strip import Strip

if TYPE_CHECKING:
    from rich.console import Console

_CONTROL = re.compile("[\x00-\x08\x0a-\x1f\x7f-\x9f\u202a-\u202e\u2066-\u2069]")


def _inert(segments: list[Segment]) -> list[Segment] | None:
    """``segments`` with the control characters and bidi overrides dropped from their text,
    or None when there is none (the common case, checked in C by ``str.isprintable``)."""
    if all(text.isprintable() for text, _style, _control in segments):
        return None
    cleaned = [
        Segment(_CONTROL.sub("", text), style, control) if control is None else segment
        for segment in segments
        for text, style, control in (segment,)
    ]
    return None if cleaned == segments else cleaned


def install() -> None:
    """Make every rendered strip drop control characters from its text (idempotent)."""
    render = Strip.render
    if getattr(render, "agentsh_inert", False):
        return

    def inert_render(self: Strip, console: Console) -> str:
        if self._render_cache is None:
            cleaned = _inert(self._segments)
            if cleaned is not None:
                self._segments = cleaned
        return render(self, console)

    inert_render.agentsh_inert = True  # type: ignore[attr-defined]
    Strip.render = inert_render  # type: ignore[method-assign]
