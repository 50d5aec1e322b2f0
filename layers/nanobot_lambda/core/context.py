"""Build what the model sees, the nanobot way: a system prompt, the history, the new message.

The system prompt holds only what changes when the workspace changes, in a fixed order:
identity, bootstrap files, memory, the always-on skills in full, and a summary of every skill
(progressive disclosure: the model reads a skill's SKILL.md when it needs it). Time, chat and
recalled history go in a runtime-context block at the head of the user message instead.

Every request then starts with the previous one, byte for byte, so provider prompt caches serve
it: the system prompt changes only with the workspace, and a saved message is sent in later
turns exactly as it was first sent. That is why the user message is saved with the block it
was sent with (`RUNTIME_FIELD`, apart from its text, which is what consolidation, recall and the
operator read) and why a continued turn reuses the block its first run rendered.
"""

from __future__ import annotations

import shutil
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Any
from zoneinfo import ZoneInfo

from nanobot_lambda.core import texts
from nanobot_lambda.core.ports import Workspace
from nanobot_lambda.core.skills import (
    OFF_FILE,
    SKILL_FILE,
    SKILLS_DIR,
    Which,
    load_skills,
    off_names,
    render_active_skills,
    render_skills_summary,
)
from nanobot_lambda.core.workspace import NotText, WorkspaceFile

BOOTSTRAP_FILES = ("AGENTS.md", "SOUL.md", "USER.md", "TOOLS.md", "IDENTITY.md")
MEMORY_FILE = "memory/MEMORY.md"
SECTION_SEPARATOR = "\n\n---\n\n"
MAX_FILE_CHARS = 20_000
MAX_BOOTSTRAP_CHARS = 60_000
TRUNCATION_MARKER = "\n[… truncated: read the file for the rest]"
SKILL_SETS_KEPT = 16  # rendered skill sections kept per container (one per scope in use)
RUNTIME_FIELD = "context"  # of a saved user message: the runtime block it was sent with


# The runtime block's lines that hold for the whole conversation: stated when no earlier block
# still in the history states them so (the first message, after a change, or once the message
# that stated them has left the history), and otherwise left out.
STANDING_LINES = ("Timezone", "Channel", "Chat")
RUNTIME_LINES = ("Time", *STANDING_LINES)


@dataclass(frozen=True)
class RuntimeContext:
    now: datetime
    timezone: str
    channel: str
    chat_id: str
    recalled: tuple[str, ...] = ()  # HISTORY entries relevant to this message

    def render(self, earlier: Sequence[str] = ()) -> str:
        """The block, leaving out the standing lines the last of the `earlier` blocks (those of
        the history the request sends, oldest first) that states each already states alike."""
        local = self.now.astimezone(ZoneInfo(self.timezone))
        offset = local.strftime("%z")
        values = {
            "Time": local.strftime("%Y-%m-%d %H:%M (%A)"),
            "Timezone": f"{self.timezone}, UTC{offset[:3]}:{offset[3:]}",
            "Channel": self.channel,
            "Chat": self.chat_id,
        }
        stated = _stated(earlier)
        lines = [
            f"{label}: {value}"
            for label, value in values.items()
            if label not in STANDING_LINES or stated.get(label) != value
        ]
        if self.recalled:
            entries = "\n".join(f"- {entry}" for entry in self.recalled)
            lines.append(texts.render("recall", entries=entries))
        if len(lines) == 1:  # the time alone: one line, with nothing in it but the time
            return texts.render("runtime_time", time=values["Time"])
        return texts.render("runtime_context", lines="\n".join(lines))


def _stated(blocks: Sequence[str]) -> dict[str, str]:
    """The standing lines' values as the newest block that states each has them."""
    stated: dict[str, str] = {}
    for block in blocks:
        for line in block.splitlines()[1:]:  # the lines after the heading, up to recall's
            label, _, value = line.partition(": ")
            if label not in RUNTIME_LINES:
                break
            if label in STANDING_LINES:
                stated[label] = value
    return stated


def earlier_blocks(history: Sequence[dict[str, Any]]) -> list[str]:
    """The runtime blocks the history's messages were sent with, oldest first."""
    return [
        message[RUNTIME_FIELD] for message in history if isinstance(message.get(RUNTIME_FIELD), str)
    ]


def is_prompt_file(path: str) -> bool:
    """Whether the system prompt reads this workspace file (what a new container prefetches)."""
    if path in BOOTSTRAP_FILES or path == MEMORY_FILE:
        return True
    parts = path.split("/")
    return len(parts) == 3 and parts[0] == SKILLS_DIR and parts[2] == SKILL_FILE


def _text(file: WorkspaceFile) -> str:
    try:
        return file.text
    except NotText:
        return ""


def _cap(text: str, limit: int) -> str:
    return text if len(text) <= limit else text[:limit] + TRUNCATION_MARKER


class ContextBuilder:
    """The request's messages, from the workspace each call names (a job's scope's): built once
    per container, it keeps only the skills' rendered sections, by their files' versions."""

    def __init__(
        self,
        environ: Mapping[str, str] | None = None,
        which: Which = shutil.which,
        programs_line: Callable[[], str] | None = None,
    ) -> None:
        self._environ = environ or {}  # what skills' `requires.env` is checked against
        self._which = which  # what skills' `requires.bins` is checked against
        self._programs_line = programs_line  # the sandbox's programs, for the prompt
        # SKILL.md versions -> rendered sections, for the few scopes a container serves.
        self._skills_rendered: dict[tuple[object, ...], tuple[str, str]] = {}

    @staticmethod
    def _read(workspace: Workspace, path: str) -> str:
        file = workspace.read(path)
        if file is None:
            return ""
        try:
            return file.text.strip()
        except NotText:
            return ""

    def system_prompt(self, workspace: Workspace) -> str:
        sections = [texts.load("identity")]
        budget = MAX_BOOTSTRAP_CHARS
        for name in BOOTSTRAP_FILES:
            content = self._read(workspace, name)
            if not content or budget <= 0:
                continue
            content = _cap(content, min(MAX_FILE_CHARS, budget))
            budget -= len(content)
            sections.append(f"## {name}\n\n{content}")
        memory = self._read(workspace, MEMORY_FILE)
        if memory:
            sections.append(f"# Memory\n\n{_cap(memory, MAX_FILE_CHARS)}")
        programs = self._programs_line() if self._programs_line is not None else ""
        if programs:
            sections.append(f"# Sandbox\n\n{programs}")
        sections += self._skills_sections(workspace, programs)
        return SECTION_SEPARATOR.join(section for section in sections if section)

    def _skills_sections(self, workspace: Workspace, programs: str) -> tuple[str, str]:
        """The always-on skills and the summary, parsed and rendered again only when a
        SKILL.md's version (ETag) or the sandbox's programs (`programs`, the line that names
        what `which` finds there) changed: with hundreds of skills, doing it every turn made a
        warm turn's own time grow with their number (bench/warm_turn.py). The environment and
        PATH that skills' requirements are otherwise checked against are a container's own."""
        files = _workspace_skill_files(workspace)
        off = workspace.read(OFF_FILE)
        versions = (
            programs,
            off.etag if off else "",
            *((file.path, file.etag) for file in files),
        )
        sections = self._skills_rendered.get(versions)
        if sections is None:
            skills = load_skills(
                {file.path: _text(file) for file in files},
                self._environ,
                self._which,
                off_names(_text(off) if off else None),
            )
            sections = render_active_skills(skills), render_skills_summary(skills)
            if len(self._skills_rendered) >= SKILL_SETS_KEPT:
                self._skills_rendered.clear()
            self._skills_rendered[versions] = sections
        return sections

    def messages(
        self,
        workspace: Workspace,
        history: list[dict[str, Any]],
        user_content: str | list[dict[str, Any]],
        runtime: str,
    ) -> list[dict[str, Any]]:
        """The request: system prompt (from `workspace`), history (as first sent), and the user
        message headed by `runtime`, the rendered runtime-context block (`RuntimeContext.render`).

        The user message is text, or content parts (text and images); with parts, the
        runtime-context block is the first text part.
        """
        content: str | list[dict[str, Any]]
        if isinstance(user_content, str):
            content = _headed(runtime, user_content)
        else:
            content = [{"type": "text", "text": runtime}, *user_content]
        return [
            {"role": "system", "content": self.system_prompt(workspace)},
            *(for_model(message) for message in history),
            {"role": "user", "content": content},
        ]


def _workspace_skill_files(workspace: Workspace) -> list[WorkspaceFile]:
    """The workspace's own `skills/<name>/SKILL.md` files."""
    found = []
    for entry in workspace.list_files(SKILLS_DIR):
        parts = entry.path.split("/")
        if len(parts) == 3 and parts[2] == SKILL_FILE:
            file = workspace.read(entry.path)
            if file is not None:
                found.append(file)
    return found


_MODEL_FIELDS = ("role", "content", "tool_calls", "tool_call_id", "name")


def _headed(runtime: str, text: str) -> str:
    return f"{runtime}\n\n{text}"


def for_model(message: dict[str, Any]) -> dict[str, Any]:
    """A saved message as it was first sent: without the bookkeeping fields providers would
    reject, and a user message headed by its runtime block again.

    (A message whose images were sent inline is saved with placeholders: that one message is
    sent differently from the next turn on.)
    """
    sent = {key: value for key, value in message.items() if key in _MODEL_FIELDS}
    runtime = message.get(RUNTIME_FIELD)
    if isinstance(runtime, str) and isinstance(sent.get("content"), str):
        sent["content"] = _headed(runtime, sent["content"])
    return sent
