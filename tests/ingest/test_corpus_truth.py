"""memoryd's counts against an independent reference, on corpora with every transcript variant.

The reference is :mod:`support.corpus`: it writes a realistic OpenClaw state dir (every
dialect of openclaw-formats.md §2–4, decoy files and decoy text, 600 KB lines, garbage
and invalid UTF-8) and computes the hits from its own decisions, never by parsing what
it wrote. Everything here runs the real ``memoryd`` command on real files (in the pytest
process: :mod:`support.inprocess`; a scan after every appended line is a few hundred commands):
a cold scan, a scan after every appended line (renames and successors included), and
the ``hits`` report for all time and for 30 days with the clock pinned.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
from datetime import UTC, datetime
from pathlib import Path

import pytest

from memoryd.clock import iso
from support.corpus import DEMO, DIMS, CorpusTruth, generate, generate_demo
from support.inprocess import memoryd as run_memoryd
from support.report_counts import counts_of as counts
from support.report_counts import diff

NOW = 1_790_000_000.0  # 2026-09-21T12:53:20Z: the corpus spans the 90 days before it


# ------------------------------------------------------------------------ helpers


def write_config(root: Path, truth: CorpusTruth, state: Path, extra: str = "") -> Path:
    cfg = root / f"memoryd-{state.name}.toml"
    cfg.write_text(
        f"[openclaw]\nstate_dir = {json.dumps(str(truth.state_dir))}\n"
        f"workspace = {json.dumps(str(truth.workspace))}\n"
        f"[state]\ndir = {json.dumps(str(state))}\n{extra}",
        encoding="utf-8",
    )
    return cfg


def memoryd(cfg: Path, *args: str, check: bool = True) -> subprocess.CompletedProcess[str]:
    env = dict(os.environ, MEMORYD_CONFIG=str(cfg), MEMORYD_NOW=str(NOW))
    proc = run_memoryd(args, env=env)
    if check and proc.returncode != 0:
        raise AssertionError(f"memoryd {' '.join(args)} exited {proc.returncode}: {proc.stderr}")
    return proc


def report(cfg: Path, window: str) -> dict:
    """``memoryd hits --json`` without a scan of its own: what the state holds now."""
    flag = ["--all"] if window == "all" else ["--days", window]
    return json.loads(memoryd(cfg, "hits", *flag, "--json", "--no-scan").stdout)


def assert_report_matches(doc: dict, truth: CorpusTruth, window_days: int | None) -> None:
    assert doc["window_days"] == window_days
    listed = [f["path"] for f in doc["files"]] + doc["never_hit"]
    assert len(listed) == len(set(listed)), "a file is listed twice"
    assert set(listed) == truth.memory_files, "every memory file, and only those, is reported"
    assert diff(truth.counts(window_days), counts(doc)) == {}
    hits_in_order = [f["hits"] for f in doc["files"]]
    assert hits_in_order == sorted(hits_in_order, reverse=True), "most hit first"
    for f in doc["files"]:
        if f["hits"]:
            assert f["last_hit"] == iso(truth.last_hit(f["path"])), f["path"]
    for path in doc["never_hit"]:
        assert truth.last_hit(path) is None, f"{path} was hit but is reported never hit"


# ------------------------------------------------------------------------ the 6 MB corpus


@pytest.fixture(scope="module")
def scanned(tmp_path_factory: pytest.TempPathFactory) -> tuple[CorpusTruth, Path, dict]:
    """A ~7 MB corpus with every variant, cold-scanned once by a real `memoryd scan`."""
    root = tmp_path_factory.mktemp("truth")
    truth = generate(
        root / "corpus",
        seed=20260,
        sessions=30,
        target_bytes=6_000_000,
        now=NOW,
        agents=("main", "ops"),  # two agents, one workspace: hits add up, ids stay per agent
    )
    cfg = write_config(root, truth, root / "state")
    summary = json.loads(memoryd(cfg, "scan", "--json").stdout)
    return truth, cfg, summary


def test_the_corpus_contains_every_variant_it_claims(scanned) -> None:
    truth, _, _ = scanned
    s = truth.stats
    missing = [
        f"{dim}={opt}"
        for dim, (opts, _) in DIMS.items()
        for opt in opts
        if not s.get(f"{dim}={opt}")
    ]
    assert missing == []
    for feature in (
        "successor_file", "successor_result", "reset_file", "deleted_file", "crlf_file",
        "cron_session", "hits_not_counted_cron", "hits_not_counted_dreaming",
        "hits_not_counted_decoy", "decoy_file", "decoy_other_tool", "cut_text",
        "duplicate_chunk", "sessions_source_result", "hostile_path", "multi_call_message",
        "multi_result_message", "big_line_memory_get", "big_line_other_tool", "garbage_line",
        "invalid_utf8_line",
    ):  # fmt: skip
        assert s.get(feature, 0) > 0, feature
    assert 5_000_000 < truth.transcript_bytes < 9_000_000
    assert {t.agent for t in truth.transcripts} == {"main", "ops"}
    names = [p.name for p in truth.ignored]
    for marker in (
        ".trajectory.jsonl",
        ".checkpoint.",
        ".lock",
        ".bak-",
        ".zst",
        ".tmp",
        "sessions.json",
    ):
        assert any(marker in n for n in names), marker
    assert truth.total_hits > 300


def test_cold_scan_counts_every_hit_of_all_time_exactly(scanned) -> None:
    truth, cfg, summary = scanned
    assert summary["new_hits"] == truth.total_hits
    assert_report_matches(report(cfg, "all"), truth, None)


def test_cold_scan_counts_the_last_30_days_exactly(scanned) -> None:
    truth, cfg, _ = scanned
    assert_report_matches(report(cfg, "30"), truth, 30)
    assert 0 < sum(truth.counts(30).values()) < truth.total_hits  # the window really cuts


def test_decoys_never_count(scanned) -> None:
    """Files the decoys point at (decoy files, other tools' output, cron, dreaming) stay unhit."""
    truth, cfg, _ = scanned
    doc = report(cfg, "all")
    never = set(doc["never_hit"]) | {f["path"] for f in doc["files"] if f["hits"] == 0}
    untouched = truth.memory_files - set(truth.hits)
    assert len(untouched) >= 20
    assert untouched <= never


def test_the_deleted_archive_is_a_zstd_copy_of_a_live_transcript(scanned) -> None:
    """Each agent's ``.jsonl.deleted.<ts>.zst`` is what OpenClaw derives for a deleted session
    (zstd, level 1, checksummed, the session's JSONL text) of a session still live as a file:
    its hits are all in the transcript, so the counts above hold only if none is counted twice.
    """
    truth, _, _ = scanned
    try:
        from compression import zstd  # type: ignore[import-not-found]
    except ImportError:  # below Python 3.14
        from backports import zstd  # type: ignore[no-redef]
    archives = [p for p in truth.ignored if p.name.endswith(".zst")]
    assert len(archives) == truth.stats["deleted_archive"] == 2  # one per agent
    live = {t.path.name: t for t in truth.transcripts if t.path == t.written_as}
    for archive in archives:
        frame = archive.read_bytes()
        assert frame[:4] == b"\x28\xb5\x2f\xfd" and frame[4] & 0x04, "a checksummed zstd frame"
        name = archive.name.split(".deleted.", 1)[0]
        assert name in live, f"{archive.name} copies no live transcript"
        text = zstd.decompress(frame)
        assert text == live[name].path.read_bytes()
        assert b'"memory_search"' in text or b'"memory_get"' in text  # hits it must not add


def test_a_second_scan_finds_nothing_new(scanned) -> None:
    truth, cfg, _ = scanned
    again = json.loads(memoryd(cfg, "scan", "--json").stdout)
    assert again["new_hits"] == 0
    assert counts(report(cfg, "all")) == truth.counts(None)


def test_decoy_files_would_count_if_read(tmp_path: Path) -> None:
    """The decoys are live ammunition: renamed as a transcript, a decoy file adds hits."""
    truth = generate(tmp_path / "c", seed=3, sessions=8, target_bytes=60_000, now=NOW)
    cfg = write_config(tmp_path, truth, tmp_path / "state")
    memoryd(cfg, "scan")
    assert counts(report(cfg, "all")) == truth.counts(None)
    trajectory = next(p for p in truth.ignored if p.name.endswith(".trajectory.jsonl"))
    trajectory.rename(trajectory.with_name("0000aaaa-1111-4222-8333-444455556666.jsonl"))
    memoryd(cfg, "scan")
    assert sum(counts(report(cfg, "all")).values()) > truth.total_hits


# ------------------------------------------------------------------------ line by line


def test_scanning_after_every_appended_line_gives_the_cold_counts(tmp_path: Path) -> None:
    """Transcripts written line by line (result lines in two halves), a scan after each write.

    Files are written under their live names and renamed afterwards (``.reset`` /
    ``.deleted``), successors after their parents, as OpenClaw writes them.
    """
    truth = generate(tmp_path / "c", seed=5, sessions=8, target_bytes=40_000, now=NOW)
    contents = {t.path: t.path.read_bytes() for t in truth.transcripts}
    for t in truth.transcripts:
        t.path.unlink()
    cfg = write_config(tmp_path, truth, tmp_path / "state")
    cold_cfg = write_config(tmp_path, truth, tmp_path / "cold")
    scans = 0
    for t in truth.transcripts:
        data = contents[t.path]
        sep = b"\r\n" if data.endswith(b"\r\n") else b"\n"
        with open(t.written_as, "wb", buffering=0) as out:
            for line in data.split(sep)[:-1]:
                if b"memory_" in line and len(line) > 200:  # a result or call line: half first
                    out.write(line[: len(line) // 2])
                    memoryd(cfg, "scan")
                    scans += 1
                    out.write(line[len(line) // 2 :] + sep)
                else:
                    out.write(line + sep)
                memoryd(cfg, "scan")
                scans += 1
        if t.written_as != t.path:
            t.written_as.rename(t.path)
            memoryd(cfg, "scan")
            scans += 1
        assert t.path.read_bytes() == data
    assert scans > 80
    incremental = report(cfg, "all")
    assert_report_matches(incremental, truth, None)
    memoryd(cold_cfg, "scan")
    assert counts(report(cold_cfg, "all")) == counts(incremental)
    assert_report_matches(report(cfg, "30"), truth, 30)


# ------------------------------------------------------------------------ the generator itself


def test_same_seed_same_corpus_wherever_it_is_written(tmp_path: Path) -> None:
    a = generate(tmp_path / "a", seed=11, sessions=10, target_bytes=150_000, now=NOW)
    b = generate(tmp_path / "deeper" / "b", seed=11, sessions=10, target_bytes=150_000, now=NOW)
    assert a.hits == b.hits
    assert a.stats == b.stats
    assert [t.path.relative_to(a.state_dir) for t in a.transcripts] == [
        t.path.relative_to(b.state_dir) for t in b.transcripts
    ]
    for ta, tb in zip(a.transcripts, b.transcripts, strict=True):
        da = (
            ta.path.read_bytes()
            .replace(str(a.workspace).encode(), b"WS")
            .replace(str(a.state_dir).encode(), b"SD")
        )
        db = (
            tb.path.read_bytes()
            .replace(str(b.workspace).encode(), b"WS")
            .replace(str(b.state_dir).encode(), b"SD")
        )
        assert da == db, ta.path.name
    c = generate(tmp_path / "c", seed=12, sessions=10, target_bytes=150_000, now=NOW)
    assert c.hits != a.hits


def test_the_demo_preset_is_small_and_quick(tmp_path: Path) -> None:
    # Quick because it is small (a wall-clock bound would fail on a loaded machine).
    truth = generate_demo(tmp_path / "demo", now=NOW)
    assert len(truth.transcripts) == 12
    assert 300_000 < truth.transcript_bytes < 600_000
    assert truth.total_hits > 10
    oc = (truth.state_dir / "openclaw.json").read_text(encoding="utf-8")
    assert oc.startswith("//") and str(truth.workspace) in oc  # JSON5 naming the workspace
    assert (truth.workspace / "MEMORY.md").is_file()
    span = DEMO["span_days"] + 1
    for rel in truth.memory_files:  # mtimes within the corpus span, none in the future
        assert NOW - span * 86400 < (truth.workspace / rel).stat().st_mtime <= NOW


def test_no_note_is_hit_before_its_day_or_after_now(tmp_path: Path) -> None:
    """A dated note (memory/2026-08-01*.md) exists from that day on: no hit can name it earlier."""
    truth = generate(tmp_path / "c", seed=8, sessions=40, target_bytes=2_000_000, now=NOW)
    dated = 0
    for rel, times in truth.hits.items():
        assert all(t < NOW for t in times), rel
        dated_name = re.match(r"(\d{4}-\d{2}-\d{2})(?:-[a-z-]+)?\.md$", rel.rsplit("/", 1)[-1])
        if dated_name:
            day = datetime.strptime(dated_name[1], "%Y-%m-%d").replace(tzinfo=UTC).timestamp()
            assert min(times) >= day, rel
            dated += 1
    assert dated >= 10
