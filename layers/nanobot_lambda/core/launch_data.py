"""A Telegram Mini App's launch data (`initData`): who opened it, as Telegram signed it.

Telegram hands a Mini App a query string (`Telegram.WebApp.initData`: `user`, `auth_date`,
`query_id` or `chat_instance`/`chat_type`, `signature`, `hash`). The console's page sends it
with every request and the console trusts nothing else about who is asking (README "Console").

Checked, as Telegram documents ("Validating data received via the Mini App"):
- `hash`: HMAC-SHA256 of the data-check-string (every field but `hash`, as `key=value`, sorted,
  joined by line feeds), keyed with HMAC-SHA256("WebAppData", bot token); compared in constant
  time;
- `signature`, where present (Telegram adds it for third-party validation): Ed25519 of the
  same fields but `hash` and `signature`, after the line `<bot id>:WebAppData`, by Telegram's
  key (production's, or the test environment's);
- `auth_date`: not older than `max_age` (nor more than a minute ahead of this clock).

A field given twice, a missing or malformed `hash`, `auth_date` or `user` is refused like a
forged one: `LaunchRefused`, which names the reason for the log (never the data).
"""

from __future__ import annotations

import base64
import binascii
import hashlib
import hmac
import json
from collections.abc import Mapping
from dataclasses import dataclass
from datetime import datetime, timedelta
from urllib.parse import parse_qsl, quote, urlencode

from nanobot_lambda.core import ed25519
from nanobot_lambda.core.errors import NanobotError

# Telegram's Ed25519 public keys for the `signature` field (production, test environment).
TELEGRAM_PUBLIC_KEYS = (
    bytes.fromhex("e7bf03a2fa4602af4580703d88dda5bb59f32ed8b02a56c187fe7d34caed242d"),
    bytes.fromhex("40055058a4ee38156a06562e52eece92a771bcd8346a8c4615cb7376eddf72ec"),
)
CLOCK_SKEW = timedelta(minutes=1)
MAX_LENGTH = 8192  # launch data is a few hundred bytes; anything much longer is not Telegram's


class LaunchRefused(NanobotError):
    """Launch data that is missing, forged, malformed or too old."""


@dataclass(frozen=True)
class LaunchUser:
    id: int
    first_name: str
    username: str | None = None


@dataclass(frozen=True)
class LaunchData:
    user: LaunchUser
    auth_date: datetime
    fields: Mapping[str, str]


def _secret_key(bot_token: str) -> bytes:
    return hmac.new(b"WebAppData", bot_token.encode(), hashlib.sha256).digest()


def _check_string(fields: Mapping[str, str], leave_out: tuple[str, ...]) -> str:
    return "\n".join(
        f"{key}={value}" for key, value in sorted(fields.items()) if key not in leave_out
    )


def _fields(init_data: str) -> dict[str, str]:
    if not init_data or len(init_data) > MAX_LENGTH:
        raise LaunchRefused("no launch data" if not init_data else "launch data too long")
    try:
        pairs = parse_qsl(init_data, keep_blank_values=True, strict_parsing=True)
    except ValueError:
        raise LaunchRefused("launch data is not a query string") from None
    fields = dict(pairs)
    if len(fields) != len(pairs):
        raise LaunchRefused("a field of the launch data is given twice")
    return fields


def verify(init_data: str, bot_token: str, *, now: datetime, max_age: timedelta) -> LaunchData:
    """The launch data's user and time if Telegram signed it for this bot and it is recent;
    LaunchRefused otherwise."""
    fields = _fields(init_data)
    given = fields.get("hash", "")
    expected = hmac.new(
        _secret_key(bot_token), _check_string(fields, ("hash",)).encode(), hashlib.sha256
    ).hexdigest()
    if not hmac.compare_digest(given.encode(), expected.encode()):
        raise LaunchRefused("the launch data's hash is not this bot's")
    if "signature" in fields and not _signed_by_telegram(fields, bot_token):
        raise LaunchRefused("the launch data's signature is not Telegram's")
    try:
        auth_date = datetime.fromtimestamp(int(fields["auth_date"]), now.tzinfo)
    except (KeyError, ValueError, OverflowError, OSError):
        raise LaunchRefused("the launch data has no valid auth_date") from None
    if auth_date < now - max_age or auth_date > now + CLOCK_SKEW:
        raise LaunchRefused("the launch data has expired")
    return LaunchData(_user(fields.get("user")), auth_date, fields)


def _signed_by_telegram(fields: Mapping[str, str], bot_token: str) -> bool:
    bot_id = bot_token.partition(":")[0]
    try:
        signature = base64.urlsafe_b64decode(fields["signature"] + "==")
    except (binascii.Error, ValueError):
        return False
    message = f"{bot_id}:WebAppData\n{_check_string(fields, ('hash', 'signature'))}".encode()
    return any(ed25519.verify(key, message, signature) for key in TELEGRAM_PUBLIC_KEYS)


def _user(raw: str | None) -> LaunchUser:
    try:
        user = json.loads(raw or "")
        user_id = user["id"]
    except (ValueError, TypeError, KeyError):
        raise LaunchRefused("the launch data names no user") from None
    if not isinstance(user_id, int) or isinstance(user_id, bool) or user_id <= 0:
        raise LaunchRefused("the launch data names no user")
    username = user.get("username")
    return LaunchUser(
        user_id, str(user.get("first_name", "")), username if isinstance(username, str) else None
    )


def sign(fields: Mapping[str, str], bot_token: str) -> str:
    """Launch data as Telegram would make it for this bot (its `hash`; no `signature`, which
    only Telegram's key can make): the local stack opens the console with it."""
    digest = hmac.new(
        _secret_key(bot_token), _check_string(fields, ("hash",)).encode(), hashlib.sha256
    ).hexdigest()
    return urlencode({**fields, "hash": digest}, quote_via=quote)
