"""Logging: Powertools' JSON logger for the handlers, applied to the package's own loggers.

Package modules log through `logging.getLogger(__name__)`; each handler calls
`configure_logging` once so those records come out as the same structured JSON with the
Lambda context. Message text is never logged at INFO: only ids, kinds and counts.
"""

from __future__ import annotations

from aws_lambda_powertools import Logger
from aws_lambda_powertools.logging.utils import copy_config_to_registered_loggers


def configure_logging(logger: Logger) -> None:
    copy_config_to_registered_loggers(source_logger=logger, include={"nanobot_lambda"})
