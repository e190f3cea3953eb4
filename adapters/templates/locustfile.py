"""Written by toolbench: one user class, one request, no think time.

This file is the same for every cell: what a cell asks for (method, path, headers, body,
the user class, a request budget) is data, read from the JSON file toolbench writes
beside it. Nothing from a scenario is ever pasted into code."""
import json
import sys
import time
from pathlib import Path

import gevent
from locust import FastHttpUser, HttpUser, constant, events, task

PARAMS = json.loads(Path(__file__).with_name("locust_params.json").read_text(encoding="utf-8"))
USER_CLASSES = {"FastHttpUser": FastHttpUser, "HttpUser": HttpUser}
METHOD = PARAMS["method"]
PATH = PARAMS["path"]
HEADERS = PARAMS["headers"]
BODY = PARAMS["body"].encode("utf-8") if PARAMS["body"] is not None else None
TIMEOUT_S = float(PARAMS["timeout_s"])
FAST = PARAMS["user_class"] == "FastHttpUser"
# Locust has no stop after N requests: with a budget the users share a counter,
# idle once it is spent (a user that stopped itself would make Locust log errors
# when it stops the rest), and the last request to end ends the run.
BUDGET = PARAMS["budget"]
# With a budget, a target that fails every request would keep the run going to its
# time limit: no success for this long, with failures meanwhile, stops the run.
STALL_S = float(PARAMS["stall_s"])
NOTE = PARAMS["note_prefix"]
_issued = 0
_done = 0
_ok = 0
_failed_since_ok = 0
_last_ok = None
_stopping = False


class ToolbenchUser(USER_CLASSES[PARAMS["user_class"]]):
    wait_time = constant(0)
    if FAST:
        connection_timeout = TIMEOUT_S
        network_timeout = TIMEOUT_S

    @task
    def one_request(self):
        global _issued, _done, _failed_since_ok
        if BUDGET is not None:
            if _issued >= BUDGET:
                gevent.sleep(1)
                return
            _issued += 1
        try:
            if FAST:
                self.client.request(METHOD, PATH, name=PATH, headers=HEADERS, data=BODY)
            else:
                self.client.request(METHOD, PATH, name=PATH, headers=HEADERS, data=BODY, timeout=TIMEOUT_S)
        except Exception:
            _failed_since_ok += 1  # raised rather than recorded: Locust logs it as an exception
            raise
        finally:
            # A request that raised counts against the budget too, or the budget is never spent.
            if BUDGET is not None:
                _done += 1
                if _done == BUDGET:
                    # Quit from a greenlet of its own: quitting stops every user, this one too.
                    gevent.spawn(self.environment.runner.quit)


@events.request.add_listener
def _count(exception=None, **_kwargs):
    global _ok, _failed_since_ok, _last_ok
    if exception is None:
        _ok += 1
        _failed_since_ok = 0
        _last_ok = time.monotonic()
    else:
        _failed_since_ok += 1


@events.test_start.add_listener
def _start_watchdog(environment, **_kwargs):
    if BUDGET is not None:
        gevent.spawn(_watchdog, environment, time.monotonic())


@events.test_stopping.add_listener
def _stop_watchdog(**_kwargs):
    global _stopping
    _stopping = True


def _watchdog(environment, started):
    while not _stopping:
        gevent.sleep(0.25)
        since = _last_ok if _last_ok is not None else started
        if _failed_since_ok and time.monotonic() - since >= STALL_S:
            if _ok:
                why = f"no request succeeded for {STALL_S:g} s after {_ok} had"
            else:
                why = f"no request succeeded in the first {STALL_S:g} s"
            print(f"{NOTE}{why}: stopped before the budget of {BUDGET} requests was spent "
                  f"({_done} ended)", file=sys.stderr, flush=True)
            environment.runner.quit()
            return
