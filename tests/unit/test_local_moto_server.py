"""The local moto server makes each DynamoDB and S3 request atomic, as AWS does; SQS long polls
are left to run side by side."""

from __future__ import annotations

import threading
from typing import Any

from nanobot_lambda.operator.local.moto_server import AtomicRequests, service_of


def signed_for(service: str) -> dict[str, Any]:
    scope = f"AKIDEXAMPLE/20261122/us-east-1/{service}/aws4_request"
    return {"HTTP_AUTHORIZATION": f"AWS4-HMAC-SHA256 Credential={scope}, SignedHeaders=host"}


def test_the_service_comes_from_the_signature_scope() -> None:
    assert service_of(signed_for("dynamodb")) == "dynamodb"
    assert service_of(signed_for("s3")) == "s3"
    assert service_of({}) is None
    assert service_of({"HTTP_AUTHORIZATION": "Bearer abc"}) is None


def run_side_by_side(atomic: AtomicRequests, service: str, count: int) -> None:
    threads = [
        threading.Thread(target=atomic, args=(signed_for(service), lambda *_: None))
        for _ in range(count)
    ]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(10)


def test_dynamodb_requests_run_one_at_a_time() -> None:
    inside, peak = 0, 0
    guard = threading.Lock()

    def app(environ: dict[str, Any], start_response: Any) -> list[bytes]:
        nonlocal inside, peak
        with guard:
            inside += 1
            peak = max(peak, inside)
        threading.Event().wait(0.05)  # hold the request open so others could overlap
        with guard:
            inside -= 1
        return [b"ok"]

    run_side_by_side(AtomicRequests(app), "dynamodb", 4)
    assert peak == 1


def test_sqs_requests_run_side_by_side() -> None:
    meet = threading.Barrier(2, timeout=5)  # broken unless both requests are inside at once
    met: list[bool] = []

    def app(environ: dict[str, Any], start_response: Any) -> list[bytes]:
        try:
            meet.wait()
            met.append(True)
        except threading.BrokenBarrierError:
            met.append(False)
        return [b"ok"]

    run_side_by_side(AtomicRequests(app), "sqs", 2)
    assert met == [True, True]


def test_adding_small_numbers_is_exact_as_in_dynamodb() -> None:
    """moto wrote 0 + 0.0000003 as "3E-7" and then failed to add to it (int("3E-7"))."""
    from moto.dynamodb.models.dynamo_type import DynamoType

    from nanobot_lambda.operator.local.moto_server import _add_numbers_as_dynamodb_does

    _add_numbers_as_dynamodb_does()
    total = DynamoType({"N": "0"}) + DynamoType({"N": "0.0000003"})
    total = total + DynamoType({"N": "0.0000003"}) + DynamoType({"N": "2"})
    assert total.value == "2.0000006"
    assert (DynamoType({"N": "0"}) + DynamoType({"N": "0.000000000000"})).value == "0"
