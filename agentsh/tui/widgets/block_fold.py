"""Markdown blocks far above the view are taken out of the layout while the chat follows its end.

Textual lays out every displayed widget of the screen at every frame, and a markdown reply is a
widget per block (a list item, a paragraph, a fence: a 2,000-token reply is about 160 of
them), so a streamed frame cost more the longer the reply and the chat above it grew
(``benchmarks/bench_stream_frames.py``). While the chat follows its end, a reply's leading
blocks that ended more than a screen above the view are hidden (``display: none``: still
mounted, skipped by the layout) and the body's top padding grows by exactly the rows they
took, so every block below them, the reply, the chat's height and its scroll position stay
where they were: what is on screen is the same cells. The last block is never hidden (it is
the one a stream grows, and it keeps the padding's arithmetic simple: the first shown block's
top margin still applies below the padding).

The chat folds as a streamed frame starts (:class:`FoldingView`), from the last layout: the
fold and the frame's new text then cost one layout. It shows the blocks again
(:meth:`BlockFold.unfold`) before the reader could see the place they were in: when the view
leaves the end, when the chat's width changes (block heights depend on it), when the theme
changes, and before a body's text is replaced.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Protocol, runtime_checkable

if TYPE_CHECKING:
    from textual.widgets import Markdown
    from textual.widgets._markdown import MarkdownBlock


@runtime_checkable
class FoldingView(Protocol):
    """A scrolling view whose replies fold (the chat): a streamed frame asks it to fold just
    before it appends, so the fold and the frame are laid out in one pass, not two."""

    def fold_far_replies(self) -> None: ...


class BlockFold:
    """The hidden leading blocks of one markdown body, and the rows they took."""

    __slots__ = ("blocks", "rows")

    def __init__(self) -> None:
        self.blocks: list[MarkdownBlock] = []  # hidden, in order: always a leading run
        self.rows = 0  # the body's top padding added in their place

    @property
    def folded(self) -> bool:
        return bool(self.blocks)

    def fold_above(self, body: Markdown, limit_y: int) -> bool:
        """Hide the leading blocks whose bottom is above screen row ``limit_y`` (from the
        last layout); True if all but the last block are hidden (nothing more to fold)."""
        # Imported here: a body exists, so Markdown is loaded; the chat module (and the first
        # frame) must not pay for markdown-it and Textual's Markdown at import.
        from textual.widgets._markdown import MarkdownBlock

        blocks = [child for child in body.children if isinstance(child, MarkdownBlock)]
        start = len(self.blocks)
        if start >= len(blocks) - 1:
            return True
        end = start
        while end < len(blocks) - 1:
            region = blocks[end].region
            if not region or region.bottom >= limit_y:
                break
            end += 1
        if end == start:
            return False
        shown = blocks[end]  # the first block left in the layout
        if not shown.region:
            return False
        # Where the body's content starts without the padding added so far; the shown
        # block's top margin still applies after the padding, as it applied after the
        # hidden block above it (margins collapse to the larger: both are that gap).
        content_top = body.content_region.y - self.rows
        rows = shown.region.y - content_top - shown.styles.margin.top
        if rows < 0:  # a layout this arithmetic does not describe: leave it as it is
            return False
        base = body.styles.padding
        if self.rows:
            base = base._replace(top=base.top - self.rows)
        for block in blocks[start:end]:
            block.display = False
        self.blocks.extend(blocks[start:end])
        self.rows = rows
        body.styles.padding = base._replace(top=base.top + rows)
        return end >= len(blocks) - 1

    def unfold(self, body: Markdown | None) -> None:
        """Put every hidden block back in the layout and the padding back as it was."""
        if not self.blocks:
            return
        for block in self.blocks:
            block.styles.clear_rule("display")
            block.refresh(layout=True)
        self.blocks = []
        self.rows = 0
        if body is not None:
            body.styles.clear_rule("padding")
            body.refresh(layout=True)
