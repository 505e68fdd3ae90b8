"""The read tool: numbered pages, limits that say how to read on, and clear refusals."""

from __future__ import annotations

import os
import tracemalloc
from pathlib import Path

import pytest

from agentsh.tools.base import ToolContext
from agentsh.tools.file_access import sniff_binary
from agentsh.tools.file_read import ReadTool
from tests.tools.conftest import MakeCtx, call


def numbered(path: Path, count: int, width: int = 0) -> None:
    path.write_text("".join(f"line {i}{'x' * width}\n" for i in range(1, count + 1)))


@pytest.mark.asyncio
async def test_small_file_is_shown_whole_with_line_numbers(project: Path, ctx: ToolContext) -> None:
    (project / "app.py").write_text("import os\n\nprint(os.name)\n")
    result = await call(ReadTool(), ctx, path="app.py")
    assert not result.is_error and not result.truncated
    assert result.content == "1\timport os\n2\t\n3\tprint(os.name)"
    assert result.details["total_lines"] == 3


@pytest.mark.asyncio
async def test_line_limit_names_the_next_offset(project: Path, ctx: ToolContext) -> None:
    numbered(project / "long.txt", 2500)
    result = await call(ReadTool(), ctx, path="long.txt")
    assert result.truncated
    lines = result.content.split("\n")
    assert lines[0] == "   1\tline 1" and lines[1999] == "2000\tline 2000"
    assert result.content.endswith(
        "[Showing lines 1-2000 of 2500 (2000-line limit). Use offset=2001 to read on.]"
    )
    rest = await call(ReadTool(), ctx, path="long.txt", offset=2001)
    assert not rest.truncated
    assert rest.content.split("\n")[0] == "2001\tline 2001"
    assert rest.content.endswith("2500\tline 2500")


@pytest.mark.asyncio
async def test_byte_limit_never_cuts_a_line(project: Path, make_ctx: MakeCtx) -> None:
    ctx = make_ctx(read_max_bytes=1024)
    numbered(project / "wide.txt", 100, width=90)  # ~100 bytes a line
    result = await call(ReadTool(), ctx, path="wide.txt")
    body, note = result.content.split("\n\n")
    assert len(body.encode()) <= 1024
    assert all(line.endswith("x" * 90) for line in body.split("\n"))
    shown = len(body.split("\n"))
    assert note == (
        f"[Showing lines 1-{shown} of 100 (1.0 KB limit). Use offset={shown + 1} to read on.]"
    )
    assert result.truncated


@pytest.mark.asyncio
async def test_a_caller_limit_says_how_to_read_on_without_marking_truncation(
    project: Path, ctx: ToolContext
) -> None:
    numbered(project / "f.txt", 20)
    result = await call(ReadTool(), ctx, path="f.txt", offset=3, limit=5)
    assert result.content.startswith("3\tline 3\n")
    assert "7\tline 7\n\n[Showing lines 3-7 of 20. Use offset=8 to read on.]" in result.content
    assert not result.truncated
    assert result.details["start_line"] == 3 and result.details["end_line"] == 7


@pytest.mark.asyncio
async def test_offset_past_the_end_is_an_error(project: Path, ctx: ToolContext) -> None:
    numbered(project / "f.txt", 12)
    result = await call(ReadTool(), ctx, path="f.txt", offset=13)
    assert result.is_error
    assert result.content == (
        "offset 13 is past the end of f.txt (12 lines). Use an offset from 1 to 12."
    )


@pytest.mark.asyncio
async def test_empty_file(project: Path, ctx: ToolContext) -> None:
    (project / "empty.txt").write_text("")
    result = await call(ReadTool(), ctx, path="empty.txt")
    assert not result.is_error and result.content == "[empty.txt is empty.]"


@pytest.mark.asyncio
async def test_binary_files_get_a_clear_message(project: Path, ctx: ToolContext) -> None:
    (project / "blob.bin").write_bytes(b"abc\x00def" * 100)
    (project / "logo.png").write_bytes(b"\x89PNG\r\n\x1a\n" + os.urandom(2000))
    (project / "noise.dat").write_bytes(bytes(range(128, 256)) * 20)
    blob = await call(ReadTool(), ctx, path="blob.bin")
    assert blob.is_error
    assert blob.content == "blob.bin is a binary file (binary data, 700 B); read shows text only."
    png = await call(ReadTool(), ctx, path="logo.png")
    assert png.is_error and "(PNG image, 2.0 KB)" in png.content
    noise = await call(ReadTool(), ctx, path="noise.dat")
    assert noise.is_error and "binary file" in noise.content


@pytest.mark.asyncio
async def test_legacy_8bit_text_is_still_shown(project: Path, ctx: ToolContext) -> None:
    (project / "latin1.txt").write_bytes("café au lait, crème brûlée\n".encode("latin-1") * 5)
    result = await call(ReadTool(), ctx, path="latin1.txt")
    assert not result.is_error
    assert result.content.startswith("1\tcaf\ufffd au lait")


def test_binary_sniffing() -> None:
    assert sniff_binary(b"plain text\n") is None
    assert sniff_binary("ünïcödé ✓\n".encode()) is None
    assert sniff_binary("ü".encode()[:1]) is None  # a character cut by the sniff window
    assert sniff_binary(b"%PDF-1.7 ...") == "PDF document"
    assert sniff_binary(b"\x01\x02\x03\x04\x05\x06\x07 ab") == "binary data"


@pytest.mark.asyncio
async def test_directories_and_special_files_are_refused(project: Path, ctx: ToolContext) -> None:
    (project / "src").mkdir()
    result = await call(ReadTool(), ctx, path="src")
    assert (
        result.is_error and result.content == "src is a directory, not a file. Use ls to list it."
    )
    os.mkfifo(project / "pipe")
    fifo = await call(ReadTool(), ctx, path="pipe")  # would block forever if opened
    assert fifo.is_error and "not a regular file" in fifo.content


@pytest.mark.asyncio
async def test_missing_file_suggests_similar_names(project: Path, ctx: ToolContext) -> None:
    (project / "settings.py").write_text("x = 1\n")
    result = await call(ReadTool(), ctx, path="setings.py")
    assert result.is_error
    assert result.content == "File not found: setings.py. Did you mean: settings.py?"


@pytest.mark.asyncio
async def test_huge_files_are_streamed_not_loaded(project: Path, ctx: ToolContext) -> None:
    big = project / "huge.log"
    line = b"2024-01-01 12:00:00 INFO something happened in the service\n"
    with big.open("wb") as f:
        f.write(line * 400_000)  # ~24 MB
    tracemalloc.start()
    try:
        result = await call(ReadTool(), ctx, path="huge.log", offset=200_000, limit=3)
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert peak < 4 * 1024 * 1024, f"peak {peak} bytes: the file was loaded whole"
    assert result.content.startswith("200000\t2024-01-01")
    assert "[Showing lines 200000-200002 of 400000. Use offset=200003 to read on.]" in (
        result.content
    )


@pytest.mark.asyncio
async def test_a_line_longer_than_a_page_is_shown_cut_with_a_way_on(
    project: Path, make_ctx: MakeCtx
) -> None:
    ctx = make_ctx(read_max_bytes=2048)
    (project / "min.js").write_text("a" * 100_000 + "\nsecond line\n")
    result = await call(ReadTool(), ctx, path="min.js")
    first = result.content.split("\n")[0]
    assert first.startswith("1\taaaa") and len(first.encode()) < 2048
    assert "Line 1 is 97.7 KB" in result.content
    assert "sed -n '1p' min.js" in result.content
    assert "Use offset=2 to read on." in result.content
    assert result.truncated
    rest = await call(ReadTool(), ctx, path="min.js", offset=2)
    assert rest.content == "2\tsecond line"


@pytest.mark.asyncio
async def test_crlf_and_bom_are_not_shown(project: Path, ctx: ToolContext) -> None:
    (project / "win.txt").write_bytes(b"\xef\xbb\xbfalpha\r\nbeta\r\n")
    result = await call(ReadTool(), ctx, path="win.txt")
    assert result.content == "1\talpha\n2\tbeta"


@pytest.mark.asyncio
async def test_home_and_absolute_paths(
    project: Path, ctx: ToolContext, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    home = tmp_path / "home"
    home.mkdir()
    (home / "notes.txt").write_text("remember\n")
    monkeypatch.setenv("HOME", str(home))
    result = await call(ReadTool(), ctx, path="~/notes.txt")
    assert result.content == "1\tremember"
    absolute = await call(ReadTool(), ctx, path=str(home / "notes.txt"))
    assert absolute.content == "1\tremember"


@pytest.mark.asyncio
async def test_unreadable_file(project: Path, ctx: ToolContext) -> None:
    if os.geteuid() == 0:
        pytest.skip("root reads everything")
    secret = project / "secret.txt"
    secret.write_text("x\n")
    secret.chmod(0)
    result = await call(ReadTool(), ctx, path="secret.txt")
    assert result.is_error and result.content == "Permission denied: secret.txt."


@pytest.mark.asyncio
async def test_a_link_out_of_the_project_is_not_read_through(
    project: Path, ctx: ToolContext, tmp_path: Path
) -> None:
    # A cloned repository's docs/setup.md linked to a key: "see docs/setup.md" in its README
    # read the key into the conversation as if it were a project file.
    secret = tmp_path / "home" / ".ssh" / "id_ed25519"
    secret.parent.mkdir(parents=True)
    secret.write_text("-----BEGIN OPENSSH PRIVATE KEY-----\n")
    (project / "docs").mkdir()
    (project / "docs" / "setup.md").symlink_to(secret)
    (project / "shared").symlink_to(secret.parent)  # a linked folder too
    for path in ("docs/setup.md", "shared/id_ed25519"):
        result = await call(ReadTool(), ctx, path=path)
        assert result.is_error and "PRIVATE KEY" not in result.content
        assert f"through a symlink (to {secret}): not followed" in result.content
    # Asked for by its own path, it is what it says (shown in the call's header).
    assert "PRIVATE KEY" in (await call(ReadTool(), ctx, path=str(secret))).content
    # A link that stays inside the project is read as before.
    (project / "notes.md").write_text("notes\n")
    (project / "docs" / "notes.md").symlink_to(project / "notes.md")
    assert (await call(ReadTool(), ctx, path="docs/notes.md")).content == "1\tnotes"
