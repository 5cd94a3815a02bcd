"""The team cache as the magics show it: set when the extension loads, changed by
`%step config --remote`, described by `%step config`, waited for by `%step push`, and
its figures for `%step status` and the sidebar."""

from __future__ import annotations

import logging

from IPython.core.error import UsageError

from .. import logs
from ..engine.kernel import Engine
from ..errors import TeamCacheError
from ..storage import sizes, team
from ..storage.redis.health import describe_error
from ..storage.store import Store
from ..storage.teamtier import TeamTier

log = logging.getLogger(__name__)


def attach(engine: Engine, url: str) -> None:
    """At load (`url` from `settings.team_cache`). A bad setting is a warning: it never
    stops the extension from loading."""
    try:
        engine.set_team(team.from_setting(url, engine.store.dir))
    except TeamCacheError as err:
        logs.warn(f"no team cache: {err}")


def configure(engine: Engine, setting: str) -> None:
    """`%step config --remote URL|none`: replace the engine's team cache. UsageError
    on a bad setting; pushes still queued on the old one finish in the background."""
    try:
        tier = team.from_setting(setting, engine.store.dir)
    except TeamCacheError as err:
        raise UsageError(f"%step config --remote: {err}") from None
    engine.set_team(tier)


def team_of(engine: Engine) -> TeamTier | None:
    """The engine's team cache as this layer made it: `attach` and `configure` only
    ever set a team cache (a RedisTier or an ObjectTier; the engine knows it as any
    Tier)."""
    tier = engine.team
    assert tier is None or isinstance(tier, TeamTier), tier
    return tier


def describe(tier: TeamTier | None) -> str:
    if tier is None:
        return (
            "team cache: none (set one with %step config --remote redis://HOST:PORT/DB "
            "or s3://BUCKET/PREFIX)"
        )
    state = "no team key" if tier.sealer is None else "up" if tier.usable() else "unreachable"
    if tier.read_only and state == "up":
        state = "read-only"
    text = f"team cache {tier.url} ({state}"
    if tier.health.last_error and state == "unreachable":
        text += f": {tier.health.last_error}"
    pending = tier.pending()
    return text + (f"; {sizes.count(pending, 'entry', 'entries')} to push)" if pending else ")")


def figures(tier: TeamTier | None) -> dict | None:
    """{"url", "entries", "bytes", "limit", "error"} of the team cache, None without
    one. A server that is down or refusing gives its error, never an exception."""
    if tier is None:
        return None
    out = {"url": tier.url, "entries": None, "bytes": None, "limit": None, "error": None}
    if tier.sealer is None:
        return {**out, "error": "off (no team key set)"}
    if not tier.health.up_now():
        return {**out, "error": f"unreachable ({tier.health.last_error})"}
    try:
        return {**out, **team.figures(tier)}
    except tier.server_errors() as err:
        log.debug("the team cache's figures could not be read", exc_info=True)
        return {**out, "error": f"unreachable ({describe_error(err)})"}


def push_report(tier: TeamTier, store: Store, everything: bool = False) -> str:
    """`%step push`: queue every local entry too when `everything`, then wait."""
    if tier.sealer is None:
        tier.health.say_warning()
        return f"nothing pushed: {tier.health.warning}"
    if everything:
        for key, _ in store.entries():
            tier.put(key, store)
    res = tier.flush()
    text = (
        f"pushed {sizes.count(res['pushed'], 'entry', 'entries')} "
        f"({sizes.count(res['blobs'], 'blob')}, "
        f"{sizes.format_size(res['bytes'])}) to {tier.url}"
    )
    if res["failed"]:
        text += (
            f"; {res['failed']} not pushed: the team cache is unreachable "
            f"({tier.health.last_error}). They are retried in the background and by "
            "`%step push`."
        )
    if tier.read_only:
        text += f"; {tier.read_only}"
    for err in res["errors"]:
        text += f"\n  not pushed {err}"
    return text
