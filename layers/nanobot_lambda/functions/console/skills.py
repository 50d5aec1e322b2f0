"""Skills (the owner's: skills are shared by every scope): the list, each SKILL.md to read and
edit, and the switch that turns one off and on.

A SKILL.md is saved only if the loader would read its frontmatter (core/skills.py:
`parse_skill`, the same checks a turn applies): one it would list as unavailable for its
frontmatter is refused (422) with the loader's own words, and a YAML problem the loader works
around is shown as a warning. The save is conditional on the version read, like MEMORY.md's. A
built-in skill is edited by saving a workspace copy, which overrides it (as a file tool's write
would).

Whether a skill's requirements are met (`requires.bins` in the code sandbox, `requires.env` in
agent_turn's environment) is known where the turns run: the console may not ask the sandbox (its
role invokes no function) and has an environment of its own, so it judges each requirement
against what an agent_turn container last recorded (core/skill_requirements.py): met, missing,
or unknown (nothing recorded yet; a program without a sandbox). A skill is available when it
loads and every requirement is met, unavailable when one is missing, else not known.
"""

from __future__ import annotations

import re
from typing import Any

from nanobot_lambda.core.scopes import OWNER
from nanobot_lambda.core.skill_requirements import requirement_met
from nanobot_lambda.core.skills import (
    OFF_FILE,
    SKILL_FILE,
    SKILLS_DIR,
    Skill,
    builtin_skill_files,
    load_skills,
    off_names,
    off_text,
    parse_skill,
)
from nanobot_lambda.core.workspace import NotText, WriteConflict, update_text
from nanobot_lambda.functions.console.auth import ChatScope
from nanobot_lambda.functions.console.ports import ConsoleError, ConsolePorts, ScopeFiles
from nanobot_lambda.functions.console.requests import bool_field, text_field

SKILL_NAME = re.compile(r"[a-z0-9][a-z0-9_-]{0,63}")
SKILL_MAX_CHARS = 100_000
_ALL_MET: dict[str, str] = {}


class SkillViews:
    def __init__(self, ports: ConsolePorts) -> None:
        self._ports = ports

    def _files(self) -> ScopeFiles:
        return self._ports.workspace(OWNER)

    def _skills(self) -> list[Skill]:
        files = self._files()
        texts: dict[str, str] = {}
        for entry in files.list_files(SKILLS_DIR):
            parts = entry.path.split("/")
            if len(parts) == 3 and parts[2] == SKILL_FILE:
                file = files.read(entry.path, fresh=True)
                if file is not None:
                    texts[entry.path] = _text(file)
        off = files.read(OFF_FILE, fresh=True)
        # Requirements listed as such (where the turn runs decides whether they are met).
        return load_skills(texts, {}, lambda _: None, off_names(_text(off) if off else None))

    def skills(self, target: ChatScope, body: dict[str, Any]) -> dict[str, Any]:
        seen = self._ports.jobs.requirements_seen()
        shown = []
        for skill in self._skills():
            met = {requirement: requirement_met(requirement, seen) for requirement in skill.missing}
            shown.append(
                {
                    "name": skill.name,
                    "description": skill.description,
                    "source": skill.source,
                    "always": skill.always,
                    "off": skill.off,
                    "error": skill.error,
                    "warning": skill.warning,
                    "requires": list(skill.missing),
                    "met": met,  # each requirement: true, false, or null (not known)
                    "available": _available(skill, list(met.values())),
                }
            )
        return {
            "skills": shown,
            "checked": None
            if seen is None
            else {"at": seen.recorded_at, "sandbox": seen.programs is not None},
        }

    def read(self, target: ChatScope, body: dict[str, Any]) -> dict[str, Any]:
        name = _name(body)
        path = f"{SKILLS_DIR}/{name}/{SKILL_FILE}"
        file = self._files().read(path, fresh=True)
        if file is not None:
            return {"name": name, "text": _text(file), "version": file.etag, "source": "workspace"}
        builtin = builtin_skill_files().get(path)
        if builtin is None:
            raise ConsoleError(404, f"no skill {name}")
        return {"name": name, "text": builtin, "version": "", "source": "builtin"}

    def save(self, target: ChatScope, body: dict[str, Any]) -> dict[str, Any]:
        name = _name(body)
        text = text_field(body, "text", SKILL_MAX_CHARS)
        version = body.get("version") or None
        checked = parse_skill(name, text, "workspace", _ALL_MET, lambda binary: binary)
        if checked.error:
            raise ConsoleError(422, f"not saved: {checked.error}")
        path = f"{SKILLS_DIR}/{name}/{SKILL_FILE}"
        files = self._files()
        try:
            if version:
                files.write(path, text.encode("utf-8"), if_match=str(version))
            else:
                files.write(path, text.encode("utf-8"), if_none_match=True)
        except WriteConflict:
            raise ConsoleError(409, f"{name}'s SKILL.md changed since you opened it") from None
        saved = self.read(target, {"name": name})
        return {**saved, "warning": checked.warning}

    def switch(self, target: ChatScope, body: dict[str, Any]) -> dict[str, Any]:
        name = _name(body)
        off = bool_field(body, "off")
        if not any(skill.name == name for skill in self._skills()):
            raise ConsoleError(404, f"no skill {name}")

        def change(current: str | None) -> str | None:
            names = off_names(current)
            wanted = names | {name} if off else names - {name}
            return None if wanted == names else off_text(wanted)

        update_text(self._files(), OFF_FILE, change)
        return {"name": name, "off": off}


def _available(skill: Skill, met: list[bool | None]) -> bool | None:
    if skill.error or False in met:
        return False
    return None if None in met else True


def _name(body: dict[str, Any]) -> str:
    name = text_field(body, "name", 64)
    if not SKILL_NAME.fullmatch(name):
        raise ConsoleError(400, "a skill's name is lowercase letters, digits, - and _")
    return name


def _text(file: Any) -> str:
    try:
        return str(file.text)
    except NotText:
        return ""
