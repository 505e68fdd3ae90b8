"""write and edit: diffs, uniqueness, tolerant matching, and bytes the model cannot see."""

from __future__ import annotations

import difflib
from pathlib import Path

import pytest

from agentsh.tools.base import ToolContext
from agentsh.tools.file_diff import unified_diff
from agentsh.tools.files import EditTool, WriteTool
from tests.tools.conftest import call

# -- write ----------------------------------------------------------------------------------


@pytest.mark.asyncio
async def test_write_creates_parent_folders_and_returns_a_diff(
    project: Path, ctx: ToolContext
) -> None:
    result = await call(WriteTool(), ctx, path="src/pkg/mod.py", content="a = 1\nb = 2\n")
    assert not result.is_error
    assert result.content == "Created src/pkg/mod.py (2 lines, 12 B)."
    assert (project / "src/pkg/mod.py").read_text() == "a = 1\nb = 2\n"
    assert result.details["diff"] == (
        "--- /dev/null\n+++ b/src/pkg/mod.py\n@@ -0,0 +1,2 @@\n+a = 1\n+b = 2\n"
    )


@pytest.mark.asyncio
async def test_write_over_a_file_diffs_against_the_old_content(
    project: Path, ctx: ToolContext
) -> None:
    (project / "f.txt").write_text("one\ntwo\nthree\n")
    result = await call(WriteTool(), ctx, path="f.txt", content="one\nTWO\nthree\nfour\n")
    assert result.content == "Overwrote f.txt (4 lines, 19 B; +2 -1)."
    assert result.details["diff"] == (
        "--- a/f.txt\n+++ b/f.txt\n@@ -1,3 +1,4 @@\n one\n-two\n+TWO\n three\n+four\n"
    )


@pytest.mark.asyncio
async def test_write_keeps_crlf_and_bom_of_the_file_it_replaces(
    project: Path, ctx: ToolContext
) -> None:
    target = project / "win.txt"
    target.write_bytes(b"\xef\xbb\xbfold\r\nlines\r\n")
    await call(WriteTool(), ctx, path="win.txt", content="new\ncontent\n")
    assert target.read_bytes() == b"\xef\xbb\xbfnew\r\ncontent\r\n"


@pytest.mark.asyncio
async def test_write_of_the_same_content_changes_nothing(project: Path, ctx: ToolContext) -> None:
    target = project / "same.txt"
    target.write_text("x\n")
    result = await call(WriteTool(), ctx, path="same.txt", content="x\n")
    assert not result.is_error
    assert result.content == "same.txt already has this content; nothing changed."


@pytest.mark.asyncio
async def test_write_refuses_a_directory_and_a_file_in_the_folder_path(
    project: Path, ctx: ToolContext
) -> None:
    (project / "src").mkdir()
    (project / "plain").write_text("")
    folder = await call(WriteTool(), ctx, path="src", content="x")
    assert folder.is_error and "is a directory" in folder.content
    blocked = await call(WriteTool(), ctx, path="plain/child.txt", content="x")
    assert blocked.is_error and "part of its folder path is a file" in blocked.content


@pytest.mark.asyncio
async def test_write_approval_detail_is_the_diff_and_writes_nothing(
    project: Path, ctx: ToolContext
) -> None:
    tool = WriteTool()
    detail = await tool.approval_detail(tool.parse({"path": "n.txt", "content": "hi\n"}), ctx)
    assert detail == "--- /dev/null\n+++ b/n.txt\n@@ -0,0 +1 @@\n+hi\n"
    assert not (project / "n.txt").exists()


# -- edit -----------------------------------------------------------------------------------


def source(count: int = 100) -> str:
    return "".join(f"value_{i} = {i}\n" for i in range(1, count + 1))


@pytest.mark.asyncio
async def test_edit_replaces_a_unique_match_and_returns_its_diff(
    project: Path, ctx: ToolContext
) -> None:
    target = project / "values.py"
    target.write_text(source())
    result = await call(
        EditTool(), ctx, path="values.py", old_text="value_50 = 50\n", new_text="value_50 = 0\n"
    )
    assert not result.is_error
    assert result.content == "Edited values.py: replaced 1 occurrence (first at line 50; +1 -1)."
    assert target.read_text() == source().replace("value_50 = 50\n", "value_50 = 0\n")
    assert result.details["diff"] == (
        "--- a/values.py\n+++ b/values.py\n@@ -47,7 +47,7 @@\n"
        " value_47 = 47\n value_48 = 48\n value_49 = 49\n-value_50 = 50\n+value_50 = 0\n"
        " value_51 = 51\n value_52 = 52\n value_53 = 53\n"
    )
    assert result.details["first_changed_line"] == 50


@pytest.mark.asyncio
async def test_edit_needs_a_unique_match_unless_replace_all(
    project: Path, ctx: ToolContext
) -> None:
    target = project / "dup.py"
    original = "x = 1\nprint(x)\nx = 1\nx = 1\n"
    target.write_text(original)
    result = await call(EditTool(), ctx, path="dup.py", old_text="x = 1", new_text="x = 2")
    assert result.is_error
    assert result.content.startswith("Found 3 occurrences of old_text in dup.py (lines 1, 3, 4).")
    assert "set replace_all=true" in result.content
    assert target.read_text() == original
    every = await call(
        EditTool(), ctx, path="dup.py", old_text="x = 1", new_text="x = 2", replace_all=True
    )
    assert every.details["replacements"] == 3
    assert "replaced 3 occurrences" in every.content
    assert target.read_text() == "x = 2\nprint(x)\nx = 2\nx = 2\n"


@pytest.mark.asyncio
@pytest.mark.parametrize(
    ("in_file", "old_text"),
    [
        ("say(“hello”)  \nnext()\n", 'say("hello")\nnext()'),  # smart quotes, trailing spaces
        ("a = b — c\n", "a = b - c"),  # em dash
        ("name\u00a0=\u00a0'x'\n", "name = 'x'"),  # no-break spaces (NFKC)
        ("ｆｕｌｌ = 1\n", "full = 1"),  # fullwidth letters (NFKC)
        ("cafe\u0301 = 1\n", "café = 1"),  # combining accent vs precomposed
    ],
)
async def test_edit_falls_back_to_a_tolerant_match(
    project: Path, ctx: ToolContext, in_file: str, old_text: str
) -> None:
    target = project / "t.py"
    target.write_text("before = 0\n" + in_file + "after = 9\n")
    result = await call(EditTool(), ctx, path="t.py", old_text=old_text, new_text="REPLACED")
    assert not result.is_error, result.content
    assert result.details["tolerant"] is True
    assert "matched only after ignoring differences" in result.content
    text = target.read_text()
    assert text.startswith("before = 0\nREPLACED") and text.endswith("after = 9\n")


@pytest.mark.asyncio
async def test_tolerant_match_leaves_everything_outside_the_span_byte_for_byte(
    project: Path, ctx: ToolContext
) -> None:
    target = project / "q.md"
    target.write_text("“keep” this  \nchange “me”\n“keep” too\t\n")
    await call(EditTool(), ctx, path="q.md", old_text='change "me"', new_text="changed")
    assert target.read_text() == "“keep” this  \nchanged\n“keep” too\t\n"


@pytest.mark.asyncio
async def test_edit_preserves_bom_and_crlf(project: Path, ctx: ToolContext) -> None:
    target = project / "win.cs"
    target.write_bytes(b"\xef\xbb\xbfclass A {\r\n  int x = 1;\r\n}\r\n")
    result = await call(
        EditTool(),
        ctx,
        path="win.cs",
        old_text="  int x = 1;\n}",
        new_text="  int x = 2;\n  int y;\n}",
    )
    assert not result.is_error, result.content
    assert result.details["tolerant"] is False
    assert target.read_bytes() == b"\xef\xbb\xbfclass A {\r\n  int x = 2;\r\n  int y;\r\n}\r\n"
    assert "\r" not in result.details["diff"]


@pytest.mark.asyncio
async def test_edit_of_a_mixed_ending_file_touches_only_the_match(
    project: Path, ctx: ToolContext
) -> None:
    target = project / "mixed.txt"
    target.write_bytes(b"a\r\nb\nc\r\nd\n")
    await call(EditTool(), ctx, path="mixed.txt", old_text="d", new_text="D")
    assert target.read_bytes() == b"a\r\nb\nc\r\nD\n"


@pytest.mark.asyncio
async def test_edit_that_changes_nothing_is_an_error(project: Path, ctx: ToolContext) -> None:
    target = project / "n.py"
    target.write_text('say("“hi”")\n')
    same = await call(EditTool(), ctx, path="n.py", old_text="hi", new_text="hi")
    assert same.is_error and "identical" in same.content
    # old_text only matches tolerantly, and new_text is what is already there.
    noop = await call(EditTool(), ctx, path="n.py", old_text='"hi"', new_text="“hi”")
    assert noop.is_error and "unchanged" in noop.content
    assert target.read_text() == 'say("“hi”")\n'


@pytest.mark.asyncio
async def test_edit_not_found_points_at_the_closest_line(project: Path, ctx: ToolContext) -> None:
    target = project / "app.py"
    target.write_text("def main():\n    run_server(port=8080)\n")
    result = await call(
        EditTool(), ctx, path="app.py", old_text="    run_server(port=8000)", new_text="x"
    )
    assert result.is_error
    assert result.content.startswith("Could not find old_text in app.py.")
    assert "The closest line is 2: '    run_server(port=8080)'" in result.content
    assert target.read_text() == "def main():\n    run_server(port=8080)\n"


@pytest.mark.asyncio
async def test_edit_missing_and_binary_files(project: Path, ctx: ToolContext) -> None:
    missing = await call(EditTool(), ctx, path="nope.py", old_text="a", new_text="b")
    assert missing.is_error and missing.content.startswith("File not found: nope.py.")
    assert missing.content.endswith("To create a file, use write.")
    (project / "img.bin").write_bytes(b"\xff\xfe\x00\x01")
    binary = await call(EditTool(), ctx, path="img.bin", old_text="a", new_text="b")
    assert binary.is_error and "not UTF-8 text" in binary.content


@pytest.mark.asyncio
async def test_edit_approval_detail_shows_the_diff_without_writing(
    project: Path, ctx: ToolContext
) -> None:
    target = project / "c.py"
    target.write_text("x = 1\n")
    tool = EditTool()
    params = tool.parse({"path": "c.py", "old_text": "x = 1", "new_text": "x = 2"})
    detail = await tool.approval_detail(params, ctx)
    assert detail == "--- a/c.py\n+++ b/c.py\n@@ -1 +1 @@\n-x = 1\n+x = 2\n"
    assert target.read_text() == "x = 1\n"


# -- diff -----------------------------------------------------------------------------------


def test_unified_diff_matches_difflib_on_a_large_file_with_small_changes() -> None:
    old = source(3000)
    new = old.replace("value_1500 = 1500\n", "value_1500 = -1\nextra = 1\n").replace(
        "value_2990 = 2990\n", ""
    )
    diff, added, removed = unified_diff(old, new, "v.py")
    expected = "".join(
        difflib.unified_diff(
            old.splitlines(keepends=True), new.splitlines(keepends=True), "a/v.py", "b/v.py"
        )
    )
    assert diff == expected
    assert (added, removed) == (2, 2)


def test_unified_diff_marks_a_missing_final_newline() -> None:
    diff, _, _ = unified_diff("a\nb", "a\nc", "f")
    assert diff.endswith("-b\n\\ No newline at end of file\n+c\n\\ No newline at end of file\n")


@pytest.mark.parametrize(
    ("name", "shown"),
    [
        ("a\nb.txt", "a\\nb.txt"),
        ("a\r\n+++ b/evil.txt", "a\\n+++ b/evil.txt"),
        ("x\x1b[2Jy.py", "x\\x1b[2Jy.py"),
        ("p\u2028q.md", "p\\u2028q.md"),
    ],
)
def test_a_diff_header_shows_a_file_name_on_one_line(name: str, shown: str) -> None:
    """A name holding a line break was printed raw: ``+++ b/a`` and then ``b.txt`` on a line of
    its own, in the approval prompt of a write or edit (a name can forge a header line)."""
    diff, _, _ = unified_diff("old\n", "new\n", name)
    assert diff.splitlines()[:3] == [f"--- a/{shown}", f"+++ b/{shown}", "@@ -1 +1 @@"]
    created, _, _ = unified_diff("", "new\n", name, created=True)
    assert created.splitlines()[:2] == ["--- /dev/null", f"+++ b/{shown}"]
