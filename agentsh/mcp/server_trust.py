"""A project's MCP servers in the project trust decision (:mod:`agentsh.trust`).

A project's ``.mcp.json`` (and ``[mcp.servers]`` in its ``.agentsh/config.toml``) runs programs
on this machine, so it is one of the files a folder must be trusted with: this module adds it to
the trust check (:func:`register`), one finding per server with the exact command line or URL
it would use and the environment variables it reads, so the trust prompt shows precisely
what would run. :func:`project_servers_trusted` then decides, failing closed: the project's
servers start only when this run was told to trust the project (``--trust-project``) or when
the stored decision covers these very files, as they are now. Should the source not have been
registered (so the check never saw them), they do not start.
"""

from __future__ import annotations

import tomllib
from pathlib import Path
from typing import TYPE_CHECKING, Any

from agentsh.config import Environment
from agentsh.paths import ProjectPaths
from agentsh.trust import Finding, TrustState, hash_file, register_source
from agentsh.values import loads_json, loads_toml

if TYPE_CHECKING:
    from agentsh.mcp.servers_config import McpConfig

KIND = "MCP servers"


def _servers_of(path: Path, data: bytes) -> Any:
    """The raw ``mcpServers`` (JSON) or ``[mcp.servers]`` (TOML) of a file's bytes."""
    text = data.decode("utf-8")
    if path.suffix == ".toml":
        mcp = loads_toml(text).get("mcp")
        return mcp.get("servers") if isinstance(mcp, dict) else None
    doc = loads_json(text)
    return doc.get("mcpServers") if isinstance(doc, dict) else None


def mcp_findings(root: Path, cwd: Path) -> list[Finding]:
    """One finding per server a project file defines, saying exactly what it would run."""
    project = ProjectPaths(root)
    found: list[Finding] = []
    for path in (project.mcp_file, project.config_file):
        digest, data, problem = hash_file(root, path)
        if digest == "missing":
            continue
        if data is None:
            if path.suffix == ".json":  # config.toml's own refusal is the settings finding's
                found.append(Finding(path, KIND, f"not loaded: it {problem}", digest))
            continue
        try:
            raw = _servers_of(path, data)
        except (UnicodeDecodeError, ValueError, tomllib.TOMLDecodeError):
            if path.suffix == ".json":
                found.append(Finding(path, KIND, "MCP servers (not valid JSON)", digest))
            continue
        if not isinstance(raw, dict) or not raw:
            continue
        # Only a project that defines servers pays for their parser (every start checks trust,
        # before the TUI's first frame).
        from agentsh.mcp.servers_config import Scope, Transport, parse_servers

        problems: list[str] = []
        for spec in parse_servers(raw, scope=Scope.PROJECT, source=path, problems=problems):
            what = "runs" if spec.transport is Transport.STDIO else "connects to"
            line = f"MCP server '{spec.name}' {what}: {spec.describe(env_values=True)}"
            if variables := spec.variables():
                line += f"; reads {', '.join('$' + v for v in variables)}"
            if refused := spec.refused_variables():
                line += f" (refused: {', '.join('$' + v for v in refused)}, secrets)"
            found.append(Finding(path, KIND, line, digest))
        for problem in problems:
            found.append(Finding(path, KIND, problem.split(": ", 1)[-1], digest))
    return found


def register() -> None:
    """Make the trust check see project MCP files (idempotent; cli.main calls it first)."""
    register_source(mcp_findings)


def told_by_trust_check(env: Environment, config: McpConfig) -> bool:
    """Whether the trust check already names every file the project's servers come from, so
    a front end that told the user about the untrusted folder (``-p``'s line, the trust
    screen, ACP's notice) said they were left out: no second line about them."""
    told = {f.path for f in env.trust.findings if f.kind == KIND}
    project = ProjectPaths(env.trust.root)
    sources = {spec.source.name for spec in config.project_specs()}
    paths = {
        project.mcp_file if s == project.mcp_file.name else project.config_file for s in sources
    }
    return bool(paths) and paths <= told


def project_servers_trusted(env: Environment, config: McpConfig) -> bool:
    """Whether the project's MCP servers may start in this run (see the module docstring)."""
    if not config.project:
        return True
    check = env.trust
    if env.trusted and not check.trusted:
        return True  # --trust-project: the user said so for this run
    if check.state is not TrustState.TRUSTED:
        return False
    covered = {f.path: f.digest for f in check.findings if f.kind == KIND}
    project = ProjectPaths(check.root)
    for source in {spec.source.name for spec in config.project_specs()}:
        path = project.mcp_file if source == project.mcp_file.name else project.config_file
        digest, _data, _problem = hash_file(check.root, path)
        if covered.get(path) != digest:
            return False  # never shown to the user, or changed since the check
    return True


register()
