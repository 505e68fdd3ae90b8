"""Key table and remapping, slash-command parsing and completion, @-file listing and ranking."""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest
from textual.binding import Binding

from agentsh.tui.file_list import fuzzy_match, list_project_files, rank
from agentsh.tui.keys import KEYS, KeyScope, bindings_for, display_key, keymap_from_settings
from agentsh.tui.slash import registry as slash
from tests.tui.conftest import MakeApp, ready, screen_text, submit, wait_for


def test_binding_ids_are_unique() -> None:
    ids = [k.id for k in KEYS]
    assert len(ids) == len(set(ids))


def test_remapping_accepts_known_ids_and_reports_the_rest() -> None:
    result = keymap_from_settings({"help": "F2", "nonsense": "x", "cancel": "ctrl+ c!"})
    assert result.keymap == {"help": "f2"}
    assert any("nonsense" in p and "unknown binding" in p for p in result.problems)
    assert any("cancel" in p for p in result.problems)


def test_fixed_keys_cannot_be_remapped() -> None:
    result = keymap_from_settings({"command_palette": "ctrl+k"})
    assert result.keymap == {}
    assert "fixed" in result.problems[0]


def test_scoped_bindings_carry_their_ids_for_the_keymap() -> None:
    bindings = bindings_for(KeyScope.APPROVAL)
    ids = {b.id for b in bindings if isinstance(b, Binding)}
    assert len(ids) == len(bindings) and ids == {
        "approve_once",
        "approve_session",
        "approve_group",
        "deny",
        "approval_scroll_up",
        "approval_scroll_down",
    }


def test_editor_keys_are_read_by_the_widget_not_bound() -> None:
    # A priority binding would run ahead of characters still queued for the editor.
    assert bindings_for(KeyScope.INPUT) == []


def test_keys_are_displayed_for_people() -> None:
    assert display_key("shift+enter,ctrl+j") == "Shift+Enter / Ctrl+J"
    assert display_key("escape") == "Esc"


@pytest.mark.parametrize(
    ("text", "expected"),
    [("/help", True), ("  /compact summarize", True), ("/usr/bin/env is odd", False),
     ("//not", False), ("hello /help", False), ("/", False)],
)  # fmt: skip
def test_only_a_leading_slash_word_is_a_command(text: str, expected: bool) -> None:
    assert slash.is_command(text) is expected


def test_commands_parse_with_their_argument_and_aliases() -> None:
    command, arg = slash.parse("/compact  summarize ")
    assert command.name == "compact" and arg == "summarize"
    assert slash.parse("/exit")[0].name == "quit"
    with pytest.raises(slash.UnknownCommand, match="Unknown command /frobnicate"):
        slash.parse("/frobnicate")


def test_every_spec_command_exists() -> None:
    names = {c.name for c in slash.COMMANDS}
    assert names >= {"help", "model", "compact", "tree", "fork", "label", "resume", "new",
                     "memory", "theme", "export", "cost", "quit"}  # fmt: skip


def test_completion_matches_names_and_aliases_by_prefix() -> None:
    assert [c.name for c in slash.complete("co")] == ["compact", "cost"]
    assert [c.name for c in slash.complete("ex")] == ["export", "quit"]


def test_an_argument_completes_from_the_words_its_command_takes() -> None:
    assert slash.complete_argument("compact", "s") == ["summarize"]
    assert slash.complete_argument("compact", "") == [
        "move_to_workspace", "summarize", "truncate", "undo"
    ]  # fmt: skip
    assert slash.complete_argument("export", "h") == ["html"]
    assert slash.complete_argument("label", "x") == []
    assert slash.complete_argument("nonsense", "x") == []
    # A later word is offered only by a command whose words depend on the earlier ones.
    assert slash.complete_argument("compact", "summarize s") == []
    assert slash.complete_argument("mcp", "re") == ["restart"]  # no session: its static words


def _git(root: Path, *args: str) -> None:
    subprocess.run(["git", *args], cwd=root, check=True, capture_output=True)


def test_project_files_respect_gitignore_in_a_repo(project: Path) -> None:
    (project / ".gitignore").write_text("build/\n*.log\n")
    (project / "src").mkdir()
    (project / "src" / "main.py").write_text("x")
    (project / "build").mkdir()
    (project / "build" / "out.py").write_text("x")
    (project / "debug.log").write_text("x")
    (project / "notes.md").write_text("x")  # untracked but not ignored: offered
    _git(project, "add", "src/main.py", ".gitignore")
    files = list_project_files(project)
    assert "src/main.py" in files and "notes.md" in files
    assert "build/out.py" not in files and "debug.log" not in files


def test_project_files_outside_a_repo_come_from_a_walk(tmp_path: Path) -> None:
    (tmp_path / "a").mkdir()
    (tmp_path / "a" / "x.py").write_text("")
    (tmp_path / ".hidden").mkdir()
    (tmp_path / ".hidden" / "y.py").write_text("")
    (tmp_path / "node_modules").mkdir()
    (tmp_path / "node_modules" / "z.js").write_text("")
    assert list_project_files(tmp_path) == ["a/x.py"]


def test_fuzzy_ranking_prefers_file_names_and_word_starts() -> None:
    paths = ["agentsh/tui/app.py", "agentsh/tui/widgets/composer.py", "docs/approval.md",
             "tests/tui/test_app.py"]  # fmt: skip
    assert rank("app", paths)[0].path == "agentsh/tui/app.py"
    assert rank("comp", paths)[0].path == "agentsh/tui/widgets/composer.py"
    assert fuzzy_match("zzz", "agentsh/tui/app.py") is None


@pytest.mark.asyncio
async def test_the_help_window_and_the_pickers_say_how_to_close_them(make_app: MakeApp) -> None:
    """F1 filled the screen with tables and said nowhere how to get back to the chat."""
    from agentsh.tui.screens.help import HelpScreen
    from agentsh.tui.screens.picker import PickerScreen

    app = make_app()
    async with app.run_test(size=(80, 24)) as pilot:
        await ready(pilot, app)
        await pilot.press("f1")
        await wait_for(pilot, lambda: isinstance(app.screen, HelpScreen))
        await wait_for(pilot, lambda: "Esc or F1 closes this window" in screen_text(app))
        await pilot.press("pagedown", "pagedown")  # on the frame: still shown far down
        await pilot.pause()
        assert "Esc or F1 closes this window" in screen_text(app)
        await pilot.press("escape")
        await wait_for(pilot, lambda: not isinstance(app.screen, HelpScreen))
        await submit(pilot, app, "/theme")
        await wait_for(pilot, lambda: isinstance(app.screen, PickerScreen))
        await wait_for(pilot, lambda: "Esc close" in screen_text(app))
        await pilot.press("escape")
        await wait_for(pilot, lambda: not isinstance(app.screen, PickerScreen))
