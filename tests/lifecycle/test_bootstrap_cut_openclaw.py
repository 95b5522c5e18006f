"""memoryd's bootstrap cut against the installed OpenClaw 2026.9.6's own code.

Runs the package's ``buildBootstrapContextFiles`` (``dist/bootstrap-*.mjs`` in the live
harness's cache, ``python -m tests.live install``) under the harness's Node on 400 generated
workspaces and compares, file by file, what is loaded, the head and tail kept (as its marker
line states them) and the budget each took (for AGENTS.md, cut with a digest of its policy
lines, the budget only). Skipped where that cache is not.
"""

from __future__ import annotations

import json
import os
import random
import re
import subprocess
from pathlib import Path

import pytest

from memoryd.bootstrap_cut import FILE_ORDER, bootstrap_cuts, js_trim_end, kept_ranges
from memoryd.section_map import utf16_len

pytestmark = pytest.mark.subprocess

CACHE = Path(os.environ.get("MEMORYD_LIVE_CACHE") or Path.home() / ".cache" / "memoryd-live")


def _installed() -> tuple[Path, Path, str] | None:
    nodes = sorted(CACHE.glob("node-24*/node_modules/node/bin/node"))
    dist = "openclaw-2026.9.6*/node_modules/openclaw/dist"
    for module in sorted(CACHE.glob(f"{dist}/bootstrap-*.mjs")):
        text = module.read_text(encoding="utf-8", errors="replace")
        m = re.search(r"buildBootstrapContextFiles as (\w+)", text)
        if m and "BOOTSTRAP_HEAD_RATIO" in text and nodes:
            return nodes[-1], module, m.group(1)
    return None


DRIVER = """
import { readFileSync } from "node:fs";
const mod = await import(process.argv[1]);
const build = mod[process.argv[2]];
const cases = JSON.parse(readFileSync(process.argv[3], "utf8"));
// (loadWorkspaceBootstrapFiles leaves a missing MEMORY.md or USER.md out before this, and
// filterCompletedWorkspaceBootstrapFile a BOOTSTRAP.md of a workspace whose setup is
// completed, as it is once BOOTSTRAP.md is gone)
const out = cases.map((c) => build(
  c.files.filter((f) => f.content !== null
    || (f.name !== "MEMORY.md" && f.name !== "USER.md" && f.name !== "BOOTSTRAP.md"))
  .map((f) => f.content === null
    ? { name: f.name, path: "/ws/" + f.name, missing: true }
    : { name: f.name, path: "/ws/" + f.name, content: f.content, missing: false }),
  { maxChars: c.max, totalMaxChars: c.total },
).map((r) => ({ path: r.path, content: r.content })));
process.stdout.write(JSON.stringify(out));
"""

def _cases(seed: int, n: int) -> list[dict[str, object]]:
    """Workspaces of bootstrap files of many sizes (some missing, some with characters
    outside the BMP, whose surrogate pairs OpenClaw never splits), and limits around them."""
    rng = random.Random(seed)
    pieces = ["a", "b ", "\n", "# ", "- ", "😀", "é", "\t", "must ", "never ", "1. ", "```\n"]
    cases = []
    for _ in range(n):
        names = [f for f in FILE_ORDER if rng.random() < 0.6]
        files = []
        for name in names:
            if rng.random() < 0.15:
                files.append({"name": name, "content": None})
                continue
            unit = "".join(rng.choice(pieces) for _ in range(rng.randint(1, 40)))
            size = rng.choice([0, 10, 500, 3_000, 4_100, 19_990, 20_010, 26_000, 40_000])
            text = (unit * (size // len(unit) + 1))[:size] + rng.choice(["", "\n\n", " \n"])
            files.append({"name": name, "content": text})
        limit = rng.choice([50, 64, 100, 1_000, 4_000, 20_000, 25_000, rng.randint(50, 30_000)])
        total = rng.choice([60_000, 20_000, 30_000, 100, rng.randint(50, 90_000)])
        cases.append({"files": files, "max": limit, "total": total})
    return cases


def test_the_cut_is_where_the_installed_openclaw_puts_it(tmp_path):
    found = _installed()
    if found is None:
        pytest.skip("no OpenClaw 2026.9.6 in the live cache (python -m tests.live install)")
    node, module, alias = found
    cases = _cases(33, 400)
    (tmp_path / "cases.json").write_text(json.dumps(cases), encoding="utf-8")
    proc = subprocess.run(
        [str(node), "--input-type=module", "-e", DRIVER, module.as_uri(), alias,
         str(tmp_path / "cases.json")],
        capture_output=True, text=True, timeout=120, stdin=subprocess.DEVNULL,
    )  # fmt: skip
    assert proc.returncode == 0, proc.stderr[-2000:]
    truncated = 0
    for c, got in zip(cases, json.loads(proc.stdout), strict=True):
        files = {f["name"]: f["content"] for f in c["files"]}  # type: ignore[index, union-attr]
        where = f"case max={c['max']} total={c['total']} sizes=" + str(
            {n: None if t is None else len(t) for n, t in files.items()}
        )
        ours = bootstrap_cuts(files, c["max"], c["total"], {n: "/ws/" + n for n in files})
        theirs = {r["path"][len("/ws/"):]: r["content"] for r in got}
        loaded = {n for n, cut in ours.items() if cut.loaded}
        assert set(theirs) - {n for n, t in files.items() if t is None} == loaded, where
        for name in loaded:
            content, cut = theirs[name], ours[name]
            trimmed = js_trim_end(files[name] or "")
            assert utf16_len(content) == cut.injected, (name, where)
            if name == "AGENTS.md":  # (cut its own way: only the budget it takes matters here)
                continue
            ranges = kept_ranges(trimmed, cut)
            units = trimmed.encode("utf-16-le")
            head = units[2 * ranges[0][0] : 2 * ranges[0][1]].decode("utf-16-le") if ranges else ""
            assert content.startswith(head), (name, where)
            if not cut.truncated:
                assert content == trimmed, (name, where)
                continue
            truncated += 1
            m = re.search(r"kept (\d+)\+(\d+) chars of (\d+)|truncated (\d+)\+(\d+)/(\d+)", content)
            assert m is not None, (name, where)
            h, t = (int(x) for x in (m.group(1, 2) if m.group(1) else m.group(4, 5)))
            assert (h, t) == (cut.head, cut.tail), (name, where)
            if len(ranges) > 1:
                tail = units[2 * ranges[1][0] : 2 * ranges[1][1]].decode("utf-16-le")
                assert content.endswith(tail), (name, where)
    assert truncated > 100  # the cases do reach the cut
