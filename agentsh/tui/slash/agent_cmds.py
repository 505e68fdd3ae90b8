"""Commands on the agent: /model, /compact (and /compact undo), /cost."""

from __future__ import annotations

from typing import TYPE_CHECKING

from agentsh.events import Tier
from agentsh.tui.activity import COMPACTING
from agentsh.tui.projection import model_switch_items, project_session

if TYPE_CHECKING:
    from agentsh.tui.slash.command import CommandContext

#: what /compact's argument may be (offered while typing it)
COMPACT_CHOICES = (*(t.value for t in Tier if t is not Tier.NONE), "undo")


def _named(ctx: CommandContext) -> str | None:
    """The model the agent being loaded will use (``-m``, ``AGENTSH_MODEL``, the config), as
    the status bar names it meanwhile."""
    import os

    from agentsh.llm.model_name import named_model  # light: no litellm

    named = named_model(ctx.current.env.settings.model, os.environ, ctx.current.options.model)
    return named[0] if named is not None else None


async def model(ctx: CommandContext, arg: str) -> None:
    from agentsh.tui.screens.model_picker import model_picker, switch_model

    agent = ctx.current.agent
    settings = ctx.current.env.settings.model
    if not arg:
        current = agent.model if agent is not None else _named(ctx)
        chosen = await ctx.app.push_screen_wait(model_picker(settings, current))
        if not chosen or chosen == current:
            return
        arg = chosen
        agent = ctx.current.agent  # it may have loaded while the picker was open
    if agent is None:
        await ctx.no_agent("The agent is still loading; try again in a moment.")
        return
    try:
        await switch_model(agent, arg, settings)
    except (ValueError, RuntimeError, OSError) as exc:
        await ctx.view.note(f"Could not switch to {arg}: {exc}", "error")
        return
    ctx.view.show_status(agent.status())
    for item in model_switch_items(agent.session, arg):  # as a reload shows the change
        await ctx.view.chat.append(item)


async def compact(ctx: CommandContext, arg: str) -> None:
    if arg.strip().lower() == "undo":
        await _undo_compaction(ctx)
        return
    from agentsh.context.tiers import parse_compact_args

    # /compact [tier] [instructions]: free text steers the summary (as in Claude Code).
    tier, instructions = parse_compact_args(arg)
    agent = ctx.current.agent
    assert agent is not None  # Need.AGENT
    from agentsh.session.entries import MessageEntry

    if not any(isinstance(e, MessageEntry) for e in agent.session.current_path()):
        # Right after /new: "compaction failed: ... the newest turn, which must stay" named
        # a turn that does not exist.
        await ctx.view.note("Nothing to compact yet: this conversation has no messages.")
        return
    ctx.run_events(agent.compact(tier, instructions), doing=COMPACTING)


async def _undo_compaction(ctx: CommandContext) -> None:
    """``/compact undo``: the context from before the newest compaction, as a new leaf."""
    from agentsh.context.undo import UndoError
    from agentsh.tui.status_format import human_tokens

    agent = ctx.current.agent
    assert agent is not None
    try:
        result = agent.undo_compaction()
    except UndoError as exc:
        await ctx.view.note(str(exc), "warning")
        return
    view = ctx.view
    await view.chat.load(project_session(agent.session))
    view.show_status(agent.status())
    ctx.current.path_changed.publish("undo")
    tier = Tier.label_of(result.tier)
    since = (
        f" The {result.copied} entries logged since were copied after them."
        if result.copied
        else ""
    )
    await view.note(
        f"Compaction undone ({tier}, {human_tokens(result.tokens_before)} → "
        f"{human_tokens(result.tokens_after)} tokens): the turns it took out are back in the "
        f"model's context, in full.{since} The compacted branch stays in the tree."
    )


async def cost(ctx: CommandContext, arg: str) -> None:
    agent = ctx.current.agent
    if agent is None:
        await ctx.no_agent("The agent is still loading.")
        return
    from agentsh.tui.status_format import cache_share, human_cost, human_tokens, session_tokens

    s = agent.status()
    estimated = " (estimated)" if s.estimated else ""
    await ctx.view.markdown_note(
        "| This session | |\n|---|---|\n"
        f"| Model | {s.model or 'none'} |\n"
        f"| Current context | {human_tokens(s.used)} / {human_tokens(s.window)} "
        f"({s.pct:.1f}%){estimated} |\n"
        f"| Tokens (Σ, every reply and branch) | {session_tokens(s):,} = "
        f"{s.session_input_tokens:,} input + {s.session_output_tokens:,} output |\n"
        f"| Prompt cache | {s.session_cache_read_tokens:,} input tokens read "
        f"({cache_share(s):.0f} %), {s.session_cache_write_tokens:,} written |\n"
        f"| Cost | {human_cost(s.session_cost)} |\n"
        f"| Compactions | {s.compactions} |"
    )
