"""Tool names, result conversion and schema checks: the pure parts of the MCP client."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st
from mcp.types import (
    AudioContent,
    BlobResourceContents,
    EmbeddedResource,
    ImageContent,
    ResourceLink,
    TextContent,
)

from agentsh.mcp.names import MAX_LENGTH, assign_names
from agentsh.mcp.results import Caps, result_text, to_tool_result
from agentsh.mcp.schema import SchemaProblem, argument_problem, checked_input_schema
from agentsh.tools.rules import parse_rule

SAFE = re.compile(r"^[A-Za-z0-9_-]{1,64}$")


def test_names_are_prefixed_and_cleaned() -> None:
    names = assign_names([("git", "git_log"), ("my.server", "read/file v2")])
    assert names[("git", "git_log")] == "mcp__git__git_log"
    assert names[("my.server", "read/file v2")] == "mcp__my_server__read_file_v2"


def test_collisions_and_long_names_are_resolved_the_same_way_in_any_order() -> None:
    pairs = [("s", "a.b"), ("s", "a_b"), ("s", "x" * 100), ("s", "x" * 101)]
    first = assign_names(pairs)
    assert assign_names(list(reversed(pairs))) == first
    assert first[("s", "a_b")] == "mcp__s__a_b"  # needed no cleaning: keeps the plain name
    assert first[("s", "a.b")].startswith("mcp__s__a_b_") and len(set(first.values())) == 4
    assert all(SAFE.match(name) for name in first.values())


def _server_of(name: str) -> str:
    """What a rule reads as the server: the text between ``mcp__`` and the next ``__``."""
    return name.removeprefix("mcp__").split("__", 1)[0]


def test_no_server_takes_the_names_or_the_rules_of_another() -> None:
    """``git__x`` and ``git_`` had tool names starting ``mcp__git__``: ``--allowedTools
    mcp__git`` allowed them, and ``git``'s tool ``x__echo`` shared a name with ``git__x``'s
    ``echo``. Servers whose cleaned names collide are told apart by a hash, except the one
    that needed no cleaning."""
    servers = ["git", "git__x", "git_", "my.server", "my_server", "_lead", "a" * 64]
    pairs = [(server, tool) for server in servers for tool in ("echo", "x__echo")]
    names = assign_names(pairs, servers)
    assert len(set(names.values())) == len(pairs)
    assert names[("git", "echo")] == "mcp__git__echo"
    assert names[("git", "x__echo")] == "mcp__git__x__echo"
    assert names[("my_server", "echo")] == "mcp__my_server__echo"
    rule, glob = parse_rule("mcp__git"), parse_rule("mcp__git__*")
    for (server, _tool), name in names.items():
        assert SAFE.match(name) and rule.covers(name) == glob.covers(name) == (server == "git")
    parts = {
        server: {_server_of(names[(server, t)]) for t in ("echo", "x__echo")} for server in servers
    }
    assert all(len(found) == 1 for found in parts.values())
    assert len({next(iter(found)) for found in parts.values()}) == len(servers)
    # A cleaned name that collides with nothing is kept (as Claude Code names it).
    assert assign_names([("my.server", "read")]) == {("my.server", "read"): "mcp__my_server__read"}
    # A server that is down keeps its part: the others' names do not move.
    alone = assign_names([("my.server", "echo")], ["my.server", "my_server"])
    assert alone[("my.server", "echo")] == names[("my.server", "echo")]


@given(
    st.lists(st.tuples(st.text(min_size=1, max_size=80), st.text(min_size=1, max_size=150))),
    st.lists(st.from_regex(r"[A-Za-z0-9_.-]{1,64}", fullmatch=True), max_size=6),
)
def test_any_names_become_unique_provider_safe_names(
    pairs: list[tuple[str, str]], servers: list[str]
) -> None:
    pairs += [(server, tool) for server in servers for tool in ("t", "x__t")]
    names = assign_names(pairs)
    assert len(set(names.values())) == len(names) == len(set(pairs))
    assert all(SAFE.match(name) and len(name) <= MAX_LENGTH for name in names.values())
    # every name's server part is its server's, and no two servers share one
    parts: dict[str, set[str]] = {}
    for (server, _tool), name in names.items():
        parts.setdefault(server, set()).add(_server_of(name))
    assert all(len(found) == 1 for found in parts.values())
    assert len({next(iter(found)) for found in parts.values()}) == len(parts)


def test_every_kind_of_content_becomes_text() -> None:
    content = [
        TextContent(type="text", text="\x1b[31mred\x1b[0m and \x07bell"),
        ImageContent(type="image", data="A" * 4000, mime_type="image/jpeg"),
        AudioContent(type="audio", data="AAAA", mime_type="audio/wav"),
        ResourceLink(type="resource_link", name="doc", uri="https://x.test/d", description="d"),
        EmbeddedResource(
            type="resource",
            resource=BlobResourceContents(uri="file:///b.bin", blob="AAAA", mime_type="x/y"),
        ),
    ]
    assert result_text(content).splitlines() == [
        "red and bell",
        "[image: image/jpeg, 2.9 KB; not shown: agentsh passes MCP image as this note]",
        "[audio: audio/wav, 3 B; not shown: agentsh passes MCP audio as this note]",
        "[resource link] doc: https://x.test/d - d",
        "[resource file:///b.bin: x/y, 3 B; binary, not shown]",
    ]


_WHERE = {"label": "s-t", "tool": "mcp__s__t", "server": "s"}


def test_structured_content_is_used_when_there_is_no_text(tmp_path: Path) -> None:
    caps = Caps(1024, 100, tmp_path)
    result = to_tool_result([], is_error=False, structured={"n": 1}, caps=caps, **_WHERE)
    assert result.content == '{\n  "n": 1\n}'
    empty_error = to_tool_result([], is_error=True, structured=None, caps=caps, **_WHERE)
    assert empty_error.is_error and "without a message" in empty_error.content


def test_a_good_schema_passes_and_a_bad_one_says_why() -> None:
    good = {"$schema": "https://json-schema.org/draft/2020-12/schema", "type": "object"}
    assert checked_input_schema(good) == {"type": "object", "properties": {}}
    with pytest.raises(SchemaProblem, match="must have type 'object'"):
        checked_input_schema({"type": "array"})
    with pytest.raises(SchemaProblem, match=r"not valid JSON Schema \(properties/a/minimum"):
        checked_input_schema({"type": "object", "properties": {"a": {"minimum": "x"}}})
    with pytest.raises(SchemaProblem, match="at most 64 KiB"):
        checked_input_schema({"type": "object", "description": "x" * 70_000})


def test_arguments_are_checked_against_the_schema() -> None:
    schema = {
        "type": "object",
        "properties": {"path": {"type": "string"}, "n": {"type": "integer"}},
        "required": ["path"],
    }
    assert argument_problem(schema, {"path": "a", "n": 2}) is None
    assert argument_problem(schema, {"n": 2}) == "'path' is a required property"
    assert argument_problem(schema, {"path": "a", "n": "x"}) == "n: 'x' is not of type 'integer'"


def test_the_quick_check_of_a_plain_schema_finds_what_the_full_one_does() -> None:
    """A schema using nothing of the later drafts is checked against draft 7's metaschema
    (7x faster); one that does, or declares its draft, gets the full check."""
    with pytest.raises(SchemaProblem, match=r"properties/a/type: 'text' is not valid"):
        checked_input_schema({"type": "object", "properties": {"a": {"type": "text"}}})
    with pytest.raises(SchemaProblem, match=r"properties/a/required: 'a' is not of type"):
        checked_input_schema({"type": "object", "properties": {"a": {"required": "a"}}})
    # 2020-12 only: a list of schemas as items, a prefixItems that is no list
    listed = {"type": "array", "items": [{"type": "string"}]}
    with pytest.raises(SchemaProblem, match=r"properties/a/items"):
        checked_input_schema({"type": "object", "properties": {"a": listed}})
    with pytest.raises(SchemaProblem, match=r"properties/a/prefixItems"):
        checked_input_schema({"type": "object", "properties": {"a": {"prefixItems": 5}}})
    fine = {"type": "object", "properties": {"a": {"type": "array", "prefixItems": [{}]}}}
    assert checked_input_schema(fine)["properties"] == fine["properties"]
