"""Command-line entry point: parse arguments, pick a front end, dispatch subcommands.

Only the standard library (and :mod:`agentsh.errors`, which is standard library only) is
imported at module level, so ``agentsh --help`` and ``agentsh --version`` answer in tens of
milliseconds. Each subcommand's module is imported when that subcommand runs. Errors a user
can cause end as one line on stderr and a non-zero exit code, never a traceback.
"""

from __future__ import annotations

import argparse
import importlib
import sys
from collections.abc import Callable, Sequence

from agentsh.errors import EXIT_INTERRUPTED, EXIT_OK, EXIT_USAGE, CliError

__version__ = "0.1.0"


Handler = Callable[[argparse.Namespace], int]

# subcommand -> "module:function"; imported only when that subcommand runs.
_HANDLERS: dict[str, str] = {
    "sessions.list": "agentsh.commands.sessions:list_sessions",
    "sessions.show": "agentsh.commands.sessions:show_session",
    "sessions.export": "agentsh.commands.sessions:export_session",
    "memory.list": "agentsh.commands.memory:list_memory",
    "memory.add": "agentsh.commands.memory:add_memory",
    "memory.search": "agentsh.commands.memory_search:search_memory",
    "memory.reindex": "agentsh.commands.memory_search:reindex_memory",
    "context": "agentsh.commands.context:show_context",
    "compact": "agentsh.commands.context:compact_session",
    "headless": "agentsh.headless:main",
    "tui": "agentsh.tui.launch:main",
}


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="agentsh",
        description="A terminal coding-agent shell: chat with a model that reads, edits and "
        "runs code; branch the conversation; see what it remembers.",
    )
    parser.add_argument("--version", action="version", version=f"agentsh {__version__}")
    parser.add_argument(
        "-p",
        "--print",
        dest="prompt",
        metavar="PROMPT",
        help="run one prompt headless and print the answer",
    )
    parser.add_argument(
        "--output-format",
        choices=("text", "json", "stream-json"),
        default="text",
        help="headless output (default: text)",
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
        help="resume a session by id prefix (picker when no id)",
    )
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
        "--max-turns",
        type=int,
        default=50,
        metavar="N",
        help="headless: stop after N model calls (default: 50)",
    )

    sub = parser.add_subparsers(dest="command", metavar="COMMAND")

    sessions = sub.add_parser("sessions", help="list, show and export sessions")
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
    export.add_argument("--format", choices=("md", "html", "jsonl"), default="md")
    export.add_argument("-o", "--output", metavar="FILE", help="write here (default: stdout)")
    export.set_defaults(handler="sessions.export")

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
    compact.add_argument("--json", action="store_true", help="machine-readable output")
    compact.set_defaults(handler="compact")
    return parser


def resolve_handler(key: str) -> Handler:
    module_name, _, func = _HANDLERS[key].partition(":")
    handler: Handler = getattr(importlib.import_module(module_name), func)
    return handler


def _check_session_options(args: argparse.Namespace) -> None:
    """At most one way to choose the session: honouring one and quietly dropping another
    (``--no-session -c`` starting afresh) would lose the conversation the user asked for."""
    given = [
        name
        for name, on in (
            ("--no-session", args.no_session),
            ("--session", args.session is not None),
            ("-c/--continue", args.continue_session),
            ("-r/--resume", args.resume is not None),
        )
        if on
    ]
    if len(given) > 1:
        raise CliError(f"{given[0]} and {given[1]} cannot be used together; pick one", EXIT_USAGE)


def main(argv: Sequence[str] | None = None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    key = getattr(args, "handler", None) or ("headless" if args.prompt is not None else "tui")
    try:
        if key in ("headless", "tui"):
            _check_session_options(args)
        return resolve_handler(key)(args)
    except CliError as exc:
        print(f"agentsh: {exc}", file=sys.stderr)
        return exc.code
    except KeyboardInterrupt:
        print("agentsh: interrupted", file=sys.stderr)
        return EXIT_INTERRUPTED
    except BrokenPipeError:
        return EXIT_OK


if __name__ == "__main__":
    sys.exit(main())
