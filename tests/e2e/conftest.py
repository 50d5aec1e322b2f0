"""End-to-end fixtures: the waits of retries, as long as the test says.

Deployed, a retry waits: a model call after a failed one (litellm_model.retries' RETRY_FIRST_PAUSE,
doubled per attempt), a Bot API call after a 5xx or a 429 (TelegramBot's `sleep`: 0.5 s doubled,
or Telegram's retry_after), a failed turn until its queue message is visible again (the local
poller's `retry_delay`, 1 s). What these tests check is what the retry does, not how long it
waited: each wait is recorded and skipped, and a test that checks a wait reads `pauses`.
"""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from nanobot_lambda.adapters.llm.litellm_model import retries
from nanobot_lambda.adapters.telegram.client import TelegramBot
from nanobot_lambda.operator.local.runtime import QueuePoller
from tests.support.faults import Pauses


@pytest.fixture(autouse=True)
def pauses(monkeypatch: pytest.MonkeyPatch) -> Iterator[Pauses]:
    """For every stack and client made during the test (the fixtures', the in-process CLI's):
    model retries at once, Bot API retries recorded and at once, a failed turn's message
    visible again at once (it is still received again, and counts towards the redrive)."""
    asked = Pauses()
    monkeypatch.setattr(retries, "RETRY_FIRST_PAUSE", 0.0)
    # Keyword-only parameters: their defaults are what each client and poller is made with.
    monkeypatch.setitem(TelegramBot.__init__.__kwdefaults__, "sleep", asked)
    monkeypatch.setitem(QueuePoller.__init__.__kwdefaults__, "retry_delay", 0)
    yield asked
