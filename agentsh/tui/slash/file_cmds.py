"""Commands on the project's files as the conversation left them: /rewind, /checkpoints.

Both go through the branch navigator's :class:`~agentsh.tui.file_restore.FileRestorer`, the
same one that offers a restore when the leaf moves.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from agentsh.tui.slash.command import CommandContext


async def rewind(ctx: CommandContext, arg: str) -> None:
    """Pick a message sent on this branch: bring back the conversation, the files, or both."""
    await ctx.branching.files.rewind(ctx.branching.move)


async def checkpoints(ctx: CommandContext, arg: str) -> None:
    """The session's file checkpoints that changed files, in the chat."""
    await ctx.branching.files.list_checkpoints()
