"""The layers of docs/architecture.md, enforced: imports point down, heavy libraries stay in
their rooms, and a few "never" rules hold even between neighbours on one level.

Every ``import`` in the package is read from the source (including lazy imports inside
functions and imports under ``TYPE_CHECKING``), so a shortcut taken in a hurry fails here
instead of quietly bending the design. A new room (a top-level module or package under
``agentsh/``) needs a line in :data:`LAYERS` and in docs/architecture.md.
"""

from __future__ import annotations

import ast
import functools
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

PACKAGE = Path(__file__).resolve().parents[1] / "agentsh"

# Lower numbers are lower layers; a module may import its own layer and those below it.
LAYERS: dict[str, int] = {
    # 0 - the base: standard library only, every package may use it
    "__init__": 0,
    "errors": 0,
    "values": 0,
    "text": 0,
    "termsafe": 0,
    "events": 0,
    "process_end": 0,
    "dataclass_code": 0,
    # 1 - where things are, how they are written, what the user configured
    "paths": 1,
    "fsutil": 1,
    "gitutil": 1,
    "git_listing": 1,
    "git_stalls": 1,
    "git_pointer": 1,
    "programs": 1,
    "user_socket": 1,
    "trust": 1,
    "config": 1,
    "config_settings": 1,
    "config_values": 1,
    "config_project": 1,
    # 2 - the log and the model door, side by side and blind to each other
    "session": 2,
    "llm": 2,
    # 3 - memory (its remote embeddings go through the model door)
    "memory": 3,
    # 4 - what the model sees
    "context": 4,
    # 5 - what the model can do: the built-in tools, MCP servers' tools beside them, and the
    # file history of what they did
    "tools": 5,
    "mcp": 5,
    "checkpoints": 5,
    # 6 - the core: one turn, the system prompt, which session to open, and the protocol the
    # front ends drive it through
    "agent": 6,
    "agent_assembly": 6,
    "frontend": 6,
    "system_prompt": 6,
    "turn": 6,
    "tool_calls": 6,
    "side_calls": 6,
    "work_stream": 6,
    "instructions": 6,
    "startup": 6,
    "run_options": 6,
    # 7 - front ends and the command line
    "headless": 7,
    "tui": 7,
    "acp": 7,
    "cli": 7,
    "cli_checks": 7,
    "cli_words": 7,
    "commands": 7,
    "__main__": 7,
}

# Pairs that the layer numbers alone would allow but the design forbids: (room, room it must
# never import). Neighbours on one level are independent of each other.
NEVER: frozenset[tuple[str, str]] = frozenset(
    {
        ("llm", "session"),  # the model door knows nothing of the log
        ("session", "llm"),  # and the log nothing of the model
        ("headless", "tui"),  # the front ends share the core, not each other
        ("tui", "headless"),
        ("acp", "tui"),
        ("tui", "acp"),
        ("acp", "headless"),
        ("headless", "acp"),
        ("acp", "commands"),
        ("acp", "cli"),
        ("tui", "commands"),
        ("commands", "tui"),
        ("headless", "commands"),
        ("commands", "headless"),
        ("tui", "cli"),  # cli dispatches to the front ends, never the other way
        ("headless", "cli"),
        ("commands", "cli"),
        ("tools", "mcp"),  # the built-in tools know nothing of MCP (a ToolSource plugs it in)
        ("system_prompt", "agent"),
        ("startup", "agent"),
        ("turn", "agent"),  # the turn and a tool call reach the agent through a protocol
        ("tool_calls", "agent"),
        ("side_calls", "agent"),  # the summaries reach the agent through SideCallHost
        ("work_stream", "agent"),
        ("tool_calls", "turn"),
    }
)

# Pairs that may meet only through one door: (room, room) -> the modules it may import there.
NARROW: dict[tuple[str, str], frozenset[str]] = {
    # memory calls a remote embedding model through the model door, and nothing else of llm
    # (its CJK helpers come from agentsh.text, not from the tokenizer)
    ("memory", "llm"): frozenset({"agentsh.llm.embedding_call"}),
}

# Third-party packages that only some rooms may import (the rest of the package must not pay
# for them, or depend on them): litellm is the one model door, textual the one screen.
ONLY_IN: dict[str, frozenset[str]] = {
    "litellm": frozenset({"llm"}),
    "tiktoken": frozenset({"llm"}),
    "textual": frozenset({"tui"}),
    "rich": frozenset({"tui"}),
    "markdown_it": frozenset({"tui"}),
    "numpy": frozenset({"memory"}),
    "onnxruntime": frozenset({"memory"}),
    "tokenizers": frozenset({"memory"}),
    "mcp": frozenset({"mcp"}),  # the official MCP SDK, behind agentsh/mcp/
    "acp": frozenset({"acp"}),  # the Agent Client Protocol package: the ACP front end only
}

# The front ends drive the agent through their protocols of agentsh.frontend (built by
# agentsh.agent_assembly.build_agent); from agentsh.agent they take only the busy error.
FRONT_ENDS = frozenset({"tui", "headless", "acp"})
FROM_AGENT = frozenset({"AgentBusy"})

BASE = frozenset(room for room, layer in LAYERS.items() if layer == 0)


def _room(module: str) -> str:
    """The first component under agentsh: 'agentsh.session.log' -> 'session'."""
    parts = module.split(".")
    return parts[1] if len(parts) > 1 else "__init__"


@functools.cache
def _tree(path: Path) -> ast.Module:
    """The module's syntax tree, parsed once per test process (read-only: every test here
    parsed each of the ~240 modules several times, most of this file's CPU)."""
    return ast.parse(path.read_text(encoding="utf-8"), str(path))


@functools.cache
def _imports(path: Path, *, module_level_only: bool = False) -> tuple[tuple[int, str], ...]:
    """(line, imported module) for every absolute import; with ``module_level_only``, those
    that run when the module is imported or type-checked (not the ones inside functions)."""
    tree = _tree(path)

    def walk(node: ast.AST) -> Iterator[tuple[int, str]]:
        for child in ast.iter_child_nodes(node):
            if module_level_only and isinstance(child, ast.FunctionDef | ast.AsyncFunctionDef):
                continue
            if isinstance(child, ast.Import):
                yield from ((child.lineno, alias.name) for alias in child.names)
            elif isinstance(child, ast.ImportFrom) and child.module and child.level == 0:
                yield child.lineno, child.module
                # ``from agentsh.tui import controller`` imports a module, not a name
                yield from ((child.lineno, f"{child.module}.{a.name}") for a in child.names)
            else:
                yield from walk(child)

    return tuple(walk(tree))


def _modules() -> list[tuple[str, Path]]:
    result = []
    for path in sorted(PACKAGE.rglob("*.py")):
        relative = path.relative_to(PACKAGE.parent).with_suffix("")
        parts = relative.parts[:-1] if relative.parts[-1] == "__init__" else relative.parts
        result.append((".".join(parts) if len(parts) > 1 else "agentsh.__init__", path))
    return result


MODULES = _modules()
NAMES = {name for name, _ in MODULES}


def _agentsh_targets(path: Path, *, module_level_only: bool = False) -> Iterator[tuple[int, str]]:
    """Imported agentsh modules (a ``from m import name`` counts as importing ``m``, or the
    submodule ``m.name`` when that is a module)."""
    for line, target in _imports(path, module_level_only=module_level_only):
        if target == "agentsh" or not target.startswith("agentsh."):
            continue
        if target in NAMES:
            yield line, target


def test_every_room_has_a_layer() -> None:
    rooms = {_room(name) for name, _ in MODULES}
    missing = rooms - set(LAYERS)
    assert not missing, f"add these to LAYERS and docs/architecture.md: {missing}"


@pytest.mark.parametrize(("name", "path"), MODULES, ids=[name for name, _ in MODULES])
def test_imports_point_down_the_layers(name: str, path: Path) -> None:
    room = _room(name)
    own = LAYERS[room]
    upward = [
        f"line {line}: {target}"
        for line, target in _agentsh_targets(path)
        if LAYERS.get(_room(target), 0) > own
    ]
    assert not upward, f"{name} (layer {own}) imports from above: {upward}"
    forbidden = [
        f"line {line}: {target}"
        for line, target in _agentsh_targets(path)
        if (room, _room(target)) in NEVER
    ]
    assert not forbidden, f"{name} must never import these: {forbidden}"
    narrow = [
        f"line {line}: {target}"
        for line, target in _agentsh_targets(path)
        if (doors := NARROW.get((room, _room(target)))) is not None and target not in doors
    ]
    assert not narrow, f"{name} goes round the one door it may use: {narrow}"


@pytest.mark.parametrize(("name", "path"), MODULES, ids=[name for name, _ in MODULES])
def test_heavy_and_screen_libraries_stay_in_their_rooms(name: str, path: Path) -> None:
    room = _room(name)
    for line, target in _imports(path):
        top = target.split(".")[0]
        allowed = ONLY_IN.get(top)
        assert allowed is None or room in allowed, f"{name}:{line} imports {top}"


@pytest.mark.parametrize(
    ("name", "path"),
    [(n, p) for n, p in MODULES if _room(n) in BASE],
    ids=[n for n, _ in MODULES if _room(n) in BASE],
)
def test_the_base_uses_the_standard_library_only(name: str, path: Path) -> None:
    """errors, values, text and events sit under everything: importing one of them must
    never pull in a third-party package or a higher room."""
    for line, target in _imports(path):
        top = target.split(".")[0]
        if top == "agentsh":
            assert _room(target) in BASE, f"{name}:{line} imports {target}"
        else:
            assert top in sys.stdlib_module_names or top == "__future__", (
                f"{name}:{line} imports {target}"
            )


# Known circles, to be taken apart (the test fails when one goes, so the entry goes too).
KNOWN_CIRCLES: list[frozenset[str]] = []


def _circles() -> list[frozenset[str]]:
    """Strongly connected groups of modules in the graph of imports that run at import or
    type-check time (lazy imports inside functions are a deliberate start-up choice and are
    not counted)."""
    edges = {
        name: {t for _, t in _agentsh_targets(path, module_level_only=True) if t != name}
        for name, path in MODULES
    }
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: list[frozenset[str]] = []

    def strong(v: str) -> None:
        index[v] = low[v] = len(index)
        stack.append(v)
        on_stack.add(v)
        for w in edges.get(v, ()):
            if w not in index:
                strong(w)
                low[v] = min(low[v], low[w])
            elif w in on_stack:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            group = set()
            while True:
                w = stack.pop()
                on_stack.discard(w)
                group.add(w)
                if w == v:
                    break
            if len(group) > 1:
                found.append(frozenset(group))

    for name in edges:
        if name not in index:
            strong(name)
    return found


def test_no_import_circles() -> None:
    circles = _circles()
    new = [sorted(c) for c in circles if c not in KNOWN_CIRCLES]
    assert not new, f"import circles: {new}"
    gone = [sorted(c) for c in KNOWN_CIRCLES if c not in circles]
    assert not gone, f"these circles are gone; remove them from KNOWN_CIRCLES: {gone}"


@pytest.mark.parametrize(
    ("name", "path"),
    [(n, p) for n, p in MODULES if _room(n) in FRONT_ENDS],
    ids=[n for n, _ in MODULES if _room(n) in FRONT_ENDS],
)
def test_front_ends_drive_the_agent_through_the_protocol(name: str, path: Path) -> None:
    tree = _tree(path)
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            assert all(a.name != "agentsh.agent" for a in node.names), f"{name}:{node.lineno}"
        elif isinstance(node, ast.ImportFrom) and node.module == "agentsh.agent":
            names = {a.name for a in node.names}
            assert names <= FROM_AGENT, (
                f"{name}:{node.lineno} takes {sorted(names - FROM_AGENT)} from agentsh.agent; "
                "use its protocol in agentsh.frontend"
            )


def _reflective_reaches(tree: ast.AST) -> Iterator[tuple[int, str]]:
    """``getattr``/``hasattr``/``setattr`` calls whose object names the agent: a reach mypy
    cannot see, which a rename blanks silently."""
    for node in ast.walk(tree):
        if (
            isinstance(node, ast.Call)
            and isinstance(node.func, ast.Name)
            and node.func.id in {"getattr", "hasattr", "setattr"}
            and node.args
            and "agent" in ast.unparse(node.args[0]).lower()
        ):
            yield node.lineno, ast.unparse(node)


@pytest.mark.parametrize(
    ("name", "path"),
    [(n, p) for n, p in MODULES if _room(n) in FRONT_ENDS],
    ids=[n for n, _ in MODULES if _room(n) in FRONT_ENDS],
)
def test_front_ends_name_what_they_use_of_the_agent(name: str, path: Path) -> None:
    """What a front end uses of the agent is a typed member of its protocol, never a getattr."""
    tree = _tree(path)
    reaches = [f"{name}:{line} {call}" for line, call in _reflective_reaches(tree)]
    assert not reaches, f"add it to the front end's protocol in agentsh.frontend instead: {reaches}"


def test_the_reflective_reach_check_sees_a_getattr_into_the_agent() -> None:
    sample = "s = getattr(self.c.agent, 'summarize_branch', None)\nt = getattr(x, 'y')\n"
    assert [line for line, _ in _reflective_reaches(ast.parse(sample))] == [1]


# Each front end names the agent by its own protocol of agentsh.frontend (or a role of it), so
# mypy checks it against what it calls; typing a TUI module with HeadlessAPI to reach a rule
# would put the TUI's stand-in for the agent on the hook for what only -p asks.
PROTOCOL_OF = {"tui": "InteractiveAPI", "headless": "HeadlessAPI", "acp": "EditorAPI"}


def _protocols_of(room: str) -> frozenset[str]:
    """The front end's protocol and the protocols of agentsh.frontend it is made of."""
    from agentsh import frontend

    own = getattr(frontend, PROTOCOL_OF[room])
    return frozenset(c.__name__ for c in own.__mro__ if c.__module__ == frontend.__name__)


def _frontend_names(tree: ast.AST) -> Iterator[tuple[int, str]]:
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom) and node.module == "agentsh.frontend":
            yield from ((node.lineno, alias.name) for alias in node.names)
        elif isinstance(node, ast.Import) and any(a.name == "agentsh.frontend" for a in node.names):
            yield node.lineno, "*"  # the whole module: any protocol


@pytest.mark.parametrize(
    ("name", "path"),
    [(n, p) for n, p in MODULES if _room(n) in FRONT_ENDS],
    ids=[n for n, _ in MODULES if _room(n) in FRONT_ENDS],
)
def test_front_ends_type_the_agent_with_their_own_protocol(name: str, path: Path) -> None:
    allowed = _protocols_of(_room(name))
    other = [f"line {line}: {p}" for line, p in _frontend_names(_tree(path)) if p not in allowed]
    assert not other, f"{name} takes another front end's protocol: {other}"
