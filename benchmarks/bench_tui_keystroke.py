"""Keystroke-to-screen latency with a 2,000-message transcript, and streaming at 1,000 tokens/s.

Both run the real ``agentsh`` in a 120x40 tmux pane (a private tmux server).

1. Keystrokes: a session of 2,000 messages (1,000 exchanges with some markdown) is opened with
   ``--session``; then 40 characters are typed one at a time, and for each the pane is polled
   until the editor shows it. The figure is the median time from send-keys to screen, minus
   the median cost of one capture-pane call (measured the same run). Goal: under 50 ms.
2. Streaming: a paced OpenAI-compatible endpoint streams a ~3,000-token answer at 1,000
   tokens/s (chunks of 1-5 token-sized pieces, each sent at its due time). The pane is polled
   for the first and last words of the answer; it prints the rate at which text appeared on
   screen and how long after the last chunk left the server the last word was visible.

    .venv/bin/python benchmarks/bench_tui_keystroke.py

The last line is ``tui_keystroke_latency_2000_msgs: <median> ms``.
"""

from __future__ import annotations

import random
import statistics
import sys
import tempfile
import time
from pathlib import Path

from benchlib import (
    PacedServer,
    bench_env,
    git_project,
    long_session,
    type_keys,
    wait_agentsh_ready,
)

from tests.e2e.tmux import TmuxPane, tmux_available
from tests.fakes.server import split_pieces

MESSAGES = 2000
KEYS = "thequickbrownfoxjumpsoverthelazydog1234"
STREAM_TOKENS = 3000
TOKENS_PER_SECOND = 1000


def _capture_cost(pane: TmuxPane) -> float:
    samples = []
    for _ in range(30):
        start = time.perf_counter()
        pane.screen()
        samples.append(time.perf_counter() - start)
    return statistics.median(samples)


def keystrokes(tmp: Path, project: Path) -> tuple[float, float]:
    home = tmp / "home-keys"
    session_file = long_session(home / "data" / "sessions" / "bench", project, MESSAGES)
    command = [sys.executable, "-m", "agentsh", "--session", str(session_file)]
    with TmuxPane(
        command, cwd=project, env=bench_env(home, key=False), width=120, height=40
    ) as pane:
        pane.wait_for(lambda s: "Message agentsh" in s and "Module 999" in s, timeout=60)
        pane.wait_for(lambda s: "loading…" not in s, timeout=60)
        capture = _capture_cost(pane)
        latencies, _typed = type_keys(pane, KEYS)
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
    pieces = split_pieces(text, random.Random(0))
    interval = tokens / TOKENS_PER_SECOND / len(pieces)
    server = PacedServer(pieces, interval)
    home = tmp / "home-stream"
    try:
        command = [sys.executable, "-m", "agentsh", "-m", "openai/test-model",
                   "--api-base", server.base_url]  # fmt: skip
        env = bench_env(home)
        with TmuxPane(command, cwd=project, env=env, width=120, height=40) as pane:
            wait_agentsh_ready(pane, timeout=90)
            time.sleep(0.3)
            if "agent not started" in pane.screen():
                return None
            pane.type("stream please")
            pane.send("Enter")
            # The first words can scroll away within one frame if chunks queued up while the
            # request was prepared, so any word of the answer marks its start.
            first = pane.wait_for(
                lambda s: any(w in s for w in ("STREAMSTART", "parser", "window", "context")),
                timeout=60,
                poll=0.005,
            )
            last = pane.wait_for(lambda s: "STREAMEND" in s, timeout=120, poll=0.005)
            sent_last = server.sent_last - pane.started
    finally:
        server.close()
    send_seconds = server.sent_last - server.sent_first
    return tokens / (last - first), last - sent_last, tokens / send_seconds


def main() -> int:
    if not tmux_available():
        print("tmux is not installed", file=sys.stderr)
        return 2
    with tempfile.TemporaryDirectory() as tmp_name:
        tmp = Path(tmp_name)
        project = git_project(tmp / "project")
        result = streaming(tmp, project)
        if result is None:
            print("streaming: skipped (the agent did not start)")
        else:
            rate, lag, sent_rate = result
            print(f"streaming {STREAM_TOKENS} tokens sent at {sent_rate:.0f} tokens/s: on screen "
                  f"at {rate:.0f} tokens/s; the last word showed {lag * 1000:.0f} ms after it "
                  "was sent")  # fmt: skip
            print(f"tui_stream_rate: {rate:.0f} tokens/s")
        latency, capture = keystrokes(tmp, project)
        print(f"capture-pane call: {capture * 1000:.1f} ms (half subtracted from each sample)")
        print(f"tui_keystroke_latency_2000_msgs: {latency * 1000:.1f} ms")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
