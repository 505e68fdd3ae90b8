"""``agentsh -p`` end to end on the scripted server, beside a bare ``import litellm``.

Both are fresh processes, interleaved run by run so machine load hits them alike:

- reference: ``python -c "import litellm"`` with ``LITELLM_LOCAL_MODEL_COST_MAP=True`` (what any
  Python program that calls a model through litellm pays before it can start);
- agentsh: ``agentsh -p "hello" -m openai/test-model --api-base <scripted server>`` in a fresh
  git project and a fresh AGENTSH_HOME: start, new session, one streamed turn, answer printed,
  process gone.

- agentsh again, warm: the same command once more in the same home, as a user's next ``-p``:
  its model worker is forked by the warm worker the first run left
  (:mod:`agentsh.llm.warm_worker`), litellm already loaded. The warm worker is ended after
  each run; its resident memory is printed (RSS, and PSS, which counts a page shared with
  another process by its share: the first run's worker has ended by then, so nearly every
  page is its own).

The scripted server (``python -m tests.fakes.server``) runs as its own process. Peak resident
memory comes from ``wait4`` (the largest of the process and the children it waited for; a
forked worker is the warm worker's child, not counted there). One warm-up run each (it fills
the file cache), then ``--runs`` runs each; medians. The goal (issue 16): agentsh within 2x the
bare import.

    .venv/bin/python benchmarks/bench_headless.py [--runs 7]

The last lines are ``headless_p_ratio: <agentsh median / import litellm median> x`` and the
same for the warm run.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from benchlib import ROOT, git_project

from tests.e2e.tmux import ScriptedServerProcess
from tests.fakes.warm_workers import end_warm_workers, warm_workers

ANSWER = "The answer is forty-two, and here is a short explanation of why that is so."


def _timed(command: list[str], cwd: Path, env: dict[str, str]) -> tuple[float, float, str]:
    """(seconds, peak RSS in MB, stdout) of one process run to its end."""
    started = time.perf_counter()
    proc = subprocess.Popen(
        command, cwd=cwd, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True
    )
    assert proc.stdout is not None and proc.stderr is not None
    out = proc.stdout.read()
    err = proc.stderr.read()
    _pid, status, usage = os.wait4(proc.pid, 0)
    seconds = time.perf_counter() - started
    proc.returncode = os.waitstatus_to_exitcode(status)
    if proc.returncode != 0:
        raise SystemExit(f"{command[:4]} failed ({proc.returncode}): {err.strip()[-400:]}")
    return seconds, usage.ru_maxrss / 1024, out


def _resident_mb(pid: int) -> tuple[float, float]:
    """(RSS, PSS) of ``pid`` in MB."""
    values = {}
    for line in Path(f"/proc/{pid}/smaps_rollup").read_text().splitlines():
        name, _, rest = line.partition(":")
        if name in ("Rss", "Pss"):
            values[name] = int(rest.split()[0]) / 1024
    return values["Rss"], values["Pss"]


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--runs", type=int, default=7)
    args = parser.parse_args()
    python = sys.executable
    agentsh = str(Path(python).parent / "agentsh")
    with tempfile.TemporaryDirectory() as tmp_name:
        tmp = Path(tmp_name)
        script = tmp / "script.json"
        script.write_text(json.dumps([ANSWER] * (2 * args.runs + 4)))
        base_env = {
            "PATH": os.environ.get("PATH", ""),
            "PYTHONPATH": str(ROOT),  # this checkout's agentsh, also when run from another
            "LITELLM_LOCAL_MODEL_COST_MAP": "True",
            "AGENTSH_NO_OLLAMA_PROBE": "1",
        }
        bare: list[tuple[float, float]] = []
        ours: list[tuple[float, float]] = []
        warm: list[tuple[float, float]] = []
        memory: list[tuple[float, float]] = []
        with ScriptedServerProcess(script, root=ROOT) as server:
            for run in range(args.runs + 1):
                home = tmp / f"home-{run}"
                project = git_project(home / "project")
                env = {**base_env, "HOME": str(home), "AGENTSH_HOME": str(home / "agentsh")}
                b = _timed([python, "-c", "import litellm"], project, env)
                command = [agentsh, "-p", "hello", "-m", "openai/test-model",
                           "--api-base", server.base_url]  # fmt: skip
                a = _timed(command, project, env)
                w = _timed(command, project, env)
                if ANSWER not in a[2] or ANSWER not in w[2]:
                    raise SystemExit(f"agentsh -p printed {a[2]!r}, then {w[2]!r}")
                kept = [_resident_mb(pid) for pid in warm_workers(home)]
                end_warm_workers(home)
                if run:  # the first run of each warms the file cache
                    bare.append(b[:2])
                    ours.append(a[:2])
                    warm.append(w[:2])
                    memory.extend(kept)
    b_s = statistics.median(s for s, _ in bare)
    a_s = statistics.median(s for s, _ in ours)
    b_mb = statistics.median(m for _, m in bare)
    a_mb = statistics.median(m for _, m in ours)
    print(f"runs: {args.runs} each, interleaved, after one warm-up run each")
    print(f"python -c 'import litellm'   {b_s:.2f} s   peak {b_mb:.0f} MB")
    print(f"agentsh -p (one turn)        {a_s:.2f} s   peak {a_mb:.0f} MB")
    w_s = statistics.median(s for s, _ in warm)
    w_mb = statistics.median(m for _, m in warm)
    print(f"agentsh -p again (warm)      {w_s:.2f} s   peak {w_mb:.0f} MB")
    if memory:
        rss = statistics.median(r for r, _ in memory)
        pss = statistics.median(p for _, p in memory)
        print(f"the warm worker left: RSS {rss:.0f} MB, PSS {pss:.0f} MB ({len(memory)} runs)")
    else:
        print("no warm worker was left (AGENTSH_WARM_WORKER_S=0, or a path too long)")
    print(f"headless_p_seconds: {a_s:.2f} s")
    print(f"headless_p_ratio: {a_s / b_s:.2f} x")
    print(f"headless_p_warm_ratio: {w_s / b_s:.2f} x")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
