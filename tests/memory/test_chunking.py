from __future__ import annotations

import hashlib
import itertools

from hypothesis import given, settings
from hypothesis import strategies as st

from agentsh.memory.chunking import chunk_entries, chunk_text, text_weight


def _lines(n: int, width: int = 60) -> str:
    return "\n".join(f"line {i:04d} " + "x" * (width - 10) for i in range(1, n + 1))


def test_blank_text_gives_no_chunks() -> None:
    assert chunk_text("", "a.md") == []
    assert chunk_text("\n  \n\t\n", "a.md") == []


def test_short_text_is_one_chunk_with_its_line_range_and_hash() -> None:
    text = "# Title\n\nfirst fact\nsecond fact"
    [chunk] = chunk_text(text, "notes.md")
    assert (chunk.path, chunk.start_line, chunk.end_line) == ("notes.md", 1, 4)
    assert chunk.text == text
    assert chunk.hash == hashlib.sha256(text.encode()).hexdigest()


def test_chunks_respect_the_token_budget_and_overlap_by_whole_lines() -> None:
    # 61 chars a line with its newline = ~15 tokens; 100-token chunks hold 6 lines.
    chunks = chunk_text(_lines(40), "a.md", chunk_tokens=100, overlap_tokens=20)
    assert len(chunks) > 5
    for chunk in chunks:
        assert text_weight(chunk.text) + chunk.text.count("\n") <= 400 + 1
    for before, after in itertools.pairwise(chunks):
        assert after.start_line <= before.end_line  # overlap
        assert after.start_line > before.start_line  # progress
        overlap = before.text.splitlines()[-(before.end_line - after.start_line + 1) :]
        assert after.text.splitlines()[: len(overlap)] == overlap
    assert chunks[0].start_line == 1 and chunks[-1].end_line == 40


def test_zero_overlap_makes_chunks_meet_without_sharing_lines() -> None:
    chunks = chunk_text(_lines(30), "a.md", chunk_tokens=100, overlap_tokens=0)
    for before, after in itertools.pairwise(chunks):
        assert after.start_line == before.end_line + 1


def test_a_cjk_character_weighs_one_token_like_four_ascii_characters() -> None:
    assert text_weight("abcd") == 4
    assert text_weight("안녕") == 8
    assert text_weight("你好世") == 12
    korean = "\n".join("가나다라마바사아자차" for _ in range(40))  # 10 tokens a line
    english = "\n".join("abcdefghij" * 4 for _ in range(40))  # 10 tokens a line
    k = chunk_text(korean, "k.md", chunk_tokens=50, overlap_tokens=0)
    e = chunk_text(english, "e.md", chunk_tokens=50, overlap_tokens=0)
    assert [c.end_line for c in k] == [c.end_line for c in e]


def test_an_over_long_line_is_sliced_and_every_slice_keeps_its_line_number() -> None:
    text = "intro\n" + "y" * 5000 + "\noutro"
    chunks = chunk_text(text, "a.md", chunk_tokens=100, overlap_tokens=10)
    middle = [c for c in chunks if "y" in c.text]
    assert len(middle) >= 12
    assert all(c.start_line <= 2 <= c.end_line for c in middle)
    assert (
        "".join(c.text.replace("intro\n", "").replace("\noutro", "") for c in middle).count("y")
        >= 5000
    )
    assert all(text_weight(c.text) <= 400 for c in chunks)


def test_an_over_long_cjk_line_is_sliced_by_weight() -> None:
    text = "한" * 1000  # 1000 tokens
    chunks = chunk_text(text, "k.md", chunk_tokens=100, overlap_tokens=0)
    # 100 tokens minus the newline's share: 99 characters a slice.
    assert [len(c.text) for c in chunks] == [99] * 10 + [10]
    assert "".join(c.text for c in chunks) == text


@settings(max_examples=60, deadline=None)
@given(
    st.lists(st.text(alphabet="ab 한字\t", max_size=120), min_size=1, max_size=60),
    st.integers(min_value=8, max_value=80),
    st.integers(min_value=0, max_value=40),
)
def test_every_non_blank_line_lands_in_some_chunk(
    lines: list[str], tokens: int, overlap: int
) -> None:
    text = "\n".join(lines)
    chunks = chunk_text(text, "p.md", chunk_tokens=tokens, overlap_tokens=overlap)
    covered: set[int] = set()
    for chunk in chunks:
        assert 1 <= chunk.start_line <= chunk.end_line <= len(text.splitlines())
        covered.update(range(chunk.start_line, chunk.end_line + 1))
    for number, line in enumerate(text.splitlines(), start=1):
        if line.strip():
            assert number in covered


def test_curated_files_are_chunked_one_entry_at_a_time_with_file_line_numbers() -> None:
    text = "\nfirst entry\nstill first\n\n§\nsecond 항목\n  §  \n\n§\nthird\n"
    chunks = chunk_entries(text, "MEMORY.md")
    assert [(c.start_line, c.end_line, c.text) for c in chunks] == [
        (2, 3, "first entry\nstill first"),
        (6, 6, "second 항목"),
        (10, 10, "third"),
    ]
    assert all(c.hash == hashlib.sha256(c.text.encode()).hexdigest() for c in chunks)
    assert chunk_entries("", "MEMORY.md") == [] and chunk_entries("§\n§\n", "USER.md") == []


def test_a_long_curated_entry_is_split_like_any_text_and_keeps_its_place() -> None:
    body = _lines(40)
    chunks = chunk_entries(f"short\n§\n{body}", "MEMORY.md", chunk_tokens=100, overlap_tokens=0)
    plain = chunk_text(body, "MEMORY.md", chunk_tokens=100, overlap_tokens=0)
    assert chunks[0].text == "short" and len(chunks) == 1 + len(plain) > 2
    assert [(c.start_line - 2, c.end_line - 2, c.text) for c in chunks[1:]] == [
        (c.start_line, c.end_line, c.text) for c in plain
    ]
