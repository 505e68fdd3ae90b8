"""``agentsh memory search`` as a process, on a 10,000-chunk index, beside the process floor.

Builds the same synthetic memory as ``bench_search`` (230 notes, ~10,400 chunks, random vectors
filed under the local model's id, so a search really embeds its query with MiniLM), then runs
``agentsh memory search QUERY`` as a fresh process per query, interleaved with the floor every
agentsh command pays, ``agentsh --version`` (interpreter start and the CLI module). Queries are
never repeated, so no cached query vector helps; the OS file cache is warm (a warm-up search runs
first), which is what a user who searches twice in a row gets. Each query is then asked again
at once (as with another ``-k`` or ``--json``). Medians of ``--runs`` queries. The goal (issue
16): p50 under 0.5 s.

Two ways, each query by each: as a user has it (the warm-up search starts the warm search
process, which answers the searches after it), and with ``AGENTSH_NO_WARM_SEARCH=1`` (every
search loads the model in its own process; a query asked again finds its vector on disk).

    .venv/bin/python benchmarks/bench_memory_search_cli.py [--runs 15] [--baseline ROOT]
        [--warm S] [--keep DIR]

``--baseline ROOT`` also runs another checkout's code (e.g. /work/main) the same way,
interleaved query by query, for a before/after in the same run. ``--warm S`` writes the user's
``search.warm_process_s`` (for a baseline where the warm process is opt-in). ``--keep DIR``
builds the memory in DIR once and reuses it. The warm processes are stopped at the end.

The last line is ``memory_search_process_p50: <median> s`` (the first way).
"""

from __future__ import annotations

import argparse
import contextlib
import os
import random
import signal
import socket
import statistics
import struct
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from bench_search import RandomEmbedder, _queries, make_corpus
from benchlib import git_project, percentile

from agentsh.config import SearchSettings, load_environment
from agentsh.memory.index import MemoryIndex


def _build(project: Path, env: dict[str, str]) -> int:
    saved = os.environ.copy()
    cwd = Path.cwd()
    os.environ.update(env)
    os.chdir(project)
    try:
        paths = load_environment()
        make_corpus(paths.project.memory_dir, files=230, lines_per_file=850)
        with MemoryIndex.open(
            paths.user, paths.project, SearchSettings(), embedder=RandomEmbedder(), background=False
        ) as index:
            index.sync()
            return index.status().chunks
    finally:
        os.chdir(cwd)
        os.environ.clear()
        os.environ.update(saved)


def _run(command: list[str], cwd: Path, env: dict[str, str]) -> float:
    started = time.perf_counter()
    done = subprocess.run(command, cwd=cwd, env=env, capture_output=True, text=True)
    seconds = time.perf_counter() - started
    if done.returncode != 0:
        raise SystemExit(f"{command[1:4]} failed: {done.stderr.strip()[-400:]}")
    return seconds


def _stop_warm_servers(folder: Path) -> None:
    """End the warm search processes listening in ``folder`` (their pid from the socket)."""
    for path in folder.glob("*.sock") if folder.is_dir() else ():
        with contextlib.suppress(OSError), socket.socket(socket.AF_UNIX) as conn:
            conn.connect(str(path))
            creds = conn.getsockopt(socket.SOL_SOCKET, socket.SO_PEERCRED, struct.calcsize("3i"))
            os.kill(struct.unpack("3i", creds)[0], signal.SIGTERM)


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--runs", type=int, default=15)
    parser.add_argument("--baseline", type=Path, help="another checkout, run the same way")
    parser.add_argument("--warm", type=float, default=0.0, help="search.warm_process_s")
    parser.add_argument("--keep", type=Path, help="build the memory here once, reuse it")
    args = parser.parse_args()
    with contextlib.ExitStack() as stack:
        if args.keep is not None:
            home = args.keep.resolve()
            home.mkdir(parents=True, exist_ok=True)
        else:
            home = Path(stack.enter_context(tempfile.TemporaryDirectory()))
        chunks, seconds = _measure(home, args)
    return _report(chunks, args.runs, *seconds)


def _measure(
    home: Path, args: argparse.Namespace
) -> tuple[int, tuple[list[float], dict[str, list[float]], str]]:
    agentsh = str(Path(sys.executable).parent / "agentsh")
    project = home / "project"
    env = {
        "PATH": os.environ.get("PATH", ""),
        "HOME": str(home),
        "AGENTSH_HOME": str(home / "agentsh"),
    }
    built = home / "built"
    if built.is_file():
        chunks = int(built.read_text())
    else:
        git_project(project)
        chunks = _build(project, env)
        built.write_text(str(chunks))
    config = home / "agentsh" / "config" / "config.toml"
    config.parent.mkdir(parents=True, exist_ok=True)
    config.write_text(f"[search]\nwarm_process_s = {args.warm}\n" if args.warm else "")
    # The queries are new to every search: no vector kept on disk by an earlier run.
    (home / "agentsh" / "cache" / "query-vectors.sqlite").unlink(missing_ok=True)
    queries = _queries(random.Random(11), args.runs + 1)
    floor: list[float] = []
    times: dict[str, list[float]] = {}
    main_name = "agentsh memory search"
    programs = [
        (main_name, env),
        ("  no warm process", {**env, "AGENTSH_NO_WARM_SEARCH": "1"}),
    ]
    if args.baseline is not None:
        programs.append((f"baseline {args.baseline}", {**env, "PYTHONPATH": str(args.baseline)}))
    try:
        for i, query in enumerate(queries):
            f = _run([agentsh, "--version"], project, env)
            if i:  # the first search warms the file cache (and starts the warm processes)
                floor.append(f)
            for name, program_env in programs:
                s = _run([agentsh, "memory", "search", query], project, program_env)
                a = _run([agentsh, "memory", "search", query], project, program_env)
                if i:
                    times.setdefault(name, []).append(s)
                    times.setdefault(f"{name}, asked again", []).append(a)
    finally:
        _stop_warm_servers(home / "agentsh" / "cache" / "run")
    return chunks, (floor, times, main_name)


def _report(
    chunks: int, runs: int, floor: list[float], times: dict[str, list[float]], main_name: str
) -> int:
    print(f"index: {chunks} chunks; {runs} fresh queries, each a new process")
    print(f"{'agentsh --version (process floor)':40s} p50 {statistics.median(floor):.3f} s")
    for name, values in times.items():
        p50, p90 = statistics.median(values), percentile(values, 90)
        print(f"{name:40s} p50 {p50:.3f} s   p90 {p90:.3f} s")
    print(f"memory_search_process_p50: {statistics.median(times[main_name]):.3f} s")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
