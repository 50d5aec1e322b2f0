"""Response timestamps: the fast parser gives what botocore's own parser gives, in every format."""

from __future__ import annotations

import botocore.utils
import pytest

from nanobot_lambda.adapters.aws.clients import parse_timestamp

FORMATS = [
    "2026-01-01T10:00:00.000Z",  # S3's XML (LastModified of every listed key)
    "2026-01-01T10:00:00Z",
    "2026-01-01T10:00:00+02:00",
    "2026-01-01T10:00:00",  # no zone: left to botocore
    1700000000,  # epoch seconds (JSON protocols: DynamoDB, Scheduler)
    1700000000.5,
    "1700000000",
    "Tue, 14 Nov 2023 22:13:20 GMT",  # RFC 822 (headers)
]


@pytest.mark.parametrize("value", FORMATS)
def test_same_instant_and_zone_as_botocore(value: object) -> None:
    ours, botocores = parse_timestamp(value), botocore.utils.parse_timestamp(value)
    assert ours == botocores
    assert ours.utcoffset() == botocores.utcoffset()


def test_garbage_is_refused_as_botocore_refuses_it() -> None:
    with pytest.raises(ValueError):
        parse_timestamp("T-not-a-time")
