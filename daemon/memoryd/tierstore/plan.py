"""The pure plan of organize: where each note should be, one function per step of the seed.

:func:`plan_note` takes where a note's files are, its record and its last
retrieval, and returns the actions that bring it to the tier the seed's rules
give, each with its reason. It runs the steps in order, each a function of the
note's facts and of where the earlier steps have put its files:

0. :func:`step_retrieval`: a note retrieved since it entered its tier goes back up.
1. :func:`step_layering`: by mtime, hot/ → warm/, and a summary copy in gist/.
2. :func:`step_forgetting`: not retrieved for ``forget`` → forgotten/.
3. :func:`step_cleanup`: in forgotten/ for ``delete`` → deleted (never a marked note).

Because the plan is computed from the files on disk every time, organize is
idempotent and a run killed half-way is finished by the next one.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import asdict, dataclass, replace

from ..config import TiersConfig
from .layout import DAY, HOUR, Placement, original_rel, summary_rel
from .records import NoteRecord


@dataclass(frozen=True)
class TierPolicy:
    """The seed's constants, in seconds."""

    hot: float = 3 * HOUR
    warm: float = 7 * DAY
    gist: float = 30 * DAY
    forget: float = 14 * DAY
    delete: float = 30 * DAY
    delete_enabled: bool = True

    @classmethod
    def from_config(cls, t: TiersConfig) -> TierPolicy:
        return cls(
            hot=t.hot_hours * HOUR,
            warm=t.warm_days * DAY,
            gist=t.gist_days * DAY,
            forget=t.forget_after_days * DAY,
            delete=t.delete_after_days * DAY,
            delete_enabled=t.delete_enabled,
        )


@dataclass(frozen=True)
class Action:
    """One step of a plan. Paths are relative to the tier root (``warm/x.md``)."""

    op: str  # move | gist | delete | conflict
    note: str
    src: str
    dst: str | None
    reason: str
    step: int  # 0 retrieval (back up), then the seed's 1 layering, 2 forgetting, 3 clean-up

    def as_dict(self) -> dict[str, object]:
        return asdict(self)


def _age(seconds: float) -> str:
    if seconds < 2 * DAY:
        return f"{seconds / HOUR:.1f} h"
    return f"{seconds / DAY:.1f} d"


def _limit(seconds: float) -> str:
    if seconds < 2 * DAY:
        return f"{seconds / HOUR:g} h"
    return f"{seconds / DAY:g} d"


@dataclass(frozen=True)
class NoteFacts:
    """What the plan of one note rests on (never changed by a step)."""

    place: Placement
    rec: NoteRecord | None
    last_hit: float | None
    now: float
    pol: TierPolicy

    @property
    def name(self) -> str:
        return self.place.name


@dataclass(frozen=True)
class NoteState:
    """Where the note's original and summary are once the earlier steps' actions are done."""

    o_tier: str | None
    s_tier: str | None
    o_mtime: float = 0.0
    s_mtime: float = 0.0
    rotated: bool = False  # moved back up by a retrieval in this plan: its decay starts over
    settled: bool = False  # just entered forgotten/: its clock starts now, no later step

    @classmethod
    def of(cls, place: Placement) -> NoteState:
        orig = place.originals[0] if place.originals else None
        summ = place.summaries[0] if place.summaries else None
        return cls(
            orig.tier if orig else None,
            summ.tier if summ else None,
            orig.mtime if orig else 0.0,
            summ.mtime if summ else 0.0,
        )


Step = Callable[[NoteFacts, NoteState], tuple[list[Action], NoteState]]


def _move_summary(
    f: NoteFacts, st: NoteState, to_tier: str, reason: str, step: int
) -> tuple[Action, NoteState]:
    assert st.s_tier is not None
    src, dst = summary_rel(f.name, st.s_tier), summary_rel(f.name, to_tier)
    return Action("move", f.name, src, dst, reason, step), replace(st, s_tier=to_tier)


def conflict_of(place: Placement) -> Action | None:
    """A note with its original (or summary) in two places at once: reported, never touched."""
    if len(place.originals) <= 1 and len(place.summaries) <= 1:
        return None
    where = ", ".join(f.rel for f in place.files)
    why = "the note is in more than one place; resolve by hand (memoryd never overwrites)"
    return Action("conflict", place.name, where, None, why, 0)


def step_retrieval(f: NoteFacts, st: NoteState) -> tuple[list[Action], NoteState]:
    """Step 0: a retrieval since the note entered its tier (a recall, or the agent's own
    search or read) moves it back up by :func:`rotation`, "touched" so the later steps see
    it as new. One already older than ``forget`` is not acted on (step 2 would undo it)."""
    rec, last_hit = f.rec, f.last_hit
    if rec is None or last_hit is None or last_hit <= rec.entered:
        return [], st
    if f.now - last_hit > f.pol.forget:
        return [], st
    hit_tier = st.o_tier or st.s_tier
    if hit_tier not in ("warm", "gist", "forgotten"):
        return [], st
    when = f"retrieved {_age(f.now - last_hit)} ago"
    orig_rel = f.place.originals[0].rel if f.place.originals else None
    actions: list[Action] = []
    for src, dst, why in rotation(f.place, hit_tier):
        actions.append(Action("move", f.name, src, dst, f"{why} ({when})", 0))
        tier = dst.split("/", 1)[0]
        if src == orig_rel:
            st = replace(st, o_tier=tier, o_mtime=f.now, rotated=True)
        else:
            st = replace(st, s_tier=tier, s_mtime=f.now, rotated=True)
    return actions, st


def step_layering(f: NoteFacts, st: NoteState) -> tuple[list[Action], NoteState]:
    """Step 1 (mtime): hot/ → warm/ after ``hot``; a summary copy in gist/ after ``warm`` (the
    original stays in warm/). A summary goes where its note's tier says."""
    now, pol, name = f.now, f.pol, f.name
    actions: list[Action] = []

    def summary_to(to_tier: str, reason: str) -> None:
        nonlocal st
        action, st = _move_summary(f, st, to_tier, reason, 1)
        actions.append(action)

    if st.o_tier == "hot" and now - st.o_mtime > pol.hot:
        reason = f"mtime {_age(now - st.o_mtime)} old > {_limit(pol.hot)}"
        actions.append(
            Action("move", name, original_rel(name, "hot"), original_rel(name, "warm"), reason, 1)
        )
        st = replace(st, o_tier="warm")
    if st.s_tier == "hot" and st.o_tier != "hot":
        if st.o_tier is not None:
            summary_to("gist", f"summary follows its note out of hot/ (note in {st.o_tier}/)")
        elif now - st.s_mtime > pol.hot:
            summary_to("gist", f"mtime {_age(now - st.s_mtime)} old > {_limit(pol.hot)}")
    if st.s_tier == "warm":
        summary_to("gist", "a summary belongs in gist/")
    if st.s_tier == "forgotten" and st.o_tier in ("hot", "warm"):
        summary_to("gist", f"summary follows its note out of forgotten/ (note in {st.o_tier}/)")
    if st.o_tier == "warm" and st.s_tier is None and now - st.o_mtime > pol.warm:
        reason = (
            f"mtime {_age(now - st.o_mtime)} old > {_limit(pol.warm)}: "
            "summary copy, original kept in warm/"
        )
        actions.append(
            Action("gist", name, original_rel(name, "warm"), summary_rel(name, "gist"), reason, 1)
        )
        st = replace(st, s_tier="gist")
    return actions, st


def forget_reason(f: NoteFacts) -> str | None:
    """Why a note in warm/ or gist/ is forgotten now, or None while in use: its last
    retrieval (or creation) is older than ``forget``, or never retrieved and older than
    ``gist``."""
    rec, last_hit, now, pol = f.rec, f.last_hit, f.now, f.pol
    created = rec.created if rec else min(x.mtime for x in f.place.files)
    last_used = max(created, last_hit) if last_hit is not None else created
    if now - last_used > pol.forget:
        what = "last retrieval" if last_hit is not None and last_hit >= created else "created"
        return f"{what} {_age(now - last_used)} ago > {_limit(pol.forget)}"
    if last_hit is None and now - created > pol.gist:
        return f"never retrieved, created {_age(now - created)} ago > {_limit(pol.gist)}"
    return None


def step_forgetting(f: NoteFacts, st: NoteState) -> tuple[list[Action], NoteState]:
    """Step 2: a note of warm/ or gist/ no longer in use goes to forgotten/, summary too;
    its clock there starts now."""
    name = f.name
    actions: list[Action] = []
    in_warm_or_gist = st.o_tier == "warm" or (st.o_tier is None and st.s_tier == "gist")
    reason = forget_reason(f) if in_warm_or_gist and not st.rotated else None
    if reason is not None:
        if st.o_tier == "warm":
            actions.append(
                Action(
                    "move",
                    name,
                    original_rel(name, "warm"),
                    original_rel(name, "forgotten"),
                    reason,
                    2,
                )
            )
            st = replace(st, o_tier="forgotten")
        if st.s_tier is not None and st.s_tier != "forgotten":
            why = reason if st.o_tier is None else "summary follows its note to forgotten/"
            action, st = _move_summary(f, st, "forgotten", why, 2)
            actions.append(action)
        return actions, replace(st, settled=True)
    if st.o_tier == "forgotten" and st.s_tier is not None and st.s_tier != "forgotten":
        action, st = _move_summary(f, st, "forgotten", "summary follows its note to forgotten/", 2)
        actions.append(action)
    return actions, st


def step_cleanup(f: NoteFacts, st: NoteState) -> tuple[list[Action], NoteState]:
    """Step 3: files in forgotten/ longer than ``delete`` are deleted; never a marked note's."""
    rec, now, pol, name = f.rec, f.now, f.pol, f.name
    in_forgotten = st.o_tier == "forgotten" or (st.o_tier is None and st.s_tier == "forgotten")
    if not in_forgotten or not pol.delete_enabled:
        return [], st
    entered = rec.entered if rec is not None and rec.tier == "forgotten" else now
    if now - entered <= pol.delete or (rec is not None and rec.user_marked):
        return [], st
    reason = f"in forgotten/ for {_age(now - entered)} > {_limit(pol.delete)}"
    actions: list[Action] = []
    if st.o_tier == "forgotten":
        actions.append(Action("delete", name, original_rel(name, "forgotten"), None, reason, 3))
    if st.s_tier == "forgotten":
        actions.append(Action("delete", name, summary_rel(name, "forgotten"), None, reason, 3))
    return actions, st


STEPS: tuple[Step, ...] = (step_retrieval, step_layering, step_forgetting, step_cleanup)


def plan_note(
    place: Placement,
    rec: NoteRecord | None,
    last_hit: float | None,
    now: float,
    pol: TierPolicy,
) -> list[Action]:
    """The actions organize takes for one note, in order, each with the numbers behind it:
    the steps of :data:`STEPS` in turn. A fixpoint: applied, planning again gives nothing. A
    note with its original in two tiers at once is a conflict: reported, never touched."""
    conflict = conflict_of(place)
    if conflict is not None:
        return [conflict]
    facts = NoteFacts(place, rec, last_hit, now, pol)
    st = NoteState.of(place)
    actions: list[Action] = []
    for step in STEPS:
        done, st = step(facts, st)
        actions.extend(done)
        if st.settled:
            break
    return actions


def plan_store(
    placements: Mapping[str, Placement],
    records: Mapping[str, NoteRecord],
    last_hits: Mapping[str, float],
    now: float,
    pol: TierPolicy,
) -> list[Action]:
    """:func:`plan_note` for every note, in name order."""
    out: list[Action] = []
    for name, place in placements.items():
        out.extend(plan_note(place, records.get(name), last_hits.get(name), now, pol))
    return out


# --------------------------------------------------------------------------- recall rotation


def rotation(place: Placement, hit_tier: str) -> list[tuple[str, str, str]]:
    """The seed's reverse rotation for a retrieval in ``hit_tier``: (src, dst, reason) moves.
    warm: the original back to hot/; gist: the summary *and* the warm original to hot/;
    forgotten: back to warm/ (the summary to gist/), the caller marks it. A destination that
    is taken is left out (memoryd never overwrites)."""
    name = place.name
    orig = place.originals[0] if len(place.originals) == 1 else None
    summ = place.summaries[0] if len(place.summaries) == 1 else None
    taken = {f.rel for f in place.files}
    moves: list[tuple[str, str, str]] = []

    def add(src: str, dst: str, reason: str) -> None:
        if src != dst and dst not in taken:
            moves.append((src, dst, reason))

    if hit_tier == "warm" and orig is not None and orig.tier == "warm":
        add(orig.rel, original_rel(name, "hot"), "retrieved in warm/: still relevant")
    elif hit_tier == "gist":
        if summ is not None and summ.tier == "gist":
            add(summ.rel, summary_rel(name, "hot"), "retrieved in gist/: summary back to hot/")
        if orig is not None and orig.tier == "warm":
            add(orig.rel, original_rel(name, "hot"), "retrieved in gist/: original back to hot/")
    elif hit_tier == "forgotten":
        if orig is not None and orig.tier == "forgotten":
            add(orig.rel, original_rel(name, "warm"), "retrieved in forgotten/: back to warm/")
        if summ is not None and summ.tier == "forgotten":
            add(summ.rel, summary_rel(name, "gist"), "retrieved in forgotten/: summary to gist/")
    return moves
