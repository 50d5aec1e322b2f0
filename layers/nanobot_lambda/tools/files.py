"""File tools over the S3 workspace: read_file, write_file, edit_file, list_dir, grep.

Each call works in the job's scope's workspace (the job's context, tools/context.py), where the
built-in skills' files are readable too (`WithBuiltinFiles`). Paths are workspace-relative and
confined by `paths.normalize_path`. Edits go through
`workspace.update_text`: applied to the version that was read, written back only if nobody
changed it meanwhile (ETag condition), re-applied to the fresh version otherwise, so concurrent
edits are never lost.
"""

from __future__ import annotations

import difflib
import re
import time
from collections.abc import Callable, Iterator, Mapping
from typing import Any

import regex  # type: ignore[import-untyped]  # no stubs installed (types-regex)
from pydantic import Field

from nanobot_lambda.core.errors import ToolError
from nanobot_lambda.core.paths import PathError, normalize_path
from nanobot_lambda.core.ports import Workspace
from nanobot_lambda.core.tool_schema import ToolArguments
from nanobot_lambda.core.tools import Tool
from nanobot_lambda.core.workspace import (
    NotText,
    WithBuiltinFiles,
    WorkspaceFile,
    WriteConflict,
    replace_file,
    update_text,
)
from nanobot_lambda.tools.context import JobContext

MAX_READ_CHARS = 40_000
DEFAULT_READ_LINES = 2_000
MAX_WRITE_BYTES = 1_000_000
MAX_LIST_ENTRIES = 200
MAX_GREP_RESULTS = 200
MAX_GREP_FILES = 500
MAX_GREP_FILE_BYTES = 2_000_000
MAX_GREP_LINE_CHARS = 2_000  # longer lines are searched and shown cut
# A regular expression from the model can backtrack exponentially ((a+)+$ on a run of a's):
# `regex` stops a search of one line after GREP_LINE_SECONDS of CPU time, and the whole search
# stops after MAX_GREP_SECONDS, checked between lines (bench/grep_bound.py).
GREP_LINE_SECONDS = 0.25
MAX_GREP_SECONDS = 10.0
MAX_PATTERN_CHARS = 300
LINES_WINDOW_CHARS = 1 << 18  # split into lines at a time: a file's lines are never all held
MAX_SIMILAR_SEARCH_CHARS = 500_000  # larger files get no "most similar text" hint
# What str.splitlines splits on, "\r\n" first so that it stays one line end.
_LINE_END = re.compile("\r\n|[\n\r\v\f\x1c\x1d\x1e\x85\u2028\u2029]")


def tool_path(value: Any, *, allow_root: bool = False) -> str:
    """A workspace path from a tool's argument; a hostile one is the model's error to read."""
    try:
        return normalize_path(value, allow_root=allow_root)
    except PathError as error:
        raise ToolError(str(error)) from None


def line_windows(text: str) -> Iterator[list[str]]:
    """The lines of `text` as `text.splitlines(keepends=True)` gives them, a window of about
    LINES_WINDOW_CHARS at a time: 20 MB of short lines would be 10 million strings at once
    (600 MB); a window's are a few megabytes."""
    start = 0
    while start < len(text):
        found = (
            _LINE_END.search(text, start + LINES_WINDOW_CHARS)
            if len(text) - start > LINES_WINDOW_CHARS
            else None
        )
        end = found.end() if found is not None else len(text)
        yield text[start:end].splitlines(keepends=True)
        start = end


def _read_text(workspace: Workspace, path: str) -> tuple[str, WorkspaceFile]:
    file = workspace.read(path)
    if file is None:
        raise ToolError(f"file not found: {path}. Use list_dir to see what exists.")
    try:
        return file.text, file
    except NotText:
        raise ToolError(f"{path} is a binary file; only text files can be read.") from None


class WorkspaceTool(Tool[JobContext]):
    def __init__(self, builtins: Mapping[str, bytes] | None = None) -> None:
        self._builtins = builtins or {}  # read-only files beneath the workspace's own

    def _files(self, ctx: JobContext) -> Workspace:
        """The job's scope's workspace, with the built-in files beneath it."""
        if not self._builtins:
            return ctx.workspace
        return WithBuiltinFiles(ctx.workspace, self._builtins)


class ReadFile(WorkspaceTool):
    name = "read_file"
    description = "Read a text file from the workspace. Long files are paged by line."

    class Arguments(ToolArguments):
        path: str = Field(description="Workspace-relative path.")
        offset: int | None = Field(None, ge=1, description="First line (1-based).")
        limit: int | None = Field(None, ge=1, description="Number of lines.")

    def run(
        self, ctx: JobContext, /, path: str, offset: int = 1, limit: int = DEFAULT_READ_LINES
    ) -> str:
        text, _ = _read_text(self._files(ctx), tool_path(path))
        start = offset - 1
        end = start + limit  # lowered where MAX_READ_CHARS stops the page
        shown: list[str] = []
        size = total = 0
        for lines in line_windows(text):
            first, total = total, total + len(lines)
            for index in range(max(start, first), min(end, total)):
                line = lines[index - first]
                if size + len(line) > MAX_READ_CHARS and shown:
                    end = index
                    break
                shown.append(line)
                size += len(line)
        if total == 0:
            return "(empty file)"
        if offset > total:
            raise ToolError(f"offset {offset} is past the end ({total} lines).")
        end = min(end, total)
        body = "".join(shown)[:MAX_READ_CHARS]
        if start > 0 or end < total:
            body += (
                f"\n[truncated: lines {offset}-{end} of {total}; use offset={end + 1} to read more]"
            )
        return body


class WriteFile(WorkspaceTool):
    name = "write_file"
    mutates = True
    description = "Create or overwrite a workspace file with the given content."

    class Arguments(ToolArguments):
        path: str = Field(description="Workspace-relative path.")
        content: str

    def run(self, ctx: JobContext, /, path: str, content: str) -> str:
        target = tool_path(path)
        data = content.encode("utf-8")
        if len(data) > MAX_WRITE_BYTES:
            raise ToolError(f"content is over {MAX_WRITE_BYTES} bytes; split it into files.")
        replace_file(self._files(ctx), target, data)
        return f"Wrote {len(content)} characters to {target}."


class EditFile(WorkspaceTool):
    name = "edit_file"
    mutates = True
    description = (
        "Replace exact text in a workspace file. old_text must match exactly once "
        "unless replace_all is true. Read the file first."
    )

    class Arguments(ToolArguments):
        path: str
        old_text: str
        new_text: str
        replace_all: bool | None = None

    def run(
        self,
        ctx: JobContext,
        /,
        path: str,
        old_text: str,
        new_text: str,
        replace_all: bool = False,
    ) -> str:
        target = tool_path(path)
        if not old_text:
            raise ToolError("old_text is empty; give the exact text to replace.")
        replaced = 0

        def apply(text: str | None) -> str:
            nonlocal replaced
            if text is None:
                raise ToolError(f"file not found: {target}. Use list_dir to see what exists.")
            count = text.count(old_text)
            if count == 0:
                raise ToolError(_not_found_message(target, text, old_text))
            if count > 1 and not replace_all:
                raise ToolError(
                    f"old_text occurs {count} times in {target}; include more surrounding "
                    "text to make it unique, or set replace_all=true."
                )
            replaced = count if replace_all else 1
            return text.replace(old_text, new_text, -1 if replace_all else 1)

        try:
            update_text(self._files(ctx), target, apply)
        except NotText:
            raise ToolError(f"{target} is a binary file; only text files can be edited.") from None
        except WriteConflict:
            raise ToolError(f"{target} kept changing while editing; try again.") from None
        return f"Replaced {replaced} occurrence(s) in {target}."


def _not_found_message(path: str, text: str, old_text: str) -> str:
    message = f"old_text was not found in {path}."
    if len(text) > MAX_SIMILAR_SEARCH_CHARS:  # a window per line: too slow, too much memory
        return message + " Read the file to get the exact text."
    lines = text.splitlines()
    wanted = old_text.splitlines() or [old_text]
    window = len(wanted)
    best_ratio, best_line = 0.0, -1
    for index in range(max(1, len(lines) - window + 1)):
        candidate = "\n".join(lines[index : index + window])
        ratio = difflib.SequenceMatcher(None, candidate, old_text).quick_ratio()
        if ratio > best_ratio:
            ratio = difflib.SequenceMatcher(None, candidate, old_text).ratio()
            if ratio > best_ratio:
                best_ratio, best_line = ratio, index
    if best_ratio >= 0.6:
        snippet = "\n".join(lines[best_line : best_line + window])
        message += f" The most similar text is at line {best_line + 1}:\n{snippet}"
    else:
        message += " Read the file to get the exact text."
    return message


class ListDir(WorkspaceTool):
    name = "list_dir"
    description = "List a workspace folder ('.' for the root)."

    class Arguments(ToolArguments):
        path: str | None = None

    def run(self, ctx: JobContext, /, path: str = ".") -> str:
        folder = tool_path(path, allow_root=True)
        entries = self._files(ctx).list_dir(folder)
        if not entries:
            return f"{folder or '.'} is empty or does not exist."
        lines = [
            f"{entry.path}/ (folder)" if entry.is_dir else f"{entry.path} ({entry.size} bytes)"
            for entry in entries[:MAX_LIST_ENTRIES]
        ]
        if len(entries) > MAX_LIST_ENTRIES:
            lines.append(f"… and {len(entries) - MAX_LIST_ENTRIES} more entries")
        return "\n".join(lines)


class Grep(WorkspaceTool):
    name = "grep"
    description = (
        "Search workspace files for a regex (or literal text); returns file:line: text. "
        "path may be a file or a folder (default: the whole workspace)."
    )

    class Arguments(ToolArguments):
        pattern: str = Field(min_length=1, max_length=MAX_PATTERN_CHARS)
        path: str | None = None
        literal: bool | None = None
        ignore_case: bool | None = None
        max_results: int | None = Field(None, ge=1, le=MAX_GREP_RESULTS)

    def __init__(
        self,
        builtins: Mapping[str, bytes] | None = None,
        *,
        time_limit: float = MAX_GREP_SECONDS,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        super().__init__(builtins)
        self._time_limit = time_limit
        self._clock = clock

    def run(
        self,
        ctx: JobContext,
        /,
        pattern: str,
        path: str = ".",
        literal: bool = False,
        ignore_case: bool = False,
        max_results: int = 50,
    ) -> str:
        target = tool_path(path, allow_root=True)
        if len(pattern) > MAX_PATTERN_CHARS:
            raise ToolError(f"the pattern is longer than {MAX_PATTERN_CHARS} characters.")
        # V0: what a pattern means to Python's `re` (no nested sets or set operations), plus
        # what `re` refuses (\p{…}, [[:alpha:]]).
        flags = regex.V0 | (regex.IGNORECASE if ignore_case else 0)
        try:
            compiled = regex.compile(regex.escape(pattern) if literal else pattern, flags)
        except regex.error as error:
            raise ToolError(
                f"invalid regular expression ({error}); set literal=true to search plain text."
            ) from None
        deadline = self._clock() + self._time_limit
        workspace = self._files(ctx)
        single = workspace.read(target) if target else None
        paths, total = ([target], 1) if single is not None else _candidates(workspace, target)
        matches: list[str] = []
        more = searched = 0
        too_slow = False
        for name in paths:
            if self._clock() > deadline:
                too_slow = True
                break
            file = single if single is not None else workspace.read(name)
            searched += 1
            if file is None:
                continue
            try:
                text = file.text
            except NotText:
                continue
            for number, line in enumerate(text.splitlines(), start=1):
                if self._clock() > deadline:
                    too_slow = True
                    break
                try:
                    found = compiled.search(line[:MAX_GREP_LINE_CHARS], timeout=GREP_LINE_SECONDS)
                except TimeoutError:
                    raise ToolError(_too_costly(f"{name}:{number}")) from None
                if found is None:
                    continue
                if len(matches) < max_results:
                    matches.append(f"{name}:{number}: {_excerpt(line, found.start())}")
                else:
                    more += 1
            if too_slow:
                break
        notes = []
        if too_slow:
            notes.append(
                f"Stopped after {self._time_limit:g} s: the pattern is too slow for this much "
                f"text (searched {searched} of {total} files). Use a simpler pattern, "
                "literal=true, or a narrower path."
            )
        elif total > len(paths):
            notes.append(
                f"Searched only the first {len(paths)} of {total} files; "
                "narrow the path to search the rest."
            )
        if not matches:
            if notes:
                return " ".join(notes) + f" No matches for {pattern!r}."
            return f"No matches for {pattern!r} in {target or '.'}."
        if more:
            matches.append(f"… {more} more matches not shown; narrow the pattern or the path.")
        return "\n".join([*matches, *notes])


def _candidates(workspace: Workspace, folder: str) -> tuple[list[str], int]:
    """The files to search (at most MAX_GREP_FILES) and how many there are in all."""
    files = [
        entry.path for entry in workspace.list_files(folder) if entry.size <= MAX_GREP_FILE_BYTES
    ]
    if not files and folder:
        raise ToolError(f"{folder} is neither a file nor a folder with files.")
    return files[:MAX_GREP_FILES], len(files)


def _too_costly(where: str) -> str:
    return (
        f"the pattern took more than {GREP_LINE_SECONDS:g} s on one line ({where}): a pattern "
        "that repeats something that can match in more than one way (nested quantifiers like "
        "(a+)+ or alternatives like (a|ab)*) can take exponential time; rewrite it (e.g. "
        "[\\w\\s]+ instead of (\\w+\\s?)+) or set literal=true."
    )


def _excerpt(line: str, at: int, width: int = 300) -> str:
    """The line from its start, or around the match when the match lies further on."""
    if at < width - 50:
        return line[:width]
    start = at - 100
    return "…" + line[start : start + width]


def file_tools(builtins: Mapping[str, bytes] | None = None) -> list[Tool[JobContext]]:
    """The file tools; `builtins`: read-only files readable beneath each workspace's own."""
    return [
        ReadFile(builtins),
        WriteFile(builtins),
        EditFile(builtins),
        ListDir(builtins),
        Grep(builtins),
    ]
