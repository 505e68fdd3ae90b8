"""``agentsh checkpoints ID`` (a session's file checkpoints) and ``agentsh restore ID ENTRY``.

``checkpoints`` opens the session read-only and lists its checkpoint records in file order:
the entry each belongs to, when, why, and the files it changed. ``restore`` brings the
project's files to the state of an entry (or of one checkpoint record, by its id): it prints
the plan, and unless ``--dry-run`` takes the session's lock, checkpoints the files as they are
(the undo point, printed as a command) and writes. Files changed outside agentsh since the last
checkpoint are kept unless ``--overwrite-changed`` says otherwise; the conversation's leaf does
not move. Names from the project are printed with control characters made visible.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from datetime import datetime
from pathlib import Path
from typing import Any

from agentsh.checkpoints.checkpointer import Checkpointer
from agentsh.checkpoints.restore import PlanItem, RestoreError, RestorePlan
from agentsh.checkpoints.store import StoreError
from agentsh.commands.context_cmd import find_session_file
from agentsh.config import Environment, load_environment
from agentsh.errors import EXIT_ERROR, EXIT_OK, CliError
from agentsh.paths import find_project_root
from agentsh.session.entries import CheckpointEntry
from agentsh.session.export import entry_summary
from agentsh.session.log import SessionError, SessionLocked
from agentsh.session.session import Session

_ACTIONS = {"modify": "M", "create": "A", "delete": "D", "mode": "m"}


def list_checkpoints(args: argparse.Namespace) -> int:
    env = load_environment()
    session = _open(find_session_file(env, args.id), lock=False)
    checkpointer = _checkpointer(env, session)
    records = checkpointer.index(session).records()
    horizon, store_id = _store_facts(checkpointer) if records else (0, "")
    on_path = set(session.tree.path_ids())
    rows = [_row_json(session, r, on_path, horizon, store_id) for r in records]
    if getattr(args, "json", False):
        _print_json({"session": session.id, "project": str(checkpointer.root), "checkpoints": rows})
        return EXIT_OK
    if not rows:
        print(f"session {session.id[:8]} has no file checkpoints")
        return EXIT_OK
    print(f"file checkpoints of session {session.id[:8]} in {_safe(str(checkpointer.root))}")
    for row in rows:
        mark = "•" if row["onPath"] else " "
        files = _files_text(row["files"], row["changed"])
        note = "" if row["restorable"] else f"  [{row['problem']}]"
        print(
            f"{mark} {row['id']}  {_clock(row['timestamp'])}  {row['reason']:<8}  "
            f"{row['targetId']} {_safe(row['entry'])}"
        )
        print(f"    {files}{note}")
    return EXIT_OK


def restore_files(args: argparse.Namespace) -> int:
    env = load_environment()
    path = find_session_file(env, args.id)
    dry_run = bool(getattr(args, "dry_run", False))
    session = _open(path, lock=not dry_run)
    try:
        checkpointer = _checkpointer(env, session)
        entry_id, record = _resolve(session, args.entry.strip())
        try:
            if record is not None:
                plan = checkpointer.plan_record(record, entry_id)
            else:
                plan = checkpointer.plan(session, entry_id)
        except StoreError as exc:
            raise CliError(str(exc)) from exc
        as_json = bool(getattr(args, "json", False))
        overwrite = bool(getattr(args, "overwrite_changed", False))
        if plan.problem:
            raise CliError(f"cannot restore the files of {entry_id}: {plan.problem}")
        if dry_run:
            if as_json:
                _print_json({"dryRun": True, **plan.to_json()})
            else:
                _print_plan(session, plan, overwrite=overwrite, dry_run=True)
            return EXIT_OK
        try:
            result = checkpointer.restore(session, plan, include_outside=overwrite)
        except RestoreError as exc:
            raise CliError(f"nothing restored: {exc}") from exc
        for notice in checkpointer.take_notices():
            print(f"agentsh: warning: {notice}", file=sys.stderr)
        undo = result.undo.id if result.undo is not None else ""
        if as_json:
            _print_json(
                {
                    **plan.to_json(),
                    "written": result.written,
                    "deleted": result.deleted,
                    "failed": [{"path": p, "error": why} for p, why in result.failed],
                    "undo": undo,
                }
            )
        else:
            _print_plan(session, plan, overwrite=overwrite, dry_run=False)
            for failed, why in result.failed:
                print(f"agentsh: could not restore {_safe(failed)}: {why}", file=sys.stderr)
            done = len(result.written) + len(result.deleted)
            print(f"restored {done} file{'s' if done != 1 else ''}")
            if undo and done:
                print(f"undo with: agentsh restore {session.id[:8]} {undo}")
        return EXIT_ERROR if result.failed else EXIT_OK
    finally:
        session.close()


# -- helpers ------------------------------------------------------------------------------------


def _open(path: Path, *, lock: bool) -> Session:
    try:
        return Session.open(path, lock=lock)
    except SessionLocked as exc:
        raise CliError(f"{exc} Close it there first (or use --dry-run).") from exc
    except (SessionError, OSError) as exc:
        raise CliError(f"cannot open {path}: {exc}") from exc


def _checkpointer(env: Environment, session: Session) -> Checkpointer:
    cwd = Path(session.header.cwd or ".")
    if not cwd.is_dir():
        raise CliError(f"the session's folder {cwd} no longer exists")
    # A store is made by the agent's first capture, never by these commands.
    return Checkpointer(env.user, find_project_root(cwd), env.settings.checkpoints, create=False)


def _store_facts(checkpointer: Checkpointer) -> tuple[int, str]:
    try:
        store = checkpointer.recorder.store
    except StoreError as exc:
        raise CliError(str(exc)) from exc
    with store.reading():
        return store.horizon(), store.store_id


def _resolve(session: Session, given: str) -> tuple[str, CheckpointEntry | None]:
    """(entry id, record) for ENTRY: a checkpoint record id, or an entry id (prefix)."""
    if not given:
        raise CliError("give an entry id (`agentsh sessions show ID --tree`) or a checkpoint id")
    for record in session.tree.records:
        if isinstance(record, CheckpointEntry) and record.id == given:
            return record.target_id, record
    matches = [entry_id for entry_id in session.tree.nodes if entry_id.startswith(given)]
    if len(matches) == 1:
        return matches[0], None
    if not matches:
        raise CliError(f"no entry or checkpoint {given!r} in session {session.id[:8]}")
    raise CliError(f"{given!r} matches {len(matches)} entries; give more of the id")


def _row_json(
    session: Session, record: CheckpointEntry, on_path: set[str], horizon: int, store_id: str
) -> dict[str, Any]:
    node = session.tree.nodes.get(record.target_id)
    problem = ""
    if record.store != store_id:
        problem = "from another checkpoint store"
    elif record.seq < horizon:
        problem = "its file history was dropped (store budget)"
    return {
        "id": record.id,
        "targetId": record.target_id,
        "entry": entry_summary(node, 80) if node is not None else "",
        "timestamp": record.timestamp,
        "reason": record.reason,
        "seq": record.seq,
        "files": list(record.files),
        "changed": record.changed,
        "onPath": record.target_id in on_path,
        "restorable": not problem,
        "problem": problem,
    }


def _print_plan(session: Session, plan: RestorePlan, *, overwrite: bool, dry_run: bool) -> None:
    head = "would restore" if dry_run else "restoring"
    node = session.tree.nodes.get(plan.entry_id)
    what = f" ({_safe(entry_summary(node, 60))})" if node is not None else ""
    if not plan.items:
        print(f"the files already are as at {plan.entry_id}{what}")
        return
    print(f"{head} the files of {plan.entry_id}{what}:")
    for item in plan.items:
        print(f"  {_item_line(item, overwrite=overwrite)}")


def _item_line(item: PlanItem, *, overwrite: bool) -> str:
    counts = "binary" if item.binary else f"+{item.added} -{item.removed}"
    line = f"{_ACTIONS.get(item.action, '?')} {_safe(item.path)}  {counts}"
    if item.problem:
        return f"{line}  (kept: {item.problem})"
    if item.outside and not overwrite:
        return (
            f"{line}  (kept: changed outside agentsh since the last checkpoint; "
            "--overwrite-changed restores it)"
        )
    if item.outside:
        line = f"{line}  (changed outside agentsh; overwritten)"
    if item.id_bits_dropped:  # as git: never set again by a restore
        line = f"{line}  (without its {item.id_bits_dropped}, as git does)"
    return line


def _files_text(files: list[str], changed: int) -> str:
    if not changed:
        return "no file changed"
    names = ", ".join(_safe(f) for f in files)
    more = f" and {changed - len(files)} more" if changed > len(files) else ""
    return f"✎ {changed} file{'s' if changed != 1 else ''}: {names}{more}"


def _clock(stamp: str) -> str:
    try:
        when = datetime.fromisoformat(stamp.replace("Z", "+00:00")).astimezone()
    except ValueError:
        return stamp[:16]
    today = time.strftime("%Y-%m-%d")
    shown = when.strftime("%Y-%m-%d %H:%M")
    return shown[11:] if shown.startswith(today) else shown


def _safe(text: str) -> str:
    """Control characters (escape sequences in a file name) shown as escapes, not obeyed."""
    return "".join(
        ch if ch.isprintable() or ch == " " else ch.encode("unicode_escape").decode("ascii")
        for ch in text
    )


def _print_json(value: Any) -> None:
    json.dump(value, sys.stdout, ensure_ascii=False, indent=2)
    sys.stdout.write("\n")
