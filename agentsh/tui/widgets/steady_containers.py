"""Containers that do not redo, at each streamed frame, work whose result has not changed.

Each frame of a streamed reply grows the reply's markdown body, so the body, the reply and
the chat around them change size, and Textual redid two things for each of them:

* A container whose height is ``auto`` is arranged twice: at its width alone, to measure its
  height, then at its width and that height, to place its children. The second arrangement
  missed every child's cached box model (the container's size is part of the key), so each of
  the reply's 60-100 block widgets was measured again at every frame. :class:`MeasuredArrangement`
  places the children with the measuring arrangement: the same placements whenever no child's
  height depends on the container's (no ``fr``, ``%`` or ``h`` heights, no docked children).
* A container whose size changed draws every visible row of itself again (the chat, the reply
  and its body: 40 rows each, at each frame), though a container draws only its background,
  padding and borders, so every row between its top and bottom edges is drawn alike:
  :class:`AlikeRows` draws one of them and repeats it.

Together: a late streamed frame's CPU 42-45 ms, against 48-83 ms without them in the same runs
(``benchmarks/bench_stream_frames.py``).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from textual.css.scalar import Unit
from textual.geometry import Region, Size
from textual.widget import Widget

if TYPE_CHECKING:
    from textual.css.scalar import Scalar
    from textual.layout import DockArrangeResult
    from textual.strip import Strip

    _Mixin = Widget
else:
    # Plain mixins at run time, listed before the widget class they serve: Textual takes a
    # class's CSS type names and default CSS from its first base that is a widget class.
    _Mixin = object

# Height units that do not depend on the container's height (``w`` is its width).
_HEIGHT_FREE = frozenset({Unit.CELLS, Unit.AUTO, Unit.WIDTH, Unit.VIEW_WIDTH, Unit.VIEW_HEIGHT})


class MeasuredArrangement(_Mixin):
    """A vertical container of ``auto`` height, placing its children as it measured them."""

    # The measuring arrangement last found to place the children as Textual would: Textual
    # makes a new one whenever a child comes, goes or asks for a layout (a change of its
    # height or display does), so the children are looked at again only then, not at every
    # call (a frame asks for a reply's arrangement dozens of times).
    _placing: DockArrangeResult | None = None

    def arrange(self, size: Size, optimal: bool = False) -> DockArrangeResult:
        if size.height and self.styles.is_auto_height:
            measured = super().arrange(Size(size.width, 0), optimal)  # cached since the measure
            if measured is self._placing or self._measured_is_placed():
                self._placing = measured
                return measured
        return super().arrange(size, optimal)

    def _measured_is_placed(self) -> bool:
        """A vertical layout, and no shown child sized or docked by the container's height
        (the container's own ``auto`` height is checked by :meth:`arrange`)."""
        layout = self.styles.layout
        if layout is None or layout.name != "vertical":
            return False
        for child in self._nodes:
            if not child.display:
                continue
            styles = child.styles
            heights = (styles.height, styles.min_height, styles.max_height)
            if styles.is_docked or styles.is_split or not all(map(_height_free, heights)):
                return False
        return True


def _height_free(scalar: Scalar | None) -> bool:
    return scalar is None or scalar.unit in _HEIGHT_FREE


class AlikeRows(_Mixin):
    """A container whose rows between its top and bottom edges are drawn once and repeated."""

    def render_lines(self, crop: Region) -> list[Strip]:
        if not self._rows_alike():
            return super().render_lines(crop)
        gutter = self.styles.gutter
        height = self.region.height
        # Rows [first, last) are alike: no border, outline or padding row is among them.
        first, last = max(gutter.top, 1), height - max(gutter.bottom, 1)
        top, bottom = crop.y, crop.bottom
        alike_from = min(max(first, top), bottom)
        alike_to = max(min(last, bottom), alike_from)
        x, width = crop.x, crop.width
        render = self._styles_cache.render_widget
        lines: list[Strip] = []
        if alike_from > top:
            lines += render(self, Region(x, top, width, alike_from - top))
        if alike_to > alike_from:
            lines += render(self, Region(x, alike_from, width, 1)) * (alike_to - alike_from)
        if bottom > alike_to:
            lines += render(self, Region(x, alike_to, width, bottom - alike_to))
        return lines

    def _rows_alike(self) -> bool:
        """Its content is Textual's blank container content (no keyline, no own render),
        and it has no outline (Textual draws an outlined, padded widget's bottom edge as its
        top one when it draws them in one go: drawn apart they would differ from Textual's)."""
        cls = type(self)
        styles = self.styles
        return (
            self.is_container
            and not self.BLANK
            and cls.render is Widget.render
            and cls.render_line is Widget.render_line
            and str(styles.keyline[0]) == "none"  # as Widget.render tells
            and all(edge in ("", "none") for edge, _color in styles.outline)
        )
