"""A hand-written MCP server that speaks only the 2025-06-18 protocol over stdio, as most
servers in use still do (no ``server/discover``, no ``subscriptions/listen``): its change
notices are plain ``notifications/tools/list_changed`` messages at any time.

Tools: ``unlock`` adds ``secret`` and sends one notice; ``flood`` sends ``count`` notices at
once (a buggy or hostile server). Every request it got is appended, one method a line, to the
file named by ``--requests``, so a test can count how often agentsh listed the tools.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import Any

VERSION = "2025-06-18"
SCHEMA = {"type": "object", "properties": {}}


def _send(message: dict[str, Any]) -> None:
    sys.stdout.write(json.dumps(message) + "\n")
    sys.stdout.flush()


def _changed() -> None:
    _send({"jsonrpc": "2.0", "method": "notifications/tools/list_changed"})


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--requests", type=Path, required=True)
    args = parser.parse_args()
    tools = [
        {"name": "unlock", "description": "Add the tool 'secret'.", "inputSchema": SCHEMA},
        {"name": "flood", "description": "Send change notices.", "inputSchema": SCHEMA},
    ]
    for line in sys.stdin:
        message = json.loads(line)
        method, ident = message.get("method"), message.get("id")
        if method is None or ident is None:  # a notification or a response: nothing to answer
            continue
        with args.requests.open("a") as log:
            log.write(f"{method}\n")
        result: dict[str, Any]
        if method == "initialize":
            result = {
                "protocolVersion": VERSION,
                "capabilities": {"tools": {"listChanged": True}},
                "serverInfo": {"name": "legacy", "version": "1.0"},
            }
        elif method == "tools/list":
            result = {"tools": tools}
        elif method == "tools/call":
            name = message["params"]["name"]
            if name == "unlock" and len(tools) == 2:
                tools.append({"name": "secret", "description": "Unlocked.", "inputSchema": SCHEMA})
                _changed()
            elif name == "flood":
                for _ in range(int(message["params"].get("arguments", {}).get("count", 500))):
                    _changed()
            result = {"content": [{"type": "text", "text": f"{name} done"}], "isError": False}
        else:
            _send({"jsonrpc": "2.0", "id": ident, "error": {"code": -32601, "message": method}})
            continue
        _send({"jsonrpc": "2.0", "id": ident, "result": result})


if __name__ == "__main__":
    main()
