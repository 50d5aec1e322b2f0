"""The part of Telegram that reads the webhook's answer: a 2xx JSON body holding `method` asks
Telegram to make that Bot API call for the bot, with the body's other fields as its parameters
(Bot API, "making requests when getting updates"). Telegram makes it once and never says
whether it worked. The local stack (against its Bot API stand-in) and `poll` (against real
Telegram) play that part with this.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any


def reply_method(response: Mapping[str, Any]) -> tuple[str, dict[str, Any]] | None:
    """(method, parameters) a webhook's HTTP answer (`statusCode`, JSON `body`) asks Telegram
    to call, or None. Parameters the method does not take (the webhook's `ok`, `status`) are
    passed on too: Telegram ignores them."""
    if not 200 <= int(response.get("statusCode", 500)) < 300:
        return None
    try:
        body = json.loads(response.get("body") or "{}")
    except ValueError:
        return None
    if not isinstance(body, dict) or not isinstance(body.get("method"), str):
        return None
    return body["method"], {key: value for key, value in body.items() if key != "method"}
