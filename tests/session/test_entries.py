"""Entry types: JSON round trips, tolerance of the unknown, and the fast constructors."""

from __future__ import annotations

import dataclasses
import json
from typing import TYPE_CHECKING, Any

import pytest

from agentsh.session import entries as E
from agentsh.session import entry_parse
from agentsh.session.entries import (
    BranchSummaryEntry,
    CompactionEntry,
    EntryError,
    Header,
    LabelEntry,
    LeafEntry,
    MessageEntry,
    ModelCallEntry,
    ModelChangeEntry,
    Role,
    StopReason,
    ToolCall,
    ToolResultEntry,
    UnknownEntry,
    Usage,
    encode_line,
)
from agentsh.session.entry_parse import entry_from_json

if TYPE_CHECKING:
    from _typeshed import DataclassInstance

SAMPLES: list[E.AnyEntry] = [
    MessageEntry(id="a1", parent_id=None, timestamp="t1", role=Role.USER, content="héllo 漢字"),
    MessageEntry(
        id="a2",
        parent_id="a1",
        timestamp="t2",
        role=Role.ASSISTANT,
        content="calling",
        tool_calls=(ToolCall(id="c1", name="read", arguments='{"path":"x"}'),),
        model="openai/gpt-4o",
        usage=Usage(input_tokens=10, output_tokens=2, cache_read_tokens=3, cost=0.5),
        stop_reason=StopReason.TOOL_CALLS,
        error="rate limited",
    ),
    ToolResultEntry(
        id="a3",
        parent_id="a2",
        timestamp="t3",
        tool_call_id="c1",
        tool_name="read",
        content="line\nline",
        is_error=True,
        truncated=True,
        details={"exitCode": 1},
    ),
    CompactionEntry(
        id="a4",
        parent_id="a3",
        timestamp="t4",
        tier="summarize",
        summary="s",
        first_kept_id="a3",
        tokens_before=100,
        tokens_after=10,
        workspace_file="w.md",
        files_read=("a",),
        files_modified=("b",),
        replacements={"a3": "short"},
        argument_replacements={"c1": "{}"},
        manual=True,
        paused="2 compactions in a row freed under 10% of the context",
    ),
    BranchSummaryEntry(id="a5", parent_id="a4", timestamp="t5", from_id="a2", summary="left"),
    ModelChangeEntry(id="a6", parent_id="a5", timestamp="t6", model="x/y"),
    LabelEntry(id="a7", parent_id=None, timestamp="t7", target_id="a1", label="start"),
    LeafEntry(id="a8", parent_id=None, timestamp="t8", target_id="a2"),
    LeafEntry(id="a9", parent_id=None, timestamp="t9", target_id=None),
    ModelCallEntry(
        id="a11",
        parent_id=None,
        timestamp="t11",
        purpose="compaction summary",
        usage=Usage(1_234, 321, 5, 6, 0.25),
        note="not applied: it would leave the context no smaller",
    ),
    UnknownEntry(
        id="a10",
        parent_id="a6",
        timestamp="t10",
        raw={"type": "future", "id": "a10", "parentId": "a6", "timestamp": "t10", "x": [1]},
    ),
]


@pytest.mark.parametrize("entry", SAMPLES, ids=lambda e: type(e).__name__)
def test_every_entry_type_round_trips_through_its_json_line(entry: E.AnyEntry) -> None:
    line = encode_line(entry)
    assert line.endswith(b"\n") and line.count(b"\n") == 1
    assert entry_from_json(json.loads(line)) == entry


def test_header_round_trips_with_and_without_parent() -> None:
    for header in (
        Header(id="s", timestamp="t", cwd="/p"),
        Header(id="s", timestamp="t", cwd="/p", parent_session="other"),
    ):
        assert Header.from_json(json.loads(encode_line(header))) == header
    data = json.loads(encode_line(Header(id="s", timestamp="t", cwd="/p")))
    assert data["type"] == "session" and data["version"] == E.FORMAT_VERSION
    assert "parentSession" not in data


def test_a_line_starts_with_type_id_parent_in_that_order() -> None:
    # The catalog's fast scanner and the damaged-line repair both rely on this order.
    assert encode_line(SAMPLES[0]).startswith(b'{"type":"message","id":"a1","parentId":null,')


def test_unknown_types_keep_every_field_verbatim() -> None:
    raw = {"type": "thinking", "id": "z", "parentId": None, "timestamp": "t", "deep": {"k": [1]}}
    entry = entry_from_json(raw)
    assert isinstance(entry, UnknownEntry) and entry.type_name == "thinking"
    assert entry.to_json() == raw and entry.is_node


def test_an_unknown_annotation_is_not_a_tree_node() -> None:
    raw = {"type": "bookmark", "id": "z", "parentId": None, "timestamp": "t", "targetId": "a"}
    assert not entry_from_json(raw).is_node


def test_an_unknown_stop_reason_does_not_cost_the_message() -> None:
    raw = json.loads(encode_line(SAMPLES[1]))
    raw["stopReason"] = "content_filter"
    entry = entry_from_json(raw)
    assert isinstance(entry, MessageEntry) and entry.stop_reason is None


def test_content_as_text_blocks_is_joined() -> None:
    raw: dict[str, object] = {"type": "message", "id": "m", "parentId": None, "role": "user"}
    raw["content"] = [{"type": "text", "text": "a"}, {"type": "text", "text": "b"}]
    entry = entry_from_json(raw)
    assert isinstance(entry, MessageEntry) and entry.content == "ab"


@pytest.mark.parametrize(
    "raw",
    [
        [],
        {"type": "message", "parentId": None},
        {"type": "message", "id": "", "parentId": None},
        {"type": "message", "id": "m", "parentId": 5, "role": "user"},
        {"type": "message", "id": "m", "parentId": None, "role": "system", "content": ""},
        {"type": "message", "id": "m", "parentId": None, "role": "user", "content": 5},
        {"type": "toolResult", "id": "m", "parentId": None},
        {"type": "label", "id": "m", "parentId": None, "targetId": ""},
        {"type": "leaf", "id": "m", "parentId": None},
        {"type": "compaction", "id": "m", "parentId": None, "tier": "x"},
    ],
)
def test_malformed_known_entries_raise_entry_error(raw: dict[str, Any]) -> None:
    with pytest.raises(EntryError):
        entry_from_json(raw)


@pytest.mark.parametrize(
    "cls", [MessageEntry, ToolResultEntry, Usage, ToolCall], ids=lambda c: c.__name__
)
def test_fast_constructors_build_the_same_object_as_the_dataclass(
    cls: type[DataclassInstance],
) -> None:
    # The loader builds entries with direct slot stores; they must equal (and hash like) what
    # the regular constructor builds, field for field.
    sample = {
        MessageEntry: SAMPLES[1],
        ToolResultEntry: SAMPLES[2],
        Usage: Usage(1, 2, 3, 4, 0.5),
        ToolCall: ToolCall(id="c", name="n", arguments="{}"),
    }[cls]
    values = {f.name: getattr(sample, f.name) for f in dataclasses.fields(sample)}
    built: object = entry_parse._fast_constructor(cls)(**values)
    assert type(built) is cls and built == sample
    first = dataclasses.fields(sample)[0].name
    with pytest.raises(dataclasses.FrozenInstanceError):
        setattr(built, first, "changed")


def test_new_ids_are_short_hex() -> None:
    ids = {E.new_id() for _ in range(200)}
    assert len(ids) == 200
    assert all(len(i) == 8 and int(i, 16) >= 0 for i in ids)


def test_a_reply_holding_lone_surrogates_is_written_not_refused() -> None:
    """A provider that escapes text as UTF-16 (``\\ud83d`` in one stream delta, ``\\ude00`` in
    the next, or half a pair cut off) hands Python lone surrogates, which UTF-8 cannot encode:
    appending the reply raised, the turn ended in "Internal error" and the reply was lost.
    A split pair is joined again; a lone half becomes U+FFFD."""
    entry = E.MessageEntry(
        id="a1", parent_id=None, role=E.Role.ASSISTANT, content="ok \ud83d\ude00 and \ud83d."
    )
    line, repaired = E.encode_checked(entry)
    back = entry_from_json(json.loads(line))
    assert repaired and isinstance(back, E.MessageEntry)
    assert back.content == "ok \U0001f600 and \ufffd."
