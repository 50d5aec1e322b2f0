"""A real headless Chromium for the console's page tests: Debian's `chromium` package, driven by
Playwright (never a browser Playwright downloads). Each test module starts one browser; each
test opens pages in a fresh context of its own.

Without /usr/bin/chromium the tests fail, saying how to install it (`make test` and `.ci/run`
install it as root): a browser test must never pass by being skipped.

The page loads Telegram's `telegram-web-app.js` from telegram.org, as a Mini App does; here
every request to telegram.org is refused (no network in tests), so the page runs on its own
stand-in for it, as in a browser outside Telegram.
"""

from __future__ import annotations

import os
import shutil
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import pytest

CHROMIUM = os.environ.get("CONSOLE_TEST_CHROMIUM", "/usr/bin/chromium")
CHROMIUM_ARGS = [
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
]
# Playwright must never fetch a browser of its own.
os.environ.setdefault("PLAYWRIGHT_SKIP_BROWSER_DOWNLOAD", "1")


def require_chromium() -> str:
    if not Path(CHROMIUM).exists():
        pytest.fail(
            f"no Chromium at {CHROMIUM}: the console's browser tests need Debian's chromium "
            "package (apt-get install -y chromium, as root; `make test` does it when it runs "
            "as root)",
            pytrace=False,
        )
    return CHROMIUM


class Browser:
    """One Chromium process (a persistent context in a new, empty profile folder)."""

    def __init__(self) -> None:
        from playwright.sync_api import sync_playwright

        self._profile = tempfile.mkdtemp(prefix="console-chromium-")
        self._playwright = sync_playwright().start()
        self.context = self._playwright.chromium.launch_persistent_context(
            self._profile,
            executable_path=require_chromium(),
            headless=True,
            args=CHROMIUM_ARGS,
            viewport={"width": 420, "height": 860},
        )
        self.context.route("https://telegram.org/**", lambda route: route.abort())
        self.errors: list[str] = []

    @contextmanager
    def page(self, url: str, *, ready: str | None = "#view[data-ready]") -> Iterator[Any]:
        """A page opened at `url` (waiting for `ready`), closed afterwards; the page's script
        errors (a CSP refusal, an exception) are collected in `errors` (an HTTP error status,
        which the page shows, is none)."""
        page = self.context.new_page()
        page.on("pageerror", lambda error: self.errors.append(str(error)))
        page.on(
            "console",
            lambda message: (
                self.errors.append(message.text)
                if message.type == "error"
                and not message.text.startswith("Failed to load resource")
                else None
            ),
        )
        try:
            page.goto(url)
            if ready:
                page.wait_for_selector(ready)
            yield page
        finally:
            page.close()

    def close(self) -> None:
        self.context.close()
        self._playwright.stop()
        shutil.rmtree(self._profile, ignore_errors=True)
