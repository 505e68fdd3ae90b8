"""The ``write`` and ``edit`` tools, with diffs.

``write`` and ``edit`` keep what the model cannot see and must not break (a UTF-8 BOM, CRLF line
endings, the mode, the bytes outside the replaced span), write through the one durable atomic
write (a full disk leaves the old file whole, never a torn one), and return a unified diff in
``details["diff"]`` (:mod:`agentsh.tools.file_diff`). Each one also plans its change without
writing, which is what the approval prompt shows. ``edit`` finds its old text exactly, else
tolerantly (:mod:`agentsh.tools.edit_match`). ``read`` is :mod:`agentsh.tools.file_read`.

With a :class:`~agentsh.tools.host.ToolHost` (an editor over ACP), the text of a file in the
session's folder comes from the editor, unsaved changes included, and the write goes back
through it; the checks and the plan are the same, only the bytes travel another way.
"""

from __future__ import annotations

import asyncio
import os
from dataclasses import dataclass
from pathlib import Path
from typing import Any, ClassVar

from agentsh.fsutil import atomic_write
from agentsh.tools.base import (
    Effect,
    Tool,
    ToolArgumentError,
    ToolContext,
    ToolError,
    ToolResult,
    display_path,
    format_size,
    missing_path_message,
    param,
    resolve_path,
)
from agentsh.tools.edit_match import closest_hint, find_all, find_tolerant
from agentsh.tools.file_access import (
    decode_utf8,
    error_result,
    held_bytes,
    os_error_message,
    read_regular,
    regular_file,
)
from agentsh.tools.file_diff import capped_diff, diff_lines, unified_diff
from agentsh.tools.host import hosted_path

# The tolerant match keeps two offset arrays per character: above this size, exact only.
_TOLERANT_MAX_BYTES = 4 * 1024 * 1024


@dataclass(frozen=True, slots=True)
class _Change:
    """A planned write: what is there, what will be, and the diff between the two."""

    path: Path
    shown: str
    existed: bool
    new: bytes
    diff: str
    added: int
    removed: int


def _line_ending(text: str) -> str:
    crlf = text.count("\r\n")
    return "\r\n" if crlf and crlf >= text.count("\n") - crlf else "\n"


def _with_ending(text: str, ending: str) -> str:
    text = text.replace("\r\n", "\n")
    return text.replace("\n", ending) if ending != "\n" else text


async def _save(change: _Change, ctx: ToolContext) -> None:
    """Write the change through the host when it serves the file, else to the disk."""
    where = hosted_path(change.path, ctx.cwd, ctx.host, write=True)
    text = decode_utf8(change.new)
    if where is None or ctx.host is None or text is None:
        await asyncio.to_thread(_write_change, change, ctx)
        return
    await ctx.host.write_text(where, text)


def _write_change(change: _Change, ctx: ToolContext) -> None:
    """Replace the file whole or not at all (temp file, fsync, rename: :func:`atomic_write`).

    Inside the project (and an --add-dir folder) no link on the way is followed (a folder
    swapped for a symlink after the approval makes the write fail, not land elsewhere). The
    mode is kept; a hard-linked file (asked about first) gets a new inode, so its other names
    keep their content. A write outside happens only when the user approved exactly that."""
    real = Path(os.path.realpath(change.path))
    for root in (ctx.project.root, *ctx.added_dirs):  # the project, then --add-dir folders
        real_root = Path(os.path.realpath(root))
        if real != real_root and real.is_relative_to(real_root):
            atomic_write(real, change.new, root=real_root)
            return
    if not ctx.outside_allowed:
        raise ToolError(
            f"{change.shown} now leads outside the project ({real}), which was not approved; "
            "nothing was written."
        )
    real.parent.mkdir(parents=True, exist_ok=True)
    atomic_write(real, change.new)


# -- write ----------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class WriteParams:
    path: str = param("File path to create or overwrite; parent folders are created.")
    content: str = param("The complete new content of the file.")


class WriteTool(Tool):
    name: ClassVar[str] = "write"
    description: ClassVar[str] = (
        "Create or overwrite a file with the given content. Prefer edit for changes to an "
        "existing file."
    )
    Params: ClassVar[type[Any]] = WriteParams

    def parse(self, arguments: Any) -> WriteParams:
        params: WriteParams = super().parse(arguments)
        if not params.path.strip():
            raise ToolArgumentError("'path' must not be empty")
        return params

    def effect(self, params: Any, ctx: ToolContext) -> Effect:
        return Effect.EDIT

    def target_paths(self, params: WriteParams, ctx: ToolContext) -> list[Path]:
        return [resolve_path(params.path, ctx.cwd)]

    def summary(self, params: WriteParams) -> str:
        return f"write: {params.path}"

    async def approval_detail(self, params: WriteParams, ctx: ToolContext) -> str:
        held = await held_bytes(resolve_path(params.path, ctx.cwd), ctx)
        change = await asyncio.to_thread(_plan_write, params, ctx, held)
        return capped_diff(change.diff, ctx.settings.tools.read_max_bytes) or "(no change)"

    async def run(self, params: WriteParams, ctx: ToolContext) -> ToolResult:
        path = resolve_path(params.path, ctx.cwd)
        shown = display_path(path, ctx.cwd)
        try:
            held = await held_bytes(path, ctx)
            change = await asyncio.to_thread(_plan_write, params, ctx, held)
            if change.existed and not change.diff:
                return ToolResult(
                    f"{shown} already has this content; nothing changed.",
                    details={"path": str(path), "diff": ""},
                )
            await _save(change, ctx)
        except (ToolError, OSError) as exc:
            return error_result(exc, shown)
        lines = len(diff_lines(params.content))
        size = format_size(len(change.new))
        if change.existed:
            text = f"Overwrote {shown} ({lines} lines, {size}; +{change.added} -{change.removed})."
        else:
            text = f"Created {shown} ({lines} lines, {size})."
        diff = capped_diff(change.diff, ctx.settings.tools.read_max_bytes)
        return ToolResult(text, details={"path": str(path), "diff": diff})


def _plan_write(params: WriteParams, ctx: ToolContext, held: bytes | None = None) -> _Change:
    """The change ``params`` would make; ``held`` is the file as the host holds it (None: read
    it from the disk)."""
    path = resolve_path(params.path, ctx.cwd)
    shown = display_path(path, ctx.cwd)
    if path.is_dir():
        raise ToolError(f"{shown} is a directory; give a file path to write.")
    try:
        old = held if held is not None else read_regular(path, shown)
    except NotADirectoryError:
        raise ToolError(f"Cannot create {shown}: a part of its folder path is a file.") from None
    except OSError as exc:
        raise ToolError(os_error_message(exc, shown)) from None
    content = params.content
    if old is None:
        diff, added, removed = unified_diff("", content, shown, created=True)
        return _Change(path, shown, False, content.encode("utf-8"), diff, added, removed)
    old_text = decode_utf8(old)
    if old_text is None:
        diff = f"(replaces a binary or non-UTF-8 file of {format_size(len(old))})\n"
        return _Change(path, shown, True, content.encode("utf-8"), diff, 0, 0)
    bom = old_text.startswith("\ufeff")
    old_body = old_text[1:] if bom else old_text
    # The model writes \n; a CRLF file stays CRLF and a file with a BOM keeps it.
    if _line_ending(old_body) == "\r\n" and "\r\n" not in content:
        content = _with_ending(content, "\r\n")
    if bom and not content.startswith("\ufeff"):
        content = "\ufeff" + content
    new = content.encode("utf-8")
    if new == old:
        return _Change(path, shown, True, new, "", 0, 0)
    diff, added, removed = unified_diff(old_body, content.removeprefix("\ufeff"), shown)
    return _Change(path, shown, True, new, diff, added, removed)


# -- edit -----------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class EditParams:
    path: str = param("File path to edit.")
    old_text: str = param("Exact text to replace; must occur once unless replace_all.")
    new_text: str = param("Replacement text.")
    replace_all: bool = param("Replace every occurrence of old_text.", False)


class EditTool(Tool):
    name: ClassVar[str] = "edit"
    description: ClassVar[str] = (
        "Replace text in a file. old_text must match the file exactly (whitespace included) "
        "and be unique; add surrounding lines to make it unique."
    )
    Params: ClassVar[type[Any]] = EditParams

    def parse(self, arguments: Any) -> EditParams:
        params: EditParams = super().parse(arguments)
        if not params.path.strip():
            raise ToolArgumentError("'path' must not be empty")
        if not params.old_text:
            raise ToolArgumentError("'old_text' must not be empty; use write to create a file")
        return params

    def effect(self, params: Any, ctx: ToolContext) -> Effect:
        return Effect.EDIT

    def target_paths(self, params: EditParams, ctx: ToolContext) -> list[Path]:
        return [resolve_path(params.path, ctx.cwd)]

    def summary(self, params: EditParams) -> str:
        return f"edit: {params.path}" + (" (all)" if params.replace_all else "")

    async def approval_detail(self, params: EditParams, ctx: ToolContext) -> str:
        held = await held_bytes(resolve_path(params.path, ctx.cwd), ctx)
        plan = await asyncio.to_thread(_plan_edit, params, ctx, held)
        return capped_diff(plan.change.diff, ctx.settings.tools.read_max_bytes)

    async def run(self, params: EditParams, ctx: ToolContext) -> ToolResult:
        path = resolve_path(params.path, ctx.cwd)
        shown = display_path(path, ctx.cwd)
        try:
            held = await held_bytes(path, ctx)
            plan = await asyncio.to_thread(_plan_edit, params, ctx, held)
            await _save(plan.change, ctx)
        except (ToolError, OSError) as exc:
            return error_result(exc, shown)
        count = plan.replacements
        text = (
            f"Edited {shown}: replaced {count} occurrence{'s' if count != 1 else ''} "
            f"(first at line {plan.first_line}; +{plan.change.added} -{plan.change.removed})."
        )
        if plan.tolerant:
            text += (
                " old_text matched only after ignoring differences in trailing whitespace, "
                "Unicode forms, quotes or dashes; re-read the file before the next edit."
            )
        details = {
            "path": str(path),
            "diff": capped_diff(plan.change.diff, ctx.settings.tools.read_max_bytes),
            "first_changed_line": plan.first_line,
            "replacements": count,
            "tolerant": plan.tolerant,
        }
        return ToolResult(text, details=details)


@dataclass(frozen=True, slots=True)
class _EditPlan:
    change: _Change
    replacements: int
    first_line: int
    tolerant: bool


def _plan_edit(params: EditParams, ctx: ToolContext, held: bytes | None = None) -> _EditPlan:
    """The edit ``params`` would make; ``held`` as for :func:`_plan_write`."""
    path = resolve_path(params.path, ctx.cwd)
    shown = display_path(path, ctx.cwd)
    if params.old_text == params.new_text:
        raise ToolError("old_text and new_text are identical; there is nothing to change.")
    if not path.exists():
        raise ToolError(missing_path_message(path, ctx.cwd) + " To create a file, use write.")
    regular_file(path, ctx.cwd)
    try:
        data = held if held is not None else read_regular(path, shown)
    except OSError as exc:
        raise ToolError(os_error_message(exc, shown)) from None
    if data is None:
        raise ToolError(missing_path_message(path, ctx.cwd) + " To create a file, use write.")
    text = decode_utf8(data)
    if text is None or "\x00" in text:
        raise ToolError(f"{shown} is not UTF-8 text; edit cannot change it safely.")
    bom = text.startswith("\ufeff")
    body = text[1:] if bom else text
    ending = _line_ending(body)
    old = _with_ending(params.old_text, ending)
    new = _with_ending(params.new_text, ending)
    spans = find_all(body, old)
    tolerant = False
    if not spans:
        if len(data) > _TOLERANT_MAX_BYTES:
            raise ToolError(
                f"Could not find old_text in {shown}. It must match exactly, whitespace "
                f"included (the file is over {format_size(_TOLERANT_MAX_BYTES)}, so no "
                f"approximate match was tried)."
            )
        spans = find_tolerant(body, params.old_text)
        tolerant = bool(spans)
    if not spans:
        raise ToolError(
            f"Could not find old_text in {shown}. It must match the file exactly, whitespace "
            f"and indentation included; read the file again and copy the text."
            + closest_hint(body, params.old_text)
        )
    if len(spans) > 1 and not params.replace_all:
        lines = ", ".join(str(body.count("\n", 0, s) + 1) for s, _ in spans[:10])
        raise ToolError(
            f"Found {len(spans)} occurrences of old_text in {shown} (lines {lines}). Add "
            f"surrounding lines to make it unique, or set replace_all=true to change them all."
        )
    pieces: list[str] = []
    pos = 0
    for start, end in spans:
        pieces += [body[pos:start], new]
        pos = end
    pieces.append(body[pos:])
    new_body = "".join(pieces)
    if new_body == body:
        raise ToolError(f"The edit leaves {shown} unchanged; old_text already reads as new_text.")
    new_bytes = (("\ufeff" if bom else "") + new_body).encode("utf-8")
    diff, added, removed = unified_diff(body, new_body, shown)
    first_line = body.count("\n", 0, spans[0][0]) + 1
    change = _Change(path, shown, True, new_bytes, diff, added, removed)
    return _EditPlan(change, len(spans), first_line, tolerant)
