"""``agentsh mcp list | add | remove | test``: the MCP servers, from a shell.

``list`` shows every configured server (user and project, JSON and config.toml) with where it
is defined and whether it would start here, without starting any. ``add`` and ``remove`` edit
the JSON files in Claude Code's format (``--scope user``: the user's ``mcp.json``, the default;
``--scope project``: the project's ``.mcp.json``), keeping the rest of the file. ``test``
starts one server, lists its tools with their approximate token cost, and stops it; the exit
code says whether it came up. Nothing here prints an expanded ``${VAR}``: commands, URLs and
headers are shown as written.
"""

from __future__ import annotations

import argparse
import json
import re
import sys
import time
from typing import Any

from agentsh.config import Environment, load_environment
from agentsh.errors import EXIT_ERROR, EXIT_OK, EXIT_USAGE, CliError
from agentsh.mcp.servers_config import (
    McpConfig,
    Scope,
    ServerSpec,
    Transport,
    load_mcp_config,
    remove_server,
    write_server,
)

_NAME = re.compile(r"[A-Za-z0-9_.-]{1,64}")


def _environment(args: argparse.Namespace) -> tuple[Environment, McpConfig]:
    env = load_environment(trust_project=bool(getattr(args, "trust_project", False)))
    return env, load_mcp_config(env.user, env.project)


def _project_trusted(env: Environment, config: McpConfig) -> bool:
    """Whether this project's own servers may start (the project trust decision)."""
    from agentsh.mcp.server_trust import project_servers_trusted

    return project_servers_trusted(env, config)


def _where(spec: ServerSpec, env: Environment) -> str:
    try:
        return str(spec.source.relative_to(env.project.root))
    except ValueError:
        return str(spec.source)


# -- list ----------------------------------------------------------------------------------------


def list_servers(args: argparse.Namespace) -> int:
    env, config = _environment(args)
    trusted = _project_trusted(env, config)
    active = {spec.name: spec for spec in config.servers(trusted=trusted)}
    rows = []
    for spec in [*config.user.values(), *config.project.values()]:
        if spec.scope is Scope.PROJECT and not trusted:
            status = "not started: the project is not trusted"
        elif active.get(spec.name) is not spec:
            status = "overridden by the project's definition"
        elif not spec.enabled:
            status = "disabled"
        else:
            status = "starts with agentsh"
        rows.append((spec, status))
    if args.json:
        payload = {
            "servers": [_spec_json(spec, status, env) for spec, status in rows],
            "problems": list(config.problems),
        }
        print(json.dumps(payload, ensure_ascii=False, indent=2))
        return EXIT_OK
    if not rows:
        print(
            f"No MCP servers are configured. Add one with `agentsh mcp add NAME -- COMMAND ...`,\n"
            f"or write them in {env.user.mcp_file} or {env.project.mcp_file}."
        )
    for spec, status in rows:
        print(f"{spec.name}  ({spec.scope.value}, {_where(spec, env)}) - {status}")
        print(f"    {spec.describe()}")
    for problem in config.problems:
        print(f"agentsh: warning: {problem}", file=sys.stderr)
    return EXIT_OK


def _spec_json(spec: ServerSpec, status: str, env: Environment) -> dict[str, Any]:
    data: dict[str, Any] = {
        "name": spec.name,
        "scope": spec.scope.value,
        "source": str(spec.source),
        "transport": spec.transport.value,
        "enabled": spec.enabled,
        "status": status,
        "variables": list(spec.variables()),
    }
    if spec.transport is Transport.STDIO:
        data |= {"command": spec.command, "args": list(spec.args), "env": [k for k, _ in spec.env]}
    else:
        data |= {"url": spec.url, "headers": [k for k, _ in spec.headers]}
    return data


# -- add / remove --------------------------------------------------------------------------------


def add_server(args: argparse.Namespace) -> int:
    env, _config = _environment(args)
    name = args.name
    if not _NAME.fullmatch(name):
        raise CliError(
            f"{name!r} cannot be a server name: use 1-64 letters, digits, '_', '-' or '.'",
            EXIT_USAGE,
        )
    transport = Transport(args.transport)
    target, extra = args.target, list(args.args)
    if extra[:1] == ["--"]:
        extra = extra[1:]
    elif extra and transport is not Transport.STDIO:
        # Claude Code's own examples put --header after the URL (`claude mcp add --transport
        # http api URL --header "Authorization: Bearer ..."`): read as options, not arguments.
        extra = _options_after_url(args, extra)
    scope = Scope(args.scope)
    path = env.user.mcp_file if scope is Scope.USER else env.project.mcp_file
    if transport is Transport.STDIO:
        if args.header:
            raise CliError("--header is for http and sse servers", EXIT_USAGE)
        spec = ServerSpec(
            name,
            transport,
            scope,
            path,
            command=target,
            args=tuple(extra),
            env=tuple(_pairs(args.env, "=")),
        )
    else:
        if extra or args.env:
            what = f"unexpected {extra[0]!r} after the URL: " if extra else ""
            raise CliError(
                f"{what}a {transport.value} server takes a URL and -H/--header options only "
                "(no command, no --env)",
                EXIT_USAGE,
            )
        if not re.match(r"(?i)https?://", target):
            raise CliError(f"{target!r} is not an http:// or https:// URL", EXIT_USAGE)
        spec = ServerSpec(
            name, transport, scope, path, url=target, headers=tuple(_pairs(args.header, ":"))
        )
    try:
        replaced = write_server(path, spec)
    except (OSError, ValueError) as exc:
        raise CliError(f"cannot write {path}: {exc}") from exc
    verb = "Replaced" if replaced else "Added"
    print(f"{verb} {transport.value} server '{name}' in {path} ({scope.value} scope):")
    print(f"    {spec.describe()}")
    if scope is Scope.PROJECT:
        print("Project servers start only in a trusted project.")
    return EXIT_OK


def _options_after_url(args: argparse.Namespace, extra: list[str]) -> list[str]:
    """-H/--header and -s/--scope given after an http or sse server's URL, folded into
    ``args``; what is left over (kept, to be refused by name)."""
    after = argparse.ArgumentParser(add_help=False, allow_abbrev=False)
    after.add_argument("-H", "--header", action="append", default=[])
    after.add_argument("-s", "--scope", choices=("user", "project"))
    try:
        found, rest = after.parse_known_args(extra)
    except SystemExit:  # argparse has said what was wrong on stderr
        raise CliError("see the usage: agentsh mcp add --help", EXIT_USAGE) from None
    args.header = [*(args.header or []), *found.header]
    if found.scope:
        args.scope = found.scope
    return rest


def _pairs(items: list[str] | None, separator: str) -> list[tuple[str, str]]:
    pairs = []
    for item in items or []:
        key, found, value = item.partition(separator)
        if not found or not key.strip():
            what = "KEY=VALUE" if separator == "=" else "'Name: value'"
            raise CliError(f"{item!r} is not {what}", EXIT_USAGE)
        pairs.append((key.strip(), value.strip() if separator == ":" else value))
    return pairs


def remove_server_command(args: argparse.Namespace) -> int:
    _env, config = _environment(args)
    name = args.name
    scopes = [Scope(args.scope)] if args.scope else [Scope.USER, Scope.PROJECT]
    found = [
        spec
        for scope in scopes
        if (spec := (config.user if scope is Scope.USER else config.project).get(name)) is not None
    ]
    if not found:
        raise CliError(f"no MCP server named {name!r} (`agentsh mcp list` shows them)")
    if len(found) > 1:
        raise CliError(
            f"{name!r} is defined in both scopes; pass --scope user or --scope project", EXIT_USAGE
        )
    (spec,) = found
    if spec.source.suffix == ".toml":
        raise CliError(f"{name!r} is defined in {spec.source}; remove [mcp.servers.{name}] there")
    try:
        removed = remove_server(spec.source, name)
    except (OSError, ValueError) as exc:
        raise CliError(f"cannot write {spec.source}: {exc}") from exc
    if not removed:  # pragma: no cover - the file changed under us
        raise CliError(f"{name!r} was not found in {spec.source}")
    print(f"Removed '{name}' from {spec.source}")
    return EXIT_OK


# -- test ----------------------------------------------------------------------------------------


def test_server(args: argparse.Namespace) -> int:
    from agentsh.mcp.mcp_manager import McpManager, tools_json
    from agentsh.mcp.state import ServerState

    env, config = _environment(args)
    trusted = _project_trusted(env, config)
    spec = config.get(args.name, trusted=True)
    if spec is None:
        raise CliError(f"no MCP server named {args.name!r} (`agentsh mcp list` shows them)")
    if spec.scope is Scope.PROJECT and not trusted:
        raise CliError(
            f"'{spec.name}' comes from this project ({_where(spec, env)}) and would "
            f"{'run' if spec.transport is Transport.STDIO else 'connect to'}:\n"
            f"    {spec.describe()}\n"
            "The project is not trusted, so it is not started: open the project in agentsh to "
            "review and trust it, or pass --trust-project."
        )
    manager = McpManager(
        [spec],
        env.settings.mcp,
        cwd=env.project.root,
        log_dir=env.user.mcp_log_dir,
        spool_dir=env.user.project_tool_output_dir(env.project.root),
        cache_path=env.user.mcp_tools_cache,
    )
    began = time.monotonic()
    try:
        manager.start()
        manager.wait_until_started_sync(None)
        (status,) = manager.statuses()
        tools = manager.tools()
        per_token = env.settings.context.chars_per_token
        costs = {t.name: int(len(tools_json([t])) / per_token) for t in tools}
    finally:
        manager.close()
    elapsed = time.monotonic() - began
    if args.json:
        print(
            json.dumps(
                {
                    "name": status.name,
                    "state": status.state.value,
                    "reason": status.reason,
                    "server": status.server_version,
                    "ready_after_s": status.ready_after_s,
                    "tools": [{"name": t.name, "tokens": costs[t.name]} for t in tools],
                    "tool_problems": list(status.tool_problems),
                    "log": status.log_path,
                },
                ensure_ascii=False,
                indent=2,
            )
        )
        return EXIT_OK if status.state is ServerState.READY else EXIT_ERROR
    if status.state is not ServerState.READY:
        print(f"'{status.name}' did not start ({elapsed:.1f} s): {status.reason}", file=sys.stderr)
        if status.log_path:
            print(f"Its stderr is in {status.log_path}", file=sys.stderr)
        return EXIT_ERROR
    server = f" ({status.server_version})" if status.server_version else ""
    total = sum(costs.values())
    print(f"'{status.name}'{server} is ready after {status.ready_after_s:.2f} s")
    print(f"{len(tools)} tools, about {total:,} tokens of definitions:")
    for tool in tools:
        print(f"  {tool.name}  ~{costs[tool.name]:,} tokens")
    for problem in status.tool_problems:
        print(f"  left out: {problem}")
    return EXIT_OK
