"""What a new user met following the README on a realistic install, as fixed (real CLI).

Each test is one surprise from walking the README: a typo'd path that `explain` answered
with exit 1 on stdout, a workspace path leading nowhere that `hits` reported as
"0 hits on 0 of 0 files", and `recall` sending the user to try other words in a tier
store that does not exist; and a daemon that could not start writing a plain line into
the JSON log its operator reads with jq.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from support import transcripts as tx
from support.daemon_harness import DaemonProcess, make_install

pytestmark = pytest.mark.subprocess

NOW = tx.T0 + 40 * 86400.0


def memoryd(
    cfg: Path, *args: str, env: dict[str, str] | None = None
) -> subprocess.CompletedProcess[str]:
    full = {k: v for k, v in os.environ.items() if not k.startswith(("OPENCLAW", "MEMORYD"))}
    full.update(MEMORYD_CONFIG=str(cfg), MEMORYD_NOW=str(NOW), **(env or {}))
    return subprocess.run(
        [sys.executable, "-m", "memoryd", *args],
        capture_output=True,
        text=True,
        env=full,
        timeout=60,
        check=False,
    )


@pytest.fixture
def install(tmp_path: Path) -> tuple[Path, Path]:
    sessions, ws, cfg = tx.make_install(tmp_path, ["MEMORY.md", "memory/car.md"])
    (ws / "AGENTS.md").write_text("# agents\n", encoding="utf-8")
    lines = [tx.header("s1"), tx.call("a", ts=NOW - 60)]
    lines.append(tx.result("a", tx.search_payload(["memory/car.md"]), ts=NOW - 59))
    (sessions / "s1.jsonl").write_bytes(b"".join(lines))
    return ws, cfg


def test_explain_of_a_typo_is_a_usage_error_on_stderr(install: tuple[Path, Path]) -> None:
    _, cfg = install
    typo = memoryd(cfg, "explain", "memory/cra.md")
    assert typo.returncode == 2
    assert typo.stdout == ""
    assert "memory/cra.md: no such file in" in typo.stderr
    assert "no move of it in memoryd's journal" in typo.stderr
    not_memory = memoryd(cfg, "explain", "AGENTS.md", "--json")
    assert not_memory.returncode == 2 and not_memory.stdout == ""
    assert "AGENTS.md: not a memory file in" in not_memory.stderr
    tier = memoryd(cfg, "explain", "tiers/warm/x.md")
    assert tier.returncode == 2 and "a note of the tier store" in tier.stderr
    real = memoryd(cfg, "explain", "memory/car.md")
    assert real.returncode == 0 and "hits: 1 in 7 days" in real.stdout


def test_explain_of_an_archived_file_still_says_where_it_went(install: tuple[Path, Path]) -> None:
    ws, cfg = install
    moved = json.loads(memoryd(cfg, "expire", "--force", "--json").stdout)["archive"]
    assert "memory/car.md" not in {m["path"] for m in moved}  # hit a minute ago: kept
    os.utime(ws / "MEMORY.md")
    gone = ws / "memory" / "old.md"
    gone.write_text("old\n", encoding="utf-8")
    os.utime(gone, (NOW - 200 * 86400, NOW - 200 * 86400))
    moved = json.loads(memoryd(cfg, "expire", "--force", "--json").stdout)["archive"]
    assert [m["path"] for m in moved] == ["memory/old.md"]
    where = memoryd(cfg, "explain", "memory/old.md")
    assert where.returncode == 1  # not a memory file now, but memoryd knows where it is
    assert "bring it back with: memoryd restore memory/old.md" in where.stdout


def test_hits_on_a_workspace_that_is_not_there_names_the_key(tmp_path: Path) -> None:
    """The workspace OpenClaw's own config names (no memoryd config key) is missing."""
    state = tmp_path / "state"
    (state / "agents" / "main" / "sessions").mkdir(parents=True)
    ws = tmp_path / "moved-away"
    (state / "openclaw.json").write_text(
        f'// JSON5\n{{ agents: {{ defaults: {{ workspace: "{ws}" }} }} }}\n', encoding="utf-8"
    )
    cfg = tmp_path / "memoryd.toml"
    cfg.write_text(f'[openclaw]\nstate_dir = "{state}"\n', encoding="utf-8")
    proc = memoryd(cfg, "hits")
    assert proc.returncode == 2
    assert proc.stdout == ""
    assert f"workspace {ws} is not a folder" in proc.stderr
    assert "agents.defaults.workspace" in proc.stderr
    assert "Traceback" not in proc.stderr


def test_recall_without_a_tier_store_says_so_and_creates_nothing(
    install: tuple[Path, Path], tmp_path: Path
) -> None:
    _, cfg = install
    before = sorted(p.relative_to(tmp_path) for p in tmp_path.rglob("*"))
    proc = memoryd(cfg, "recall", "boat")
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.startswith("recall: no tier store at ")
    assert "create that folder to start one" in proc.stdout
    assert "try other words" not in proc.stdout
    doc = json.loads(memoryd(cfg, "recall", "boat", "--json").stdout)
    assert doc["missing"] is True and doc["matches"] == 0 and doc["tier"] is None
    assert sorted(p.relative_to(tmp_path) for p in tmp_path.rglob("*")) == before


LOG_FIELDS = {"timestamp", "level", "logger", "event"}


def _json_lines(text: str) -> list[dict[str, object]]:
    """Every stderr line as the JSON object it must be (a plain line fails the test)."""
    lines = text.splitlines()
    assert lines, "the refusal says why"
    records = [json.loads(line) for line in lines]
    for record in records:
        assert isinstance(record, dict) and record.keys() >= LOG_FIELDS, record
    return records


def test_a_daemon_that_cannot_start_says_why_in_json_lines_only(
    tmp_path: Path, daemons: list[DaemonProcess]
) -> None:
    """Under journald (stderr not a terminal) `journalctl -o cat | jq` must read the reason."""
    bad = tmp_path / "bad.toml"
    bad.write_text('[expire]\npolicy = "bogus"\n', encoding="utf-8")
    refused = memoryd(bad, "run")
    assert refused.returncode == 2
    (record,) = _json_lines(refused.stderr)
    assert record["event"] == "daemon.failed" and record["level"] == "error"
    assert "expire.policy" in str(record["message"]) and record["exit"] == 2

    nowhere = tmp_path / "none.toml"
    nowhere.write_text(f'[state]\ndir = "{tmp_path / "md"}"\n', encoding="utf-8")
    refused = memoryd(nowhere, "run", env={"HOME": str(tmp_path / "home")})
    assert refused.returncode == 2
    (record,) = _json_lines(refused.stderr)
    assert "no OpenClaw state directory" in str(record["message"])

    inst = make_install(tmp_path / "inst")
    first = DaemonProcess(inst).start()
    daemons.append(first)
    first.wait_ready()
    second = DaemonProcess(inst).start()
    daemons.append(second)
    assert second.proc is not None and second.proc.wait(60) == 2
    assert second.log_path is not None
    records = _json_lines(second.log_path.read_text(encoding="utf-8"))
    assert f"process {first.proc.pid}" in str(records[-1]["message"])
    assert first.stop() == 0


def test_a_mistyped_agent_is_answered_with_every_agent_followed(tmp_path: Path) -> None:
    """`--agent` takes any followed agent, one with a workspace of its own too: the list a
    typo is answered with names them all, not only the primary workspace's agents."""
    state = tmp_path / ".openclaw"
    for agent in ("main", "play"):
        (state / "agents" / agent / "sessions").mkdir(parents=True)
    (state / "workspace" / "memory").mkdir(parents=True)
    (tmp_path / "ws-play" / "memory").mkdir(parents=True)
    play = {"workspace": str(tmp_path / "ws-play")}
    (state / "openclaw.json").write_text(json.dumps({"agents": {"entries": {"play": play}}}))
    cfg = tmp_path / "memoryd.toml"
    cfg.write_text(f'[state]\ndir = "{tmp_path / "md"}"\n', encoding="utf-8")
    env = {"HOME": str(tmp_path), "OPENCLAW_STATE_DIR": str(state)}
    typo = memoryd(cfg, "hits", "--agent", "plya", env=env)
    assert typo.returncode == 2
    assert "no agent 'plya' (followed: main, play)" in typo.stderr
    assert memoryd(cfg, "hits", "--agent", "play", env=env).returncode == 0
