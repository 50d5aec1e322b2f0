"""Each scope's recall index (core/recall_index.py) as one object in the workspace bucket.

Keys: `recall/owner/index.nri` for the owner, `recall/people/<user id>/index.nri` and
`recall/groups/<chat id>/index.nri` for a person's or a group's scope. They are outside
`workspace/` and `scopes/`, the prefixes the workspace adapter maps the model's paths to, so no
file tool can list, read or overwrite an index, and each scope's key is derived from its scope
alone (a scope never reads another's index).

A read names the ETag the container holds (If-None-Match): S3 answers 304 with no body when the
index did not change, so a warm turn costs one cheap request. Writes are conditional (If-Match
on the ETag read, If-None-Match: * for a first index); a lost race is a `WriteConflict`.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from botocore.exceptions import ClientError

from nanobot_lambda.adapters.aws.errors import aws_errors, error_code
from nanobot_lambda.core.recall_index import StoredIndex
from nanobot_lambda.core.scopes import Scope
from nanobot_lambda.core.workspace import WriteConflict

if TYPE_CHECKING:
    from mypy_boto3_s3 import S3Client

RECALL_PREFIX = "recall/"
INDEX_NAME = "index.nri"
_CONFLICTS = ("PreconditionFailed", "ConditionalRequestConflict", "412", "409")


def index_key(scope: Scope) -> str:
    return f"{RECALL_PREFIX}{scope.name or 'owner'}/{INDEX_NAME}"


class S3RecallIndexObjects:
    def __init__(self, bucket: str, s3: S3Client) -> None:
        self._bucket = bucket
        self._s3 = s3

    @aws_errors
    def get(self, scope: Scope, *, unless_etag: str | None = None) -> StoredIndex | None:
        conditions = {"IfNoneMatch": unless_etag} if unless_etag else {}
        try:
            response = self._s3.get_object(
                Bucket=self._bucket,
                Key=index_key(scope),
                **conditions,  # type: ignore[arg-type]
            )
        except ClientError as error:
            code = error_code(error)
            if code in ("304", "NotModified") and unless_etag:
                return StoredIndex(unless_etag, None)
            if code in ("NoSuchKey", "404"):
                return None
            raise
        return StoredIndex(response["ETag"], response["Body"].read())

    @aws_errors
    def put(self, scope: Scope, data: bytes, *, if_match: str | None) -> str:
        condition = {"IfMatch": if_match} if if_match else {"IfNoneMatch": "*"}
        try:
            response = self._s3.put_object(
                Bucket=self._bucket,
                Key=index_key(scope),
                Body=data,
                ContentType="application/octet-stream",
                **condition,  # type: ignore[arg-type]
            )
        except ClientError as error:
            if error_code(error) in (*_CONFLICTS, "NoSuchKey", "404"):
                raise WriteConflict(index_key(scope)) from None
            raise
        return response["ETag"]
