"""A small Chrome DevTools Protocol client: open a page in headless Chromium, evaluate
JavaScript in it, collect console errors and outside requests, save a full-page screenshot.

Only the standard library and ``websockets`` (which Prefect brings). ``find_chromium()``
says where the browser is, or None.
"""

from __future__ import annotations

import base64
import itertools
import json
import shutil
import subprocess
import time
import urllib.request
from pathlib import Path
from typing import Any

from websockets.sync.client import connect

__all__ = ["Chromium", "find_chromium"]

_NAMES = ("chromium", "chromium-browser", "google-chrome", "google-chrome-stable")


def find_chromium() -> str | None:
    """Path of a Chromium (or Chrome) binary on PATH, or None."""
    return next((p for p in map(shutil.which, _NAMES) if p), None)


class Chromium:
    """Headless Chromium with one page, driven over the DevTools protocol.

    Use as a context manager; ``errors`` lists console errors and uncaught exceptions,
    ``requests`` every URL the page asked for.
    """

    def __init__(self, binary: str, workdir: Path, width: int = 1280) -> None:
        profile = workdir / "chromium-profile"
        self.process = subprocess.Popen(
            [binary, "--headless", "--no-sandbox", "--disable-gpu",
             "--disable-background-networking", "--disable-component-update",
             "--no-first-run", "--disable-dev-shm-usage", "--hide-scrollbars",
             f"--user-data-dir={profile}", "--remote-debugging-port=0",
             f"--window-size={width},900", "about:blank"],
            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        self.width, self.errors, self.requests = width, [], []
        self._ids = itertools.count(1)
        port = self._port(profile / "DevToolsActivePort")
        with urllib.request.urlopen(f"http://127.0.0.1:{port}/json/list", timeout=10) as r:
            page = next(t for t in json.load(r) if t["type"] == "page")
        self.socket = connect(page["webSocketDebuggerUrl"], max_size=None, open_timeout=20)
        for domain in ("Page", "Runtime", "Log", "Network"):
            self.send(f"{domain}.enable")

    def _port(self, path: Path, timeout: float = 30.0) -> int:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if self.process.poll() is not None:
                raise RuntimeError(f"chromium exited with status {self.process.returncode}")
            if path.exists() and path.read_text().strip():
                return int(path.read_text().splitlines()[0])
            time.sleep(0.1)
        raise TimeoutError("chromium did not open its DevTools port")

    def _event(self, message: dict[str, Any]) -> None:
        method, params = message.get("method"), message.get("params", {})
        if method == "Runtime.consoleAPICalled" and params["type"] in ("error", "assert"):
            self.errors.append(" ".join(str(a.get("value", a.get("description", "")))
                                        for a in params["args"]))
        elif method == "Runtime.exceptionThrown":
            self.errors.append(params["exceptionDetails"].get("text", "exception"))
        elif method == "Log.entryAdded" and params["entry"]["level"] == "error":
            self.errors.append(params["entry"]["text"])
        elif method == "Network.requestWillBeSent":
            self.requests.append(params["request"]["url"])

    def send(self, method: str, wait_for: str | None = None, **params: Any) -> dict[str, Any]:
        """Call ``method``; return its result (after the event ``wait_for``, if given)."""
        call = next(self._ids)
        self.socket.send(json.dumps({"id": call, "method": method, "params": params}))
        result, seen = None, wait_for is None
        while result is None or not seen:
            message = json.loads(self.socket.recv(timeout=60))
            if message.get("id") == call:
                if "error" in message:
                    raise RuntimeError(f"{method}: {message['error']}")
                result = message["result"]
            else:
                self._event(message)
                seen = seen or message.get("method") == wait_for
        return result

    def open(self, path: Path) -> None:
        """Load a local file and wait for its load event."""
        self.send("Page.navigate", wait_for="Page.loadEventFired", url=path.absolute().as_uri())

    def evaluate(self, expression: str) -> Any:
        """The JSON value of a JavaScript expression (promises awaited)."""
        result = self.send("Runtime.evaluate", expression=expression, returnByValue=True,
                           awaitPromise=True)
        if "exceptionDetails" in result:
            raise RuntimeError(f"JavaScript error: {result['exceptionDetails']}")
        return result["result"].get("value")

    def screenshot(self, path: Path) -> Path:
        """Save a PNG of the whole page (its full height) to ``path``."""
        height = self.send("Page.getLayoutMetrics")["cssContentSize"]["height"]
        self.send("Emulation.setDeviceMetricsOverride", width=self.width,
                  height=int(height), deviceScaleFactor=1, mobile=False)
        data = self.send("Page.captureScreenshot", format="png", captureBeyondViewport=True)
        path.write_bytes(base64.b64decode(data["data"]))
        return path

    def __enter__(self) -> Chromium:
        return self

    def __exit__(self, *exc: object) -> None:
        try:
            self.socket.close()
        finally:
            self.process.terminate()
            try:
                self.process.wait(timeout=10)
            except subprocess.TimeoutExpired:
                self.process.kill()
