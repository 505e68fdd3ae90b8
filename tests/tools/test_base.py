"""Output limits, path helpers, schemas and argument validation shared by every built-in tool."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from agentsh.llm.tokens import estimate_tokens
from agentsh.tools.base import (
    ToolArgumentError,
    cut_bytes,
    cut_tail_bytes,
    display_path,
    format_size,
    is_inside,
    missing_path_message,
    resolve_path,
    truncate_head,
    truncate_tail,
)
from agentsh.tools.builtin import builtin_tools
from agentsh.tools.file_read import ReadParams, ReadTool
from agentsh.tools.files import EditParams, EditTool
from agentsh.tools.search import GrepParams, GrepTool
from agentsh.tools.shell import BashParams, BashTool

# -- truncation -----------------------------------------------------------------------------


def test_truncate_head_keeps_whole_lines_within_the_byte_budget() -> None:
    text = "".join(f"line {i:03d}\n" for i in range(100))  # 9 bytes a line
    cut = truncate_head(text, max_lines=1000, max_bytes=50)
    assert cut.truncated
    assert cut.text == "line 000\nline 001\nline 002\nline 003\nline 004"
    assert (cut.kept_lines, cut.total_lines, cut.total_bytes) == (5, 100, 900)
    assert cut.kept_bytes == len(cut.text.encode())
    assert not cut.partial_line


def test_truncate_head_line_limit() -> None:
    cut = truncate_head("a\nb\nc\nd\n", max_lines=2, max_bytes=10_000)
    assert cut.text == "a\nb"
    assert cut.truncated and cut.total_lines == 4


def test_truncate_tail_keeps_the_last_whole_lines() -> None:
    text = "".join(f"row {i}\n" for i in range(10))
    cut = truncate_tail(text, max_lines=3, max_bytes=10_000)
    assert cut.text == "row 7\nrow 8\nrow 9"
    cut = truncate_tail(text, max_lines=100, max_bytes=12)
    assert cut.text == "row 8\nrow 9"


def test_truncation_leaves_short_text_alone() -> None:
    cut = truncate_head("one\ntwo\n", max_lines=10, max_bytes=100)
    assert not cut.truncated and cut.text == "one\ntwo\n" and cut.total_lines == 2


def test_a_single_overlong_line_is_cut_at_a_character_boundary() -> None:
    line = "é" * 100  # two bytes each
    head = truncate_head(line + "\nnext", max_lines=10, max_bytes=11)
    assert head.partial_line and head.text == "é" * 5
    tail = truncate_tail("first\n" + line, max_lines=10, max_bytes=11)
    assert tail.partial_line and tail.text == "é" * 5
    assert cut_bytes("aé", 2) == "a" and cut_tail_bytes("éa", 2) == "a"


def test_format_size() -> None:
    assert format_size(512) == "512 B"
    assert format_size(50 * 1024) == "50.0 KB"
    assert format_size(3 * 1024 * 1024 + 200_000) == "3.2 MB"


# -- paths ----------------------------------------------------------------------------------


def test_resolve_path_expands_home_joins_cwd_and_folds_dotdot(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    assert resolve_path("~/notes.txt", tmp_path) == tmp_path / "home" / "notes.txt"
    assert resolve_path("src/../app.py", tmp_path) == tmp_path / "app.py"
    assert resolve_path("/etc/hosts", tmp_path) == Path("/etc/hosts")


def test_display_path_is_relative_inside_cwd_and_absolute_outside(tmp_path: Path) -> None:
    assert display_path(tmp_path / "a" / "b.py", tmp_path) == "a/b.py"
    assert display_path(tmp_path, tmp_path) == "."
    assert display_path(Path("/usr/bin"), tmp_path) == "/usr/bin"


def test_is_inside_resolves_symlinks_and_dotdot(tmp_path: Path) -> None:
    root = tmp_path / "root"
    (root / "src").mkdir(parents=True)
    outside = tmp_path / "outside"
    outside.mkdir()
    (root / "escape").symlink_to(outside)
    assert is_inside(root / "src" / "new.py", root)
    assert is_inside(root, root)
    assert not is_inside(root / "escape" / "x.py", root)
    assert not is_inside(root / ".." / "outside" / "x.py", root)


def test_missing_path_message_suggests_similar_names(tmp_path: Path) -> None:
    (tmp_path / "config.py").write_text("")
    (tmp_path / "README.md").write_text("")
    message = missing_path_message(tmp_path / "confg.py", tmp_path)
    assert message.startswith("File not found: confg.py.")
    assert "Did you mean: config.py?" in message
    assert "readme.md" not in message
    assert "README.md" in missing_path_message(tmp_path / "readme.md", tmp_path)
    deep = missing_path_message(tmp_path / "no" / "such" / "file.py", tmp_path)
    assert "no/such does not exist either" in deep


# -- schemas --------------------------------------------------------------------------------


EXPECTED_REQUIRED = {
    "read": ["path"],
    "write": ["path", "content"],
    "edit": ["path", "old_text", "new_text"],
    "bash": ["command"],
    "grep": ["pattern"],
    "find": ["pattern"],
    "ls": [],
}


def test_builtin_tools_are_the_seven_coding_tools() -> None:
    assert [t.name for t in builtin_tools()] == list(EXPECTED_REQUIRED)


@pytest.mark.parametrize("tool", builtin_tools(), ids=lambda t: t.name)
def test_every_schema_is_a_valid_function_schema(tool: Any) -> None:
    schema = tool.schema()
    json.dumps(schema)  # serialisable as is
    assert schema["type"] == "function"
    function = schema["function"]
    assert function["name"] == tool.name
    assert function["description"].strip()
    parameters = function["parameters"]
    assert parameters["type"] == "object"
    assert parameters["additionalProperties"] is False
    assert parameters["required"] == EXPECTED_REQUIRED[tool.name]
    assert set(parameters["required"]) <= set(parameters["properties"])
    for name, prop in parameters["properties"].items():
        assert prop["type"] in {"string", "integer", "number", "boolean"}, name
        assert prop["description"].strip(), name


def test_tool_schemas_stay_small() -> None:
    # Schemas go with every request: keep them well under Pi's ~1,000-token prompt budget.
    text = json.dumps([t.schema() for t in builtin_tools()], separators=(",", ":"))
    assert estimate_tokens(text) < 1000


# -- argument validation --------------------------------------------------------------------


@pytest.mark.parametrize(
    ("tool", "arguments", "message"),
    [
        (ReadTool(), {}, "missing required argument 'path'"),
        (ReadTool(), {"path": "a", "lines": 3}, "unknown argument(s) lines"),
        (ReadTool(), {"path": "a", "offset": 0}, "1-based"),
        (ReadTool(), {"path": "a", "limit": "many"}, "'limit' must be of type integer"),
        (ReadTool(), {"path": "  "}, "'path' must not be empty"),
        (EditTool(), {"path": "a", "old_text": "", "new_text": "x"}, "use write"),
        (EditTool(), {"path": "a", "old_text": "x", "new_text": 3}, "'new_text' must be"),
        (BashTool(), {"command": " "}, "'command' must not be empty"),
        (BashTool(), {"command": "ls", "timeout": 0.5}, "'timeout' must be at least 1"),
        (GrepTool(), {"pattern": "x", "context": -1}, "'context' must be 0 or more"),
        (GrepTool(), {"pattern": ""}, "'pattern' must not be empty"),
    ],
)
def test_bad_arguments_are_rejected_with_a_clear_message(
    tool: Any, arguments: dict[str, Any], message: str
) -> None:
    with pytest.raises(ToolArgumentError, match=message.replace("(", r"\(").replace(")", r"\)")):
        tool.parse(arguments)


def test_numbers_quoted_by_the_model_are_accepted() -> None:
    params = ReadTool().parse({"path": "a.py", "offset": "10", "limit": 5.0})
    assert params == ReadParams(path="a.py", offset=10, limit=5)


def test_summaries_are_one_header_line() -> None:
    assert BashTool().summary(BashParams("pytest -q")) == "bash: pytest -q"
    assert BashTool().summary(BashParams("make\nmake test")) == "bash: make …"
    assert len(BashTool().summary(BashParams("x" * 500))) < 110
    assert ReadTool().summary(ReadParams("src/app.py", 1, 50)) == "read: src/app.py:1-50"
    assert ReadTool().summary(ReadParams("src/app.py")) == "read: src/app.py"
    assert ReadTool().summary(ReadParams("src/app.py", offset=100)) == "read: src/app.py:100-"
    assert EditTool().summary(EditParams("src/app.py", "a", "b")) == "edit: src/app.py"
    assert GrepTool().summary(GrepParams("TODO", "src", "*.py")) == "grep: TODO in src (*.py)"


def test_relative_paths_resolve_against_the_given_cwd_not_the_process_cwd(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    (tmp_path / "elsewhere").mkdir()
    monkeypatch.chdir(tmp_path / "elsewhere")
    assert resolve_path("x", tmp_path / "sub") == tmp_path / "sub" / "x"
