"""The tools every session offers the model: the coding tools, then the memory tools.

:func:`session_tools` is the one list both the agent and ``agentsh context`` use, so the
schemas the context breakdown counts are the schemas the model is sent.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from agentsh.tools.base import Tool
from agentsh.tools.file_read import ReadTool
from agentsh.tools.files import EditTool, WriteTool
from agentsh.tools.memory import MemoryTool
from agentsh.tools.memory_search import MemoryGetTool, MemorySearchTool
from agentsh.tools.search import FindTool, GrepTool, LsTool
from agentsh.tools.shell import BashTool

if TYPE_CHECKING:
    from agentsh.memory.index import MemoryIndex


def builtin_tools() -> list[Tool]:
    """Fresh instances of read, write, edit, bash, grep, find and ls, in that order."""
    return [ReadTool(), WriteTool(), EditTool(), BashTool(), GrepTool(), FindTool(), LsTool()]


def session_tools(memory_tool: MemoryTool, index: MemoryIndex | None = None) -> list[Tool]:
    """The built-in tools, ``memory``, ``memory_search`` and ``memory_get``, in that order.

    With ``index`` None the two search tools open the project's shared index at their first
    call (and tell the model when it cannot be opened).
    """
    return [*builtin_tools(), memory_tool, MemorySearchTool(index), MemoryGetTool(index)]
