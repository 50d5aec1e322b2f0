"""The workspace client's listing parse (adapters/aws/clients.py): S3's answers as botocore
hands them over before parsing, including the 200 that carries an error."""

from __future__ import annotations

from typing import Any
from xml.etree import ElementTree

import pytest

from nanobot_lambda.adapters.aws.clients import RepeatedListing, lean_listing

NS = "http://s3.amazonaws.com/doc/2006-03-01/"
LISTING = (
    f'<?xml version="1.0" encoding="UTF-8"?><ListBucketResult xmlns="{NS}">'
    "<Name>b</Name><Prefix>workspace/</Prefix><KeyCount>2</KeyCount><IsTruncated>false"
    "</IsTruncated><Contents><Key>workspace/a.md</Key><LastModified>2026-11-26T09:00:00.000Z"
    '</LastModified><ETag>"e1"</ETag><Size>3</Size><StorageClass>STANDARD</StorageClass>'
    '</Contents><Contents><Key>workspace/b%20c.md</Key><ETag>"e2"</ETag><Size>0</Size>'
    "</Contents></ListBucketResult>"
).encode()


def parse(status: int, body: bytes) -> tuple[dict[str, Any], dict[str, Any]]:
    response = {"status_code": status, "body": body, "headers": {}}
    customized: dict[str, Any] = {}
    lean_listing(response_dict=response, customized_response_dict=customized)
    return response, customized


def test_objects_are_taken_out_with_key_etag_and_size() -> None:
    response, customized = parse(200, LISTING)
    assert customized["Contents"] == [
        {"Key": "workspace/a.md", "ETag": '"e1"', "Size": 3},
        {"Key": "workspace/b%20c.md", "ETag": '"e2"', "Size": 0},  # botocore url-decodes later
    ]
    assert b"Contents" not in response["body"]
    assert b"<ns0:IsTruncated>false</ns0:IsTruncated>" in response["body"]  # for botocore


def test_a_200_with_an_error_or_a_cut_body_is_a_500_to_retry() -> None:
    error = b"<Error><Code>InternalError</Code><Message>retry</Message></Error>"
    assert parse(200, error)[0]["status_code"] == 500
    assert parse(200, LISTING[:200])[0]["status_code"] == 500


def test_errors_and_empty_listings_are_left_to_botocore() -> None:
    error = b"<Error><Code>NoSuchBucket</Code></Error>"
    assert parse(404, error) == ({"status_code": 404, "body": error, "headers": {}}, {})
    empty = f'<ListBucketResult xmlns="{NS}"><KeyCount>0</KeyCount></ListBucketResult>'.encode()
    assert parse(200, empty) == ({"status_code": 200, "body": empty, "headers": {}}, {})


def test_a_listing_the_same_as_the_last_is_copied_not_parsed_again(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    hook = RepeatedListing()
    first_response = {"status_code": 200, "body": LISTING, "headers": {}}
    first: dict[str, Any] = {}
    hook(first_response, first)
    parses: list[bytes] = []
    real = ElementTree.fromstring
    monkeypatch.setattr(ElementTree, "fromstring", lambda text: parses.append(text) or real(text))

    again_response = {"status_code": 200, "body": LISTING, "headers": {}}
    again: dict[str, Any] = {}
    hook(again_response, again)
    assert parses == []
    assert again == first and again_response["body"] == first_response["body"]
    again["Contents"][0]["Key"] = "decoded by botocore"  # in place, as botocore does
    third: dict[str, Any] = {}
    hook({"status_code": 200, "body": LISTING, "headers": {}}, third)
    assert third["Contents"][0]["Key"] == "workspace/a.md"  # each answer has its own copies

    changed = LISTING.replace(b'"e2"', b'"e3"')
    fourth: dict[str, Any] = {}
    hook({"status_code": 200, "body": changed, "headers": {}}, fourth)
    assert parses == [changed]
    assert fourth["Contents"][1]["ETag"] == '"e3"'
