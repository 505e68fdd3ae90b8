"""Credentials in a URL's query string or user part never reach an error text."""

from __future__ import annotations

from agentsh.llm.client import scrub, url_secrets


def test_query_keys_and_userinfo_are_redacted() -> None:
    url = "https://x.openai.azure.com/openai/chat?api-version=2024-02-01&api-key=Zm9vYmFyYmF6cXV4"
    assert url_secrets(url) == ("Zm9vYmFyYmF6cXV4",)
    text = scrub(f"cannot reach {url}: connection refused")
    assert "Zm9vYmFyYmF6cXV4" not in text and "api-key=[redacted]" in text
    assert "api-version=2024-02-01" in text
    assert scrub("http://bob:hunter2hunter2@proxy:3128/v1") == "http://[redacted]@proxy:3128/v1"
    for key in ("token", "access_token", "sig", "X-Api-Key", "password"):
        assert "s3cr3tvalue" not in scrub(f"https://h/p?{key}=s3cr3tvalue&x=1")


def test_plain_urls_are_left_alone() -> None:
    for text in ("https://docs.example/?page=2&q=x", "http://127.0.0.1:8000/v1"):
        assert scrub(text) == text
