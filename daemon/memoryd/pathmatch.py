"""Which listed file a recorded hit path names, on the file system the files are on.

A hit is stored under the path the transcript gives (data, never touched). ``memory_get``
echoes the path the model wrote, ``memory_search`` names from a directory listing: on a Mac
(case- and normalization-insensitive by default) ``memory/Projects.md`` opens the file listed
as ``memory/projects.md``; on ext4 the same string names no file, and must not be folded.

Functional core: :func:`attribute` decides, from the file system's :class:`FsTraits`, which
listed file each recorded path belongs to. Imperative shell: :func:`detect_traits` asks the
file system, read-only, by stat-ing another spelling of a listed name; :func:`traits_for`
adds the override ``MEMORYD_FS_TRAITS``. Matching happens at decision time, never per
transcript line, so a rename between two runs is seen at once. See docs/paths.md.
"""

from __future__ import annotations

import os
import string
import unicodedata
from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path
from typing import Any, NamedTuple

ENV_TRAITS = "MEMORYD_FS_TRAITS"
CASE_WORD = "case-insensitive"
UNICODE_WORD = "normalization-insensitive"
_PROBES_MAX = 8  # distinct folders asked, per trait: they must agree, else "not known"


class FsTraits(NamedTuple):
    """How a file system compares names: whether names differing only in ``case``, or only in
    ``unicode`` normalization, are one file. ``None``: not known (names match exactly)."""

    case: bool | None = None
    unicode: bool | None = None

    @property
    def folds(self) -> bool:
        return bool(self.case or self.unicode)

    def describe(self) -> str:
        """``case-insensitive, normalization-insensitive`` / ``exact`` / with ``(not known)``."""
        words = [w for w, on in ((CASE_WORD, self.case), (UNICODE_WORD, self.unicode)) if on]
        if words:
            return ", ".join(words)
        return "exact" if (self.case, self.unicode) == (False, False) else "exact (not known)"


EXACT = FsTraits(False, False)
UNKNOWN = FsTraits(None, None)
MACOS_DEFAULT = FsTraits(True, True)


def fold(path: str, traits: FsTraits) -> str:
    """The key under which ``traits`` make names one: Unicode's canonical caseless match
    (NFD of the case fold of NFD) when both hold, NFD or the case fold alone otherwise."""
    if path.isascii():  # (NFD changes no ASCII, and its case fold is lower(): the usual name)
        return path.lower() if traits.case else path
    if traits.unicode:
        path = unicodedata.normalize("NFD", path)
        if traits.case:
            path = unicodedata.normalize("NFD", path.casefold())
        return path
    return path.casefold() if traits.case else path


class Attribution(NamedTuple):
    """What :func:`attribute` decided. ``owner``: recorded path → the listed file it names,
    for paths not listed as they are. ``ambiguous``: recorded path → the two or more listed
    files folding to its key: left unattributed."""

    owner: Mapping[str, str]
    ambiguous: Mapping[str, tuple[str, ...]]
    traits: FsTraits

    def members(self) -> dict[str, list[str]]:
        """listed file → every recorded path that counts for it (itself first), for the
        files that have other spellings."""
        return spellings_by_file(self.owner)

    def spellings(self, listed: str) -> list[str]:
        """The recorded paths counted for ``listed``: itself, then its other spellings."""
        return self.members().get(listed, [listed])


def spellings_by_file(owner: Mapping[str, str]) -> dict[str, list[str]]:
    """``owner`` (recorded path → listed file) turned round: listed file → itself, then
    the recorded paths that count for it, sorted. Pure."""
    out: dict[str, list[str]] = {}
    for recorded, listed in sorted(owner.items()):
        out.setdefault(listed, [listed]).append(recorded)
    return out


NO_ATTRIBUTION = Attribution({}, {}, UNKNOWN)


def attribute(traits: FsTraits, listed: Iterable[str], recorded: Iterable[str]) -> Attribution:
    """Which listed file each recorded path belongs to. Pure.

    A path listed as it is is its own file. Otherwise, when ``traits`` fold, it belongs to
    the one listed file with the same fold key; none when no listed file has it, and none,
    reported as ambiguous, when two or more do. With no folding trait, nothing is attributed.
    """
    names = list(listed)
    if not traits.folds:
        return Attribution({}, {}, traits)
    exact = set(names)
    by_key: dict[str, list[str]] = {}
    for rel in names:
        by_key.setdefault(fold(rel, traits), []).append(rel)
    owner: dict[str, str] = {}
    ambiguous: dict[str, tuple[str, ...]] = {}
    for path in recorded:
        if path in exact:
            continue
        group = by_key.get(fold(path, traits))
        if not group:
            continue
        if len(group) == 1:
            owner[path] = group[0]
        else:
            ambiguous[path] = tuple(sorted(group))
    return Attribution(owner, ambiguous, traits)


def attribute_max(times: Mapping[str, float], owner: Mapping[str, str]) -> dict[str, float]:
    """``times`` (recorded name → latest time) with each other spelling's time given to
    the listed name it belongs to (the later one wins). Pure."""
    out = {k: v for k, v in times.items() if k not in owner}
    for recorded, listed in owner.items():
        ts = times[recorded]
        if listed not in out or ts > out[listed]:
            out[listed] = ts
    return out


def canonical_rows(rows: Sequence[Any], owner: Mapping[str, str]) -> list[Any]:
    """Hit rows (:class:`memoryd.strength.HitRow`, or plain tuples in its field order:
    ``agent, call_id, path, kind, ts, score, session``) with each path that belongs to
    another listed file renamed to it. A call that named one file under two spellings keeps
    one row (a hit is one per call and file), the best-scored one, in the place of the first.
    Pure."""
    if not owner:
        return list(rows)
    targets = set(owner.values())
    kept_at: dict[tuple[Any, Any, str], int] = {}
    out: list[Any] = []
    for row in rows:
        path = row[2]
        new = owner.get(path)
        if new is not None:
            row = _with_path(row, new)
            path = new
        if path in targets:
            key = (row[0], row[1], path)
            at = kept_at.get(key)
            if at is not None:
                if _score(row) > _score(out[at]):
                    out[at] = row
                continue
            kept_at[key] = len(out)
        out.append(row)
    return out


def _score(row: Any) -> float:
    return float("-inf") if row[5] is None else row[5]


def _with_path(row: Any, path: str) -> Any:
    values = (*row[:2], path, *row[3:])
    make = getattr(row, "_make", None)
    return make(values) if make is not None else values


def merged_hits(hits: Mapping[str, list[Any]], owner: Mapping[str, str]) -> dict[str, list[Any]]:
    """path → hits (objects with ``agent`` and ``call_id``) with each other spelling's hits
    given to the listed file, one per call. Pure."""
    if not owner:
        return dict(hits)
    out = {k: v for k, v in hits.items() if k not in owner}
    for listed, spellings in spellings_by_file(owner).items():
        seen: set[tuple[str, str]] = set()
        merged = []
        for path in spellings:
            for h in hits.get(path, ()):
                if (h.agent, h.call_id) not in seen:
                    seen.add((h.agent, h.call_id))
                    merged.append(h)
        if merged:
            out[listed] = merged
    return out


def parse_traits(text: str) -> FsTraits | None:
    """The value of ``MEMORYD_FS_TRAITS``: ``auto`` (None: detect), ``exact``, ``macos``
    (both folds), or ``case-insensitive`` and/or ``normalization-insensitive`` separated by
    commas. Raises ValueError naming what it cannot read."""
    words = [w.strip().lower() for w in text.split(",") if w.strip()]
    if not words or words == ["auto"]:
        return None
    if words == ["exact"]:
        return EXACT
    if words == ["macos"]:
        return MACOS_DEFAULT
    unknown = [w for w in words if w not in (CASE_WORD, UNICODE_WORD)]
    if unknown:
        raise ValueError(
            f"{ENV_TRAITS}={text!r}: {unknown[0]!r} is not one of auto, exact, macos, "
            f"{CASE_WORD}, {UNICODE_WORD}"
        )
    return FsTraits(CASE_WORD in words, UNICODE_WORD in words)


# --------------------------------------------------------------------------- the shell


def _same_file(a: Path, b: Path) -> bool | None:
    """Whether two spellings open one file: True, False (the other spelling is missing or
    another file), None (the listed one cannot be stat-ed now: ask another)."""
    try:
        first = os.lstat(a)
    except OSError:
        return None
    try:
        other = os.lstat(b)
    except FileNotFoundError:
        return False
    except OSError:
        return None
    return (first.st_dev, first.st_ino) == (other.st_dev, other.st_ino)


_ASCII_SWAP = str.maketrans(
    string.ascii_lowercase + string.ascii_uppercase, string.ascii_uppercase + string.ascii_lowercase
)


def _unfolded_by_hfs(char: str) -> bool:
    """CJK compatibility ideographs: NFD maps them to unified ones, HFS+ keeps them."""
    return "\uf900" <= char <= "\ufaff" or "\U0002f800" <= char <= "\U0002fa1f"


def _variant(name: str, trait: str) -> str | None:
    """Another spelling of ``name`` that every volume with the trait opens as ``name``, or
    None: ASCII letters swapped (HFS+'s case table predates some scripts), or the NFD (NFC)
    of a name without CJK compatibility ideographs (docs/paths.md)."""
    if trait == "case":
        other = name.translate(_ASCII_SWAP)
        return other if other != name else None
    if name.isascii() or any(_unfolded_by_hfs(c) for c in name):
        return None
    for form in ("NFD", "NFC"):
        other = unicodedata.normalize(form, name)
        if other != name:
            return other
    return None


def detect_traits(folder: Path, listed: Iterable[str]) -> FsTraits:
    """The traits of the file system under ``folder``, asked read-only.

    For each trait, a listed file's name (``listed``: paths relative to ``folder``, from a
    listing, never a transcript) is stat-ed in another spelling (:func:`_variant`): the same
    inode means the file system folds that way. Folders that disagree, or none asked, leave
    the trait not known. Nothing is created.
    """
    names_in: dict[str, list[str]] = {}
    for rel in listed:
        parent, _, name = rel.rpartition("/")
        names_in.setdefault(parent, []).append(name)
    return FsTraits(_ask(folder, names_in, "case"), _ask(folder, names_in, "unicode"))


def _ask(folder: Path, names_in: Mapping[str, Sequence[str]], trait: str) -> bool | None:
    """One folder's answer per folder asked (its first name that can be asked and stat-ed
    now), at most :data:`_PROBES_MAX` folders: the answer when they agree, else None."""
    answers: set[bool] = set()
    asked = 0
    for parent, names in names_in.items():
        if asked >= _PROBES_MAX:
            break
        where = folder / parent if parent else folder
        for name in names:
            other = _variant(name, trait)
            same = None if other is None else _same_file(where / name, where / other)
            if same is not None:
                answers.add(same)
                asked += 1
                break
    return next(iter(answers)) if len(answers) == 1 else None


def _ambiguity_warnings(result: Attribution) -> list[str]:
    """One line per group of listed files that fold to one name, naming the spellings
    recorded for them (at most five, then a count): not one line per spelling. Pure."""
    by_group: dict[tuple[str, ...], list[str]] = {}
    for path, group in result.ambiguous.items():
        by_group.setdefault(group, []).append(path)
    lines = []
    for group, paths in sorted(by_group.items()):
        paths.sort()
        shown = ", ".join(paths[:5]) + (f" and {len(paths) - 5} more" if len(paths) > 5 else "")
        lines.append(
            f"{' and '.join(group)} are one name on this file system "
            f"({result.traits.describe()}): what is recorded as {shown} is counted for "
            "none of them (exact matching only for them)"
        )
    return lines


def traits_for(
    folder: Path, listed: Iterable[str], environ: Mapping[str, str] | None = None
) -> FsTraits:
    """``MEMORYD_FS_TRAITS`` when set (and not ``auto``), else :func:`detect_traits`. A value
    that cannot be read is warned of once and the file system asked: a typo never stops a job.
    """
    env = os.environ if environ is None else environ
    raw = env.get(ENV_TRAITS, "")
    if raw:
        try:
            forced = parse_traits(raw)
        except ValueError as exc:
            _warn_once(str(exc) + "; detecting the file system's traits instead")
            forced = None
        if forced is not None:
            return forced
    return detect_traits(folder, listed)


def attribution_for(
    folder: Path, listed: Sequence[str], recorded: Iterable[str],
    environ: Mapping[str, str] | None = None, *, probe: Sequence[str] | None = None,
) -> Attribution:  # fmt: skip
    """:func:`attribute` for the files listed under ``folder``; the file system is asked
    only when some recorded path is not listed as it is (the common case asks nothing).
    ``probe``: the files' paths under ``folder`` when ``listed`` are other keys (the tier
    store's note names). Ambiguous paths are said once on the log."""
    exact = set(listed)
    strays = [p for p in recorded if p not in exact]
    # Only a stray that some file system could fold onto a listed file needs the answer:
    # the hits of a deleted note (the usual stray) never make memoryd stat anything.
    widest = attribute(MACOS_DEFAULT, listed, strays)
    if not (widest.owner or widest.ambiguous):
        return NO_ATTRIBUTION
    candidates = [*widest.owner, *widest.ambiguous]
    # A narrower fold only splits the widest one's groups: only their files can match.
    near = {*widest.owner.values(), *(p for group in widest.ambiguous.values() for p in group)}
    traits = traits_for(folder, listed if probe is None else probe, environ)
    result = attribute(traits, sorted(near), candidates)
    for line in _ambiguity_warnings(result):
        _warn_once(line)
    return result


_warned: set[str] = set()


def _warn_once(text: str) -> None:
    if text in _warned:
        return
    _warned.add(text)
    import logging  # (here: a command that folds nothing never loads it)

    logging.getLogger("memoryd.pathmatch").warning("%s", text)


# --------------------------------------------------------------------------- counts


def attributed_tallies(
    conn: Any, tallies: Mapping[str, Any], attribution: Attribution, now: float,
    windows: Sequence[float], agents: Iterable[str] | None, *, skew: float, total: bool = True,
) -> dict[str, Any]:  # fmt: skip
    """``hit_counts``'s result with each listed file's other spellings counted for it (and
    no longer under their own names)."""
    if not attribution.owner:
        return dict(tallies)
    from .hit_counts import hit_tally_of_spellings

    agent_list = None if agents is None else list(agents)
    out = {k: v for k, v in tallies.items() if k not in attribution.owner}
    for listed, spellings in attribution.members().items():
        tally = hit_tally_of_spellings(conn, spellings, now, windows, agent_list, skew=skew,
                                       total=total)  # fmt: skip
        if tally is not None:
            out[listed] = tally
    return out
