"""The reflect page, rendered by a real headless Chromium and checked for what it shows.

A workspace with a MEMORY.md over OpenClaw's 20,000-character budget (16 topics, a heading
that tries to be a script), notes (one named like an HTML attack), searches at known weeks
scanned for real from transcripts in OpenClaw 2026.9.6's shapes, an expire run and a
``restore --last``; then ``memoryd reflect`` writes the page and Debian's ``chromium`` loads
it: its DOM (``--dump-dom``) holds the heatmap cells of the known hits, the cut sections
under the budget bar and the run with what came back, and no markup from a name; its
screenshot (``--screenshot``, decoded here) shows the bar's cut part at its size. Skipped,
with the reason, where chromium is not installed (``.ci/run`` installs it).
"""

from __future__ import annotations

import html.parser
import json
import os
import shutil
import struct
import subprocess
import tempfile
import zlib
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest

from memoryd.report_html import CUT_COLOUR, HEAT_COLOURS, LOADED_COLOUR
from support import transcripts as tx
from support.inprocess import memoryd as run_memoryd

pytestmark = pytest.mark.subprocess

NOW = 1_796_000_000.0  # 2026-11-30 (a Monday, 01:33 UTC)
DAY = 86400.0
HOSTILE_HEADING = "<script>document.title='owned'</script> & <b onclick=\"x()\">Tapir</b>"
HOSTILE_NOTE = 'memory/"><img src=x onerror=alert(1)>.md'
CHROMIUM = shutil.which("chromium") or shutil.which("chromium-browser")
needs_chromium = pytest.mark.skipif(
    CHROMIUM is None,
    reason="Debian's chromium is not installed (apt-get install chromium; .ci/run does it)",
)


def chromium(*args: str) -> subprocess.CompletedProcess[str]:
    """Headless Chromium with no network of its own and a fresh profile."""
    assert CHROMIUM is not None
    with tempfile.TemporaryDirectory(prefix="memoryd-chromium-") as profile:
        return subprocess.run(
            [CHROMIUM, "--headless", "--no-sandbox", "--disable-gpu", "--disable-quic",
             "--no-first-run", "--disable-background-networking", "--disable-component-update",
             "--disable-sync", "--hide-scrollbars", f"--user-data-dir={profile}", *args],
            capture_output=True, text=True, timeout=240,
        )  # fmt: skip


def _memory_md() -> str:
    out = ["# Long-term memory", ""]
    for i in range(16):
        out.append(f"## Topic {i}" if i != 12 else f"## {HOSTILE_HEADING}")
        out += [f"- fact {i}.{j}: {'detail ' * 40}{i * 100 + j}" for j in range(9)]
        out.append("")
    return "\n".join(out)


def _lines_of(text: str, heading: str) -> tuple[int, int]:
    lines = text.split("\n")
    first = lines.index(heading) + 1
    last = first
    while last < len(lines) and not lines[last].startswith("#"):
        last += 1
    return first, last


def _search(text: str, path: str, chunk: tuple[int, int] | None) -> dict:
    if chunk is None:  # a note: one chunk of its first line
        body, chunk = text.split("\n")[0], (1, 1)
    else:
        body = "\n".join(text.split("\n")[chunk[0] - 1 : chunk[1]])
    return {"results": [{
        "path": path, "startLine": chunk[0], "endLine": chunk[1], "score": 0.7,
        "snippet": f"{body}\n\nSource: {path}#L{chunk[0]}-L{chunk[1]}", "source": "memory",
        "citation": f"{path}#L{chunk[0]}-L{chunk[1]}",
    }], "provider": "none", "citations": "auto"}  # fmt: skip


def _monday(ts: float) -> str:
    day = datetime.fromtimestamp(ts, UTC).date()
    return (day - timedelta(days=day.weekday())).isoformat()


class _Dom(html.parser.HTMLParser):
    """The elements of a dumped DOM: (tag, attributes, text inside), in order."""

    def __init__(self) -> None:
        super().__init__()
        self.elements: list[tuple[str, dict[str, str], list[str]]] = []
        self._open: list[list[str]] = []

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        text: list[str] = []
        self.elements.append((tag, {k: v or "" for k, v in attrs}, text))
        if tag not in ("meta", "br", "img", "input", "link"):
            self._open.append(text)

    def handle_endtag(self, tag: str) -> None:
        if self._open:
            self._open.pop()

    def handle_data(self, data: str) -> None:
        for text in self._open:
            text.append(data)


def _png_pixels(data: bytes) -> tuple[int, int, list[bytes]]:
    """(width, height, rows of RGB(A) bytes) of a non-interlaced 8-bit PNG (Chromium's)."""
    assert data[:8] == b"\x89PNG\r\n\x1a\n"
    at, idat, width, height, channels = 8, b"", 0, 0, 0
    while at < len(data):
        (size,) = struct.unpack(">I", data[at : at + 4])
        kind, body = data[at + 4 : at + 8], data[at + 8 : at + 8 + size]
        if kind == b"IHDR":
            width, height, depth, colour, _, _, interlace = struct.unpack(">IIBBBBB", body)
            assert depth == 8 and interlace == 0 and colour in (2, 6)
            channels = 3 if colour == 2 else 4
        elif kind == b"IDAT":
            idat += body
        at += 12 + size
    raw = zlib.decompress(idat)
    stride = width * channels
    rows: list[bytes] = []
    prev = bytearray(stride)
    for y in range(height):
        kind = raw[y * (stride + 1)]
        line = bytearray(raw[y * (stride + 1) + 1 : (y + 1) * (stride + 1)])
        for i in range(stride):
            a = line[i - channels] if i >= channels else 0
            b = prev[i]
            c = prev[i - channels] if i >= channels else 0
            if kind == 1:
                line[i] = (line[i] + a) & 0xFF
            elif kind == 2:
                line[i] = (line[i] + b) & 0xFF
            elif kind == 3:
                line[i] = (line[i] + (a + b) // 2) & 0xFF
            elif kind == 4:
                p = a + b - c
                pa, pb, pc = abs(p - a), abs(p - b), abs(p - c)
                pred = a if pa <= pb and pa <= pc else (b if pb <= pc else c)
                line[i] = (line[i] + pred) & 0xFF
        rows.append(bytes(line) if channels == 3 else bytes(
            v for j in range(0, stride, 4) for v in line[j : j + 3]))  # fmt: skip
        prev = line
    return width, height, rows


def _rgb(colour: str) -> bytes:
    return bytes.fromhex(colour[1:])


@pytest.fixture(scope="module")
def page(tmp_path_factory: pytest.TempPathFactory) -> dict:
    """An install used for weeks, expired and restored, then reflected: the page's path and
    what the test knows of it."""
    root = tmp_path_factory.mktemp("page")
    sessions, ws, cfg = tx.make_install(root, [])
    extra = '\n[expire]\npolicy = "seed"\n[schedule]\ntimezone = "UTC"\n'
    cfg.write_text(cfg.read_text() + extra, encoding="utf-8")
    env = {k: v for k, v in os.environ.items() if not k.startswith(("MEMORYD_", "OPENCLAW_"))}
    env.update(MEMORYD_CONFIG=str(cfg), MEMORYD_NOW=str(NOW))
    memory = _memory_md()
    (ws / "MEMORY.md").write_text(memory, encoding="utf-8")
    (ws / "AGENTS.md").write_text("# Agents\n- be kind\n", encoding="utf-8")
    (ws / "memory").mkdir()
    notes = {"memory/wireguard.md": "# Wireguard\n- the tunnel runs on port 51820\n",
             HOSTILE_NOTE: "# A note with a name like an attack\n- harmless inside\n",
             "memory/2026-08-01.md": "# August the first\n- an old day\n"}  # fmt: skip
    for rel, text in notes.items():
        (ws / rel).write_text(text, encoding="utf-8")
    old = NOW - 120 * DAY
    os.utime(ws / "memory/2026-08-01.md", (old, old))
    t_two, t_seven, t_note = NOW - 15 * DAY, NOW - 8 * DAY, NOW - 15 * DAY + 3600
    searches = [  # (when, path, chunk)
        (t_two, "MEMORY.md", _lines_of(memory, "## Topic 2")),
        (t_two + 60, "MEMORY.md", _lines_of(memory, "## Topic 2")),
        (t_seven, "MEMORY.md", _lines_of(memory, "## Topic 7")),
        (t_seven + 60, "MEMORY.md", _lines_of(memory, f"## {HOSTILE_HEADING}")),
        *[(t_note + i * 60, "memory/wireguard.md", None) for i in range(3)],
        (t_note + 600, HOSTILE_NOTE, None),
    ]
    lines = [tx.header("s1", NOW - 20 * DAY)]
    for n, (when, path, chunk) in enumerate(searches):
        text = memory if path == "MEMORY.md" else notes[path]
        lines += [tx.call(f"c{n}", query=f"q{n}", ts=when)]
        lines += [tx.result(f"c{n}", _search(text, path, chunk), ts=when + 1, details="same")]
    (sessions / "s1.jsonl").write_bytes(b"".join(lines))
    assert run_memoryd(["scan"], env=env).returncode == 0
    done = run_memoryd(["expire", "--force", "--json", "--no-scan"], env=env)
    assert done.returncode == 0, done.stderr
    assert [a["path"] for a in json.loads(done.stdout)["archive"]] == ["memory/2026-08-01.md"]
    back = run_memoryd(["restore", "--last", "--json"], env=env)
    assert back.returncode == 0, back.stderr
    proc = run_memoryd(["reflect", "--json", "--no-scan"], env=env)
    assert proc.returncode == 0, proc.stderr
    path = Path(json.loads(proc.stdout)["page"])
    opened = run_memoryd(["report", "--open"], env=env)
    assert opened.returncode == 0 and opened.stdout.strip() == str(path)
    sections = json.loads(run_memoryd(["sections", "MEMORY.md", "--json", "--no-scan"],
                                      env=env).stdout)  # fmt: skip
    return {"path": path, "weeks": (_monday(t_two), _monday(t_seven)), "sections": sections}


def test_report_open_without_a_page_says_what_to_run(tmp_path: Path) -> None:
    _, _, cfg = tx.make_install(tmp_path, [])
    env = {k: v for k, v in os.environ.items() if not k.startswith(("MEMORYD_", "OPENCLAW_"))}
    env.update(MEMORYD_CONFIG=str(cfg), MEMORYD_NOW=str(NOW))
    proc = run_memoryd(["report", "--open"], env=env)
    assert proc.returncode == 1 and "memoryd reflect" in proc.stderr and not proc.stdout


@needs_chromium
def test_chromium_shows_the_hits_the_cut_and_the_runs(page: dict) -> None:
    proc = chromium("--dump-dom", page["path"].as_uri())
    assert proc.returncode == 0 and "</html>" in proc.stdout, proc.stderr[-2000:]
    dom = _Dom()
    dom.feed(proc.stdout)
    els = dom.elements
    # Nothing from a name became markup: no script ran (the title is the page's), no element
    # a name spelled, no handler attribute; the names show as their text.
    assert not [t for t, _, _ in els if t in ("script", "img", "iframe", "object", "b")]
    assert not [a for _, attrs, _ in els for a in attrs if a.startswith("on")]
    title = next("".join(text) for t, _, text in els if t == "title")
    assert title.startswith("memoryd — 2026-11-30")
    labels = {attrs["data-label"] for t, attrs, _ in els if t == "tr" and "data-label" in attrs}
    assert f"## {HOSTILE_HEADING}" in labels and HOSTILE_NOTE in labels

    def cells(label: str) -> dict[str, int]:
        """week → hits of the heatmap row ``label``."""
        row = next(
            i for i, (t, a, _) in enumerate(els) if t == "tr" and a.get("data-label") == label
        )
        out = {}
        for t, a, _ in els[row + 1 :]:
            if t == "tr":
                break
            if t == "td" and "data-week" in a:
                out[a["data-week"]] = int(a["data-hits"])
        return out

    w_two, w_seven = page["weeks"]
    assert {w: n for w, n in cells("## Topic 2").items() if n} == {w_two: 2}
    assert {w: n for w, n in cells("## Topic 7").items() if n} == {w_seven: 1}
    assert {w: n for w, n in cells(f"## {HOSTILE_HEADING}").items() if n} == {w_seven: 1}
    assert {w: n for w, n in cells("memory/wireguard.md").items() if n} == {w_two: 3}
    assert {w: n for w, n in cells("MEMORY.md").items() if n} == {w_two: 2, w_seven: 2}
    assert not any(cells("## Topic 3").values()) and len(cells("## Topic 3")) == 26
    # The cut sections listed under the budget bar: exactly those `sections` says are cut.
    listed = {
        "".join(text).split(" characters")[0].rsplit(" ", 1)[0]: attrs["data-state"]
        for t, attrs, text in els
        if t == "li" and "data-state" in attrs
    }
    want = {s["title"]: s["bootstrap"] for s in page["sections"]["sections"]
            if s["bootstrap"] != "loaded"}  # fmt: skip
    assert listed == want and "cut" in want.values()
    assert listed["## Topic 7"] == "cut"
    # The expire run, what it moved, and the note back since.
    runs = [a["data-batch"] for t, a, _ in els if t == "article"]
    assert len(runs) == 1 and runs[0].startswith("expire:2026-11:")
    entries = ["".join(text) for t, a, text in els if t == "tr" and "entry" in a.get("class", "")]
    assert len(entries) == 1 and "memory/2026-08-01.md" in entries[0]
    assert "memory-archive/2026-11/memory/2026-08-01.md" in entries[0]
    back = ["".join(text) for t, a, text in els if t == "li" and a.get("class") == "restored"]
    # (the journal keeps the wall clock's times: MEMORYD_NOW moves memoryd's clock only)
    assert len(back) == 1 and back[0].startswith("memory/2026-08-01.md back on 20")
    assert back[0].endswith(f"by undo:{runs[0]}")


@needs_chromium
def test_the_screenshot_shows_the_cut_part_of_memory_md_at_its_size(page: dict) -> None:
    shot = page["path"].parent / "shot.png"
    proc = chromium("--window-size=1200,2600", f"--screenshot={shot}", page["path"].as_uri())
    assert proc.returncode == 0 and shot.exists(), proc.stderr[-2000:]
    width, _, rows = _png_pixels(shot.read_bytes())
    cut, loaded = _rgb(CUT_COLOUR), _rgb(LOADED_COLOUR)

    def count(row: bytes, colour: bytes) -> int:
        return sum(1 for x in range(width) if row[3 * x : 3 * x + 3] == colour)

    # the bar of MEMORY.md: the rows most of whose pixels are loaded or cut
    bar = [(count(r, cut), count(r, loaded)) for r in rows]
    c, ld = max(bar, key=lambda p: p[0] + p[1] if p[0] else 0)
    boot = page["sections"]["bootstrap"]
    assert c > 0 and ld > 0
    assert abs(c / (c + ld) - boot["dropped"] / boot["length"]) < 0.03
    # the busiest heatmap cells are drawn in the top colour
    top = _rgb(HEAT_COLOURS[4])
    assert sum(count(r, top) for r in rows) >= 9 * 9
