"""Expire: archive old files nobody looks up any more.

Rule, in order (the first that applies decides):

1. protected (``USER.md`` always; ``expire.protect`` globs, MEMORY.md / memory.md by default)
   → keep
2. marked by the user (``memoryd mark``) → keep
3. pinned (``expire.pinned`` globs or ``memoryd pin GLOB``) → keep
3b. a current promotion candidate (``candidates``: promote nominates it for MEMORY.md now)
   → keep: expire never archives what promote nominates
4. not older than ``min_age_days`` (created = date in the name, else mtime) → keep
5. more than ``max_hits`` hits in the last ``window_days`` → keep (still in use)
6. otherwise → archive

Rules 4-6 are :func:`memoryd.policy.candidates.seed_rule` (the ``seed`` policy); any other
policy (the default ``likely``) replaces them with its own verdict (:func:`decide_with`).
Pruning and capacity (``memoryd.policy.score``) may archive files rules 4-6 keep
(:func:`memoryd.policy.expire_plan.with_pruning`).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field

from ..config import ExpireConfig
from ..signals import FileSignals
from . import matches_any
from .candidates import FileView, Policy, seed_rule

ARCHIVE, KEEP = "archive", "keep"
USER_PROFILE = "USER.md"  # OpenClaw's profile of its user: counted, like MEMORY.md never archived


@dataclass(frozen=True)
class ExpireDecision:
    """One file's verdict: action, the rule that decided, and the numbers behind it."""

    path: str
    action: str  # archive | keep
    rule: str  # protected | marked | pinned | candidate | young | active | expired | prune | …
    reason: str
    numbers: Mapping[str, float | int | str | None] = field(default_factory=dict)


def decide(
    sig: FileSignals,
    cfg: ExpireConfig,
    marked: frozenset[str] | set[str] = frozenset(),
    pins: Iterable[str] = (),
    candidates: Mapping[str, str] | None = None,
) -> ExpireDecision:
    """The expire verdict for one file."""
    age = sig.age_days
    recent = sig.hits_within(cfg.window_days)
    numbers: dict[str, float | int | str | None] = {
        "age_days": round(age, 2),
        "created_from": sig.created_from,
        "hits_window": recent,
        "window_days": cfg.window_days,
        "max_hits": cfg.max_hits,
        "min_age_days": cfg.min_age_days,
    }

    def keep(rule: str, reason: str) -> ExpireDecision:
        return ExpireDecision(sig.path, KEEP, rule, reason, numbers)

    if sig.path == USER_PROFILE:  # counted since it is searched as memory; never archived
        return keep("protected", "OpenClaw's profile of its user")
    glob = matches_any(sig.path, cfg.protect)
    if glob:
        return keep("protected", f"protected by {glob!r}")
    if sig.path in marked:
        return keep("marked", "marked by the user")
    glob = matches_any(sig.path, (*cfg.pinned, *pins))
    if glob:
        return keep("pinned", f"pinned by {glob!r}")
    nominated = candidates.get(sig.path) if candidates else None
    if nominated:
        why = f"a promotion candidate ({nominated}): promote nominates it for MEMORY.md"
        return keep("candidate", why)
    rule, reason = seed_rule(
        age, recent, cfg.min_age_days, cfg.window_days, cfg.max_hits, sig.created_from
    )
    return ExpireDecision(sig.path, ARCHIVE if rule == "expired" else KEEP, rule, reason, numbers)


def decide_with(
    policy: Policy,
    sig: FileSignals,
    view: FileView,
    cfg: ExpireConfig,
    marked: frozenset[str] | set[str] = frozenset(),
    pins: Iterable[str] = (),
    candidates: Mapping[str, str] | None = None,
) -> ExpireDecision:
    """The verdict of a replay policy (``[expire] policy``, :mod:`memoryd.policy.candidates`) on
    one file: protection, marks and pins first, as for the seed rule; then the policy, on
    ``view`` (its hits and their strength as known now). ``numbers`` carries ``p_need``,
    the chance of being needed in the next 60 days, when the policy gives one."""
    d = decide(sig, cfg, marked, pins, candidates)
    if d.rule in ("protected", "marked", "pinned", "candidate"):
        return d
    v = policy.decide(view)
    numbers: dict[str, float | int | str | None] = {
        "age_days": round(sig.age_days, 2),
        "created_from": sig.created_from,
        "policy": policy.name,
        "hits_total": len(view.times),
        "strong_hits": len(view.strong),
    }
    if v.p_need is not None:
        numbers["p_need"] = round(v.p_need, 4)
    return ExpireDecision(sig.path, ARCHIVE if v.archive else KEEP, v.rule, v.reason, numbers)


def plan(
    signals: Sequence[FileSignals],
    cfg: ExpireConfig,
    marked: frozenset[str] | set[str] = frozenset(),
    pins: Iterable[str] = (),
    candidates: Mapping[str, str] | None = None,
) -> list[ExpireDecision]:
    """Every file's verdict under the seed rule (pruning and capacity are merged in by
    :func:`memoryd.policy.expire_plan.with_pruning`)."""
    pins = tuple(pins)
    return [decide(sig, cfg, marked, pins, candidates) for sig in signals]


def archive_relpath(rel: str, archive_dir: str, month: str) -> str:
    """Where ``rel`` goes: ``archive_dir`` with {month}, keeping its relative path (outside
    ``memory/``: ``memory-archive/2026-11/memory/x.md``; inside it, the path below
    ``memory/``: ``memory/archive-2026-11/x.md``)."""
    base = archive_dir.replace("{month}", month).strip("/")
    if base == "memory" or base.startswith("memory/"):
        below = rel.removeprefix("memory/")
        return f"{base}/{below}"
    return f"{base}/{rel}"


def free_name(rel: str, exists: Callable[[str], bool]) -> str:
    """``rel``, or ``stem~2.md``, ``stem~3.md``… when that name is taken."""
    if not exists(rel):
        return rel
    stem, dot, ext = rel.rpartition(".")
    if not dot or "/" in ext:
        stem, ext = rel, ""
    n = 2
    while True:
        cand = f"{stem}~{n}.{ext}" if ext else f"{stem}~{n}"
        if not exists(cand):
            return cand
        n += 1
