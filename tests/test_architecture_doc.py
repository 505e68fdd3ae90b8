"""docs/architecture.md stays true to the code (issue 15): every module it names exists, every
module of ``agentsh/`` is on it, and its layer diagram is the one tests/test_layers.py enforces.

The map is what a newcomer reads first; a module renamed or split without the map following
sends them to a file that is not there, and a module added without it leaves them no way to find
where a concern lives. Module file names are unique in ``agentsh/``
(tests/test_module_names.py), so a name in the map says which module it means.
"""

from __future__ import annotations

import re
from pathlib import Path

from tests.test_layers import LAYERS

ROOT = Path(__file__).resolve().parents[1]
DOC = ROOT / "docs" / "architecture.md"

#: a file name in backticks, with or without its folder: `agent.py`, `tui/slash/registry.py`
_NAMED = re.compile(r"`([\w/.]*?\w+\.py)\b")


def names_in(text: str) -> set[str]:
    """The file names of the Python modules a Markdown text names in code spans."""
    return {Path(match).name for match in _NAMED.findall(text)}


def test_every_module_the_map_names_exists() -> None:
    existing = {
        path.name for folder in ("agentsh", "tests") for path in (ROOT / folder).rglob("*.py")
    }
    stale = sorted(names_in(DOC.read_text(encoding="utf-8")) - existing)
    assert not stale, f"docs/architecture.md names modules that do not exist: {stale}"


def test_every_module_is_on_the_map() -> None:
    """A package's ``__init__.py`` is covered by the package's own line."""
    named = names_in(DOC.read_text(encoding="utf-8"))
    modules = (ROOT / "agentsh").rglob("*.py")
    missing = sorted(
        str(path.relative_to(ROOT / "agentsh"))
        for path in modules
        if path.name != "__init__.py" and path.name not in named
    )
    assert not missing, f"docs/architecture.md does not say where these live: {missing}"


#: a room in the layer diagram: `cli.py` or `tui/`
_ROOM = re.compile(r"\b(\w+)(?:\.py\b|/)")


def diagram_layers(text: str) -> dict[str, int]:
    """The layer of each room in the first code block under "## The layers" (a line starting
    with its number; a line without one continues the layer above)."""
    section = text.split("## The layers", 1)[1]
    block = section.split("```", 2)[1]
    layers: dict[str, int] = {}
    layer = -1
    for line in block.splitlines():
        number = re.match(r"\s*(\d+)\s", line)
        if number:
            layer = int(number[1])
        for room in _ROOM.findall(line):
            layers[room] = layer
    return layers


def test_the_layer_diagram_is_the_one_the_layer_test_enforces() -> None:
    rooms = {room: layer for room, layer in LAYERS.items() if room != "__init__"}
    assert diagram_layers(DOC.read_text(encoding="utf-8")) == rooms


def test_the_diagram_reader_reads_numbers_rooms_and_continuation_lines() -> None:
    text = (
        "## The layers\n```\n"
        " 1  where  paths.py  llm/\n"
        "           config.py\n"
        " 0  base   errors.py\n```\n"
    )
    assert diagram_layers(text) == {"paths": 1, "llm": 1, "config": 1, "errors": 0}


def test_every_front_end_protocol_and_member_is_named() -> None:
    """The "Typed doors" rule lists what each front end may ask; a protocol or a member added
    to ``agentsh/frontend.py`` without the map following would leave a newcomer looking for a
    ``getattr``."""
    from agentsh import frontend

    protocols = [
        value
        for value in vars(frontend).values()
        if isinstance(value, type) and value.__module__ == frontend.__name__
    ]
    members = {
        name
        for protocol in protocols
        for name, member in vars(protocol).items()
        if not name.startswith("_") and (callable(member) or isinstance(member, property))
    }
    spans = set(re.findall(r"`(\w+)`", DOC.read_text(encoding="utf-8")))
    assert len(protocols) > 1 and members
    assert not sorted({p.__name__ for p in protocols} - spans)
    assert not sorted(members - spans)


def test_the_check_reads_names_with_and_without_folders() -> None:
    text = "see `agent.py`, `tui/slash/registry.py` and `tools/` (`files.py` over `gone.py`)"
    assert names_in(text) == {"agent.py", "registry.py", "files.py", "gone.py"}
