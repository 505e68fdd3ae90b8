"""The answer to a call nobody can approve: in ``agentsh -p`` a call the approval mode and
the rules leave to a question is refused, and both the model and the user are told how the
user could allow it (the flag, or a rule, or that the rules given do not cover it), or why
nothing allows it there (a write outside the project or to a protected path)."""

from __future__ import annotations

from pathlib import Path

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


def outside_write_denial(summary: str, project_root: Path, where: str) -> tuple[str, str]:
    """A write outside the project: never in ``-p`` unless ``--add-dir`` names the folder."""
    return (
        f"Denied: {summary} would write outside the project root "
        f"({project_root}): {where}. Writing outside the project is never "
        f"allowed in non-interactive mode (agentsh -p), whatever --approve says, "
        f"unless the user names the folder with --add-dir. Keep changes inside the "
        f"project, or tell the user to do this in an interactive agentsh session, "
        f"where they can approve it."
    ), f"it writes outside the project ({where}), never allowed with -p"


def protected_denial(summary: str, protected: str) -> tuple[str, str]:
    """A write to a protected path (the project's settings, git's): never in ``-p``."""
    return (
        f"Denied: {summary} would change {protected}, so it is never changed in "
        f"non-interactive mode (agentsh -p), whatever --approve says. Tell the "
        f"user what you wanted to change."
    ), f"it would change {protected}, never allowed with -p"


def armed_git_denial(summary: str, armed: str, rule: str) -> tuple[str, str]:
    """A git command an allow rule names, in a repository that makes git run programs the
    user did not trust with the folder."""
    return (
        f"Denied: {summary}: {armed}, so the user's rule {rule!r} does not cover "
        "git commands here, and nobody can approve them in non-interactive mode "
        "(agentsh -p). Do not retry it; tell the user what you wanted to do. "
        "The user can trust this folder with them as they are (open agentsh here: "
        "the trust screen lists them) or pass --trust-project."
    ), (
        f"{armed}; {rule} covers them only as you trusted them with the folder "
        "(agentsh's trust screen, or --trust-project)"
    )


def shared_denial(summary: str, shared: str, mode: ApprovalMode) -> tuple[str, str]:
    """A change to what every project reads (the user's USER.md)."""
    return (
        f"Denied: {summary} would change {shared}. In non-interactive mode (agentsh -p) "
        f"with approval mode '{mode}' nobody can approve that, so nothing was "
        "written. Do not retry it; tell the user what you wanted to remember so they "
        "can add it themselves."
    ), f"it changes {shared}; --approve all allows it"


def read_outside_denial(
    summary: str, real: Path, project_root: Path, folder: Path
) -> tuple[str, str]:
    """A read outside the project and the folders named with ``--add-dir``."""
    return (
        f"Denied: {summary} reads outside the project ({real}). In non-interactive mode "
        f"(agentsh -p) files outside the project root ({project_root}) are read "
        f"only in folders the user names with --add-dir. Do not retry it; tell the user "
        f"what you wanted to read and why."
    ), f"it reads outside the project ({real}); --add-dir {folder} allows it"
