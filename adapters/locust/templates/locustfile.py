"""Written by toolbench: one user class, one request, no think time.

This file is the same for every cell: what a cell asks for (method, path, headers, body,
the user class, a request budget) is data, read from the JSON file toolbench writes
beside it. Nothing from a scenario is ever pasted into code."""
import json
import os
import sys
import time
from pathlib import Path

import gevent
import gevent.ssl
from locust import FastHttpUser, HttpUser, constant, events, task
from locust.runners import MasterRunner, WorkerRunner
from locust.stats import RequestStats

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
# Over TLS, the target's certificate to trust (PEM); None: each client's own default.
CA_FILE = PARAMS.get("ca_file")
# In a distributed run: where each worker process keeps its own requests, as Locust's --json
# would print them (`<prefix>.<n>.json`, n claimed by the process), since the master only
# ever holds the merge of its workers' stats. None: not asked for.
WORKER_STATS = PARAMS.get("worker_stats")
# In a distributed run, the master's run time in seconds counted from the moment every
# worker's users have started (its --run-time counts from the order to spawn them, which
# reaches remote workers late). None: --run-time alone.
RUN_S_SPAWNED = PARAMS.get("run_s_after_spawn")
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
        if CA_FILE is not None:
            # FastHttpUser checks nothing by default (insecure): trust the target's certificate alone.
            insecure = False
            ssl_context_factory = staticmethod(lambda: gevent.ssl.create_default_context(cafile=CA_FILE))

    def on_start(self):
        if CA_FILE is not None and not FAST:
            self.client.verify = CA_FILE  # requests: this file instead of certifi's authorities

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


class _OwnStats:
    """This worker process's own requests, logged exactly as Locust's runner logs them, never
    reset (the runner resets its stats at every report to the master)."""

    def __init__(self, environment):
        self.stats = RequestStats()
        self.path = _claim(Path.cwd(), WORKER_STATS)
        environment.events.request.add_listener(self.log)
        environment.events.test_stop.add_listener(self.save)
        environment.events.quitting.add_listener(self.save)

    def log(self, request_type, name, response_time, response_length, exception=None, **_kwargs):
        self.stats.log_request(request_type, name, response_time, response_length)
        if exception:
            self.stats.log_error(request_type, name, exception)

    def save(self, **_kwargs):
        entries = [entry.serialize() for entry in self.stats.entries.values()
                   if entry.num_requests or entry.num_failures]
        errors = [error.to_dict() for error in self.stats.errors.values()]
        tmp = self.path.with_name(self.path.name + ".tmp")
        tmp.write_text(json.dumps({"stats": entries, "errors": errors}, indent=1), encoding="utf-8")
        os.replace(tmp, self.path)


def _claim(folder, prefix):
    """The first `<prefix>.<n>.json` no other worker process here has claimed."""
    n = 0
    while True:
        try:
            os.close(os.open(folder / f"{prefix}.{n}.claim", os.O_CREAT | os.O_EXCL | os.O_WRONLY))
            return folder / f"{prefix}.{n}.json"
        except FileExistsError:
            n += 1


@events.init.add_listener
def _own_stats(environment, **_kwargs):
    if WORKER_STATS is not None and isinstance(environment.runner, WorkerRunner):
        environment.toolbench_own_stats = _OwnStats(environment)


@events.init.add_listener
def _run_time_from_spawned(environment, **_kwargs):
    if RUN_S_SPAWNED is None or not isinstance(environment.runner, MasterRunner):
        return
    timer = []

    def start_once(**_kwargs):
        # Spawning completes again whenever the users are rebalanced: the first time counts.
        if not timer:
            timer.append(gevent.spawn_later(float(RUN_S_SPAWNED), environment.runner.quit))

    environment.events.spawning_complete.add_listener(start_once)
