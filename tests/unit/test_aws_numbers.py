"""Numbers written to DynamoDB: one writer, plain decimal notation whatever the size."""

from __future__ import annotations

from decimal import Decimal

import pytest

from nanobot_lambda.adapters.aws.numbers import number_value, plain


@pytest.mark.parametrize(
    ("value", "written"),
    [
        (Decimal(repr(2e-08)), "0.00000002"),  # an embedding's price, from litellm's float
        (Decimal("3E-7"), "0.0000003"),
        (Decimal(repr(1e20)), "100000000000000000000"),
        (Decimal("0.0042"), "0.0042"),
        (Decimal(0), "0"),
        (1_700_000_000, "1700000000"),
        (-1001234567890, "-1001234567890"),
    ],
)
def test_a_number_is_written_plainly(value: int | Decimal, written: str) -> None:
    assert plain(value) == written
    assert number_value(value) == {"N": written}


@pytest.mark.parametrize("value", [2e-08, 1.5, True, Decimal("NaN"), Decimal("Infinity")])
def test_a_float_a_bool_or_no_number_is_refused(value: object) -> None:
    with pytest.raises((TypeError, ValueError)):
        plain(value)  # type: ignore[arg-type]
