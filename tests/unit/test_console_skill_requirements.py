"""The console's Skills (functions/console/skills.py): each skill's requirements judged against
what agent_turn last recorded it checks them against (the sandbox's programs, its environment's
names), never by asking the sandbox; unknown while nothing is recorded."""

from __future__ import annotations

from typing import Any

from nanobot_lambda.core.skill_requirements import RequirementsSeen
from tests.unit.test_console_isolation import OWNER, World, ask, make_world

SKILL = "---\nname: {name}\ndescription: Uses {name}.\nrequires:\n{requires}---\nDo it.\n"
SKILLS = {
    "video": "  bins: [ffmpeg]\n",
    "vcs": "  bins: [git]\n",
    "search": "  env: [BRAVE_API_KEY]\n",
    "both": "  bins: [ffmpeg]\n  env: [MISSING_KEY]\n",
}


def skills(world: World, api: Any) -> dict[str, dict[str, Any]]:
    owner = world.workspaces["owner"]
    for name, requires in SKILLS.items():
        text = SKILL.format(name=name, requires=requires)
        owner.files[f"skills/{name}/SKILL.md"] = text.encode()
    status, answer = ask(api, "skills", {}, OWNER)
    assert status == 200, answer
    return {skill["name"]: skill for skill in answer["skills"] if skill["name"] in SKILLS}


def test_requirements_are_unknown_until_agent_turn_records_what_it_checks_them_against() -> None:
    world, api = make_world()
    shown = skills(world, api)
    assert shown["video"]["met"] == {"bin:ffmpeg": None}
    assert {skill["available"] for skill in shown.values()} == {None}
    assert ask(api, "skills", {}, OWNER)[1]["checked"] is None


def test_each_requirement_is_met_or_missing_as_agent_turn_saw_it() -> None:
    world, api = make_world()
    world.jobs.record_requirements_seen(
        RequirementsSeen(
            frozenset({"ffmpeg", "python3"}), frozenset({"BRAVE_API_KEY"}), "2026-11-23T11:00:00"
        )
    )
    shown = skills(world, api)
    assert (shown["video"]["met"], shown["video"]["available"]) == ({"bin:ffmpeg": True}, True)
    assert (shown["vcs"]["met"], shown["vcs"]["available"]) == ({"bin:git": False}, False)
    assert shown["search"]["available"] is True
    assert shown["both"]["met"] == {"bin:ffmpeg": True, "env:MISSING_KEY": False}
    assert shown["both"]["available"] is False
    checked = ask(api, "skills", {}, OWNER)[1]["checked"]
    assert checked == {"at": "2026-11-23T11:00:00", "sandbox": True}


def test_without_a_sandbox_programs_are_unknown_and_variables_known() -> None:
    world, api = make_world()
    world.jobs.record_requirements_seen(
        RequirementsSeen(None, frozenset({"BRAVE_API_KEY"}), "2026-11-23T11:00:00")
    )
    shown = skills(world, api)
    assert (shown["video"]["met"], shown["video"]["available"]) == ({"bin:ffmpeg": None}, None)
    assert shown["search"]["available"] is True
    assert shown["both"]["available"] is False  # its variable is missing whatever the programs
