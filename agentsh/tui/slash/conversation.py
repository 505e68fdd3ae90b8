"""Commands on the conversation itself: /tree, /fork, /label, /name, /resume, /new, /export."""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import TYPE_CHECKING, Any

from agentsh.session.entries import MessageEntry
from agentsh.session.session import Session

if TYPE_CHECKING:
    from agentsh.tui.slash.command import CommandContext

TREE_MAX_LINES = 200


async def unknown_argument(ctx: CommandContext, name: str, arg: str, what: str) -> None:
    # `[text]` reads like "any text" in the usage line; say what the word does instead
    # of opening the pane as if nothing had been typed.
    await ctx.view.note(
        f"/{name} takes no argument but the word text: /{name} opens {what} in the side "
        f"panel, /{name} text lists it in the chat ({arg.strip()!r} was not understood).",
        "error",
    )


async def tree(ctx: CommandContext, arg: str) -> None:
    """Open the tree pane; ``/tree text`` lists the tree in the chat instead; any other
    words open it searching for them (``/tree checkpoint``), as typing in the tree does."""
    session = ctx.current.current_session()
    if session is None:
        return
    if arg.strip().lower() == "text":
        await ctx.view.markdown_note(tree_markdown(session))
        return
    await ctx.branching.open_tree(" ".join(arg.split()))


async def fork(ctx: CommandContext, arg: str) -> None:
    current = ctx.current
    session = current.current_session()
    assert session is not None
    folder = None if not session.persistent else current.sessions_dir()
    # A message selected in the chat (Alt+Up) forks at its parent, its text the draft.
    to_id, draft, selected = ctx.branching.fork_point()
    try:
        if selected and to_id is None:  # the very first message: nothing to copy
            child = Session.create(
                folder,
                Path(session.header.cwd),
                parent_session=session.id,
                fsync_each=current.env.settings.session.fsync == "entry",
            )
        else:
            child = session.fork(folder, to_id)
    except OSError as exc:
        await ctx.view.note(f"Could not fork: {exc}", "error")
        return
    await ctx.switch_session(child)
    await ctx.view.note(
        f"Forked into a new session ({child.id[:8]}); the previous session is unchanged."
    )
    if draft is not None:
        prompt = ctx.view.prompt
        prompt.put_text(draft)
        prompt.focus()


async def label(ctx: CommandContext, arg: str) -> None:
    session = ctx.current.current_session()
    if session is None or session.leaf_id is None:
        await ctx.view.note("Nothing to label yet: send a message first.", "warning")
        return
    session.set_label(session.leaf_id, arg)
    if arg.strip():
        await ctx.view.note(f"Labelled the current entry: {arg.strip()}")
    else:
        await ctx.view.note("Label cleared.")


async def name(ctx: CommandContext, arg: str) -> None:
    """``/name NAME`` names the session (``agentsh -r NAME`` resumes it); ``/name`` says it."""
    session = ctx.current.current_session()
    if session is None:
        return
    if not arg.strip():
        current = session.name
        await ctx.view.note(
            f"This session is named {current!r}; /name NAME renames it."
            if current
            else "This session has no name yet: /name NAME names it (agentsh -r NAME resumes it)."
        )
        return
    stored = session.set_name(arg)
    await ctx.view.note(f"Named this session {stored!r} (agentsh -r {stored!r} resumes it).")


async def resume(ctx: CommandContext, arg: str) -> None:
    """``/resume`` opens the picker; ``/resume X`` the session named X or whose id starts with
    X, else the sessions whose transcript holds X (one: opened; several: picked from)."""
    path: Path | None
    if arg.strip():
        path = await _find_or_search(ctx, arg.strip())
    else:
        path = await ctx.pick_session()
    if path is None:
        return
    await ctx.open_path(path)


async def _find_or_search(ctx: CommandContext, text: str) -> Path | None:
    from agentsh.session.catalog import Catalog, SessionNotFound
    from agentsh.session.transcript_search import search_sessions

    env = ctx.current.env
    catalog = Catalog(env.user)
    try:
        return Path((await asyncio.to_thread(catalog.find, text, env.project.root)).path)
    except SessionNotFound:
        pass  # not a name or an id: the words of a past conversation
    except (LookupError, ValueError, OSError) as exc:
        await ctx.view.note(str(exc), "error")
        return None
    try:
        hits = await asyncio.to_thread(search_sessions, catalog, text, env.project.root)
    except OSError as exc:
        await ctx.view.note(f"Sessions could not be searched: {exc}", "error")
        return None
    if not hits:
        await ctx.view.note(
            f"No session of this project is named {text!r}, has an id starting with it, or "
            "holds it.",
            "warning",
        )
        return None
    if len(hits) == 1:
        return Path(hits[0].info.path)
    from agentsh.tui.screens.session_picker import SessionPicker, session_row

    width = ctx.app.size.width
    items = [session_row(hit.info, width=width) for hit in hits]
    title = f"Sessions holding {text!r} ({len(hits)})"
    value = await ctx.app.push_screen_wait(SessionPicker(items, title=title))
    return Path(value) if value else None


async def new(ctx: CommandContext, arg: str) -> None:
    from agentsh.startup import new_session

    current = ctx.current
    session = current.current_session()
    persist = session.persistent if session is not None else True
    await ctx.switch_session(new_session(current.env, current.cwd, persist=persist))


async def export(ctx: CommandContext, arg: str) -> None:
    from agentsh.tui.exporting import ExportError, export_session

    session = ctx.current.current_session()
    if session is None:
        return
    words = arg.split(maxsplit=1)
    fmt = words[0].lower() if words else "md"
    target = Path(words[1]) if len(words) > 1 else None
    try:
        written = await asyncio.to_thread(
            export_session, session, fmt, target, ctx.current.env.user.exports_dir
        )
    except ExportError as exc:
        await ctx.view.note(str(exc), "error")
        return
    await ctx.view.note(f"Exported to {written}")


def tree_markdown(session: Session) -> str:
    """``/tree`` as text: the whole tree when small, else each branch point and its branches."""
    from agentsh.session.export import tree_lines

    tree = session.tree
    points = tree.branch_points()
    active = set(tree.path_ids()) if tree.leaf_id else set()
    head = f"**Session tree**: {len(tree)} entries, {len(points)} branch point(s)"
    if not points:
        head = f"**Session tree**: {len(tree)} entries, one branch (no forks yet)"
    if len(tree) <= TREE_MAX_LINES:
        body = "\n".join(tree_lines(session, width=100))
        return f"{head}. `•` marks the current path.\n\n```\n{body}\n```" if body else head
    if not points:
        return head
    lines = [head, ""]
    for point in points:
        lines.append(f"- at `{point}` {_entry_text(session, point)}")
        for i, child in enumerate(tree.children_of(point), start=1):
            mark = " ← current" if child in active else ""
            label = f" [{tree.labels[child]}]" if child in tree.labels else ""
            lines.append(f"  - branch {i}: `{child}` {_entry_text(session, child)}{label}{mark}")
    return "\n".join(lines)


def _entry_text(session: Session, entry_id: str) -> str:
    entry: Any = session.get(entry_id)
    if isinstance(entry, MessageEntry):
        text = " ".join(entry.content.split())[:60] or (
            f"[{', '.join(c.name for c in entry.tool_calls)}]" if entry.tool_calls else ""
        )
        return f"{entry.role.value}: {text}"
    return f"({entry.TYPE})"
