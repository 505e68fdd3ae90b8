"""The client's prompt, a list of content blocks, as the text of one agentsh user message.

agentsh's model turns take text. Text blocks are taken as they are; a link to a file (an
``@mention`` in the editor) becomes its path, which the model can read with its tools; a file the
editor embedded (``embeddedContext``) is included whole, fenced and named. Images, audio and
binary resources are not advertised, so a client should not send them; if one does, they are
left out and the caller says so.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from urllib.parse import unquote, urlparse

from acp.schema import (
    AudioContentBlock,
    EmbeddedResourceContentBlock,
    ImageContentBlock,
    ResourceContentBlock,
    TextContentBlock,
    TextResourceContents,
)

from agentsh.acp.updates import fenced

PromptBlock = (
    TextContentBlock
    | ImageContentBlock
    | AudioContentBlock
    | ResourceContentBlock
    | EmbeddedResourceContentBlock
)


@dataclass(frozen=True, slots=True)
class PromptText:
    text: str
    skipped: list[str] = field(default_factory=list)  # kinds of blocks left out


def prompt_text(blocks: list[PromptBlock]) -> PromptText:
    parts: list[str] = []
    skipped: list[str] = []
    for block in blocks:
        match block:
            case TextContentBlock():
                parts.append(block.text)
            case ResourceContentBlock():
                parts.append(f"`{uri_path(block.uri)}`")
            case EmbeddedResourceContentBlock(resource=TextResourceContents() as resource):
                where = uri_path(resource.uri)
                parts.append(f"\n\nContents of `{where}`:\n\n{fenced(resource.text)}\n")
            case EmbeddedResourceContentBlock():
                skipped.append("binary resource")
            case ImageContentBlock():
                skipped.append("image")
            case AudioContentBlock():
                skipped.append("audio")
    text = "".join(part if _joins(parts, i) else f" {part}" for i, part in enumerate(parts))
    return PromptText(text.strip(), skipped)


def _joins(parts: list[str], index: int) -> bool:
    """Whether part ``index`` follows the one before it directly (no space needed)."""
    if index == 0:
        return True
    before, part = parts[index - 1], parts[index]
    return not before or not part or before[-1].isspace() or part[0].isspace()


def uri_path(uri: str) -> str:
    """A ``file://`` URI as a path; any other URI as it is."""
    parsed = urlparse(uri)
    if parsed.scheme == "file":
        return unquote(parsed.path)
    return uri
