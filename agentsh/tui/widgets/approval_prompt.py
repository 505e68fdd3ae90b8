"""The inline approval prompt: a tool asks to write or run something, the user answers.

It sits in the transcript (nothing is hidden behind a modal), takes focus, and resolves the
request's future with allow once / allow for this session / deny (keys y / a / n, remappable).
After the answer it collapses to one line saying what was decided. If the turn is cancelled
while it waits, the future is cancelled by the agent and the prompt says so.

Keys typed for something else must not answer it: it takes focus only when the editor is
empty (otherwise Ctrl+Up reaches it), and it ignores keys for :attr:`GRACE_S` after it appears.

It never moves a chat the user scrolled up to read: it waits below, unfocused (a key pressed
for the text being read answers nothing unseen), and :class:`ApprovalNotice` says so at the
bottom of the chat until the prompt is scrolled into view (Ctrl+Up, PgDn, the wheel, a click on
the notice), when it takes the focus as it would have on arrival.

The detail (the command, or the diff of a write or edit, which can run to thousands of lines)
is shown in a box of at most :data:`DETAIL_ROWS` rows that Up/Down (and the mouse wheel)
scroll while the prompt has the focus: what is approved can be read to its end first.
"""

from __future__ import annotations

import contextlib
import time
from dataclasses import dataclass

from textual.app import ComposeResult
from textual.containers import Vertical, VerticalScroll
from textual.content import Content
from textual.message import Message
from textual.widget import Widget
from textual.widgets import Static, TextArea

from agentsh.events import ApprovalDecision, ApprovalRequest
from agentsh.termsafe import exact, one_line
from agentsh.tui.keys import KeyScope, bindings_for, display_key, spec
from agentsh.tui.projection import ApprovalItem, approval_item
from agentsh.tui.widgets.tool_block import diff_content

DETAIL_ROWS = 16  # the detail box's height at most (agentsh.tcss); longer details scroll


def give_keys_back(editor: TextArea) -> None:
    """After a detour (a message selected with Alt+Up, then Esc): the keys go to an approval
    waiting in view for its answer, as on its arrival, unless the editor holds a draft;
    else to the editor. They went to the editor, and an `n` meant to deny was typed there."""
    waiting = [
        prompt
        for prompt in editor.app.query(ApprovalPrompt)
        if prompt.decision is None and not prompt.waiting_below and prompt.display
    ]
    if waiting and not editor.text.strip():
        waiting[-1].focus(scroll_visible=False)
    else:
        editor.focus()


#: what "allow for this session" covers of each built-in tool, said plainly
_EVERY = {"bash": "every command", "edit": "every edit", "write": "every file write"}


def session_label(request: ApprovalRequest) -> str:
    """The "a" answer as what it allows: every command (a bash call), every read in a folder
    (a read outside the project), git with these hooks (an armed repository)."""
    match request.session_scope:
        case "folder":
            return f"allow reads in {one_line(request.scope_path)} for this session"
        case "repository":
            return "allow git with these hooks and settings for this session"
    every = _EVERY.get(request.tool) or f"every {one_line(request.tool)} call"
    return f"allow {every} for this session"


class ApprovalDetail(VerticalScroll, can_focus=False):
    """The command or diff being approved; scrolled by the prompt's keys, not focused."""


class ApprovalPrompt(Vertical, can_focus=True):
    BINDINGS = bindings_for(KeyScope.APPROVAL)
    GRACE_S = 0.4  # keys in flight when it appears are not answers

    @dataclass
    class Decided(Message):
        """The user answered ``prompt`` with ``decision``."""

        prompt: ApprovalPrompt
        decision: ApprovalDecision

    @dataclass
    class Below(Message):
        """``prompt`` started or stopped waiting out of view (see ``prompt.waiting_below``)."""

        prompt: ApprovalPrompt

    def __init__(
        self,
        request: ApprovalRequest,
        keymap: dict[str, str] | None = None,
        *,
        follow: bool = True,
    ) -> None:
        super().__init__(classes="approval")
        self.request = request
        self.decision: ApprovalDecision | None = None
        self._keymap = keymap or {}
        self._shown_at = 0.0
        self._fitted_for = -1  # the chat's height the detail box was last fitted to
        self.follow = follow  # False: the user had scrolled up; the chat is not moved
        self.waiting_below = False
        self.answered: ApprovalItem | None = None  # the line it collapsed to, once it did
        self._keys: list[str | tuple[str, str]] = []  # the answer keys' line, without a hint
        self._lines = 0  # the detail's lines, before wrapping

    def _key(self, binding_id: str) -> str:
        return display_key(self._keymap.get(binding_id, spec(binding_id).key))

    def _first_key(self, binding_id: str) -> str:
        return display_key(self._keymap.get(binding_id, spec(binding_id).key).split(",")[0])

    def compose(self) -> ComposeResult:
        req = self.request
        # What is approved is shown as it is: a control character or a bidirectional override
        # in a command is shown as an escape, not dropped or obeyed (an RLO reorders the text
        # a reader sees: "Trojan Source"), and so is a character that draws as nothing or a
        # blank (U+3164 padding pushed "; curl ... | sh" out of the box, unseen). The title and
        # the reason are one line each: a line break in a path is shown as \n, not as a line
        # of the question.
        summary = one_line(exact(req.summary))
        title = Content.assemble(("? ", "bold $warning"), ("Allow ", ""), (summary, "bold"))
        yield Static(title, classes="approval-title")
        if req.reason:
            yield Static(Content(one_line(req.reason)), classes="approval-reason")
        lines = 0
        if req.detail:
            detail = exact(req.detail)
            lines = detail.count("\n") + 1
            body = (
                diff_content(detail)
                if detail.startswith(("---", "@@", "diff "))
                else Content(detail)
            )
            with ApprovalDetail(classes="approval-detail"):
                yield Static(body)
        keys: list[str | tuple[str, str]] = [
            (f"[{self._key('approve_once')}]", "bold $success"),
            " allow once   ",
        ]
        if req.session_scope:  # not offered where it would allow this call only (.git/, ...)
            keys += [
                (f"[{self._key('approve_session')}]", "bold $success"),
                f" {session_label(req)}   ",
            ]
        if req.group:  # e.g. every tool of the MCP server
            group = one_line(req.group)
            keys += [(f"[{self._key('approve_group')}]", "bold $success"), f" {group}   "]
        keys += [(f"[{self._key('deny')}]", "bold $error"), " deny"]
        self._keys, self._lines = keys, lines
        if lines > DETAIL_ROWS:
            keys = [*keys, *self._scroll_hint(f"{lines} lines")]
        yield Static(Content.assemble(*keys), classes="approval-keys")

    def _scroll_hint(self, what: str) -> list[str | tuple[str, str]]:
        up, down = (self._first_key(k) for k in ("approval_scroll_up", "approval_scroll_down"))
        return ["   ", (f"[{up}/{down}]", "bold $accent"), f" scroll all {what}"]

    def _hint_overflow(self) -> None:
        """Laid out: a detail that wraps past its box says so, as one of many lines does
        (a single line of 5,000 characters showed its first rows and no hint of the rest)."""
        if self.decision is not None or not self.is_mounted:
            return
        for detail in self.query(ApprovalDetail):
            rows = detail.virtual_size.height
            if detail.max_scroll_y > 0 and rows > detail.content_region.height:
                what = f"{rows} rows" if rows > self._lines else f"{self._lines} lines"
                hint = self._scroll_hint(what)
                self.query_one(".approval-keys", Static).update(
                    Content.assemble(*self._keys, *hint)
                )

    def on_mount(self) -> None:
        self._shown_at = time.monotonic()
        self.call_after_refresh(self._hint_overflow)
        self.request.decision.add_done_callback(lambda _f: self._on_future_done())
        # Toasts sit over the bottom right, where the question's keys are: they go (a
        # project's config problems, shown at start for 10 s, hid "[n] deny").
        self.app.clear_notifications()
        chat = self.parent
        if not self.follow and isinstance(chat, Widget):
            # The user is reading further up: the notice at the bottom says it waits.
            self.waiting_below = True
            self.post_message(self.Below(self))
            self.watch(chat, "scroll_y", self._chat_scrolled, init=False)
            self.call_after_refresh(self._chat_scrolled)  # laid out where it shows after all
            return
        self._take_focus()
        self.call_after_refresh(self._into_view)
        # A terminal resized while the question waits: it is fitted to the chat again.
        self.screen.screen_layout_refresh_signal.subscribe(self, self._chat_resized)

    def _chat_resized(self, _screen: object) -> None:
        chat = self.parent
        if self.decision is not None or not isinstance(chat, Widget):
            return
        if chat.size.height != self._fitted_for:
            self._fitted_for = chat.size.height
            for detail in self.query(ApprovalDetail):
                detail.styles.max_height = DETAIL_ROWS  # may grow again; _into_view fits it
            self.call_after_refresh(self._into_view)

    def _take_focus(self) -> None:
        focused = self.app.focused
        if isinstance(focused, TextArea) and focused.text.strip():
            key = self._first_key("focus_chat")
            self.notify(f"A tool is waiting for approval: {key} to answer.", severity="warning")
        else:
            # Not scrolled to now: before its first layout the prompt has no place yet, and
            # scrolling to it sent the chat to the top and released its anchor (issue 14,
            # item 2: a short prompt below the fold, its result hidden after it).
            self.focus(scroll_visible=False)

    def in_view(self) -> bool:
        """Some of the prompt shows in the chat's viewport."""
        chat = self.parent
        if not isinstance(chat, Widget) or not self.is_mounted:
            return False
        top = chat.scroll_offset.y
        region = self.virtual_region
        return region.y < top + chat.scrollable_content_region.height and region.bottom > top

    def _chat_scrolled(self) -> None:
        if self.waiting_below and self.decision is None and self.in_view():
            self._not_below()
            self._take_focus()

    def on_resize(self) -> None:
        self.call_after_refresh(self._hint_overflow)  # wrapped anew

    def on_focus(self) -> None:
        # Ctrl+Up (or a click on the notice) focused it: Textual scrolled it into view.
        self._not_below()

    def on_unmount(self) -> None:
        if self.waiting_below:  # the chat dropped it (a reload): the notice goes too
            self.waiting_below = False
            self.app.post_message(self.Below(self))

    def _not_below(self) -> None:
        if self.waiting_below:
            self.waiting_below = False
            self.post_message(self.Below(self))

    def _into_view(self) -> None:
        """Laid out: the chat follows its bottom again (the prompt is its newest row, and what
        the answer brings appears under it); a prompt taller than the chat shows its top."""
        chat = self.parent
        if not self.is_mounted or not isinstance(chat, Widget):
            return
        self._fitted_for = chat.size.height
        if self._fit_detail(chat.size.height):
            self.call_after_refresh(self._into_view)  # laid out again at the new height
            self.call_after_refresh(self._hint_overflow)
            return
        if self.outer_size.height <= chat.size.height and chat.is_scrollable:
            chat.scroll_end(animate=False, immediate=True)  # re-anchors an anchored chat
        else:
            self.scroll_visible(animate=False, top=True, immediate=True)

    def _fit_detail(self, room: int) -> bool:
        """Shrink the detail's box (DETAIL_ROWS at most, 3 at least) so that the whole
        question, its keys included, fits ``room`` rows: at 80x24 a long diff pushed "[y]
        allow once ... [n] deny" below the screen. True when the box changed."""
        for detail in self.query(ApprovalDetail):
            rest = self.outer_size.height - detail.outer_size.height
            rows = max(3, min(DETAIL_ROWS, room - rest))
            if detail.outer_size.height > rows:
                detail.styles.max_height = rows
                return True
        return False

    def action_scroll_detail(self, lines: int) -> None:
        # From the scroll target, not the position: keys repeat faster than frames are drawn.
        for detail in self.query(ApprovalDetail):
            detail.scroll_to(y=detail.scroll_target_y + lines, animate=False, immediate=True)

    def action_decide(self, value: str) -> None:
        if self.decision is not None or time.monotonic() - self._shown_at < self.GRACE_S:
            return
        decision = ApprovalDecision(value)
        if decision is ApprovalDecision.ALLOW_GROUP and not self.request.group:
            return  # not offered for this tool
        if decision is ApprovalDecision.ALLOW_SESSION and not self.request.session_scope:
            return  # not offered: agentsh would keep nothing (a write to .git/, outside, ...)
        future = self.request.decision
        if not future.done():
            future.set_result(decision)
        self.decision = decision
        self._collapse(self._answer(decision))
        self.post_message(self.Decided(self, decision))

    def _on_future_done(self) -> None:
        if self.decision is None and self.is_mounted:
            future = self.request.decision
            if future.cancelled():
                self._collapse(approval_item("", self.request.summary, "cancelled"))
            else:
                self.decision = future.result()
                self._collapse(self._answer(self.decision))

    def _answer(self, decision: ApprovalDecision) -> ApprovalItem:
        return approval_item("", self.request.summary, decision.value, self.request.group)

    def _collapse(self, item: ApprovalItem) -> None:
        """Answered: from now on it draws as :class:`ApprovalLine` draws ``item`` (the same
        content and the same rules of agentsh.tcss), so a reload shows what was seen."""
        self._not_below()
        with contextlib.suppress(Exception):  # no screen any more (the app closing)
            self.screen.screen_layout_refresh_signal.unsubscribe(self)
        self.answered = item
        self.remove_children()
        self.can_focus = False
        self.add_class("decided")
        self.set_class(item.denied, "denied")
        self.set_class(item.withdrawn, "withdrawn")
        self.mount(Static(answered_content(item)))


def answered_content(item: ApprovalItem) -> Content:
    """What an answered approval reads: ``bash: make: allowed once``."""
    return Content(item.text)


class ApprovalLine(Static):
    """An answered approval built from its chat item (a reload, a remount, an expanded
    archive): drawn as its prompt was once answered (``ApprovalPrompt.decided`` and this
    share their rules in agentsh.tcss)."""

    def __init__(self, item: ApprovalItem) -> None:
        classes = " ".join(
            name for name, on in (("denied", item.denied), ("withdrawn", item.withdrawn)) if on
        )
        super().__init__(answered_content(item), classes=classes)
        self.item = item


class ApprovalNotice(Static):
    """A line at the bottom of the chat while an approval waits out of view (the user had
    scrolled up to read): ``▼ approval waiting below: bash: make · Ctrl+Up to answer``.
    A click brings the prompt into view and focuses it."""

    def __init__(self, *, answer_key: str = "Ctrl+Up", id: str | None = "approval-notice") -> None:
        super().__init__(id=id)
        self.answer_key = answer_key
        self.prompt: ApprovalPrompt | None = None
        self.display = False

    def track(self, prompt: ApprovalPrompt) -> None:
        """``prompt`` waits below (shown), or no longer does (hidden if it was the one)."""
        if prompt.waiting_below and prompt.is_attached:
            self.prompt = prompt
            summary = one_line(prompt.request.summary)
            self.update(
                Content.assemble(
                    ("▼ approval waiting below: ", "bold"),
                    summary,
                    (f"  ·  {self.answer_key} to answer", "bold"),
                )
            )
            self.display = True
        elif self.prompt is prompt or self.prompt is None:
            self.prompt = None
            self.display = False

    @dataclass
    class Answer(Message):
        """The notice was clicked: ``prompt`` comes into view and takes the focus."""

        prompt: ApprovalPrompt

    def on_click(self) -> None:
        prompt = self.prompt
        if prompt is not None and prompt.is_attached and prompt.decision is None:
            # The App brings it: a prompt held below a reader far up needs the chat's end.
            self.post_message(self.Answer(prompt))
