"""Isolation in the owner's console: every API route, for the owner, a person and a stranger,
in every scope, on in-memory fakes of every port (functions/console/).

For each route (a row) the table asserts:
- launch data missing, forged, expired, signed for another bot, or a body naming another user
  than the launch data's: 401, and nothing read or written is changed;
- a stranger (launch data Telegram signed, but a person the bot does not talk to): 403;
- a person: an owner-only route is 403; a scoped route in another person's, the owner's or a
  group's scope is 403, nothing changed; in their own scope it answers with their scope's data
  (their memory, history, jobs, model choice, spending) and no one else's;
- the owner: every route answers, a scoped one with the data of the scope asked for (their own,
  a person's, a group's) and no other scope's.

A route the console serves without a row fails `test_every_console_route_has_its_row`.

The owner is Ada (111111111, ALLOW_FROM's first id), the person Bob, the other person Dan; the
group is -1001234567890; Eve is a stranger.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from decimal import Decimal
from typing import Any

import pytest

from nanobot_lambda.adapters.telegram.inbound import session_key_for
from nanobot_lambda.core import launch_data
from nanobot_lambda.core.allowlist import Audience
from nanobot_lambda.core.cron import CronJob
from nanobot_lambda.core.inbound_events import new_hook
from nanobot_lambda.core.pairing import Asker, PairingCode, Person
from nanobot_lambda.core.scopes import Scope
from nanobot_lambda.core.usage_counts import Tally
from nanobot_lambda.functions.console.api import ConsoleApi
from nanobot_lambda.functions.console.auth import ConsoleAuth
from nanobot_lambda.functions.console.ports import ConsolePorts
from nanobot_lambda.settings import ConsoleSettings
from tests.support.fakes import (
    HeldLetter,
    MemoryDeadLetters,
    MemoryHookStore,
    MemoryJobStore,
    MemoryPairingStore,
    MemorySchedules,
    MemorySessionStore,
    MemoryTurnJournal,
    MemoryUsageStore,
    MemoryWorkspace,
)

NOW = datetime(2026, 11, 23, 12, 0, tzinfo=UTC)
BOT_TOKEN = "123456:console-isolation-token"


@dataclass(frozen=True)
class Who:
    name: str
    chat: int
    scope: str  # as the page names it

    @property
    def user(self) -> dict[str, Any]:
        return {"id": self.chat, "first_name": self.name}


OWNER = Who("owner", 111111111, "owner")
PERSON = Who("person", 222222222, "people/222222222")
OTHER = Who("other", 444444444, "people/444444444")
GROUP = Who("group", -1001234567890, "groups/1001234567890")
STRANGER = Who("stranger", 999999999, "people/999999999")
SCOPES = (OWNER, PERSON, OTHER, GROUP)
ALLOW_FROM = "111111111,222222222,444444444,-1001234567890"


def marker(kind: str, who: Who) -> str:
    return f"{kind}-OF-{who.name.upper()}"


def job(who: Who) -> CronJob:
    return CronJob(
        job_id=f"job-{who.name}",
        chat_id=who.chat,
        kind="reminder",
        message=marker("JOB", who),
        name=marker("JOB", who),
        expression="cron(0 9 * * ? *)",
        timezone="UTC",
        description="every day at 9:00",
        one_time=False,
        created_at="2026-11-01T09:00:00+00:00",
    )


@dataclass
class World:
    workspaces: dict[str, MemoryWorkspace] = field(default_factory=dict)
    jobs: MemoryJobStore = field(default_factory=MemoryJobStore)
    schedules: MemorySchedules = field(default_factory=MemorySchedules)
    hooks: MemoryHookStore = field(default_factory=MemoryHookStore)
    sessions: MemorySessionStore = field(
        default_factory=lambda: MemorySessionStore(MemoryTurnJournal())
    )
    usage: MemoryUsageStore = field(default_factory=MemoryUsageStore)
    pairing: MemoryPairingStore = field(default_factory=MemoryPairingStore)
    dead_letters: MemoryDeadLetters = field(default_factory=MemoryDeadLetters)
    welcomed: list[int] = field(default_factory=list)

    def workspace(self, scope: Scope) -> MemoryWorkspace:
        return self.workspaces.setdefault(scope.name or "owner", MemoryWorkspace())

    def state(self) -> str:
        """Everything a request could change, for comparing before and after."""
        return repr(
            (
                {name: ws.files for name, ws in sorted(self.workspaces.items())},
                self.jobs.jobs,
                self.jobs.heartbeat_is_paused,
                self.schedules.schedules,
                self.hooks.stored,
                self.hooks.delivered,
                self.sessions.preferences,
                self.pairing.persons,
                self.pairing.codes,
                self.dead_letters.letters,
                self.welcomed,
            )
        )


def make_world(switchers: str = "everyone") -> tuple[World, ConsoleApi]:
    world = World()
    for who in SCOPES:
        name = "owner" if who is OWNER else who.scope
        world.workspaces[name] = MemoryWorkspace(
            {
                "memory/MEMORY.md": f"# Memory\n\n{marker('MEMORY', who)}\n",
                "memory/HISTORY.md": (
                    f"# History\n[2026-11-20 10:00] tea with {marker('HISTORY', who)}\n"
                ),
            }
        )
        world.jobs.put(job(who))
        world.schedules.create(job(who))
        cost = Decimal(SCOPES.index(who) + 1)
        world.usage.add(who.chat, Tally(turns=1, model_calls=1, cost_usd=cost), NOW)
    world.hooks.add(new_hook("deploys", OWNER.chat, None, quiet=False, now=NOW, created_by=None))
    for code, user in (("123456", 555555555), ("654321", 666666666)):
        world.pairing.codes[code] = PairingCode(
            code, Asker(user, f"Asker {user}"), NOW + timedelta(hours=1)
        )
    world.pairing.persons[777777777] = Person(Asker(777777777, "Fay"), NOW)
    world.dead_letters.letters.append(HeldLetter("m1", "telegram:111111111", "{}"))
    settings = ConsoleSettings.from_env(
        {
            "TELEGRAM_BOT_TOKEN": BOT_TOKEN,
            "ALLOW_FROM": ALLOW_FROM,
            "PAIRING": "on",
            "WORKSPACE_BUCKET": "bucket",
            "SESSIONS_TABLE": "sessions",
            "JOBS_TABLE": "jobs",
            "SCHEDULE_GROUP": "group",
            "SCHEDULER_TARGET_ARN": "arn:aws:lambda:us-east-1:1:function:scheduler",
            "SCHEDULER_ROLE_ARN": "arn:aws:iam::1:role/scheduler",
            "TURN_QUEUE_URL": "https://sqs.us-east-1.amazonaws.com/1/turns.fifo",
            "LLM_MODEL": "openai/gpt-4.1-mini",
            "MODEL_PRESETS": "fast=openai/gpt-4.1-nano",
            "MODEL_SWITCHERS": switchers,
            "HEARTBEAT_SCHEDULE_EXPRESSION": "rate(30 minutes)",
        }
    )
    ports = ConsolePorts(
        workspace=world.workspace,
        jobs=world.jobs,
        schedules=world.schedules,
        hooks=world.hooks,
        sessions=world.sessions,
        usage=world.usage,
        pairing=world.pairing,
        welcome=world.welcomed.append,
        dead_letters=world.dead_letters,
        clock=lambda: NOW,
    )
    auth = ConsoleAuth(
        BOT_TOKEN,
        Audience(
            OWNER.chat,
            settings.allow_from,
            approved=lambda user: world.pairing.person(user) is not None,
        ),
        max_age=timedelta(hours=1),
        clock=lambda: NOW,
    )
    return world, ConsoleApi(settings, ports, auth)


def launch(who: Who, *, age: timedelta = timedelta(minutes=5), token: str = BOT_TOKEN) -> str:
    fields = {
        "user": json.dumps(who.user),
        "auth_date": str(int((NOW - age).timestamp())),
        "chat_type": "private",
    }
    return launch_data.sign(fields, token)


def ask(
    api: ConsoleApi,
    route: str,
    body: dict[str, Any],
    who: Who,
    *,
    authorization: str | None = None,
) -> tuple[int, dict[str, Any]]:
    header = authorization if authorization is not None else f"tma {launch(who)}"
    answer = api.call(route, {"authorization": header}, body)
    return answer["statusCode"], json.loads(answer["body"])


# -- the rows: each route's request, and what in its answer shows whose data it is ---------------

Body = Callable[[World, Who], dict[str, Any]]


@dataclass(frozen=True)
class Row:
    access: str  # "scoped" or "owner"
    body: Body = lambda world, target: {}
    # Whose data an answer holds: the markers of a scope found in it (None: not checked).
    shows: Callable[[Who], str] | None = None


def memory_version(world: World, target: Who) -> str:
    ws = world.workspaces.get(target.scope)
    file = ws.read("memory/MEMORY.md") if ws is not None else None
    return file.etag if file else ""


ROWS: dict[str, Row] = {
    "me": Row("scoped"),
    "memory": Row("scoped", shows=lambda who: marker("MEMORY", who)),
    "memory/save": Row(
        "scoped", lambda world, who: {"text": "edited", "version": memory_version(world, who)}
    ),
    "memory/versions": Row("scoped", shows=lambda who: marker("MEMORY", who)),
    "memory/restore": Row("scoped", lambda world, who: {"version_id": "v0", "request": "r1"}),
    "history": Row(
        "scoped", lambda world, who: {"query": "tea"}, shows=lambda who: marker("HISTORY", who)
    ),
    "skills": Row("owner"),
    "skills/read": Row("owner", lambda world, who: {"name": "weather"}),
    "skills/save": Row(
        "owner",
        lambda world, who: {
            "name": "mine",
            "text": "---\nname: mine\ndescription: Mine.\n---\nDo.",
        },
    ),
    "skills/switch": Row("owner", lambda world, who: {"name": "weather", "off": True}),
    "schedules": Row("scoped", shows=lambda who: marker("JOB", who)),
    "schedules/pause": Row("scoped", lambda world, who: {"job_id": f"job-{who.name}"}),
    "schedules/resume": Row("scoped", lambda world, who: {"job_id": f"job-{who.name}"}),
    "schedules/delete": Row("scoped", lambda world, who: {"job_id": f"job-{who.name}"}),
    "schedules/heartbeat/pause": Row("owner"),
    "schedules/heartbeat/resume": Row("owner"),
    "hooks": Row("owner"),
    "hooks/add": Row("owner", lambda world, who: {"name": "builds", "request": "r1"}),
    "hooks/remove": Row("owner", lambda world, who: {"name": "deploys"}),
    "hooks/deliveries": Row("owner", lambda world, who: {"name": "deploys"}),
    "people": Row("owner"),
    "people/approve": Row("owner", lambda world, who: {"code": "123456"}),
    "people/deny": Row("owner", lambda world, who: {"code": "654321"}),
    "people/remove": Row("owner", lambda world, who: {"person": 777777777}),
    "models": Row("scoped", shows=lambda who: f'"chat_id": {who.chat}'),
    "models/choose": Row("scoped", lambda world, who: {"thinking": "low"}),
    "spending": Row(
        "scoped", shows=lambda who: f'"total": {{"cost_usd": {SCOPES.index(who) + 1}.0'
    ),
    "activity": Row("owner"),
    "activity/replay": Row("owner", lambda world, who: {"message_id": "m1"}),
}
SCOPED = [name for name, row in ROWS.items() if row.access == "scoped"]
OWNER_ONLY = [name for name, row in ROWS.items() if row.access == "owner"]


def test_every_console_route_has_its_row() -> None:
    _, api = make_world()
    assert set(api.routes) == set(ROWS)
    assert {name: route.access for name, route in api.routes.items()} == {
        name: row.access for name, row in ROWS.items()
    }


REFUSED_LAUNCHES = {
    "missing": "",
    "not tma": "Bearer x",
    "forged": f"tma {launch(OWNER).replace('hash=', 'hash=0')}",
    "expired": f"tma {launch(OWNER, age=timedelta(hours=2))}",
    "another bot's": f"tma {launch(OWNER, token='654321:another-bot')}",
    "edited user": "tma " + launch(PERSON).replace("222222222", "111111111"),
}


@pytest.mark.parametrize("route", sorted(ROWS))
@pytest.mark.parametrize("why", sorted(REFUSED_LAUNCHES))
def test_launch_data_missing_forged_or_expired_is_401_and_touches_nothing(
    route: str, why: str
) -> None:
    world, api = make_world()
    before = world.state()
    status, _ = ask(
        api, route, ROWS[route].body(world, OWNER), OWNER, authorization=REFUSED_LAUNCHES[why]
    )
    assert status == 401
    assert world.state() == before


@pytest.mark.parametrize("route", sorted(ROWS))
def test_a_body_naming_another_user_is_401_and_touches_nothing(route: str) -> None:
    world, api = make_world()
    before = world.state()
    body = {**ROWS[route].body(world, PERSON), "user_id": OWNER.chat}
    status, _ = ask(api, route, body, PERSON)
    assert status == 401
    assert world.state() == before


@pytest.mark.parametrize("route", sorted(ROWS))
def test_a_stranger_is_403_and_touches_nothing(route: str) -> None:
    world, api = make_world()
    before = world.state()
    status, _ = ask(api, route, ROWS[route].body(world, STRANGER), STRANGER)
    assert status == 403
    assert world.state() == before


@pytest.mark.parametrize("route", OWNER_ONLY)
def test_a_person_may_not_use_the_owner_s_routes(route: str) -> None:
    world, api = make_world()
    before = world.state()
    status, _ = ask(api, route, ROWS[route].body(world, PERSON), PERSON)
    assert status == 403
    assert world.state() == before


@pytest.mark.parametrize("route", SCOPED)
@pytest.mark.parametrize("target", [OWNER, OTHER, GROUP], ids=lambda who: who.name)
def test_a_person_may_not_see_or_touch_another_scope(route: str, target: Who) -> None:
    world, api = make_world()
    before = world.state()
    body = {**ROWS[route].body(world, target), "scope": target.scope}
    status, _ = ask(api, route, body, PERSON)
    assert status == 403
    assert world.state() == before


def _holds_only(answer: dict[str, Any], row: Row, target: Who) -> None:
    if row.shows is None:
        return
    text = json.dumps(answer)
    assert row.shows(target) in text
    for other in SCOPES:
        if other is not target:
            assert row.shows(other) not in text, other.name


@pytest.mark.parametrize("route", SCOPED)
def test_a_person_sees_their_own_scope_and_no_other(route: str) -> None:
    world, api = make_world()
    row = ROWS[route]
    status, answer = ask(api, route, row.body(world, PERSON), PERSON)
    assert status == 200, answer
    _holds_only(answer, row, PERSON)
    world, api = make_world()  # their scope named, as the page names it
    status, answer = ask(api, route, {**row.body(world, PERSON), "scope": PERSON.scope}, PERSON)
    assert status == 200, answer
    _holds_only(answer, row, PERSON)


def test_only_the_owner_changes_a_chat_s_model_unless_everyone_may() -> None:
    world, api = make_world(switchers="owner")
    status, _ = ask(api, "models/choose", {"preset": "fast"}, PERSON)
    assert status == 403
    assert world.sessions.preferences == {}
    status, _ = ask(api, "models/choose", {"preset": "fast", "scope": PERSON.scope}, OWNER)
    assert status == 200
    assert world.sessions.preferences[session_key_for(PERSON.chat)].model_preset == "fast"


@pytest.mark.parametrize("route", SCOPED)
@pytest.mark.parametrize("target", SCOPES, ids=lambda who: who.name)
def test_the_owner_sees_the_scope_asked_for_and_no_other(route: str, target: Who) -> None:
    world, api = make_world()
    row = ROWS[route]
    status, answer = ask(api, route, {**row.body(world, target), "scope": target.scope}, OWNER)
    assert status == 200, answer
    _holds_only(answer, row, target)


@pytest.mark.parametrize("route", OWNER_ONLY)
def test_the_owner_uses_the_owner_s_routes(route: str) -> None:
    world, api = make_world()
    status, answer = ask(api, route, ROWS[route].body(world, OWNER), OWNER)
    assert status == 200, answer


def test_a_write_lands_in_the_scope_asked_for_only() -> None:
    world, api = make_world()
    for target in SCOPES:
        body = {"text": f"EDITED-{target.name}", "version": memory_version(world, target)}
        status, _ = ask(api, "memory/save", {**body, "scope": target.scope}, OWNER)
        assert status == 200
    for target in SCOPES:
        name = "owner" if target is OWNER else target.scope
        assert (
            world.workspaces[name].files["memory/MEMORY.md"] == f"EDITED-{target.name}\n".encode()
        )
    status, _ = ask(api, "models/choose", {"thinking": "high", "scope": GROUP.scope}, OWNER)
    assert status == 200
    assert set(world.sessions.preferences) == {session_key_for(GROUP.chat)}


def test_the_owner_pauses_the_heartbeat_and_resumes_it_and_no_one_else_may() -> None:
    world, api = make_world()
    assert ask(api, "schedules/heartbeat/pause", {}, PERSON)[0] == 403
    assert not world.jobs.heartbeat_is_paused
    status, theirs = ask(api, "schedules", {}, PERSON)
    assert status == 200 and "heartbeat" not in theirs  # the heartbeat is the owner's
    assert ask(api, "schedules/heartbeat/pause", {}, OWNER) == (200, {"paused": True})
    assert world.jobs.heartbeat_is_paused
    heartbeat = ask(api, "schedules", {}, OWNER)[1]["heartbeat"]
    assert heartbeat["paused"] is True and heartbeat["next_run"] is None
    assert ask(api, "schedules/heartbeat/resume", {}, OWNER) == (200, {"paused": False})
    heartbeat = ask(api, "schedules", {}, OWNER)[1]["heartbeat"]
    assert heartbeat["paused"] is False and heartbeat["next_run"] == "2026-11-23T12:30+00:00"
