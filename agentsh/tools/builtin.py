"""The built-in coding tools every session starts with (memory tools are added beside them)."""

from __future__ import annotations

from agentsh.tools.base import Tool
from agentsh.tools.files import EditTool, ReadTool, WriteTool
from agentsh.tools.search import FindTool, GrepTool, LsTool
from agentsh.tools.shell import BashTool


def builtin_tools() -> list[Tool]:
    """Fresh instances of read, write, edit, bash, grep, find and ls, in that order."""
    return [ReadTool(), WriteTool(), EditTool(), BashTool(), GrepTool(), FindTool(), LsTool()]
