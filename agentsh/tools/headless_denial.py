"""The answer to a call nobody can approve: in ``agentsh -p`` a call the approval mode and
the rules leave to a question is refused, and both the model and the user are told how the
user could allow it (the flag, or a rule, or that the rules given do not cover it)."""

from __future__ import annotations

from agentsh.config import ApprovalMode
from agentsh.tools.base import Effect
from agentsh.tools.rules import ToolRules


def headless_denial(
    summary: str,
    effect: Effect,
    mode: ApprovalMode,
    rules: ToolRules,
    mcp: tuple[str, str] | None = None,
) -> tuple[str, str]:
    """What the model is told and the user's one line, for a call nobody can approve in
    ``-p``: each names how the user could allow such a call."""
    if mcp is not None:  # an MCP server's tool: the rule names it (or, with a *, its server)
        what = "calls to MCP tools cannot be approved, so this one did not run"
        server = f"mcp__{mcp[0]}"  # as configured: rules match that (tools/rules.py)
        grouped = f"{server}__{mcp[1]}"
        allow = f"--allowedTools {grouped} (or {server}__*)"
        how = f"the user can allow it with `--allowedTools {grouped}` (or `{server}__*`)"
    elif effect is Effect.EDIT:
        what = "file edits cannot be approved, so this edit was not made"
        allow = "--approve edits"
        how = (
            "the user can allow edits inside the project with `--approve edits`, or edits "
            "and commands with `--approve all`"
        )
    elif any(r.specifier and "bash" in r.tools for r in rules.allow):
        # The user gave command rules and none covers this one (a rule never covers a
        # form that can run other programs, e.g. git's --upload-pack): "a rule like
        # Bash(git:*) allows it" read as if the rule given had been forgotten.
        what = "commands cannot be approved, so this one did not run"
        allow = "no --allowedTools rule given covers it; --approve all"
        how = (
            "the user can allow commands with `--approve all`; the `--allowedTools` rules "
            "given do not cover this command (a rule never covers a form that can run "
            "other programs, such as git's `--upload-pack` or `-c` settings)"
        )
    else:
        what = "commands cannot be approved, so this one did not run"
        allow = '--approve all, or a rule like --allowedTools "Bash(git:*)"'
        how = (
            "the user can allow commands with `--approve all`, or some of them with an "
            'allow rule such as `--allowedTools "Bash(git:*)"`'
        )
    return (
        f"Denied: {summary}. This run is non-interactive (agentsh -p) with approval mode "
        f"'{mode}': {what}. Do not retry it; tell the user what you wanted to do. "
        f"To allow it, {how}."
    ), f"nobody can approve it in -p; {allow} allows it"
