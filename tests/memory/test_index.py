from __future__ import annotations

import os
import sqlite3
import threading
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from agentsh.config import SearchSettings
from agentsh.memory import index as index_module
from agentsh.memory.embeddings import LocalMiniLM, NoEmbedder
from agentsh.memory.index import MemoryIndex, index_db_path
from agentsh.memory.index_registry import close_shared, shared_index
from agentsh.memory.query import parse_query
from agentsh.memory.ranking import MatchKind, SearchMode
from agentsh.memory.sources import MemorySources, SourceKind
from agentsh.paths import ProjectPaths, UserPaths
from tests.memory.conftest import HashEmbedder, IndexFactory, add_session, write

Paths = tuple[UserPaths, ProjectPaths]


def _chunk_count(index: MemoryIndex, path: Path) -> int:
    with sqlite3.connect(index.db_path) as conn:
        row = conn.execute("SELECT count(*) FROM chunks WHERE path=?", (str(path),)).fetchone()
    return int(row[0])


def _paths_of(response: Any) -> list[str]:
    return [Path(r.abs_path).name for r in response.results]


# -- what is indexed --------------------------------------------------------------------------


def test_sync_indexes_memory_user_files_and_this_projects_summaries_only(
    paths: Paths, memory_dir: Path, make_index: IndexFactory
) -> None:
    user, project = paths
    write(memory_dir / "MEMORY.md", "The API listens on port 8000.")
    write(memory_dir / "docs" / "build.md", "---\ntype: skill\n---\nRun make dev.")
    write(memory_dir / "notes.txt", "not markdown")
    write(memory_dir / ".trash" / "old.md", "hidden folder")
    write(user.user_memory_file, "Sam prefers short answers.")
    mine = add_session(user, project, "aaaa-1111")
    write(mine / "001-summary.md", "Summary: fixed the CSV export.")
    write(mine / "002-archive.md", "archived turns are not summaries")
    foreign = user.session_workspace("bbbb-2222")
    write(foreign / "001-summary.md", "another project's summary")
    outside = write(project.root / "elsewhere.md", "secret plans")
    (memory_dir / "link.md").symlink_to(outside)

    report = make_index().sync()

    assert sorted(Path(p).name for p in report.indexed) == [
        "001-summary.md",
        "MEMORY.md",
        "USER.md",
        "build.md",
    ]
    assert report.removed == () and report.skipped == ()


def test_unchanged_files_are_skipped_and_never_embedded_twice(
    memory_dir: Path, make_index: IndexFactory
) -> None:
    embedder = HashEmbedder()
    note = write(memory_dir / "MEMORY.md", "Deploys go through helm.\n" * 3)
    index = make_index(embedder)
    assert len(index.sync().indexed) == 1
    calls = embedder.calls
    second = index.sync()
    assert second.indexed == () and second.unchanged == 1
    # A new mtime with the same bytes: hashed, found equal, not re-chunked or re-embedded.
    os.utime(note, (time.time() + 5, time.time() + 5))
    third = index.sync()
    assert third.indexed == () and embedder.calls == calls


def test_an_edit_embeds_only_the_chunks_that_changed(
    memory_dir: Path, make_index: IndexFactory
) -> None:
    embedder = HashEmbedder()
    body = "\n".join(f"fact number {i} about the deployment pipeline" for i in range(60))
    note = write(memory_dir / "long.md", body)
    index = make_index(embedder, chunk_tokens=60, chunk_overlap_tokens=0)
    index.sync()
    first = list(embedder.embedded)
    assert len(first) > 5
    write(note, body.replace("fact number 59", "fact number fifty-nine"))
    embedder.embedded.clear()
    index.sync()
    assert len(embedder.embedded) == 1
    assert "fifty-nine" in embedder.embedded[0]


def test_a_deleted_file_loses_its_chunks(memory_dir: Path, make_index: IndexFactory) -> None:
    note = write(memory_dir / "gone.md", "The staging database is called ledgerly_stage.")
    index = make_index()
    index.sync()
    assert _chunk_count(index, note.resolve()) == 1
    assert index.search("ledgerly_stage").results
    note.unlink()
    report = index.sync()
    assert report.removed == (str(note.resolve()),)
    assert _chunk_count(index, note.resolve()) == 0
    assert not index.search("ledgerly_stage").results
    assert index.status().files == 0


def test_index_file_takes_in_a_summary_at_once_and_ignores_other_files(
    paths: Paths, make_index: IndexFactory
) -> None:
    user, project = paths
    index = make_index()
    index.sync()
    workspace = add_session(user, project, "cccc-3333")
    summary = write(workspace / "003-summary.md", "Decided to keep UTF-8 with a BOM for Excel.")
    assert index.index_file(summary) is True
    [hit] = index.search("Excel BOM").results
    assert hit.path == "workspace:cccc-3333/003-summary.md"
    assert index.index_file(project.root / "README.md") is False
    summary.unlink()
    assert index.index_file(summary) is True
    assert not index.search("Excel BOM").results


# -- rebuilds ---------------------------------------------------------------------------------


def test_a_changed_embedding_model_rebuilds_and_the_cache_survives(
    memory_dir: Path, make_index: IndexFactory
) -> None:
    write(memory_dir / "MEMORY.md", "Redis holds the rate limit buckets.")
    first = make_index(HashEmbedder("test/a"))
    first.sync()
    first.close()
    other = HashEmbedder("test/b")
    second = make_index(other)
    report = second.sync()
    assert "embedding_model changed from test/a to test/b" in report.rebuilt
    assert second.status().vectors == 1 and other.calls == 1
    second.close()
    back = HashEmbedder("test/a")
    third = make_index(back)
    assert "rebuilt" in third.sync().rebuilt
    # The vectors of test/a were kept in the cache: switching back embeds nothing.
    assert back.calls == 0 and third.status().vectors == 1


def test_an_index_made_before_entry_chunking_is_rebuilt(
    memory_dir: Path, make_index: IndexFactory
) -> None:
    write(memory_dir / "MEMORY.md", "Redis holds the rate limit buckets.\n§\nUse pnpm.")
    first = make_index()
    first.sync()
    first.close()
    # An index written by the line chunker has no "chunking" key in its meta table.
    with sqlite3.connect(first.db_path) as conn:
        conn.execute("DELETE FROM meta WHERE key='chunking'")
    conn.close()
    second = make_index()
    assert "chunking changed from ? to entries" in second.sync().rebuilt
    assert second.status().chunks == 2


def test_a_changed_chunk_setting_rebuilds(memory_dir: Path, make_index: IndexFactory) -> None:
    write(memory_dir / "MEMORY.md", "\n".join(f"line {i} " + "z" * 40 for i in range(80)))
    first = make_index(chunk_tokens=400)
    first.sync()
    before = first.status().chunks
    first.close()
    second = make_index(chunk_tokens=100)
    report = second.sync()
    assert "chunk_tokens changed from 400 to 100" in report.rebuilt
    assert second.status().chunks > before


def test_a_damaged_database_is_set_aside_and_rebuilt(
    paths: Paths, memory_dir: Path, make_index: IndexFactory
) -> None:
    write(memory_dir / "MEMORY.md", "The invoices table is partitioned by month.")
    db = index_db_path(*paths)
    db.parent.mkdir(parents=True, exist_ok=True)
    db.write_bytes(b"this is not a database" * 100)
    index = make_index()
    assert "rebuilt" in index.sync().rebuilt
    assert index.search("partitioned").results
    assert list(db.parent.glob(f"{db.name}.broken-*"))


# -- ranking ----------------------------------------------------------------------------------


def _korean_corpus(memory_dir: Path) -> None:
    write(
        memory_dir / "hooks.md",
        "# 깃 훅 설정\n커밋 훅이 동작하려면 pre-commit install 을 실행한다. 훅 목록은 ruff.",
    )
    write(
        memory_dir / "build.md",
        "# 빌드 방법\n빌드는 uv sync 로 시작한다. 프론트엔드 빌드는 pnpm build.",
    )
    write(memory_dir / "db.md", "# 데이터베이스\n데이터베이스 백업은 매일 밤 S3 로 보낸다.")
    write(memory_dir / "english.md", "# Deploys\nWe deploy with helm on Fridays never.")


@pytest.mark.parametrize(("query", "expected"), [("훅", "hooks.md"), ("빌드", "build.md")])
def test_one_and_two_character_korean_queries_find_their_notes(
    memory_dir: Path, make_index: IndexFactory, query: str, expected: str
) -> None:
    _korean_corpus(memory_dir)
    index = make_index()
    index.sync()
    response = index.search(query)
    assert _paths_of(response)[0] == expected
    assert response.results[0].match is MatchKind.SUBSTRING
    assert response.results[0].score >= 0.35


def test_a_korean_word_with_a_particle_attached_still_finds_its_stem(
    memory_dir: Path, make_index: IndexFactory
) -> None:
    _korean_corpus(memory_dir)
    index = make_index()
    index.sync()
    assert _paths_of(index.search("데이터베이스를 백업"))[0] == "db.md"
    assert _paths_of(index.search("빌드를"))[0] == "build.md"


def test_weights_follow_the_share_of_non_cjk_letters_for_an_english_only_model(
    make_index: IndexFactory,
) -> None:
    index = make_index(HashEmbedder(multilingual=False))
    assert index.weights(parse_query("deploy with helm")) == pytest.approx((0.7, 0.3))
    assert index.weights(parse_query("빌드 방법")) == (0.0, 1.0)
    vector, keyword = index.weights(parse_query("helm 롤백"))  # 4 Latin letters, 2 Hangul
    assert vector == pytest.approx(0.7 * 4 / 6 / (0.7 * 4 / 6 + 0.3))
    assert vector + keyword == pytest.approx(1.0)


def test_a_multilingual_model_keeps_the_plain_weights(make_index: IndexFactory) -> None:
    index = make_index(HashEmbedder(multilingual=True), vector_weight=1.4, keyword_weight=0.6)
    assert index.weights(parse_query("빌드 방법")) == pytest.approx((0.7, 0.3))


class _BlindEmbedder(HashEmbedder):
    """Every query points one way and every chunk another: the vector side sees nothing."""

    def embed(self, texts: Sequence[str]) -> Any:
        self.calls += 1
        out = np.zeros((len(texts), self.dims), dtype=np.float32)
        for row, text in enumerate(texts):
            out[row, 0 if len(text) < 40 else 1] = 1.0
        return out


def test_a_strong_keyword_hit_survives_the_minimum_score_without_vector_support(
    memory_dir: Path, make_index: IndexFactory
) -> None:
    write(
        memory_dir / "ports.md", "The Grafana dashboard runs on port 3000 behind the VPN gateway."
    )
    write(memory_dir / "other.md", "Lunch is at noon on Thursdays in the big meeting room.")
    index = make_index(_BlindEmbedder())
    index.sync()
    [hit] = index.search("grafana dashboard").results
    assert Path(hit.abs_path).name == "ports.md"
    assert hit.vector_score == 0.0
    assert hit.score < 0.35 <= hit.keyword_score  # passed by the keyword score alone
    assert hit.match is MatchKind.KEYWORD


def test_substring_only_matches_rank_below_every_real_match(
    memory_dir: Path, make_index: IndexFactory
) -> None:
    # "배포" (2 characters) is only reachable by LIKE; "롤백하기" goes through the trigram index.
    write(memory_dir / "many.md", "배포 배포 배포 배포 배포 배포. 배포 일정은 매주 화요일.")
    write(memory_dir / "real.md", "문제가 생기면 롤백하기 전에 로그를 본다.")
    index = make_index()
    index.sync()
    response = index.search("배포 롤백하기", min_score=0.0)
    assert _paths_of(response) == ["real.md", "many.md"]
    real, like = response.results
    assert like.match is MatchKind.SUBSTRING and real.match is MatchKind.KEYWORD
    assert like.keyword_score < real.keyword_score


def test_a_substring_inside_another_word_does_not_count_as_a_keyword_hit(
    memory_dir: Path, make_index: IndexFactory
) -> None:
    write(memory_dir / "perm.md", "Permission checks use a decorator on every endpoint.")
    index = make_index(NoEmbedder())
    index.sync()
    # The trigram index finds "miss" inside "Permission"; it is not the word "missing".
    assert not index.search("missing").results


@pytest.mark.parametrize(
    "query",
    [
        '"',
        '""',
        "NEAR(deploy helm, 2)",
        "deploy*",
        "text: helm",
        "helm AND OR NOT",
        "-helm",
        "^helm",
        "{text}: helm",
        "'); DROP TABLE chunks; --",
        "helm\x00deploy",
        "%_\\",
        "*",
        "(",
    ],
)
def test_fts_query_syntax_in_user_text_is_harmless(
    memory_dir: Path, make_index: IndexFactory, query: str
) -> None:
    write(memory_dir / "deploy.md", "We deploy with helm; the chart lives in deploy/helm.")
    index = make_index()
    index.sync()
    response = index.search(query, min_score=0.0)
    assert isinstance(response.results, tuple)
    assert index.search("helm").results  # the table is intact
    assert index.status().chunks == 1


def test_any_text_is_a_valid_query(memory_dir: Path, make_index: IndexFactory) -> None:
    write(memory_dir / "a.md", "Alembic migrations run with uv run alembic upgrade head. 배포 훅")
    index = make_index()
    index.sync()

    @settings(max_examples=80, deadline=None)
    @given(st.text(max_size=40))
    def search_anything(query: str) -> None:
        response = index.search(query, min_score=0.0)
        assert all(0.0 <= r.score <= 1.0 for r in response.results)

    search_anything()


def test_the_top_result_does_not_change_with_k(memory_dir: Path, make_index: IndexFactory) -> None:
    topics = ["redis", "celery", "helm", "alembic", "stripe", "sentry", "grafana", "pnpm"]
    for i in range(40):
        a, b = topics[i % 8], topics[(i * 3 + 1) % 8]
        write(memory_dir / f"n{i:02d}.md", f"Note {i}: {a} and {b} notes, {a} {a} details {i}.")
    index = make_index()
    index.sync()
    full = [(r.path, r.start_line) for r in index.search("redis helm", max_results=20).results]
    for k in range(1, 12):
        got = [(r.path, r.start_line) for r in index.search("redis helm", max_results=k).results]
        assert got == full[:k]


def test_nonsense_finds_nothing(memory_dir: Path, make_index: IndexFactory) -> None:
    write(memory_dir / "a.md", "Alembic migrations run with uv run alembic upgrade head.")
    index = make_index()
    index.sync()
    assert not index.search("xyzzy plugh frobnicate").results
    assert not index.search("").results


def test_temporal_decay_prefers_recent_notes_but_never_ages_memory_md(
    memory_dir: Path, make_index: IndexFactory
) -> None:
    text = "The billing cron runs at 02:00 UTC and sends reminders."
    write(memory_dir / "2019-01-01-billing.md", text)
    today = time.strftime("%Y-%m-%d", time.gmtime())
    write(memory_dir / f"{today}-billing.md", text)
    write(memory_dir / "MEMORY.md", text)
    plain = make_index()
    plain.sync()
    scores = {Path(r.abs_path).name: r.score for r in plain.search("billing cron").results}
    plain.close()
    decayed = make_index(temporal_decay=True, half_life_days=30.0)
    response = decayed.search("billing cron", min_score=0.0)
    got = {Path(r.abs_path).name: r.score for r in response.results}
    assert got["MEMORY.md"] == scores["MEMORY.md"]
    assert got[f"{today}-billing.md"] == pytest.approx(scores[f"{today}-billing.md"], rel=0.05)
    assert got["2019-01-01-billing.md"] < 0.001
    assert _paths_of(response)[-1] == "2019-01-01-billing.md"


def test_mmr_puts_a_different_chunk_ahead_of_near_duplicates(
    memory_dir: Path, make_index: IndexFactory
) -> None:
    dup = "Postgres backups: WAL-G ships WAL to S3 nightly; restore drill monthly with wal-g."
    for i in range(3):
        write(memory_dir / f"dup{i}.md", dup + f" copy {i}")
    write(
        memory_dir / "other.md", "Postgres connection pooling uses PgBouncer in transaction mode."
    )
    plain = make_index()
    plain.sync()
    ranked = _paths_of(plain.search("postgres backups wal", max_results=4, min_score=0.0))
    assert ranked[-1] == "other.md"
    plain.close()
    diverse = make_index(mmr=True, mmr_lambda=0.3)
    picked = _paths_of(diverse.search("postgres backups wal", max_results=2, min_score=0.0))
    assert picked[1] == "other.md"


# -- vectors and modes ------------------------------------------------------------------------


def test_keyword_only_mode_says_so_on_every_result(
    memory_dir: Path, make_index: IndexFactory
) -> None:
    write(memory_dir / "MEMORY.md", "Use pnpm, not npm, for the frontend.")
    index = make_index(NoEmbedder())
    index.sync()
    response = index.search("pnpm frontend")
    assert response.mode is SearchMode.KEYWORD_ONLY and "keyword-only" in response.note
    assert response.results and all(r.keyword_only for r in response.results)
    assert all(r.vector_score is None for r in response.results)


def test_a_model_failing_its_checksum_is_refused_and_search_is_keyword_only(
    memory_dir: Path, make_index: IndexFactory
) -> None:
    write(memory_dir / "MEMORY.md", "Use pnpm, not npm, for the frontend.")
    index = make_index(LocalMiniLM(model_sha256="0" * 64))
    index.sync()
    response = index.search("pnpm")
    assert response.keyword_only
    assert "checksum" in response.note and "keyword-only" in response.note
    assert [r.match for r in response.results] == [MatchKind.KEYWORD]
    assert index.status().mode is SearchMode.KEYWORD_ONLY


def test_a_failing_provider_falls_back_to_keywords_for_that_query(
    memory_dir: Path, make_index: IndexFactory
) -> None:
    write(memory_dir / "MEMORY.md", "Use pnpm, not npm, for the frontend.")
    index = make_index(HashEmbedder(fail="error"))
    index.sync()
    response = index.search("pnpm")
    assert response.keyword_only and "test provider is down" in response.note
    assert response.results
    assert "test provider is down" in index.status().last_error


def test_vectors_fill_in_the_background_while_keywords_work_at_once(
    memory_dir: Path, make_index: IndexFactory
) -> None:
    write(memory_dir / "MEMORY.md", "Sentry receives frontend errors with source maps.")
    embedder = HashEmbedder()
    embedder.gate = threading.Event()
    index = make_index(embedder, background=True)
    index.sync()
    assert not index.wait_for_vectors(0.05)
    embedder.gate.set()  # let the query itself be embedded
    early = index.search("sentry errors")
    assert early.results
    assert index.wait_for_vectors(10)
    late = index.search("sentry errors")
    assert late.mode is SearchMode.HYBRID and late.pending_vectors == 0
    assert late.results[0].vector_score is not None and late.results[0].vector_score > 0.3
    assert index.status().vectors == 1


def test_another_process_writing_the_index_is_noticed(
    paths: Paths, memory_dir: Path, make_index: IndexFactory
) -> None:
    reader_embedder = HashEmbedder()
    reader = make_index(reader_embedder)
    reader.sync()
    write(memory_dir / "new.md", "Feature flags live in Unleash and expire after 30 days.")
    writer = make_index()
    writer.sync()  # as another agentsh would
    [hit] = reader.search("unleash flags").results
    assert hit.vector_score is not None  # its vector came from the other writer
    assert reader_embedder.embedded == ["unleash flags"]


def test_a_search_reconciles_when_marked_dirty_or_after_the_interval(
    memory_dir: Path, make_index: IndexFactory, monkeypatch: pytest.MonkeyPatch
) -> None:
    index = make_index()
    index.sync()
    write(memory_dir / "late.md", "The VPN config lives in 1Password.")
    index.mark_dirty()
    assert index.search("vpn config").results
    write(memory_dir / "later.md", "Renovate opens dependency PRs on Mondays.")
    monkeypatch.setattr(index_module, "RECONCILE_INTERVAL_S", 0.0)
    assert index.search("renovate").results


def test_results_carry_display_path_lines_scores_and_a_snippet(
    paths: Paths, memory_dir: Path, make_index: IndexFactory
) -> None:
    user, _project = paths
    write(user.user_memory_file, "# USER\nSam lives in Berlin.\nSam likes terse answers.")
    write(
        memory_dir / "docs" / "x.md", "\n".join(["filler"] * 5 + ["Rotate Stripe keys quarterly."])
    )
    index = make_index()
    index.sync()
    [doc] = index.search("stripe keys").results
    assert doc.path == ".agentsh/memory/docs/x.md" and (doc.start_line, doc.end_line) == (1, 6)
    assert "Rotate Stripe keys quarterly." in doc.snippet
    assert 0 < doc.score <= 1 and doc.keyword_score > 0 and doc.vector_score is not None
    [profile] = index.search("berlin").results
    assert profile.path == "user:USER.md"


# -- sources and sharing ----------------------------------------------------------------------


def test_sources_resolve_only_memory_files(paths: Paths, memory_dir: Path) -> None:
    user, project = paths
    sources = MemorySources.for_project(user, project)
    write(memory_dir / "MEMORY.md", "x")
    write(user.user_memory_file, "x")
    workspace = add_session(user, project, "dddd-4444")
    write(workspace / "001-summary.md", "x")
    write(user.session_workspace("eeee-5555") / "001-summary.md", "x")
    secret = write(project.root / "secret.md", "x")
    (memory_dir / "escape.md").symlink_to(secret)
    assert sources.resolve(".agentsh/memory/MEMORY.md") == (memory_dir / "MEMORY.md").resolve()
    assert sources.resolve("user:USER.md") == user.user_memory_file.resolve()
    assert sources.resolve("workspace:dddd-4444/001-summary.md") is not None
    for bad in (
        "workspace:eeee-5555/001-summary.md",
        "secret.md",
        ".agentsh/memory/../../secret.md",
        "user:../../../etc/passwd",
        ".agentsh/memory/escape.md",
        str(secret),
        ".agentsh/config.toml",
        "",
    ):
        assert sources.resolve(bad) is None, bad


def test_shared_index_is_one_per_project_and_settings(paths: Paths) -> None:
    user, project = paths
    settings = SearchSettings(embedding="none")
    first = shared_index(user, project, settings)
    try:
        assert shared_index(user, project, settings) is first
        other = shared_index(user, project, SearchSettings(embedding="none", max_results=3))
        assert other is not first and first._closed
    finally:
        close_shared()


def test_a_hard_linked_project_doc_is_not_indexed(
    memory_dir: Path, make_index: IndexFactory, tmp_path: Path
) -> None:
    # The prompt and memory_get refuse a project memory file with other hard links (its
    # other name may be ~/.aws/credentials); search must not serve its text either.
    secret = write(tmp_path / "outside" / "credentials.md", "aws_secret_access_key = wJalr")
    os.link(secret, memory_dir / "notes.md")
    write(memory_dir / "ok.md", "The deploy runs on Fridays.")
    index = make_index()
    report = index.sync()
    assert [Path(p).name for p in report.indexed] == ["ok.md"]
    assert any("notes.md" in s and "hard links" in s for s in report.skipped)
    found = index.search("aws_secret_access_key", min_score=0.0).results
    assert all("wJalr" not in r.text for r in found)
    assert index.index_file(memory_dir / "notes.md")
    assert all("wJalr" not in r.text for r in index.search("wJalr", min_score=0.0).results)


def test_a_symlinked_user_md_is_searched_like_the_file_it_stands_for(
    paths: Paths, memory_dir: Path, make_index: IndexFactory, tmp_path: Path
) -> None:
    # curated.py writes through a USER.md kept in a dotfiles repository, and the prompt shows
    # it; search and memory_get must see it too. Any other symlink stays out of the index,
    # a project's MEMORY.md link out included (issue 12: it could stand for ~/.ssh/id_ed25519).
    user, project = paths
    dotfiles = tmp_path / "dotfiles"
    target = write(dotfiles / "USER.md", "Sam edits with neovim.\n§\nSam answers in Korean.")
    user.user_memory_file.parent.mkdir(parents=True, exist_ok=True)
    user.user_memory_file.symlink_to(target)
    shared = write(dotfiles / "MEMORY.md", "The API listens on port 8000.")
    (memory_dir / "MEMORY.md").symlink_to(shared)
    (memory_dir / "other.md").symlink_to(write(dotfiles / "other.md", "neovim plugins list"))
    index = make_index()
    index.sync()
    hits = index.search("neovim", min_score=0.0).results
    assert (hits[0].path, hits[0].lines) == ("user:USER.md", "1-1")
    assert not any(r.path.endswith("other.md") for r in hits)
    assert not any(r.path.endswith("MEMORY.md") for r in index.search("port 8000").results)
    sources = MemorySources.for_project(user, project)
    assert sources.resolve("user:USER.md") == user.user_memory_file
    assert sources.resolve(".agentsh/memory/MEMORY.md") is None
    assert sources.resolve(".agentsh/memory/other.md") is None
    assert sources.classify(user.user_memory_file) is SourceKind.USER
    # An edit made through the link's target is picked up by the next sync.
    write(target, "Sam edits with helix now.")
    assert user.user_memory_file.as_posix() in [str(p) for p in index.sync().indexed]
    assert index.search("helix").results[0].path == "user:USER.md"
    # The watcher and compaction index one file at a time: the link keeps its own name.
    write(target, "Sam edits with emacs now.")
    assert index.index_file(user.user_memory_file)
    assert [r.path for r in index.search("emacs", min_score=0.0).results][:1] == ["user:USER.md"]
    assert index.status().files == 1
