"""Files follow the conversation in the TUI: the restore offer, ``/rewind`` and ``/checkpoints``.

When the leaf moves (Alt+Left/Right, Enter in the tree, editing an earlier message; not
``/compact undo``, which changes the context, not the point of the conversation), the files of
the point moved to are compared with the disk; if they differ the user is asked (see
:class:`~agentsh.tui.screens.restore_files.RestoreFilesScreen`). A restore first checkpoints the
files as they are at the entry just left, so moving back offers them again: it is undone the
same way it was done. Everything goes through ``agent.files()``
(:class:`~agentsh.checkpoints.session_files.SessionFiles`); nothing here reads or writes a file.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Protocol

from agentsh.session.entries import MessageEntry, Role
from agentsh.termsafe import one_line
from agentsh.tui.screens.picker import PickerItem, PickerScreen

if TYPE_CHECKING:
    from textual.app import App

    from agentsh.checkpoints.restore import PlanItem, RestoreResult
    from agentsh.checkpoints.session_files import SessionFiles
    from agentsh.session.session import Session
    from agentsh.tui.current import Current
    from agentsh.tui.display import View

SHOWN_NAMES = 4  # file names a note lists before "and N more"
LISTED_RECORDS = 30  # /checkpoints shows the newest ones; `agentsh checkpoints ID` has all

#: what each kind of checkpoint record is called in /checkpoints
REASONS = {
    "user": "your message",
    "tool": "a tool call",
    "restore": "before a restore",
    "restored": "restored",
}

REWIND_BOTH = "both"
REWIND_CONVERSATION = "conversation"
REWIND_FILES = "files"


def _short(text: str, limit: int = 50) -> str:
    flat = " ".join(text.split())
    return flat if len(flat) <= limit else flat[: limit - 1] + "…"


def _names(paths: list[str]) -> str:
    shown = ", ".join(one_line(path) for path in paths[:SHOWN_NAMES])  # a name on its line
    more = len(paths) - SHOWN_NAMES
    return shown + (f" and {more} more" if more > 0 else "")


def _plural(count: int, word: str = "file") -> str:
    return f"{count} {word}{'s' if count != 1 else ''}"


class MoveLeaf(Protocol):
    """The branch navigator's move (:meth:`agentsh.tui.branching.BranchNavigator.move`)."""

    async def __call__(
        self,
        target: str | None,
        *,
        editor_text: str | None = None,
        files_at: str | None = None,
        offer_files: bool = True,
        restore_files: bool = False,
    ) -> bool: ...


class FileRestorer:
    """The TUI's side of file checkpoints: asks through the view, acts through the agent."""

    def __init__(self, app: App[None], current: Current, view: View) -> None:
        self.app = app
        self.current = current
        self.view = view

    def _files(self) -> SessionFiles | None:
        agent = self.current.agent
        return agent.files() if agent is not None else None

    def _where(self, session: Session, entry_id: str) -> str:
        entry = session.tree.nodes.get(entry_id)
        if isinstance(entry, MessageEntry) and entry.role is Role.USER and entry.content:
            return f"when you sent “{_short(entry.content, 40)}”"
        return "this point of the conversation"

    async def offer(
        self, files_at: str | None, *, leaving: str | None, chosen: bool = False
    ) -> None:
        """The leaf moved away from ``leaving``: if the files of ``files_at`` differ from the
        disk, ask whether to bring them back, and do it; what went wrong is told in the chat.
        ``chosen``: the user asked for them already (/rewind's "the files"), so only files
        changed outside agentsh since the last checkpoint are asked about (their own
        question), and the report names what came back."""
        files = self._files()
        session = self.current.current_session()
        if files is None or session is None or files_at is None or session.read_only_reason:
            return
        plan = await files.plan(files_at)
        if plan.problem:
            why = plan.problem
            await self.view.note(f"The files cannot follow the conversation: {why}.", "warning")
            return
        if not plan.items:
            return
        from agentsh.tui.screens.restore_files import RestoreChoice, RestoreFilesScreen

        if chosen and not plan.outside:
            choice = RestoreChoice(True)
        else:
            screen = RestoreFilesScreen(
                plan,
                self._where(session, files_at),
                lambda: files.diff(plan),
                self.view.keymap,
            )
            screen.confirming = chosen  # then only the files changed outside are asked about
            choice = await self.app.push_screen_wait(screen)
            if screen.typed:  # typed ahead as it appeared: meant for the editor
                self.view.prompt.insert("".join(screen.typed))
        if not choice.restore:
            count = len(plan.items)
            await self.view.note(
                f"Files kept as they are ({_plural(count)} "
                f"{'differs' if count == 1 else 'differ'} from this point of the conversation).",
            )
            return
        from agentsh.checkpoints.restore import RestoreError

        try:
            result = await files.restore(
                plan, include_outside=choice.include_outside, leaving=leaving
            )
        except RestoreError as exc:
            await self.view.note(f"Nothing restored: {exc}", "error")
            return
        finally:
            for notice in files.take_notices():
                await self.view.note(notice, "warning")
        await self._report(result, plan.outside if not choice.include_outside else ())
        self.current.path_changed.publish("files")  # the tree pane's ✎ marks

    async def _report(self, result: RestoreResult, kept: tuple[PlanItem, ...]) -> None:
        done = sorted(result.written + result.deleted)
        if done:
            removed = ""
            if deleted := sorted(result.deleted):  # "restored" alone read as written back
                one = len(deleted) == 1
                removed = (
                    f" {_names(deleted)} did not exist then: "
                    f"{'it was' if one else 'they were'} removed."
                )
            await self.view.note(
                f"Restored {_plural(len(done))}: {_names(done)}.{removed} The files as they "
                "were are checkpointed at the entry you left: going back offers them again."
            )
        if kept:
            await self.view.note(
                f"Kept {_names([item.path for item in kept])}: changed outside agentsh since "
                "the last checkpoint.",
                "warning",
            )
        if dropped := result.id_bits_dropped:
            await self.view.note(
                f"{_names(dropped)} came back without {'its' if len(dropped) == 1 else 'their'} "
                "set-user-ID / set-group-ID bit (git keeps neither): set it again with chmod if "
                "you meant it.",
                "warning",
            )
        for path, why in result.failed:
            await self.view.note(f"Could not restore {one_line(path)}: {one_line(why)}", "error")

    # -- /rewind --------------------------------------------------------------------------------

    async def rewind(self, move: MoveLeaf) -> None:
        """Pick a user message on the current path, then what to bring back to it (the
        conversation moves through ``move``, as a move in the tree does)."""
        session = self.current.current_session()
        if session is None:
            return
        messages = [
            e for e in session.current_path() if isinstance(e, MessageEntry) and e.role is Role.USER
        ]
        if not messages:
            await self.view.note("Nothing to rewind to: no message was sent on this branch.")
            return
        items = [
            PickerItem(m.id, f"{_clock(m.timestamp)}  {_short(m.content, 100)}", m.content)
            for m in reversed(messages)
        ]
        app = self.app
        picked = await app.push_screen_wait(
            PickerScreen("Rewind to which message?", items, placeholder="type to filter")
        )
        if picked is None:
            return
        message = session.get(picked)
        assert isinstance(message, MessageEntry)
        has_files = self._files() is not None
        choices = [PickerItem(REWIND_CONVERSATION, "The conversation (the message to edit)")]
        if has_files:
            choices = [
                PickerItem(REWIND_BOTH, "The conversation and the files"),
                *choices,
                PickerItem(REWIND_FILES, "The files only (the conversation stays here)"),
            ]
        what = await app.push_screen_wait(
            PickerScreen(f"Rewind to “{_short(message.content, 40)}”: bring back…", choices)
        )
        if what is None:
            return
        if what == REWIND_FILES:
            await self.offer(message.id, leaving=session.leaf_id, chosen=True)
            return
        # The files were chosen here: not asked about again (3 questions after the message).
        await move(
            message.parent_id,
            editor_text=message.content,
            files_at=message.id,
            offer_files=False,
            restore_files=what == REWIND_BOTH,
        )

    # -- /checkpoints ---------------------------------------------------------------------------

    async def list_checkpoints(self) -> None:
        """The session's checkpoints that changed files, newest last, in the chat."""
        files = self._files()
        session = self.current.current_session()
        if files is None or session is None:
            await self.view.note("File checkpoints are off ([checkpoints] enabled = false).")
            return
        from agentsh.session.export import entry_summary

        rows = [r for r in await files.listing() if r.record.changed]
        if not rows:
            await self.view.note("No checkpoint of this session changed a file yet.")
            return
        lines = [f"**File checkpoints** of this session that changed files ({len(rows)}):", ""]
        hidden = len(rows) - LISTED_RECORDS
        if hidden > 0:
            lines.append(
                f"- … {hidden} earlier (`agentsh checkpoints {session.id[:8]}` lists them all)"
            )
        for row in rows[-LISTED_RECORDS:]:
            record = row.record
            node = session.tree.nodes.get(record.target_id)
            entry = _short(entry_summary(node, 40), 40) if node is not None else "?"
            names = ", ".join(_md(name) for name in record.files[:SHOWN_NAMES])
            more = record.changed - min(len(record.files), SHOWN_NAMES)
            names += f" and {more} more" if more > 0 else ""
            where = "" if row.on_path else " (another branch)"
            note = f" — *{row.problem}*" if row.problem else ""
            lines.append(
                f"- `{_clock(record.timestamp)}` {REASONS.get(record.reason, record.reason)}"
                f"{where} at “{_md(entry)}”: ✎ {_plural(record.changed)}: {names}{note}"
            )
        lines += ["", "Moving in the tree (or `/rewind`) offers to bring files back."]
        await self.view.markdown_note("\n".join(lines))


def _clock(stamp: str) -> str:
    """A record's time (UTC in the log) as the local wall clock."""
    from datetime import datetime

    try:
        return datetime.fromisoformat(stamp.replace("Z", "+00:00")).astimezone().strftime("%H:%M")
    except ValueError:
        return stamp[11:16]


def _md(text: str) -> str:
    """Plain text inside a markdown line (a file name like ``__init__.py`` stays as it is)."""
    special = "\\`*_[]<>#|"
    return "".join(f"\\{ch}" if ch in special else ch for ch in text)
