"""Keystroke-to-screen latency with a 2,000-message transcript, and streaming at 1,000 tokens/s.

Both run the real ``agentsh`` in a 120x40 tmux pane (a private tmux server).

1. Keystrokes: a session of 2,000 messages (1,000 exchanges with some markdown) is opened with
   ``--session``; then 40 characters are typed one at a time, and for each the pane is polled
   until the editor shows it. The figure is the median time from send-keys to screen, minus
   the median cost of one capture-pane call (measured the same run). Goal: under 50 ms.
2. Streaming: the scripted server streams a ~3,000-token answer at ~1,000 tokens/s (a fixed
   delay before each chunk). The pane is polled for the first and last words of the answer;
   the UI keeps up when the time between them on screen matches the server's send time. It
   prints the on-screen rate and the lag at the end (on-screen duration minus send duration).

    .venv/bin/python benchmarks/bench_tui_keystroke.py

The last line is ``tui_keystroke_latency_2000_msgs: <median> ms``.
"""

from __future__ import annotations

import json
import os
import random
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from agentsh.session.entries import Role, StopReason  # noqa: E402
from agentsh.session.session import Session  # noqa: E402
from tests.e2e.tmux import ScriptedServerProcess, TmuxPane, tmux_available  # noqa: E402
from tests.fakes.server import split_pieces  # noqa: E402

MESSAGES = 2000
KEYS = "thequickbrownfoxjumpsoverthelazydog1234"
STREAM_TOKENS = 3000
TOKENS_PER_SECOND = 1000


def _env(home: Path, **extra: str) -> dict[str, str]:
    return {
        "AGENTSH_HOME": str(home),
        "HOME": str(home),
        "PATH": os.environ.get("PATH", ""),
        "TERM": "xterm-256color",
        "PYTHONPATH": str(ROOT),
        "AGENTSH_NO_OLLAMA_PROBE": "1",
        "LITELLM_LOCAL_MODEL_COST_MAP": "True",
        **extra,
    }


def _long_session(folder: Path, cwd: Path) -> Path:
    session = Session.create(folder, cwd)
    for i in range(MESSAGES // 2):
        session.append_message(Role.USER, f"Question {i}: how does `module_{i}` work?")
        session.append_message(
            Role.ASSISTANT,
            f"## Module {i}\n\nIt parses **input** and returns a `Result`.\n\n"
            f"- step one\n- step two\n\n```python\nresult = module_{i}.run(data)\n```",
            stop_reason=StopReason.STOP,
        )
    session.sync()
    session.close()
    assert session.path is not None
    return session.path


def _capture_cost(pane: TmuxPane) -> float:
    samples = []
    for _ in range(30):
        start = time.perf_counter()
        pane.screen()
        samples.append(time.perf_counter() - start)
    return statistics.median(samples)


def keystrokes(tmp: Path, project: Path) -> tuple[float, float]:
    home = tmp / "home-keys"
    session_file = _long_session(home / "data" / "sessions" / "bench", project)
    command = [sys.executable, "-m", "agentsh", "--session", str(session_file)]
    with TmuxPane(command, cwd=project, env=_env(home), width=120, height=40) as pane:
        pane.wait_for(lambda s: "Message agentsh" in s and "Module 999" in s, timeout=60)
        pane.wait_for(lambda s: "loading…" not in s, timeout=60)
        capture = _capture_cost(pane)
        latencies = []
        typed = ""
        for char in KEYS:
            typed += char
            start = time.perf_counter()
            pane.type(char)
            while typed not in pane.screen():
                if time.perf_counter() - start > 5:
                    raise TimeoutError(f"{typed!r} never appeared")
            latencies.append(time.perf_counter() - start)
    return statistics.median(latencies) - capture / 2, capture


def streaming(tmp: Path, project: Path) -> tuple[float, float, float] | None:
    words = ["STREAMSTART"]
    rng = random.Random(7)
    vocabulary = ["parser", "token", "window", "context", "the", "a", "reads", "writes", "file"]
    while len(" ".join(words)) < STREAM_TOKENS * 4 - 20:
        words.append(rng.choice(vocabulary) + ("\n\n" if rng.random() < 0.05 else ""))
    words.append("STREAMEND")
    text = " ".join(words)
    tokens = len(text) / 4
    pieces = len(split_pieces(text, random.Random(0))) + 2
    delay = tokens / TOKENS_PER_SECOND / pieces
    send_seconds = pieces * delay
    script = tmp / "stream.json"
    script.write_text(json.dumps([{"text": text, "delay": delay}]))
    home = tmp / "home-stream"
    with ScriptedServerProcess(script, root=ROOT) as server:
        command = [sys.executable, "-m", "agentsh", "-m", "openai/test-model",
                   "--api-base", server.base_url]  # fmt: skip
        env = _env(home, OPENAI_API_KEY="sk-bench")
        with TmuxPane(command, cwd=project, env=env, width=120, height=40) as pane:
            pane.wait_for(lambda s: "Message agentsh" in s, timeout=60)
            pane.wait_for(lambda s: "loading…" not in s, timeout=90)
            time.sleep(0.3)
            if "agent not started" in pane.screen():
                return None
            pane.type("stream please")
            pane.send("Enter")
            first = pane.wait_for(lambda s: "STREAMSTART" in s, timeout=60, poll=0.005)
            last = pane.wait_for(lambda s: "STREAMEND" in s, timeout=120, poll=0.005)
    on_screen = last - first
    return tokens / on_screen, on_screen - send_seconds, send_seconds


def main() -> int:
    if not tmux_available():
        print("tmux is not installed", file=sys.stderr)
        return 2
    with tempfile.TemporaryDirectory() as tmp_name:
        tmp = Path(tmp_name)
        project = tmp / "project"
        project.mkdir()
        subprocess.run(["git", "init", "-q", str(project)], check=True)
        result = streaming(tmp, project)
        if result is None:
            print("streaming: skipped (the agent did not start)")
        else:
            rate, lag, send = result
            print(f"streaming {STREAM_TOKENS} tokens sent over {send:.2f} s: on screen at "
                  f"{rate:.0f} tokens/s, end lag {lag * 1000:.0f} ms")  # fmt: skip
            print(f"tui_stream_rate: {rate:.0f} tokens/s")
        latency, capture = keystrokes(tmp, project)
        print(f"capture-pane call: {capture * 1000:.1f} ms (half subtracted from each sample)")
        print(f"tui_keystroke_latency_2000_msgs: {latency * 1000:.1f} ms")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
