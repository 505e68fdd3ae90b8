"""A tool call in the transcript: a header line and output collapsed to its last lines.

The header is the tool and its main argument (``ToolStarted.summary``) with a state mark
(running, done, failed). Collapsed, the body shows the last ``preview_lines`` lines and says
how many came before and which key expands them; an edit's diff is shown coloured instead of
the plain result, collapsed to its head (the file and the first change). Enter or Space on
the focused block (or Ctrl+O for the newest) toggles it.

Output can be huge (a build log, ``cat`` of a minified file): while the tool runs the block
keeps only the last :data:`LIVE_TAIL_CHARS` of what streamed in (the tool's result, which the
agent caps, replaces it when the tool ends), and a collapsed block cuts lines longer than
:data:`PREVIEW_LINE_CHARS`, so "collapsed to a few lines" holds for a single 50 KB line too.
"""

from __future__ import annotations

from textual.app import ComposeResult
from textual.containers import Vertical
from textual.content import Content
from textual.widgets import Static

from agentsh.termsafe import one_line
from agentsh.tools.untrusted import preview_source
from agentsh.tui.keys import KeyScope, bindings_for
from agentsh.tui.projection import NOT_RUN_CANCELLED

MAX_EXPANDED_LINES = 2000  # an expanded block beyond this shows its tail (full file is on disk)
# Streamed output kept while the tool runs. Each chunk re-lays out the body, so keeping it all
# made a 20 MB command output cost minutes of frozen UI (every chunk re-split everything).
LIVE_TAIL_CHARS = 64 * 1024
PREVIEW_LINE_CHARS = 500  # a collapsed block's line beyond this is cut (it would wrap for pages)


def diff_content(diff: str) -> Content:
    """A unified diff with added and removed lines coloured by theme variables."""
    pieces: list[tuple[str, str] | str] = []
    for line in diff.splitlines():
        if line.startswith(("+++", "---")):
            pieces.append((line, "bold $foreground-muted"))
        elif line.startswith("@@"):
            pieces.append((line, "$accent"))
        elif line.startswith("+"):
            pieces.append((line, "$success"))
        elif line.startswith("-"):
            pieces.append((line, "$error"))
        else:
            pieces.append(line)
        pieces.append("\n")
    if pieces:
        pieces.pop()
    return Content.assemble(*pieces)


def collapse(
    text: str, preview_lines: int, expand_key: str, *, earlier: int = 0
) -> tuple[str, int]:
    """(the last ``preview_lines`` lines, how many lines were hidden before them).

    ``earlier`` counts lines already dropped before ``text`` began (a running tool's output);
    a line longer than :data:`PREVIEW_LINE_CHARS` is cut and says by how much."""
    lines = text.rstrip("\n").splitlines()
    if len(lines) == preview_lines + 1 and not earlier:
        preview_lines += 1  # the note would take the row the one hidden line needs
    hidden = max(0, len(lines) - preview_lines) + earlier
    shown = "\n".join(_cut_line(line) for line in lines[-preview_lines:])
    if not hidden:
        return shown, 0
    lines_word = "line" if hidden == 1 else "lines"
    return f"({hidden} earlier {lines_word}, {expand_key} to expand)\n{shown}", hidden


def collapse_head(text: str, preview_lines: int, expand_key: str) -> tuple[str, int]:
    """(the first ``preview_lines`` lines and a line saying how many follow, how many were
    hidden): a diff's head names the file and the first change; its tail did neither."""
    lines = text.rstrip("\n").splitlines()
    if len(lines) <= preview_lines + 1:  # the note would take the hidden line's row
        return "\n".join(_cut_line(line) for line in lines), 0
    hidden = len(lines) - preview_lines
    shown = "\n".join(_cut_line(line) for line in lines[:preview_lines])
    return f"{shown}\n({hidden} more lines, {expand_key} to expand)", hidden


def _cut_line(line: str) -> str:
    if len(line) <= PREVIEW_LINE_CHARS:
        return line
    return f"{line[:PREVIEW_LINE_CHARS]}… ({len(line) - PREVIEW_LINE_CHARS:,} more characters)"


class ToolBlock(Vertical, can_focus=True):
    BINDINGS = bindings_for(KeyScope.TOOL_BLOCK)
    FOCUS_ON_CLICK = False  # a click leaves the focus (and typing) in the editor

    def __init__(
        self,
        call_id: str,
        name: str,
        summary: str,
        *,
        preview_lines: int = 5,
        expand_key: str = "Enter",
        output: str = "",
        is_error: bool = False,
        diff: str = "",
        finished: bool = False,
    ) -> None:
        super().__init__(classes="tool-block")
        self.call_id = call_id
        self.tool_name = name
        self.summary = summary
        self.preview_lines = preview_lines
        self.expand_key = expand_key
        self.output = output
        self.is_error = is_error
        self.diff = diff
        self.finished = finished
        self.expanded = False
        self.hidden_lines = 0
        self.dropped_lines = 0  # lines of streamed output no longer kept (see LIVE_TAIL_CHARS)
        self.body_text = ""  # what the body shows now (plain), for tests and export

    def compose(self) -> ComposeResult:
        yield Static(classes="tool-header")
        yield Static(classes="tool-body")

    def on_mount(self) -> None:
        self._render_block()

    def append_output(self, text: str) -> None:
        output = self.output + text
        if len(output) > LIVE_TAIL_CHARS:
            cut = len(output) - LIVE_TAIL_CHARS
            newline = output.find("\n", cut)
            if 0 <= newline < len(output) - 1:
                cut = newline + 1  # keep whole lines
            self.dropped_lines += output.count("\n", 0, cut)
            output = output[cut:]
        self.output = output
        self._render_block()

    def finish(self, content: str, *, is_error: bool, diff: str = "") -> None:
        self.output = content
        self.dropped_lines = 0  # the result replaces the stream (and says what it left out)
        self.is_error = is_error
        self.diff = diff
        self.finished = True
        self._render_block()

    def action_toggle_expand(self) -> None:
        self.expanded = not self.expanded
        self._render_block()
        self.scroll_visible()

    def _render_block(self) -> None:
        if not self.children:  # not composed yet; on_mount renders
            return
        if not self.finished:
            mark, style = "⋯", "$accent"
        elif self.is_error:
            mark, style = "✗", "$error"
        else:
            mark, style = "✓", "$success"
        arrow = "▾" if self.expanded else "▸"
        header = Content.assemble(
            (f"{arrow} ", "$foreground-muted"),
            (mark, style),
            " ",
            (one_line(self.summary), "bold"),  # a line break in a path is shown as \n
        )
        self.query_one(".tool-header", Static).update(header)
        self.set_class(self.is_error, "error")
        self.set_class(not self.finished, "running")
        body = self.query_one(".tool-body", Static)
        if self.diff and not self.is_error:
            text = self.diff
            if not self.expanded:  # its head: which file, which lines
                text, self.hidden_lines = collapse_head(
                    text, self.preview_lines * 3, self.expand_key
                )
            body.update(diff_content(text))
        else:
            text = self.output
            if self.expanded:
                lines = text.splitlines()
                not_shown = max(0, len(lines) - MAX_EXPANDED_LINES) + self.dropped_lines
                if not_shown:
                    note = f"({not_shown} earlier lines not shown)"
                    text = "\n".join([note, *lines[-MAX_EXPANDED_LINES:]])
                self.hidden_lines = 0
            else:
                text, self.hidden_lines = collapse(
                    preview_source(text),
                    self.preview_lines,
                    self.expand_key,
                    earlier=self.dropped_lines,
                )
            if self.finished and self.is_error and self.output == NOT_RUN_CANCELLED:
                text = ""  # the "turn cancelled" line under the call says it
        body.update(Content(text))
        self.body_text = text
        body.display = bool(text.strip())
