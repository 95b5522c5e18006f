"""What memoryd's OpenClaw plugin adds to each model request, from the live harness's request log.

Issue 35: the plugin's tool, its prompt line and the hot notes are paid in characters (tokens)
of every request the real OpenClaw sends. ``python -m tests.live.plugin_live record`` keeps the
scripted model's request log (``tests/fixtures/openclaw-plugin/<version>/requests.jsonl.xz``);
this reads it (or any ``requests.jsonl``, e.g. from a ``--keep`` run) and prints, with Tool
Search on and off (told apart by what each request offers: ``tool_search`` or not), the
characters per request and per session (``live.plugin_cost`` says what is counted).
Nothing is timed: the figures are exact for the log.

Usage: ``.venv/bin/python bench/bench_plugin_cost.py [LOG...] [--json]``
"""

from __future__ import annotations

import argparse
import json
import lzma
import sys
from pathlib import Path

# tests/: its support/ and live/ packages are test-only code, not in the wheel

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests"))

from live.plugin_cost import cost, describe

ROOT = Path(__file__).resolve().parent.parent
FIXTURES = ROOT / "tests" / "fixtures" / "openclaw-plugin" / "2026.9.6"
# Live runs of the real 2026.9.6 (Tool Search at its default): the plugin before issue 35
# (memoryd_recall direct-only, a chat turn beside a run without the plugin and a heartbeat),
# after (deferred: a first turn, then tool_search and tool_call of memoryd_recall), and the
# whole live check recorded since (every phase, Tool Search off as its last).
DEFAULT = (FIXTURES / "requests-before.jsonl.xz", FIXTURES / "requests-deferred.jsonl.xz",
           FIXTURES / "requests.jsonl.xz")


def read_log(path: Path) -> list[str]:
    raw = lzma.decompress(path.read_bytes()) if path.suffix == ".xz" else path.read_bytes()
    return raw.decode("utf-8").splitlines()


def split_by_tool_search(lines: list[str]) -> dict[str, list[str]]:
    """The chat requests with Tool Search on (``tool_search`` offered) and off."""
    out: dict[str, list[str]] = {"on": [], "off": []}
    for line in lines:
        if not line.strip():
            continue
        entry = json.loads(line)
        if not str(entry.get("path", "")).endswith("/chat/completions"):
            continue
        names = {(t.get("function") or {}).get("name") for t in entry["body"].get("tools") or []}
        if not names:
            continue  # a compaction's summary request: no tools, nothing of the plugin's
        out["on" if "tool_search" in names else "off"].append(line)
    return out


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="bench/bench_plugin_cost.py")
    parser.add_argument("log", nargs="*", type=Path, default=list(DEFAULT))
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args(argv)
    missing = [p for p in args.log if not p.is_file()]
    if missing:
        print(f"no request log at {missing[0]} (python -m tests.live.plugin_live record)")
        return 2
    everything = {}
    for log in args.log:
        parts = split_by_tool_search(read_log(log))
        result = {label: cost(lines) for label, lines in parts.items() if lines}
        everything[log.name] = result
        if args.json:
            continue
        print(f"request log: {log}")
        for label, c in result.items():
            for line in describe(c, f"Tool Search {label}"):
                print(line)
            for key, s in sorted(c["sessions"].items()):
                print(
                    f"  {key}: {s['requests']} requests, {s['standing']} standing + "
                    f"{s['notes']} notes = {s['total']} characters"
                )
    if args.json:
        slim = {
            name: {k: {x: y for x, y in v.items() if x != "rows"} for k, v in result.items()}
            for name, result in everything.items()
        }
        print(json.dumps(slim, indent=1, sort_keys=True))
    return 0


if __name__ == "__main__":
    sys.exit(main())
