"""Shared by the checkpoint benchmarks: a generated git repository and a timed agent run.

Not a benchmark itself (no ``bench_`` prefix). The repository is deterministic: ``files``
Python-like files of 5-200 lines in 20 packages, committed, plus a few untracked files. The
agent is the real one (real tools, real litellm client) against the scripted server; the
checkpointer is wrapped only to time its two halves.
"""

from __future__ import annotations

import asyncio
import os
import random
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))


def make_repo(root: Path, files: int, *, lines: tuple[int, int] = (5, 200)) -> list[str]:
    """A committed repository of ``files`` files; returns their paths."""
    rnd = random.Random(17)
    names: list[str] = []
    per_package = max(1, files // 20)
    for index in range(files):
        name = f"pkg{index // per_package}/mod{index // 50}/file{index}.py"
        path = root / name
        path.parent.mkdir(parents=True, exist_ok=True)
        count = rnd.randint(*lines)
        path.write_text("".join(f"value_{index}_{n} = {n}  # line {n}\n" for n in range(count)))
        names.append(name)
    git = ["git", "-c", "user.email=b@example.com", "-c", "user.name=bench"]
    subprocess.run(["git", "init", "-q", str(root)], check=True)
    subprocess.run([*git, "add", "-A"], cwd=root, check=True)
    subprocess.run([*git, "commit", "-qm", "generated"], cwd=root, check=True)
    subprocess.run(["git", "status", "--porcelain"], cwd=root, capture_output=True, check=True)
    for index in range(5):
        (root / f"untracked{index}.txt").write_text(f"scratch {index}\n")
    return names


def environment(tmp: Path) -> None:
    os.environ.update(
        AGENTSH_HOME=str(tmp / "home"),
        LITELLM_LOCAL_MODEL_COST_MAP="True",
        HF_HUB_OFFLINE="1",
        OPENAI_API_KEY="sk-bench",
        AGENTSH_NO_OLLAMA_PROBE="1",
    )


def git_status_ms(root: Path) -> float:
    start = time.perf_counter()
    subprocess.run(["git", "status", "--porcelain"], cwd=root, capture_output=True, check=True)
    return (time.perf_counter() - start) * 1000


def median(values: list[float]) -> float:
    return statistics.median(values) if values else 0.0


class Timings:
    """Durations (ms) of each capture and record, in call order, with the reason."""

    def __init__(self) -> None:
        self.calls: list[tuple[str, float]] = []  # (reason, capture + record ms)
        self.first_capture_ms = 0.0  # the warm-up: the project's first capture


def run_agent(
    root: Path, replies: list[Any], prompts: list[str], timings: Timings
) -> tuple[Any, float]:
    """Run ``prompts`` through the real agent; returns (the session, wall seconds)."""
    from tests.fakes.server import ScriptedServer

    with ScriptedServer() as server:
        server.script(*replies)
        return asyncio.run(_run(server.base_url, root, prompts, timings))


async def _run(
    base_url: str, root: Path, prompts: list[str], timings: Timings
) -> tuple[Any, float]:
    from agentsh.agent_assembly import build_agent
    from agentsh.checkpoints.checkpointer import Checkpointer
    from agentsh.config import ApprovalMode, load_environment
    from agentsh.session.session import Session

    env = load_environment(root)
    session = Session.create(env.user.project_sessions_dir(root), root)
    agent = build_agent(
        env,
        session,
        model="openai/bench",
        api_base=base_url,
        approval=ApprovalMode.ALL,
        cwd=root,
    )
    assert isinstance(agent.checkpoints, Checkpointer)
    warming = agent.checkpoints._warming
    if warming is not None:  # started by build_agent: the baseline, timed apart
        start = time.perf_counter()
        warming.join()
        timings.first_capture_ms = (time.perf_counter() - start) * 1000
    _time(agent.checkpoints, timings)
    started = time.perf_counter()
    for prompt in prompts:
        async for _event in agent.run(prompt):
            pass
    wall = time.perf_counter() - started
    agent.close()
    return session, wall


def _time(checkpointer: Any, timings: Timings) -> None:
    capture: Callable[..., Any] = checkpointer.capture
    record: Callable[..., Any] = checkpointer.record
    pending: list[float] = []

    def timed_capture(*args: Any) -> Any:
        start = time.perf_counter()
        result = capture(*args)
        pending.append(time.perf_counter() - start)
        return result

    def timed_record(session: Any, reason: str, result: Any) -> Any:
        start = time.perf_counter()
        entry = record(session, reason, result)
        took = time.perf_counter() - start + (pending.pop() if pending else 0.0)
        timings.calls.append((reason, took * 1000))
        return entry

    checkpointer.capture = timed_capture
    checkpointer.record = timed_record


def temp_dir(prefix: str) -> Path:
    return Path(tempfile.mkdtemp(prefix=prefix))


def edit_reply(path: str, index: int) -> Any:
    from tests.fakes.server import tool_call

    return tool_call(
        "edit",
        {"path": path, "old_text": f"value_{index}_3 = 3", "new_text": f"value_{index}_3 = 33"},
    )


def per_call_figures(files: int, prompts: int, calls_per_prompt: int) -> dict[str, float]:
    """Run ``prompts`` user messages with ``calls_per_prompt`` edits each on a ``files``-file
    repository; medians of what checkpoints cost, and of ``git status`` on the same repo."""
    from tests.fakes.server import text

    tmp = temp_dir("agentsh-bench-ckpt-")
    environment(tmp)
    root = tmp / "repo"
    root.mkdir()
    names = make_repo(root, files)
    rnd = random.Random(5)
    picks = rnd.sample(range(len(names)), prompts * calls_per_prompt)
    replies: list[Any] = []
    for prompt in range(prompts):
        for call in range(calls_per_prompt):
            index = picks[prompt * calls_per_prompt + call]
            replies.append(edit_reply(names[index], index))
        replies.append(text(f"done {prompt}"))
    before = [git_status_ms(root) for _ in range(5)]
    timings = Timings()
    run_agent(root, replies, [f"edit batch {n}" for n in range(prompts)], timings)
    after = [git_status_ms(root) for _ in range(5)]
    user = [ms for reason, ms in timings.calls if reason == "user"]
    tools = [ms for reason, ms in timings.calls if reason == "tool"]
    per_call = [tools[i] + tools[i + 1] for i in range(0, len(tools) - 1, 2)]
    return {
        "files": float(files),
        "first_capture_ms": timings.first_capture_ms,
        "user_ms": median(user),
        "tool_call_ms": median(per_call),
        "git_status_ms": median(before + after),
        "calls": float(len(per_call)),
    }
