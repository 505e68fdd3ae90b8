"""How often the injection guard flags ordinary code and docs as tool output, beside what it
catches of the injection corpus: the two sides of every ``TOOL_OUTPUT`` pattern.

Every text file under the given folders (default: this checkout's ``agentsh/``, ``docs/``,
``README.md`` and the installed packages of its ``.venv``) is cut into 50 KiB pages, as
``read`` hands them over, and scanned in the ``TOOL_OUTPUT`` scope; so are the corpus's
injection attempts and benign notes (tests/memory/data/guard_corpus.json). Printed: the pages
flagged, by pattern, with a few of their files; the corpus figures; the throughput. The last
line is the share of ordinary pages flagged.

Run: ``.venv/bin/python benchmarks/bench_tool_output_flags.py [FOLDER...] [--max-mb N]``.
"""

from __future__ import annotations

import argparse
import json
import time
from collections import Counter, defaultdict
from pathlib import Path

from benchlib import ROOT

from agentsh.memory.guard import Scope, scan

PAGE = 50 * 1024
_SUFFIXES = {
    ".py",
    ".md",
    ".rst",
    ".txt",
    ".toml",
    ".cfg",
    ".json",
    ".yaml",
    ".yml",
    ".html",
    ".js",
    ".ts",
    ".sh",
    ".ini",
    ".pyi",
    ".c",
    ".h",
    ".rs",
}


def _files(folders: list[Path]) -> list[Path]:
    found: list[Path] = []
    for folder in folders:
        if folder.is_file():
            found.append(folder)
            continue
        found += sorted(p for p in folder.rglob("*") if p.suffix in _SUFFIXES and p.is_file())
    return found


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("folders", nargs="*", type=Path)
    parser.add_argument("--max-mb", type=float, default=200.0, help="stop after this much text")
    args = parser.parse_args()
    venv = sorted((ROOT / ".venv" / "lib").glob("python3*/site-packages"))
    folders = args.folders or [ROOT / "agentsh", ROOT / "docs", ROOT / "README.md", *venv]
    pages = flagged = 0
    size = 0
    elapsed = 0.0
    by_name: dict[str, list[str]] = defaultdict(list)
    for path in _files(folders):
        try:
            text = path.read_text(encoding="utf-8")
        except (OSError, UnicodeDecodeError):
            continue
        for start in range(0, max(len(text), 1), PAGE):
            page = text[start : start + PAGE]
            began = time.process_time()
            threats = scan(page, Scope.TOOL_OUTPUT, max_bytes=len(page.encode()) + 1)
            elapsed += time.process_time() - began
            pages += 1
            size += len(page.encode())
            if threats:
                flagged += 1
                for threat in threats:
                    by_name[threat.name].append(f"{path}: {threat.excerpt}")
        if size > args.max_mb * 1024 * 1024:
            break
    corpus = json.loads((ROOT / "tests/memory/data/guard_corpus.json").read_text("utf-8"))
    attempts = [i["text"] for i in corpus["injections"]]
    caught = sum(1 for t in attempts if scan(t, Scope.TOOL_OUTPUT))
    benign = sum(1 for t in corpus["benign"] if scan(t, Scope.TOOL_OUTPUT))
    counts = Counter({name: len(hits) for name, hits in by_name.items()})
    for name, count in counts.most_common():
        print(f"{name}: {count} pages")
        for hit in by_name[name][:6]:
            print(f"    {hit[:220]}")
    print(
        f"corpus: {caught}/{len(attempts)} injection attempts flagged, "
        f"{benign}/{len(corpus['benign'])} benign notes flagged"
    )
    print(
        f"pages: {flagged}/{pages} flagged, {size / 1e6:.1f} MB at "
        f"{size / 1e6 / max(elapsed, 1e-9):.1f} MB/s"
    )
    print(f"tool_output_flagged_pages: {100 * flagged / max(pages, 1):.3f} %")


if __name__ == "__main__":
    main()
