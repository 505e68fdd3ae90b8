"""Helpers that build realistic sessions for the context tests and benchmarks."""

from __future__ import annotations

import dataclasses
import json
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from agentsh.session.entries import MessageEntry, Role, StopReason, ToolCall, Usage
from agentsh.session.session import Session


@dataclass(frozen=True, slots=True)
class Step:
    """One tool call and its result."""

    tool: str
    args: dict[str, Any]
    output: str
    is_error: bool = False
    details: dict[str, Any] = field(default_factory=dict)


_counter = [0]


def call_id() -> str:
    _counter[0] += 1
    return f"call_{_counter[0]:06d}"


def add_turn(
    session: Session,
    request: str,
    steps: Sequence[Step | Sequence[Step]] = (),
    answer: str = "Done.",
    *,
    usage: Usage | None = None,
) -> MessageEntry:
    """A user request, one assistant message per step group (each with its results), and a
    final answer; returns the final assistant entry."""
    session.append_message(Role.USER, request)
    for group in steps:
        batch = [group] if isinstance(group, Step) else list(group)
        calls = tuple(
            ToolCall(id=call_id(), name=s.tool, arguments=json.dumps(s.args)) for s in batch
        )
        session.append_message(
            Role.ASSISTANT, "", tool_calls=calls, stop_reason=StopReason.TOOL_CALLS
        )
        for call, step in zip(calls, batch, strict=True):
            session.append_tool_result(
                call.id, step.tool, step.output, is_error=step.is_error, details=step.details
            )
    return session.append_message(Role.ASSISTANT, answer, usage=usage, stop_reason=StopReason.STOP)


def file_text(name: str, lines: int, width: int = 60) -> str:
    return "\n".join(f"{name}:{i:05d} " + "x" * width for i in range(lines))


def tool_heavy_turn(session: Session, n: int, *, size: int = 400) -> MessageEntry:
    """A typical coding turn: read a file, run the tests, edit, run again."""
    path = f"src/module_{n}.py"
    return add_turn(
        session,
        f"Task {n}: fix the failing test in {path}",
        [
            Step("read", {"path": path}, file_text(path, size), details={"total_lines": size}),
            Step(
                "bash",
                {"command": "pytest -q"},
                "F" * 40 + "\n" + file_text("trace", size // 4),
                details={"exit_code": 1},
            ),
            Step("edit", {"path": path, "old": "a" * 40, "new": "b" * 40}, "edited " + path),
            Step("bash", {"command": "pytest -q"}, "2 passed", details={"exit_code": 0}),
        ],
        f"Fixed {path}.",
    )


SYSTEM = "You are a coding agent. " * 20


async def drive_turn(
    manager: Any,
    session: Session,
    request: str,
    steps: Sequence[Step] = (),
    answer: str = "Done.",
    *,
    system: str = SYSTEM,
    tools: Sequence[dict[str, Any]] = (),
) -> list[list[dict[str, Any]]]:
    """Play one turn the way the agent loop does: ``prepare`` before every model call (after
    the user message and after each tool result), and each reply carries the usage a provider
    would report for the request it answered. Returns the prepared requests."""
    requests = []
    session.append_message(Role.USER, request)
    requests.append(await manager.prepare(system, list(tools)))
    for step in steps:
        call = ToolCall(id=call_id(), name=step.tool, arguments=json.dumps(step.args))
        session.append_message(
            Role.ASSISTANT,
            "",
            tool_calls=(call,),
            usage=Usage(input_tokens=manager.status().used, output_tokens=20),
            stop_reason=StopReason.TOOL_CALLS,
        )
        session.append_tool_result(
            call.id, step.tool, step.output, is_error=step.is_error, details=step.details
        )
        requests.append(await manager.prepare(system, list(tools)))
    session.append_message(
        Role.ASSISTANT,
        answer,
        usage=Usage(input_tokens=manager.status().used, output_tokens=5),
        stop_reason=StopReason.STOP,
    )
    return requests


def unique_output(tokens: int, tag: str) -> str:
    """About ``tokens`` tokens (at 4 characters a token) of text that dedupes with nothing."""
    line = f"{tag} " + "o" * 70 + "\n"
    count = max(1, tokens * 4 // len(line))
    return "".join(f"{i:06d}{line}" for i in range(count))[: tokens * 4]


# -- agentsh's own prompt ------------------------------------------------------------------------


def fill_project(project: Path) -> None:
    """What makes agentsh's own prompt largest: a 32 KB AGENTS.md and both curated-memory
    files full (``project`` is trusted by :func:`own_prompt`)."""
    from agentsh.config import load_environment
    from agentsh.memory.curated import CuratedMemory, MemoryTarget

    (project / "AGENTS.md").write_text(
        ("Use ruff and pytest; keep functions typed. " * 800)[:32_000]
    )
    env = load_environment(project)
    memory = CuratedMemory(env.project, env.user, env.settings.memory, project_trusted=True)
    for target, limit in (
        (MemoryTarget.MEMORY, env.settings.memory.memory_char_limit),
        (MemoryTarget.USER, env.settings.memory.user_char_limit),
    ):
        n = 0
        while memory.snapshot().get(target).chars < limit - 80:
            n += 1
            memory.add(target, f"fact {n}: the build uses make target t{n} with flag x{n}")


def own_prompt(project: Path, window: int) -> tuple[str, list[dict[str, Any]]]:
    """agentsh's own system prompt and tool definitions for ``window`` (0: full size) in
    ``project``, trusted, as it is on disk."""
    from agentsh.config import load_environment
    from agentsh.memory.curated import CuratedMemory
    from agentsh.system_prompt import SystemPrompt
    from agentsh.tools.base import ToolRegistry
    from agentsh.tools.builtin import session_tools
    from agentsh.tools.memory import MemoryTool

    env = dataclasses.replace(load_environment(project), trusted=True)
    memory = CuratedMemory(env.project, env.user, env.settings.memory, project_trusted=True)
    prompt = SystemPrompt(env, project, memory=memory, window=window)
    registry = ToolRegistry(session_tools(MemoryTool(memory, env.settings.memory)))
    registry.terse = prompt.budget.terse
    return prompt.render(), registry.schemas()
