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

SAFE = re.compile(r"^[A-Za-z0-9_-]{1,64}$")


def test_names_are_prefixed_and_cleaned() -> None:
    names = assign_names([("git", "git_log"), ("my.server", "read/file v2")])
    assert names[("git", "git_log")] == "mcp__git__git_log"
    assert names[("my.server", "read/file v2")] == "mcp__my_server__read_file_v2"


def test_collisions_and_long_names_are_resolved_the_same_way_in_any_order() -> None:
    pairs = [("s", "a.b"), ("s", "a_b"), ("s", "x" * 100), ("s", "x" * 101)]
    first = assign_names(pairs)
    assert assign_names(list(reversed(pairs))) == first
    assert first[("s", "a.b")] == "mcp__s__a_b"  # sorted first: keeps the plain name
    assert first[("s", "a_b")].startswith("mcp__s__a_b_") and len(set(first.values())) == 4
    assert all(SAFE.match(name) for name in first.values())


@given(st.lists(st.tuples(st.text(min_size=1, max_size=80), st.text(min_size=1, max_size=150))))
def test_any_names_become_unique_provider_safe_names(pairs: list[tuple[str, str]]) -> None:
    names = assign_names(pairs)
    assert len(set(names.values())) == len(names) == len(set(pairs))
    assert all(SAFE.match(name) and len(name) <= MAX_LENGTH for name in names.values())


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
