"""boto3 clients, created by the handlers once per container and passed down (injectable).

No endpoint is hard-coded: boto3 honours `AWS_ENDPOINT_URL` (moto locally, AWS when deployed).

Timestamps in responses are parsed faster than botocore does by default, in every botocore
session created after this module is imported (the handlers import it before making any
client): S3's listing carries a LastModified per key, which dateutil parsed at about 0.1 ms
each, the larger part of a warm turn's own time with 200 skills (bench/warm_turn.py).

The workspace's own S3 client (`workspace_s3_client`) goes further: its listings keep of each
object only what the workspace reads (Key, ETag, Size). botocore otherwise walks the whole
object shape of every listed key (checksums, storage class, owner, restore status), which made
the per-turn listing, and so a warm turn, grow with the number of skills.
"""

from __future__ import annotations

from datetime import datetime
from typing import TYPE_CHECKING, Any
from xml.etree import ElementTree

import boto3
import botocore
import botocore.handlers
import botocore.session
import botocore.utils
from botocore.config import Config

if TYPE_CHECKING:
    from mypy_boto3_dynamodb import DynamoDBClient
    from mypy_boto3_s3 import S3Client
    from mypy_boto3_scheduler import EventBridgeSchedulerClient
    from mypy_boto3_sqs import SQSClient

# Standard retry mode backs off on throttling and 5xx; short connect timeouts keep a webhook
# responsive (Telegram retries a slow webhook, which is worse than a fast 5xx).
CLIENT_CONFIG = Config(
    retries={"mode": "standard", "max_attempts": 4},
    connect_timeout=3,
    read_timeout=20,
)


def parse_timestamp(value: Any) -> datetime:
    """botocore's `parse_timestamp`, with ISO 8601 and a zone (S3's XML) parsed by the standard
    library; anything else (epoch numbers, RFC 822, no zone) as botocore parses it."""
    if isinstance(value, str) and "T" in value:
        try:
            parsed = datetime.fromisoformat(value)
        except ValueError:
            pass
        else:
            if parsed.tzinfo is not None:
                return parsed
    return botocore.utils.parse_timestamp(value)


def _with_fast_timestamps(session: botocore.session.Session) -> None:
    parsers = session.get_component("response_parser_factory")
    parsers.set_parser_defaults(timestamp_parser=parse_timestamp)


botocore.register_initializer(_with_fast_timestamps)


def s3_client() -> S3Client:
    return boto3.client("s3", config=CLIENT_CONFIG)


def sqs_client() -> SQSClient:
    return boto3.client("sqs", config=CLIENT_CONFIG)


def dynamodb_client() -> DynamoDBClient:
    return boto3.client("dynamodb", config=CLIENT_CONFIG)


def scheduler_client() -> EventBridgeSchedulerClient:
    return boto3.client("scheduler", config=CLIENT_CONFIG)


def lambda_client() -> Any:
    """For the code sandbox: a run may take its full minute, so reads wait longer than the
    other clients' (no retry: a run is not repeated behind the model's back)."""
    config = CLIENT_CONFIG.merge(Config(read_timeout=90, retries={"max_attempts": 1}))
    return boto3.client("lambda", config=config)


# S3 can answer 200 with an error in the body: botocore's handler that finds it (and retries).
_BOTOCORE_200_CHECK: Any = getattr(botocore.handlers, "_handle_200_error")  # noqa: B009 - private


def workspace_s3_client() -> S3Client:
    """An S3 client whose ListObjectsV2 results give each object's Key, ETag and Size only."""
    client = s3_client()
    events = client.meta.events
    # botocore's check for an error in a 200 answer parses the body too; for listings the lean
    # parse makes that check itself, on its one parse.
    events.unregister("before-parse.s3.*", _BOTOCORE_200_CHECK)
    events.register_first("before-parse.s3.*", _check_200_unless_listing)
    events.register("before-parse.s3.ListObjectsV2", RepeatedListing())
    return client


def _check_200_unless_listing(operation_model: Any, response_dict: Any, **kwargs: Any) -> None:
    if operation_model.name != "ListObjectsV2":
        _BOTOCORE_200_CHECK(operation_model, response_dict, **kwargs)


class RepeatedListing:
    """`lean_listing` that keeps its last result: a workspace unchanged since the last turn lists
    byte for byte the same (a listing's body holds no time or request id), so its objects are
    then copied rather than parsed again, the work that grew with the number of skills."""

    def __init__(self) -> None:
        self._body = b""
        self._objects: list[dict[str, Any]] = []
        self._rest = b""

    def __call__(
        self, response_dict: dict[str, Any], customized_response_dict: dict[str, Any], **_: Any
    ) -> None:
        body = response_dict.get("body")
        if body and body == self._body and response_dict.get("status_code") == 200:
            # Copies: botocore url-decodes each key in place afterwards.
            customized_response_dict["Contents"] = [dict(item) for item in self._objects]
            response_dict["body"] = self._rest
            return
        lean_listing(response_dict, customized_response_dict)
        if response_dict.get("status_code") == 200 and "Contents" in customized_response_dict:
            self._body = body or b""
            self._objects = [dict(item) for item in customized_response_dict["Contents"]]
            self._rest = response_dict["body"]


def lean_listing(
    response_dict: dict[str, Any], customized_response_dict: dict[str, Any], **_: Any
) -> None:
    """botocore's `before-parse` hook: take the objects out of a listing's XML, parsed here with
    only the three fields, and let botocore parse the rest (prefix, continuation token...).
    Keys are url-decoded later by botocore as usual. An error response is left to botocore, and
    a 200 whose body is an error or cut short becomes a 500 (retried), as botocore makes it."""
    body = response_dict.get("body")
    if response_dict.get("status_code") != 200 or not body:
        return
    try:
        root = ElementTree.fromstring(body)  # noqa: S314 - S3's answer, which botocore parses alike
    except ElementTree.ParseError:
        response_dict["status_code"] = 500
        return
    if root.tag == "Error":
        response_dict["status_code"] = 500
        return
    namespace = root.tag[: root.tag.index("}") + 1] if root.tag.startswith("{") else ""
    contents, key, etag, size = (namespace + name for name in ("Contents", "Key", "ETag", "Size"))
    objects = root.findall(contents)
    if not objects:
        return
    customized_response_dict["Contents"] = [
        {
            "Key": item.findtext(key, ""),
            "ETag": item.findtext(etag, ""),
            "Size": int(item.findtext(size, "0")),
        }
        for item in objects
    ]
    rest = ElementTree.Element(root.tag, root.attrib)  # the root without its objects, in one pass
    rest.extend(child for child in root if child.tag != contents)
    response_dict["body"] = ElementTree.tostring(rest)
