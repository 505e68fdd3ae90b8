"""The editor's history of sent messages, kept per project across restarts.

One JSON file per project in the user's data dir (:meth:`UserPaths.prompt_history_file`),
private to the user (0600: what was typed can hold secrets), written atomically. It is bounded:
the newest :data:`MAX_ENTRIES` messages within :data:`MAX_BYTES`; a message larger than that
stays in this run's history only. Each write re-reads the file and appends, so two agentsh
windows on one project keep both their messages. The file is a convenience: an unreadable or
odd one is read as empty and a failed write is dropped.
"""

from __future__ import annotations

import json
import threading
from pathlib import Path

from agentsh.fsutil import atomic_write

MAX_ENTRIES = 500
MAX_BYTES = 512 * 1024  # of UTF-8 text, all entries together
VERSION = 1

_write_lock = threading.Lock()  # sends in quick succession write one after the other


def load_history(path: Path) -> list[str]:
    """The saved messages, oldest first ([] when there is no usable file)."""
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return []
    entries = data.get("entries") if isinstance(data, dict) else None
    if not isinstance(entries, list):
        return []
    return _bounded([e for e in entries if isinstance(e, str) and e.strip()])


def append_history(path: Path, text: str) -> None:
    """Add ``text`` as the newest entry (an immediate repeat is not added twice)."""
    if not text.strip() or len(text.encode("utf-8")) > MAX_BYTES:
        return
    with _write_lock:
        entries = load_history(path)
        if entries and entries[-1] == text:
            return
        entries = _bounded([*entries, text])
        body = json.dumps({"version": VERSION, "entries": entries}, ensure_ascii=False)
        try:
            path.parent.mkdir(parents=True, exist_ok=True, mode=0o700)
            atomic_write(path, body.encode("utf-8"), mode=0o600)
        except OSError:
            pass  # a convenience: the message was sent; only its recall is lost


def _bounded(entries: list[str]) -> list[str]:
    """The newest entries that fit both limits."""
    kept: list[str] = []
    size = 0
    for entry in reversed(entries[-MAX_ENTRIES:]):
        size += len(entry.encode("utf-8"))
        if size > MAX_BYTES:
            break
        kept.append(entry)
    kept.reverse()
    return kept
