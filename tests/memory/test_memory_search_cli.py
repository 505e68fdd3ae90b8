from __future__ import annotations

import json
import sqlite3
from pathlib import Path

import pytest

from agentsh.cli import main
from agentsh.memory.index import MemoryIndex
from agentsh.paths import ProjectPaths, UserPaths
from tests.memory.conftest import write


def _keyword_only(project: Path) -> None:
    # The user's config: a project's is loaded only once the folder is trusted.
    write(UserPaths.from_env().config_file, '[search]\nembedding = "none"\n')


def _notes(project: Path) -> None:
    memory = ProjectPaths(project).memory_dir
    write(memory / "MEMORY.md", "# Memory\nThe API runs on port 8000.\nRedis is on 6379.")
    write(memory / "docs" / "deploy.md", "Deploys: helm upgrade, canary 10 % for 30 minutes.")
    write(memory / "ko.md", "# 배포\n배포는 태그를 푸시하면 시작된다.")


def test_memory_search_prints_path_lines_scores_and_a_snippet(
    project: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    _keyword_only(project)
    _notes(project)
    assert main(["memory", "search", "helm canary"]) == 0
    out = capsys.readouterr().out.splitlines()
    assert out[0].startswith("keyword-only: embeddings are off")
    assert out[1].startswith("1. .agentsh/memory/docs/deploy.md:1-1  score ")
    assert "(keyword " in out[1] and "no vector" in out[1]
    assert out[2].strip().startswith("Deploys: helm upgrade")


def test_a_typed_docs_snippet_is_its_body_not_its_front_matter(
    project: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    _keyword_only(project)
    assert main(["memory", "add", "--type", "lesson", "--title", "pytest", "use pytest -x"]) == 0
    capsys.readouterr()
    assert main(["memory", "search", "pytest"]) == 0
    out = capsys.readouterr().out.splitlines()
    assert out[2].strip() == "use pytest -x"


def test_memory_search_json_has_every_part(
    project: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    _keyword_only(project)
    _notes(project)
    assert main(["memory", "search", "배포", "-k", "1", "--json"]) == 0
    data = json.loads(capsys.readouterr().out)
    assert data["keyword_only"] is True and data["mode"] == "keyword-only"
    [hit] = data["results"]
    assert hit["path"] == ".agentsh/memory/ko.md"
    assert (hit["start_line"], hit["end_line"]) == (1, 2)
    assert hit["match"] == "substring" and hit["vector_score"] is None
    assert set(hit) >= {"score", "keyword_score", "snippet", "abs_path"}


def test_memory_search_with_nothing_found_says_so(
    project: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    _keyword_only(project)
    assert main(["memory", "search", "anything"]) == 0
    assert 'no memory matched "anything"' in capsys.readouterr().out


def test_an_empty_query_or_bad_k_is_a_one_line_error(
    project: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["memory", "search", "  "]) == 1
    assert main(["memory", "search", "x", "-k", "0"]) == 1
    err = capsys.readouterr().err.splitlines()
    assert err == ["agentsh: the search query is empty", "agentsh: -k must be 1 or more"]


def test_memory_reindex_reports_what_it_did_and_full_rebuilds(
    project: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    _keyword_only(project)
    _notes(project)
    assert main(["memory", "reindex"]) == 0
    out = capsys.readouterr().out
    assert "indexed 3 file(s), removed 0, 0 unchanged" in out
    assert "3 file(s), 3 chunk(s)" in out and "keyword-only" in out
    assert main(["memory", "reindex"]) == 0
    assert "indexed 0 file(s), removed 0, 3 unchanged" in capsys.readouterr().out
    assert main(["memory", "reindex", "--full", "--json"]) == 0
    data = json.loads(capsys.readouterr().out)
    assert data["rebuilt"] == "full rebuild requested" and len(data["indexed"]) == 3


@pytest.mark.slow
def test_memory_search_uses_the_local_model_by_default(
    project: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    _notes(project)
    assert main(["memory", "search", "which port does the API listen on", "--json"]) == 0
    data = json.loads(capsys.readouterr().out)
    assert data["mode"] == "hybrid" and data["model"] == "local/all-MiniLM-L6-v2-int8"
    top = data["results"][0]
    assert top["path"] == ".agentsh/memory/MEMORY.md" and top["vector_score"] > 0.3


def test_a_database_error_during_search_is_a_one_line_error(
    project: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    _keyword_only(project)
    _notes(project)

    def damaged(self: MemoryIndex, *args: object, **kwargs: object) -> object:
        raise sqlite3.DatabaseError("database disk image is malformed")

    monkeypatch.setattr(MemoryIndex, "search", damaged)
    assert main(["memory", "search", "helm"]) == 1
    err = capsys.readouterr().err
    assert err.startswith("agentsh: the search index ") and "malformed" in err
    assert "reindex --full" in err and len(err.splitlines()) == 1
