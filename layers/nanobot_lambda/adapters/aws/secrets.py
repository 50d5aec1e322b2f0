"""Secret values the functions read once at start-up: SSM SecureStrings (decrypted) and
Secrets Manager secrets, referenced by `<NAME>_PARAM` / `<NAME>_SECRET_ARN` (see settings.py)."""

from __future__ import annotations


def fetch_secret(kind: str, reference: str) -> str:
    """One read per reference and container, with boto3's default session (the one the
    function's own clients share): no second session, endpoint table or credentials lookup at
    start-up, as Powertools Parameters would open, and no cache that a value read once at
    start-up would never use (see bench/cold_import.py)."""
    import boto3  # here: a function given its secrets directly never needs SSM

    if kind == "param":
        found = boto3.client("ssm").get_parameter(Name=reference, WithDecryption=True)
        return str(found["Parameter"]["Value"])
    secret = boto3.client("secretsmanager").get_secret_value(SecretId=reference)
    if "SecretString" in secret:
        return str(secret["SecretString"])
    return bytes(secret["SecretBinary"]).decode("utf-8")  # a binary secret
