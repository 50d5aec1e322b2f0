"""Every number written to DynamoDB, in plain decimal notation: `number_value(x)` is the
attribute value, `plain(x)` its text (for a number set).

An `ADD` on moto (the local stack) read a value without a "." as an int, so a price written
with an exponent ("2e-08") cancelled the transaction that saved a turn. One writer for every
adapter: a Decimal plainly whatever its size, an int as it is, and a float refused (its `str`
may be "2e-08", and it is not exact).
"""

from __future__ import annotations

from decimal import Decimal


def plain(value: int | Decimal) -> str:
    """`value` in plain decimal notation: 0.00000002, 100000000000000000000, never 2E-8."""
    if isinstance(value, bool) or not isinstance(value, int | Decimal):
        raise TypeError(f"a DynamoDB number is an int or a Decimal, not {type(value).__name__}")
    if isinstance(value, Decimal) and not value.is_finite():
        raise ValueError(f"DynamoDB keeps no {value}")
    return format(value, "f") if isinstance(value, Decimal) else str(value)


def number_value(value: int | Decimal) -> dict[str, str]:
    """The attribute value of a number: `{"N": plain(value)}`."""
    return {"N": plain(value)}
