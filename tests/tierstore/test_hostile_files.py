"""Hostile files in the tier store and the archive (issue 30): a FIFO, a huge note, a binary
note, a symlink. Real files, a real FIFO (``os.mkfifo``) and real processes, each run with a
timeout: a regression that blocks fails here instead of hanging the suite."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from pathlib import Path

import pytest

from support.daemon_harness import Install, make_install, run_cli

pytestmark = pytest.mark.subprocess

TIMEOUT = 60  # far above a normal run (well under a second), far below "forever"

BOAT = "# Sailing\nChartered the ketch Albatross from Svolvaer harbour.\n"


def memoryd(inst: Install, *args: str, timeout: float = TIMEOUT) -> subprocess.CompletedProcess:
    """A one-shot command in a process of its own, killed (and the test failed) if it hangs."""
    env = {k: v for k, v in os.environ.items() if not k.startswith(("MEMORYD_", "OPENCLAW_"))}
    return subprocess.run(
        [sys.executable, "-m", "memoryd", "--config", str(inst.config), *args],
        capture_output=True,
        text=True,
        env=env,
        cwd=inst.root,
        timeout=timeout,
        stdin=subprocess.DEVNULL,
    )


def tiers(inst: Install) -> Path:
    return inst.root / "state" / "memory_fs"


def archived_boat(tmp_path: Path) -> tuple[Install, Path]:
    """An install whose note memory/boat.md was archived by ``expire --force``."""
    inst = make_install(tmp_path, memory_files=0)
    note = inst.workspace / "memory" / "boat.md"
    note.parent.mkdir(parents=True, exist_ok=True)
    note.write_text(BOAT, encoding="utf-8")
    old = time.time() - 90 * 86400
    os.utime(note, (old, old))
    forced = run_cli(inst, "expire", "--force", "--json")
    assert forced.returncode == 0, forced.stderr
    [to] = [a["to"] for a in json.loads(forced.stdout)["archive"]]
    return inst, inst.workspace / to


def fifo_over(path: Path) -> None:
    path.unlink()
    os.mkfifo(path)


def test_a_fifo_in_place_of_an_archived_note_never_stalls_recall_or_organize(
    tmp_path: Path,
) -> None:
    inst, copy = archived_boat(tmp_path)
    fifo_over(copy)
    for tier in ("hot", "warm", "gist", "forgotten"):
        (tiers(inst) / tier).mkdir(parents=True, exist_ok=True)
    out = memoryd(inst, "recall", "--json", "albatross")
    assert out.returncode == 0, out.stderr
    doc = json.loads(out.stdout)
    assert doc["tier"] is None and "Possible reasons" in doc["message"]
    # ... and that a file was skipped unread, not only "it was never recorded".
    assert "1 file in the tier store or the archive was skipped unread" in doc["message"]
    # One log line names the FIFO, and why it was left alone.
    lines = [json.loads(ln) for ln in out.stderr.splitlines() if ln.startswith("{")]
    [line] = [ln for ln in lines if ln["event"] == "note.not_a_note"]
    assert line["file"] == str(copy) and "not a regular file" in line["why"]
    # The lock was not kept: organize and another recall run, and the FIFO is still there.
    assert memoryd(inst, "organize", "--json").returncode == 0
    assert memoryd(inst, "recall", "--json", "albatross").returncode == 0
    assert copy.is_fifo()
    # The refused reads are counted.
    with __import__("sqlite3").connect(inst.db) as conn:
        [(n,)] = conn.execute("SELECT value FROM counters WHERE name = 'notes_not_regular'")
    assert n >= 2


# --------------------------------------------------------------------------- a FIFO racing a read


def stopped(proc: subprocess.Popen, timeout: float = TIMEOUT) -> None:
    """Wait until ``proc`` stopped itself at a fault point (state T in /proc)."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        assert proc.poll() is None, proc.communicate()
        with open(f"/proc/{proc.pid}/stat") as fh:
            if fh.read().rsplit(")", 1)[1].split()[0] == "T":
                return
        time.sleep(0.01)
    proc.kill()
    raise AssertionError("the command never reached its fault point")


def racing_fifo(inst: Install, point: str, victim: Path, *args: str) -> tuple[int, str, str]:
    """Run ``memoryd *args`` stopped at ``point``, rename a FIFO over ``victim``, let it go on."""
    env = {k: v for k, v in os.environ.items() if not k.startswith(("MEMORYD_", "OPENCLAW_"))}
    env["MEMORYD_FAULT"] = f"{point}:1:stop"
    proc = subprocess.Popen(
        [sys.executable, "-m", "memoryd", "--config", str(inst.config), *args],
        stdin=subprocess.DEVNULL,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env=env,
        cwd=inst.root,
    )
    try:
        stopped(proc)
        fifo = victim.with_name(".incoming.fifo")
        os.mkfifo(fifo)
        os.rename(fifo, victim)
        os.kill(proc.pid, __import__("signal").SIGCONT)
        out, err = proc.communicate(timeout=TIMEOUT)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.communicate()
    return proc.returncode, out, err


def hot_store(tmp_path: Path) -> tuple[Install, Path]:
    inst = make_install(tmp_path, memory_files=0)
    hot = tiers(inst) / "hot"
    hot.mkdir(parents=True)
    for tier in ("warm", "gist", "forgotten"):
        (tiers(inst) / tier).mkdir()
    (hot / "real.md").write_text("# Real\nalbatross sighted\n", encoding="utf-8")
    return inst, hot


def test_a_fifo_renamed_over_a_hot_note_after_the_listing_never_stalls_inject(
    tmp_path: Path,
) -> None:
    inst, hot = hot_store(tmp_path)
    (hot / "other.md").write_text("# Other\nstays\n", encoding="utf-8")
    rc, out, err = racing_fifo(
        inst, "inject.listed", hot / "real.md", "inject", "--session", "--json"
    )
    assert rc == 0, err
    doc = json.loads(out)
    assert doc["included"] == ["other.md"] and doc["not_notes"] == ["real.md"]
    assert "note.not_a_note" in err


def test_a_fifo_renamed_over_a_hot_note_after_the_listing_never_stalls_recall(
    tmp_path: Path,
) -> None:
    inst, hot = hot_store(tmp_path)
    rc, out, err = racing_fifo(
        inst, "recall.listed", hot / "real.md", "recall", "--json", "albatross"
    )
    assert rc == 0, err
    doc = json.loads(out)
    assert doc["shown"] == [] and doc["not_notes"] == 1
    assert (hot / "real.md").is_fifo()  # left where it is, untouched


# --------------------------------------------------------------------------- huge, binary, links


def test_a_huge_note_in_hot_is_read_only_as_far_as_the_budget_needs(tmp_path: Path) -> None:
    """A 2 GiB note (sparse: no disk) under a 512 MiB address-space limit: read whole, the
    command dies of it; read as far as the budget needs, the session gets its notes."""
    import resource

    inst, hot = hot_store(tmp_path)
    big = hot / "big.md"
    with open(big, "wb") as fh:
        fh.write(b"# Big\n" + b"x" * (4 << 20))  # text well past any budget, then a hole
        fh.truncate(2 << 30)
    later = time.time() + 60
    os.utime(big, (later, later))

    def limit() -> None:
        resource.setrlimit(resource.RLIMIT_AS, (512 << 20, 512 << 20))

    env = {k: v for k, v in os.environ.items() if not k.startswith(("MEMORYD_", "OPENCLAW_"))}
    out = subprocess.run(
        [
            sys.executable,
            "-m",
            "memoryd",
            "--config",
            str(inst.config),
            "inject",
            "--session",
            "--json",
        ],
        capture_output=True,
        text=True,
        env=env,
        timeout=TIMEOUT,
        preexec_fn=limit,
    )
    assert out.returncode == 0, out.stderr[-2000:]
    doc = json.loads(out.stdout)
    assert doc["included"] == ["big.md"] and doc["truncated"]
    assert (
        doc["text"].startswith("## hot/big.md\n# Big\nxxx") and len(doc["text"]) <= doc["max_chars"]
    )
    assert doc["omitted"] == ["real.md"]


def test_a_recall_of_a_huge_note_answers_in_json_the_plugin_can_read(tmp_path: Path) -> None:
    """A 9.5 MB note in warm/: ``recall --json`` printed its whole text, past the 8 MiB the
    plugin keeps of a command's output, so the tool failed ("no JSON on stdout") after the
    note had moved to hot/ and its hit was counted. The text handed on is cut (the plugin
    shows 8,000 characters); the whole note is where the answer says it is."""
    from memoryd.tierstore.search import SHOWN_MAX_CHARS

    inst, hot = hot_store(tmp_path)
    warm = tiers(inst) / "warm"
    body = "# Kayak\nkayak paddles and a spray deck\n" + "long log line\n" * 700_000
    (warm / "kayak.md").write_text(body, encoding="utf-8")
    old = time.time() - 3 * 86400
    os.utime(warm / "kayak.md", (old, old))
    out = memoryd(inst, "recall", "--json", "--", "kayak")
    assert out.returncode == 0, out.stderr[-2000:]
    assert len(out.stdout.encode()) < 1 << 20
    doc = json.loads(out.stdout)
    [shown] = [d for d in doc["shown"] if "kayak" in d.get("text", "")]
    assert shown["text"].startswith("# Kayak\nkayak paddles")
    assert len(shown["text"]) <= SHOWN_MAX_CHARS + 80
    assert "cut at 64,000 characters" in shown["text"]
    assert (hot / "kayak.md").read_text(encoding="utf-8") == body  # moved whole


def test_a_binary_md_in_hot_is_not_injected_as_replacement_characters(tmp_path: Path) -> None:
    inst, hot = hot_store(tmp_path)
    (hot / "photo.md").write_bytes(bytes(range(256)) * 40)
    out = memoryd(inst, "inject", "--session", "--json")
    assert out.returncode == 0, out.stderr
    doc = json.loads(out.stdout)
    assert doc["included"] == ["real.md"] and doc["not_notes"] == ["photo.md"]
    assert "\ufffd" not in doc["text"]


def test_a_symlink_in_hot_is_never_read_nor_its_target_stamped(tmp_path: Path) -> None:
    inst, hot = hot_store(tmp_path)
    target = tmp_path / "passwd"
    target.write_text("root:x:0:0\n", encoding="utf-8")
    (hot / "passwd.md").symlink_to(target)
    out = memoryd(inst, "inject", "--session", "--json")
    assert out.returncode == 0, out.stderr
    doc = json.loads(out.stdout)
    assert "root:x" not in doc["text"]
    watched = {w["path"]: w["stamp"] for w in doc["session"]["watch"]}
    assert str(hot / "passwd.md") not in watched
    st = target.stat()
    assert f"{st.st_mtime_ns}:{st.st_size}" not in watched.values()
    assert watched[str(hot / "real.md")] != "missing"


# --------------------------------------------------------------------------- a read-only state


def _read_only_run(inst: Install, *args: str) -> subprocess.CompletedProcess:
    """``memoryd *args`` with the state folder bind-mounted read-only (a private mount
    namespace: nothing outside the command sees the mount)."""
    md = inst.db.parent
    script = f'mount --bind "{md}" "{md}" && mount -o remount,bind,ro "{md}" && exec "$@"'
    env = {k: v for k, v in os.environ.items() if not k.startswith(("MEMORYD_", "OPENCLAW_"))}
    return subprocess.run(
        ["unshare", "-m", "sh", "-c", script, "sh", sys.executable, "-m", "memoryd",
         "--config", str(inst.config), *args],
        capture_output=True, text=True, env=env, timeout=TIMEOUT, stdin=subprocess.DEVNULL,
    )  # fmt: skip


@pytest.mark.parametrize("wal", [True, False], ids=["wal-present", "closed-cleanly"])
def test_a_read_only_state_folder_gives_the_documented_line_for_every_command(
    tmp_path: Path, wal: bool
) -> None:
    import shutil
    import sqlite3

    inst, _copy = archived_boat(tmp_path)
    (tiers(inst) / "hot").mkdir(parents=True)
    if shutil.which("unshare") is None or _read_only_run(inst, "--version").returncode != 0:
        pytest.skip("no private mount namespace here (unshare -m needs CAP_SYS_ADMIN)")
    keep = sqlite3.connect(inst.db) if wal else None  # a daemon's -wal and -shm are there
    try:
        if keep is not None:
            keep.execute("SELECT COUNT(*) FROM hits").fetchall()
        for args in (
            ["recall", "albatross"],
            ["recall", "--json", "albatross"],
            ["expire", "--force"],
            ["restore", "--last"],
            ["organize"],
        ):
            out = _read_only_run(inst, *args)
            assert out.returncode == 1, (args, out.stdout, out.stderr)
            [line] = out.stderr.splitlines()
            assert line.startswith(f"memoryd: state database {inst.db}"), (args, line)
            assert "read-only" in line and line.endswith("(check owner, mode and mount)"), line
    finally:
        if keep is not None:
            keep.close()
    assert (inst.workspace / _copy.relative_to(inst.workspace)).exists()  # nothing moved


# --------------------------------------------------------------------------- messages that mislead


def test_words_that_are_not_utf8_on_the_command_line_get_a_clear_message(tmp_path: Path) -> None:
    inst, hot = hot_store(tmp_path)
    (hot / "cafe.md").write_text("# Café\ncafé au lait\n", encoding="utf-8")
    env = {k: v for k, v in os.environ.items() if not k.startswith(("MEMORYD_", "OPENCLAW_"))}
    argv = [sys.executable, "-m", "memoryd", "--config", str(inst.config)]
    out = subprocess.run(
        [*argv, "recall", "--json", "--", os.fsdecode(b"caf\xff")],
        capture_output=True, env=env, timeout=TIMEOUT, stdin=subprocess.DEVNULL,
    )  # fmt: skip
    stderr = out.stderr.decode("utf-8", "replace")
    assert out.returncode == 2, stderr
    assert "Traceback" not in stderr and "codec" not in stderr
    [line] = stderr.splitlines()
    assert "not UTF-8" in line and "caf\\xff" in line
    doc = json.loads(out.stdout)
    assert doc["error"] == line.removeprefix("memoryd: ") and doc["matches"] == 0


def test_identical_recalls_started_together_all_learn_where_the_note_is(tmp_path: Path) -> None:
    """Six recalls wait at the tier store's lock (held here); the first brings the note back,
    and the five after it must not answer "never recorded, or deleted"."""
    import fcntl

    inst, copy = archived_boat(tmp_path)
    (tiers(inst) / "hot").mkdir(parents=True)
    env = {k: v for k, v in os.environ.items() if not k.startswith(("MEMORYD_", "OPENCLAW_"))}
    argv = [sys.executable, "-m", "memoryd", "--config", str(inst.config), "recall", "--json"]
    lock = os.open(inst.db.parent / "tiers.lock", os.O_RDWR | os.O_CREAT, 0o600)
    try:
        fcntl.flock(lock, fcntl.LOCK_EX)
        procs = [
            subprocess.Popen([*argv, "albatross"], stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                             text=True, env=env, stdin=subprocess.DEVNULL)
            for _ in range(6)
        ]  # fmt: skip
        time.sleep(0.5)  # (they may or may not be at the lock yet: either way is a race won)
    finally:
        os.close(lock)
    docs = []
    for p in procs:
        out, err = p.communicate(timeout=TIMEOUT)
        assert p.returncode == 0, err
        docs.append(json.loads(out))
    restored = [d for d in docs if d["hits_recorded"] == 1]
    assert len(restored) == 1 and "restored to the workspace" in restored[0]["message"]
    for d in docs:
        assert "never recorded" not in d["message"], d["message"]
        assert "memory/boat.md" in d["message"]
        assert d["shown"][0]["text"] == BOAT
    assert (inst.workspace / "memory" / "boat.md").read_text(encoding="utf-8") == BOAT
    assert not copy.exists()


def test_a_recall_refused_because_a_file_is_at_the_path_says_so_and_what_to_do(
    tmp_path: Path,
) -> None:
    inst, copy = archived_boat(tmp_path)
    (tiers(inst) / "hot").mkdir(parents=True)
    mine = "# Boat (my new notes)\nnothing about birds\n"
    (inst.workspace / "memory" / "boat.md").write_text(mine, encoding="utf-8")
    out = memoryd(inst, "recall", "--json", "albatross")
    assert out.returncode == 0, out.stderr
    doc = json.loads(out.stdout)
    assert "the restore failed" not in doc["message"]
    assert "a file is already at memory/boat.md" in doc["message"]
    assert "recall again" in doc["message"]
    [row] = doc["rotations"]
    assert row["status"] == "failed" and "already exists" in row["error"]
    assert doc["shown"][0]["text"] == BOAT  # the archived copy, read where it is
    assert (inst.workspace / "memory" / "boat.md").read_text(encoding="utf-8") == mine
    assert copy.read_text(encoding="utf-8") == BOAT
