"""List 1,000 sessions of ~1 MB each with a warm catalog. Goal: under 200 ms (SPEC §2).

Writes 1,000 session files (one real session's entries, each file with its own header) into one
project, then times: the cold rebuild (no database: every file scanned once), the warm listing
(``Catalog(...).list(project)`` as ``agentsh sessions`` does it: scandir + stat of every file,
one query), a warm listing after one session grew (read from its offset), and the whole
``agentsh sessions --json`` command. Needs ~1 GB of free space in the temp folder.

    .venv/bin/python benchmarks/bench_catalog_list.py [--sessions N] [--size-mb X]
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import tempfile
import time
import uuid
from collections.abc import Callable
from pathlib import Path

from agentsh.paths import UserPaths
from agentsh.session.catalog import Catalog
from agentsh.session.entries import Header, Role, StopReason, ToolCall, Usage, encode_line
from agentsh.session.session import Session


def body_of_one_session(folder: Path, size: int) -> bytes:
    """The entry lines of a realistic session of about ``size`` bytes."""
    session = Session.create(folder, Path("/home/user/project"))
    turn = 0
    assert session.path is not None
    while not session.path.exists() or session.path.stat().st_size < size:
        turn += 1
        session.append_message(Role.USER, f"turn {turn}: please look at the parser " * 3)
        call = ToolCall(id=f"call_{turn}", name="read", arguments='{"path": "src/parser.py"}')
        session.append_message(
            Role.ASSISTANT,
            "Let me read the file first.",
            tool_calls=(call,),
            model="anthropic/claude-sonnet-4",
            usage=Usage(input_tokens=12_000 + turn, output_tokens=120, cost=0.04),
            stop_reason=StopReason.TOOL_CALLS,
        )
        session.append_tool_result(call.id, "read", "def parse(tokens):\n    ...\n" * 20)
        session.append_message(
            Role.ASSISTANT,
            "The parser drops the last token; here is the fix. " * 4,
            model="anthropic/claude-sonnet-4",
            usage=Usage(input_tokens=13_000 + turn, output_tokens=400, cost=0.05),
            stop_reason=StopReason.STOP,
        )
    session.close()
    data = session.path.read_bytes()
    session.path.unlink()
    return data[data.index(b"\n") + 1 :]


def write_sessions(paths: UserPaths, project: Path, count: int, size: int) -> list[Path]:
    folder = paths.project_sessions_dir(project)
    folder.mkdir(parents=True, exist_ok=True)
    body = body_of_one_session(folder, size)
    files = []
    for index in range(count):
        session_id = str(uuid.uuid4())
        header = Header(
            id=session_id,
            timestamp=f"2026-01-01T00:{index // 60 % 60:02d}:00.000Z",
            cwd=str(project),
        )
        path = folder / f"2026010{index % 9 + 1}T000000{index:06d}Z_{session_id}.jsonl"
        path.write_bytes(encode_line(header) + body)
        files.append(path)
    return files


def timed(action: Callable[[], object], runs: int) -> float:
    samples = []
    for _ in range(runs):
        start = time.perf_counter()
        action()
        samples.append(time.perf_counter() - start)
    return statistics.median(samples)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--sessions", type=int, default=1000)
    parser.add_argument("--size-mb", type=float, default=1.0)
    parser.add_argument("--runs", type=int, default=15)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="agentsh-bench-catalog-") as tmp:
        home = Path(tmp) / "home"
        os.environ["AGENTSH_HOME"] = str(home)
        paths = UserPaths.from_env()
        project = Path(tmp) / "project"
        project.mkdir()
        started = time.perf_counter()
        files = write_sessions(paths, project, args.sessions, int(args.size_mb * 1e6))
        total = sum(f.stat().st_size for f in files) / 1e6
        print(
            f"wrote {len(files)} sessions, {total:.0f} MB, in {time.perf_counter() - started:.1f} s"
        )

        start = time.perf_counter()
        listed = Catalog(paths).list(project)
        cold = time.perf_counter() - start
        assert len(listed) == args.sessions, len(listed)
        print(f"catalog_cold_rebuild: {cold:.2f} s ({total / cold:.0f} MB/s)")

        warm = timed(lambda: Catalog(paths).list(project), args.runs)

        grown = Session.open(files[0])
        grown.append_message(Role.USER, "one more question")
        grown.close()
        start = time.perf_counter()
        Catalog(paths).list(project)
        after_append = time.perf_counter() - start
        print(f"catalog_list_after_one_append: {after_append * 1000:.1f} ms")

        env = {**os.environ, "AGENTSH_HOME": str(home)}
        cli = timed(
            lambda: subprocess.run(
                [sys.executable, "-m", "agentsh", "sessions", "--json"],
                cwd=project,
                env=env,
                stdout=subprocess.DEVNULL,
                check=True,
            ),
            5,
        )
        print(f"cli_sessions_json_1000: {cli * 1000:.0f} ms (the whole command, start-up included)")
        print(f"catalog_list_1000_warm: {warm * 1000:.1f} ms")


if __name__ == "__main__":
    main()
