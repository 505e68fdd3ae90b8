"""Assembling an agent from its real parts: the model client, memory and its search index,
the tools and their approval, the system prompt, MCP servers and checkpoints.

:func:`build_agent` is what every front end calls (the TUI off its UI thread, ``-p``, ACP);
:class:`agentsh.agent.Agent` then holds what it built for the session's life. Slow parts are
started in the background here (MCP servers, the checkpoint store's warm-up) so they load while
the rest does.
"""

from __future__ import annotations

import dataclasses
import functools
import os
import sqlite3
from collections.abc import Callable, Sequence
from pathlib import Path

from agentsh.agent import DEFAULT_MAX_STEPS, Agent
from agentsh.checkpoints.checkpointer import Checkpointer
from agentsh.config import ApprovalMode, Environment
from agentsh.llm.client import LLMClient
from agentsh.llm.models import model_info
from agentsh.llm.tokens import TokenCounter
from agentsh.mcp.servers_config import ServerSpec
from agentsh.memory.curated import CuratedMemory
from agentsh.session.session import Session
from agentsh.system_prompt import SystemPrompt
from agentsh.tools.approval import Approver, appended_instructions
from agentsh.tools.base import ToolRegistry
from agentsh.tools.builtin import session_tools
from agentsh.tools.git_armed import trusted_programs
from agentsh.tools.host import ToolHost
from agentsh.tools.memory import MemoryTool
from agentsh.tools.rules import ToolRules


def build_agent(
    env: Environment,
    session: Session,
    *,
    model: str | None,
    api_base: str | None = None,
    approval: ApprovalMode | None = None,
    interactive: bool = True,
    cwd: Path | None = None,
    max_steps: int = DEFAULT_MAX_STEPS,
    max_cost_usd: float | None = None,
    rules: ToolRules | None = None,
    plan: bool = False,
    appended_prompt: str = "",
    mcp_servers: Sequence[ServerSpec] = (),
    host: ToolHost | None = None,
    system_prompt: str = "",
    added_dirs: Sequence[Path] = (),
    read_dirs: Sequence[Path] = (),
    strict_mcp: bool = False,
    fallback_model: str | None = None,
    notices: Sequence[str] = (),
) -> Agent:
    """Assemble an agent with every real part: run it off the UI thread. In a front end that
    uses the model worker (:func:`agentsh.llm.remote.activate`), its model calls run there, and
    litellm never loads in this process. ``model=None`` builds an agent that explains how to
    configure one. ``mcp_servers`` are started besides the configured ones (an ACP client's:
    agentsh.mcp.servers_config.spec_from_acp). ``host``: an editor's file buffers and terminals the
    tools use in place of local ones (ACP). ``added_dirs`` may be written like the project,
    ``read_dirs`` read without asking (an ACP editor's additional directories);
    ``strict_mcp`` starts ``mcp_servers`` only; ``fallback_model`` takes over when the model
    stays overloaded (agentsh.run_options: the Claude Code flags).
    """
    from agentsh.llm import remote
    from agentsh.llm.models import choose_model, chosen_api_base
    from agentsh.mcp.mcp_manager import manager_for
    from agentsh.mcp.server_trust import project_servers_trusted
    from agentsh.mcp.servers_config import McpConfig, load_mcp_config
    from agentsh.memory.index import MemoryIndex, SearchIndexError
    from agentsh.memory.index_registry import shared_index

    cwd = cwd or Path.cwd()
    told: list[str] = list(notices)
    env = _guarded_summary_instructions(env, told)
    settings = env.settings
    choice = choose_model(settings.model, os.environ, cli_model=model, cli_api_base=api_base)
    # A front end (the TUI, -p) has its model calls made by the model worker process.
    client_factory: Callable[..., LLMClient] = (
        remote.RemoteLLMClient if remote.in_use() else LLMClient
    )
    llm: LLMClient | None = None
    if fallback_model:  # --fallback-model: both clients take it (the worker's too)
        client_factory = functools.partial(client_factory, fallback_model=fallback_model)
    window = 128_000
    max_output = 0
    tokenizer: TokenCounter | None = None
    if choice is not None:
        llm = client_factory(choice.model, settings=settings.model, api_base=choice.api_base)
        info = model_info(choice.model, settings.model)
        window, max_output = info.window, info.max_output_tokens
        # Exact counts from the encodings litellm ships, loaded when first needed.
        tokenizer = TokenCounter(choice.model, chars_per_token=settings.context.chars_per_token)

    memory = CuratedMemory(env.project, env.user, settings.memory, project_trusted=env.trusted)
    memory_tool = MemoryTool(memory, settings.memory)
    index: MemoryIndex | None
    try:
        index = shared_index(env.user, env.project, settings.search, include_project=env.trusted)
    except SearchIndexError as exc:
        # The index is a cache: without it the agent still works, and the memory tools open
        # the shared index at each call and tell the model why they cannot search.
        index = None
        told.append(f"Memory search is unavailable: {exc}")
    tools = session_tools(memory_tool, index)
    if rules:  # a bare deny rule ("Bash") takes the tool away: the model is not offered it
        hidden = rules.hidden_tools(tool.name for tool in tools)
        tools = [tool for tool in tools if tool.name not in hidden]
    registry = ToolRegistry(tools)

    def on_summary(path: Path) -> None:
        # Compaction summaries are searchable as soon as they are written. The index is a
        # cache: a failure here must never fail the compaction (the watcher retries).
        if index is None:
            return
        try:
            index.index_file(path)
        except (SearchIndexError, sqlite3.Error, OSError):
            index.mark_dirty()

    mode = approval or ApprovalMode(settings.tools.approval)
    approver = Approver(
        mode,
        env.project.root,
        interactive=interactive,
        rules=rules,
        plan=plan,
        trusted_programs=trusted_programs(env),
        added_dirs=added_dirs,
        read_dirs=read_dirs,
    )
    prompt = SystemPrompt(env, cwd, memory=memory, window=window)
    registry.terse = prompt.budget.terse  # a small window gets terse tool definitions
    prompt.appended = appended_instructions(appended_prompt, plan)  # + plan mode's rules
    prompt.replaced_base = system_prompt  # --system-prompt; "" keeps agentsh's own
    # --strict-mcp-config: the servers given on the command line (or by the editor) only
    mcp_config = McpConfig() if strict_mcp else load_mcp_config(env.user, env.project)
    trusted = project_servers_trusted(env, mcp_config)
    mcp, mcp_notices = manager_for(env, cwd, trusted=trusted, extra=mcp_servers, config=mcp_config)
    told += mcp_notices
    if mcp is not None:
        mcp.start()  # in the background: the servers start while the rest loads
    checkpoints = (
        Checkpointer(env.user, env.project.root, settings.checkpoints)
        if settings.checkpoints.enabled
        else None
    )
    if checkpoints is not None:
        checkpoints.warm()
    return Agent(
        env=env,
        session=session,
        cwd=cwd,
        llm=llm,
        tools=registry,
        approver=approver,
        memory=memory,
        memory_tool=memory_tool,
        prompt=prompt,
        window=window,
        max_output=max_output,
        max_steps=max_steps,
        on_summary_written=on_summary,
        notices=told,
        api_base=chosen_api_base(settings.model, os.environ, api_base),
        max_cost_usd=max_cost_usd,
        mcp=mcp,
        checkpoints=checkpoints,
        host=host,
        mcp_untrusted=() if trusted else tuple(sorted(mcp_config.project)),
        client_factory=client_factory,
        tokenizer=tokenizer,
    )


def _guarded_summary_instructions(env: Environment, told: list[str]) -> Environment:
    """``context.summary_instructions`` go into the summary model's prompt at every
    compaction, and a trusted project's config may set them: they are scanned like AGENTS.md,
    and a poisoned text is left out with one line (the guard loads only when they are set)."""
    steer = env.settings.context.summary_instructions
    if not steer.strip():
        return env
    from agentsh.memory.guard import Scope, scan

    threats = scan(steer, Scope.CONTEXT_FILE)
    if not threats:
        return env
    told.append(
        "context.summary_instructions not used: they look like a prompt injection "
        f"({', '.join(sorted({t.name for t in threats}))})"
    )
    context = dataclasses.replace(env.settings.context, summary_instructions="")
    settings = dataclasses.replace(env.settings, context=context)
    return dataclasses.replace(env, config=dataclasses.replace(env.config, settings=settings))
