"""Telegram notifications against a real local HTTP server; a failing one never fails a job."""

from __future__ import annotations

import json
import os
import socket
from collections.abc import Iterator
from pathlib import Path

import pytest

from memoryd.config import Config, NotifyConfig, Paths, TelegramConfig
from memoryd.notify import notify, telegram_target
from support.inprocess import memoryd as run_memoryd
from support.telegram_bot import Bot


@pytest.fixture
def bot() -> Iterator[Bot]:
    b = Bot()
    yield b
    b.server.shutdown()
    b.server.server_close()


def _cfg(base_url: str, **kw: object) -> Config:
    tg = TelegramConfig(enabled=True, base_url=base_url, timeout=5.0, **kw)  # type: ignore[arg-type]
    return Config(notify=NotifyConfig(telegram=tg))


def _paths(tmp: Path, openclaw: dict) -> Paths:
    oc_file = tmp / "openclaw.json"
    oc_file.write_text(json.dumps(openclaw))
    return Paths(tmp, tmp / "m", tmp / "m" / "db", (), tmp / "ws", tmp / "fs", oc_file)


def test_posts_the_summary_with_the_configured_token_and_chat(bot: Bot, tmp_path: Path) -> None:
    assert notify(_cfg(bot.url, token="123:abc", chat_id="42"), _paths(tmp_path, {}), "hello")
    [(path, body)] = bot.requests
    assert path == "/bot123:abc/sendMessage"
    assert body["chat_id"] == "42" and body["text"] == "hello"


def test_token_and_chat_come_from_openclaw_json(bot: Bot, tmp_path: Path) -> None:
    oc = {"channels": {"telegram": {"botToken": "9:xyz", "allowFrom": ["tg:777", "888"]}}}
    assert notify(_cfg(bot.url), _paths(tmp_path, oc), "from openclaw")
    assert bot.requests[0][0] == "/bot9:xyz/sendMessage"
    assert bot.requests[0][1]["chat_id"] == "777"
    token_file = tmp_path / "token"
    token_file.write_text("5:file\n")
    oc = {"channels": {"telegram": {"tokenFile": str(token_file), "allowFrom": [555]}}}
    target = telegram_target(_cfg(bot.url), _paths(tmp_path, oc))
    assert target is not None and (target.token, target.chat_id) == ("5:file", "555")


def test_failures_return_false_and_never_raise(bot: Bot, tmp_path: Path) -> None:
    paths = _paths(tmp_path, {})
    bot.status = 500
    assert notify(_cfg(bot.url, token="1:a", chat_id="2"), paths, "x") is False
    with socket.socket() as s:  # a port nobody listens on
        s.bind(("127.0.0.1", 0))
        dead = f"http://127.0.0.1:{s.getsockname()[1]}"
    assert notify(_cfg(dead, token="1:a", chat_id="2"), paths, "x") is False
    assert notify(_cfg("not a url", token="1:a", chat_id="2"), paths, "x") is False
    assert notify(_cfg(bot.url), paths, "no token, no chat") is False
    off = Config(notify=NotifyConfig(telegram=TelegramConfig(token="1:a", chat_id="2")))
    before = len(bot.requests)
    assert notify(off, paths, "disabled") is False and len(bot.requests) == before


def test_expire_notifies_and_a_dead_notifier_does_not_fail_it(bot: Bot, tmp_path: Path) -> None:
    state = tmp_path / "oc"
    mem = state / "workspace" / "memory"
    mem.mkdir(parents=True)
    (state / "agents" / "main" / "sessions").mkdir(parents=True)
    for name in ("2026-08-01.md", "2026-08-02.md"):
        (mem / name).write_text(name)
    (state / "openclaw.json").write_text(
        '{ channels: { telegram: { botToken: "7:tok", allowFrom: ["1234"] } } }'
    )
    config = tmp_path / "memoryd.toml"
    config.write_text(f'[notify.telegram]\nenabled = true\nbase_url = "{bot.url}"\n')
    env = {k: v for k, v in os.environ.items() if not k.startswith(("MEMORYD_", "OPENCLAW_"))}
    env.update(
        HOME=str(tmp_path),
        OPENCLAW_STATE_DIR=str(state),
        MEMORYD_NOW="2026-11-03T10:00:00Z",
        MEMORYD_CONFIG=str(config),
    )
    run = ["expire", "--force", "--json"]
    proc = run_memoryd(run, env=env)
    assert proc.returncode == 0, proc.stderr
    [(path, body)] = bot.requests
    assert path == "/bot7:tok/sendMessage" and body["chat_id"] == "1234"
    assert body["text"].startswith("expire: archived 2 of 2 memory files")
    assert "memory/2026-08-01.md → memory-archive/2026-11/memory/2026-08-01.md" in body["text"]

    (mem / "2026-08-03.md").write_text("three")
    bot.server.shutdown()
    bot.server.server_close()
    proc = run_memoryd(run, env=env)
    assert proc.returncode == 0, proc.stderr
    assert not (mem / "2026-08-03.md").exists()
    assert json.loads(proc.stdout)["archive"][0]["path"] == "memory/2026-08-03.md"
    assert "telegram notification failed" in proc.stderr
    assert "7:tok" not in proc.stderr  # the token never appears in logs
