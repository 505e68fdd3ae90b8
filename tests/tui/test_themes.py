"""Theme files: the shipped set, user themes, bad files, and persisting the choice."""

from __future__ import annotations

import tomllib
from pathlib import Path

import pytest

from agentsh.tui.themes import (
    DEFAULT_THEME,
    ThemeError,
    load_theme_file,
    load_themes,
    persist_theme_choice,
    set_toml_tui_theme,
    shipped_themes_dir,
)

MINIMAL = 'name = "mine"\nprimary = "#112233"\n'


def test_at_least_five_themes_ship_including_dark_light_and_high_contrast() -> None:
    loaded = load_themes([shipped_themes_dir()])
    assert loaded.problems == ()
    names = {t.name for t in loaded.themes}
    assert len(names) >= 5
    assert {DEFAULT_THEME, "agentsh-light", "agentsh-contrast"} <= names
    by_name = {t.name: t for t in loaded.themes}
    assert by_name[DEFAULT_THEME].dark and not by_name["agentsh-light"].dark


def test_every_shipped_theme_passes_the_variables_check_the_app_skips_for_them() -> None:
    # The app trusts the shipped folder (the check costs ~10 ms a theme before the first
    # frame); this is the check it skips.
    assert load_themes([shipped_themes_dir()]).problems == ()
    trusted = load_themes([shipped_themes_dir()], trusted=[shipped_themes_dir()])
    assert [t.name for t in trusted.themes] == [
        t.name for t in load_themes([shipped_themes_dir()]).themes
    ]


def test_every_shipped_theme_sets_every_documented_colour() -> None:
    for path in sorted(shipped_themes_dir().glob("*.toml")):
        data = tomllib.loads(path.read_text())
        for key in ("name", "dark", "primary", "secondary", "accent", "background", "surface",
                    "panel", "foreground", "success", "warning", "error", "variables"):  # fmt: skip
            assert key in data, f"{path.name} lacks {key}"


def test_a_user_theme_overrides_a_shipped_theme_of_the_same_name(tmp_path: Path) -> None:
    (tmp_path / "x.toml").write_text(f'name = "{DEFAULT_THEME}"\nprimary = "#FF0000"\n')
    loaded = load_themes([shipped_themes_dir(), tmp_path])
    theme = next(t for t in loaded.themes if t.name == DEFAULT_THEME)
    assert theme.primary == "#FF0000"


@pytest.mark.parametrize(
    ("content", "reason"),
    [
        ("name = ", "not valid TOML"),
        ('primary = "#112233"\n', "'name'"),
        ('name = "x"\n', "'primary' is required"),
        ('name = "x"\nprimary = "not-a-colour"\n', "is not a colour"),
        ('name = "x"\nprimary = "#112233"\nsparkle = 1\n', "unknown key"),
        ('name = "x"\nprimary = "#112233"\ndark = "yes"\n', "'dark'"),
        # Variables go into the stylesheet as written: a bad one would stop the app later.
        (
            MINIMAL.replace("mine", "x") + '[variables]\nfooter-background = "notacolour"\n',
            "variable footer-background: 'notacolour' is not a colour",
        ),
        (
            MINIMAL.replace("mine", "x") + '[variables]\nblock-cursor-text-style = "blink2"\n',
            "is not a text style",
        ),
        (MINIMAL.replace("mine", "x") + '[variables]\nborder = "$nosuch 50%"\n', "variable border"),
    ],
)
def test_a_bad_theme_file_is_reported_and_skipped(
    tmp_path: Path, content: str, reason: str
) -> None:
    (tmp_path / "bad.toml").write_text(content)
    (tmp_path / "good.toml").write_text(MINIMAL)
    loaded = load_themes([tmp_path])
    assert [t.name for t in loaded.themes] == ["mine"]
    assert len(loaded.problems) == 1
    assert loaded.problems[0].path.name == "bad.toml"
    assert reason in str(loaded.problems[0])


def test_theme_variables_are_passed_through(tmp_path: Path) -> None:
    path = tmp_path / "v.toml"
    path.write_text(MINIMAL + '[variables]\n"footer-key-foreground" = "#ABCDEF"\n')
    assert load_theme_file(path).variables == {"footer-key-foreground": "#ABCDEF"}


def test_theme_variables_may_use_auto_colours_other_variables_and_custom_names(
    tmp_path: Path,
) -> None:
    path = tmp_path / "v.toml"
    variables = {
        "text-muted": "auto 60%",
        "border": "$primary 50%",
        "link-style": "bold not underline",
        "my-own-name": "anything at all",  # used by no stylesheet
    }
    body = "".join(f'"{k}" = "{v}"\n' for k, v in variables.items())
    path.write_text(MINIMAL + "[variables]\n" + body)
    assert load_theme_file(path).variables == variables


def test_setting_the_theme_in_an_empty_config_adds_a_tui_table() -> None:
    out = set_toml_tui_theme("", "agentsh-light")
    assert tomllib.loads(out) == {"tui": {"theme": "agentsh-light"}}


def test_setting_the_theme_keeps_every_other_line_and_comment() -> None:
    text = (
        '# my settings\n[model]\nname = "openai/gpt-4.1"  # the good one\n\n'
        '[tui]\ntool_preview_lines = 8\ntheme = "agentsh-dark"\n\n[tui.keys]\nhelp = "f2"\n'
    )
    out = set_toml_tui_theme(text, "agentsh-dusk")
    assert "# my settings" in out and "# the good one" in out
    data = tomllib.loads(out)
    assert data["tui"] == {"tool_preview_lines": 8, "theme": "agentsh-dusk", "keys": {"help": "f2"}}
    assert data["model"] == {"name": "openai/gpt-4.1"}


def test_setting_the_theme_inserts_under_an_existing_tui_table() -> None:
    text = '[tui]\ntool_preview_lines = 8\n[tui.keys]\nhelp = "f2"\n'
    data = tomllib.loads(set_toml_tui_theme(text, "agentsh-forest"))
    assert data["tui"]["theme"] == "agentsh-forest"
    assert data["tui"]["keys"] == {"help": "f2"}


def test_setting_the_theme_replaces_a_dotted_key() -> None:
    text = 'tui.theme = "agentsh-dark"\n[model]\nname = "x"\n'
    data = tomllib.loads(set_toml_tui_theme(text, "agentsh-light"))
    assert data == {"tui": {"theme": "agentsh-light"}, "model": {"name": "x"}}


def test_theme_names_with_quotes_are_escaped() -> None:
    data = tomllib.loads(set_toml_tui_theme("", 'we"ird'))
    assert data["tui"]["theme"] == 'we"ird'


def test_a_config_that_cannot_be_updated_safely_is_left_alone(tmp_path: Path) -> None:
    config = tmp_path / "config.toml"
    config.write_text("[tui]\ntheme = [\n")  # broken TOML: never rewritten
    with pytest.raises(ThemeError):
        persist_theme_choice(config, "agentsh-light")
    assert config.read_text() == "[tui]\ntheme = [\n"


def test_persisting_creates_the_config_file(tmp_path: Path) -> None:
    config = tmp_path / "cfg" / "config.toml"
    persist_theme_choice(config, "agentsh-light")
    assert tomllib.loads(config.read_text())["tui"]["theme"] == "agentsh-light"
