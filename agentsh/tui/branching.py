"""Branching in the TUI: what the branch keys, the tree pane, Esc Esc and ``/fork`` do.

Every move is a change to the log followed by a fresh projection of it: the leaf moves with
:meth:`Session.move_leaf` (a ``leaf`` record, so a resume returns there), then the chat is
rebuilt from ``session.current_path()``, the status bar shows the agent's new figures
(``branch i/n`` included) and the side panes hear ``path_changed``. Nothing here keeps a copy
of the conversation.

- Alt+Up / Alt+Down select a user message in the chat; Enter on it puts its text in the
  editor, and sending it moves the leaf to its parent first, so it starts a sibling branch
  (nothing moves before: Esc or Ctrl+C drop the edit).
- Alt+Left / Alt+Right go to the previous / next sibling branch at the nearest fork above the
  leaf, landing on that branch's newest deepest entry.
- Enter in the tree pane moves the leaf to the entry (a user message: to its parent, with the
  text in the editor, as above).
- Leaving a branch (tree or Alt+Left/Right) asks whether to attach a short summary of what is
  left behind; the summary is written by the agent's model and appended where the user went,
  so the model on the new branch receives it as a note.
- Every move then offers to bring the files to the state of the point moved to (a user message
  being edited: as they were when it was sent), see :mod:`agentsh.tui.file_restore`.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING

from agentsh.session.entries import MessageEntry, Role
from agentsh.session.log import SessionError
from agentsh.tui.file_restore import FileRestorer
from agentsh.tui.interrupt import DoublePress
from agentsh.tui.keys import display_key, spec
from agentsh.tui.panes.panel import PaneName, SidePanel
from agentsh.tui.projection import BranchItem, NoteItem, branch_marks, project_session
from agentsh.tui.widgets.approval_prompt import give_keys_back

if TYPE_CHECKING:
    from textual.app import App

    from agentsh.session.session import Session
    from agentsh.tui.current import Current
    from agentsh.tui.display import View
    from agentsh.tui.screens.leave_branch import LeaveDecision


class BranchNavigator:
    """The branch keys and the tree pane's choices: moves of the leaf, shown through the view.

    ``resume_queue`` sends what was typed while a branch summary was being written."""

    def __init__(
        self, app: App[None], current: Current, view: View, resume_queue: Callable[[], None]
    ) -> None:
        self.app = app
        self.current = current
        self.view = view
        self.resume_queue = resume_queue
        #: Esc Esc's window (its clock is what a test drives: Pilot's presses can land
        #: further apart than a person's on a loaded machine).
        self.escapes = DoublePress()
        self._summary_task: asyncio.Task[None] | None = None
        self._told_no_model = False
        self.files = FileRestorer(app, current, view)
        self._checking_files = False  # a move's files check holds the leaf, as a turn does
        self.editing: _Edit | None = None  # an earlier message whose edit is not sent yet

    # -- helpers ----------------------------------------------------------------------------

    @property
    def panel(self) -> SidePanel:
        return self.app.query_one(SidePanel)

    def _session(self) -> Session | None:
        return self.current.current_session()

    def run(self, work: Awaitable[None], name: str) -> None:
        """Run a branch action as a worker (a question needs ``push_screen_wait``)."""
        self.app.run_worker(self._guarded(work, name), group="branch", exit_on_error=False)

    async def _guarded(self, work: Awaitable[None], name: str) -> None:
        try:
            await work
        except SessionError as exc:
            await self.view.note(f"{name}: {exc}", "error")
        except Exception as exc:  # noqa: BLE001 - worker boundary: shown in place, the app goes on
            await self.view.note(f"{name} failed: {exc}", "error")

    async def _busy(self) -> bool:
        """True (and says so) while a turn, a branch summary or the last move's files check
        runs: the leaf must not move."""
        if self.current.turn_running:
            wait = (
                "Wait for the files check of the last move to end."
                if self._checking_files
                else "Wait for the turn to end (Esc cancels it)."
            )
            self.view.notify(wait, title="Branching", timeout=3)
            return True
        session = self._session()
        if session is not None and session.read_only_reason:
            self.view.notify(
                "This session is read-only: /fork continues it.", title="Branching", timeout=4
            )
            return True
        return session is None

    async def reproject(self, reason: str = "branch") -> None:
        """The leaf moved: rebuild the chat from the log, update the status and the panes."""
        session = self._session()
        if session is None:
            return
        self.editing = None  # the chat is rebuilt: no message is marked as being edited
        if self.current.agent is not None:
            self.view.show_status(self.current.agent.status())
        self.current.path_changed.publish(reason)
        # The tree and the status bar show the move in the next frame; rebuilding the chat's
        # widgets takes several frames, so it starts after that one.
        painted: asyncio.Future[None] = asyncio.get_running_loop().create_future()

        def frame_done() -> None:
            if not painted.done():
                painted.set_result(None)

        self.app.call_after_refresh(frame_done)
        await painted
        chat = self.view.chat
        # About a screenful of rows (a message takes three lines or more); the chat mounts
        # more if they fall short, and as the user scrolls up.
        await chat.load(project_session(session), initial=max(6, chat.size.height // 3))

    async def turn_ended(self) -> None:
        """A turn that began a new branch (sent after an edit or a tree move) gets its fork
        marker: the chat is re-projected once, when the markers the log implies changed."""
        session = self._session()
        if session is None or session.leaf_id is None:
            return
        marks = branch_marks(session.current_path(), session.tree)
        shown = {
            (r.item.entry_id, r.item.index, r.item.count)
            for r in self.view.chat.rows
            if isinstance(r.item, BranchItem)
        }
        if shown != {(m.entry_id, m.index, m.count) for m in marks.values()}:
            await self.reproject("turn")

    def _put_in_editor(self, text: str) -> None:
        prompt = self.view.prompt
        prompt.put_text(text)
        prompt.focus()

    # -- the chat's message selection -----------------------------------------------------------

    async def select_message(self, step: int) -> None:
        chat = self.view.chat
        fresh = chat.selected_id is None
        item = await chat.select_user_message(step)
        if item is not None:
            chat.focus()
            if fresh:  # what the marked message is for, once per selection
                keymap = self.view.keymap

                def key(binding: str) -> str:
                    return display_key(keymap.get(binding, spec(binding).key))

                self.view.notify(
                    f"{key('edit_message')}: edit it and send as a new branch (the old one "
                    f"stays) · Up/Down: another message · {key('clear_selection')}: back to "
                    "the editor",
                    timeout=4,
                )
        elif chat.selected_id is None and step > 0:
            give_keys_back(self.view.prompt)

    async def edit_message(self, entry_id: str) -> None:
        """Enter on a selected message: its text becomes the draft. The leaf stays where it is
        until the draft is sent (:meth:`apply_edit`): Esc or Ctrl+C on the draft leave the
        conversation as it was, its newest turn in the chat and for ``-c``."""
        if await self._busy():
            return
        session = self._session()
        assert session is not None
        entry = session.get(entry_id)
        if not isinstance(entry, MessageEntry) or entry.role is not Role.USER:
            return
        self.editing = _Edit(entry.id, entry.parent_id)
        self._put_in_editor(entry.content)
        keymap = self.view.keymap
        keys = " / ".join(
            display_key(keymap.get(k, spec(k).key)) for k in ("branch_prev", "branch_next")
        )
        self.view.notify(
            f"Edit and send to start a new branch; the old one stays ({keys} switch). "
            "Esc leaves it as it was.",
            title="Editing an earlier message",
            timeout=4,
        )

    def drop_edit(self) -> bool:
        """The edit of an earlier message is abandoned (Esc, Ctrl+C clearing it): nothing moved,
        so nothing is undone; the message is no longer marked. True when one was pending."""
        if self.editing is None:
            return False
        self.editing = None
        self.view.chat.clear_selection()
        return True

    async def apply_edit(self) -> None:
        """The edited message is being sent: now its parent becomes the leaf, so the message
        starts a sibling branch (the chat shows the path up to there first), and the files
        the message's turn changed may go back with it (the restore offer) before it runs."""
        edit, self.editing = self.editing, None
        session = self._session()
        if edit is None or session is None or edit.entry_id not in session.tree.nodes:
            return
        leaving = session.leaf_id
        session.move_leaf(edit.parent_id)
        await self.reproject()
        await self._offer_files(edit.entry_id, leaving)

    # -- sibling branches ---------------------------------------------------------------------

    async def switch_branch(self, step: int) -> None:
        """Alt+Left / Alt+Right: the previous / next sibling at the nearest fork."""
        if await self._busy():
            return
        session = self._session()
        assert session is not None
        tree = session.tree
        position = tree.branch_position()
        if position.count <= 1:
            self.view.notify("There is no other branch here.", title="Branching", timeout=3)
            return
        index = position.index - 1 + step
        if not 0 <= index < position.count:
            edge = "first" if step < 0 else "last"
            self.view.notify(
                f"This is the {edge} branch ({position.index}/{position.count}).",
                title="Branching",
                timeout=3,
            )
            return
        sibling = tree.children_of(position.fork_id)[index]
        await self.move(tree.deepest_leaf(sibling))

    # -- the tree pane ------------------------------------------------------------------------

    async def choose(self, entry_id: str) -> None:
        """Enter in the tree: go there (a user message: to its parent, text in the editor)."""
        if await self._busy():
            return
        session = self._session()
        assert session is not None
        entry = session.get(entry_id)
        editing = isinstance(entry, MessageEntry) and entry.role is Role.USER
        target = entry.parent_id if editing else entry_id
        text = entry.content if isinstance(entry, MessageEntry) and editing else None
        if not await self.move(target, editor_text=text, files_at=entry_id):
            return
        panel = self.panel
        if panel.transient or panel.overlays_chat:
            panel.hide()
            self.view.prompt.focus()
        elif text is None:
            tree = panel.pane(PaneName.TREE)
            if tree is not None:
                tree.focus()

    async def set_label(self, entry_id: str, label: str) -> None:
        session = self._session()
        if session is None:
            return
        if session.read_only_reason:
            self.view.notify("This session is read-only.", title="Label", timeout=3)
            return
        session.set_label(entry_id, label)
        self.current.path_changed.publish("label")

    def tree_closed(self) -> None:
        panel = self.panel
        if panel.transient or panel.overlays_chat:
            panel.hide()
        self.view.prompt.focus()

    async def open_tree(self, search: str = "") -> None:
        """Open the tree pane; with ``search``, showing the entries that match it."""
        from agentsh.tui.panes.tree_pane import TreePane

        panel = self.panel
        pane = await panel.show(PaneName.TREE, transient=not panel.is_open)
        if search and isinstance(pane, TreePane):
            pane.search(search)

    def escape(self) -> None:
        """Esc that cancelled nothing: twice within ``tui.esc_esc_ms`` on an empty editor
        opens the tree."""
        if self.current.turn_running or self.view.prompt.text.strip():
            self.escapes.reset()
            return
        self.escapes.window_s = self.current.env.settings.tui.esc_esc_ms / 1000
        if self.escapes.press():
            self.run(self.open_tree(), "Opening the tree")

    # -- moving the leaf ----------------------------------------------------------------------

    def _can_summarize(self) -> bool:
        agent = self.current.agent
        return agent is not None and agent.model is not None

    async def move(
        self,
        target: str | None,
        *,
        editor_text: str | None = None,
        files_at: str | None = None,
        offer_files: bool = True,
        restore_files: bool = False,
    ) -> bool:
        """Move the leaf to ``target``; when that leaves a branch behind, ask about a summary
        first (Esc there cancels the move: False). Then offer to bring the files to the state
        of ``files_at`` (default ``target``) unless ``offer_files`` is False; with
        ``restore_files`` (the user chose it already: /rewind) bring them without asking."""
        from agentsh.context.branch_summary import abandoned_branch  # not on the startup path

        session = self._session()
        assert session is not None
        old_leaf = session.leaf_id
        if target == old_leaf and editor_text is None:
            return True
        left = abandoned_branch(session.tree, old_leaf, target)
        decision: LeaveDecision | None = None
        typed = ""  # keys typed as the question appeared: for the editor
        if left.messages and old_leaf is not None:
            if self._can_summarize():
                from agentsh.tui.screens.leave_branch import LeaveBranchScreen

                first = next(
                    (e for e in left.entries if isinstance(e, MessageEntry) and e.content), None
                )
                what = f"{left.messages} message{'s' if left.messages != 1 else ''}"
                if first is not None:
                    what += f", from “{_short(first.content)}”"
                screen = LeaveBranchScreen(what, dict(self.view.keymap))
                decision = await self.app.push_screen_wait(screen)
                typed = "".join(screen.typed)
                if typed and (decision is None or editor_text is None):
                    self.view.prompt.insert(typed)
                    typed = ""
                if decision is None:
                    return False
            elif not self._told_no_model:
                self._told_no_model = True
                self.view.notify(
                    "No model is configured, so no summary of the branch you left is offered.",
                    title="Branch summary skipped",
                    timeout=5,
                )
        session.move_leaf(target)
        await self.reproject()
        if editor_text is not None:
            self._put_in_editor(editor_text)
            if typed:  # after the text put back, not replaced by it
                self.view.prompt.insert(typed)
        if offer_files or restore_files:
            await self._offer_files(files_at or target, old_leaf, chosen=restore_files)
        if decision is not None and decision.choice.value == "yes" and old_leaf is not None:
            self._start_summary(old_leaf, decision.instructions)
        return True

    async def _offer_files(
        self, files_at: str | None, leaving: str | None, *, chosen: bool = False
    ) -> None:
        """The restore offer (``chosen``: the restore); messages sent meanwhile queue, as
        behind a turn."""
        if files_at is None or files_at == leaving:
            return
        self.current.turn_running = self._checking_files = True
        try:
            await self.files.offer(files_at, leaving=leaving, chosen=chosen)
        finally:
            self.current.turn_running = self._checking_files = False
            self.resume_queue()

    # -- the branch summary -------------------------------------------------------------------

    def _start_summary(self, old_leaf: str, instructions: str) -> None:
        self.current.turn_running = True  # a message sent meanwhile queues behind the summary
        self._summary_task = asyncio.ensure_future(self._summarize(old_leaf, instructions))

    def cancel(self) -> bool:
        """Esc while a branch summary is being written: stop it (the move stays)."""
        task = self._summary_task
        if task is None or task.done():
            return False
        task.cancel()
        return True

    async def _summarize(self, old_leaf: str, instructions: str) -> None:
        from agentsh.llm.client import LLMError

        current, view = self.current, self.view
        agent = current.agent
        assert agent is not None  # the summary is offered only with a model (_can_summarize)
        note = await view.chat.append(NoteItem("", "Summarizing the branch you left…"))
        try:
            text = await agent.summarize_branch(old_leaf, instructions)
            session = self._session()
            if not text or session is None:
                await view.note("Nothing to summarize on the branch you left.", "warning")
                return
            agent.attach_branch_summary(old_leaf, text)
            await self.reproject("branch summary")
        except asyncio.CancelledError:
            await view.note("Branch summary cancelled; you are on the new branch without it.")
        except (LLMError, SessionError, OSError) as exc:
            message = exc.message if isinstance(exc, LLMError) else str(exc)
            await view.note(f"The branch summary failed: {message}", "error")
        finally:
            with contextlib.suppress(Exception):
                await note.remove()
            current.turn_running = False
            self._summary_task = None
            if current.agent is not None:
                view.show_status(current.agent.status())
            self.resume_queue()

    # -- /fork ----------------------------------------------------------------------------------

    def fork_point(self) -> tuple[str | None, str | None, bool]:
        """Where ``/fork`` copies to: (entry id, editor text, whether a message was selected).

        A selected user message forks at its parent and puts its text in the editor (the
        fork continues with that message edited); otherwise the fork copies up to the leaf."""
        session = self._session()
        item = self.view.chat.selected_item
        if session is None or item is None or item.entry_id not in session.tree.nodes:
            return (session.leaf_id if session is not None else None, None, False)
        return (session.get(item.entry_id).parent_id, item.text, True)


@dataclass(frozen=True, slots=True)
class _Edit:
    """An earlier user message being edited: sending the draft branches from its parent."""

    entry_id: str
    parent_id: str | None


def _short(text: str, limit: int = 40) -> str:
    flat = " ".join(text.split())
    return flat if len(flat) <= limit else flat[: limit - 1] + "…"
