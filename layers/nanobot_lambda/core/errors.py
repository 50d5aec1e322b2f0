"""The errors the core knows: adapters turn their libraries' exceptions into these.

botocore, requests, litellm and the Bot API each fail in their own way; the adapter that calls
them maps what it cannot handle itself into one of the classes below (keeping the original as
`__cause__` for the logs), so the core and the functions' logic never catch a library's exception.
Messages name the kind of failure and a status, never a secret or a user's text.
"""

from __future__ import annotations

from typing import Literal


class NanobotError(Exception):
    """Base of every error the core handles."""


class StorageError(NanobotError):
    """A store (S3, DynamoDB, SQS, Scheduler) could not do what was asked."""


class StorageConflict(StorageError):
    """A conditional write lost a race: what it was based on changed since it was read."""


class UpdateInProgress(StorageConflict):
    """The same Telegram update is being queued by another delivery right now."""


class NotFound(NanobotError):
    """What was asked for does not exist."""


class ModelError(NanobotError):
    """The provider could not produce an answer (after the adapter's retries).

    The message names the error kind and status, never a key or the request content.
    `permanent` says that no model could ever answer as things are set up (no provider in the
    model's name, a refused key, a model that does not exist or may not be used, another 4xx):
    the owner must change a setting, and "send it again in a moment" would be wrong advice.
    `setup_problem` is then what is wrong, in a few words the owner can act on (no provider
    text, no secret), e.g. "anthropic/claude-x: the API key was refused (401)".
    """

    def __init__(self, message: str, *, setup_problem: str | None = None) -> None:
        super().__init__(message)
        self.setup_problem = setup_problem

    @property
    def permanent(self) -> bool:
        return self.setup_problem is not None


ChannelFailure = Literal["rate_limited", "blocked", "refused", "unavailable"]
"""What a failed channel call means, as the adapter that made it reads its answer:
`rate_limited` - asked to wait (`retry_after` seconds) before calling again;
`blocked` - the user blocked the bot: no retry can change that;
`refused` - the channel refused this very call (its content, this chat): sending it again as it
is cannot help;
`unavailable` - the channel failed or could not be reached: a later retry may succeed."""


class ChannelError(NanobotError):
    """The chat channel (Telegram) refused or failed a call.

    `kind` says what the failure means (set by the adapter; the functions' code reads it and the
    properties below, never status numbers); `status` is the channel's own status, for the logs
    (None: the channel could not be reached); `retry_after` is how many seconds a rate-limited
    caller is asked to wait.
    """

    def __init__(
        self,
        method: str,
        status: int | None,
        description: str,
        *,
        kind: ChannelFailure = "unavailable",
        retry_after: float | None = None,
    ) -> None:
        super().__init__(f"{method} failed ({status}): {description}")
        self.method = method
        self.status = status
        self.description = description
        self.kind: ChannelFailure = kind
        self.retry_after = retry_after

    @property
    def rate_limited(self) -> bool:
        return self.kind == "rate_limited"

    @property
    def blocked(self) -> bool:
        return self.kind == "blocked"

    @property
    def refused(self) -> bool:
        """Sending the same call again cannot help (a chat that blocked the bot refuses too)."""
        return self.kind in ("refused", "blocked")


class ToolError(NanobotError):
    """A tool could not do what the model asked; the message is for the model to act on."""


class ConfigError(NanobotError):
    """The environment does not describe a usable configuration. The message names the
    variables."""
