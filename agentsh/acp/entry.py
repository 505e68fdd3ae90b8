"""``agentsh acp``: serve the Agent Client Protocol on stdin and stdout until the client leaves.

The first thing done is claiming stdout for the protocol (:mod:`.stdio`); only then is anything
else imported. The client starts this process and owns its lifetime: end of input ends it, and
so do SIGINT, SIGTERM (an editor quitting) and SIGHUP (a closed terminal); either way every
session's log is closed and its MCP servers and their process groups stopped on the way out
(left to the signal's default, the servers lived on until their watchdogs noticed, seconds
later); then the process exits at once, without the seconds a full interpreter teardown takes
with litellm loaded.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import os
import signal
import sys
from typing import TYPE_CHECKING, cast

from agentsh.errors import EXIT_OK
from agentsh.process_end import run_loop

if TYPE_CHECKING:
    from agentsh.acp.server import AcpServer
    from agentsh.acp.stdio import ProtocolPipes


def main(args: argparse.Namespace) -> int:
    from agentsh.acp.stdio import claim_stdio

    # (options before `acp` it does not read are refused by agentsh.cli_checks)
    pipes = claim_stdio()  # before any other import can print

    from agentsh.acp.server import AcpOptions, AcpServer
    from agentsh.config import ApprovalMode

    options = AcpOptions(
        model=getattr(args, "model", None),
        api_base=getattr(args, "api_base", None),
        approval=ApprovalMode(args.approve) if getattr(args, "approve", None) else None,
        trust_project=bool(getattr(args, "trust_project", False)),
    )
    server = AcpServer(options)
    received: list[int] = []
    try:
        # Not asyncio.run: it waits for the worker threads, and one stuck in a system call
        # (a tool reading a FIFO, a hung mount) kept the agent from ever exiting.
        run_loop(_serve(server, pipes, received))
    except (KeyboardInterrupt, asyncio.CancelledError):
        pass
    finally:
        server.close()
        from agentsh.memory.index_registry import close_shared

        close_shared()
    # Everything is closed and flushed. Tearing down the interpreter would only free memory,
    # which takes seconds with litellm loaded, while the editor waits for the process to end.
    sys.stderr.flush()
    os._exit(128 + received[0] if received else EXIT_OK)


async def _serve(server: AcpServer, pipes: ProtocolPipes, received: list[int]) -> None:
    from acp import Agent, run_agent

    from agentsh.acp.frames import ScreenedTransport
    from agentsh.acp.stdio import open_streams

    _end_on_signals(server, received)
    reader, writer = await open_streams(pipes)
    # The methods AcpServer does not define (fork, config options) are answered "method not
    # found" by the package's router: it looks each one up by name. session/close and
    # session/resume are in the package's "unstable" set (the protocol has them, and agentsh
    # advertises them): without the flag the router refused them although they are defined.
    # Lines that are no JSON-RPC message never reach it (agentsh.acp.frames).
    await run_agent(
        cast("Agent", server),
        ScreenedTransport(reader, writer, server.end_turns),
        use_unstable_protocol=True,
    )


def _end_on_signals(server: AcpServer, received: list[int]) -> None:
    """SIGINT, SIGTERM and SIGHUP end the serving as end of input does (``received`` notes
    which):
    running turns are cancelled and given a moment to record how they ended, then the serving
    stops; a second signal stops it at once."""
    loop = asyncio.get_running_loop()
    main = asyncio.current_task()
    stopping: list[asyncio.Future[None]] = []

    async def stop() -> None:
        try:
            await server.end_turns()
        finally:
            if main is not None:
                main.cancel()

    def end(signum: int) -> None:
        received.append(signum)
        if len(received) == 1:
            stopping.append(asyncio.ensure_future(stop()))
        elif main is not None:
            main.cancel()

    for signum in (signal.SIGINT, signal.SIGTERM, signal.SIGHUP):
        with contextlib.suppress(NotImplementedError, RuntimeError, ValueError):
            loop.add_signal_handler(signum, end, signum)
