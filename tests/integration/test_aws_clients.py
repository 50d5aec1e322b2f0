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


def test_the_workspace_client_lists_key_etag_and_size_as_botocore_would(aws: str) -> None:
    plain = nanobot_aws.s3_client()
    lean = nanobot_aws.workspace_s3_client()
    plain.create_bucket(Bucket="lean-listing")
    # Keys botocore asks S3 to url-encode in the listing, and decodes.
    keys = ["workspace/a b.md", "workspace/é+ü.md", "workspace/x%2F.md", "workspace/&<>'\".md"]
    for n, key in enumerate(keys):
        plain.put_object(Bucket="lean-listing", Key=key, Body=b"x" * n)

    def listing(client: Any, **arguments: Any) -> list[dict[str, Any]]:
        return list(client.list_objects_v2(Bucket="lean-listing", **arguments).get("Contents", []))

    expected = [
        {"Key": item["Key"], "ETag": item["ETag"], "Size": item["Size"]} for item in listing(plain)
    ]
    assert sorted(item["Key"] for item in expected) == sorted(keys)
    assert listing(lean) == expected
    assert listing(lean, Prefix="nothing/") == []

    # Pages: what botocore parses itself (the continuation token) is kept.
    first = lean.list_objects_v2(Bucket="lean-listing", MaxKeys=3)
    assert first["IsTruncated"] is True and len(first["Contents"]) == 3
    rest = lean.list_objects_v2(
        Bucket="lean-listing", ContinuationToken=first["NextContinuationToken"]
    )
    assert first["Contents"] + rest["Contents"] == expected

    # An error is botocore's as before.
    with pytest.raises(lean.exceptions.NoSuchBucket):
        lean.list_objects_v2(Bucket="no-such-bucket")
