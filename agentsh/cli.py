"""Command-line entry point: parse arguments, pick a front end, dispatch subcommands.

Only the standard library (and :mod:`agentsh.errors` and :mod:`agentsh.headless.stdin`, which
are standard library only) is imported at module level, so ``agentsh --help`` and
``agentsh --version`` answer in tens of milliseconds. Each subcommand's module is imported
when that subcommand runs. Errors a user can cause end as one line on stderr and a non-zero
exit code, never a traceback.
"""

from __future__ import annotations

import argparse
import importlib
import sys
from collections.abc import Callable, Sequence
from typing import Any

from agentsh import __version__, run_options
from agentsh.cli_checks import check_options_before, check_session_options
from agentsh.cli_words import split_prompt_words, words_in_a_terminal
from agentsh.commands import register_trust_sources
from agentsh.errors import EXIT_INTERRUPTED, EXIT_OK, EXIT_USAGE, CliError
from agentsh.headless.stdin import (  # standard library only
    PROMPT_FROM_STDIN,
    resolve_prompt,
    terminal,
)
from agentsh.termsafe import printable, terminal_safe

Handler = Callable[[argparse.Namespace], int]

# subcommand -> "module:function"; imported only when that subcommand runs.
_HANDLERS: dict[str, str] = {
    "sessions.list": "agentsh.commands.sessions_cmd:list_sessions",
    "sessions.show": "agentsh.commands.sessions_cmd:show_session",
    "sessions.export": "agentsh.commands.sessions_cmd:export_session",
    "sessions.import": "agentsh.commands.sessions_cmd:import_session",
    "sessions.search": "agentsh.commands.sessions_cmd:search_sessions",
    "memory.list": "agentsh.commands.memory_cmd:list_memory",
    "memory.add": "agentsh.commands.memory_cmd:add_memory",
    "memory.search": "agentsh.commands.memory_search_cmd:search_memory",
    "memory.reindex": "agentsh.commands.memory_search_cmd:reindex_memory",
    "context": "agentsh.commands.context_cmd:show_context",
    "compact": "agentsh.commands.context_cmd:compact_session",
    "checkpoints": "agentsh.commands.checkpoints_cmd:list_checkpoints",
    "restore": "agentsh.commands.checkpoints_cmd:restore_files",
    "headless": "agentsh.headless.run:main",
    "tui": "agentsh.tui.launch:main",
    "mcp.list": "agentsh.commands.mcp_cmd:list_servers",
    "mcp.add": "agentsh.commands.mcp_cmd:add_server",
    "mcp.remove": "agentsh.commands.mcp_cmd:remove_server_command",
    "mcp.test": "agentsh.commands.mcp_cmd:test_server",
    "acp": "agentsh.acp.entry:main",
    "trust": "agentsh.tui.launch:review_trust",
}


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="agentsh",
        description="A terminal coding-agent shell: chat with a model that reads, edits and "
        "runs code; branch the conversation; see what it remembers.",
        usage="agentsh [options] [-p [PROMPT]] [PROMPT] | agentsh COMMAND ...",
        # An abbreviation that happens to match today may mean another option tomorrow, and
        # scripts written for Claude Code spell every option out.
        allow_abbrev=False,
    )
    parser.add_argument("--version", action="version", version=f"agentsh {__version__}")
    parser.add_argument(
        "-p",
        "--print",
        dest="prompt",
        nargs="?",
        const=PROMPT_FROM_STDIN,
        metavar="PROMPT",
        help="run one prompt headless and print the answer; without PROMPT (or with -) the "
        "prompt is read from stdin, and text piped in beside a PROMPT is attached to it",
    )
    parser.add_argument(
        "--output-format",
        choices=("text", "json", "stream-json", "events"),
        default="text",
        help="headless output: the answer, Claude Code's result object or message lines, or "
        "agentsh's own events (default: text)",
    )
    parser.add_argument(
        "-c",
        "--continue",
        dest="continue_session",
        action="store_true",
        help="resume the newest session of this project",
    )
    parser.add_argument(
        "-r",
        "--resume",
        nargs="?",
        const="",
        default=None,
        metavar="ID",
        help="resume a session by name or id prefix (picker when none)",
    )
    parser.add_argument("--name", metavar="NAME", help="name the session (-r NAME finds it)")
    parser.add_argument("--session", metavar="PATH", help="open this session file")
    parser.add_argument("--no-session", action="store_true", help="keep nothing on disk")
    parser.add_argument(
        "--fork",
        action="store_true",
        help="if the session is open in another agentsh, continue in a copy",
    )
    parser.add_argument("-m", "--model", help="litellm model string, e.g. openai/gpt-4o")
    parser.add_argument("--api-base", metavar="URL", help="provider base URL")
    parser.add_argument(
        "--approve",
        choices=("ask", "edits", "all"),
        help="what tools may do without asking (default: ask)",
    )
    parser.add_argument(
        "--trust-project",
        action="store_true",
        help="load this folder's .agentsh/config.toml, AGENTS.md and memory (and let allow "
        "rules cover its git hooks) for this run even if it is not trusted yet (nothing is "
        "stored)",
    )
    parser.add_argument(
        "--max-turns",
        type=int,
        default=run_options.DEFAULT_MAX_TURNS,
        metavar="N",
        help="headless: stop after N model calls (default: 50); reaching it is an error",
    )
    _add_claude_code_options(parser)
    run_options.add_arguments(parser)  # --add-dir, --mcp-config, --settings, ... (own module)
    parser.add_argument(
        "--max-budget-usd",
        type=_positive_float,
        default=None,
        metavar="USD",
        help="headless: stop before the next model call once this much is spent (an error)",
    )

    # prog: "usage: agentsh sessions ...", not the whole usage line of agentsh before it
    sub = parser.add_subparsers(dest="command", metavar="COMMAND", prog="agentsh")

    sessions = sub.add_parser(
        "sessions",
        help="list, show and export sessions",
        description="Without ACTION, list this folder's sessions, newest first (--all: every "
        "folder's); with one, show, export, search or import a session.",
    )
    sessions.add_argument("--all", action="store_true", help="sessions of every project")
    sessions.add_argument("--json", action="store_true", help="machine-readable output")
    sessions.set_defaults(handler="sessions.list")
    sessions_sub = sessions.add_subparsers(dest="sessions_command", metavar="ACTION")
    show = sessions_sub.add_parser("show", help="print a session's current path")
    show.add_argument("id", metavar="ID-PREFIX")
    show.add_argument("--tree", action="store_true", help="every entry with its children")
    show.add_argument("--json", action="store_true", help="machine-readable output")
    show.set_defaults(handler="sessions.show")
    export = sessions_sub.add_parser("export", help="export a session to a file")
    export.add_argument("id", metavar="ID-PREFIX")
    export.add_argument("--format", choices=("md", "html", "jsonl", "pi"), default="md")
    export.add_argument("-o", "--output", metavar="FILE", help="write here (default: stdout)")
    export.set_defaults(handler="sessions.export")
    search = sessions_sub.add_parser("search", help="sessions whose transcript holds TEXT")
    search.add_argument("text", metavar="TEXT")
    search.add_argument("--all", action="store_true", help="search every project's sessions")
    search.add_argument("--json", action="store_true", help="machine-readable output")
    search.set_defaults(handler="sessions.search")
    pi_import = sessions_sub.add_parser("import", help="import a Pi session file (JSONL)")
    pi_import.add_argument("file", metavar="FILE")
    pi_import.set_defaults(handler="sessions.import")

    memory = sub.add_parser("memory", help="inspect and search memory")
    memory_sub = memory.add_subparsers(dest="memory_command", metavar="ACTION", required=True)
    mlist = memory_sub.add_parser("list", help="curated entries and typed docs")
    mlist.add_argument("--json", action="store_true")
    mlist.set_defaults(handler="memory.list")
    madd = memory_sub.add_parser("add", help="add a typed memory doc (scanned by the guard)")
    madd.add_argument(
        "--type",
        required=True,
        choices=("spec", "skill", "lesson", "plan", "issue", "summary", "note"),
    )
    madd.add_argument("--title", required=True)
    madd.add_argument("text")
    madd.set_defaults(handler="memory.add")
    msearch = memory_sub.add_parser("search", help="hybrid keyword + vector search")
    msearch.add_argument("query")
    msearch.add_argument("-k", type=int, default=None, metavar="N", help="number of results")
    msearch.add_argument("--json", action="store_true")
    msearch.set_defaults(handler="memory.search")
    mreindex = memory_sub.add_parser("reindex", help="bring the search index up to date")
    mreindex.add_argument("--full", action="store_true", help="rebuild from scratch")
    mreindex.add_argument("--json", action="store_true", help="machine-readable output")
    mreindex.set_defaults(handler="memory.reindex")

    context = sub.add_parser(
        "context",
        help="token breakdown of a session's current context",
        description="Show what a session's current context holds, token by token (system "
        "prompt, tool schemas, memory, summary, messages, tool results), its tier, and what each "
        "compaction tier would free now. Nothing is changed.",
    )
    context.add_argument("id", metavar="ID-PREFIX")
    context.add_argument("--json", action="store_true")
    context.set_defaults(handler="context")

    compact = sub.add_parser(
        "compact",
        help="compact a session's context now",
        description="Compact a session's context now, as /compact does in the TUI: the "
        "archive is written first, then the compaction entry; the session file is locked.",
    )
    compact.add_argument("id", metavar="ID-PREFIX")
    compact.add_argument(
        "--tier",
        choices=("move_to_workspace", "summarize", "truncate"),
        default=None,
        help="default: the tier the context is in, else summarize",
    )
    compact.add_argument(
        "--instructions",
        metavar="TEXT",
        help="steer the summary (what to keep or stress); implies summarize when no --tier",
    )
    compact.add_argument("--json", action="store_true", help="machine-readable output")
    compact.set_defaults(handler="compact")

    checkpoints = sub.add_parser(
        "checkpoints",
        help="list a session's file checkpoints",
        description="List the file checkpoints of a session: the entry each belongs to, when, "
        "why (user message, tool call, restore) and the files it changed.",
    )
    checkpoints.add_argument("id", metavar="ID-PREFIX")
    checkpoints.add_argument("--json", action="store_true", help="machine-readable output")
    checkpoints.set_defaults(handler="checkpoints")
    restore = sub.add_parser(
        "restore",
        help="bring the project's files back to a session entry's checkpoint",
        description="Bring the project's files to their state at ENTRY (an entry id or prefix, "
        "or a checkpoint id from `agentsh checkpoints`). The current files are checkpointed "
        "first, so the restore can be undone; files changed outside agentsh since the last "
        "checkpoint are kept unless --overwrite-changed. The conversation does not move.",
    )
    restore.add_argument("id", metavar="ID-PREFIX")
    restore.add_argument("entry", metavar="ENTRY")
    restore.add_argument("--dry-run", action="store_true", help="show what would change")
    restore.add_argument(
        "--overwrite-changed",
        action="store_true",
        help="also restore files changed outside agentsh since the last checkpoint",
    )
    restore.add_argument("--json", action="store_true", help="machine-readable output")
    restore.set_defaults(handler="restore")
    _add_mcp_parser(sub)
    _add_acp_command(sub)
    help_trust = "show what this folder holds and ask again whether to trust it"
    sub.add_parser("trust", help=help_trust).set_defaults(handler="trust")
    _describe(parser)
    return parser


def _describe(parser: argparse.ArgumentParser) -> None:
    """Every command's --help opens with what it does (its line in the list above it):
    ``agentsh trust --help`` showed its usage line and -h, nothing else."""
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            helps = {a.dest: a.help for a in action._choices_actions}
            for name, command in action.choices.items():
                if command.description is None and helps.get(name):
                    text = str(helps[name])
                    command.description = text[0].upper() + text[1:] + "."
                _describe(command)


def _add_acp_command(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    """``agentsh acp``: the Agent Client Protocol on stdio, for editors (README: Editors)."""
    acp = sub.add_parser(
        "acp",
        help="serve the Agent Client Protocol on stdio (for Zed, toad and other editors)",
        description="Run agentsh as an Agent Client Protocol agent: JSON-RPC on stdin and "
        "stdout, started by an editor. Sessions are ordinary agentsh sessions.",
    )
    # SUPPRESS: given before `acp` (agentsh -m MODEL acp) the top-level value stays.
    keep = argparse.SUPPRESS
    acp.add_argument("-m", "--model", default=keep, help="litellm model string")
    acp.add_argument("--api-base", default=keep, metavar="URL", help="provider base URL")
    acp.add_argument(
        "--approve",
        choices=("ask", "edits", "all"),
        default=keep,
        help="the approval mode sessions start in (the editor can switch it)",
    )
    acp.add_argument(
        "--trust-project",
        action="store_true",
        default=keep,
        help="load a folder's .agentsh/config.toml, AGENTS.md, memory and .mcp.json even if "
        "it is not trusted yet",
    )
    acp.set_defaults(handler="acp")


def _add_claude_code_options(parser: argparse.ArgumentParser) -> None:
    """Claude Code's headless options, with the same meaning (README: "Headless use")."""
    parser.add_argument(
        "--input-format",
        choices=("text", "stream-json"),
        default="text",
        help="headless input: one prompt, or Claude Code user messages as JSON lines on stdin",
    )
    parser.add_argument(
        "--verbose", action="store_true", help="headless: each tool call on stderr too"
    )
    parser.add_argument(
        "--include-partial-messages",
        dest="partial",
        action="store_true",
        help="stream-json: text and thinking deltas as stream_event lines",
    )
    parser.add_argument(
        "--permission-mode",
        choices=("default", "acceptEdits", "bypassPermissions", "plan", "dontAsk"),
        help="Claude Code's name for --approve: default=ask, acceptEdits=edits, "
        "bypassPermissions=all; plan: no edits and no commands at all",
    )
    for names, dest, what in (
        (("--allowedTools", "--allowed-tools"), "allowed_tools", "run without asking"),
        (("--disallowedTools", "--disallowed-tools"), "disallowed_tools", "are always refused"),
    ):
        parser.add_argument(
            *names,
            dest=dest,
            action="extend",
            nargs="+",
            metavar="RULE",
            help=f'tool calls that {what}: "Bash(git:*)", "Edit(src/**)", "mcp__server__*"',
        )
    parser.add_argument(
        "--permission-prompt-tool",
        metavar="stdio",
        help="-p with --input-format stream-json: ask the program driving agentsh about each "
        "call that needs approval (control requests, as the Claude Agent SDK's can_use_tool)",
    )
    parser.add_argument(
        "--append-system-prompt", metavar="TEXT", help="add TEXT at the end of the system prompt"
    )
    parser.add_argument(
        "--system-prompt",
        metavar="TEXT",
        help="replace agentsh's base instructions with TEXT (empty: keep them; the rule about "
        "quoted project data, the environment, AGENTS.md and memory always stay)",
    )
    parser.add_argument(
        "--session-id", type=_uuid, metavar="UUID", help="the id of the new session (a UUID)"
    )
    parser.add_argument(
        "--fork-session",
        action="store_true",
        help="with -c, -r or --session: continue in a new session copied from that one",
    )


def _uuid(text: str) -> str:
    import uuid

    try:
        return str(uuid.UUID(text))
    except ValueError:
        raise argparse.ArgumentTypeError(f"not a UUID: {text!r}") from None


def _positive_float(text: str) -> float:
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"not a number: {text!r}") from None
    if not value > 0:
        raise argparse.ArgumentTypeError(f"must be more than 0, not {text}")
    return value


def _add_mcp_parser(sub: Any) -> None:
    """``agentsh mcp list|add|remove|test`` (agentsh/commands/mcp_cmd.py)."""
    mcp = sub.add_parser("mcp", help="list, add, remove and test MCP servers")
    actions = mcp.add_subparsers(dest="mcp_command", metavar="ACTION", required=True)
    listing = actions.add_parser("list", help="configured servers and whether they start here")
    listing.add_argument("--json", action="store_true", help="machine-readable output")
    listing.set_defaults(handler="mcp.list")
    add = actions.add_parser(
        "add",
        help="add a server to mcp.json (user) or .mcp.json (project)",
        usage="agentsh mcp add [options] NAME -- COMMAND [ARGS...]\n"
        "       agentsh mcp add -t http|sse [-H 'Name: value'] NAME URL",
    )
    add.add_argument("-t", "--transport", choices=("stdio", "http", "sse"), default="stdio")
    add.add_argument("-s", "--scope", choices=("user", "project"), default="user")
    add.add_argument("-e", "--env", action="append", metavar="KEY=VALUE", help="stdio: repeat")
    add.add_argument("-H", "--header", action="append", metavar="'NAME: VALUE'", help="repeat")
    add.add_argument("name", metavar="NAME", help="the server's name (its tools: mcp__NAME__*)")
    add.add_argument(
        "target", metavar="COMMAND|URL", help="the program to start (stdio) or the server's URL"
    )
    rest = add.add_argument("args", nargs=argparse.REMAINDER, metavar="ARGS", help="its arguments")
    rest.required = False  # (argparse makes REMAINDER required: a usage error named it missing)
    add.set_defaults(handler="mcp.add")
    remove = actions.add_parser("remove", help="remove a server from its JSON file")
    remove.add_argument("name", metavar="NAME")
    remove.add_argument("-s", "--scope", choices=("user", "project"), default=None)
    remove.set_defaults(handler="mcp.remove")
    test = actions.add_parser("test", help="start a server, list its tools and their cost")
    test.add_argument("name", metavar="NAME")
    test.add_argument("--json", action="store_true", help="machine-readable output")
    test.set_defaults(handler="mcp.test")


def resolve_handler(key: str) -> Handler:
    module_name, _, func = _HANDLERS[key].partition(":")
    handler: Handler = getattr(importlib.import_module(module_name), func)
    return handler


def _front_end(args: argparse.Namespace, words: list[str]) -> str:
    """``headless`` or ``tui``. Without a terminal on both stdin and stdout the TUI would draw
    into a pipe and never end: agentsh runs headless instead (the prompt from the words or
    stdin), as if ``-p`` had been given."""
    if args.prompt is not None and args.prompt != PROMPT_FROM_STDIN and words:
        raise CliError(
            f"unexpected argument {words[0]!r}: the prompt was already given after -p "
            '(quote a prompt of several words: agentsh -p "fix the failing test")',
            EXIT_USAGE,
        )
    if words:
        args.prompt = " ".join(words)
    if args.prompt is not None:
        return "headless"
    if terminal(sys.stdin) and terminal(sys.stdout):
        return "tui"
    args.prompt = PROMPT_FROM_STDIN
    args.implied_print = True
    return "headless"


def main(argv: Sequence[str] | None = None) -> int:
    own = argv is None  # the process's own command line, not a caller's (tests pass theirs)
    parser = build_parser()
    try:
        argv, words = split_prompt_words(parser, sys.argv[1:] if argv is None else argv)
    except CliError as exc:
        parser.print_usage(sys.stderr)
        print(f"agentsh: {exc}", file=sys.stderr)
        return exc.code
    args = parser.parse_args(argv)  # --help and --version end here
    if own:
        from agentsh import dataclass_code

        dataclass_code.install()  # before the front end's modules define their classes
    key = getattr(args, "handler", None)
    try:
        if key is None:
            if words and args.prompt is None and terminal_session():
                raise CliError(words_in_a_terminal(words, parser), EXIT_USAGE)
            key = _front_end(args, words)
            check_session_options(args)
            if getattr(args, "implied_print", False) and args.input_format == "text":
                # What is piped in, before anything heavy loads: with nothing, one line at once.
                args.prompt, args.prompt_read = resolve_prompt(args, sys.stdin, sys.stderr), True
        else:
            check_options_before(parser, args)
        if key == "memory.search" and _searched_warm(args):
            return EXIT_OK
        # Before any front end checks the folder's trust: a project's .mcp.json is one of the
        # files it must be trusted with, and its repository's hooks and program settings.
        register_trust_sources()
        handler = resolve_handler(key)
        if key == "tui":  # the screen draws with escape sequences of its own
            code = handler(args)
            from agentsh.tui.launch import leave

            leave(code)  # at once: everything is saved (no interpreter teardown)
        # Model text, file names and session contents may hold terminal control sequences
        # (OSC 52 clipboard writes, screen clears): shown, never sent (agentsh.termsafe).
        with terminal_safe(stdout=not _machine_readable(args)):
            return handler(args)
    except CliError as exc:
        print(f"agentsh: {printable(str(exc))}", file=sys.stderr)
        return exc.code
    except KeyboardInterrupt:
        print("agentsh: interrupted", file=sys.stderr)
        return EXIT_INTERRUPTED
    except BrokenPipeError:
        return EXIT_OK


def _searched_warm(args: argparse.Namespace) -> bool:
    """``memory search`` answered by the user's warm search process, if one runs: asked before
    the trust check and the memory modules load (the process checks the folder itself)."""
    from agentsh.commands.memory_search_cmd import search_warm

    with terminal_safe(stdout=not _machine_readable(args)):
        return search_warm(args)


def _machine_readable(args: argparse.Namespace) -> bool:
    """Output that must stay byte-exact JSON (JSON escapes control characters itself)."""
    return bool(getattr(args, "json", False)) or getattr(args, "output_format", "text") in (
        "json",
        "stream-json",
    )


def terminal_session() -> bool:
    return terminal(sys.stdin) and terminal(sys.stdout)


if __name__ == "__main__":
    sys.exit(main())
