"""grep (ripgrep and the Python fallback give the same answers), find, ls, and .gitignore."""

from __future__ import annotations

import os
import shutil
import time
from pathlib import Path

import pytest

from agentsh.tools.base import ToolContext
from agentsh.tools.search import FindTool, GrepTool, LsTool
from agentsh.tools.walk import IgnoreFile, Walker, glob_regex
from tests.tools.conftest import MakeCtx, call

HAS_RG = shutil.which("rg") is not None


@pytest.fixture(
    params=["python", pytest.param("rg", marks=pytest.mark.skipif(not HAS_RG, reason="no rg"))]
)
def grep(request: pytest.FixtureRequest) -> GrepTool:
    return GrepTool(use_ripgrep=request.param == "rg")


def tree(root: Path, files: dict[str, str | bytes]) -> None:
    for name, content in files.items():
        path = root / name
        path.parent.mkdir(parents=True, exist_ok=True)
        if isinstance(content, bytes):
            path.write_bytes(content)
        else:
            path.write_text(content)


# -- globs and ignore rules -----------------------------------------------------------------


@pytest.mark.parametrize(
    ("pattern", "path", "matches"),
    [
        ("*.py", "a.py", True),
        ("*.py", "src/deep/a.py", True),
        ("*.py", "a.pyc", False),
        ("src/*.py", "src/a.py", True),
        ("src/*.py", "src/x/a.py", False),
        ("src/*.py", "lib/src/a.py", False),
        ("src/**/*.py", "src/a.py", True),
        ("src/**/*.py", "src/x/y/a.py", True),
        ("**/test_*.py", "tests/unit/test_a.py", True),
        ("*.{ts,tsx}", "ui/app.tsx", True),
        ("*.{ts,tsx}", "ui/app.js", False),
        ("file?.txt", "file1.txt", True),
        ("file[0-9].txt", "file7.txt", True),
        ("file[!0-9].txt", "file7.txt", False),
        ("docs", "docs", True),
        ("./docs/*.md", "docs/a.md", True),
        ("a[!b]c", "a/c", False),  # a negated class never matches '/' either
        ("**/**/x", "a/b/x", True),
        ("a/**/**", "a/b/c", True),
        ("*a*b", "xaxb", True),
        ("*a*b", "xaxb/b", False),
    ],
)
def test_glob_semantics(pattern: str, path: str, matches: bool) -> None:
    assert bool(glob_regex(pattern).match(path)) is matches


@pytest.mark.usefixtures("collector_off")
def test_no_glob_or_ignore_line_makes_a_match_slow() -> None:
    # A cloned repository's .gitignore is read by find, ls and grep's own walk: lines like
    # these backtracked for seconds per path (minutes with a few more stars), per file.
    cases = [
        ("**/" * 9 + "a", "x/" * 25 + "y"),
        ("*a" * 7 + "b", "a" * 40),
        ("x/" + "*a" * 7 + "b", "x/" + "a" * 40),
        ("a/**/" * 8 + "b", "a/" * 30 + "c"),
        ("{a,b}" * 20, "ab" * 10),
    ]
    for pattern, path in cases:
        started = time.thread_time()
        rules = IgnoreFile.parse("", pattern)
        assert rules.verdict(path, is_dir=False) is None
        assert glob_regex(pattern).match(path) is None
        assert time.thread_time() - started < 0.5, pattern


def test_gitignore_rules() -> None:
    rules = IgnoreFile.parse(
        "",
        "# comment\n*.log\n!keep.log\nbuild/\n/root-only.txt\ndocs/**/*.tmp\n\\#literal\n",
    )
    assert rules.verdict("a/b/x.log", is_dir=False) is True
    assert rules.verdict("a/keep.log", is_dir=False) is False
    assert rules.verdict("build", is_dir=True) is True
    assert rules.verdict("build", is_dir=False) is None  # dir-only pattern
    assert rules.verdict("root-only.txt", is_dir=False) is True
    assert rules.verdict("sub/root-only.txt", is_dir=False) is None
    assert rules.verdict("docs/a/b/c.tmp", is_dir=False) is True
    assert rules.verdict("#literal", is_dir=False) is True
    nested = IgnoreFile.parse("pkg", "/dist\n")
    assert nested.verdict("pkg/dist", is_dir=True) is True
    assert nested.verdict("dist", is_dir=True) is None


def test_walker_honours_nested_gitignores_and_skips_git(project: Path) -> None:
    tree(
        project,
        {
            ".gitignore": "node_modules/\n*.log\n",
            ".env": "SECRET=1\n",
            "app.log": "x",
            "src/main.py": "",
            "src/.gitignore": "generated.py\n!important.log\n",
            "src/generated.py": "",
            "src/important.log": "",
            "node_modules/pkg/index.js": "",
        },
    )
    (project / ".git" / "info").mkdir(exist_ok=True)
    (project / ".git" / "info" / "exclude").write_text("local-only.txt\n")
    (project / "local-only.txt").write_text("")
    walked = [e.rel for e in Walker(project)]
    assert walked == [
        ".env",
        ".gitignore",
        "src",
        "src/.gitignore",
        "src/important.log",
        "src/main.py",
    ]
    # Starting below the repository root still applies the root's rules.
    assert [e.rel for e in Walker(project / "src")] == [".gitignore", "important.log", "main.py"]


def test_the_walk_reads_no_fifo_or_device_as_an_ignore_file(project: Path) -> None:
    """A repository's ``.gitignore`` that is a FIFO (an archive can carry one) blocked the walk
    forever in open(), and agentsh with it (a listing git gave up on falls back to the walk);
    one linked to /dev/zero would never end. Each is skipped like a missing file."""
    import threading

    tree(project, {"main.py": "", "sub/keep.py": "", "deep/x.log": ""})
    os.mkfifo(project / ".gitignore")
    os.mkfifo(project.parent / "elsewhere")
    (project / "sub" / ".gitignore").symlink_to(project.parent / "elsewhere")
    (project / "deep" / ".gitignore").write_text("*.log\n")
    (project / ".git" / "info" / "exclude").unlink(missing_ok=True)
    os.mkfifo(project / ".git" / "info" / "exclude")
    walked: list[str] = []
    worker = threading.Thread(target=lambda: walked.extend(e.rel for e in Walker(project)))
    worker.daemon = True
    worker.start()
    worker.join(20)
    if worker.is_alive():  # a daemon thread: it does not keep the test process alive
        pytest.fail("the walk blocked on a FIFO .gitignore")
    assert walked == [
        ".gitignore",
        "deep",
        "deep/.gitignore",
        "main.py",
        "sub",
        "sub/.gitignore",
        "sub/keep.py",
    ]


# -- grep -----------------------------------------------------------------------------------


@pytest.mark.asyncio
async def test_grep_prints_path_line_text(project: Path, ctx: ToolContext, grep: GrepTool) -> None:
    tree(project, {"a.py": "x = 1\n# TODO: fix\n", "sub/b.py": "ok\nTODO later\n"})
    result = await call(grep, ctx, pattern="TODO")
    assert not result.is_error
    assert result.content == "a.py:2: # TODO: fix\nsub/b.py:2: TODO later"
    assert result.details["matches"] == 2


@pytest.mark.asyncio
async def test_grep_never_runs_an_rg_from_the_project(
    project: Path, ctx: ToolContext, monkeypatch: pytest.MonkeyPatch
) -> None:
    # A user with "." (or an empty entry) in PATH: the repository's own "rg" must not run
    # on the model's first grep (reads never ask).
    marker = project.parent / "ran"
    fake = project / "rg"
    fake.write_text(f"#!/bin/sh\ntouch {marker}\n")
    fake.chmod(0o755)
    tree(project, {"a.txt": "needle\n"})
    monkeypatch.chdir(project)
    monkeypatch.setenv("PATH", os.pathsep.join([".", "", os.environ.get("PATH", "")]))
    result = await call(GrepTool(), ctx, pattern="needle")
    assert not marker.exists()
    assert result.content == "a.txt:1: needle"


@pytest.mark.asyncio
async def test_grep_case_literal_and_glob(project: Path, ctx: ToolContext, grep: GrepTool) -> None:
    tree(project, {"a.py": "Value(x)\nvalue(y)\n", "b.txt": "value(z)\n"})
    insensitive = await call(grep, ctx, pattern="value", ignore_case=True, glob="*.py")
    assert insensitive.content == "a.py:1: Value(x)\na.py:2: value(y)"
    literal = await call(grep, ctx, pattern="value(z)", literal=True)
    assert literal.content == "b.txt:1: value(z)"


@pytest.mark.asyncio
async def test_grep_context_lines(project: Path, ctx: ToolContext, grep: GrepTool) -> None:
    tree(project, {"f.txt": "".join(f"l{i}\n" for i in range(1, 11))})
    result = await call(grep, ctx, pattern="^l(2|9)$", context=1)
    assert (
        result.content
        == "f.txt-1- l1\nf.txt:2: l2\nf.txt-3- l3\n--\nf.txt-8- l8\nf.txt:9: l9\nf.txt-10- l10"
    )


@pytest.mark.asyncio
async def test_grep_honours_gitignore_and_skips_binary_and_git(
    project: Path, ctx: ToolContext, grep: GrepTool
) -> None:
    tree(
        project,
        {
            ".gitignore": "dist/\n",
            "dist/bundle.js": "needle\n",
            "src/app.js": "needle\n",
            ".hidden.cfg": "needle\n",
            "image.bin": b"needle\x00\x01\x02",
        },
    )
    (project / ".git" / "needle-file").write_text("needle\n")
    result = await call(grep, ctx, pattern="needle")
    assert result.content == ".hidden.cfg:1: needle\nsrc/app.js:1: needle"


@pytest.mark.asyncio
async def test_grep_match_limit_says_how_to_narrow(
    project: Path, make_ctx: MakeCtx, grep: GrepTool
) -> None:
    ctx = make_ctx(grep_max_matches=5)
    tree(project, {"many.txt": "hit\n" * 50})
    result = await call(grep, ctx, pattern="hit")
    lines = result.content.split("\n\n")[0].split("\n")
    assert lines == [f"many.txt:{i}: hit" for i in range(1, 6)]
    assert result.content.endswith(
        "[Showing the first 5 matches; there are more. Narrow the pattern, path or glob to see "
        "the rest.]"
    )
    assert result.truncated


@pytest.mark.asyncio
async def test_grep_cuts_long_lines(project: Path, make_ctx: MakeCtx, grep: GrepTool) -> None:
    ctx = make_ctx(grep_max_line_chars=40)
    tree(project, {"min.js": "needle" + "x" * 1000 + "\n"})
    result = await call(grep, ctx, pattern="needle")
    assert result.content == "min.js:1: needle" + "x" * 34 + "… [line cut at 40 chars]"


@pytest.mark.asyncio
async def test_grep_errors_and_empty_results(
    project: Path, ctx: ToolContext, grep: GrepTool
) -> None:
    tree(project, {"a.txt": "text\n"})
    bad = await call(grep, ctx, pattern="(unclosed")
    assert bad.is_error and "literal=true" in bad.content
    none = await call(grep, ctx, pattern="absent")
    assert not none.is_error and none.content == "No matches for 'absent' in .."
    missing = await call(grep, ctx, pattern="x", path="nowhere")
    assert missing.is_error and missing.content.startswith("Path not found: nowhere.")


@pytest.mark.asyncio
async def test_grep_takes_python_regex_features_with_either_engine(
    project: Path, ctx: ToolContext, grep: GrepTool
) -> None:
    tree(project, {"a.py": "foo_bar\nfoo_baz\n"})
    result = await call(grep, ctx, pattern="foo_(?!bar)")  # look-ahead: not in rg's engine
    assert result.content == "a.py:2: foo_baz"


@pytest.mark.asyncio
async def test_grep_a_single_file(project: Path, ctx: ToolContext, grep: GrepTool) -> None:
    tree(project, {"src/one.py": "alpha\nbeta\n", "src/two.py": "alpha\n"})
    result = await call(grep, ctx, pattern="alpha", path="src/one.py")
    assert result.content == "src/one.py:1: alpha"


@pytest.mark.asyncio
async def test_grep_from_a_subfolder_shows_paths_relative_to_cwd(
    project: Path, make_ctx: MakeCtx, grep: GrepTool
) -> None:
    tree(project, {"pkg/mod/x.py": "needle\n"})
    ctx = make_ctx(cwd=project / "pkg")
    result = await call(grep, ctx, pattern="needle", path="mod")
    assert result.content == "mod/x.py:1: needle"


# -- find -----------------------------------------------------------------------------------


@pytest.mark.asyncio
async def test_find_by_name_and_by_path(project: Path, ctx: ToolContext) -> None:
    tree(
        project,
        {
            ".gitignore": "*.pyc\n",
            "setup.py": "",
            "src/app/main.py": "",
            "src/app/main.pyc": "",
            "tests/test_main.py": "",
        },
    )
    names = await call(FindTool(), ctx, pattern="*.py")
    assert names.content == "setup.py\nsrc/app/main.py\ntests/test_main.py"
    paths = await call(FindTool(), ctx, pattern="src/**/*.py")
    assert paths.content == "src/app/main.py"
    folders = await call(FindTool(), ctx, pattern="app")
    assert folders.content == "src/app/"
    inside = await call(FindTool(), ctx, pattern="*", path="src")
    assert inside.content == "src/app/\nsrc/app/main.py"


@pytest.mark.asyncio
async def test_find_limit_reports_the_total(project: Path, make_ctx: MakeCtx) -> None:
    ctx = make_ctx(find_max_results=3)
    tree(project, {f"f{i:02d}.txt": "" for i in range(10)})
    result = await call(FindTool(), ctx, pattern="*.txt")
    assert result.content == (
        "f00.txt\nf01.txt\nf02.txt\n\n[Showing the first 3 of 10 results. Use a more specific "
        "pattern or path to see the rest.]"
    )
    assert result.truncated and result.details["results"] == 10


@pytest.mark.asyncio
async def test_find_nothing_and_bad_paths(project: Path, ctx: ToolContext) -> None:
    (project / "f.txt").write_text("")
    none = await call(FindTool(), ctx, pattern="*.rs")
    assert not none.is_error and none.content == "Nothing matches '*.rs' in .."
    file_root = await call(FindTool(), ctx, pattern="*", path="f.txt")
    assert file_root.is_error and "is a file" in file_root.content


# -- ls -------------------------------------------------------------------------------------


@pytest.mark.asyncio
async def test_ls_sorts_marks_folders_and_shows_dotfiles(project: Path, ctx: ToolContext) -> None:
    tree(project, {"b.py": "", "A.md": "", ".env": "", "src/x": "", "ignored.log": ""})
    (project / ".gitignore").write_text("*.log\n")
    result = await call(LsTool(), ctx)
    assert result.content == ".env\n.git/\n.gitignore\nA.md\nb.py\nignored.log\nsrc/"
    sub = await call(LsTool(), ctx, path="src")
    assert sub.content == "x"


@pytest.mark.asyncio
async def test_ls_limit_says_how_to_narrow(project: Path, make_ctx: MakeCtx) -> None:
    ctx = make_ctx(ls_max_entries=2)
    tree(project, {"d/a": "", "d/b": "", "d/c": ""})
    result = await call(LsTool(), ctx, path="d")
    assert result.content.startswith("a\nb\n\n[Showing 2 of 3 entries. Use find with a pattern")
    assert result.truncated


@pytest.mark.asyncio
async def test_ls_empty_file_and_missing(project: Path, ctx: ToolContext) -> None:
    (project / "empty").mkdir()
    (project / "f.txt").write_text("")
    assert (await call(LsTool(), ctx, path="empty")).content == "empty is empty."
    file_result = await call(LsTool(), ctx, path="f.txt")
    assert file_result.is_error and "Use read" in file_result.content
    missing = await call(LsTool(), ctx, path="emty")
    assert missing.is_error and "Did you mean: empty?" in missing.content


@pytest.mark.asyncio
async def test_search_tools_do_not_ask_for_approval(ctx: ToolContext) -> None:
    from agentsh.tools.base import Effect

    for tool in (GrepTool(), FindTool(), LsTool()):
        params = tool.parse({"pattern": "x"} if tool.name != "ls" else {})
        assert tool.effect(params, ctx) is Effect.READ


@pytest.mark.asyncio
async def test_grep_and_ls_do_not_follow_a_link_out_of_the_project(
    project: Path, ctx: ToolContext, tmp_path: Path
) -> None:
    outside = tmp_path / "home" / ".aws"
    outside.mkdir(parents=True)
    (outside / "credentials").write_text("aws_secret_access_key = SECRET-0123\n")
    (project / "config").symlink_to(outside)
    grepped = await call(GrepTool(use_ripgrep=False), ctx, pattern="secret", path="config")
    assert grepped.is_error and "SECRET-0123" not in grepped.content
    assert f"(to {outside}): not followed" in grepped.content
    listed = await call(LsTool(), ctx, path="config")
    assert listed.is_error and "credentials" not in listed.content
