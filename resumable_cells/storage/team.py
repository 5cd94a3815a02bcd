"""The team cache a setting names: a Redis server (`redis/`) or a bucket (`bucket/`),
and its figures at a glance, whichever it is. The one place that tells them apart."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

from .. import settings
from .redis.reseal import ResealReport

if TYPE_CHECKING:
    from .bucket.tier import ObjectTier
    from .redis.tier import RedisTier
    from .teamtier import TeamTier


def from_setting(url: str | None, store_dir: Path | None = None) -> RedisTier | ObjectTier | None:
    """The team cache for `url`: None for "", "none" or "off", an ObjectTier for
    s3://, gs://, az:// and file://, else a RedisTier; a team key file inside
    `store_dir` is refused. Raises TeamCacheError."""
    if url is None or settings.team_cache_off(url):
        return None
    from .bucket import connect

    if connect.is_bucket_url(url):
        from .bucket import tier as bucket_tier  # obstore: only when a bucket is set

        return bucket_tier.from_setting(url, store_dir)
    from .redis import tier as redis_tier  # redis-py: only when a Redis server is set

    return redis_tier.from_setting(url, store_dir)


def figures(tier: TeamTier) -> dict:
    """{"entries", "bytes", "limit"} of the team cache. Raises its server's errors."""
    from .redis.tier import RedisTier

    if isinstance(tier, RedisTier):
        from .redis import listing as redis_listing

        return redis_listing.figures(tier.fast)
    from .bucket import listing as bucket_listing

    return bucket_listing.figures(tier.fast)


def listing(tier: TeamTier) -> dict:
    """The team cache step by step (`redis.listing.listing`). Raises its server's
    errors."""
    from .redis.tier import RedisTier

    if isinstance(tier, RedisTier):
        from .redis import listing as redis_listing

        return redis_listing.listing(tier.fast, tier.sealer)
    from .bucket import listing as bucket_listing

    return bucket_listing.listing(tier.fast, tier.sealer)


def reseal(tier: TeamTier) -> ResealReport:
    """Everything on the team cache sealed again under the current team key
    (`redis.reseal`, `bucket.reseal`). Raises its server's errors."""
    from .redis.tier import RedisTier

    assert tier.sealer is not None, "reencrypt needs a team key"
    if isinstance(tier, RedisTier):
        from .redis import reseal as redis_reseal

        return redis_reseal.reseal(tier.bulk, tier.sealer)
    from .bucket import reseal as bucket_reseal

    return bucket_reseal.reseal(tier.bulk, tier.sealer)
