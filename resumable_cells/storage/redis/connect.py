"""Reaching the team cache: redis-py clients that never wait long (the team key is
`storage.teamkey`'s).

Clients use short socket timeouts (CONNECT_TIMEOUT, then SOCKET_TIMEOUT for lookups in
the user's cell or BULK_TIMEOUT for the pusher's uploads) and no retries: `health`
decides when to ask again.
"""

from __future__ import annotations

from ...errors import TeamCacheError

CONNECT_TIMEOUT = 0.5
SOCKET_TIMEOUT = 1.0  # lookups, in the user's cell
BULK_TIMEOUT = 10.0  # writing one chunk (>= 0.8 MB/s), in the background thread


def client(url: str, timeout: float):
    """A redis-py client for `url` (nothing connects until it is used)."""
    try:
        import redis
        from redis.backoff import NoBackoff
        from redis.retry import Retry
    except ImportError:
        raise TeamCacheError(
            "the team cache needs the redis client: pip install 'resumable-cells[team]'"
        ) from None
    try:
        return redis.Redis.from_url(
            url,
            socket_timeout=timeout,
            socket_connect_timeout=CONNECT_TIMEOUT,
            retry=Retry(NoBackoff(), 0),
            health_check_interval=0,
        )
    except ValueError as err:
        raise TeamCacheError(
            f"{url!r} is not a Redis URL ({err}); use redis://HOST:PORT/DB"
        ) from None


def server_errors() -> tuple[type[BaseException], ...]:
    """What a server that is down, slow or refusing raises (redis-py wraps socket errors)."""
    import redis

    return (redis.RedisError,)
