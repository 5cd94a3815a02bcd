"""Reaching a bucket: obstore clients for an `s3://`, `gs://`, `az://` or `file://` URL.

Credentials are never stored by the project: obstore reads each service's usual
environment variables (`AWS_*`, `GOOGLE_*`, `AZURE_*`; `AWS_ENDPOINT_URL` for an
S3-compatible server), and for S3 without keys in the environment, boto3 (when
installed) reads the profiles of `~/.aws/config` and `~/.aws/credentials`. Clients
never retry and time out soon (`FAST` for lookups in the user's cell, `BULK` for
blob transfers): `redis.health` decides when to ask again, as for the Redis tier.
"""

from __future__ import annotations

import logging
import os
from datetime import timedelta
from pathlib import Path
from typing import Any

import msgspec

from ...errors import TeamCacheError
from ..redis.health import describe_error

log = logging.getLogger(__name__)
SCHEMES = ("s3://", "gs://", "az://", "file://")
CONCURRENCY = 4  # requests in flight for one blob, each way


class Timeouts(msgspec.Struct, frozen=True):
    connect: str
    request: str


FAST = Timeouts("1s", "5s")  # an entry, in the user's cell
BULK = Timeouts("2s", "60s")  # one frame of a blob (>= 0.14 MB/s), in either thread


def is_bucket_url(url: str) -> bool:
    return url.strip().lower().startswith(SCHEMES)


def client(url: str, timeouts: Timeouts) -> Any:
    """An obstore store for `url` (nothing connects until it is used). Raises
    TeamCacheError on a URL or configuration obstore refuses."""
    try:
        from obstore.exceptions import BaseError
        from obstore.store import from_url
    except ImportError:
        raise TeamCacheError(
            "a bucket team cache needs obstore: pip install 'resumable-cells[s3]'"
        ) from None
    options: dict[str, Any] = {"connect_timeout": timeouts.connect, "timeout": timeouts.request}
    retry = {"max_retries": 0, "retry_timeout": timedelta(seconds=1)}
    try:
        if url.startswith("file://"):
            root = Path(url[len("file://") :])
            if not root.is_absolute():
                raise TeamCacheError(f"{url!r}: a shared folder is file:///ABSOLUTE/PATH")
            return from_url(url, mkdir=True)
        if os.environ.get("AWS_ALLOW_HTTP", "").lower() == "true":
            options["allow_http"] = True
        extra = _s3_credentials() if url.startswith("s3://") else {}
        return from_url(url, client_options=options, retry_config=retry, **extra)  # type: ignore[call-overload]
    except BaseError as err:
        raise TeamCacheError(f"{url!r}: {describe_error(err)}") from None


def _s3_credentials() -> dict[str, Any]:
    """boto3's provider (profiles, SSO, config files) when the environment has no keys."""
    if os.environ.get("AWS_ACCESS_KEY_ID"):
        return {}
    try:
        from obstore.auth.boto3 import Boto3CredentialProvider
    except ImportError:  # obstore alone reads the environment and instance metadata
        return {}
    return {"credential_provider": Boto3CredentialProvider()}


class MissingBucket(TeamCacheError):
    """The bucket (or Azure container) itself does not exist: a server problem, not a
    miss, so that it is said and retried like one."""


_NO_BUCKET = ("NoSuchBucket", "ContainerNotFound", "bucket does not exist")


def check_bucket(err: FileNotFoundError) -> None:
    """Raise MissingBucket when a "not found" is about the bucket, not the object."""
    text = str(err)
    if any(word in text for word in _NO_BUCKET):
        raise MissingBucket(f"the bucket does not exist ({describe_error(err)})") from err


def server_errors() -> tuple[type[BaseException], ...]:
    """What a bucket that is down, slow, refusing or missing raises (a missing object
    raises FileNotFoundError instead, which is a miss)."""
    from obstore.exceptions import BaseError

    return (BaseError, MissingBucket)


def refused_write(err: BaseException) -> bool:
    """Whether `err` says these credentials may not write here."""
    from obstore.exceptions import PermissionDeniedError, UnauthenticatedError

    return isinstance(err, (PermissionDeniedError, UnauthenticatedError))
