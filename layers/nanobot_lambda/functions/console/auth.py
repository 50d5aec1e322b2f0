"""Who is asking, and which scope they may see: every console request, before anything is read.

The person is the launch data's user, as Telegram signed it (core/launch_data.py): nothing else
a request says about who it is counts, and a body that names another user (`user_id`) is refused
like forged launch data (401). They must be someone the bot talks to (ALLOW_FROM, or approved by
pairing: 403 otherwise). The scope they ask for (`scope` in the body; none: their own) is
resolved as a turn's is (core/subjects.py: `subject_in`, the chat's scope): the owner may ask
for any person's or group's, a person only for their own (403 otherwise). Without a known owner
(OWNER_ID unset and no user id in ALLOW_FROM) every chat shares the owner's workspace, so the
console serves nobody.

A launch's data is checked once per container (its Ed25519 signature is the costly part) and
its age on every request.
"""

from __future__ import annotations

from collections import OrderedDict
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any

from nanobot_lambda.core import launch_data
from nanobot_lambda.core.allowlist import Audience
from nanobot_lambda.core.errors import NanobotError
from nanobot_lambda.core.launch_data import LaunchData, LaunchRefused
from nanobot_lambda.core.scopes import Scope
from nanobot_lambda.core.subjects import subject_in

AUTHORIZATION_SCHEME = "tma"  # `Authorization: tma <initData>`, as Mini Apps send it
CHECKED_KEPT = 256  # launches whose signature this container checked


class Unauthorized(NanobotError):
    """401: no launch data, or none Telegram signed for this bot lately, or another user."""


class Forbidden(NanobotError):
    """403: a person the bot does not talk to, or a scope that is not theirs."""


@dataclass(frozen=True)
class Viewer:
    """The person the launch data names."""

    user_id: int
    name: str
    username: str | None
    is_owner: bool


@dataclass(frozen=True)
class ChatScope:
    """What a request is about: a chat (a person's private chat, or a group) and its scope."""

    chat_id: int
    scope: Scope

    @property
    def name(self) -> str:
        """As the page names it: `owner`, `people/<id>`, `groups/<id>`."""
        return self.scope.name or "owner"


class ConsoleAuth:
    def __init__(
        self,
        bot_token: str,
        audience: Audience,
        *,
        max_age: timedelta,
        clock: Callable[[], datetime],
    ) -> None:
        self._bot_token = bot_token
        self._audience = audience
        self._max_age = max_age
        self._clock = clock
        self._checked: OrderedDict[str, LaunchData] = OrderedDict()

    @property
    def owner(self) -> int | None:
        return self._audience.owner

    def viewer(self, headers: Mapping[str, str], body: Mapping[str, Any]) -> Viewer:
        """The person asking; Unauthorized or Forbidden."""
        launch = self._launch(headers)
        claimed = body.get("user_id")
        if claimed is not None and claimed != launch.user.id:
            raise Unauthorized("the request names another user than its launch data")
        user = launch.user
        owner = self._audience.owner
        if owner is None:
            raise Forbidden("no owner is known (set OWNER_ID)")
        allowed = self._audience.allow_list.allows(user.id, user.username)
        if user.id != owner and not allowed and not self._audience.approved(user.id):
            raise Forbidden("the bot does not talk to this person")
        return Viewer(user.id, user.first_name, user.username, user.id == owner)

    def _launch(self, headers: Mapping[str, str]) -> LaunchData:
        scheme, _, init_data = headers.get("authorization", "").partition(" ")
        if scheme.lower() != AUTHORIZATION_SCHEME or not init_data:
            raise Unauthorized("no launch data")
        now = self._clock()
        launch = self._checked.get(init_data)
        try:
            if launch is None:
                launch = launch_data.verify(
                    init_data, self._bot_token, now=now, max_age=self._max_age
                )
                self._checked[init_data] = launch
                if len(self._checked) > CHECKED_KEPT:
                    self._checked.popitem(last=False)
            elif launch.auth_date < now - self._max_age:
                raise LaunchRefused("the launch data has expired")
        except LaunchRefused as refused:
            raise Unauthorized(str(refused)) from None
        return launch

    def chat_scope(self, viewer: Viewer, requested: object) -> ChatScope:
        """The chat and scope `requested` names (`owner`, `people/<id>`, `groups/<id>`; none:
        the viewer's own), if the viewer may see it; Forbidden otherwise."""
        chat_id = viewer.user_id if requested in (None, "") else _chat_named(requested, self.owner)
        if chat_id is None:
            raise Forbidden("no such scope")
        if not viewer.is_owner and chat_id != viewer.user_id:
            raise Forbidden("a person sees only their own scope")
        person = chat_id if chat_id > 0 else None
        subject = subject_in(chat_id, thread_id=None, person_id=person, owner=self.owner)
        return ChatScope(chat_id, subject.scope)


def _chat_named(requested: object, owner: int | None) -> int | None:
    """The chat a scope's name stands for: its person's private chat, or the group."""
    if not isinstance(requested, str):
        return None
    if requested == "owner":
        return owner
    kind, _, number = requested.partition("/")
    if not (number.isascii() and number.isdigit()) or number.startswith("0"):
        return None
    if kind == "people":
        return int(number)
    if kind == "groups":
        return -int(number)
    return None
