"""DESIGN.md's layering, enforced: imports point down, litellm and textual stay in their rooms.

Every ``import`` in the package is read from the source (including lazy imports inside
functions), so a shortcut taken in a hurry fails here instead of quietly bending the design.
"""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

PACKAGE = Path(__file__).resolve().parents[1] / "agentsh"

# Lower numbers are lower layers; a module may import its own layer and those below it.
LAYERS: dict[str, int] = {
    "events": 0,
    "paths": 0,
    "config": 0,
    "fsutil": 0,
    "session": 1,
    "llm": 1,
    "memory": 1,
    "context": 2,
    "tools": 3,
    "agent": 4,
    "prompt": 4,
    "startup": 4,
    "headless": 5,
    "tui": 5,
    "cli": 5,
    "commands": 5,
    "__main__": 5,
    "__init__": 0,
}


def _room(module: str) -> str:
    """The first component under agentsh: 'agentsh.session.log' -> 'session'."""
    parts = module.split(".")
    return parts[1] if len(parts) > 1 else "__init__"


def _imports(path: Path) -> list[tuple[int, str]]:
    tree = ast.parse(path.read_text(encoding="utf-8"), str(path))
    found: list[tuple[int, str]] = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            found += [(node.lineno, alias.name) for alias in node.names]
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            found.append((node.lineno, node.module))
    return found


def _modules() -> list[tuple[str, Path]]:
    result = []
    for path in sorted(PACKAGE.rglob("*.py")):
        relative = path.relative_to(PACKAGE.parent).with_suffix("")
        result.append((".".join(relative.parts), path))
    return result


MODULES = _modules()


def test_every_room_has_a_layer() -> None:
    rooms = {_room(name) for name, _ in MODULES}
    assert rooms <= set(LAYERS), f"add these to LAYERS and DESIGN notes: {rooms - set(LAYERS)}"


@pytest.mark.parametrize(("name", "path"), MODULES, ids=[name for name, _ in MODULES])
def test_imports_point_down_the_layers(name: str, path: Path) -> None:
    own = LAYERS[_room(name)]
    upward = [
        f"line {line}: {target}"
        for line, target in _imports(path)
        if target.startswith("agentsh.") and LAYERS.get(_room(target), 0) > own
    ]
    assert not upward, f"{name} (layer {own}) imports from above: {upward}"


@pytest.mark.parametrize(("name", "path"), MODULES, ids=[name for name, _ in MODULES])
def test_only_llm_imports_litellm_and_only_tui_imports_textual(name: str, path: Path) -> None:
    room = _room(name)
    for line, target in _imports(path):
        top = target.split(".")[0]
        if top == "litellm":
            assert room == "llm", f"{name}:{line} imports litellm"
        if top == "textual":
            assert room == "tui", f"{name}:{line} imports textual"
