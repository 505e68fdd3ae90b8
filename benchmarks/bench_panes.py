"""The memory and summaries panes' own work, on big inputs (goal: each well under 50 ms).

- memory pane model: both curated files full (with a snapshot to compare against, every entry
  scanned by the injection guard) and 200 typed docs, read and grouped: what one refresh costs
  off the UI thread;
- summaries pane rows: the compactions of a 10,000-entry path with 20 compactions;
- chat projection of that path, with every compaction's archive folded;
- ``/compact undo`` on that session with 200 entries after the newest compaction.

Each figure is the median of several runs in milliseconds; the last line is the summaries
refresh, the one that runs on the UI thread.
"""

from __future__ import annotations

import os
import statistics
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from agentsh.session.session import Session

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

RUNS = 15


def median_ms(fn: Callable[[], object], runs: int = RUNS) -> float:
    times = []
    for _ in range(runs):
        start = time.perf_counter()
        fn()
        times.append((time.perf_counter() - start) * 1000)
    return statistics.median(times)


def big_session(home: Path, entries: int = 10_000, compactions: int = 20) -> Session:
    from agentsh.session.entries import CompactionEntry, Role, StopReason
    from agentsh.session.session import Session

    session = Session.create(None, home)
    per = entries // compactions
    users: list[str] = []
    for block in range(compactions):
        for n in range(per // 2 - 1):
            users.append(session.append_message(Role.USER, f"request {block}.{n}").id)
            session.append_message(
                Role.ASSISTANT, f"answer {block}.{n}", stop_reason=StopReason.STOP
            )
        session.append(
            CompactionEntry(
                id=session.new_id(), parent_id=session.leaf_id, tier="summarize",
                summary="## Goal\nkeep going", first_kept_id=users[-2],
                tokens_before=150_000, tokens_after=30_000,
            )
        )  # fmt: skip
    return session


def main() -> None:
    from agentsh.config import load_environment
    from agentsh.context.undo import undo_compaction
    from agentsh.memory.curated import CuratedMemory, MemoryTarget
    from agentsh.session.entries import Role
    from agentsh.tui.panes.memory_model import build_model
    from agentsh.tui.panes.summaries import compaction_views
    from agentsh.tui.projection import project

    home = Path(tempfile.mkdtemp(prefix="agentsh-bench-panes-"))
    os.environ["AGENTSH_HOME"] = str(home / "home")
    project_root = home / "project"
    (project_root / ".git").mkdir(parents=True)
    env = load_environment(project_root)
    memory = CuratedMemory(env.project, env.user, env.settings.memory)
    for target, size in ((MemoryTarget.MEMORY, 2_150), (MemoryTarget.USER, 1_330)):
        path = memory.path(target)
        path.parent.mkdir(parents=True, exist_ok=True)
        entries = [
            f"Fact {i}: the build uses make target t{i} and writes out/{i}." for i in range(60)
        ]
        text = ""
        while entries and len(text) + len(entries[0]) + 3 < size:
            text += entries.pop(0) + "\n§\n"
        path.write_text(text)
    snapshot = memory.snapshot()
    with memory.path(MemoryTarget.MEMORY).open("a") as f:
        f.write("A fact added during the session.\n")
    docs = env.project.docs_dir
    docs.mkdir(parents=True)
    kinds = ("spec", "skill", "lesson", "plan", "issue", "summary", "note")
    for i in range(200):
        docs.joinpath(f"doc-{i:03d}.md").write_text(
            f"---\ntype: {kinds[i % 7]}\ntitle: Doc {i}\ncreated: 2026-01-01\n---\n"
            + "Body text of the doc. " * 40
        )

    memory_ms = median_ms(lambda: build_model(memory, snapshot, docs, lambda t: t.file_name))
    session = big_session(home)
    current = session.current_path()
    rows_ms = median_ms(lambda: compaction_views(session.current_path()))
    project_ms = median_ms(lambda: project(current))
    for n in range(100):
        session.append_message(Role.USER, f"after {n}")
        session.append_message(Role.ASSISTANT, f"reply {n}")
    undo_ms = median_ms(lambda: undo_compaction(session), runs=1)
    print(f"memory_pane_model_200_docs: {memory_ms:.1f} ms")
    print(f"chat_projection_10k_entries_20_archives: {project_ms:.1f} ms")
    print(f"compact_undo_10k_entries_200_copied: {undo_ms:.1f} ms")
    print(f"summaries_pane_rows_10k_entries: {rows_ms:.1f} ms")


if __name__ == "__main__":
    main()
