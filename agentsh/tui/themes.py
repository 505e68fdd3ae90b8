"""Theme files: TOML on disk -> :class:`textual.theme.Theme`, plus persisting the user's choice.

Shipped themes live in ``themes/*.toml`` at the top of a checkout and are packaged into the wheel
as ``agentsh/_themes``; user themes live in the config dir's ``themes/`` and override a shipped
theme of the same name. A file that cannot be read, is not valid TOML, misses ``name`` or
``primary``, or holds a colour (or a ``[variables]`` value) Textual cannot parse is reported as a
:class:`ThemeProblem` and skipped; it never stops the program.

The chosen theme is persisted as ``tui.theme`` in the user's ``config.toml`` (so a user who edits
the file by hand and one who uses ``/theme`` end in the same place, and the project config can
still override it). :func:`persist_theme_choice` rewrites that one key and leaves every other
line of the file, comments included, as it was.
"""

from __future__ import annotations

import functools
import re
import tomllib
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from textual.color import Color, ColorParseError
from textual.theme import Theme

from agentsh.errors import AgentshError
from agentsh.fsutil import atomic_write

DEFAULT_THEME = "agentsh-dark"

_COLOUR_KEYS = (
    "primary",
    "secondary",
    "accent",
    "background",
    "surface",
    "panel",
    "foreground",
    "success",
    "warning",
    "error",
    "boost",
)
_OTHER_KEYS = ("name", "dark", "variables", "luminosity_spread", "text_alpha")


class ThemeError(AgentshError):
    """A theme file agentsh cannot use; the message names the file and the reason."""


@dataclass(frozen=True, slots=True)
class ThemeProblem:
    path: Path
    message: str

    def __str__(self) -> str:
        return f"theme {self.path.name}: {self.message}"


@dataclass(frozen=True, slots=True)
class LoadedThemes:
    themes: tuple[Theme, ...]
    problems: tuple[ThemeProblem, ...]


def shipped_themes_dir() -> Path:
    """``agentsh/_themes`` in an installed wheel, else ``themes/`` at the checkout's root."""
    package = Path(__file__).resolve().parents[1]
    installed = package / "_themes"
    if installed.is_dir():
        return installed
    return package.parent / "themes"


def parse_theme(data: dict[str, Any], source: Path, *, check_variables: bool = True) -> Theme:
    """Validate one parsed theme table; raises :class:`ThemeError`.

    ``check_variables=False`` skips parsing each ``[variables]`` value as CSS (about 10 ms a
    theme): for the shipped themes, which the test suite checks, so they cost nothing on the
    way to the first frame."""
    unknown = sorted(set(data) - set(_COLOUR_KEYS) - set(_OTHER_KEYS))
    if unknown:
        raise ThemeError(f"{source}: unknown key(s) {', '.join(unknown)}")
    name = data.get("name")
    if not isinstance(name, str) or not name.strip():
        raise ThemeError(f"{source}: 'name' must be a non-empty string")
    if "primary" not in data:
        raise ThemeError(f"{source}: 'primary' is required")
    colours: dict[str, str] = {}
    for key in _COLOUR_KEYS:
        if key in data:
            colours[key] = _colour(data[key], f"{source}: {key}")
    dark = data.get("dark", True)
    if not isinstance(dark, bool):
        raise ThemeError(f"{source}: 'dark' must be true or false")
    variables = data.get("variables", {})
    if not isinstance(variables, dict) or not all(
        isinstance(k, str) and isinstance(v, str) for k, v in variables.items()
    ):
        raise ThemeError(f"{source}: [variables] must be a table of strings")
    extra: dict[str, Any] = dict(colours)
    for key in ("luminosity_spread", "text_alpha"):
        if key in data:
            value = data[key]
            if isinstance(value, bool) or not isinstance(value, int | float):
                raise ThemeError(f"{source}: '{key}' must be a number")
            extra[key] = float(value)
    theme = Theme(name=name.strip(), dark=dark, variables=dict(variables), **extra)
    if check_variables:
        _check_variables(theme, source)
    return theme


def _check_variables(theme: Theme, source: Path) -> None:
    """Every variable the theme overrides must be usable where Textual's CSS puts it.

    The values go into the stylesheet as they are, so a bad one (``"notacolour"``) is only
    found when the theme is applied, and then as a stylesheet error that stops the app.
    Each known variable is parsed here in a declaration of its kind (a text style, else a
    colour), with the theme's other variables defined so ``$primary 50%`` works. Names
    Textual does not define are used by no stylesheet and are left alone."""
    from textual.css.stylesheet import Stylesheet, StylesheetParseError
    from textual.css.tokenizer import TokenError

    generated = theme.to_color_system().generate()
    for key, value in theme.variables.items():
        if key not in _known_variables():
            continue
        prop = "text-style" if key.endswith("style") or "-style-" in key else "color"
        sheet = Stylesheet(variables=generated)
        sheet.add_source(f"Widget {{ {prop}: {value}; }}", read_from=(str(source), key))
        try:
            sheet.parse()
        except (StylesheetParseError, TokenError):  # TokenError: an unknown $variable
            kind = "text style" if prop == "text-style" else "colour"
            raise ThemeError(f"{source}: variable {key}: {value!r} is not a {kind}") from None


@functools.cache
def _known_variables() -> frozenset[str]:
    """The variables Textual derives from a theme (the ones its widgets' CSS uses)."""
    return frozenset(Theme(name="probe", primary="#000000").to_color_system().generate())


def _colour(value: Any, where: str) -> str:
    if not isinstance(value, str):
        raise ThemeError(f'{where} must be a colour string such as "#7AA2F7"')
    try:
        Color.parse(value)
    except ColorParseError as exc:
        raise ThemeError(f"{where}: {value!r} is not a colour") from exc
    return value


def load_theme_file(path: Path, *, check_variables: bool = True) -> Theme:
    try:
        raw = path.read_bytes()
    except OSError as exc:
        raise ThemeError(f"{path}: cannot be read ({exc.strerror})") from exc
    try:
        data = tomllib.loads(raw.decode("utf-8"))
    except (UnicodeDecodeError, tomllib.TOMLDecodeError) as exc:
        raise ThemeError(f"{path}: not valid TOML ({exc})") from exc
    return parse_theme(data, path, check_variables=check_variables)


def load_themes(folders: Iterable[Path], *, trusted: Iterable[Path] = ()) -> LoadedThemes:
    """Every ``*.toml`` theme in ``folders``, in order; a later folder overrides by name.
    Themes in a ``trusted`` folder (the shipped ones) skip the variables check."""
    trusted_folders = set(trusted)
    by_name: dict[str, Theme] = {}
    problems: list[ThemeProblem] = []
    for folder in folders:
        try:
            files = sorted(folder.glob("*.toml"))
        except OSError:
            continue
        for path in files:
            try:
                theme = load_theme_file(path, check_variables=folder not in trusted_folders)
            except ThemeError as exc:
                message = str(exc).removeprefix(f"{path}: ").removeprefix(f"{path}")
                problems.append(ThemeProblem(path, message.lstrip(": ")))
                continue
            by_name[theme.name] = theme
    return LoadedThemes(tuple(by_name.values()), tuple(problems))


# -- persisting the choice ---------------------------------------------------------------------

_TABLE_HEADER = re.compile(r"^\s*\[\s*([A-Za-z0-9_.\"' -]+?)\s*\]\s*(#.*)?$")
_THEME_KEY = re.compile(r"^\s*theme\s*=")
_DOTTED_THEME_KEY = re.compile(r"^\s*tui\s*\.\s*theme\s*=")


def set_toml_tui_theme(text: str, theme: str) -> str:
    """``text`` (a config.toml) with ``tui.theme`` set to ``theme``; all other lines kept.

    Handles the forms a person writes: a ``[tui]`` table (the key replaced or inserted under
    the header), a top-level dotted ``tui.theme = ...`` line, or neither (a ``[tui]`` table is
    appended). The result is checked with tomllib; :class:`ThemeError` if it would not parse
    or not hold the value (then nothing should be written).
    """
    try:
        tomllib.loads(text)
    except tomllib.TOMLDecodeError as exc:
        raise ThemeError(f"config.toml is not valid TOML, so it was left alone ({exc})") from exc
    value_line = f"theme = {_toml_string(theme)}"
    lines = text.splitlines()
    section: str | None = None
    tui_header: int | None = None
    replaced = False
    for i, line in enumerate(lines):
        header = _TABLE_HEADER.match(line)
        if header and not line.lstrip().startswith("[["):
            section = header.group(1).replace(" ", "")
            if section == "tui":
                tui_header = i
            continue
        if section == "tui" and _THEME_KEY.match(line):
            lines[i] = value_line
            replaced = True
            break
        if section is None and _DOTTED_THEME_KEY.match(line):
            lines[i] = f"tui.{value_line}"
            replaced = True
            break
    if not replaced:
        if tui_header is not None:
            lines.insert(tui_header + 1, value_line)
        else:
            if lines and lines[-1].strip():
                lines.append("")
            lines.extend(["[tui]", value_line])
    result = "\n".join(lines) + "\n"
    try:
        parsed = tomllib.loads(result)
    except tomllib.TOMLDecodeError as exc:
        raise ThemeError(f"config.toml could not be updated safely ({exc})") from exc
    tui = parsed.get("tui")
    if not isinstance(tui, dict) or tui.get("theme") != theme:
        raise ThemeError("config.toml could not be updated safely (tui.theme not set)")
    return result


def persist_theme_choice(config_file: Path, theme: str) -> None:
    """Write ``tui.theme`` into the user's config file, creating it if needed."""
    try:
        text = config_file.read_text(encoding="utf-8")
    except FileNotFoundError:
        text = ""
    except (OSError, UnicodeDecodeError) as exc:
        raise ThemeError(f"{config_file}: cannot be read ({exc})") from exc
    updated = set_toml_tui_theme(text, theme)
    try:
        config_file.parent.mkdir(parents=True, exist_ok=True)
        atomic_write(config_file, updated.encode("utf-8"))
    except OSError as exc:
        raise ThemeError(f"{config_file}: cannot be written ({exc.strerror})") from exc


def _toml_string(value: str) -> str:
    escaped = value.replace("\\", "\\\\").replace('"', '\\"')
    return f'"{escaped}"'
