"""``agentsh acp``: serve the Agent Client Protocol on stdin and stdout until the client leaves.

The first thing done is claiming stdout for the protocol (:mod:`.stdio`); only then is anything
else imported. The client starts this process and owns its lifetime: end of input ends it, and
every session's log is closed and its MCP servers stopped on the way out; then the process
exits at once, without the seconds a full interpreter teardown takes with litellm loaded.
"""

from __future__ import annotations

import argparse
import os
import sys
from typing import TYPE_CHECKING, cast

from agentsh.errors import EXIT_OK

if TYPE_CHECKING:
    from agentsh.acp.server import AcpServer
    from agentsh.acp.stdio import ProtocolPipes


def main(args: argparse.Namespace) -> int:
    from agentsh.acp.stdio import claim_stdio

    pipes = claim_stdio()  # before any other import can print

    import asyncio

    from agentsh.acp.server import AcpOptions, AcpServer
    from agentsh.config import ApprovalMode

    options = AcpOptions(
        model=getattr(args, "model", None),
        api_base=getattr(args, "api_base", None),
        approval=ApprovalMode(args.approve) if getattr(args, "approve", None) else None,
        trust_project=bool(getattr(args, "trust_project", False)),
    )
    server = AcpServer(options)
    try:
        asyncio.run(_serve(server, pipes))
    except KeyboardInterrupt:
        pass
    finally:
        server.close()
        from agentsh.memory.index import close_shared

        close_shared()
    # Everything is closed and flushed. Tearing down the interpreter would only free memory,
    # which takes seconds with litellm loaded, while the editor waits for the process to end.
    sys.stderr.flush()
    os._exit(EXIT_OK)


async def _serve(server: AcpServer, pipes: ProtocolPipes) -> None:
    from acp import Agent, run_agent

    from agentsh.acp.stdio import open_streams

    reader, writer = await open_streams(pipes)
    # The methods AcpServer does not define (fork, resume, config options) are answered
    # "method not found" by the package's router: it looks each one up by name.
    await run_agent(cast("Agent", server), writer, reader)
