"""Time per streamed chunk through LLMClient.stream, and how much of it is litellm's.

The scripted server runs as its own process (so its work does not share our GIL) and plays the
same long text reply several times. Three figures, medians over the runs:

- raw: reading the SSE stream with httpx and ``json.loads`` per chunk (the floor: HTTP + JSON);
- client: the same reply through ``LLMClient.stream`` (litellm's acompletion + our assembly);
- assembly: agentsh's own share, feeding pre-built chunks to the client's assembler.

The last line is litellm's per-chunk overhead: client minus raw minus assembly.

    .venv/bin/python benchmarks/bench_llm_stream.py [--tokens 20000] [--runs 5]
"""

from __future__ import annotations

import argparse
import asyncio
import json
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Sequence
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from agentsh.config import ModelSettings  # noqa: E402
from agentsh.events import TextDelta  # noqa: E402
from agentsh.llm.client import Completion, LLMClient, _Assembler  # noqa: E402
from agentsh.llm.env import import_litellm  # noqa: E402

MESSAGES = [{"role": "user", "content": "write a long answer"}]


def start_server(replies: int, text: str, workdir: Path) -> tuple[subprocess.Popen[str], str]:
    script = workdir / "script.json"
    script.write_text(json.dumps([text] * replies))
    proc = subprocess.Popen(
        [sys.executable, "-m", "tests.fakes.server", "--script", str(script)],
        cwd=ROOT,
        stdout=subprocess.PIPE,
        text=True,
    )
    assert proc.stdout is not None
    line = proc.stdout.readline().strip()
    if not line.startswith("PORT="):
        proc.kill()
        raise SystemExit(f"scripted server did not start: {line!r}")
    return proc, f"http://127.0.0.1:{line.removeprefix('PORT=')}/v1"


async def raw_run(base: str) -> tuple[float, int]:
    import httpx

    body = {"model": "test-model", "messages": MESSAGES, "stream": True}
    chunks = 0
    started = time.perf_counter()
    async with (
        httpx.AsyncClient(timeout=60) as http,
        http.stream("POST", base + "/chat/completions", json=body) as response,
    ):
        async for line in response.aiter_lines():
            if line.startswith("data: ") and line != "data: [DONE]":
                json.loads(line[6:])
                chunks += 1
    return time.perf_counter() - started, chunks


async def client_run(client: LLMClient) -> tuple[float, int]:
    deltas = 0
    started = time.perf_counter()
    async for item in client.stream(MESSAGES):
        if isinstance(item, TextDelta):
            deltas += 1
        elif isinstance(item, Completion):
            break
    return time.perf_counter() - started, deltas


def assembly_per_chunk(chunks: Sequence[object]) -> float:
    started = time.perf_counter()
    assembler = _Assembler()
    for chunk in chunks:
        assembler.feed(chunk)
    return (time.perf_counter() - started) / max(1, len(chunks))


async def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--tokens", type=int, default=20_000, help="approximate reply size")
    parser.add_argument("--runs", type=int, default=5)
    args = parser.parse_args()

    started = time.perf_counter()
    litellm = import_litellm()
    print(f"import litellm: {time.perf_counter() - started:.2f} s")
    text = "word " * args.tokens
    with tempfile.TemporaryDirectory() as tmp:
        proc, base = start_server(2 * args.runs + 2, text, Path(tmp))
        try:
            client = LLMClient(
                "openai/test-model", settings=ModelSettings(), api_base=base, api_key="sk-bench"
            )
            await client_run(client)  # warm-up: first-call imports inside litellm
            await raw_run(base)
            raw_times, client_times = [], []
            chunk_count = delta_count = 0
            for _ in range(args.runs):
                seconds, chunk_count = await raw_run(base)
                raw_times.append(seconds / chunk_count)
                seconds, delta_count = await client_run(client)
                client_times.append(seconds / max(1, delta_count))
        finally:
            proc.terminate()
            proc.wait(10)

    # agentsh's own share: the assembler fed litellm's chunk objects, no network.
    from litellm.types.utils import Delta, ModelResponseStream, StreamingChoices

    sample = [
        ModelResponseStream(choices=[StreamingChoices(delta=Delta(content="word word "))])
        for _ in range(5_000)
    ]
    assembly = statistics.median(assembly_per_chunk(sample) for _ in range(5))
    raw = statistics.median(raw_times)
    through_client = statistics.median(client_times)
    del litellm
    print(f"chunks per reply: {chunk_count} on the wire, {delta_count} text deltas")
    print(f"raw httpx + json per chunk: {raw * 1e6:.1f} us")
    print(f"LLMClient.stream per chunk: {through_client * 1e6:.1f} us")
    print(f"agentsh assembly per chunk: {assembly * 1e6:.2f} us")
    overhead = through_client - raw - assembly
    print(f"litellm_overhead_per_chunk: {overhead * 1e6:.1f} us")


if __name__ == "__main__":
    asyncio.run(main())
