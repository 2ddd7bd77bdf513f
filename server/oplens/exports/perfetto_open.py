"""Open a run's trace in Perfetto UI (`oplens export --format perfetto --open`): a one-shot page on 127.0.0.1 (a free
port, a random path that is its only key) that, at the user's click (a browser blocks a new tab opened without
one), opens the UI and hands it the trace by the UI's documented protocol (google/perfetto,
`docs/visualization/deep-linking-to-perfetto-ui.md`): post the string 'PING' to the UI's window until it answers
'PONG', then post `{perfetto: {buffer, title, fileName}}` (an ArrayBuffer of the trace file). A page served from
127.0.0.1 or localhost opens without the UI's "Open trace?" prompt; `file://` cannot post to it at all.

The UI lives at https://ui.perfetto.dev; `OPLENS_PERFETTO_UI` names another origin (a self-hosted UI, the tests'
stand-in of its message handler). Where no 'PONG' comes (no internet), the page says so and where the file is.
"""

from __future__ import annotations

import html
import json
import os
import secrets
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

UI = "https://ui.perfetto.dev"
UI_ENV = "OPLENS_PERFETTO_UI"
PAGE_WAIT_S = 600.0  # how long a page waits for its click before it is closed
NO_ANSWER_MS = 15000  # how long the page pings before it says the UI did not answer

PAGE = """<!doctype html>
<html lang="en"><head><meta charset="utf-8"><title>OpLens: {title}</title>
<style>body{{font:15px system-ui,sans-serif;margin:3em;max-width:46em}} button{{font-size:1.1em;padding:.5em 1.2em}}</style>
</head><body>
<h1>{title}</h1>
<p>The trace: <code>{path}</code> ({size}).</p>
<p><button id="open" disabled>Open in Perfetto</button></p>
<p id="status">Reading the trace…</p>
<script>
const UI = {ui};
const PATH = {path_js};
const status = (words) => {{ document.getElementById('status').textContent = words; }};
let buffer = null;
fetch('trace').then((r) => r.arrayBuffer()).then((b) => {{
  buffer = b;
  document.getElementById('open').disabled = false;
  status('Ready: the button opens Perfetto UI in a new tab and hands it the trace.');
}});
document.getElementById('open').addEventListener('click', () => {{
  const win = window.open(UI);
  if (!win) {{ status('The browser blocked the new tab: allow pop-ups for this page, then click again.'); return; }}
  let answered = false;
  const timer = setInterval(() => win.postMessage('PING', UI), 50);
  const onMessage = (evt) => {{
    if (evt.data !== 'PONG') return;
    answered = true;
    clearInterval(timer);
    window.removeEventListener('message', onMessage);
    win.postMessage({{ perfetto: {{ buffer, title: {title_js}, fileName: {name_js} }} }}, UI);
    fetch('posted', {{ method: 'POST' }});
    status('Sent to Perfetto UI: the trace opens there. This page can be closed.');
  }};
  window.addEventListener('message', onMessage);
  setTimeout(() => {{
    if (answered) return;
    clearInterval(timer);
    status('No answer from ' + UI + ' (no internet from this browser?): open the file by hand there, '
      + 'or in chrome://tracing: ' + PATH);
  }}, {no_answer_ms});
}});
</script></body></html>
"""


class OpenPage:
    """The one-shot page and the trace it serves, on 127.0.0.1 until `close()`; `posted` is set once the page handed
    the trace to the UI."""

    def __init__(self, trace: Path, title: str, ui: str | None = None) -> None:
        self.trace, self.title = trace, title
        self.ui = (ui or os.environ.get(UI_ENV) or UI).rstrip("/")
        self.token = secrets.token_urlsafe(16)
        self.posted = threading.Event()
        page = self

        class Handler(BaseHTTPRequestHandler):
            def do_GET(self) -> None:  # noqa: N802 (the standard library's name)
                if self.path == f"/{page.token}/":
                    self._send(200, "text/html; charset=utf-8", page.html().encode())
                elif self.path == f"/{page.token}/trace":
                    self._send(200, "application/octet-stream", page.trace.read_bytes())
                else:
                    self._send(404, "text/plain", b"not here")

            def do_POST(self) -> None:  # noqa: N802
                if self.path == f"/{page.token}/posted":
                    page.posted.set()
                    self._send(204, "text/plain", b"")
                else:
                    self._send(404, "text/plain", b"not here")

            def _send(self, code: int, kind: str, body: bytes) -> None:
                self.send_response(code)
                self.send_header("Content-Type", kind)
                self.send_header("Content-Length", str(len(body)))
                self.send_header("Cache-Control", "no-store")
                self.end_headers()
                self.wfile.write(body)

            def log_message(self, *args: object) -> None:
                return  # the CLI says what matters

        self._server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self._thread = threading.Thread(target=self._server.serve_forever, name="oplens-perfetto-page", daemon=True)
        self._thread.start()

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self._server.server_address[1]}/{self.token}/"

    def html(self) -> str:
        size = self.trace.stat().st_size
        return PAGE.format(
            title=html.escape(self.title), path=html.escape(str(self.trace)), size=f"{size / 1e6:.1f} MB",
            ui=_js(self.ui), title_js=_js(self.title), name_js=_js(self.trace.name),
            path_js=_js(str(self.trace)), no_answer_ms=NO_ANSWER_MS,
        )  # fmt: skip

    def close_when_done(self, wait_s: float) -> None:
        """Close the page once it handed the trace over (a few seconds later: the browser's last requests), or after
        `wait_s`; from a daemon thread, which never holds up the process's exit."""

        def closer() -> None:
            if self.posted.wait(wait_s):
                time.sleep(5)
            self.close()

        threading.Thread(target=closer, name="oplens-perfetto-page-closer", daemon=True).start()

    def close(self) -> None:
        self._server.shutdown()
        self._server.server_close()


def _js(text: str) -> str:
    """`text` as a JavaScript string literal that cannot end the page's <script>."""
    return json.dumps(text).replace("</", "<\\/")
