"""A Mac's workspace, end to end with real files and ``python -m memoryd``.

The file system's traits are forced with ``MEMORYD_FS_TRAITS=macos`` (this machine's ext4
is case-sensitive and byte-exact: the same runs without it are the Linux answer). The
workspace and OpenClaw's state folder are symlinks into other folders, as iCloud, Dropbox
or a git checkout make them.
"""

from __future__ import annotations

import hashlib
import json
import os
import subprocess
import unicodedata
from pathlib import Path

import pytest

from support import transcripts as tx
from support.inprocess import memoryd as run_memoryd

pytestmark = pytest.mark.subprocess

DAY = 86400.0
NOW = tx.T0 + 200 * DAY
OLD = NOW - 120 * DAY
NFD_CAFE = unicodedata.normalize("NFD", "memory/café.md")
NFD_HANGUL = unicodedata.normalize("NFD", "memory/한글.md")


class Mac:
    """OpenClaw's state folder and the workspace, each a symlink to where it really is."""

    def __init__(self, root: Path) -> None:
        self.root = root
        self.real_state = root / "Library" / "openclaw-state"
        self.sessions = self.real_state / "agents" / "main" / "sessions"
        self.sessions.mkdir(parents=True)
        self.state = root / ".openclaw"
        self.state.symlink_to(self.real_state, target_is_directory=True)
        self.real_ws = root / "iCloud" / "claw"
        (self.real_ws / "memory").mkdir(parents=True)
        self.ws = root / "workspace"
        self.ws.symlink_to(self.real_ws, target_is_directory=True)
        self.config = root / "memoryd.toml"
        self.config.write_text(
            f'[openclaw]\nworkspace = "{self.ws}"\n[expire]\npolicy = "seed"\n', encoding="utf-8"
        )
        self.lines = [tx.header("s1", NOW - 30 * DAY)]
        self.n = 0

    def write(self, rel: str, mtime: float = OLD, folder: Path | None = None) -> Path:
        p = (folder or self.real_ws) / rel
        p.parent.mkdir(parents=True, exist_ok=True)
        p.write_text(f"# {rel}\nnotes\n", encoding="utf-8")
        os.utime(p, (mtime, mtime))
        return p

    def get(self, path: str, ts: float) -> None:
        """A memory_get as OpenClaw records it: the path echoed as the model wrote it."""
        self.n += 1
        cid = f"g{self.n}"
        self.lines.append(tx.call(cid, "memory_get", path=path, ts=ts - 1))
        payload = {"path": path, "text": "## notes"}
        self.lines.append(tx.result(cid, payload, ts=ts, tool="memory_get"))

    def search(self, paths: list[str], ts: float) -> None:
        """A memory_search: its paths are the names OpenClaw's index listed."""
        self.n += 1
        cid = f"s{self.n}"
        self.lines.append(tx.call(cid, query="notes", ts=ts - 1))
        self.lines.append(tx.result(cid, tx.search_payload(paths), ts=ts))

    def run(
        self, *args: str, mac: bool, check: bool = True, now: float = NOW
    ) -> subprocess.CompletedProcess[str]:
        (self.sessions / "s1.jsonl").write_bytes(b"".join(self.lines))
        env = {k: v for k, v in os.environ.items() if not k.startswith(("MEMORYD_", "OPENCLAW_"))}
        env.update(
            HOME=str(self.root),
            OPENCLAW_STATE_DIR=str(self.state),
            MEMORYD_CONFIG=str(self.config),
            MEMORYD_NOW=str(now),
        )
        if mac:
            env["MEMORYD_FS_TRAITS"] = "macos"
        proc = run_memoryd(args, env=env)
        if check:
            assert proc.returncode == 0, f"memoryd {args} → {proc.returncode}\n{proc.stderr}"
        return proc

    def json(self, *args: str, mac: bool, now: float = NOW) -> dict:
        return json.loads(self.run(*args, "--json", mac=mac, now=now).stdout)

    def tree(self, base: Path) -> dict[str, str]:
        out = {}
        for dirpath, _dirs, files in os.walk(base):
            for name in files:
                p = Path(dirpath) / name
                rel = p.relative_to(base).as_posix()
                out[rel] = (
                    "link:" + os.readlink(p)
                    if p.is_symlink()
                    else hashlib.sha256(p.read_bytes()).hexdigest()
                )
        return out


@pytest.fixture
def mac(tmp_path: Path) -> Mac:
    m = Mac(tmp_path)
    m.write("memory/projects.md")
    m.write(NFD_CAFE)  # HFS+ and many tools store NFD
    m.write(NFD_HANGUL)
    m.write("memory/abs.md")
    m.write("memory/unused.md")
    for d in (1, 2, 3):
        # The model writes its own spelling; the search index lists the names on disk.
        m.get("memory/Projects.md", NOW - d * DAY)
        m.get(unicodedata.normalize("NFC", "memory/café.md"), NOW - d * DAY - 60)
        m.get(unicodedata.normalize("NFC", "memory/한글.md"), NOW - d * DAY - 120)
        # An absolute path under where the symlinked workspace really is.
        m.get(f"{m.real_ws}/memory/abs.md", NOW - d * DAY - 180)
    ranked = [
        {"path": "memory/projects.md", "score": 0.9, "snippet": "", "source": "memory"},
        {"path": NFD_CAFE, "score": 0.5, "snippet": "", "source": "memory"},
    ]
    m.search(ranked, NOW - 4 * DAY)  # café second: read afterwards, under another spelling
    return m


def test_on_a_mac_every_spelling_counts_for_the_file_it_opened(mac: Mac) -> None:
    doc = mac.json("hits", mac=True)
    got = {f["path"]: f["hits"] for f in doc["files"]}
    assert got == {
        "memory/projects.md": 4,
        NFD_CAFE: 4,  # three reads spelled NFC, one search result spelled NFD
        NFD_HANGUL: 3,
        "memory/abs.md": 3,
    }
    assert doc["never_hit"] == ["memory/unused.md"]

    # expire keeps every note that is read; only the one nobody reads is planned.
    plan = mac.json("expire", "--dry-run", mac=True)
    assert [a["path"] for a in plan["archive"]] == ["memory/unused.md"]

    explained = mac.json("explain", "memory/projects.md", mac=True)
    assert explained["signals"]["hits_total"] == 4
    assert explained["signals"]["recorded_as"] == ["memory/Projects.md"]
    assert explained["expire"]["action"] == "keep"
    text = mac.run("explain", NFD_CAFE, mac=True).stdout
    assert "recorded also as: memory/café.md" in text
    # A read after a search of the same file, in another spelling, is a read of its result.
    strength = mac.json("explain", NFD_CAFE, mac=True)["signals"]["strength"]
    assert (strength["read"], strength["came_along"], strength["read_directly"]) == (1, 0, 3)


def test_on_linux_the_same_transcripts_name_no_file_and_are_folded_onto_none(mac: Mac) -> None:
    doc = mac.json("hits", mac=False)  # this machine's ext4, detected: exact
    got = {f["path"]: f["hits"] for f in doc["files"]}
    # Only what the search listed, and the absolute path: the reads name no file here.
    assert got == {"memory/projects.md": 1, NFD_CAFE: 1, "memory/abs.md": 3}
    assert sorted(doc["never_hit"]) == sorted([NFD_HANGUL, "memory/unused.md"])
    plan = mac.json("expire", "--dry-run", mac=False)
    assert sorted(a["path"] for a in plan["archive"]) == sorted(
        [NFD_CAFE, "memory/projects.md", NFD_HANGUL, "memory/unused.md"]
    )
    assert mac.json("explain", "memory/projects.md", mac=False)["signals"]["recorded_as"] == []


def test_moves_through_symlinked_folders_move_files_inside_them_and_restore_undoes(
    mac: Mac,
) -> None:
    outside = mac.root / "dotfiles"
    outside.mkdir()
    (outside / "linked.md").write_text("kept in a git checkout")
    os.utime(outside / "linked.md", (OLD, OLD))
    (mac.real_ws / "memory" / "linked.md").symlink_to(outside / "linked.md")
    mac.get("memory/linked.md", NOW - DAY)  # read, through the link, by OpenClaw
    outside_before = mac.tree(outside)
    before = mac.tree(mac.real_ws)

    done = mac.json("expire", "--force", mac=True)
    assert [(a["path"], a["to"]) for a in done["archive"]] == [
        ("memory/unused.md", "memory-archive/2026-09/memory/unused.md")
    ]
    # The workspace and state folders are still the user's symlinks; the file moved inside
    # the folder they lead to, the linked note and its target are untouched.
    assert mac.ws.is_symlink() and mac.state.is_symlink()
    assert (mac.real_ws / "memory-archive/2026-09/memory/unused.md").is_file()
    assert not (mac.real_ws / "memory/unused.md").exists()
    assert (mac.real_ws / "memory" / "linked.md").is_symlink()
    assert mac.tree(outside) == outside_before
    assert (mac.real_state / "memoryd" / "state.db").is_file()

    # The journal holds resolved paths; restore takes the path as the user gives it.
    proc = mac.run("restore", "memory/unused.md", mac=True)
    assert "unused.md" in proc.stdout
    assert mac.tree(mac.real_ws) == before
    assert mac.run("explain", "memory/linked.md", mac=True, check=False).returncode in (1, 2)


def test_two_files_that_fold_to_one_name_keep_exact_counts_and_say_so(tmp_path: Path) -> None:
    """A case-sensitive APFS volume (or a share) can hold Notes.md and notes.md at once."""
    m = Mac(tmp_path)
    m.write("memory/Notes.md")
    m.write("memory/notes.md")
    for d in (1, 2, 3):
        m.get("memory/NOTES.md", NOW - d * DAY)
        m.get("memory/notes.md", NOW - d * DAY - 60)
    proc = m.run("hits", "--json", mac=True)
    got = {f["path"]: f["hits"] for f in json.loads(proc.stdout)["files"]}
    assert got == {"memory/notes.md": 3}
    assert "memory/NOTES.md" in proc.stderr and "counted for none of them" in proc.stderr


def test_a_tier_note_read_every_day_under_another_spelling_is_not_forgotten(
    tmp_path: Path,
) -> None:
    m = Mac(tmp_path)
    tiers = m.real_state / "memory_fs"
    m.write("warm/plan.md", NOW - 20 * DAY, folder=tiers)
    m.write("warm/idle.md", NOW - 20 * DAY, folder=tiers)
    for d in range(1, 15):
        m.get(f"{m.state}/memory_fs/warm/Plan.md", NOW - d * DAY)
    m.run("scan", mac=False)  # (organize reads the database; a scan fills it)
    linux = m.json("organize", "--dry-run", mac=False)
    forgotten = {a["note"] for a in linux["actions"] if a["dst"].startswith("forgotten/")}
    assert forgotten == {"idle.md", "plan.md"}  # ext4: warm/Plan.md is no file of the store
    done = m.json("organize", mac=True)
    forgotten = {a["note"] for a in done["actions"] if a["dst"].startswith("forgotten/")}
    assert forgotten == {"idle.md"}
    assert (tiers / "warm" / "plan.md").is_file() and (tiers / "forgotten" / "idle.md").is_file()


def test_a_mark_or_an_explain_in_another_spelling_names_the_file(tmp_path: Path) -> None:
    """On a Mac `memoryd mark memory/Projects.md` is accepted (that path opens the file):
    the mark must protect memory/projects.md from expire."""
    from memoryd.store import Store

    m = Mac(tmp_path)
    m.write("memory/projects.md")
    m.run("scan", mac=True)  # creates the state database
    with Store.open(m.real_state / "memoryd" / "state.db") as store, store.transaction():
        store.set_mark("memory/Projects.md", "marked")
    plan = m.json("expire", "--dry-run", mac=True)
    assert [(k["path"], k["rule"]) for k in plan["keep"]] == [("memory/projects.md", "marked")]
    assert plan["archive"] == []
    explained = m.json("explain", "memory/Projects.md", mac=True)
    assert explained["path"] == "memory/projects.md" and explained["signals"]["marked"]
    # On ext4 the mark names no file: the note is archived as its own rule says.
    assert [a["path"] for a in m.json("expire", "--dry-run", mac=False)["archive"]] == [
        "memory/projects.md"
    ]


def test_a_tier_note_marked_under_another_spelling_is_never_deleted(tmp_path: Path) -> None:
    from memoryd.store import Store

    m = Mac(tmp_path)
    tiers = m.real_state / "memory_fs"
    m.write("forgotten/old.md", NOW - 60 * DAY, folder=tiers)
    m.json("organize", mac=True, now=NOW - 40 * DAY)  # it enters forgotten/ then
    with Store.open(m.real_state / "memoryd" / "state.db") as store, store.transaction():
        store.set_mark("tiers/Old.md", "marked")  # `memoryd mark tiers/forgotten/Old.md`
    linux = m.json("organize", "--dry-run", mac=False)
    assert [(a["op"], a["note"]) for a in linux["actions"]] == [("delete", "old.md")]
    done = m.json("organize", mac=True)
    assert [a for a in done["actions"] if a["op"] == "delete"] == []
    assert (tiers / "forgotten" / "old.md").is_file()


def test_a_mark_given_in_another_spelling_is_removed_by_the_name_explain_shows(
    tmp_path: Path,
) -> None:
    """`memoryd mark memory/Projects.md` on a Mac; explain then shows memory/projects.md as
    marked, and `memoryd unmark memory/projects.md` must free it (it said "was not marked"
    and the note stayed protected for ever)."""
    m = Mac(tmp_path)
    m.write("memory/projects.md")
    done = m.run("mark", "memory/Projects.md", mac=True)
    assert "marked memory/projects.md" in done.stdout  # stored under the file's own name
    assert m.json("explain", "memory/projects.md", mac=True)["signals"]["marked"]
    undone = m.run("unmark", "memory/projects.md", mac=True)
    assert "unmarked memory/projects.md" in undone.stdout
    assert not m.json("explain", "memory/projects.md", mac=True)["signals"]["marked"]
    assert [a["path"] for a in m.json("expire", "--dry-run", mac=True)["archive"]] == [
        "memory/projects.md"
    ]


def test_a_mark_stored_in_another_spelling_is_removed_by_the_files_name(tmp_path: Path) -> None:
    """A mark an older memoryd stored as typed (memory/Projects.md) is cleared by
    `unmark memory/projects.md` as well; on ext4 the two names stay two."""
    from memoryd.store import Store

    m = Mac(tmp_path)
    m.write("memory/projects.md")
    m.run("scan", mac=True)
    with Store.open(m.real_state / "memoryd" / "state.db") as store, store.transaction():
        store.set_mark("memory/Projects.md", "marked")
    assert "was not marked" in m.run("unmark", "memory/projects.md", mac=False).stdout
    assert "unmarked memory/Projects.md" in m.run("unmark", "memory/projects.md", mac=True).stdout
    assert not m.json("explain", "memory/projects.md", mac=True)["signals"]["marked"]
    # (unpin said "unpinn memory/*")
    m.run("pin", "memory/*", mac=True)
    assert m.run("unpin", "memory/*", mac=True).stdout == "unpinned memory/*\n"


def test_a_tier_note_marked_in_another_spelling_is_unmarked_by_its_name(tmp_path: Path) -> None:
    """`memoryd mark tiers/warm/Plan.md` on a Mac protects warm/plan.md (organize folds the
    mark); `memoryd unmark tiers/warm/plan.md` must lift it, and says so."""
    m = Mac(tmp_path)
    tiers = m.real_state / "memory_fs"
    m.write("warm/plan.md", NOW - 20 * DAY, folder=tiers)
    assert "marked tiers/plan.md" in m.run("mark", "tiers/warm/Plan.md", mac=True).stdout
    undone = m.run("unmark", "tiers/warm/plan.md", mac=True)
    assert "unmarked tiers/plan.md" in undone.stdout


def test_an_archived_note_comes_back_under_the_spelling_the_model_and_the_user_type(
    tmp_path: Path,
) -> None:
    """On a Mac a note stored NFD (``café.md`` as Finder writes it) opened under the NFC
    spelling the model and a Terminal type, and under another letter case; archived, it
    was reachable only by the journal's bytes: the plugin's read hook answered "none",
    `restore` said "no journaled move". Now a read or a restore in a spelling the file
    system folds onto the archived note's name brings it back. On Linux those spellings
    are other files: nothing is restored for them."""
    for mac_fs in (True, False):
        m = Mac(tmp_path / ("mac" if mac_fs else "linux"))
        m.write("MEMORY.md", mtime=NOW)
        m.write(NFD_CAFE)
        m.write("memory/Boat.md")
        m.write("memory/kept.md", mtime=NOW)
        m.get("memory/kept.md", NOW - DAY)
        done = m.json("expire", "--force", mac=mac_fs)
        assert {a["path"] for a in done["archive"]} >= {NFD_CAFE, "memory/Boat.md"}
        nfc = unicodedata.normalize("NFC", "memory/café.md")
        read = m.json("on-read", nfc, mac=mac_fs)
        back = m.run("restore", "memory/boat.md", mac=mac_fs, check=False)
        if mac_fs:
            assert read["outcome"] == "restored", read
            assert (m.real_ws / NFD_CAFE).is_file()  # home under its own name
            assert back.returncode == 0, back.stderr
            assert (m.real_ws / "memory/Boat.md").is_file()
        else:
            assert read["outcome"] == "none", read
            assert not (m.real_ws / NFD_CAFE).exists()
            assert back.returncode == 2 and "no journaled move" in back.stderr
            assert not (m.real_ws / "memory/Boat.md").exists()


def test_restore_takes_a_path_from_where_one_stands_in_the_workspace(tmp_path: Path) -> None:
    """`explain ./x.md` in memory/ names memory/x.md; `restore ./x.md` there, the file no
    longer there because it is archived, said "no journaled move" (the path was taken as
    workspace-relative, x.md). Now it restores memory/x.md, as `restore memory/x.md` does."""
    import sys

    m = Mac(tmp_path)
    m.write("MEMORY.md", mtime=NOW)
    m.write("memory/topic.md")
    m.run("expire", "--force", mac=False)
    assert not (m.real_ws / "memory/topic.md").exists()
    env = {k: v for k, v in os.environ.items() if not k.startswith(("MEMORYD_", "OPENCLAW_"))}
    env.update(HOME=str(m.root), OPENCLAW_STATE_DIR=str(m.state),
               MEMORYD_CONFIG=str(m.config), MEMORYD_NOW=str(NOW))  # fmt: skip
    proc = subprocess.run([sys.executable, "-m", "memoryd", "restore", "./topic.md"],
                          cwd=m.ws / "memory", env=env, capture_output=True, text=True)  # fmt: skip
    assert proc.returncode == 0, proc.stderr
    assert (m.real_ws / "memory/topic.md").is_file()


def test_a_symlinked_note_is_not_marked_as_explain_does_not_explain_it(tmp_path: Path) -> None:
    """memoryd never lists, counts or moves a note that is a symbolic link (explain says "not
    a memory file"), but `mark` took one, following the link: a mark on nothing memoryd
    keeps. Now it is refused, with the reason."""
    m = Mac(tmp_path)
    outside = m.root / "dotfiles" / "linked.md"
    outside.parent.mkdir()
    outside.write_text("kept in a git checkout")
    (m.real_ws / "memory" / "linked.md").symlink_to(outside)
    proc = m.run("mark", "memory/linked.md", mac=False, check=False)
    assert proc.returncode == 2 and "a symbolic link" in proc.stderr, proc.stderr
    assert "marked" not in proc.stdout


def test_the_archives_file_system_is_asked_below_the_workspaces_resolved_spelling(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The journal holds resolved paths. With the workspace reached through a link whose
    name sorts before its target's (``~/ws`` → ``/Volumes/Data/ws``), the read hook asked
    the file system's traits below the link, found none of the archived copies there, and
    so never folded another spelling onto an archived note. Asked below the spelling that
    holds them, this machine's file system answers (ext4: case-sensitive, a known answer),
    where before it answered "not known"."""
    from memoryd.ondemand import Archived, archive_traits

    monkeypatch.delenv("MEMORYD_FS_TRAITS", raising=False)
    real = tmp_path / "zreal" / "ws"
    copy = real / "memory-archive" / "2026-01" / "memory" / "Boat.md"
    copy.parent.mkdir(parents=True)
    copy.write_text("boat\n")
    (tmp_path / "Alink").symlink_to(tmp_path / "zreal", target_is_directory=True)
    given = tmp_path / "Alink" / "ws"
    archived = Archived(1, str(real / "memory" / "Boat.md"), str(copy), 0.0)
    traits = archive_traits([str(given), str(real)])([archived])
    assert traits.case is False, traits
