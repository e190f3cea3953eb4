"""Study 001's urllib3 client as a Locust user: one urllib3 pool per user, each request timed
here and reported through Locust's request event, so Locust's statistics count it.

toolbench copies this file into the cell's folder as locustfile.py; the cell (path, headers,
timeout) is read from locust_params.json beside it."""
import json
import time
from pathlib import Path

import urllib3
from locust import User, constant, task

PARAMS = json.loads(Path(__file__).with_name("locust_params.json").read_text(encoding="utf-8"))


class Urllib3User(User):
    wait_time = constant(0)

    def on_start(self):
        self.pool = urllib3.PoolManager(maxsize=1, retries=False,
                                        timeout=urllib3.Timeout(total=float(PARAMS["timeout_s"])))
        self.url = self.host.rstrip("/") + PARAMS["path"]

    @task
    def one_request(self):
        started = time.perf_counter()
        length, error = 0, None
        try:
            response = self.pool.request(PARAMS["method"], self.url, headers=PARAMS["headers"],
                                         body=PARAMS["body"], preload_content=True)
            length = len(response.data)
            if response.status >= 400:
                error = Exception(f"HTTP {response.status}")
        except Exception as exc:  # every failure is reported to Locust, not raised
            error = exc
        self.environment.events.request.fire(
            request_type=PARAMS["method"], name=PARAMS["path"],
            response_time=(time.perf_counter() - started) * 1000, response_length=length,
            exception=error, context={})
