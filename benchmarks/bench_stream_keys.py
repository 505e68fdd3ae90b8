"""Keystrokes while a 2,000-token reply streams at 1,000 tokens/s: agentsh beside a bare app.

Both programs run in a 120x40 tmux pane (a private tmux server) and stream the same Markdown
(headings, paragraphs, lists, code blocks; ~2,000 tokens) from the same paced OpenAI-compatible
endpoint (``benchlib.PacedServer``: chunk i leaves at its due time):

- agentsh: the real ``agentsh -m openai/test-model --api-base <server>``; a message is sent with
  Enter and the reply streams into the chat;
- bare: a Textual app with a ``Markdown`` widget fed through ``Markdown.get_stream`` (Textual's
  ``MarkdownStream``) from an httpx stream of the same endpoint, and an ``Input`` to type into.
  It is the floor a Textual program pays to stream Markdown, with no agent and no litellm.

Each round, for each program in turn: a message starts the reply; once its first word is on
screen, single characters are typed into the editor one at a time, each polled (capture-pane)
until the editor shows it: the time from send-keys to screen is one latency sample. Typing goes
on until the reply's last word is on screen (the editor is cleared every :data:`LINE_KEYS` keys,
before its line would wrap), and how long that came after the last chunk is printed too:
keys typed back to back, about 50 a second, are the most a program's frames must give way
to (``--key-gap`` spaces them). Separate quiet rounds (no typing) measure the CPU time of the
program's process tree per streamed token, and how long after the server sent the last chunk
the last word was on screen (polled every 5 ms; each round's figure is printed too, so runs
can be pooled). Medians over rounds; p50/p99 over all keystroke samples. Goals (issue 16):
agentsh's p99 under 100 ms and at most half the bare app's; the last word on screen within
100 ms of the last chunk.

    .venv/bin/python benchmarks/bench_stream_keys.py [--rounds 4] [--key-gap 0.1]

``--key-gap``: typed at a person's pace instead (about 8 keys a second at 0.1).

The last line is ``stream_keystroke_p99: <agentsh p99> ms``.
"""

from __future__ import annotations

import argparse
import random
import statistics
import sys
import tempfile
import time
from collections.abc import Callable
from io import BufferedIOBase
from pathlib import Path

from benchlib import (
    PacedServer,
    agentsh_command,
    bench_env,
    git_project,
    percentile,
    tree_cpu_s,
    wait_agentsh_ready,
)

from tests.e2e.tmux import TmuxPane, tmux_available
from tests.fakes.server import split_pieces

TOKENS = 2000
TOKENS_PER_SECOND = 1000
# The typed keys: letters the streamed text never uses, so the editor line is unambiguous.
KEYS = "zqxj"
LINE_KEYS = 60  # keys typed on one editor line (narrower than both editors), then it is cleared

BARE_APP = """
import json
import sys

import httpx
from textual import work
from textual.app import App, ComposeResult
from textual.containers import VerticalScroll
from textual.widgets import Input, Markdown

URL = sys.argv[1]


class Bare(App[None]):
    CSS = "Input { dock: bottom; }"
    AUTO_FOCUS = "Input"

    def compose(self) -> ComposeResult:
        yield VerticalScroll(id="chat")
        yield Input(placeholder="Message bare")

    def on_input_submitted(self, event: Input.Submitted) -> None:
        event.input.value = ""
        self.reply()

    @work(exclusive=True)
    async def reply(self) -> None:
        chat = self.query_one("#chat", VerticalScroll)
        markdown = Markdown()
        await chat.mount(markdown)
        chat.anchor()
        stream = Markdown.get_stream(markdown)
        body = {"model": "test-model", "stream": True,
                "messages": [{"role": "user", "content": "go"}]}
        try:
            async with httpx.AsyncClient(timeout=120) as http:
                async with http.stream("POST", URL + "/chat/completions", json=body) as response:
                    async for line in response.aiter_lines():
                        if not line.startswith("data: ") or line == "data: [DONE]":
                            continue
                        choices = json.loads(line[6:]).get("choices") or [{}]
                        piece = (choices[0].get("delta") or {}).get("content")
                        if piece:
                            await stream.write(piece)
        finally:
            await stream.stop()


Bare().run()
"""

WORDS = [
    *("parser", "token", "window", "scope", "the", "a", "reads", "writes", "file", "module"),
    *("cache", "table", "layout", "render", "stream", "chunk", "frame", "widget", "event"),
    *("loop", "budget", "memory", "session", "branch", "summary", "tool", "call", "result"),
    *("error", "retry", "model", "provider", "ask", "reply", "status", "editor", "screen"),
]


def reply_text(tokens: int, seed: int = 7) -> str:
    """Markdown of about ``tokens`` tokens, without the letters in :data:`KEYS`."""
    rng = random.Random(seed)
    blocks = ["STREAMSTART"]
    size = 0
    n = 0
    while size < tokens * 4 - 200:
        n += 1
        match n % 5:
            case 0:
                blocks.append(f"## Part {n}: {rng.choice(WORDS)} {rng.choice(WORDS)}")
            case 1 | 3:
                sentence = " ".join(rng.choice(WORDS) for _ in range(rng.randint(40, 70)))
                blocks.append(sentence.capitalize() + ". Some **bold** and `code` too.")
            case 2:
                items = [" ".join(rng.choice(WORDS) for _ in range(8)) for _ in range(4)]
                blocks.append("\n".join(f"- {item}" for item in items))
            case _:
                lines = [f"def step_{n}_{i}(data):" if i == 0 else f"    return data + {i}"
                         for i in range(5)]  # fmt: skip
                blocks.append("```python\n" + "\n".join(lines) + "\n```")
        size = sum(len(b) + 2 for b in blocks)
    blocks.append("The end: STREAMEND")
    text = "\n\n".join(blocks)
    assert not set(KEYS) & set(text)
    return text


class NumberedServer(PacedServer):
    """The paced server with the reply's first and last words numbered per request
    (``BEGIN001`` ... ``END001``), so a round waits for its own reply, not the last one."""

    def __init__(self, text: str) -> None:
        self.text = text
        self.count = 0
        pieces = split_pieces(text, random.Random(0))
        super().__init__(pieces, len(text) / 4 / TOKENS_PER_SECOND / len(pieces))

    def stream(self, out: BufferedIOBase, request: dict[str, object] | None = None) -> None:
        self.count += 1
        text = self.text.replace("STREAMSTART", self.begin(self.count))
        self.pieces = split_pieces(text.replace("STREAMEND", self.end(self.count)),
                                   random.Random(0))  # fmt: skip
        super().stream(out, request)

    @staticmethod
    def begin(n: int) -> str:
        return f"BEGIN{n:03d}"

    @staticmethod
    def end(n: int) -> str:
        return f"END{n:03d}"


class Program:
    """One program in its pane: start a reply, type, tell when the reply is done."""

    def __init__(self, name: str, pane: TmuxPane, editor_lines: int) -> None:
        self.name = name
        self.pane = pane
        self.editor_lines = editor_lines

    def editor(self, screen: str) -> str:
        return "\n".join(screen.splitlines()[-self.editor_lines :])

    def send_message(self, text: str) -> None:
        self.pane.type(text)
        self.pane.wait_for(lambda s: text in self.editor(s), timeout=30)
        self.pane.send("Enter")
        self.pane.wait_for(lambda s: text not in self.editor(s), timeout=30)


def _wait(pane: TmuxPane, predicate: Callable[[str], bool], timeout: float = 60) -> float:
    return pane.wait_for(predicate, timeout=timeout, poll=0.005) + pane.started


def quiet_round(program: Program, server: NumberedServer, tokens: float) -> tuple[float, float]:
    """(CPU seconds per 1,000 tokens, seconds from the last chunk sent to the last word shown)."""
    pane = program.pane
    pid = pane.pid()
    end = server.end(server.count + 1)
    cpu_before = tree_cpu_s(pid)
    program.send_message("go")
    shown = _wait(pane, lambda s: end in s, timeout=120)
    time.sleep(0.5)  # let the turn finish what it does after the last chunk
    cpu = tree_cpu_s(pid) - cpu_before
    return cpu / tokens * 1000, shown - server.sent_last


def typing_round(
    program: Program, server: NumberedServer, gap_s: float = 0.0
) -> tuple[list[float], float]:
    """Latencies (seconds) of keys typed while the reply streams, each ``gap_s`` after the
    last one showed, and seconds from the last chunk sent to the last word shown while they
    were typed."""
    pane = program.pane
    number = server.count + 1
    end = server.end(number)
    program.send_message("go")
    deadline = time.perf_counter() + 60
    while server.count < number:  # typing starts when the server starts sending
        if time.perf_counter() > deadline:
            raise TimeoutError(f"{program.name} never asked for its reply")
        time.sleep(0.005)
    samples: list[float] = []
    typed = ""
    done, shown = False, 0.0
    while not done:
        if len(typed) == LINE_KEYS:  # before the editor wraps the line: start it again
            clear_editor(program, typed)
            typed = ""
        typed += KEYS[len(typed) % len(KEYS)]
        start = time.perf_counter()
        pane.type(typed[-1])
        while True:
            screen = pane.screen()
            if not done and end in screen:
                done, shown = True, time.perf_counter()
            if typed in program.editor(screen):
                break
            if time.perf_counter() - start > 10:
                raise TimeoutError(f"{program.name}: {typed!r} never appeared")
        samples.append(time.perf_counter() - start)
        time.sleep(gap_s)
    time.sleep(0.5)
    clear_editor(program, typed)  # for the next round
    return samples, shown - server.sent_last


def clear_editor(program: Program, typed: str) -> None:
    program.pane.send(*["BSpace"] * len(typed))
    program.pane.wait_for(lambda s: typed[:2] not in program.editor(s), timeout=30)


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--rounds", type=int, default=4)
    parser.add_argument(
        "--key-gap", type=float, default=0.0, help="seconds between a key shown and the next"
    )
    args = parser.parse_args()
    if not tmux_available():
        print("tmux is not installed", file=sys.stderr)
        return 2
    text = reply_text(TOKENS)
    tokens = len(text) / 4
    server = NumberedServer(text)
    keys: dict[str, list[float]] = {"bare": [], "agentsh": []}
    cpu: dict[str, list[float]] = {"bare": [], "agentsh": []}
    lag: dict[str, list[float]] = {"bare": [], "agentsh": []}
    typing_lag: dict[str, list[float]] = {"bare": [], "agentsh": []}
    try:
        with tempfile.TemporaryDirectory() as tmp_name:
            tmp = Path(tmp_name)
            project = git_project(tmp / "project")
            bare_py = tmp / "bare.py"
            bare_py.write_text(BARE_APP)
            env = bench_env(tmp / "home")
            bare_cmd = [sys.executable, str(bare_py), server.base_url]
            agentsh_cmd = agentsh_command("-m", "openai/test-model", "--api-base", server.base_url)
            with (
                TmuxPane(bare_cmd, cwd=project, env=env) as bare_pane,
                TmuxPane(agentsh_cmd, cwd=project, env=env) as agent_pane,
            ):
                bare_pane.wait_for(lambda s: "Message bare" in s, timeout=60)
                wait_agentsh_ready(agent_pane)
                programs = [Program("bare", bare_pane, 3), Program("agentsh", agent_pane, 4)]
                # A warm-up round each: the first reply pays one-off costs (imports, caches).
                for program in programs:
                    quiet_round(program, server, tokens)
                for _ in range(args.rounds):
                    for program in programs:
                        c, lagged = quiet_round(program, server, tokens)
                        cpu[program.name].append(c)
                        lag[program.name].append(lagged)
                        samples, lagged = typing_round(program, server, args.key_gap)
                        keys[program.name] += samples
                        typing_lag[program.name].append(lagged)
    finally:
        server.close()
    print(f"{args.rounds} rounds; reply of {tokens:.0f} tokens at {TOKENS_PER_SECOND} tokens/s")
    for name in ("bare", "agentsh"):
        samples = [s * 1000 for s in keys[name]]
        print(f"{name:8s} keystroke p50 {statistics.median(samples):6.0f} ms   "
              f"p99 {percentile(samples, 99):6.0f} ms   max {max(samples):6.0f} ms   "
              f"({len(samples)} keys)")  # fmt: skip
        print(f"{'':8s} CPU {statistics.median(cpu[name]):.2f} s per 1k tokens   last word "
              f"{statistics.median(lag[name]) * 1000:5.0f} ms after the last chunk "
              f"({statistics.median(typing_lag[name]):.1f} s while keys were typed)")  # fmt: skip
        rounds = " ".join(f"{x * 1000:.0f}" for x in lag[name])
        print(f"{'':8s} last word per quiet round: {rounds} ms")  # for medians over several runs
    a99 = percentile([s * 1000 for s in keys["agentsh"]], 99)
    b99 = percentile([s * 1000 for s in keys["bare"]], 99)
    print(f"stream_keystroke_p99_ratio: {a99 / b99:.2f} x")
    print(f"stream_cpu_per_1k_tokens: {statistics.median(cpu['agentsh']):.2f} s")
    print(f"stream_last_paint_lag: {statistics.median(lag['agentsh']) * 1000:.0f} ms")
    print(f"stream_keystroke_p99: {a99:.0f} ms")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
