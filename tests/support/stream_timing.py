#!/usr/bin/env python3
"""Checks that a proxied stream is relayed as it is produced: POSTs BODY to
URL, reads the response line by line as it arrives, and exits 0 only when
the line containing LAST arrived at least MIN_GAP seconds after the first line
containing FIRST. A proxy that held events back until the stream ended (or
until a buffer filled) delivers both at once.

usage: stream_timing.py URL BODY FIRST LAST MIN_GAP [HEADER:VALUE ...]
"""
import http.client
import sys
import time
import urllib.parse


def main():
    url, body, first, last, min_gap = sys.argv[1:6]
    headers = dict(h.split(":", 1) for h in sys.argv[6:])
    headers.setdefault("Content-Type", "application/json")
    parts = urllib.parse.urlsplit(url)
    conn = http.client.HTTPConnection(parts.hostname, parts.port, timeout=30)
    conn.request("POST", parts.path, body.encode(), headers)
    response = conn.getresponse()
    first_at = last_at = None
    while last_at is None:
        line = response.fp.readline()  # raw: chunk-size lines pass by harmlessly
        if not line:
            break
        now = time.monotonic()
        if first_at is None and first.encode() in line:
            first_at = now
        if first_at is not None and last.encode() in line:
            last_at = now
    if first_at is None or last_at is None:
        print(f"stream_timing: status {response.status}; saw {first!r}: {first_at is not None}, "
              f"{last!r}: {last_at is not None}", file=sys.stderr)
        return 1
    gap = last_at - first_at
    print(f"stream_timing: {gap:.3f} s between {first!r} and {last!r} (want >= {min_gap})", file=sys.stderr)
    return 0 if gap >= float(min_gap) else 1


if __name__ == "__main__":
    sys.exit(main())
