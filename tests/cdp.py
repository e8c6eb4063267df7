"""A minimal Chrome DevTools Protocol client for the site's browser test.

Drives Debian's headless `chromium` over its --remote-debugging-port websocket (websocket-client):
no browser download, no playwright. Only what the tests need: navigate, evaluate, click, screenshot.
"""

from __future__ import annotations

import base64
import json
import shutil
import subprocess
import time
import urllib.request
from pathlib import Path

CHROMIUM = "/usr/bin/chromium"
FLAGS = [
    "--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
    "--disable-background-networking", "--disable-component-update", "--disable-sync",
    "--disable-dev-shm-usage", "--hide-scrollbars", "--window-size=1400,1000",
]


class CDPError(Exception):
    pass


class Browser:
    """One headless chromium with one page; use as a context manager."""

    def __init__(self, profile: Path, executable: str = CHROMIUM, timeout: float = 30.0):
        self.profile = Path(profile)
        self.executable = executable
        self.timeout = timeout
        self._id = 0
        self.events: list[dict] = []

    def __enter__(self) -> "Browser":
        import websocket  # websocket-client

        self.profile.mkdir(parents=True, exist_ok=True)
        port_file = self.profile / "DevToolsActivePort"
        port_file.unlink(missing_ok=True)
        self.proc = subprocess.Popen(
            [self.executable, *FLAGS, f"--user-data-dir={self.profile}", "--remote-debugging-port=0", "about:blank"],
            stdout=subprocess.DEVNULL, stderr=subprocess.PIPE,
        )
        deadline = time.monotonic() + self.timeout
        while not (port_file.exists() and port_file.read_text().strip()):
            if self.proc.poll() is not None or time.monotonic() > deadline:
                err = self.proc.stderr.read().decode(errors="replace")[-2000:] if self.proc.poll() is not None else ""
                self.close()
                raise CDPError(f"chromium did not open its debugging port: {err}")
            time.sleep(0.1)
        port = int(port_file.read_text().split()[0])
        targets = []
        while not targets:
            with urllib.request.urlopen(f"http://127.0.0.1:{port}/json/list", timeout=5) as r:
                targets = [t for t in json.load(r) if t.get("type") == "page"]
            if not targets:
                time.sleep(0.1)
        self.ws = websocket.create_connection(targets[0]["webSocketDebuggerUrl"], timeout=self.timeout,
                                              suppress_origin=True)
        self.send("Page.enable")
        self.send("Runtime.enable")
        return self

    def __exit__(self, *exc) -> None:
        self.close()

    def close(self) -> None:
        ws = getattr(self, "ws", None)
        if ws is not None:
            ws.close()
        proc = getattr(self, "proc", None)
        if proc is not None and proc.poll() is None:
            proc.terminate()
            try:
                proc.wait(10)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait(10)
        if proc is not None and proc.stderr:
            proc.stderr.close()

    def send(self, method: str, **params) -> dict:
        self._id += 1
        my_id = self._id
        self.ws.send(json.dumps({"id": my_id, "method": method, "params": params}))
        while True:
            msg = json.loads(self.ws.recv())
            if msg.get("id") == my_id:
                if "error" in msg:
                    raise CDPError(f"{method}: {msg['error']}")
                return msg.get("result", {})
            self.events.append(msg)

    def wait_event(self, method: str, timeout: float | None = None) -> dict:
        deadline = time.monotonic() + (timeout or self.timeout)
        while time.monotonic() < deadline:
            for i, event in enumerate(self.events):
                if event.get("method") == method:
                    return self.events.pop(i)
            self.ws.settimeout(max(0.05, deadline - time.monotonic()))
            try:
                self.events.append(json.loads(self.ws.recv()))
            except Exception:  # websocket timeout: loop checks the deadline
                pass
            finally:
                self.ws.settimeout(self.timeout)
        raise CDPError(f"no {method} event within {timeout or self.timeout} s")

    def navigate(self, url: str) -> None:
        self.events.clear()
        result = self.send("Page.navigate", url=url)
        if result.get("errorText"):
            raise CDPError(f"{url}: {result['errorText']}")
        self.wait_event("Page.loadEventFired")

    def eval(self, expression: str):
        result = self.send("Runtime.evaluate", expression=expression, returnByValue=True, awaitPromise=True)
        if "exceptionDetails" in result:
            raise CDPError(f"{expression[:80]}: {result['exceptionDetails'].get('exception', {}).get('description')}")
        return result["result"].get("value")

    def wait_for(self, expression: str, timeout: float = 20.0):
        """Poll a JS expression until it is truthy; return its value."""
        deadline = time.monotonic() + timeout
        while True:
            value = self.eval(expression)
            if value:
                return value
            if time.monotonic() > deadline:
                raise CDPError(f"timed out waiting for: {expression}")
            time.sleep(0.1)

    def click(self, selector: str) -> None:
        """A real mouse click (press + release) at the centre of the element."""
        box = self.eval(
            f"(() => {{ const el = document.querySelector({json.dumps(selector)}); if (!el) return null;"
            " el.scrollIntoView({block: 'center'}); const r = el.getBoundingClientRect();"
            " return {x: r.left + r.width / 2, y: r.top + r.height / 2}; })()"
        )
        if not box:
            raise CDPError(f"no element matches {selector}")
        for kind in ("mousePressed", "mouseReleased"):
            self.send("Input.dispatchMouseEvent", type=kind, x=box["x"], y=box["y"], button="left", clickCount=1)

    def screenshot(self, path: Path, full_page: bool = True, width: int = 1400) -> Path:
        """PNG of the page. Full page: the viewport is first made as tall as the content and the page
        given time to settle, because capturing beyond the viewport resizes it mid-capture and
        restarts material's header transitions (a half-faded tab bar in the picture)."""
        if full_page:
            metrics = self.send("Page.getLayoutMetrics")
            size = metrics.get("cssContentSize") or metrics["contentSize"]
            height = int(min(size["height"], 8000))
            self.send("Emulation.setDeviceMetricsOverride", width=width, height=height, deviceScaleFactor=1, mobile=False)
            time.sleep(1.0)
        data = self.send("Page.captureScreenshot", format="png")["data"]
        path = Path(path)
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(base64.b64decode(data))
        return path


def chromium_available(executable: str = CHROMIUM) -> bool:
    return Path(executable).is_file() or shutil.which(executable) is not None
