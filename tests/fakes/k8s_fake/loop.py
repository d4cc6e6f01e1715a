"""One thread that runs timed callbacks under the fake's lock (the kubelets',
the scheduler's and the controllers' work), and a pool for blocking work
(Docker Engine calls, iptables) whose results come back through the loop."""
import heapq
import itertools
import random
import sys
import threading
import time
import traceback
from concurrent.futures import ThreadPoolExecutor


class Loop:
    def __init__(self, lock, workers=16):
        self.lock = lock
        self.heap = []
        self.seq = itertools.count()
        self.pool = ThreadPoolExecutor(max_workers=workers, thread_name_prefix="fake-work")
        self.stopped = False
        threading.Thread(target=self._run, daemon=True, name="fake-loop").start()

    def call_later(self, delay, fn):
        with self.lock:
            heapq.heappush(self.heap, (time.monotonic() + max(0.0, delay), next(self.seq), fn))
            self.lock.notify_all()

    def call_soon(self, fn):
        self.call_later(0, fn)

    def run_blocking(self, work, done=None):
        """work() in the pool; done(result, error) back in the loop."""
        def task():
            try:
                result, error = work(), None
            except Exception as e:  # the error goes to done(), which reports it
                result, error = None, e
                if not getattr(e, "expected", False):
                    traceback.print_exc(file=sys.stderr)
            if done is not None:
                self.call_soon(lambda: done(result, error))
        if not self.stopped:
            self.pool.submit(task)

    def _run(self):
        while True:
            with self.lock:
                while not self.heap or self.heap[0][0] > time.monotonic():
                    self.lock.wait(self.heap[0][0] - time.monotonic() if self.heap else None)
                _, _, fn = heapq.heappop(self.heap)
                try:
                    fn()
                except Exception:
                    traceback.print_exc(file=sys.stderr)


def latency(spec, default=0.0):
    """A configured latency: a number, or {"mean": s, "jitter": s} (uniform +-jitter)."""
    if spec is None:
        return default
    if isinstance(spec, (int, float)):
        return float(spec)
    mean, jitter = float(spec.get("mean", default)), float(spec.get("jitter", 0))
    return max(0.0, mean + random.uniform(-jitter, jitter))
