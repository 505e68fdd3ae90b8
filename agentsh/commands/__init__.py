"""Subcommand bodies (sessions, memory, context); cli.py imports each lazily."""


def register_trust_sources() -> None:
    """Make the folder trust check (:mod:`agentsh.trust`) see what only the layers above it
    know: a project's MCP servers (``.mcp.json``) and its repository's hooks and program
    settings. Called before anything checks a folder's trust: by ``cli.main``, and by the warm
    search process, which checks folders without it (idempotent; the imports are light)."""
    from agentsh.mcp.server_trust import register as register_mcp_trust
    from agentsh.tools.git_armed import register as register_git_trust

    register_mcp_trust()
    register_git_trust()
