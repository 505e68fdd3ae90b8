"""What the process-level benchmarks share: their environment, the bare reference app, /proc
readings (resident memory, CPU of a process tree), a git project, a long session, a paced
streaming endpoint, and the statistics they quote.

A benchmark imports it as ``from benchlib import ...`` (a script's own folder is on
``sys.path``); importing it puts the repository on ``sys.path`` too, so ``agentsh`` and
``tests`` import from this checkout. Nothing here imports litellm, Textual or agentsh's TUI.
"""

from __future__ import annotations

import json
import os
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from io import BufferedIOBase
from pathlib import Path
from typing import TYPE_CHECKING, Any

ROOT = Path(__file__).resolve().parents[1]
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

if TYPE_CHECKING:
    from tests.e2e.tmux import TmuxPane

# The reference a TUI figure is measured against: a Textual app with a header, a text area and
# a footer, and nothing else.
BARE_APP = """
from textual.app import App, ComposeResult
from textual.widgets import Footer, Header, TextArea


class Bare(App[None]):
    def compose(self) -> ComposeResult:
        yield Header()
        yield TextArea()
        yield Footer()


Bare().run()
"""


def bench_env(home: Path, *, key: bool = True, **extra: str) -> dict[str, str]:
    """The whole environment of a program under test: its own home, this checkout, no Ollama
    probe, litellm's bundled cost map, and (``key``) an OpenAI key, so agentsh has a model and
    loads its agent."""
    env = {
        "AGENTSH_HOME": str(home),
        "HOME": str(home),
        "PATH": os.environ.get("PATH", ""),
        "TERM": "xterm-256color",
        "PYTHONPATH": str(ROOT),
        "AGENTSH_NO_OLLAMA_PROBE": "1",
        "LITELLM_LOCAL_MODEL_COST_MAP": "True",
    }
    if key:
        env["OPENAI_API_KEY"] = "sk-bench"
    return {**env, **extra}


def git_project(folder: Path) -> Path:
    """An empty git repository at ``folder`` (made with its parents)."""
    folder.mkdir(parents=True, exist_ok=True)
    subprocess.run(["git", "init", "-q", str(folder)], check=True)
    return folder


@contextmanager
def scratch_project() -> Iterator[Path]:
    """This process's agentsh in a throwaway home (no Ollama probe) and an empty git project
    beside it, for an in-process run: yields the project."""
    with tempfile.TemporaryDirectory() as tmp:
        home = Path(tmp)
        os.environ["AGENTSH_HOME"] = str(home / "agentsh-home")
        os.environ["AGENTSH_NO_OLLAMA_PROBE"] = "1"
        yield git_project(home / "project")


def json_lines_from(root: Path, script: str, *args: str) -> list[Any]:
    """Run ``script ARGS`` (a benchmark's child) with this interpreter on the code of the
    checkout at ``root`` (first on the import path, and the working folder; this checkout's
    benchmarks next; litellm offline): the JSON lines it printed. How a benchmark measures
    another checkout (``--baseline``) beside this one, each in a process of its own."""
    path = os.pathsep.join([str(root), str(ROOT / "benchmarks")])
    env = {**os.environ, "PYTHONPATH": path, "LITELLM_LOCAL_MODEL_COST_MAP": "True"}
    out = subprocess.run(
        [sys.executable, script, *args],
        cwd=root,
        env=env,
        capture_output=True,
        text=True,
        check=True,
    ).stdout
    return [json.loads(line) for line in out.splitlines() if line.startswith(("{", "["))]


def agentsh_command(*args: str) -> list[str]:
    """``python -m agentsh ARGS`` with this interpreter."""
    return [sys.executable, "-m", "agentsh", *args]


def wait_agentsh_ready(pane: TmuxPane, timeout: float = 120) -> float:
    """Wait until agentsh in ``pane`` shows its editor and its agent is up (the status bar's
    "loading…" has gone); returns seconds since the pane started."""
    pane.wait_for(lambda s: "Message agentsh" in s, timeout=60)
    return pane.wait_for(lambda s: "loading…" not in s and "│" in s, timeout=timeout)


def type_keys(
    pane: TmuxPane, keys: str, typed: str = "", *, gap_s: float = 0.0, timeout: float = 5
) -> tuple[list[float], str]:
    """Type ``keys`` one at a time into ``pane``, each polled (capture-pane) until the screen
    shows everything typed so far (``typed`` is what the editor held before), then
    ``gap_s`` of pause; returns each key's seconds from send-keys to screen, and the text
    typed now."""
    latencies = []
    for char in keys:
        typed += char
        start = time.perf_counter()
        pane.type(char)
        while typed not in pane.screen():
            if time.perf_counter() - start > timeout:
                raise TimeoutError(f"{typed!r} never appeared")
        latencies.append(time.perf_counter() - start)
        if gap_s:
            time.sleep(gap_s)
    return latencies, typed


def quit_pane(pane: TmuxPane, key: str, within_s: float = 60) -> float:
    """Send ``key`` (Ctrl+Q, the Enter of a typed ``/quit``) and time until the pane's process
    has exited; every process that was under it (model worker, MCP servers, their shells) must
    be gone within 2 s after, or this raises."""
    pid = pane.pid()
    below = descendants(pid)
    pane.send(key)
    began = time.perf_counter()
    while alive(pid):
        if time.perf_counter() - began > within_s:
            raise RuntimeError(f"the program did not exit within {within_s:g} s")
        time.sleep(0.002)
    elapsed = time.perf_counter() - began
    deadline = time.monotonic() + 2
    while (left := [p for p in below if alive(p)]) and time.monotonic() < deadline:
        time.sleep(0.05)
    if left:
        raise RuntimeError(f"processes left behind: {left}")
    return elapsed


# -- /proc ------------------------------------------------------------------------------------


def alive(pid: int) -> bool:
    """Whether ``pid`` runs (a zombie waiting to be reaped counts as gone)."""
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except (OSError, IndexError):
        return False
    return state != "Z"


def _stats() -> dict[int, list[str]]:
    """Every process's /proc stat fields after the command name, by pid."""
    found: dict[int, list[str]] = {}
    for stat in Path("/proc").glob("[0-9]*/stat"):
        try:
            found[int(stat.parent.name)] = stat.read_text().rsplit(")", 1)[1].split()
        except (OSError, IndexError, ValueError):
            continue
    return found


def descendants(pid: int) -> list[int]:
    """Every process under ``pid`` (children, their children, ...)."""
    children: dict[int, list[int]] = {}
    for child, fields in _stats().items():
        children.setdefault(int(fields[1]), []).append(child)
    found: list[int] = []
    todo = [pid]
    while todo:
        for child in children.get(todo.pop(), []):
            found.append(child)
            todo.append(child)
    return found


def rss_mb(pid: int) -> float:
    """The resident set (VmRSS) of ``pid`` in MB; 0 if it has gone."""
    try:
        for line in Path(f"/proc/{pid}/status").read_text().splitlines():
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) / 1024
    except OSError:
        pass
    return 0.0


def tree_rss_mb(pid: int) -> tuple[float, float]:
    """(RSS of ``pid``, RSS of ``pid`` and all its descendants), in MB."""
    own = rss_mb(pid)
    return own, own + sum(rss_mb(child) for child in descendants(pid))


def tree_cpu_s(pid: int) -> float:
    """User + system CPU of ``pid`` and its descendants, in seconds."""
    ticks = os.sysconf("SC_CLK_TCK")
    stats = _stats()
    total = 0.0
    for member in (pid, *descendants(pid)):
        fields = stats.get(member)
        if fields is not None:
            total += (int(fields[11]) + int(fields[12])) / ticks
    return total


# -- statistics -------------------------------------------------------------------------------


def percentile(values: list[float], pct: float) -> float:
    """The ``pct`` percentile (nearest rank) of ``values``."""
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, round(pct / 100 * (len(ordered) - 1)))]


def median(values: list[float]) -> float:
    return statistics.median(values)


def window_shares(
    windows: Sequence[int], baseline: int, measure: Callable[[int], tuple[int, str]]
) -> list[float]:
    """For each window, print the baseline's tokens and share of it beside what ``measure``
    gives for it (tokens, and a note to append); returns the measured shares (%)."""
    shares = []
    for window in windows:
        tokens, note = measure(window)
        before, after = 100 * baseline / window, 100 * tokens / window
        print(
            f"  {window:>9,}: {baseline:>6,} tokens ({before:5.1f} %) -> {tokens:>6,} "
            f"({after:5.1f} %){note}"
        )
        shares.append(after)
    return shares


def print_medians(rows: list[tuple[str, list[float]]], unit: str = "s") -> None:
    """One line per case: ``label  median M unit  [run, run, ...]`` (labels aligned)."""
    width = max(len(label) for label, _ in rows)
    for label, values in rows:
        runs = ", ".join(f"{v:.3f}" for v in values)
        print(f"{label:{width}s}  median {median(values):.3f} {unit}  [{runs}]")


# -- data -------------------------------------------------------------------------------------


def long_session(folder: Path, cwd: Path, messages: int) -> Path:
    """A session of ``messages`` messages: questions and short markdown answers (a heading, a
    list, a code block), as a long real session has; returns its file."""
    from agentsh.session.entries import Role, StopReason
    from agentsh.session.session import Session

    session = Session.create(folder, cwd)
    for i in range(messages // 2):
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


class PacedServer:
    """An OpenAI-compatible streaming endpoint that sends each chunk at its due time.

    The scripted test server sleeps a fixed delay per chunk, and on a loaded machine every
    sleep overshoots, so it cannot hold 1,000 tokens/s. This one paces against the clock (chunk
    i is due at start + i * interval; a late chunk is sent at once), so the rate is what the
    benchmark asks for, and it records when the first and last chunks left. Like a provider
    (and the scripted server) it ends with a usage chunk when the request asks for one
    (``stream_options.include_usage``, which agentsh sends), so the client takes the path real
    replies take; ``usage_chunks`` counts them.
    """

    def __init__(self, pieces: list[str], interval: float) -> None:
        self.pieces = pieces
        self.interval = interval
        self.sent_first = 0.0
        self.sent_last = 0.0
        self.usage_chunks = 0
        outer = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, format: str, *args: object) -> None:
                pass

            def do_POST(self) -> None:
                raw = self.rfile.read(int(self.headers.get("Content-Length", "0")))
                try:
                    body = json.loads(raw or b"{}")
                except ValueError:
                    body = {}
                self.send_response(200)
                self.send_header("Content-Type", "text/event-stream")
                self.send_header("Connection", "close")
                self.end_headers()
                outer.stream(self.wfile, body if isinstance(body, dict) else {})
                self.close_connection = True

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        threading.Thread(target=self.server.serve_forever, daemon=True).start()

    @property
    def base_url(self) -> str:
        return f"http://127.0.0.1:{self.server.server_address[1]}/v1"

    def stream(self, out: BufferedIOBase, request: dict[str, object] | None = None) -> None:
        """Stream the pieces to ``out``, for ``request`` (the parsed JSON body)."""

        def send(delta: dict[str, object] | None, finish: str | None = None,
                 usage: dict[str, int] | None = None) -> None:  # fmt: skip
            chunk: dict[str, object] = {"id": "bench", "object": "chat.completion.chunk",
                                        "created": 0, "model": "test-model"}  # fmt: skip
            if delta is None:  # the usage chunk: no choices
                chunk |= {"choices": [], "usage": usage}
            else:
                chunk["choices"] = [{"index": 0, "delta": delta, "finish_reason": finish}]
            out.write(b"data: " + json.dumps(chunk).encode() + b"\n\n")
            out.flush()

        request = request or {}
        pieces = self.pieces
        send({"role": "assistant", "content": ""})
        start = time.perf_counter()
        self.sent_first = start
        for i, piece in enumerate(pieces):
            due = start + i * self.interval
            if (wait := due - time.perf_counter()) > 0:
                time.sleep(wait)
            send({"content": piece})
        self.sent_last = time.perf_counter()
        send({}, "stop")
        options = request.get("stream_options")
        if isinstance(options, dict) and options.get("include_usage"):
            prompt = len(json.dumps(request.get("messages", []))) // 4 or 1
            completion = sum(len(piece) for piece in pieces) // 4 or 1
            send(None, usage={"prompt_tokens": prompt, "completion_tokens": completion,
                              "total_tokens": prompt + completion})  # fmt: skip
            self.usage_chunks += 1
        out.write(b"data: [DONE]\n\n")
        out.flush()

    def close(self) -> None:
        self.server.shutdown()
