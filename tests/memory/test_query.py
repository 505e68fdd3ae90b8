from __future__ import annotations

from agentsh.memory.query import TermMatch, parse_query


def _words(query: str) -> list[tuple[str, str, TermMatch]]:
    return [(w.surface, w.stem, w.match) for w in parse_query(query).words]


def test_english_stop_words_go_and_suffixes_are_trimmed() -> None:
    assert _words("How are the builds failing?") == [
        ("builds", "build", TermMatch.FTS),
        ("failing", "fail", TermMatch.FTS),
    ]


def test_a_query_of_stop_words_only_still_searches_them() -> None:
    assert [w for w, _s, _m in _words("what is it")] == ["what", "is", "it"]


def test_two_letter_words_are_matched_as_whole_words_by_substring() -> None:
    [word] = parse_query("CI").words
    assert word.match is TermMatch.LIKE and word.ascii_bounded
    assert word.coverage("the ci job") == 1.0 and word.coverage("the cinema") == 0.0


def test_korean_particles_are_stripped_and_long_words_get_every_trigram() -> None:
    plan = parse_query("데이터베이스를 빌드")
    database, build = plan.words
    assert database.stem == "데이터베이스" and database.match is TermMatch.FTS
    assert "데이터" in database.trigrams and "베이스" in database.trigrams
    assert build.match is TermMatch.LIKE
    assert plan.non_cjk_letter_share == 0.0


def test_a_particle_stuck_to_an_english_word_is_dropped() -> None:
    assert _words("pytest가") == [("pytest", "pytest", TermMatch.FTS)]


def test_japanese_splits_where_the_script_changes() -> None:
    assert [s for s, _st, _m in _words("Dockerイメージのビルド手順")] == [
        "docker",
        "イメージ",
        "ビルド",
        "手順",
    ]


def test_chinese_function_words_cut_a_run_and_bigrams_cover_compounds() -> None:
    [word] = parse_query("王伟周五发布吗").words
    assert word.surface == "王伟周五发布"
    assert word.coverage("王伟的偏好：周五不发布新版本") > 0.6
    assert word.coverage("完全无关的文字") == 0.0


def test_every_fts_term_is_a_quoted_phrase() -> None:
    expression = parse_query('deploy NEAR(x y) "quoted" col:value').fts_expression()
    assert expression == '"deploy" OR "near" OR "quot" OR "col" OR "value"'
