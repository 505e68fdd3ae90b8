"""Message widgets of the transcript: user and assistant messages, notes, compactions, queue.

A streaming assistant reply paints in frames: fragments are gathered and appended to its
markdown body at most every :data:`FLUSH_S` (each frame mounts the new blocks, then relays out
and repaints the screen: most of a frame's cost is Textual's). While the user types, a frame
starts in a pause between keys that it fits in, and at the latest after the UI loop was left
to keys for three times as long as the last frame took, so painting then takes at most a
quarter of it however slow or busy the machine is; while nobody types,
the rest is at most :data:`REST_MAX_S`, so the reply keeps up with the stream. A frame takes
all the text that has arrived, up to :data:`FRAME_CHARS` (:data:`TYPING_FRAME_CHARS` while the
user types): only a burst is painted over several frames, each on screen before the next, with
keys handled between them; each append re-parses only the growing last block (Textual's
``Markdown.append``).
Message bodies are built by :mod:`agentsh.tui.widgets.markdown_body`.
"""

from __future__ import annotations

import asyncio
import contextlib
import re
import time
from dataclasses import dataclass
from typing import TYPE_CHECKING, ClassVar, cast

from textual import events
from textual.app import ComposeResult
from textual.binding import BindingType
from textual.containers import Vertical
from textual.content import Content
from textual.message import Message
from textual.widgets import Static

from agentsh.events import Tier
from agentsh.tui.keys import KeyScope, bindings_for
from agentsh.tui.projection import TURN_CANCELLED
from agentsh.tui.status_format import human_tokens
from agentsh.tui.widgets.block_fold import BlockFold, FoldingView
from agentsh.tui.widgets.markdown_body import markdown
from agentsh.tui.widgets.steady_containers import AlikeRows, MeasuredArrangement
from agentsh.tui.widgets.typing_clock import key_gap, last_key, typing

FLUSH_S = 1 / 10  # streamed text reaches the screen in frames at most this often (10 a second)
# The most of the UI loop frames may take: after a frame, the loop is left to keys (and the
# rest of the app) for PAINT_REST times as long as the frame took, append to screen.
PAINT_SHARE = 1 / 4
PAINT_REST = (1 - PAINT_SHARE) / PAINT_SHARE
# ... while the user types. While nobody does, the rest is at most this: at load 10-17 a frame
# took half a second or more waiting for a core, and resting three times as long painted a
# reply streamed at 1,000 tokens/s far slower than it came (6,000 of its 8,000 characters
# still unpainted when it ended, then seconds of catching up); but keys typed meanwhile
# waited 7 times longer with the short rest (median 0.8 s instead of 0.11 s).
REST_MAX_S = FLUSH_S
# The most text one frame appends while nobody types. A frame takes all the text that has
# arrived: most of its cost is the same whatever it appends (the chat laid out and drawn again:
# ~40 ms of CPU), the rest grows with the blocks it mounts (~37 ms per 1,000 characters), so
# fewer, fuller frames paint a reply for less. Capped at 1,600, a reply streamed at 1,000
# tokens/s fell seconds behind on a loaded machine, and its last word showed 2-4 s after its
# last chunk. Only a burst longer than this (a long reply arriving at once) is painted over
# several frames, each on screen before the next, with keys handled between them.
FRAME_CHARS = 8_000
# ... and while the user types: frames then rest three times as long as they took, so each
# would carry more text, take longer and rest longer still; a bounded frame keeps each stall
# a key can meet short (the reply catches up once the typing stops). At 1,600 a frame's
# append and layout took 50-130 ms on the shared 2-core machine, and the keys that met one
# waited as long (keystroke p99 182-199 ms; 115-119 ms at 400, in the same runs).
TYPING_FRAME_CHARS = 400
FRAME_GAP_S = 0.005  # between the frames that paint what is left when a reply ends
# While the user types, a frame starts in a pause between two keys, when one is long enough:
# at least this long after the last key (its echo is painted first), and when, at the user's
# pace, the next key is not due before a frame as long as the last one would end. Until then
# it waits, looking again every PAUSE_POLL_S, but no longer than the rest above allows: keys
# typed back to back leave no such pause. With the rest alone (and frames of 400), a reply
# streamed at 1,000 tokens/s while a person typed (about 8 keys a second) showed its last word
# 7.4-8.0 s after its last chunk; 2.0-3.3 s now (bench_stream_keys --key-gap 0.1; frames of
# 1,600 and no pauses: 0.3-0.4 s, but keystroke p99 240-314 ms against 67-93 ms now).
ECHO_WAIT_S = 0.015
PAUSE_POLL_S = 0.01

if TYPE_CHECKING:
    from textual.timer import Timer
    from textual.widgets import Markdown


_FENCE_OPEN = re.compile(r"^ {0,3}(?P<fence>`{3,}|~{3,})(?P<info>.*)$")


@dataclass(frozen=True, slots=True)
class TextPart:
    """A stretch of what the user typed: shown as is, or (``fence``) a fenced code block."""

    text: str
    fence: bool = False


def user_text_parts(text: str) -> list[TextPart]:
    """``text`` cut into plain stretches and the fenced code blocks the user closed.

    Only a fence that is opened and closed (CommonMark's rules: up to three spaces of indent,
    at least three backticks or tildes, closed by a run of the same character at least as
    long) counts; an unclosed one stays plain text, so nothing typed is ever reinterpreted.
    A fenced part keeps its fence lines, so the block can be rendered as markdown."""
    lines = text.split("\n")
    parts: list[TextPart] = []
    plain: list[str] = []
    i = 0
    while i < len(lines):
        opened = _FENCE_OPEN.match(lines[i])
        fence = opened.group("fence") if opened else ""
        if opened and not (fence[0] == "`" and "`" in opened.group("info")):
            closing = re.compile(rf"^ {{0,3}}{re.escape(fence[0])}{{{len(fence)},}}[ \t]*$")
            end = next((j for j in range(i + 1, len(lines)) if closing.match(lines[j])), None)
            if end is not None:
                if plain:
                    parts.append(TextPart("\n".join(plain)))
                    plain = []
                parts.append(TextPart("\n".join(lines[i : end + 1]), fence=True))
                i = end + 1
                continue
        plain.append(lines[i])
        i += 1
    if plain:
        parts.append(TextPart("\n".join(plain)))
    return parts


FOLD_OVER = 40  # a message longer than this many lines is shown folded
FOLD_SHOWN = 24  # the lines a folded message shows


class UserMessage(Vertical):
    """What the user sent, verbatim: every character, line break and indent as typed.

    It is not markdown: ``__init__`` keeps its underscores, ``*args`` its star, ``<Foo>`` its
    brackets. Only the fenced code blocks the user wrote are rendered (syntax-highlighted).
    A long paste is folded to its first lines and a line saying how many more there are; a
    click on that line unfolds it (the model always receives the whole text). A long message
    is also one of the chat's stops for the keyboard, as a tool block is (Ctrl+Up, then
    Up/Down): Enter or Space shows it all, and folds it again."""

    FOCUS_ON_CLICK = False  # a click leaves the focus (and typing) in the editor

    BINDINGS: ClassVar[list[BindingType]] = bindings_for(KeyScope.TOOL_BLOCK)

    def __init__(self, text: str, *, entry_id: str = "") -> None:
        super().__init__(classes="message user-message")
        self.text = text
        self.entry_id = entry_id
        self.line_count = text.count("\n") + 1
        self.folded = self.line_count > FOLD_OVER
        self.can_focus = self.folded  # only a long message has something to show or fold

    def compose(self) -> ComposeResult:
        yield Static("you", classes="role-label")
        if self.folded:
            shown = "\n".join(self.text.split("\n")[:FOLD_SHOWN])
            yield Static(Content(shown), classes="user-text")
            more = self.line_count - FOLD_SHOWN
            fold = f"… {more} more lines  [enter or click: show all]"
            yield Static(Content(fold), classes="user-fold")
            return
        for part in user_text_parts(self.text):
            if part.fence:
                yield markdown(part.text, "user-fence")
            else:
                yield Static(Content(part.text), classes="user-text")

    async def unfold(self) -> None:
        if not self.folded:
            return
        self.folded = False
        await self.recompose()

    async def action_toggle_expand(self) -> None:
        """Enter/Space on the focused message: all of it, or its first lines again."""
        if self.folded:
            await self.unfold()
        elif self.line_count > FOLD_OVER:
            self.folded = True
            await self.recompose()

    async def on_click(self, event: events.Click) -> None:
        if self.folded and isinstance(event.widget, Static) and event.widget.has_class("user-fold"):
            event.stop()
            await self.unfold()


def _frame_cut(text: str, limit: int) -> int:
    """Where one frame's share of ``text`` ends: all of it if short, else at a line break
    before ``limit`` (any cut is correct: the last block is parsed again). A frame's cost, and
    so the longest a key waits for one, grows with the blocks it mounts: however far behind the
    screen is, no frame appends more."""
    if len(text) <= limit:
        return len(text)
    line_end = text.rfind("\n", 0, limit)
    return line_end + 1 if line_end > 0 else limit


class AssistantMessage(MeasuredArrangement, AlikeRows, Vertical):
    """A model reply: static from the log, or live with one stream per reply."""

    class Painted(Message):
        """The finished reply is on screen: the chat may fold the blocks that went far
        above the view (:mod:`agentsh.tui.widgets.block_fold`)."""

    def __init__(
        self,
        text: str = "",
        *,
        entry_id: str = "",
        live: bool = False,
        aborted: bool = False,
        error: str = "",
    ) -> None:
        super().__init__(classes="message assistant-message")
        self.text = text
        self.entry_id = entry_id
        self.live = live
        self._aborted = aborted
        self._error = error
        self._unsent: list[str] = []
        self._flush_timer: Timer | None = None
        self._painting = asyncio.Lock()  # one append at a time: each parses from the last
        self._drawing = False  # a frame is appended and not yet on screen
        self._next_frame = 0.0  # the monotonic time before which no frame starts
        self._latest_frame = 0.0  # ... and by which one starts, pause between keys or not
        self._frame_took = 0.0  # seconds the last frame took, append to screen
        self._thinking_chars = 0
        self.fold = BlockFold()
        self.folded_whole = False  # every block but the last is folded away
        self._replacing = False  # the body's blocks are being rebuilt: nothing to fold
        self._body: Markdown | None = None
        self._lines: dict[str, Static] = {}  # the thinking and footer lines, once made

    def compose(self) -> ComposeResult:
        # A reply from the log shows no thinking and rarely a footer: only a live reply (which
        # may get both) composes the lines it does not show yet. Fewer widgets per message is
        # most of what a resume or a branch switch costs.
        if self.live:
            yield self._keep("thinking", Static("", classes="thinking"))
        self._body = markdown(self.text, "message-body")
        yield self._body
        if self.live or self._footer_text():
            yield self._keep(
                "message-footer", Static(Content(self._footer_text()), classes="message-footer")
            )

    def _keep(self, name: str, line: Static) -> Static:
        self._lines[name] = line
        return line

    def on_mount(self) -> None:
        self._refresh_footer()

    def _line(self, name: str) -> Static:
        """The ``thinking`` or ``message-footer`` line, mounted when first needed.

        Kept, not queried: a query walks every block of the body, and thinking is shown at
        each streamed fragment."""
        line = self._lines.get(name)
        if line is None:
            line = self._keep(name, Static("", classes=name))
            if name == "thinking":
                self.mount(line, before=0)
            else:
                self.mount(line)
        return line

    @property
    def body(self) -> Markdown:
        """The markdown body (kept from compose: a query would walk all of its blocks, and a
        streamed frame asks for it)."""
        if self._body is None:
            from textual.css.query import NoMatches

            raise NoMatches(f"{self!r} has no body yet")
        return self._body

    def fold_above(self, limit_y: int) -> bool:
        """Fold the body's blocks that end above screen row ``limit_y``; True if no more
        can be folded (see :mod:`agentsh.tui.widgets.block_fold`)."""
        body = self._composed_body()
        if body is None or self._replacing:  # no blocks yet, or they go: nothing lasting
            return False
        self.folded_whole = self.fold.fold_above(body, limit_y)
        return self.folded_whole

    def unfold(self) -> None:
        self.folded_whole = False
        if self.fold.folded:
            self.fold.unfold(self._composed_body())

    def _composed_body(self) -> Markdown | None:
        """The body, once composed and mounted (a row mounted this frame may not have it)."""
        body = self._body
        return body if body is not None and body.parent is self else None

    async def append(self, fragment: str) -> None:
        """Add streamed text; it reaches the screen in the next frame.

        A provider sends a chunk every few milliseconds; painting each one costs a parse and a
        layout, which falls behind at 1,000 tokens/s and starves the keyboard. Fragments are
        gathered here and appended in frames, every :data:`FLUSH_S`.
        """
        if not fragment:
            return
        self.text += fragment
        self._unsent.append(fragment)
        self._schedule()

    def _schedule(self) -> None:
        if self._flush_timer is not None or self._painting.locked() or self._drawing:
            return
        # The first text after a pause is painted at once; then frames keep their beat.
        delay = max(FRAME_GAP_S, self._next_frame - time.monotonic())
        self._flush_timer = self.set_timer(delay, self._frame)

    async def _frame(self) -> None:
        self._flush_timer = None
        self._drawing = True
        started = time.monotonic()
        try:
            await self._pause_between_keys()
            started = time.monotonic()
            await self._paint_frame(TYPING_FRAME_CHARS if typing() else FRAME_CHARS)
        finally:
            # Most of a frame's cost is the layout and render that follow the append: the
            # frame is timed up to the refresh that puts it on screen.
            self.call_after_refresh(self._frame_done, started)

    def _frame_done(self, started: float) -> None:
        """The frame is on screen: the next one waits for the beat, and for long enough that
        painting takes at most :data:`PAINT_SHARE` of the UI loop (a slow or busy machine
        paints fewer, larger frames instead of leaving keys waiting behind a queue of them);
        while the user types, it may come sooner, in a pause between keys."""
        now = time.monotonic()
        self._drawing = False
        self._frame_took = now - started
        rest = self._frame_took * PAINT_REST
        if not typing():
            rest = min(rest, REST_MAX_S)
        self._latest_frame = max(started + FLUSH_S, now + rest)
        self._next_frame = started + FLUSH_S if typing() else self._latest_frame
        if self._unsent:
            self._schedule()

    async def _pause_between_keys(self) -> None:
        """While the user types, wait for a pause between keys that a frame fits in, or for
        the latest a frame may start."""
        while typing() and (now := time.monotonic()) < self._latest_frame:
            since_key = now - last_key()
            if since_key >= ECHO_WAIT_S and key_gap() - since_key >= self._frame_took:
                return
            await asyncio.sleep(min(PAUSE_POLL_S, self._latest_frame - now))

    async def _paint_frame(self, limit: int = FRAME_CHARS) -> bool:
        """Append what arrived since the last frame, up to ``limit`` characters; True if some
        of it was left for the next frame."""
        async with self._painting:
            if not self._unsent:
                return False
            pending = "".join(self._unsent)
            cut = _frame_cut(pending, limit)
            self._unsent = [pending[cut:]] if cut < len(pending) else []
            self.folded_whole = False  # new blocks may come
            # (object: mypy finds no class both a DOMNode and the protocol, the metaclasses differ)
            if isinstance(view := cast(object, self.parent), FoldingView):
                view.fold_far_replies()  # laid out with the new text, in one pass
            await self.body.append(pending[:cut])
            return cut < len(pending)

    async def _flush(self) -> None:
        """Paint everything still unsent (the reply has ended), frame by frame, letting keys
        in between frames: each frame is on screen (laid out and rendered) before the next is
        appended, so no two frames' layouts add up to one long stall. While nobody types, at
        once: up to :data:`FRAME_CHARS` a frame, :data:`FRAME_GAP_S` apart. While the user
        types, as while the reply streamed: frames of :data:`TYPING_FRAME_CHARS`, each in a
        pause between keys or after three times as long as the last one took (a reply that
        ended with thousands of characters unpainted was painted in frames of 8,000, each a
        stall of a tenth of a second or more for the key typed then)."""
        while self._unsent:
            started = time.monotonic()
            await self._paint_frame(TYPING_FRAME_CHARS if typing() else FRAME_CHARS)
            if self._unsent:
                if self.is_running:  # bounded: a widget being removed is not refreshed again
                    with contextlib.suppress(TimeoutError):
                        await asyncio.wait_for(self.wait_for_refresh(), FLUSH_S * 5)
                now = time.monotonic()
                self._frame_took = now - started
                self._latest_frame = now + self._frame_took * PAINT_REST
                await asyncio.sleep(FRAME_GAP_S)
                await self._pause_between_keys()

    def add_thinking(self, fragment: str) -> None:
        self._thinking_chars += len(fragment)
        thinking = self._line("thinking")
        thinking.update(f"thinking… ({human_tokens(self._thinking_chars)} chars)")
        thinking.display = True

    async def text_ended(self) -> None:
        """The provider said the reply is over: paint the rest now, not at the next frame's
        beat or when the reply is logged, which waits for its usage (15-80 ms later, traced at
        load ~1)."""
        if self._flush_timer is not None:
            self._flush_timer.stop()
            self._flush_timer = None
        await self._flush()

    async def finish(
        self, *, text: str | None = None, aborted: bool = False, error: str = ""
    ) -> None:
        """The reply is complete: stop the stream; ``text`` (the logged text) wins if given."""
        await self.text_ended()
        if text is not None and (text != self.text or self.body.source != text):
            # The logged text wins, also over a body a stream left short of what it was sent.
            self.text = text
            self.unfold()
            self._replacing = True
            try:
                await self.body.update(text)
            finally:
                self._replacing = False
        self.live = False
        self._aborted = self._aborted or aborted
        self._error = error or self._error
        if self._thinking_chars:
            self._line("thinking").update(f"thought for {human_tokens(self._thinking_chars)} chars")
        self._refresh_footer()
        self.call_after_refresh(self.post_message, self.Painted())

    def _footer_text(self) -> str:
        if self._aborted:
            return TURN_CANCELLED  # as the line under a turn cancelled before any reply says
        return self._error

    def _refresh_footer(self) -> None:
        text = self._footer_text()
        if text or "message-footer" in self._lines:
            footer = self._line("message-footer")
            footer.update(Content(text))  # the provider's words: text, never markup
            footer.display = bool(text)
            footer.set_class(bool(self._error) and not self._aborted, "error")
        if (thinking := self._lines.get("thinking")) is not None:
            thinking.display = bool(self._thinking_chars)


class NoteLine(Static):
    """A line that is not a message: a notice, a retry, an error shown in place."""

    def __init__(self, text: str, *, kind: str = "info", markdown: bool = False) -> None:
        super().__init__(classes=f"note note-{kind}")
        self.text = text
        self.kind = kind
        self.markdown = markdown

    def on_mount(self) -> None:
        prefix = {"error": "✗ ", "warning": "! ", "info": "· "}.get(self.kind, "· ")
        self.update(Content(prefix + self.text))


class NoteMarkdown(Vertical):
    """A longer note: markdown (help, /cost, /tree), or text laid out for a terminal whose
    line breaks and indentation must stay as written (how to configure a model)."""

    def __init__(self, text: str, *, kind: str = "info", plain: bool = False) -> None:
        super().__init__(classes=f"note-block note-{kind}")
        self.text = text
        self.kind = kind
        self.plain = plain

    def compose(self) -> ComposeResult:
        yield Static(Content(self.text)) if self.plain else markdown(self.text)


class CompactionLine(Static, can_focus=True):
    """A compaction as one collapsed line; Enter shows the summary under it."""

    FOCUS_ON_CLICK = False  # a click leaves the focus (and typing) in the editor

    BINDINGS: ClassVar[list[BindingType]] = [
        ("enter,space", "toggle_expand", "Show/hide the summary")
    ]

    def __init__(
        self,
        tier: str,
        tokens_before: int,
        tokens_after: int,
        summary: str = "",
        *,
        entry_id: str = "",
        running: bool = False,
    ) -> None:
        super().__init__(classes="compaction")
        self.tier = tier
        self.tokens_before = tokens_before
        self.tokens_after = tokens_after
        self.summary = summary
        self.entry_id = entry_id
        self.running = running
        self.expanded = False

    def on_mount(self) -> None:
        self._render_line()

    def finish(self, tokens_before: int, tokens_after: int, summary: str, entry_id: str) -> None:
        self.running = False
        self.tokens_before, self.tokens_after = tokens_before, tokens_after
        self.summary, self.entry_id = summary, entry_id
        self._render_line()

    def fail(self, reason: str) -> None:
        self.running = False
        self.summary = reason
        self.add_class("failed")
        self.update(Content(f"⟲ compaction ({Tier.label_of(self.tier)}) failed: {reason}"))

    def action_toggle_expand(self) -> None:
        self.expanded = not self.expanded
        self._render_line()

    def _render_line(self) -> None:
        name = Tier.label_of(self.tier)
        if self.running:
            self.update(Content(f"⟲ compacting ({name})…"))
            return
        line = (
            f"⟲ compacted ({name}): {human_tokens(self.tokens_before)} → "
            f"{human_tokens(self.tokens_after)} tokens"
        )
        if self.summary and not self.expanded:
            line += "  [enter: show]"
        if self.expanded and self.summary:
            line += "\n" + self.summary
        self.update(Content(line))


class QueuedMessage(Static):
    """A message typed while a turn runs; sent when the turn ends."""

    def __init__(self, text: str) -> None:
        super().__init__(Content(f"queued: {text}"), classes="queued")
        self.text = text


class Welcome(Static):
    """The empty start screen's hint."""

    def __init__(self) -> None:
        super().__init__(
            Content.assemble(
                ("agentsh", "bold $primary"),
                "\n\nType a message and press Enter. ",
                ("/", "bold $accent"),
                " for commands, ",
                ("@", "bold $accent"),
                " to mention a file, ",
                ("F1", "bold $accent"),
                " for every key, ",
                ("Ctrl+P", "bold $accent"),
                " for the command palette.",
            ),
            classes="welcome",
        )
