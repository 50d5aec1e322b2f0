"""The errors the core knows: adapters turn their libraries' exceptions into these.

botocore, requests, litellm and the Bot API each fail in their own way; the adapter that calls
them maps what it cannot handle itself into one of the classes below (keeping the original as
`__cause__` for the logs), so the core and the entry logic never catch a library's exception.
Messages name the kind of failure and a status, never a secret or a user's text.
"""

from __future__ import annotations


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


class ChannelError(NanobotError):
    """The chat channel (Telegram) refused or failed a call.

    `status` is the HTTP-like status (None: the channel could not be reached); `blocked` says
    that the user blocked the bot, which no retry can change; `retry_after` is how many seconds
    a rate-limited caller (429) is asked to wait.
    """

    BLOCKED_STATUS = 403

    def __init__(
        self,
        method: str,
        status: int | None,
        description: str,
        *,
        retry_after: float | None = None,
    ) -> None:
        super().__init__(f"{method} failed ({status}): {description}")
        self.method = method
        self.status = status
        self.description = description
        self.retry_after = retry_after

    @property
    def blocked(self) -> bool:
        return self.status == self.BLOCKED_STATUS


class ToolError(NanobotError):
    """A tool could not do what the model asked; the message is for the model to act on."""


class ConfigError(NanobotError):
    """The environment does not describe a usable configuration. The message names the
    variables."""
