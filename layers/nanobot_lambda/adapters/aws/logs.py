"""Logging: Powertools' JSON logger for the handlers, applied to the package's own loggers,
with every secret redacted from every record.

Package modules log through `logging.getLogger(__name__)`; each handler calls
`configure_logging` once, with its settings' secret values, so those records come out as the
same structured JSON with the Lambda context. Message text is never logged at INFO: only ids,
kinds and counts. agent_turn adds a queued job's ids to every record (`log_correlation.py`).

Redaction (`redaction.py`) covers every record of the process, third-party libraries' too:
a log record factory redacts each record's message, arguments and exception as it is created,
whichever logger and handler it goes to; a filter on the Powertools, package and root
handlers also redacts the `extra` fields, which are attached after the factory has run.
"""

from __future__ import annotations

import logging
import traceback
from collections.abc import Iterable
from typing import Any

from aws_lambda_powertools import Logger
from aws_lambda_powertools.logging.utils import copy_config_to_registered_loggers

from nanobot_lambda.core.redaction import REDACTOR

# The attributes every LogRecord has; anything else on a record came from `extra`.
_STANDARD_ATTRIBUTES = frozenset(logging.LogRecord("", 0, "", 0, "", None, None).__dict__) | {
    "message",
    "asctime",
}
_factory_installed = False


def configure_logging(logger: Logger, secrets: Iterable[str] = ()) -> None:
    """Route the package's loggers through the handler's Powertools logger, and redact
    `secrets` (the settings' `secret_values()`) and Telegram token URLs from every record."""
    copy_config_to_registered_loggers(source_logger=logger, include={"nanobot_lambda"})
    REDACTOR.add(secrets)
    _install_record_factory()
    redacting = RedactingFilter()
    service = logging.getLogger(logger.service)  # the logging.Logger behind Powertools'
    for target in (service, logging.getLogger("nanobot_lambda"), logging.getLogger()):
        for filterer in [target, *target.handlers]:
            if not any(isinstance(item, RedactingFilter) for item in filterer.filters):
                filterer.addFilter(redacting)


class RedactingFilter(logging.Filter):
    """Redacts a record in place (message, arguments, exception, extra fields); drops nothing."""

    def filter(self, record: logging.LogRecord) -> bool:
        redact_record(record, extras=True)
        return True


def redact_record(record: logging.LogRecord, *, extras: bool = False) -> None:
    if record.args:
        try:
            record.msg, record.args = REDACTOR.redact(record.getMessage()), None
        except Exception:  # a malformed format: redact the parts, let logging report it
            record.msg = REDACTOR.redact_value(record.msg)
            record.args = REDACTOR.redact_value(record.args)
    elif isinstance(record.msg, str | dict | list):
        record.msg = REDACTOR.redact_value(record.msg)
    elif record.msg is not None:
        text = str(record.msg)
        if REDACTOR.redact(text) != text:
            record.msg = REDACTOR.redact(text)
    if record.exc_info and record.exc_info[0] is not None:
        _redact_exception(record)
    if record.exc_text:
        record.exc_text = REDACTOR.redact(record.exc_text)
    if record.stack_info:
        record.stack_info = REDACTOR.redact(record.stack_info)
    if extras:
        for key, value in list(record.__dict__.items()):
            if key not in _STANDARD_ATTRIBUTES:
                record.__dict__[key] = REDACTOR.redact_value(value)


def _redact_exception(record: logging.LogRecord) -> None:
    """An exception whose text holds a secret (its message, a chained one) is logged as its
    redacted text: `exc_text` for standard formatters, `exception`/`exception_name` for
    Powertools', which reads those keys before formatting `exc_info` itself."""
    exc_type, exc_value, exc_traceback = record.exc_info  # type: ignore[misc]
    text = "".join(traceback.format_exception(exc_type, exc_value, exc_traceback)).rstrip("\n")
    redacted = REDACTOR.redact(text)
    if redacted == text:
        return
    record.exc_info = None
    record.exc_text = redacted
    record.__dict__["exception"] = redacted
    record.__dict__["exception_name"] = getattr(exc_type, "__name__", "Exception")


def _install_record_factory() -> None:
    global _factory_installed
    if _factory_installed:
        return
    previous = logging.getLogRecordFactory()

    def redacting_factory(*args: Any, **kwargs: Any) -> logging.LogRecord:
        record = previous(*args, **kwargs)
        redact_record(record)
        return record

    logging.setLogRecordFactory(redacting_factory)
    _factory_installed = True
