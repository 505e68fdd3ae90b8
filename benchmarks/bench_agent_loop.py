"""The agent loop's own overhead per event, with the model and the tools taken out.

Streams 200 scripted replies of 100 words each (about 20,000 tokens) with one tool call
each through the real Agent, the real litellm client and the scripted server. Time spent
waiting for the model's next chunk and time spent inside tools are measured and subtracted;
what remains (event plumbing, log appends, context accounting, pre-flight) is the loop's own
cost, divided by the number of events it delivered.
"""

from __future__ import annotations

import asyncio
import os
import statistics
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

REPLIES = 200
WORDS = 100


def main() -> None:
    home = Path(tempfile.mkdtemp(prefix="agentsh-bench-"))
    project = home / "project"
    project.mkdir()
    (project / "a.txt").write_text("a\n")
    os.environ.update(
        AGENTSH_HOME=str(home / "home"),
        LITELLM_LOCAL_MODEL_COST_MAP="True",
        OPENAI_API_KEY="sk-bench",
        AGENTSH_NO_OLLAMA_PROBE="1",
    )
    os.chdir(project)
    from tests.fakes.server import Reply, ScriptedServer, ToolCallSpec

    words = " ".join(f"w{i}" for i in range(WORDS))
    replies: list[Any] = [
        Reply(text=words, tool_calls=(ToolCallSpec("ls", {"path": "."}),)) for _ in range(REPLIES)
    ]
    replies.append(Reply(text="done"))
    with ScriptedServer() as server:
        server.script(*replies)
        overhead_us, events, total_s = asyncio.run(_run(server.base_url, project))
    print(f"events: {events}")
    print(f"wall time: {total_s:.2f} s (model and tools included)")
    print(f"agent_loop_overhead_per_event: {overhead_us:.1f} us")


async def _run(base_url: str, project: Path) -> tuple[float, int, float]:
    from agentsh.agent_assembly import build_agent
    from agentsh.config import ApprovalMode, load_environment
    from agentsh.session.session import Session

    env = load_environment(project)
    session = Session.create(env.user.project_sessions_dir(project), project)
    agent = build_agent(
        env,
        session,
        model="openai/test-model",
        api_base=base_url,
        approval=ApprovalMode.ALL,
        interactive=False,
        cwd=project,
        max_steps=REPLIES + 5,
    )
    waits: list[float] = []
    tool_time: list[float] = []
    assert agent.llm is not None
    real_stream = agent.llm.stream

    async def timed_stream(*args: Any, **kwargs: Any) -> Any:
        stream = real_stream(*args, **kwargs)
        while True:
            began = time.perf_counter()
            try:
                item = await stream.__anext__()
            except StopAsyncIteration:
                waits.append(time.perf_counter() - began)
                return
            waits.append(time.perf_counter() - began)
            yield item

    agent.llm.stream = timed_stream  # type: ignore[method-assign]
    ls_tool = agent.tools.get("ls")
    assert ls_tool is not None
    real_run = ls_tool.run

    async def timed_run(params: Any, ctx: Any) -> Any:
        began = time.perf_counter()
        try:
            return await real_run(params, ctx)
        finally:
            tool_time.append(time.perf_counter() - began)

    ls_tool.run = timed_run  # type: ignore[method-assign]
    count = 0
    began = time.perf_counter()
    async for _event in agent.run("go"):
        count += 1
    total = time.perf_counter() - began
    agent.close()
    own = total - sum(waits) - sum(tool_time)
    print(
        f"model wait: {sum(waits):.2f} s, tools: {sum(tool_time):.2f} s, "
        f"median chunk wait {statistics.median(waits) * 1e3:.2f} ms"
    )
    return own / count * 1e6, count, total


if __name__ == "__main__":
    main()
