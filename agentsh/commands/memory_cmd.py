"""``agentsh memory list`` and ``agentsh memory add``: curated memory and typed docs from a shell.

``list`` shows both curated files (live, from disk) with how full each is, marks the entries the
injection guard would withhold from the prompt, and lists the typed docs grouped by type, with
any problem found while loading them. ``add`` writes a typed doc through the same guard as the
``memory`` tool; a blocked text is a one-line error and a non-zero exit.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import Any

from agentsh.config import Environment, load_environment
from agentsh.errors import EXIT_OK, CliError
from agentsh.memory.curated import CuratedMemory, FileSnapshot, MemoryTarget
from agentsh.memory.docs import DocError, DocType, MemoryDoc, load_docs, write_doc
from agentsh.memory.guard import Scope, first_threat
from agentsh.trust import record_own_write

_PREVIEW = 96


def list_memory(args: argparse.Namespace) -> int:
    env = _environment()
    # Listing is the user looking: an untrusted folder's memory is shown (read inside the
    # project only) with a note that a session would not load it.
    memory = CuratedMemory(env.project, env.user, env.settings.memory)
    # A snapshot taken now is exactly what a session starting now would put in its prompt.
    snapshot = memory.snapshot()
    docs, problems = load_docs(env.project.docs_dir, env.project.root)
    if not env.trusted:
        problems.insert(
            0,
            "this folder is not trusted: a session here loads none of its project memory "
            "(`agentsh trust` reviews and trusts it)",
        )
    max_bytes = env.settings.memory.guard_max_scan_bytes
    blocked_docs = {
        doc.path: threat
        for doc in docs
        if (threat := first_threat(f"{doc.title}\n{doc.body}", Scope.RECALL, max_bytes=max_bytes))
    }
    if getattr(args, "json", False):
        payload = {
            "memory": _file_json(snapshot.memory),
            "user": _file_json(snapshot.user),
            "docs_dir": str(env.project.docs_dir),
            "docs": {
                doc_type.value: [
                    _doc_json(doc, blocked_docs.get(doc.path))
                    for doc in docs
                    if doc.type is doc_type
                ]
                for doc_type in DocType
            },
            "problems": problems,
        }
        print(json.dumps(payload, ensure_ascii=False, indent=2))
        return EXIT_OK
    out: list[str] = []
    for file in snapshot.files:
        out.extend(_file_lines(file))
        out.append("")
    out.append(f"Docs ({len(docs)}) in {_shown(env.project.docs_dir, env.project.root)}")
    if not docs:
        out.append("  (none; add one with: agentsh memory add --type lesson --title T TEXT)")
    for doc_type in DocType:
        group = [doc for doc in docs if doc.type is doc_type]
        if not group:
            continue
        out.append(f"  {doc_type.value} ({len(group)}, weight {doc_type.weight:g})")
        for doc in group:
            when = doc.created or "----------"
            mark = ""
            if (threat := blocked_docs.get(doc.path)) is not None:
                mark = f"  [blocked: {threat.name}]"
            out.append(f"    {when}  {doc.title}  ({doc.path.name}){mark}")
    if problems:
        out.append("")
        out.append("Problems:")
        out.extend(f"  {problem}" for problem in problems)
    print("\n".join(out))
    return EXIT_OK


def add_memory(args: argparse.Namespace) -> int:
    env = _environment()
    text = sys.stdin.read() if args.text == "-" else args.text
    try:
        path = write_doc(
            env.project.docs_dir,
            DocType(args.type),
            args.title,
            text,
            max_scan_bytes=env.settings.memory.guard_max_scan_bytes,
            root=env.project.root,
        )
        if env.trusted:  # the user's own doc: the next start does not ask about it
            record_own_write(env.user, env.project.root, path)
    except DocError as exc:
        raise CliError(f"memory add: {exc}") from exc
    print(f"Saved {_shown(path, env.project.root)}")
    return EXIT_OK


def _environment() -> Environment:
    env = load_environment()
    for problem in env.config.problems:
        print(f"agentsh: warning: {problem}", file=sys.stderr)
    return env


def _file_lines(file: FileSnapshot) -> list[str]:
    lines = [f"{file.target.file_name}  [{file.usage}]  {file.path}"]
    if file.problem:
        lines.append(f"  ! {file.problem}")
    if file.chars > file.limit:
        lines.append("  ! over its limit: the memory tool will only accept changes that shrink it")
    if not file.entries:
        lines.append("  (empty)")
    for number, entry in enumerate(file.entries, start=1):
        flat = " ".join(entry.text.split())
        if len(flat) > _PREVIEW:
            flat = flat[: _PREVIEW - 1] + "…"
        lines.append(f"  {number}. {flat}  ({len(entry.text):,} chars)")
        if entry.threat is not None:
            lines.append(
                f"     ! withheld from the prompt by the injection guard: {entry.threat.name} "
                f"({entry.threat.description})"
            )
    return lines


def _file_json(file: FileSnapshot) -> dict[str, Any]:
    return {
        "file": file.target.file_name,
        "target": MemoryTarget(file.target).value,
        "path": str(file.path),
        "chars": file.chars,
        "limit": file.limit,
        "percent": round(100 * file.chars / file.limit) if file.limit else 0,
        "problem": file.problem,
        "entries": [
            {
                "text": entry.text,
                "chars": len(entry.text),
                "blocked": entry.threat.name if entry.threat is not None else None,
            }
            for entry in file.entries
        ],
    }


def _doc_json(doc: MemoryDoc, threat: Any) -> dict[str, Any]:
    return {
        "path": str(doc.path),
        "title": doc.title,
        "type": doc.type.value,
        "created": doc.created,
        "chars": len(doc.body),
        "blocked": threat.name if threat is not None else None,
    }


def _shown(path: Path, root: Path) -> str:
    try:
        return str(path.relative_to(root))
    except ValueError:
        return str(path)
