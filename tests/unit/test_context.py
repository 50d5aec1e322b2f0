"""The system prompt: fixed order, missing files skipped, capped, byte-stable across turns."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from typing import Any

import pytest

from nanobot_lambda.core import context, texts
from nanobot_lambda.core.context import (
    MAX_FILE_CHARS,
    SECTION_SEPARATOR,
    TRUNCATION_MARKER,
    ContextBuilder,
    RuntimeContext,
)
from tests.support.fakes import MemoryWorkspace

FILES = {
    "AGENTS.md": "agents rules",
    "SOUL.md": "soul text",
    "USER.md": "user facts",
    "TOOLS.md": "tool notes",
    "IDENTITY.md": "identity text",
    "memory/MEMORY.md": "remembered fact",
}


def runtime(now: datetime) -> str:
    return RuntimeContext(now, "Europe/Paris", "telegram", "111111111").render()


def test_sections_in_order() -> None:
    prompt = ContextBuilder().system_prompt(MemoryWorkspace(FILES))
    sections = prompt.split(SECTION_SEPARATOR)
    assert sections[0] == texts.load("identity")
    assert sections[1:7] == [
        "## AGENTS.md\n\nagents rules",
        "## SOUL.md\n\nsoul text",
        "## USER.md\n\nuser facts",
        "## TOOLS.md\n\ntool notes",
        "## IDENTITY.md\n\nidentity text",
        "# Memory\n\nremembered fact",
    ]
    # Then the always-on skills in full (the built-in memory skill), then every skill summarised.
    assert sections[7].startswith("## Skill: memory\nBase directory: skills/memory")
    assert sections[8].startswith(texts.load("skills_preamble"))
    assert "<location>skills/weather/SKILL.md</location>" in sections[8]
    assert len(sections) == 9


def test_missing_and_empty_files_are_skipped() -> None:
    prompt = ContextBuilder().system_prompt(MemoryWorkspace({"SOUL.md": "soul", "USER.md": "  \n"}))
    assert "## SOUL.md" in prompt
    assert "## USER.md" not in prompt
    assert "## AGENTS.md" not in prompt
    sections = prompt.split(SECTION_SEPARATOR)
    assert not any(section.startswith("# Memory\n") for section in sections)


def test_large_files_are_capped_with_a_marker() -> None:
    prompt = ContextBuilder().system_prompt(
        MemoryWorkspace({"USER.md": "u" * (MAX_FILE_CHARS * 3)})
    )
    assert TRUNCATION_MARKER in prompt
    assert prompt.count("u") < MAX_FILE_CHARS + 200


def test_system_prompt_is_byte_identical_across_time() -> None:
    builder, files = ContextBuilder(), MemoryWorkspace(FILES)
    now = datetime(2026, 11, 22, 9, 0, tzinfo=UTC)
    first = builder.messages(files, [], "hello", runtime(now))
    later = builder.messages(files, [], "hello", runtime(now + timedelta(minutes=7)))
    assert first[0] == later[0]
    assert first[-1] != later[-1]  # the time lives in the user message


def test_runtime_context_is_on_the_user_message_and_tagged() -> None:
    now = datetime(2026, 7, 1, 10, 30, tzinfo=UTC)
    messages = ContextBuilder().messages(MemoryWorkspace(), [], "What time is it?", runtime(now))
    user = messages[-1]
    assert user["role"] == "user"
    assert user["content"].startswith("[Runtime context: metadata, not instructions]")
    assert "2026-07-01 12:30 (Wednesday)" in user["content"]  # Paris, summer time
    assert "Europe/Paris, UTC+02:00" in user["content"]
    assert "Chat: 111111111" in user["content"]
    assert user["content"].endswith("\n\nWhat time is it?")
    assert "2026" not in messages[0]["content"]


def test_standing_lines_are_left_out_while_an_earlier_block_states_them_alike() -> None:
    now = datetime(2026, 7, 1, 10, 30, tzinfo=UTC)
    first = runtime(now)
    later = RuntimeContext(now, "Europe/Paris", "telegram", "111111111").render([first])
    assert later == "[Runtime context: 2026-07-01 12:30 (Wednesday)]"  # the time alone
    # The newest block that states a line counts: a change is stated, and stated only once.
    moved = RuntimeContext(now, "America/New_York", "telegram", "111111111")
    restated = moved.render([first, later])
    assert "Timezone: America/New_York, UTC-04:00" in restated
    assert "Chat:" not in restated and "Channel:" not in restated
    assert moved.render([first, later, restated]).startswith("[Runtime context: 2026-07-01 06:30")
    # Recalled entries need the full block, and a recalled line is never read as a stated one.
    recalled = RuntimeContext(now, "Europe/Paris", "telegram", "111111111", ("Chat: 2",))
    block = recalled.render([first])
    assert block.startswith("[Runtime context: metadata, not instructions]\nTime: ")
    assert "- Chat: 2" in block and "Timezone:" not in block
    assert "Chat: 111111111" not in RuntimeContext(
        now, "Europe/Paris", "telegram", "111111111"
    ).render([first, block])


def test_history_goes_between_system_and_user_without_bookkeeping_fields() -> None:
    history = [
        {"role": "user", "content": "earlier", "message_id": 3, "update_id": 9},
        {"role": "assistant", "content": "reply"},
    ]
    messages = ContextBuilder().messages(
        MemoryWorkspace(), history, "now", runtime(datetime.now(UTC))
    )
    assert messages[1:3] == [
        {"role": "user", "content": "earlier"},
        {"role": "assistant", "content": "reply"},
    ]


def test_an_edited_skill_shows_on_the_next_turn() -> None:
    """Skill frontmatter is parsed once per text: an edit is a new text, so it is seen."""
    skill = "---\nname: tea\ndescription: {}\n---\n# Tea\n"
    workspace = MemoryWorkspace({"skills/tea/SKILL.md": skill.format("Brew green tea.")})
    builder = ContextBuilder()
    assert "<description>Brew green tea.</description>" in builder.system_prompt(workspace)
    assert "<description>Brew green tea.</description>" in builder.system_prompt(workspace)
    workspace.files["skills/tea/SKILL.md"] = skill.format("Brew black tea.").encode()
    prompt = builder.system_prompt(workspace)
    assert "<description>Brew black tea.</description>" in prompt
    assert "green" not in prompt


def test_skills_are_parsed_again_only_when_a_skill_md_changes(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """With hundreds of skills, parsing and rendering them every turn made a warm turn grow
    with their number (issue 31): the sections are kept per set of SKILL.md versions."""
    loads = []
    real = context.load_skills

    def counted(*args: Any, **kwargs: Any) -> Any:
        loads.append(1)
        return real(*args, **kwargs)

    monkeypatch.setattr(context, "load_skills", counted)
    skill = "---\nname: {0}\ndescription: Does {0}.\n---\n# {0}\n"
    workspace = MemoryWorkspace({f"skills/s{n}/SKILL.md": skill.format(f"s{n}") for n in range(3)})
    builder = ContextBuilder()
    first = builder.system_prompt(workspace)
    assert builder.system_prompt(workspace) == first
    assert len(loads) == 1

    workspace.files["skills/s1/SKILL.md"] = skill.format("s1-edited").encode()
    assert "<description>Does s1-edited.</description>" in builder.system_prompt(workspace)
    workspace.files["skills/s3/SKILL.md"] = skill.format("s3").encode()  # a new skill
    assert "<name>s3</name>" in builder.system_prompt(workspace)
    del workspace.files["skills/s0/SKILL.md"]  # a skill removed
    assert "<name>s0</name>" not in builder.system_prompt(workspace)
    assert len(loads) == 4

    workspace.files["skills/s0/SKILL.md"] = skill.format("s0").encode()  # back as it was
    workspace.files["skills/s1/SKILL.md"] = skill.format("s1").encode()
    del workspace.files["skills/s3/SKILL.md"]
    assert builder.system_prompt(workspace) == first
    assert len(loads) == 4  # that set of versions was rendered before


def test_a_skill_turned_off_is_left_out_of_the_prompt_and_back_when_on() -> None:
    always = "---\ndescription: Always brew tea.\nalways: true\n---\nBrew it strong."
    workspace = MemoryWorkspace({"skills/tea/SKILL.md": always, "skills/.off": "tea\nweather\n"})
    builder = ContextBuilder()
    prompt = builder.system_prompt(workspace)
    assert "Brew it strong." not in prompt and "<name>tea</name>" not in prompt
    assert "<name>weather</name>" not in prompt  # a built-in one too
    assert "<name>cron</name>" in prompt
    workspace.write("skills/.off", b"weather\n")  # tea on again (the console's switch)
    prompt = builder.system_prompt(workspace)
    assert "Brew it strong." in prompt and "<name>tea</name>" in prompt
    assert "<name>weather</name>" not in prompt
