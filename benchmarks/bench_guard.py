"""Injection-guard speed: throughput on 1 MiB of mixed text, and adversarial worst cases.

The guard scans at most 64 KiB per call (``memory.guard_max_scan_bytes``), so the 1 MiB of mixed
text is cut into 16 windows of 64 KiB (on UTF-8 character boundaries) and each window is one
``scan(..., Scope.MEMORY_WRITE)`` call, the scope with the most patterns. The text mixes this
repository's Python source and Markdown, the developer notes and injection attempts of the
test corpus, shell snippets and Korean, Japanese and Chinese prose. The best of several rounds
is reported, in CPU time of the process (see ``best_of``).

The text is built from the repository as it is, so a figure moves a little when the sources
change. Every run also times a baseline on the same windows, round by round in turn with the
guard, so load on a shared machine falls on both alike: one pass of a plain regex over each
window (``baseline_one_regex``), the least any scan can cost. Its figure and the guard's ratio
to it are printed beside the guard's. ``--against REV`` (a git revision) adds the guard as it
was at REV, loaded under its own name (one ``guard.py`` file before the split into a package,
the package after).

A ``phases`` line splits the working tree's scan of the mixed text into preparing the text,
finding its words and anchors (the automata) and running the patterns (CPU milliseconds,
medians), so a change can be aimed at the phase that costs.

Run: ``.venv/bin/python benchmarks/bench_guard.py [--against REV]``; the last line is the
throughput of the working tree's guard.
"""

from __future__ import annotations

import argparse
import importlib.util
import json
import re
import subprocess
import sys
import tempfile
import time
import types
from collections.abc import Callable
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from agentsh.memory import guard  # noqa: E402

WINDOW = 64 * 1024
TOTAL = 1024 * 1024
ROUNDS = 7

_CJK = (
    "배포 전에 테스트를 실행하고, 설정 파일은 config 폴더 아래에 둡니다.\n"
    "設定ファイルを更新したら、サーバーを再起動してください。\n"
    "数据库连接失败时，请先检查环境变量，然后重试。\n"
)
_SHELL = (
    "curl -s localhost:8000/health | jq .status\n"
    "docker compose up -d db && pytest -x tests/\n"
    "ssh deploy@staging.internal 'systemctl restart api'\n"
    "export $(grep -v '^#' .env.example | xargs)\n"
)


def mixed_text(size: int = TOTAL, *, notes_every: int = 3) -> str:
    """About ``size`` bytes of text of the kinds a coding agent's memory holds.

    Source files and Markdown from this repository, each followed by a few lines of Korean,
    Japanese and Chinese; after every ``notes_every`` files, ten of the corpus's developer notes
    (curl, ssh, .env, tokens...), a shell snippet and one injection attempt. ``notes_every=1``
    gives the dense variant, where every window is full of the guard's trigger words.
    """
    sources = sorted((ROOT / "agentsh").rglob("*.py"))
    # The guard's own source is a wall of attack keywords: not representative text.
    sources = [p for p in sources if p.name != "guard.py" and "memory/guard" not in p.as_posix()]
    sources += sorted(ROOT.glob("*.md"))
    corpus = json.loads((ROOT / "tests/memory/data/guard_corpus.json").read_text())
    notes = corpus["benign"]
    attacks = [item["text"] for item in corpus["injections"]]
    parts: list[str] = []
    for i, path in enumerate(sources):
        parts.append(path.read_text(encoding="utf-8", errors="replace"))
        parts.append(_CJK)
        if i % notes_every == 0:
            start = (i * 10) % len(notes)
            parts.append("\n".join((notes + notes)[start : start + 10]) + "\n")
            parts.append(_SHELL)
            parts.append(attacks[i % len(attacks)] + "\n")
    text = "".join(parts)
    while len(text.encode("utf-8")) < size:
        text += text
    return text.encode("utf-8")[:size].decode("utf-8", "ignore")


def windows(text: str, size: int = WINDOW) -> list[str]:
    data = text.encode("utf-8")
    return [data[i : i + size].decode("utf-8", "ignore") for i in range(0, len(data), size)]


def best_of(rounds: int, run: Callable[[], object]) -> float:
    """The fastest of ``rounds`` runs, in CPU seconds of this process.

    CPU time, not wall time: benchmarks here run on shared machines, where other processes
    would otherwise be counted against the guard. The scan is single-threaded and does no I/O,
    so on an idle machine the two agree.
    """
    best = float("inf")
    for _ in range(rounds):
        start = time.process_time()
        run()
        best = min(best, time.process_time() - start)
    return best


def _fit(unit: str, tail: str = "") -> str:
    """``unit`` repeated to fill one 64 KiB window, then ``tail``."""
    return unit * ((WINDOW - len(tail)) // len(unit)) + tail


# Each holds every word its pattern needs, so the pattern really runs; none is a match.
ADVERSARIAL: dict[str, str] = {
    "repeated 'ignore '": _fit("ignore "),
    "near misses 'ignore all the ' ... 'rules'": _fit("ignore all the ", "rules"),
    "64 KiB of filler words after 'ignore'": "ignore" + _fit(" word", " instructions"),
    "punctuation run after 'ignore'": "ignore" + "!" * (WINDOW - 16) + " the rules",
    "repeated 'you are now ' ... 'ai'": _fit("you are now ", "ai"),
    "repeated 'system ' ... 'prompt new'": _fit("system ", "prompt new"),
    "repeated 'do not tell the ' ... 'user to'": _fit("do not tell the ", "user to"),
    "repeated 'curl $'": _fit("curl $"),
    "repeated 'curl -d @'": _fit("curl -d @"),
    "repeated '| curl '": _fit("| curl "),
    "repeated 'cat .env '": _fit("cat .env "),
    "repeated '<!--'": _fit("<!--"),
    "repeated 'send the keys to a b c d e https://x '": _fit(
        "send the keys to a b c d e https://x "
    ),
    'repeated "token=\'a"': _fit("token='a"),
    "one 64 KiB word after 'api_key='": "api_key=" + "a" * (WINDOW - 8),
    # The automata hand every occurrence to Python: the densest anchor and the densest word.
    "repeated 'nc '": _fit("nc "),
    "repeated 'n '": _fit("n "),
    "12,000 distinct words after '.env' in every block": (
        "env print cat\n" + "\n".join(f"a.env{i}" for i in range(12_000))
    )[:WINDOW],
}


def guard_at(revision: str) -> types.ModuleType:
    """The guard as it was at a git revision, loaded under its own name beside this one."""
    name = f"guard_at_{revision.replace('/', '_').replace('-', '_').replace('.', '_')}"
    single = subprocess.run(
        ["git", "cat-file", "-e", f"{revision}:agentsh/memory/guard.py"], cwd=ROOT, check=False
    )
    if single.returncode == 0:
        source = subprocess.run(
            ["git", "show", f"{revision}:agentsh/memory/guard.py"],
            cwd=ROOT,
            check=True,
            capture_output=True,
            text=True,
        ).stdout
        module = types.ModuleType(name)
        sys.modules[name] = module  # dataclasses look their module up by name
        exec(compile(source, f"{revision}:agentsh/memory/guard.py", "exec"), module.__dict__)
        return module
    # A package: its modules import each other relatively, so it loads under any name.
    folder = Path(tempfile.mkdtemp(prefix="bench-guard-")) / name
    folder.mkdir()
    listing = subprocess.run(
        ["git", "ls-tree", "--name-only", f"{revision}:agentsh/memory/guard/"],
        cwd=ROOT,
        check=True,
        capture_output=True,
        text=True,
    ).stdout.split()
    for file in listing:
        blob = subprocess.run(
            ["git", "show", f"{revision}:agentsh/memory/guard/{file}"],
            cwd=ROOT,
            check=True,
            capture_output=True,
        ).stdout
        (folder / file).write_bytes(blob)
    spec = importlib.util.spec_from_file_location(
        name, folder / "__init__.py", submodule_search_locations=[str(folder)]
    )
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    spec.loader.exec_module(module)
    return module


class _Baseline:
    """One plain regex pass over a window: what any scan costs at the least."""

    class Scope:
        MEMORY_WRITE = None

    _REGEX = re.compile(r"ignore|system|curl|secret|token|password|<!--", re.IGNORECASE)

    @classmethod
    def scan(cls, text: str, _scope: object) -> object:
        return cls._REGEX.search(text.lower())


def scan_all(module: Any, chunks: list[str]) -> None:
    for chunk in chunks:
        module.scan(chunk, module.Scope.MEMORY_WRITE)


def rounds_of(modules: dict[str, Any], chunks: list[str], rounds: int) -> dict[str, list[float]]:
    """CPU seconds of each round for each module, the modules taking turns within a round."""
    times: dict[str, list[float]] = {name: [] for name in modules}
    for _ in range(rounds):
        for name, module in modules.items():
            start = time.process_time()
            scan_all(module, chunks)
            times[name].append(time.process_time() - start)
    return times


def _median(values: list[float]) -> float:
    return sorted(values)[len(values) // 2]


def phases(chunks: list[str], rounds: int) -> dict[str, float]:
    """Median CPU milliseconds of the scan's phases over ``chunks``: where the time goes.

    Preparing (bounding, normalising, projecting, the invisible-character check), finding the
    words and anchors with the automata, and the patterns, timed window by window as
    the scan runs them (all preparations first would measure a colder cache).
    """
    from agentsh.memory.guard import matching, reading

    scope = guard.Scope.MEMORY_WRITE
    patterns = [p for p in guard.PATTERNS if scope in p.scopes]
    clock = time.process_time
    times: dict[str, list[float]] = {"prepare": [], "words": [], "patterns": []}
    for _ in range(rounds):
        spent = dict.fromkeys(times, 0.0)
        for chunk in chunks:
            start = clock()
            prepared = reading._prepare(chunk, guard.DEFAULT_MAX_SCAN_BYTES)
            if prepared.special:
                reading._hidden(prepared)
            mid = clock()
            doc = matching._Doc(prepared.projected)
            end = clock()
            for pattern in patterns:
                pattern.search(doc)
            spent["prepare"] += mid - start
            spent["words"] += end - mid
            spent["patterns"] += clock() - end
        for name, value in spent.items():
            times[name].append(value)
    return {name: _median(values) * 1000 for name, values in times.items()}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--against", metavar="REV", help="also time the guard of this revision")
    args = parser.parse_args()
    modules: dict[str, Any] = {"": guard}
    if args.against:
        modules[f" ({args.against})"] = guard_at(args.against)
    baseline = " (baseline_one_regex)"

    for label, raw in ADVERSARIAL.items():
        for suffix, module in modules.items():

            def once(module: types.ModuleType = module, raw: str = raw) -> None:
                scan_all(module, [raw])

            print(f"adversarial {label}{suffix}: {best_of(3, once) * 1000:.1f} ms")

    text = mixed_text()
    cjk_text = (_CJK * (TOTAL // len(_CJK.encode()) + 1)).encode()[:TOTAL].decode("utf-8", "ignore")
    variants = (
        ("_ascii_only", text.encode("ascii", "ignore").decode("ascii")),
        ("_cjk_only", cjk_text),
        ("_dense_notes", mixed_text(notes_every=1)),
        ("", text),
    )
    split = phases(windows(text), ROUNDS)
    print(
        "phases (mixed text, CPU ms, medians): "
        + ", ".join(f"{k} {v:.1f}" for k, v in split.items())
    )
    for label, variant in variants:
        chunks = windows(variant)
        size = len(variant.encode("utf-8"))
        if not label:
            print(f"windows: {len(chunks)} x {WINDOW // 1024} KiB, {size:,} bytes")
        times = rounds_of({**modules, baseline: _Baseline}, chunks, ROUNDS)
        base = size / _median(times[baseline]) / 1e6
        print(f"baseline_one_regex{label} median: {base:.1f} MB/s")
        # The working tree's figure last, so the last line is the benchmark's result.
        for suffix in reversed(modules):
            median = size / _median(times[suffix]) / 1e6
            print(
                f"guard_throughput{label}{suffix} median: {median:.1f} MB/s "
                f"({median / base:.2f} x the baseline)"
            )
            print(f"guard_throughput{label}{suffix}: {size / min(times[suffix]) / 1e6:.1f} MB/s")


if __name__ == "__main__":
    main()
