"""A headless Chromium driven through its DevTools protocol, for the demo page's tests and screenshot.

`Browser` starts ``chromium --headless --remote-debugging-port=0`` with a throw-away profile, connects to
its page over a websocket (the `websockets` package) and offers what the tests need: open a URL,
evaluate JavaScript (awaiting promises), wait for a condition, take a PNG screenshot. Closing it ends
the Chromium process it started and removes the profile.

  python -m tests.browser http://127.0.0.1:8000 docs/results/serve-demo.png --task sst

loads the demo page of a running `deca serve`, picks the task's example, asks, and saves a screenshot.
"""
from __future__ import annotations

import argparse
import base64
import json
import re
import shutil
import subprocess
import tempfile
import time
import urllib.request
from pathlib import Path
from typing import Any

from deca.errors import ConfigError

DEVTOOLS = re.compile(r"DevTools listening on (ws://[^\s]+)")


def chromium_path() -> str | None:
    """The Chromium executable on PATH (Debian's `chromium`), or None."""
    return next((p for p in map(shutil.which, ("chromium", "chromium-browser", "google-chrome")) if p), None)


class Browser:
    """One headless Chromium with one page (a context manager)."""

    def __init__(self, width: int = 1000, height: int = 900, timeout: float = 30.0):
        exe = chromium_path()
        if exe is None:
            raise ConfigError("chromium is not installed; apt-get install -y chromium")
        self.timeout = timeout
        self.profile = tempfile.mkdtemp(prefix="deca-chromium-")
        self.proc = subprocess.Popen(
            [exe, "--headless", "--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage", "--no-first-run",
             "--disable-extensions", "--remote-debugging-port=0", "--remote-allow-origins=*",
             f"--user-data-dir={self.profile}", f"--window-size={width},{height}", "about:blank"],
            stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
        self._id = 0
        try:
            self.ws = self._connect(self._devtools_url())
            self.call("Emulation.setDeviceMetricsOverride",
                      width=width, height=height, deviceScaleFactor=1, mobile=False)
        except BaseException:
            self.close()
            raise

    def _devtools_url(self) -> str:
        deadline = time.monotonic() + self.timeout
        seen = []
        while time.monotonic() < deadline:
            line = self.proc.stderr.readline()
            if not line and self.proc.poll() is not None:
                break
            seen.append(line)
            match = DEVTOOLS.search(line)
            if match:
                return match.group(1)
        raise RuntimeError(f"chromium did not start (exit {self.proc.poll()}): {''.join(seen)[-2000:]}")

    def _connect(self, browser_ws: str):
        from websockets.sync.client import connect

        http = browser_ws.replace("ws://", "http://").split("/devtools/")[0]
        with urllib.request.urlopen(f"{http}/json/list", timeout=self.timeout) as response:
            pages = [t for t in json.load(response) if t.get("type") == "page"]
        if not pages:
            raise RuntimeError("chromium has no page to drive")
        # entered here, left in close(): the connection lives as long as the browser
        return connect(pages[0]["webSocketDebuggerUrl"], max_size=64 * 2**20, open_timeout=self.timeout).__enter__()

    def call(self, method: str, **params) -> dict:
        """Send one DevTools command and return its result (events in between are skipped)."""
        self._id += 1
        self.ws.send(json.dumps({"id": self._id, "method": method, "params": params}))
        deadline = time.monotonic() + self.timeout
        while True:
            message = json.loads(self.ws.recv(timeout=max(0.1, deadline - time.monotonic())))
            if message.get("id") == self._id:
                if "error" in message:
                    raise RuntimeError(f"{method}: {message['error']}")
                return message.get("result", {})

    def evaluate(self, expression: str) -> Any:
        """The value of a JavaScript expression in the page (promises awaited); JS errors are raised."""
        result = self.call("Runtime.evaluate", expression=expression, awaitPromise=True, returnByValue=True)
        if "exceptionDetails" in result:
            details = result["exceptionDetails"]
            raise RuntimeError(f"JavaScript error: {details.get('exception', {}).get('description') or details}")
        return result["result"].get("value")

    def open(self, url: str) -> None:
        """Navigate to `url` and wait until the document has loaded."""
        self.evaluate("window.__decaOldPage = true")  # gone once the new document has replaced this one
        self.call("Page.navigate", url=url)
        self.wait_for("!window.__decaOldPage && document.readyState === 'complete'")

    def wait_for(self, expression: str, timeout: float | None = None) -> Any:
        """Poll a JavaScript expression until it is truthy; returns its value (TimeoutError after `timeout`)."""
        deadline = time.monotonic() + (timeout or self.timeout)
        while True:
            value = self.evaluate(expression)
            if value:
                return value
            if time.monotonic() > deadline:
                raise TimeoutError(f"waited {timeout or self.timeout:.0f} s for: {expression}")
            time.sleep(0.05)

    def screenshot(self, path: str | Path) -> Path:
        """Save the whole page as a PNG."""
        height = int(self.evaluate("Math.ceil(document.body.getBoundingClientRect().bottom) + 16"))
        width = int(self.evaluate("document.documentElement.clientWidth"))
        shot = self.call("Page.captureScreenshot", format="png", captureBeyondViewport=True,
                         clip={"x": 0, "y": 0, "width": width, "height": height, "scale": 1})
        from deca.io import atomic_write

        return atomic_write(Path(path), lambda tmp: Path(tmp).write_bytes(base64.b64decode(shot["data"])))

    def close(self) -> None:
        """End Chromium and remove its profile."""
        ws = getattr(self, "ws", None)
        if ws is not None:
            ws.close()
        if self.proc.poll() is None:
            self.proc.terminate()
            try:
                self.proc.wait(timeout=10)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
        self.proc.stderr.close()
        shutil.rmtree(self.profile, ignore_errors=True)

    def __enter__(self) -> "Browser":
        return self

    def __exit__(self, *exc) -> None:
        self.close()


def ask_example(browser: Browser, url: str, task: str) -> dict:
    """Open the demo page, pick `task`'s example, press Ask; returns the answer tokens shown."""
    browser.open(url)
    browser.wait_for("document.querySelectorAll('#task option').length > 1")
    index = browser.evaluate(f"examples.findIndex(e => e.task === {json.dumps(task)})")
    if index is None or index < 0:
        raise ConfigError(f"the page has no example for task {task!r}")
    browser.evaluate(f"(() => {{ const s = document.getElementById('task'); s.value = '{index}'; "
                     "s.dispatchEvent(new Event('change')); document.getElementById('ask').click(); })()")
    browser.wait_for("document.getElementById('time').textContent !== '' || "
                     "!document.getElementById('error').hidden")
    return browser.evaluate("""({
        error: document.getElementById('error').hidden ? null : document.getElementById('error').textContent,
        time: document.getElementById('time').textContent,
        answer: document.getElementById('answer').dataset.answer,
        tokens: [...document.querySelectorAll('#answer .token')].map(t => ({
            text: t.querySelector('.text').textContent, source: t.dataset.source, title: t.title,
            color: getComputedStyle(t.querySelector('.text')).backgroundColor,
            bar: [...t.querySelectorAll('.bar span')].map(s => [s.className, parseFloat(s.style.width)])}))
    })""")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description="Screenshot the demo page of a running `deca serve`.")
    parser.add_argument("url", help="the service, e.g. http://127.0.0.1:8000")
    parser.add_argument("out", help="PNG file to write")
    parser.add_argument("--task", default="sst", help="the example to ask (default sst)")
    parser.add_argument("--width", type=int, default=1000)
    parser.add_argument("--height", type=int, default=900)
    args = parser.parse_args(argv)
    with Browser(args.width, args.height) as browser:
        shown = ask_example(browser, args.url.rstrip("/") + "/", args.task)
        if shown["error"]:
            raise SystemExit(f"the page shows an error: {shown['error']}")
        print(f"{args.task}: {shown['answer']!r} {shown['time']}")
        browser.screenshot(args.out)
    print(f"wrote {args.out}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
