"""A process killed in the middle of indexing leaves an index that opens and repairs itself."""

from __future__ import annotations

import os
import signal
import sqlite3
import subprocess
import sys
import textwrap
import time
from pathlib import Path

from agentsh.config import SearchSettings
from agentsh.memory.index import MemoryIndex
from agentsh.paths import ProjectPaths, UserPaths

FILES = 600

_CHILD = textwrap.dedent(
    """
    import sys, time
    from agentsh.config import SearchSettings
    from agentsh.memory.index import MemoryIndex
    from agentsh.paths import ProjectPaths, UserPaths

    index = MemoryIndex.open(
        UserPaths.from_env(), ProjectPaths.discover(), SearchSettings(embedding="none")
    )

    def progress(done, total, path):
        print(done, flush=True)
        time.sleep(0.005)  # slow enough for the parent to kill us mid-way

    index.sync(progress=progress)
    print("finished", flush=True)
    """
)


def test_a_kill_mid_index_leaves_a_consistent_index_that_the_next_sync_repairs(
    project: Path, agentsh_home: Path
) -> None:
    memory = ProjectPaths(project).memory_dir
    memory.mkdir(parents=True)
    for i in range(FILES):
        body = "\n".join(
            f"note {i} line {j}: the deploy key of service-{i} rotates" for j in range(30)
        )
        (memory / f"note-{i:04d}.md").write_text(body, encoding="utf-8")

    env = {**os.environ, "PYTHONPATH": str(Path(__file__).resolve().parents[2])}
    child = subprocess.Popen(
        [sys.executable, "-c", _CHILD],
        cwd=project,
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    assert child.stdout is not None
    deadline = time.monotonic() + 30
    done = 0
    while done < 50 and time.monotonic() < deadline:
        line = child.stdout.readline()
        if not line:
            break
        done = int(line) if line.strip().isdigit() else done
    child.send_signal(signal.SIGKILL)
    child.wait(timeout=10)
    assert 50 <= done < FILES, child.stderr.read() if child.stderr else ""

    index = MemoryIndex.open(
        UserPaths.from_env(), ProjectPaths(project), SearchSettings(embedding="none")
    )
    try:
        with sqlite3.connect(index.db_path) as conn:
            assert conn.execute("PRAGMA integrity_check").fetchone()[0] == "ok"
            files = {r[0] for r in conn.execute("SELECT path FROM files")}
            chunked = {r[0] for r in conn.execute("SELECT DISTINCT path FROM chunks")}
            fts = conn.execute("SELECT count(*) FROM chunks_fts").fetchone()[0]
            chunks = conn.execute("SELECT count(*) FROM chunks").fetchone()[0]
        # Every file was written whole or not at all.
        assert files == chunked and fts == chunks
        assert done <= len(files) < FILES
        report = index.sync()
        assert len(report.indexed) == FILES - len(files)
        assert index.status().files == FILES
        [hit] = index.search("service-599 deploy", max_results=1).results
        assert hit.path.endswith("note-0599.md")
    finally:
        index.close()


_SYNCER = textwrap.dedent(
    """
    from agentsh.config import SearchSettings
    from agentsh.memory.index import MemoryIndex
    from agentsh.paths import ProjectPaths, UserPaths

    index = MemoryIndex.open(
        UserPaths.from_env(), ProjectPaths.discover(), SearchSettings(embedding="none")
    )
    report = index.sync()
    hits = index.search("beacon0007", max_results=1).results
    print("ok", len(report.indexed), hits[0].path.rsplit("/", 1)[-1] if hits else "-", flush=True)
    index.close()
    """
)


def test_two_processes_indexing_the_same_project_at_once_both_succeed(
    project: Path, agentsh_home: Path
) -> None:
    memory = ProjectPaths(project).memory_dir
    memory.mkdir(parents=True)
    count = 200
    for i in range(count):
        body = "\n".join(f"note {i} line {j}: beacon{i:04d} rotates" for j in range(20))
        (memory / f"note-{i:04d}.md").write_text(body, encoding="utf-8")
    env = {**os.environ, "PYTHONPATH": str(Path(__file__).resolve().parents[2])}
    children = [
        subprocess.Popen(
            [sys.executable, "-c", _SYNCER],
            cwd=project,
            env=env,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        for _ in range(2)
    ]
    outputs = [child.communicate(timeout=60) for child in children]
    for child, (out, err) in zip(children, outputs, strict=True):
        assert child.returncode == 0, err
        assert out.split()[0] == "ok" and out.split()[2] == "note-0007.md", (out, err)
    # Between them every file was indexed (a file may be indexed by both; never half).
    assert sum(int(out.split()[1]) for out, _ in outputs) >= count

    index = MemoryIndex.open(
        UserPaths.from_env(), ProjectPaths(project), SearchSettings(embedding="none")
    )
    try:
        with sqlite3.connect(index.db_path) as conn:
            assert conn.execute("PRAGMA integrity_check").fetchone()[0] == "ok"
            per_file = dict(conn.execute("SELECT path, count(*) FROM chunks GROUP BY path"))
            fts = conn.execute("SELECT count(*) FROM chunks_fts").fetchone()[0]
        assert len(per_file) == count and len(set(per_file.values())) == 1
        assert fts == sum(per_file.values())
        assert not index.sync().indexed
    finally:
        index.close()
