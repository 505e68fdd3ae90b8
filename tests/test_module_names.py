"""Names that do not repeat: a module's file name says which module it is (a test of issue 15).

Two ``host.py`` or ``trust.py`` in different packages make a traceback, an editor tab or a
``grep`` ambiguous, and invite importing the wrong one. Every module in ``agentsh/`` has a file
name of its own; only ``__init__.py`` (and ``__main__.py``) may repeat.
"""

from __future__ import annotations

from collections import defaultdict
from pathlib import Path

PACKAGE = Path(__file__).resolve().parents[1] / "agentsh"

#: package markers, the same in every package by Python's rules
MARKERS = frozenset({"__init__.py", "__main__.py"})


def repeated_names(root: Path) -> dict[str, list[str]]:
    """Each module file name used more than once under ``root``, with where it is used."""
    where: defaultdict[str, list[str]] = defaultdict(list)
    for path in sorted(root.rglob("*.py")):
        if path.name not in MARKERS:
            where[path.name].append(path.relative_to(root).as_posix())
    return {name: paths for name, paths in where.items() if len(paths) > 1}


def test_module_names_do_not_repeat_across_packages() -> None:
    repeats = repeated_names(PACKAGE)
    assert not repeats, f"rename so each module name says which module it is: {repeats}"


def test_the_check_sees_a_repeated_name(tmp_path: Path) -> None:
    for path in ("a/host.py", "b/host.py", "a/__init__.py", "b/__init__.py", "c/only.py"):
        (tmp_path / path).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / path).write_text("")
    assert repeated_names(tmp_path) == {"host.py": ["a/host.py", "b/host.py"]}
