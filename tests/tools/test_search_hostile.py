"""The search tools in a project shaped to break them: folders nested past Python's recursion
limit, FIFOs where files are expected, a read that never returns."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from agentsh.tools.base import ToolContext
from agentsh.tools.search import FindTool, GrepTool
from agentsh.tools.walk import Walker
from tests.fakes.deep_tree import DEEP, DEPTH, make_deep, remove_deep_trees
from tests.tools.conftest import call


@pytest.fixture(autouse=True)
def _deep_trees_removed(tmp_path: Path) -> Iterator[None]:
    yield
    remove_deep_trees(tmp_path)


# -- folders nested past the recursion limit -------------------------------------------------


def test_the_walk_lists_folders_nested_past_the_recursion_limit(project: Path) -> None:
    """The walk recursed once per folder level: a cloned project 1,200 folders deep ended
    grep and find with a RecursionError."""
    (project / "top.txt").write_text("")
    make_deep(project, b"needle\n")
    walked = [e.rel for e in Walker(project)]
    chain = ["/".join(["d"] * n) for n in range(1, DEPTH + 1)]
    assert walked == [*chain, f"{DEEP}/f.txt", "top.txt"]


@pytest.mark.asyncio
async def test_grep_and_find_search_folders_nested_past_the_recursion_limit(
    project: Path, ctx: ToolContext
) -> None:
    make_deep(project, b"needle\n")
    grep = await call(GrepTool(use_ripgrep=False), ctx, pattern="needle")
    assert not grep.is_error, grep.content
    assert grep.content == f"{DEEP}/f.txt:1: needle"
    found = await call(FindTool(), ctx, pattern="*.txt")
    assert not found.is_error, found.content
    assert found.content == f"{DEEP}/f.txt"
