"""A stand-in for Telegram's Bot API on 127.0.0.1, for memoryd's notifications
(``test_notify``, and the daemon's and the restorer's in ``test_rails``,
``test_restore_on_demand``): a real HTTP server, so the notifier's own requests are tested."""

from __future__ import annotations

import json
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer


class Bot:
    """Records each request (path, JSON body) and answers ``status`` (200: ok); its ``url`` is
    the API base to configure, ``server`` the server to shut down."""

    def __init__(self) -> None:
        self.requests: list[tuple[str, dict]] = []
        self.status = 200
        bot = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self) -> None:
                body = self.rfile.read(int(self.headers.get("Content-Length") or 0))
                bot.requests.append((self.path, json.loads(body)))
                reply = json.dumps({"ok": bot.status == 200, "result": {}}).encode()
                self.send_response(bot.status)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(reply)))
                self.end_headers()
                self.wfile.write(reply)

            def log_message(self, *args: object) -> None:
                pass

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}"
        threading.Thread(target=self.server.serve_forever, daemon=True).start()
