"""A Mini App's launch data (core/launch_data.py) and the Ed25519 check behind its `signature`
(core/ed25519.py), on published vectors: RFC 8032's, and launch data Telegram made for the
sample bots of the Telegram Mini Apps documentation (docs.telegram-mini-apps.com: its `hash`
with the bot token, and its `signature` with Telegram's production key)."""

from __future__ import annotations

import json
from datetime import UTC, datetime, timedelta
from urllib.parse import quote

import pytest

from nanobot_lambda.core import ed25519, launch_data
from nanobot_lambda.core.launch_data import LaunchRefused

HOUR = timedelta(hours=1)

# RFC 8032, section 7.1, TEST 2 (one byte).
RFC_KEY = bytes.fromhex("3d4017c3e843895a92b70aa74d1b7ebc9c982ccf2ec4968cc0cd55f12af4660c")
RFC_MESSAGE = bytes.fromhex("72")
RFC_SIGNATURE = bytes.fromhex(
    "92a009a9f0d4cab8720e820b5f642540a2b27b5416503f8fb3762223ebdb69da"
    "085ac1e43e15996e458f3613d0f11d8c387b2eaeb4302aeeb00d291612bb0c00"
)

# Launch data with a `hash` only (the bot token below is the documentation's sample bot's).
SAMPLE_TOKEN = "5768337691:AAGDAe6rjxu1cUgxK4BizYi--Utc3J9v5AU"
SAMPLE = (
    "user=%7B%22id%22%3A279058397%2C%22first_name%22%3A%22Vladislav%22%2C%22last_name%22%3A"
    "%22Kibenko%22%2C%22username%22%3A%22vdkfrost%22%2C%22language_code%22%3A%22en%22%2C%22is_"
    "premium%22%3Atrue%2C%22allows_write_to_pm%22%3Atrue%7D&chat_instance=-3788475317572404878"
    "&chat_type=private&auth_date=1709144340"
    "&hash=371697738012ebd26a111ace4aff23ee265596cd64026c8c3677956a85ca1827"
)
SAMPLE_AT = datetime.fromtimestamp(1709144340, UTC)

# Launch data with Telegram's Ed25519 `signature` too (another sample bot's).
SIGNED_TOKEN = "7342037359:AAHI25ES9xCOMPokpYoz-p8XVrZUdygo2J4"
SIGNED = (
    "user=%7B%22id%22%3A279058397%2C%22first_name%22%3A%22Vladislav%20%2B%20-%20%3F%20%5C%2F%22"
    "%2C%22last_name%22%3A%22Kibenko%22%2C%22username%22%3A%22vdkfrost%22%2C%22language_code%22"
    "%3A%22ru%22%2C%22is_premium%22%3Atrue%2C%22allows_write_to_pm%22%3Atrue%2C%22photo_url%22"
    "%3A%22https%3A%5C%2F%5C%2Ft.me%5C%2Fi%5C%2Fuserpic%5C%2F320%5C%2F4FPEE4tmP3ATHa57u6MqTDih13"
    "LTOiMoKoLDRG4PnSA.svg%22%7D&chat_instance=8134722200314281151&chat_type=private"
    "&auth_date=1733509682&signature=TYJxVcisqbWjtodPepiJ6ghziUL94-KNpG8Pau-X7oNNLNBM72APCpi_RKiU"
    "lBvcqo5L-LAxIc3dnTzcZX_PDg&hash=a433d8f9847bd6addcc563bff7cc82c89e97ea0d90c11fe5729cae6796a3"
    "6d73"
)
SIGNED_AT = datetime.fromtimestamp(1733509682, UTC)


def test_ed25519_verifies_rfc_8032_s_vector_and_nothing_else() -> None:
    assert ed25519.verify(RFC_KEY, RFC_MESSAGE, RFC_SIGNATURE)
    assert not ed25519.verify(RFC_KEY, b"\x73", RFC_SIGNATURE)
    tampered = RFC_SIGNATURE[:10] + bytes([RFC_SIGNATURE[10] ^ 1]) + RFC_SIGNATURE[11:]
    assert not ed25519.verify(RFC_KEY, RFC_MESSAGE, tampered)
    assert not ed25519.verify(RFC_KEY, RFC_MESSAGE, RFC_SIGNATURE[:63])
    # S at or above the group's order is refused (malleability), as RFC 8032 requires.
    high = RFC_SIGNATURE[:32] + (int.from_bytes(RFC_SIGNATURE[32:], "little") + ed25519.L).to_bytes(
        32, "little"
    )
    assert not ed25519.verify(RFC_KEY, RFC_MESSAGE, high)


def test_telegram_s_launch_data_is_read_as_signed() -> None:
    checked = launch_data.verify(SAMPLE, SAMPLE_TOKEN, now=SAMPLE_AT + HOUR / 2, max_age=HOUR)
    assert (checked.user.id, checked.user.username) == (279058397, "vdkfrost")
    assert checked.auth_date == SAMPLE_AT


def test_telegram_s_ed25519_signature_is_checked_where_present() -> None:
    checked = launch_data.verify(SIGNED, SIGNED_TOKEN, now=SIGNED_AT, max_age=HOUR)
    assert checked.user.first_name == "Vladislav + - ? /"
    # The same data with another bot id: its hash is rebuilt to pass, its signature cannot be.
    fields = dict(pair.split("=", 1) for pair in SIGNED.split("&"))
    forged_signature = fields["signature"][:10] + "A" + fields["signature"][11:]
    other = SIGNED.replace(fields["signature"], forged_signature)
    resigned = launch_data.sign(
        {k: v for k, v in launch_data._fields(other).items() if k != "hash"}, SIGNED_TOKEN
    )
    with pytest.raises(LaunchRefused, match="signature"):
        launch_data.verify(resigned, SIGNED_TOKEN, now=SIGNED_AT, max_age=HOUR)


@pytest.mark.parametrize(
    ("why", "init_data", "token", "now"),
    [
        ("another bot's token", SAMPLE, "5768337691:another", SAMPLE_AT),
        ("a field changed", SAMPLE.replace("279058397", "279058398"), SAMPLE_TOKEN, SAMPLE_AT),
        ("no hash", SAMPLE.split("&hash=")[0], SAMPLE_TOKEN, SAMPLE_AT),
        ("hash given twice", SAMPLE + "&hash=00", SAMPLE_TOKEN, SAMPLE_AT),
        ("too old", SAMPLE, SAMPLE_TOKEN, SAMPLE_AT + HOUR + timedelta(seconds=1)),
        ("from the future", SAMPLE, SAMPLE_TOKEN, SAMPLE_AT - timedelta(minutes=5)),
        ("empty", "", SAMPLE_TOKEN, SAMPLE_AT),
        ("not a query string", "%%%", SAMPLE_TOKEN, SAMPLE_AT),
    ],
)
def test_launch_data_not_signed_for_this_bot_lately_is_refused(
    why: str, init_data: str, token: str, now: datetime
) -> None:
    with pytest.raises(LaunchRefused):
        launch_data.verify(init_data, token, now=now, max_age=HOUR)


def test_signed_launch_data_without_a_user_is_refused() -> None:
    for user in (None, "not json", json.dumps({"first_name": "x"}), json.dumps({"id": -5})):
        fields = {"auth_date": str(int(SAMPLE_AT.timestamp()))}
        if user is not None:
            fields["user"] = user
        with pytest.raises(LaunchRefused, match="no user"):
            launch_data.verify(
                launch_data.sign(fields, SAMPLE_TOKEN), SAMPLE_TOKEN, now=SAMPLE_AT, max_age=HOUR
            )


def test_what_the_local_stack_signs_reads_back() -> None:
    user = {"id": 100000001, "first_name": "Zoë & co", "username": "local_user"}
    fields = {
        "user": json.dumps(user, ensure_ascii=False),
        "auth_date": str(int(SAMPLE_AT.timestamp())),
    }
    signed = launch_data.sign(fields, SAMPLE_TOKEN)
    assert quote("Zoë & co") in signed  # percent-encoded as Telegram encodes it
    checked = launch_data.verify(signed, SAMPLE_TOKEN, now=SAMPLE_AT, max_age=HOUR)
    assert checked.user == launch_data.LaunchUser(100000001, "Zoë & co", "local_user")
