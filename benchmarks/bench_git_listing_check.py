"""The first file listing of a process in a repository whose untracked folder holds a
.gitignore line that makes git's matcher spin, beside the same repository without it.

Each figure is one fresh process listing the repository as a checkpoint does
(``checkpoints.scan.list_files``): the checks of :mod:`agentsh.git_listing` run once per
process, so a fresh process is what a user pays at every ``agentsh -p``. Before, the spinning
line was found only by the listing's 10 s timeout; now the listing's check finds it first.
The baseline is the clean repository in the same run (rounds alternate). A third figure is
the check's own cost on this checkout (its untracked-folder listing included).

Run: ``.venv/bin/python benchmarks/bench_git_listing_check.py [--rounds N]``; the last line is
the median first listing with the spinning line.
"""

from __future__ import annotations

import argparse
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

from benchlib import ROOT

SPIN = "/".join(["**"] * 12) + "/x"
CHILD = """
import sys, time
from pathlib import Path
from agentsh.checkpoints import scan
from agentsh.git_listing import listing_refusal
root = Path(sys.argv[1])
start = time.perf_counter()
if sys.argv[2] == "check":
    listing_refusal(root)
else:
    scan.list_files(root, max_files=100_000)
print(time.perf_counter() - start)
"""


def _repo(root: Path, *, spinning: bool) -> Path:
    subprocess.run(["git", "init", "-q", str(root)], check=True)
    (root / "top.txt").write_text("top\n")
    deep = root.joinpath(*["a"] * 40)
    deep.mkdir(parents=True)
    (deep / "f.txt").write_text("deep\n")
    if spinning:
        (root / "a" / ".gitignore").write_text(f"{SPIN}\n")  # untracked folder
    return root


def _one(root: Path, what: str) -> float:
    done = subprocess.run(
        [sys.executable, "-c", CHILD, str(root), what],
        check=True,
        capture_output=True,
        text=True,
        cwd=ROOT,
        timeout=120,
    )
    return float(done.stdout.strip())


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=3)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        spin = _repo(Path(tmp) / "spin", spinning=True)
        clean = _repo(Path(tmp) / "clean", spinning=False)
        spun: list[float] = []
        plain: list[float] = []
        check: list[float] = []
        for _ in range(args.rounds):
            spun.append(_one(spin, "list"))
            plain.append(_one(clean, "list"))
            check.append(_one(ROOT, "check"))
    print(f"first listing, clean repository (baseline): {statistics.median(plain) * 1000:.0f} ms")
    print(f"listing check on this checkout: {statistics.median(check) * 1000:.0f} ms")
    print(f"first_listing_spinning_untracked: {statistics.median(spun) * 1000:.0f} ms")


if __name__ == "__main__":
    main()
