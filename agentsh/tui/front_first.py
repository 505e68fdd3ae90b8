"""A paint draws each cell once: what the widgets in front cover is not drawn behind them.

Textual paints a screen front to back: for each visible widget, nearest first, it renders the
widget's rows in the region to paint and cuts every row at the screen's cuts (each widget's
left and right edges), and the first piece drawn for a cut wins. The widgets behind are still
rendered and cut, row by row, although every one of their pieces is then thrown away. While a
reply streams, the chat follows its end, so each frame paints the chat's whole height, and the
chat, the reply, its body and the screen behind them were cut at every row for nothing: the
dirty regions of one frame summed to 4-6 times the screen's cells.

:class:`FrontFirstCompositor` cuts a widget's row only where the row still has a piece to
fill, and renders a widget only when one of its rows does. The pieces kept are the very ones
Textual keeps (``tests/tui/test_front_first.py`` compares the two on real screens). While a
reply streams into the app's chat, its paints took 16-29 % less CPU, and the UI thread's
stretches of more than 50 ms fell from 24 to 6 in 12 runs
(``tests/tui/test_stream_render_loop.py``'s probe, both counts with the Pilot polls that test
used then, which added stretches of their own).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, cast

from textual._compositor import Compositor

if TYPE_CHECKING:
    from collections.abc import Mapping

    from textual.geometry import Region
    from textual.strip import Strip


class FrontFirstCompositor(Compositor):
    """The compositor of :class:`agentsh.tui.one_pass_layout.OnePassScreen`."""

    def _render_chops(
        self, crop: Region, is_rendered_line: Callable[[int], bool]
    ) -> Sequence[Mapping[int, Strip]]:
        cuts = self.cuts
        chops: list[dict[int, Strip | None]] = [dict.fromkeys(line[:-1]) for line in cuts]
        unfilled = [len(line) - 1 for line in cuts]  # pieces each row still waits for
        crop_overlaps = crop.overlaps
        for widget, (region, clip) in self.visible_widgets.items():  # nearest first
            if not crop_overlaps(clip):
                continue
            shown = region.intersection(clip)
            left, right = shown.column_span
            rows: list[tuple[int, list[int]]] = []
            for y in shown.line_range:
                if not unfilled[y] or not is_rendered_line(y):
                    continue
                row_cuts = [cut for cut in cuts[y] if left <= cut <= right]
                row = chops[y]
                if any(row[cut] is None for cut in row_cuts[:-1]):
                    rows.append((y, row_cuts))
            if not rows:
                continue
            strips = widget.render_lines(shown.translate(-region.offset))
            for y, row_cuts in rows:
                if y - shown.y >= len(strips):
                    break  # a widget that drew fewer rows than it has (Textual stops there too)
                row = chops[y]
                pieces = strips[y - shown.y].divide([cut - shown.x for cut in row_cuts[1:]])
                for cut, piece in zip(row_cuts, pieces, strict=False):
                    if row[cut] is None:
                        row[cut] = piece
                        unfilled[y] -= 1
        return cast("Sequence[Mapping[int, Strip]]", chops)
