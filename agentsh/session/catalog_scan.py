"""Reading a session file for the catalog: running totals continued from a stored offset.

Entry lines this agentsh wrote start with a fixed prefix (``{"type":"message",`` ...) and hold
usage in a fixed shape, so a block of such lines is counted with byte searches and one regex
over the whole block; only the first user message, the session's name, and blocks holding
lines of another shape are looked at line by line (and those lines parsed).
"""

from __future__ import annotations

import contextlib
import json
import os
import re
import unicodedata
from datetime import datetime
from pathlib import Path
from typing import Any

from agentsh.session import log
from agentsh.session.entries import clean_name
from agentsh.text import prompt_of

TITLE_CHARS = 80
FIRST_MESSAGE_CHARS = 500

#: the catalog's columns, in order; a Scan holds every one but the path
COLUMNS = (
    *("path", "project", "valid", "id", "cwd", "created", "parent_session", "title"),
    *("first_message", "entries", "messages", "tokens", "cost", "model", "name", "name_key"),
    *("last_timestamp", "last_activity", "size", "mtime_ns", "scanned_offset", "header"),
)
_MESSAGE = b'{"type":"message",'
_NAME = b'{"type":"name",'
_ANNOTATIONS = (
    *(b'{"type":"leaf",', b'{"type":"label",', b'{"type":"checkpoint",', _NAME),
    b'{"type":"modelCall",',  # a call whose output was not kept: its usage counts
)
_ENTRY = b'{"type":"'
_USAGE = re.compile(
    rb'"usage":\{"input":(\d+),"output":(\d+),"cacheRead":(\d+),"cacheWrite":\d+,'
    rb'"cost":(-?[0-9.]+(?:[eE][-+]?\d+)?)\}'
)
_MODEL = re.compile(rb'"model":"((?:[^"\\]|\\.)*)"')
_TIMESTAMP = re.compile(rb'"timestamp":"([^"\\]*)"')
_LINE_TYPE = re.compile(rb'\n\{"type":"([A-Za-z0-9_]*)",')
_USER_LINE = re.compile(
    rb'\n\{"type":"message","id":"[^"\n]*","parentId":(?:null|"[^"\n]*"),'
    rb'"timestamp":"[^"\n]*","role":"user"'
)
_USER = re.compile(
    rb'^\{"type":"message","id":"[^"]*","parentId":(?:null|"[^"]*"),'
    rb'"timestamp":"[^"]*","role":"user"'
)


def name_key(name: str) -> str:
    """What two session names must share to be the same name: cleaned, NFKC and casefolded,
    so ``-r`` finds "Straße" as "STRASSE" and "Émile" as "émile", not only ASCII letters."""
    return unicodedata.normalize("NFKC", unicodedata.normalize("NFKC", clean_name(name)).casefold())


class Scan:
    """The running totals of one file, continued from its stored offset."""

    __slots__ = COLUMNS[1:]

    def __init__(self, project: str = "") -> None:
        self.project = project
        self.valid = 0
        self.id = ""
        self.cwd = ""
        self.created = ""
        self.parent_session: str | None = None
        self.title = ""
        self.first_message = ""
        self.entries = 0
        self.messages = 0
        self.tokens = 0
        self.cost = 0.0
        self.model = ""
        self.name = ""  # the newest name record's
        self.name_key = ""  # its entries.name_key, what -r NAME looks up
        self.last_timestamp = ""
        self.last_activity = 0.0
        self.size = 0
        self.mtime_ns = 0
        self.scanned_offset = 0
        self.header = ""

    @classmethod
    def from_row(cls, values: tuple[Any, ...]) -> Scan:
        scan = cls()
        for name, value in zip(COLUMNS[1:], values, strict=True):
            setattr(scan, name, value)
        return scan

    def row(self, path: str, stat: os.stat_result) -> tuple[Any, ...]:
        self.size = stat.st_size
        self.mtime_ns = stat.st_mtime_ns
        self.last_activity = _epoch(self.last_timestamp) or stat.st_mtime
        return (path, *(getattr(self, name) for name in COLUMNS[1:]))

    def read(self, path: Path) -> None:
        """Continue the totals from the stored offset to the last complete line."""
        for end, block in log.iter_line_blocks(path, self.scanned_offset):
            if self.scanned_offset == 0:
                cut = block.index(b"\n") + 1
                line, block = block[:cut], block[cut:]
                self.header = line.rstrip(b"\n").decode("utf-8", "replace")
                self._read_header(line)
                if not self.valid:
                    self.scanned_offset = cut
                    return  # not a session: rescanned if it ever changes
            if not self._scan_canonical(block):
                self._scan_lines(block)
            self.scanned_offset = end

    def _scan_canonical(self, block: bytes) -> bool:
        """Totals for a block whose every line is an entry as ``encode_line`` writes it,
        counted with C-speed searches over the whole block; False (nothing counted) when some
        line has another shape and the block needs :meth:`_scan_lines`.

        Sound because a JSON string cannot hold a raw newline or an unescaped quote: the
        patterns below can only match the structure of an entry, never text inside one."""
        if not block:
            return True
        data = b"\n" + block
        kinds = _LINE_TYPE.findall(data)
        if len(kinds) != block.count(b"\n"):
            return False
        usages = _USAGE.findall(block)
        if len(usages) != block.count(b'"usage":'):
            return False  # a usage object in another shape
        names = kinds.count(b"name")
        annotations = sum(map(kinds.count, (b"leaf", b"label", b"checkpoint", b"modelCall")))
        self.entries += len(kinds) - annotations - names
        if names:
            start = data.rfind(b"\n" + _NAME) + 1
            self._take_name(data[start : data.index(b"\n", start)])
        self.messages += kinds.count(b"message")
        if usages:
            inputs, outputs, reads, costs = zip(*usages, strict=True)
            self.tokens += sum(map(int, inputs)) + sum(map(int, outputs)) + sum(map(int, reads))
            self.cost += sum(map(float, costs))
        if not self.title:
            for found in _USER_LINE.finditer(data):
                start = found.start() + 1
                if self._take_title(data[start : data.index(b"\n", start)]):
                    break
        at = block.rfind(b'"model":"')
        if at >= 0 and (model := _MODEL.match(block, at)):
            self.model = _unescape(model[1])
        last = block[block.rfind(b"\n", 0, len(block) - 1) + 1 :]
        if stamp := _TIMESTAMP.search(last):
            self.last_timestamp = stamp[1].decode("utf-8", "replace")
        return True

    def _scan_lines(self, block: bytes) -> None:
        """Line by line, parsing what the prefixes do not cover (another writer, hand edits,
        damage)."""
        last_line = b""  # the newest entry line: its timestamp is the last activity
        model = b""
        for line in block.split(b"\n"):
            if line.startswith(_MESSAGE):
                self.messages += 1
                self.entries += 1
                last_line = line
                if not self.title and _USER.match(line):
                    self._take_title(line)
                self._line_usage(line)
                if b'"model":"' in line and (found := _MODEL.search(line)):
                    model = found[1]
            elif line.startswith(_ANNOTATIONS):
                if line.startswith(_NAME):
                    self._take_name(line)
                self._line_usage(line)  # a modelCall record's
                last_line = line
            elif line.startswith(_ENTRY):
                self.entries += 1
                last_line = line
                self._line_usage(line)  # a compaction's or branch summary's model call
            elif line.strip():
                before = self.model
                if self._other(line):
                    last_line = line
                    if self.model != before:
                        model = b""  # this line's model is newer than the one remembered
        if model:
            self.model = _unescape(model)
        if last_line and (stamp := _TIMESTAMP.search(last_line)):
            self.last_timestamp = stamp[1].decode("utf-8", "replace")

    def _read_header(self, line: bytes) -> None:
        data = _json_object(line)
        if data is None or data.get("type") != "session" or not data.get("id"):
            return
        self.valid = 1
        self.id = str(data["id"])
        self.cwd = str(data.get("cwd", ""))
        self.created = str(data.get("timestamp", ""))
        parent = data.get("parentSession")
        self.parent_session = str(parent) if parent else None
        self.last_timestamp = self.created

    def _take_title(self, line: bytes) -> bool:
        """Take the title from a user message; False when it has no text."""
        data = _json_object(line)
        content = data.get("content") if data is not None else None
        if isinstance(content, list):  # text blocks, as other tools write them
            content = " ".join(str(b.get("text", "")) for b in content if isinstance(b, dict))
        if isinstance(content, str) and content.strip():
            self.first_message = content.strip()[:FIRST_MESSAGE_CHARS]
            self.title = shorten(prompt_of(content), TITLE_CHARS)  # not piped text
            return True
        return False

    def _take_name(self, line: bytes) -> None:
        data = _json_object(line)
        if data is not None and isinstance(data.get("name"), str):
            self.name = clean_name(data["name"])
            self.name_key = name_key(self.name)

    def _other(self, line: bytes) -> bool:
        """A line in a shape the prefixes do not cover (another writer, a hand edit): parse
        it properly. True when it is an entry."""
        data = _json_object(line)
        if data is None or not isinstance(data.get("type"), str) or not data.get("id"):
            return False  # damaged: the loader reports it, the catalog just skips it
        kind = data["type"]
        if kind == "name":
            self._take_name(line)
        if kind not in ("leaf", "label", "checkpoint", "name", "modelCall"):
            self.entries += 1
        if kind == "message":
            self.messages += 1
            if not self.title and data.get("role") == "user":
                self._take_title(line)
            if isinstance(data.get("model"), str) and data["model"]:
                self.model = data["model"]
        self._add_usage(data.get("usage"))
        return True

    def _line_usage(self, line: bytes) -> None:
        if b'"usage":' in line:
            if usage := _USAGE.search(line):
                self.tokens += int(usage[1]) + int(usage[2]) + int(usage[3])
                self.cost += float(usage[4])
            else:
                self._usage_of(line)

    def _usage_of(self, line: bytes) -> None:
        data = _json_object(line)
        if data is not None:
            self._add_usage(data.get("usage"))

    def _add_usage(self, usage: object) -> None:
        if isinstance(usage, dict):
            with contextlib.suppress(TypeError, ValueError):
                tokens = sum(int(usage.get(k, 0)) for k in ("input", "output", "cacheRead"))
                cost = float(usage.get("cost", 0.0))
                self.tokens += tokens
                self.cost += cost


def _json_object(line: bytes) -> dict[str, Any] | None:
    try:
        data = json.loads(line)
    except (UnicodeDecodeError, json.JSONDecodeError):
        return None
    return data if isinstance(data, dict) else None


def shorten(text: str, limit: int) -> str:
    """One line of at most ``limit`` characters, with an ellipsis when cut."""
    flat = " ".join(text.split())
    return flat if len(flat) <= limit else flat[: limit - 1].rstrip() + "…"


def _unescape(raw: bytes) -> str:
    try:
        value = json.loads(b'"' + raw + b'"')
    except (UnicodeDecodeError, json.JSONDecodeError):
        return raw.decode("utf-8", "replace")
    return str(value)


def _epoch(stamp: str) -> float:
    if not stamp:
        return 0.0
    try:
        moment = datetime.fromisoformat(stamp.replace("Z", "+00:00"))
    except ValueError:
        return 0.0
    if moment.tzinfo is None:
        moment = moment.astimezone()
    return moment.timestamp()
