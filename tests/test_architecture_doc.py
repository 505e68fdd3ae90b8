"""docs/architecture.md stays true to the code: every module it names exists (issue 15).

The map is what a newcomer reads first; a module renamed or split without the map following
sends them to a file that is not there. Module file names are unique in ``agentsh/``
(tests/test_module_names.py), so a name in the map says which module it means.
"""

from __future__ import annotations

import re
from pathlib import Path

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


def test_the_check_reads_names_with_and_without_folders() -> None:
    text = "see `agent.py`, `tui/slash/registry.py` and `tools/` (`files.py` over `gone.py`)"
    assert names_in(text) == {"agent.py", "registry.py", "files.py", "gone.py"}
