"""Telegram notifications of job summaries (the janitor's report among them).

Optional and harmless: :func:`notify` never raises, so a failure can never fail the job that
wanted to report. An empty ``token`` / ``chat_id`` is taken from OpenClaw's own Telegram
channel in ``openclaw.json`` (docs/lifecycle.md, "Telegram"); the first ``allowFrom`` entry is
the owner's user id, also the id of the owner's private chat with the bot.
"""

from __future__ import annotations

import json
import logging
import urllib.error
import urllib.request
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from .config import Config, Paths

MAX_CHARS = 4000  # Telegram's limit is 4096 characters per message


@dataclass(frozen=True)
class TelegramTarget:
    token: str
    chat_id: str
    base_url: str
    timeout: float


def _dig(doc: Any, *keys: str) -> Any:
    for key in keys:
        if not isinstance(doc, dict):
            return None
        doc = doc.get(key)
    return doc


def telegram_target(cfg: Config, paths: Paths | None) -> TelegramTarget | None:
    """Where to send, or None when notifications are off or incomplete."""
    tg = cfg.notify.telegram
    if not tg.enabled:
        return None
    oc = paths.openclaw if paths is not None else {}
    channel = _dig(oc, "channels", "telegram")
    token = tg.token
    if not token and isinstance(channel, dict):
        value = channel.get("botToken")
        if isinstance(value, str) and value.strip():
            token = value.strip()
        elif isinstance(channel.get("tokenFile"), str):
            try:
                token = Path(channel["tokenFile"]).expanduser().read_text().strip()
            except OSError:
                token = ""
        if not token:
            value = _dig(channel, "accounts", "default", "botToken")
            token = value.strip() if isinstance(value, str) else ""
    chat = tg.chat_id
    if not chat and isinstance(channel, dict):
        allowed = channel.get("allowFrom")
        if isinstance(allowed, list):
            for entry in allowed:
                text = str(entry).strip()
                for prefix in ("telegram:", "tg:"):
                    text = text.removeprefix(prefix)
                if text and text != "*":
                    chat = text
                    break
    if not token or not chat:
        return None
    return TelegramTarget(token, chat, tg.base_url.rstrip("/"), tg.timeout)


def notify(cfg: Config, paths: Paths | None, text: str) -> bool:
    """Post ``text`` to the configured chat; True when Telegram said ok. Never raises."""
    # stdlib logging: stderr when nothing is configured (stdout stays one JSON
    # document), the structlog pipeline once the daemon has configured it.
    log = logging.getLogger("memoryd.notify")
    try:
        target = telegram_target(cfg, paths)
        if target is None:
            return False
        if len(text) > MAX_CHARS:
            text = text[: MAX_CHARS - 1] + "…"
        message = {"chat_id": target.chat_id, "text": text, "disable_web_page_preview": True}
        req = urllib.request.Request(
            f"{target.base_url}/bot{target.token}/sendMessage", data=json.dumps(message).encode(),
            headers={"Content-Type": "application/json"}, method="POST",
        )  # fmt: skip
        with urllib.request.urlopen(req, timeout=target.timeout) as resp:
            reply = json.loads(resp.read() or b"{}")
        ok = bool(isinstance(reply, dict) and reply.get("ok"))
        if not ok:
            log.warning("telegram refused the message: %s", str(reply)[:200])
        return ok
    except urllib.error.HTTPError as exc:
        log.warning("telegram notification failed: HTTP %s", exc.code)
    except Exception as exc:  # never let a notification fail a job
        log.warning("telegram notification failed: %s", type(exc).__name__)
    return False
