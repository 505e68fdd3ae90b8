"""``agentsh sessions`` (list), ``sessions show ID`` and ``sessions export ID``.

Listing goes through the catalog, so it never reads whole session files. ``show`` and
``export`` open the session as a read-only view (no lock: they work on a session another
agentsh is using) and print what :mod:`agentsh.session.export` renders. Anything a user can get
wrong (an unknown id, an ambiguous prefix, an unreadable file, an unwritable output) ends as
one line on stderr and exit code 1; problems found while loading a file are warnings, one line
each, and the command goes on with everything that loaded.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import shutil
import sys
import time
from pathlib import Path
from typing import Any

from agentsh import termsafe
from agentsh.errors import EXIT_OK, CliError
from agentsh.paths import ProjectPaths, UserPaths
from agentsh.session import export
from agentsh.session.affinity import repo_key
from agentsh.session.catalog import Catalog, SessionInfo, SessionLookupError
from agentsh.session.log import LoadProblem, SessionError
from agentsh.session.session import Session


def list_sessions(args: argparse.Namespace) -> int:
    user = UserPaths.from_env()
    root = ProjectPaths.discover().root
    show_all = bool(getattr(args, "all", False))
    infos = Catalog(user).list(root, all=show_all)
    if getattr(args, "json", False):
        _print_json([info.to_json() for info in infos])
        return EXIT_OK
    others = [] if show_all else Catalog(user).elsewhere(root)
    if not infos:
        where = "anywhere" if show_all else "in this project"
        hint = "" if show_all else " (`agentsh sessions --all` lists every project's)"
        print(f"no sessions {where} yet{hint}")
    else:
        # Sessions of this project begun in another folder (a worktree, before a move) show it.
        here = str(root.resolve())
        away = any(not _under(info.cwd, here) for info in infos)
        for line in format_table(infos, show_project=show_all or away, width=_width()):
            print(line)
    if others:
        print(
            f"({len(others)} more in other clones of this repository: "
            "`agentsh sessions --all` lists them with their folders, `-r ID` opens one)"
        )
    return EXIT_OK


def _under(cwd: str, root: str) -> bool:
    return cwd == root or cwd.startswith(root.rstrip(os.sep) + os.sep)


def show_session(args: argparse.Namespace) -> int:
    session = _open(args.id)
    as_tree = bool(getattr(args, "tree", False))
    if getattr(args, "json", False):
        export.write_session_json(session, sys.stdout, tree=as_tree)
    elif as_tree:
        _print_lines(export.tree_lines(session, width=_width()))
    else:
        _print_lines(export.transcript_lines(session))
    return EXIT_OK


def export_session(args: argparse.Namespace) -> int:
    fmt = getattr(args, "format", "md") or "md"
    info = _find(args.id)
    output = getattr(args, "output", None)
    target = Path(output).expanduser() if output else None
    if target is not None and target.resolve() == info.path.resolve():
        raise CliError(f"refusing to overwrite the session file itself ({info.path})")
    if fmt == "jsonl":
        try:
            data, problems = export.valid_jsonl(info.path.read_bytes())
        except OSError as exc:
            raise CliError(f"cannot read {info.path}: {exc.strerror}") from exc
        except SessionError as exc:
            raise CliError(str(exc)) from exc
        _warn(info.path.name, problems)
    elif fmt == "pi":
        from agentsh.session.pi import to_pi_lines

        session = _open_path(info.path)
        _warn_problems(session)
        t = session.tree
        lines = to_pi_lines(session.header, t.records, t.leaf_id)
        data = "".join(line + "\n" for line in lines).encode("utf-8")
    else:
        session = _open_path(info.path)
        _warn_problems(session)
        text = export.to_markdown(session) if fmt == "md" else export.to_html(session)
        data = text.encode("utf-8")
    if target is not None:
        try:
            target.write_bytes(data)
        except OSError as exc:
            raise CliError(f"cannot write {target}: {exc.strerror}") from exc
        print(f"wrote {target}", file=sys.stderr)
    else:
        if fmt in ("jsonl", "pi"):  # the same JSON, its C1 controls inert on a terminal
            data = termsafe.json_safe(data.decode("utf-8", "surrogateescape")).encode(
                "utf-8", "surrogateescape"
            )
        sys.stdout.flush()
        sys.stdout.buffer.write(data)
        sys.stdout.buffer.flush()
    return EXIT_OK


def search_sessions(args: argparse.Namespace) -> int:
    from agentsh.session import transcript_search

    user = UserPaths.from_env()
    show_all = bool(getattr(args, "all", False))
    root = ProjectPaths.discover().root
    hits = transcript_search.search_sessions(Catalog(user), args.text, root, all=show_all)
    if getattr(args, "json", False):
        _print_json(
            [{**h.info.to_json(), "hits": h.hits, "snippets": list(h.snippets)} for h in hits]
        )
        return EXIT_OK
    if not hits:
        where = "" if show_all else " in this project (--all searches every project)"
        print(f"no session holds {args.text!r}{where}")
        return EXIT_OK
    width = _width()
    for line, hit in zip(
        format_table([h.info for h in hits], show_project=show_all, width=width)[1:],
        hits,
        strict=True,
    ):
        print(line)
        for snippet in hit.snippets:
            print("    " + termsafe.one_line(export.one_line(snippet, max(20, width - 4))))
    return EXIT_OK


def import_session(args: argparse.Namespace) -> int:
    """A Pi session file becomes a new session of this project (the file is not changed)."""
    import uuid

    from agentsh.session.pi import import_file

    source = Path(args.file).expanduser()
    try:
        imported = import_file(source)
    except SessionError as exc:
        raise CliError(str(exc)) from exc
    for problem in imported.problems:
        print(f"agentsh: warning: {source.name}: {problem}", file=sys.stderr)
    user = UserPaths.from_env()
    root = ProjectPaths.discover().root
    try:
        session_id = str(uuid.UUID(imported.header.id))
    except ValueError:
        session_id = str(uuid.uuid4())
    with contextlib.suppress(SessionLookupError):
        Catalog(user).find(session_id)
        session_id = str(uuid.uuid4())  # imported before: this copy gets its own id
    # A session of this folder from now on (the file's own cwd may be another machine's).
    session = Session.create(
        user.project_sessions_dir(root), Path.cwd(), session_id=session_id, repo=repo_key(root)
    )
    try:
        for entry in imported.entries:
            session.append(entry)
        session.sync()
    except SessionError as exc:
        raise CliError(f"cannot import {source}: {exc}") from exc
    finally:
        session.close()
    if imported.dropped:
        what = ", ".join(f"{n} {kind}" for kind, n in sorted(imported.dropped.items()))
        print(f"agentsh: not imported (agentsh does not keep them): {what}", file=sys.stderr)
    print(f"imported {source} as session {session.id} ({len(imported.entries)} entries)")
    return EXIT_OK


# -- finding and opening -----------------------------------------------------------------------


def _find(prefix: str) -> SessionInfo:
    user = UserPaths.from_env()
    try:
        return Catalog(user).find(prefix, ProjectPaths.discover().root)
    except SessionLookupError as exc:
        raise CliError(str(exc)) from exc


def _open_path(path: Path) -> Session:
    try:
        return Session.open(path, lock=False)
    except SessionError as exc:
        raise CliError(str(exc)) from exc


def _open(prefix: str) -> Session:
    session = _open_path(_find(prefix).path)
    _warn_problems(session)
    return session


def _warn_problems(session: Session) -> None:
    _warn(session.path.name if session.path else session.id, session.problems)


def _warn(name: str, problems: list[LoadProblem]) -> None:
    for problem in problems:
        print(f"agentsh: warning: {name}: {problem}", file=sys.stderr)


# -- output ------------------------------------------------------------------------------------


def _width() -> int:
    return shutil.get_terminal_size((100, 24)).columns


def _print_json(value: Any) -> None:
    json.dump(value, sys.stdout, ensure_ascii=False, indent=2)
    sys.stdout.write("\n")


def _print_lines(lines: list[str]) -> None:
    sys.stdout.write("\n".join(lines) + "\n")


def format_table(infos: list[SessionInfo], *, show_project: bool, width: int) -> list[str]:
    """The human listing: id prefix, age, messages, tokens, cost, (name,) (project,) title;
    the name column appears when a listed session has a name."""
    now = time.time()
    show_name = any(info.name for info in infos)
    rows = [
        [
            info.short_id,
            human_age(now - info.last_activity),
            str(info.messages),
            human_tokens(info.tokens),
            human_cost(info.cost),
            *([termsafe.one_line(info.name or "-")] if show_name else []),
            *([termsafe.one_line(_home(info.cwd))] if show_project else []),
            termsafe.one_line(info.title or "(no messages)"),
        ]
        for info in infos
    ]
    header = [
        "ID",
        "AGE",
        "MSGS",
        "TOKENS",
        "COST",
        *(["NAME"] if show_name else []),
        *(["PROJECT"] if show_project else []),
        "TITLE",
    ]
    right = {2, 3, 4}  # numbers line up on the right
    name_column = 5 if show_name else -1  # a long name keeps its start, a folder its end
    columns = len(header)
    widths = [max(len(r[i]) for r in [header, *rows]) for i in range(columns - 1)]
    if show_name:
        widths[name_column] = min(widths[name_column], 24)
    if show_project:
        widths[-1] = min(widths[-1], 30)
    lines = []
    for row in [header, *rows]:
        cells = []
        for i in range(columns - 1):
            cell = row[i]
            if len(cell) > widths[i] and i == name_column:
                cell = cell[: widths[i] - 1] + "…"
            elif len(cell) > widths[i]:
                cell = "…" + cell[-(widths[i] - 1) :]
            cells.append(cell.rjust(widths[i]) if i in right else cell.ljust(widths[i]))
        used = sum(widths) + 2 * (columns - 1)
        title = export.one_line(row[-1], max(10, width - used))
        lines.append("  ".join([*cells, title]).rstrip())
    return lines


def human_age(seconds: float) -> str:
    seconds = max(0.0, seconds)
    for unit, size in (("w", 7 * 86400), ("d", 86400), ("h", 3600), ("m", 60)):
        if seconds >= size:
            return f"{int(seconds // size)}{unit}"
    return "now"


def human_tokens(tokens: int) -> str:
    if tokens < 1000:
        return str(tokens)
    if tokens < 1_000_000:
        return f"{tokens / 1000:.1f}k"
    return f"{tokens / 1_000_000:.1f}M"


def human_cost(cost: float) -> str:
    if cost <= 0:
        return "-"
    if cost < 0.01:
        return "<$0.01"
    return f"${cost:.2f}"


def _home(path: str) -> str:
    home = str(Path.home())
    if home and home != "/" and (path == home or path.startswith(home + os.sep)):
        return "~" + path[len(home) :]
    return path
