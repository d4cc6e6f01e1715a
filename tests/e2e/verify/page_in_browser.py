#!/usr/bin/env python3
"""Opens a page in headless Chromium through the DevTools protocol on a pipe
(--remote-debugging-pipe: JSON messages ended by NUL on fds 3 and 4; no port,
no network) and prints what the browser laid out, as JSON:
{"height": the document's height in CSS pixels at the width given,
 "charts": {svg id: [width, height] as drawn}, "points": {svg id: its circles},
 "text": the page's visible text}.

  page_in_browser.py CHROMIUM PAGE WIDTH [SCREENSHOT.png]
"""
import base64
import fcntl
import json
import os
import subprocess
import sys
import tempfile


class Browser:
    def __init__(self, chromium):
        self.profile = tempfile.mkdtemp()
        to_child, self.out = os.pipe()  # we write, the browser reads fd 3
        self.inp, from_child = os.pipe()  # the browser writes fd 4, we read
        # Out of the way of 3 and 4 first, so that neither dup2 below undoes the other.
        high = [fcntl.fcntl(fd, fcntl.F_DUPFD, 10) for fd in (to_child, from_child)]
        os.close(to_child)
        os.close(from_child)

        def fds():
            os.dup2(high[0], 3)
            os.dup2(high[1], 4)

        flags = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
                 "--disable-background-networking", "--disable-component-update", "--disable-sync",
                 "--disable-extensions", "--user-data-dir=" + self.profile, "--remote-debugging-pipe", "about:blank"]
        self.proc = subprocess.Popen([chromium] + flags, preexec_fn=fds, pass_fds=(3, 4),
                                     stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        for fd in high:
            os.close(fd)
        self.buffer, self.next_id, self.events = b"", 0, []

    def send(self, method, params=None, session=None):
        self.next_id += 1
        message = {"id": self.next_id, "method": method, "params": params or {}}
        if session:
            message["sessionId"] = session
        os.write(self.out, json.dumps(message).encode() + b"\0")
        while True:
            reply = self.read()
            if reply.get("id") == self.next_id:
                if "error" in reply:
                    raise RuntimeError((method, reply["error"]))
                return reply["result"]
            self.events.append(reply)

    def read(self):
        while b"\0" not in self.buffer:
            chunk = os.read(self.inp, 1 << 20)
            if not chunk:
                raise RuntimeError("the browser closed its pipe")
            self.buffer += chunk
        message, self.buffer = self.buffer.split(b"\0", 1)
        return json.loads(message)

    def wait_for(self, method, session):
        while True:
            for e in self.events:
                if e.get("method") == method and e.get("sessionId") == session:
                    self.events.remove(e)
                    return e
            self.events.append(self.read())

    def close(self):
        try:
            self.send("Browser.close")
        except Exception:
            pass
        self.proc.wait(timeout=30)
        subprocess.run(["rm", "-rf", self.profile])


def main(chromium, page, width, screenshot=None):
    b = Browser(chromium)
    try:
        target = b.send("Target.createTarget", {"url": "about:blank"})["targetId"]
        s = b.send("Target.attachToTarget", {"targetId": target, "flatten": True})["sessionId"]
        b.send("Page.enable", session=s)
        b.send("Emulation.setDeviceMetricsOverride",
               {"width": width, "height": 900, "deviceScaleFactor": 1, "mobile": False}, session=s)
        b.send("Page.navigate", {"url": "file://" + os.path.abspath(page)}, session=s)
        b.wait_for("Page.loadEventFired", s)
        expression = """JSON.stringify({
          height: document.documentElement.scrollHeight,
          charts: Object.fromEntries([...document.querySelectorAll('svg[id]')].map(
              e => [e.id, [Math.round(e.getBoundingClientRect().width), Math.round(e.getBoundingClientRect().height)]])),
          points: Object.fromEntries([...document.querySelectorAll('svg[id]')].map(
              e => [e.id, e.querySelectorAll('circle').length])),
          text: document.body.innerText})"""
        got = json.loads(b.send("Runtime.evaluate", {"expression": expression, "returnByValue": True},
                                session=s)["result"]["value"])
        if screenshot:
            shot = b.send("Page.captureScreenshot", {"format": "png", "captureBeyondViewport": True,
                                                     "clip": {"x": 0, "y": 0, "width": width,
                                                              "height": got["height"], "scale": 1}}, session=s)
            with open(screenshot, "wb") as f:
                f.write(base64.b64decode(shot["data"]))
        print(json.dumps(got))
    finally:
        b.close()


if __name__ == "__main__":
    main(sys.argv[1], sys.argv[2], int(sys.argv[3]), sys.argv[4] if len(sys.argv) > 4 else None)
