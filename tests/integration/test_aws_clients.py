"""Clients made after `nanobot_lambda.adapters.aws.clients` is imported parse timestamps with
its fast parser."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from typing import Any

import botocore.session
import pytest

from nanobot_lambda.adapters.aws import clients as nanobot_aws


def test_a_new_session_lists_s3_with_the_fast_parser(
    aws: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    real = nanobot_aws.parse_timestamp
    parsed: list[Any] = []

    def spy(value: Any) -> datetime:
        parsed.append(value)
        return real(value)

    monkeypatch.setattr(nanobot_aws, "parse_timestamp", spy)
    s3 = botocore.session.get_session().create_client("s3")
    s3.create_bucket(Bucket="timestamps")
    for name in ("a", "b", "c"):
        s3.put_object(Bucket="timestamps", Key=name, Body=b"x")
    listed = s3.list_objects_v2(Bucket="timestamps")["Contents"]
    assert len(parsed) == 3  # one LastModified per key, all through the fast parser
    for item in listed:
        assert abs(item["LastModified"] - datetime.now(UTC)) < timedelta(minutes=5)
