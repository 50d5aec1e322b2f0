"""The console's HTTP API: `POST /console/api/<route>`, each request's launch data checked and its
scope resolved before its view runs (auth.py), and `GET /console`, the page (page.py).

Every route is in `ROUTES` with who may use it: `scoped` routes serve the viewer's own scope, or
for the owner any scope the request names; `owner` routes serve the owner alone. Nothing is read
or written before the launch data is checked: missing, forged, expired or another user's is 401,
a person the bot does not talk to or a scope not theirs 403 (tests/unit/test_console_isolation.py
has a row for every route).

A request is JSON in (`{"scope": …, …}`), JSON out; the launch data is in the `Authorization`
header (`tma <initData>`, the Mini Apps convention). Errors are `{"error": "…"}` with their
status; the storage being unreachable is 503, for the page to try again.
"""

from __future__ import annotations

import base64
import binascii
import json
import logging
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any, Literal

from nanobot_lambda.core.errors import NotFound, StorageError
from nanobot_lambda.core.model_choice import ModelMenu
from nanobot_lambda.functions.console.activity import ActivityViews
from nanobot_lambda.functions.console.auth import (
    ChatScope,
    ConsoleAuth,
    Forbidden,
    Unauthorized,
    Viewer,
)
from nanobot_lambda.functions.console.chats import known_chats
from nanobot_lambda.functions.console.hooks import HookViews
from nanobot_lambda.functions.console.memory import MemoryViews
from nanobot_lambda.functions.console.models import ModelViews
from nanobot_lambda.functions.console.page import ConsolePage
from nanobot_lambda.functions.console.people import PeopleViews
from nanobot_lambda.functions.console.ports import ConsoleError, ConsolePorts
from nanobot_lambda.functions.console.schedules import ScheduleViews
from nanobot_lambda.functions.console.skills import SkillViews
from nanobot_lambda.functions.console.spending import SpendingViews
from nanobot_lambda.settings import ConsoleSettings

logger = logging.getLogger(__name__)

PAGE_PATH = "/console"
API_PREFIX = "/console/api/"
BODY_MAX_BYTES = 300_000
JSON_HEADERS = {
    "Content-Type": "application/json; charset=utf-8",
    "Cache-Control": "no-store",
    "X-Content-Type-Options": "nosniff",
}

View = Callable[[ChatScope, dict[str, Any], Viewer], dict[str, Any]]
Access = Literal["scoped", "owner"]


@dataclass(frozen=True)
class Route:
    access: Access
    view: View


class ConsoleApi:
    def __init__(self, settings: ConsoleSettings, ports: ConsolePorts, auth: ConsoleAuth) -> None:
        self._auth = auth
        self._ports = ports
        owner = settings.owner
        allow = settings.allow_from
        memory = MemoryViews(ports)
        skills = SkillViews(ports)
        schedules = ScheduleViews(
            ports, heartbeat=settings.heartbeat_schedule, timezone=settings.timezone
        )
        hooks = HookViews(ports, settings.hooks_url)
        people = PeopleViews(ports, allow, owner)
        menu = ModelMenu(
            settings.model_presets,
            default_model=settings.llm_model or "",
            default_thinking=settings.llm_thinking,
            switchers=settings.model_switchers,
        )
        models = ModelViews(
            ports,
            menu,
            settings.model_presets,
            default_model=settings.llm_model,
            default_thinking=settings.llm_thinking,
            owner=owner,
        )
        spending = SpendingViews(
            ports,
            settings.spend_limits,
            timezone=settings.timezone,
            allow_list=allow,
            owner=owner,
        )
        activity = ActivityViews(
            ports, allow_list=allow, owner=owner, turn_queue_url=settings.turn_queue_url
        )
        self._allow = allow
        self.routes: dict[str, Route] = {
            "me": Route("scoped", self._me),
            "memory": Route("scoped", _plain(memory.memory)),
            "memory/save": Route("scoped", _plain(memory.save)),
            "memory/versions": Route("scoped", _plain(memory.versions)),
            "memory/restore": Route("scoped", _plain(memory.restore)),
            "history": Route("scoped", _plain(memory.history)),
            "skills": Route("owner", _plain(skills.skills)),
            "skills/read": Route("owner", _plain(skills.read)),
            "skills/save": Route("owner", _plain(skills.save)),
            "skills/switch": Route("owner", _plain(skills.switch)),
            "schedules": Route("scoped", _plain(schedules.schedules)),
            "schedules/pause": Route("scoped", _plain(schedules.pause)),
            "schedules/resume": Route("scoped", _plain(schedules.resume)),
            "schedules/delete": Route("scoped", _plain(schedules.delete)),
            "schedules/heartbeat/pause": Route("owner", _plain(schedules.pause_heartbeat)),
            "schedules/heartbeat/resume": Route("owner", _plain(schedules.resume_heartbeat)),
            "hooks": Route("owner", _plain(hooks.hooks)),
            "hooks/add": Route("owner", hooks.add),
            "hooks/remove": Route("owner", _plain(hooks.remove)),
            "hooks/deliveries": Route("owner", _plain(hooks.deliveries)),
            "people": Route("owner", _plain(people.people)),
            "people/approve": Route("owner", _plain(people.approve)),
            "people/deny": Route("owner", _plain(people.deny)),
            "people/remove": Route("owner", _plain(people.remove)),
            "models": Route("scoped", models.models),
            "models/choose": Route("scoped", models.choose),
            "spending": Route("scoped", _plain(spending.spending)),
            "activity": Route("owner", _plain(activity.activity)),
            "activity/replay": Route("owner", _plain(activity.replay)),
        }

    def handle(self, event: Mapping[str, Any], page: ConsolePage) -> dict[str, Any]:
        """An API Gateway (payload format 2.0) request: the page, an API route, or 404."""
        method = str(event.get("requestContext", {}).get("http", {}).get("method", "GET"))
        path = str(event.get("rawPath", ""))
        if path == PAGE_PATH and method in ("GET", "HEAD"):
            return page.response(event.get("headers") or {})
        if not path.startswith(API_PREFIX) or method != "POST":
            return _json(404, {"error": "not found"})
        return self.call(path[len(API_PREFIX) :], event.get("headers") or {}, _body(event))

    def call(
        self, name: str, headers: Mapping[str, str], body: dict[str, Any] | None
    ) -> dict[str, Any]:
        """One API request: (route name, lower-case headers, the JSON body or None if it was
        none) to its answer."""
        try:
            viewer = self._auth.viewer(headers, body or {})
        except Unauthorized as refused:
            logger.info("console request refused: %s", refused, extra={"route": name[:40]})
            return _json(401, {"error": "open the console from Telegram again"})
        except Forbidden as refused:
            return _json(403, {"error": str(refused)})
        route = self.routes.get(name)
        if route is None:
            return _json(404, {"error": "no such route"})
        if body is None:
            return _json(400, {"error": "the request's body must be a JSON object"})
        if route.access == "owner" and not viewer.is_owner:
            return _json(403, {"error": "only the owner may do this"})
        try:
            target = self._auth.chat_scope(viewer, body.get("scope"))
            answer = route.view(target, body, viewer)
        except Forbidden as refused:
            return _json(403, {"error": str(refused)})
        except ConsoleError as error:
            return _json(error.status, {"error": str(error), **error.details})
        except NotFound as error:
            return _json(404, {"error": str(error)})
        except StorageError:
            logger.exception("console: storage unavailable", extra={"route": name})
            return _json(503, {"error": "storage unavailable: try again"})
        logger.info("console request", extra={"route": name, "viewer": viewer.user_id})
        return _json(200, answer)

    def _me(self, target: ChatScope, body: dict[str, Any], viewer: Viewer) -> dict[str, Any]:
        owner = self._auth.owner
        chats = (
            [chat.shown() for chat in known_chats(self._ports, self._allow, owner)]
            if viewer.is_owner and owner is not None
            else [{"chat_id": viewer.user_id, "scope": target.name, "label": "You"}]
        )
        return {
            "user_id": viewer.user_id,
            "name": viewer.name,
            "is_owner": viewer.is_owner,
            "scope": target.name,
            "chats": chats,
        }


def _plain(view: Callable[[ChatScope, dict[str, Any]], dict[str, Any]]) -> View:
    """A view that does not need to know who asks (only the scope it was given)."""
    return lambda target, body, viewer: view(target, body)


def _body(event: Mapping[str, Any]) -> dict[str, Any] | None:
    raw = event.get("body") or ""
    try:
        data = base64.b64decode(raw) if event.get("isBase64Encoded") else str(raw).encode()
    except (binascii.Error, ValueError):
        return None
    if len(data) > BODY_MAX_BYTES:
        return None
    try:
        parsed = json.loads(data or b"{}")
    except ValueError:
        return None
    return parsed if isinstance(parsed, dict) else None


def _json(status: int, payload: Mapping[str, Any]) -> dict[str, Any]:
    return {
        "statusCode": status,
        "headers": dict(JSON_HEADERS),
        "body": json.dumps(payload, ensure_ascii=False, default=str),
    }
