"""The console's page: one HTML document with its style and script inline (page/), served by
`GET /console`, built once per container.

No build step, no library: plain JavaScript. In Telegram the page loads Telegram's
`telegram-web-app.js` from telegram.org (the Mini Apps convention), which gives it the launch
data, the theme, the Back and Main buttons; opened in a browser (the local stack's URL, the
tests), `page/telegram_shim.js` stands in for it, reading the launch data from the URL's
fragment (`#tgWebAppData=…`, as Telegram passes it) and nothing else.

The Content-Security-Policy allows exactly the inline script and style (by their hashes),
telegram.org's script, and requests to this API: no other origin, no inline handler, no frame
of another site's.
"""

from __future__ import annotations

import base64
import gzip
import hashlib
from collections.abc import Mapping
from importlib import resources
from typing import Any

TELEGRAM_SCRIPT = "https://telegram.org/js/telegram-web-app.js"
PAGE_FILES = ("console.html", "console.css", "telegram_shim.js", "console.js")


def _read(name: str) -> str:
    return (resources.files(__package__) / "page" / name).read_text(encoding="utf-8")


def _sha256(text: str) -> str:
    return "'sha256-" + base64.b64encode(hashlib.sha256(text.encode()).digest()).decode() + "'"


class ConsolePage:
    def __init__(self) -> None:
        html, style, shim, script = (_read(name) for name in PAGE_FILES)
        inline_script = f"{shim}\n{script}"
        self.html = (
            html.replace("{{style}}", style)
            .replace("{{script}}", inline_script)
            .replace("{{telegram_script}}", TELEGRAM_SCRIPT)
        )
        self.policy = "; ".join(
            (
                "default-src 'none'",
                f"script-src {_sha256(inline_script)} {TELEGRAM_SCRIPT}",
                f"style-src {_sha256(style)}",
                "connect-src 'self'",
                "img-src data:",
                "base-uri 'none'",
                "form-action 'none'",
            )
        )
        self._body = self.html.encode()
        self._gzipped = gzip.compress(self._body, compresslevel=9, mtime=0)

    def response(self, headers: Mapping[str, str]) -> dict[str, Any]:
        """The page, gzipped for a client that takes it (every browser does)."""
        gzipped = "gzip" in headers.get("accept-encoding", "")
        answer_headers = {
            "Content-Type": "text/html; charset=utf-8",
            "Content-Security-Policy": self.policy,
            "Cache-Control": "no-cache",
            "X-Content-Type-Options": "nosniff",
            "Referrer-Policy": "no-referrer",
        }
        if gzipped:
            answer_headers["Content-Encoding"] = "gzip"
        body = self._gzipped if gzipped else self._body
        return {
            "statusCode": 200,
            "headers": answer_headers,
            "body": base64.b64encode(body).decode(),
            "isBase64Encoded": True,
        }
