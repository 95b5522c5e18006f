"""Which listed file a recorded hit path names: the pure rule (any name, any case mix,
NFC or NFD) and the read-only detection of the file system's traits on this machine."""

from __future__ import annotations

import os
import unicodedata
from pathlib import Path

import pytest
from hypothesis import assume, given, settings
from hypothesis import strategies as st

from memoryd.pathmatch import (
    EXACT,
    MACOS_DEFAULT,
    UNKNOWN,
    Attribution,
    FsTraits,
    attribute,
    attribute_max,
    attribution_for,
    canonical_rows,
    detect_traits,
    fold,
    merged_hits,
    parse_traits,
    traits_for,
)
from memoryd.signals import Hit
from memoryd.strength import HitRow
from memoryd.workspace import classify_result_path

pytestmark = pytest.mark.unit

# Letters with case, letters that NFC and NFD spell differently (Latin accents, Hangul
# syllables, which NFD splits into jamo), and characters with neither.
ALPHABET = "abcXYZéÉñÑåÅüÜøØçÇσΣ가각한글0129-_ "
names = st.text(alphabet=ALPHABET, min_size=1, max_size=12).map(lambda s: f"memory/{s}.md")


@st.composite
def spelling_of(draw: st.DrawFn, path: str) -> str:
    """Another spelling of ``path`` a Mac opens as the same file: any case mix of its
    letters, then NFC or NFD."""
    head, name = path.split("/", 1)  # OpenClaw takes only `memory/` in that case
    stem = name[: -len(".md")]
    flips = draw(st.lists(st.booleans(), min_size=len(stem), max_size=len(stem)))
    mixed = "".join(
        c.swapcase() if f and c.swapcase().swapcase() == c else c
        for c, f in zip(stem, flips, strict=True)
    )
    form = draw(st.sampled_from(["NFC", "NFD"]))
    return f"{head}/{unicodedata.normalize(form, mixed)}.md"


@st.composite
def listing_and_spellings(draw: st.DrawFn) -> tuple[list[str], dict[str, str]]:
    """Listed names whose Mac fold keys differ, stored NFC or NFD; and for some of them
    a recorded spelling → the listed name it must belong to."""
    listed = draw(st.lists(names, min_size=1, max_size=8))
    listed = [unicodedata.normalize(draw(st.sampled_from(["NFC", "NFD"])), p) for p in listed]
    keys = [fold(p, MACOS_DEFAULT) for p in listed]
    assume(len(set(keys)) == len(keys))
    recorded = {
        draw(spelling_of(p)): p for p in draw(st.lists(st.sampled_from(listed), max_size=8))
    }
    return listed, recorded


@settings(max_examples=50, deadline=None)
@given(listing_and_spellings())
def test_on_a_mac_every_spelling_a_mac_opens_as_a_file_counts_for_that_file(case):
    listed, recorded = case
    result = attribute(MACOS_DEFAULT, listed, recorded)
    for spelling, owner in recorded.items():
        if spelling in listed:
            assert spelling not in result.owner  # a listed path is its own file
        else:
            assert result.owner[spelling] == owner
    assert not result.ambiguous


@settings(max_examples=50, deadline=None)
@given(listing_and_spellings(), st.sampled_from([EXACT, UNKNOWN, FsTraits(False, None)]))
def test_on_an_exact_or_unknown_file_system_no_spelling_is_folded(case, traits):
    listed, recorded = case
    result = attribute(traits, listed, recorded)
    assert result.owner == {} and result.ambiguous == {}


@settings(max_examples=50, deadline=None)
@given(listing_and_spellings())
def test_case_alone_never_folds_normalization_and_normalization_alone_never_case(case):
    listed, recorded = case
    by_case = attribute(FsTraits(True, False), listed, recorded).owner
    by_form = attribute(FsTraits(False, True), listed, recorded).owner
    for spelling, owner in by_case.items():
        assert spelling.casefold() == owner.casefold()
    for spelling, owner in by_form.items():
        assert unicodedata.normalize("NFD", spelling) == unicodedata.normalize("NFD", owner)


@settings(max_examples=100, deadline=None)
@given(st.lists(names, min_size=1, max_size=6), names)
def test_a_spelling_of_no_listed_file_is_attributed_to_none(listed, other):
    assume(fold(other, MACOS_DEFAULT) not in {fold(p, MACOS_DEFAULT) for p in listed})
    result = attribute(MACOS_DEFAULT, listed, [other])
    assert other not in result.owner and other not in result.ambiguous


@settings(max_examples=100, deadline=None)
@given(names, st.data())
def test_two_listed_files_folding_to_one_key_keep_exact_matching_and_say_so(path, data):
    """A case-sensitive APFS volume (or a forced trait) can hold Notes.md and notes.md."""
    twin = data.draw(spelling_of(path))
    assume(twin != path)
    third = data.draw(spelling_of(path))
    result = attribute(MACOS_DEFAULT, [path, twin], [path, twin, third])
    assert result.owner == {}  # neither file gets a hit recorded for the other
    assert path not in result.ambiguous and twin not in result.ambiguous
    if third not in (path, twin):
        assert result.ambiguous == {third: tuple(sorted([path, twin]))}


def test_the_examples_of_the_brief():
    listed = [
        "MEMORY.md",
        "memory/projects.md",
        unicodedata.normalize("NFD", "memory/café.md"),
        unicodedata.normalize("NFD", "memory/한글.md"),
    ]
    recorded = [
        "memory/Projects.md",
        "memory/café.md",
        "memory/한글.md",
        "memory.md",
        "memory/PROJECTS.MD.md",
        "memory/gone.md",
    ]
    mac = attribute(MACOS_DEFAULT, listed, recorded).owner
    assert mac == {
        "memory/Projects.md": "memory/projects.md",
        "memory/café.md": listed[2],
        "memory/한글.md": listed[3],
        "memory.md": "MEMORY.md",
    }
    assert attribute(EXACT, listed, recorded).owner == {}


def test_rows_under_other_spellings_become_the_files_and_a_call_counts_once():
    rows = [
        HitRow("main", "c1", "memory/p.md", "search", 10.0, 0.9, "s"),
        HitRow("main", "c2", "memory/P.md", "get", 11.0, None, "s"),
        HitRow("main", "c3", "memory/P.md", "search", 12.0, 0.5, "s"),
        HitRow("main", "c3", "memory/p.md", "search", 12.0, 0.5, "s"),  # same call, twice
        HitRow("main", "c4", "memory/other.md", "search", 13.0, 0.5, "s"),
    ]
    out = canonical_rows(rows, {"memory/P.md": "memory/p.md"})
    assert [(r.call_id, r.path) for r in out] == [
        ("c1", "memory/p.md"),
        ("c2", "memory/p.md"),
        ("c3", "memory/p.md"),
        ("c4", "memory/other.md"),
    ]
    assert all(isinstance(r, HitRow) for r in out)
    assert canonical_rows([tuple(r) for r in rows], {})[1][2] == "memory/P.md"  # nothing folded
    hits = {
        "memory/p.md": [Hit(1.0, call_id="c1", agent="main")],
        "memory/P.md": [Hit(2.0, call_id="c2", agent="main"), Hit(1.0, call_id="c1", agent="main")],
    }
    merged = merged_hits(hits, {"memory/P.md": "memory/p.md"})
    assert list(merged) == ["memory/p.md"] and [h.call_id for h in merged["memory/p.md"]] == [
        "c1",
        "c2",
    ]
    assert attribute_max({"Plan.md": 5.0, "plan.md": 3.0, "x.md": 1.0}, {"Plan.md": "plan.md"}) == {
        "plan.md": 5.0,
        "x.md": 1.0,
    }


def test_the_override_reads_what_the_docs_say_and_refuses_the_rest():
    assert parse_traits("auto") is None and parse_traits("") is None
    assert parse_traits("exact") == EXACT
    assert parse_traits("macos") == MACOS_DEFAULT
    assert parse_traits(" Case-Insensitive ") == FsTraits(True, False)
    assert parse_traits("normalization-insensitive,case-insensitive") == MACOS_DEFAULT
    with pytest.raises(ValueError, match="'caseless' is not one of"):
        parse_traits("caseless")
    assert MACOS_DEFAULT.describe() == "case-insensitive, normalization-insensitive"
    assert EXACT.describe() == "exact" and UNKNOWN.describe() == "exact (not known)"


# --------------------------------------------------------------------------- this machine


def _tree(root: Path) -> list[str]:
    return sorted(str(p.relative_to(root)) for p in root.rglob("*"))


def test_this_machines_ext4_is_detected_case_sensitive_and_byte_exact(tmp_path):
    ws = tmp_path / "ws"
    (ws / "memory" / "sub").mkdir(parents=True)
    names = [
        "MEMORY.md",
        "memory/projects.md",
        "memory/sub/x.md",
        unicodedata.normalize("NFC", "memory/café.md"),
    ]
    for rel in names:
        (ws / rel).write_text("x")
    before = _tree(ws)
    assert detect_traits(ws, names) == EXACT
    assert _tree(ws) == before  # read-only: no probe file, no folder made
    assert traits_for(ws, names, {}) == EXACT
    assert traits_for(ws, names, {"MEMORYD_FS_TRAITS": "macos"}) == MACOS_DEFAULT
    assert traits_for(ws, names, {"MEMORYD_FS_TRAITS": "nonsense"}) == EXACT  # warned, asked
    # Both spellings on disk as two files (possible only where names are exact): still exact.
    (ws / "memory" / "PROJECTS.md").write_text("y")
    assert detect_traits(ws, ["memory/projects.md"]).case is False
    # Nothing listed, or only names with no second spelling: not known, so exact matching.
    assert detect_traits(ws, []) == UNKNOWN
    assert detect_traits(ws, ["memory/gone.md"]) == UNKNOWN  # cannot be stat-ed now


def test_detection_follows_a_symlinked_workspace_and_agrees_with_its_target(tmp_path):
    real = tmp_path / "Dropbox" / "claw"
    (real / "memory").mkdir(parents=True)
    (real / "memory" / "note.md").write_text("x")
    link = tmp_path / "workspace"
    link.symlink_to(real, target_is_directory=True)
    assert detect_traits(link, ["memory/note.md"]) == detect_traits(real, ["memory/note.md"])
    assert detect_traits(link, ["memory/note.md"]).case is False


def test_on_linux_a_recorded_spelling_is_folded_onto_nothing(tmp_path):
    ws = tmp_path / "ws"
    (ws / "memory").mkdir(parents=True)
    (ws / "memory" / "projects.md").write_text("x")
    got = attribution_for(ws, ["memory/projects.md"], ["memory/Projects.md"], {})
    assert got.owner == {}
    forced = attribution_for(
        ws, ["memory/projects.md"], ["memory/Projects.md"], {"MEMORYD_FS_TRAITS": "macos"}
    )
    assert forced.owner == {"memory/Projects.md": "memory/projects.md"}
    assert isinstance(forced, Attribution) and forced.spellings("memory/projects.md") == [
        "memory/projects.md",
        "memory/Projects.md",
    ]


def test_an_absolute_path_under_the_resolved_or_the_given_root_is_the_same_note(tmp_path):
    real = tmp_path / "real"
    (real / "memory").mkdir(parents=True)
    link = tmp_path / "link"
    link.symlink_to(real, target_is_directory=True)
    roots = (str(link), os.path.realpath(link))
    for raw in (f"{real}/memory/a.md", f"{link}/memory/a.md", "memory/a.md"):
        assert classify_result_path(raw, roots) == "memory/a.md", raw
    assert classify_result_path(f"{real}/memory/a.md", str(link)) is None  # one root: as before
    assert classify_result_path(f"{real}/../x/memory/a.md", roots) is None


# --------------------------------------------------------------------------- review (revmac)
# Hard links stand in for a folding volume's answers: the other spelling stat-s as the same
# inode where the volume would fold it, and is missing where the volume would not.


def _with_spellings(ws: Path, rel: str, *others: str) -> None:
    (ws / rel).parent.mkdir(parents=True, exist_ok=True)
    (ws / rel).write_text("x")
    for other in others:
        os.link(ws / rel, ws / other)


def test_a_volume_whose_case_table_lacks_a_script_is_still_seen_case_insensitive(tmp_path):
    """HFS+'s case table predates Georgian capitals and Cherokee small letters: it opens
    MEMORY.md as memory.MD but never ნოტი.md as ᲜᲝᲢᲘ.MD. Probing the name's whole case swap
    made the folders disagree (not known: no folding at all on that Mac)."""
    ws = tmp_path / "ws"
    _with_spellings(ws, "MEMORY.md", "memory.MD")
    _with_spellings(ws, "memory/ნოტი.md", "memory/ნოტი.MD")
    _with_spellings(ws, "memory/cherokee/ᏣᎳᎩ.md", "memory/cherokee/ᏣᎳᎩ.MD")
    listed = ["MEMORY.md", "memory/ნოტი.md", "memory/cherokee/ᏣᎳᎩ.md"]
    assert detect_traits(ws, listed).case is True


def test_a_volume_that_leaves_compatibility_ideographs_alone_is_still_seen_normalizing(tmp_path):
    """HFS+ decomposes é but not the CJK compatibility ideographs (U+F900…) that NFD maps
    to unified ones: probing such a name made the folders disagree."""
    ws = tmp_path / "ws"
    cafe = unicodedata.normalize("NFC", "memory/café.md")
    _with_spellings(ws, cafe, unicodedata.normalize("NFD", cafe))
    _with_spellings(ws, "memory/cjk/\uf900.md")  # its NFD, U+8C48, is no file on HFS+
    assert detect_traits(ws, [cafe, "memory/cjk/\uf900.md"]).unicode is True


def test_a_call_that_named_one_file_under_two_spellings_keeps_its_best_rank():
    """A stale index entry (the name before a case-only rename) and the new one in one
    search: the file was the first result, whichever row comes first in the table."""
    rows = [
        HitRow("main", "c1", "memory/Plan.md", "search", 10.0, 0.4, "s"),  # stale spelling
        HitRow("main", "c1", "memory/other.md", "search", 10.0, 0.6, "s"),
        HitRow("main", "c1", "memory/plan.md", "search", 10.0, 0.9, "s"),
    ]
    out = canonical_rows(rows, {"memory/Plan.md": "memory/plan.md"})
    assert sorted((r.path, r.score) for r in out) == [
        ("memory/other.md", 0.6),
        ("memory/plan.md", 0.9),
    ]
    from memoryd.strength import hit_strengths

    by_path = {r.path: s.label for r, s in zip(out, hit_strengths(out), strict=True)}
    assert by_path["memory/plan.md"] == "first"


def test_two_files_folding_together_make_one_warning_however_many_spellings(tmp_path, caplog):
    ws = tmp_path / "ws"
    for rel in ("memory/Clash.md", "memory/clash.md"):
        _with_spellings(ws, rel)
    recorded = ["memory/CLASH.md", "memory/cLash.md", "memory/clasH.md"]
    with caplog.at_level("WARNING", logger="memoryd.pathmatch"):
        got = attribution_for(
            ws, ["memory/Clash.md", "memory/clash.md"], recorded, {"MEMORYD_FS_TRAITS": "macos"}
        )
    assert got.owner == {} and sorted(got.ambiguous) == sorted(recorded)
    warnings = [r.getMessage() for r in caplog.records if r.name == "memoryd.pathmatch"]
    assert len(warnings) == 1, warnings
    assert all(p in warnings[0] for p in (*recorded, "memory/Clash.md", "memory/clash.md"))


def test_a_tier_note_read_under_another_spelling_never_counts_less_for_promote(
    tmp_path, monkeypatch
):
    """One hit per call per note: a search that returned a note and its summary beside it
    (hot/plan.md, hot/plan.gist.md) is one retrieval of the note, folded or not, so the
    read of warm/Plan.md on a Mac adds to the note's hits, never takes any away."""
    from datetime import UTC

    from memoryd.store import Store
    from memoryd.tierstore import promote_inputs

    root = tmp_path / "memory_fs"
    for rel in ("hot/plan.md", "hot/plan.gist.md"):
        _with_spellings(root, rel)
    for tier in ("warm", "gist", "forgotten"):
        (root / tier).mkdir()
    now = 1_800_000_000.0
    with Store.open(tmp_path / "state.db") as store:
        with store.transaction():
            rows = [
                ("main", f"c{d}", key, "search", now - d * 3600.0)
                for d in (1, 2, 3)
                for key in ("tiers/plan.md", "tiers/plan.gist.md")
            ]
            rows.append(("main", "c4", "tiers/Plan.md", "get", now - 4 * 3600.0))
            store.conn.executemany(
                "INSERT INTO hits(agent, call_id, memory_path, kind, ts) VALUES (?, ?, ?, ?, ?)",
                rows,
            )

        def hits_of_plan(traits: str) -> int:
            monkeypatch.setenv("MEMORYD_FS_TRAITS", traits)
            sigs = {sig.path: sig for sig, _text in promote_inputs(root, store, now, UTC)}
            return sigs["tiers/plan.md"].hits_total

        assert hits_of_plan("exact") == 3
        assert hits_of_plan("macos") == 4
