"""Commands on the app around the conversation: /help, /memory, /theme, /quit."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

from agentsh.tui.slash.conversation import unknown_argument

if TYPE_CHECKING:
    from agentsh.tui.slash.command import CommandContext


async def help_(ctx: CommandContext, arg: str) -> None:
    from agentsh.tui.slash.registry import commands_list

    await ctx.view.markdown_note(
        f"**Commands**\n\n{commands_list()}\n\n"
        "Press **F1** for every key binding, **Ctrl+P** for the command palette."
    )


async def memory(ctx: CommandContext, arg: str) -> None:
    """Open the memory pane; ``/memory text`` prints both curated files in the chat."""
    if arg.strip() and arg.strip().lower() != "text":
        await unknown_argument(ctx, "memory", arg, "the memory files")
        return
    if not arg.strip():
        from agentsh.tui.panes.panel import PaneName, SidePanel

        await ctx.app.query_one(SidePanel).show(PaneName.MEMORY)
        return
    import asyncio

    from agentsh.memory.curated import CuratedMemory, MemoryTarget, parse_entries

    env = ctx.current.env
    # Read as the memory pane reads them: an untrusted folder's MEMORY.md not at all, a
    # link out of the project (to ~/.ssh/id_ed25519) or a FIFO refused, in a thread.
    curated = CuratedMemory(env.project, env.user, env.settings.memory, project_trusted=env.trusted)
    parts: list[str] = []
    for title, target in (
        ("Project memory", MemoryTarget.MEMORY),
        ("User memory", MemoryTarget.USER),
    ):
        text, problem = await asyncio.to_thread(curated.read_text, target)
        entries = parse_entries(text)
        heading = f"{title} ({_home(curated.path(target))})"
        if not entries:
            parts.append(f"{heading}: {f'({problem})' if problem else 'empty'}")
            continue
        # One entry a line, as written: the model wrote them, so no Markdown (a link it
        # wrote stays text), and entries never run together into one paragraph.
        listed = ["  • " + entry.strip().replace("\n", "\n    ") for entry in entries]
        plural = "entry" if len(entries) == 1 else "entries"
        parts.append(f"{heading}: {len(entries)} {plural}\n" + "\n".join(listed))
    await ctx.view.markdown_note("\n\n".join(parts), plain=True)


async def theme(ctx: CommandContext, arg: str) -> None:
    """``/theme [name]``: set directly, or pick from a list that previews live; the choice is
    saved as ``tui.theme`` in the user's config.toml."""
    from agentsh.tui.themes import ThemeError, persist_theme_choice

    app = ctx.app
    name = arg.strip() or await _pick_theme(ctx)
    if not name:
        return
    if name not in app.available_themes:
        await ctx.view.note(f"No theme named {name!r}. /theme lists them.", "error")
        return
    app.theme = name
    config_file = ctx.current.env.user.config_file
    try:
        persist_theme_choice(config_file, name)
    except ThemeError as exc:
        app.notify(str(exc), title="Theme not saved", severity="error")
        return
    app.notify(f"Theme {name} saved to {config_file.name}", timeout=3)


async def _pick_theme(ctx: CommandContext) -> str:
    """The theme list; each move previews, Esc puts the theme back."""
    from agentsh.tui.screens.picker import PickerItem, PickerScreen

    app = ctx.app
    original = app.theme
    names = sorted(app.available_themes, key=lambda n: (not n.startswith("agentsh"), n))

    def preview(name: str) -> None:
        app.theme = name

    chosen = await app.push_screen_wait(
        PickerScreen(
            "Theme", [PickerItem(n, n) for n in names], current=original, on_highlight=preview
        )
    )
    if chosen is None:
        app.theme = original
    return chosen or ""


async def quit_(ctx: CommandContext, arg: str) -> None:
    await ctx.quit()


def _home(path: Path) -> str:
    try:
        return "~/" + path.relative_to(Path.home()).as_posix()
    except (ValueError, RuntimeError):
        return str(path)
