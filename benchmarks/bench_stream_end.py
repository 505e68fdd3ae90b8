"""From a streamed reply's last text chunk to its Completion, in process and through the worker.

At the end of a stream litellm rebuilds the whole reply from its chunks before it hands over
the final usage, and the turn (status, "turn finished", the next queued message, ``-p``'s exit)
waits for that Completion. This measures the gap on a 2,000-chunk reply:

- ``in-process``: ``LLMClient.stream``, from the last ``TextDelta`` to the ``Completion``;
- ``worker``: ``RemoteLLMClient.stream`` (the model worker process, as the TUI and ``-p`` call
  it), the same gap as the front end sees it (the pipe included);

each for this checkout and for a baseline tree (``--baseline``, e.g. ``/work/main``), in fresh
processes run alternately so machine load hits them alike; the first stream of each process is
a warm-up. The endpoint (``benchlib.PacedServer``, plus a usage chunk as OpenAI and Anthropic
send when asked: agentsh always asks) sends the reply at full speed; ``--no-usage`` leaves the
usage out, as some local servers do.

    .venv/bin/python benchmarks/bench_stream_end.py --baseline /work/main [--runs 3]
"""

from __future__ import annotations

import argparse
import asyncio
import io
import json
import os
import subprocess
import sys
import time
from io import BufferedIOBase
from pathlib import Path

from benchlib import ROOT, PacedServer, median

PIECES = [f"word{i} " for i in range(2000)]
MESSAGES = [{"role": "user", "content": "write a long answer"}]


class UsageServer(PacedServer):
    """``PacedServer``'s stream with a usage chunk before ``[DONE]``."""

    def __init__(self, pieces: list[str], interval: float, *, usage: bool) -> None:
        super().__init__(pieces, interval)
        self.usage = usage

    def stream(self, out: BufferedIOBase, request: dict[str, object] | None = None) -> None:
        buffer = io.BytesIO()
        super().stream(buffer)  # no request: the usage chunk is this bench's choice (--no-usage)
        body, _, _ = buffer.getvalue().rpartition(b"data: [DONE]")
        if self.usage:
            counts = {"prompt_tokens": 12, "completion_tokens": 4000, "total_tokens": 4012}
            chunk = {"id": "bench", "object": "chat.completion.chunk", "created": 0,
                     "model": "test-model", "choices": [], "usage": counts}  # fmt: skip
            body += b"data: " + json.dumps(chunk).encode() + b"\n\n"
        out.write(body + b"data: [DONE]\n\n")
        out.flush()


async def _gap(client: object) -> tuple[float, str]:
    from agentsh.events import TextDelta
    from agentsh.llm.client import Completion, LLMClient

    assert isinstance(client, LLMClient)
    last = 0.0
    async for item in client.stream(MESSAGES):
        if isinstance(item, TextDelta):
            last = time.perf_counter()
        elif isinstance(item, Completion):
            done = time.perf_counter()
            usage = f"{item.usage.input_tokens}/{item.usage.output_tokens}"
            return done - last, usage
    raise SystemExit("the stream ended without a Completion")


def child(base: str, streams: int) -> None:
    """One process: ``streams`` streams in process, then as many through the worker."""
    from agentsh.config import ModelSettings
    from agentsh.llm.client import LLMClient
    from agentsh.llm.env import import_litellm, prepare_environment
    from agentsh.llm.remote import WORKER_COMMAND, ModelWorker, RemoteLLMClient

    prepare_environment()
    import_litellm()
    settings = ModelSettings()
    worker = ModelWorker(WORKER_COMMAND)
    clients = {
        "in-process": LLMClient("openai/test-model", settings=settings, api_base=base),
        "worker": RemoteLLMClient(
            "openai/test-model", settings=settings, api_base=base, worker=worker
        ),
    }

    async def run() -> None:
        for mode, client in clients.items():
            for _ in range(streams):
                gap, usage = await _gap(client)
                print(json.dumps({"mode": mode, "gap": gap, "usage": usage}), flush=True)

    try:
        asyncio.run(run())
    finally:
        worker.close()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--baseline", type=Path, required=True, help="a tree to compare with")
    parser.add_argument("--runs", type=int, default=3, help="processes per tree")
    parser.add_argument("--streams", type=int, default=3, help="streams per mode and process")
    parser.add_argument("--no-usage", action="store_true", help="the server sends no usage")
    parser.add_argument("--child", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child:
        child(args.child, args.streams)
        return
    server = UsageServer(PIECES, 0.0, usage=not args.no_usage)
    trees = {"this": ROOT, "baseline": args.baseline.resolve()}
    gaps: dict[tuple[str, str], list[float]] = {}
    usages: set[str] = set()
    try:
        for _ in range(args.runs):
            for name, tree in trees.items():
                env = {**os.environ, "PYTHONPATH": str(tree),
                       "LITELLM_LOCAL_MODEL_COST_MAP": "True",
                       "OPENAI_API_KEY": "sk-bench"}  # fmt: skip
                command = [sys.executable, __file__, "--baseline", str(tree), "--child",
                           server.base_url, "--streams", str(args.streams)]  # fmt: skip
                process = subprocess.Popen(command, env=env, cwd=tree, stdout=subprocess.PIPE,
                                           text=True)  # fmt: skip
                assert process.stdout is not None
                seen: dict[str, int] = {}
                for line in process.stdout:
                    row = json.loads(line)
                    mode = row["mode"]
                    seen[mode] = seen.get(mode, 0) + 1
                    if seen[mode] == 1:
                        continue  # the warm-up
                    gaps.setdefault((mode, name), []).append(row["gap"] * 1000)
                    usages.add(f"{name}:{row['usage']}")
                if process.wait() != 0:
                    raise SystemExit(f"the {name} run failed")
    finally:
        server.close()
    print(f"load {os.getloadavg()[0]:.1f}; usage from the server: {not args.no_usage}; "
          f"usage recorded (input/output): {', '.join(sorted(usages))}")  # fmt: skip
    for mode in ("in-process", "worker"):
        for name in trees:
            values = gaps[(mode, name)]
            runs = ", ".join(f"{v:.0f}" for v in values)
            print(f"{mode:10s} {name:8s} last chunk -> Completion: median {median(values):5.0f} ms"
                  f"  [{runs}]")  # fmt: skip


if __name__ == "__main__":
    main()
