"""Written by toolbench: a workload (several named requests in order or as a weighted mix, data
rows, values taken from responses, think time, checks, stages) for Locust.

This file is the same for every workload: the requests, their checks and the stages are data,
read from the JSON file toolbench writes beside it (toolbench.adapters.locust.workload). Nothing
from a scenario is ever pasted into code; a `${name}` in a value is filled from the user's own
variables when the request is sent."""
import csv
import json
import re
from pathlib import Path
from urllib.parse import quote, urlencode

import gevent.ssl
from locust import FastHttpUser, HttpUser, LoadTestShape, SequentialTaskSet, TaskSet, between, constant
from locust.exception import StopUser

W = json.loads(Path(__file__).with_name("locust_workload.json").read_text(encoding="utf-8"))
USER_CLASSES = {"FastHttpUser": FastHttpUser, "HttpUser": HttpUser}
FAST = W["user_class"] == "FastHttpUser"
TIMEOUT_S = float(W["timeout_s"])
CA_FILE = W.get("ca_file")
EXTRA_HEADERS = W["extra_headers"]  # Connection: close without keep-alive
CHECK = W["check_prefix"]  # how toolbench's parser knows a failed check (its own failure class)
VARIABLE = re.compile(r"\$\{([a-z][a-z0-9_]{0,31})\}")
_UNSENDABLE = re.compile(r"[\r\n\x00]")
STAGES = W["stages"]


class _Rows:
    """The data file's rows, shared by this process's users: each taker gets the next one."""

    def __init__(self, data):
        self.per = data["per"] if data else None
        self.recycle = data is not None and data["at_end"] == "recycle"
        self.rows = []
        if data:
            with open(Path(__file__).with_name(data["file"]), newline="", encoding="utf-8") as f:
                self.rows = list(csv.DictReader(f))
        self.next = 0

    def take(self, into):
        if self.next >= len(self.rows):
            if not self.recycle or not self.rows:
                raise StopUser()  # at_end: stop, this user has no row left
            self.next = 0
        into.update(self.rows[self.next])
        self.next += 1


ROWS = _Rows(W["data"])


def _fill(text, values, in_path=False):
    # A value in the path is percent-encoded whole, so that it stays one path segment's text.
    def one(match):
        value = values.get(match.group(1), "")
        return quote(value, safe="") if in_path else value
    return VARIABLE.sub(one, text)


def _at(document, path):
    """The value at a JSON path of `$`, `.key` and `[index]` steps; KeyError when it is not there."""
    for key, index in re.findall(r"\.([A-Za-z_][A-Za-z0-9_]*)|\[([0-9]+)\]", path[1:]):
        if key:
            if not isinstance(document, dict) or key not in document:
                raise KeyError(path)
            document = document[key]
        else:
            if not isinstance(document, list) or int(index) >= len(document):
                raise KeyError(path)
            document = document[int(index)]
    return document


def _same(found, expected):
    if isinstance(found, bool) or isinstance(expected, bool):
        return isinstance(found, bool) and isinstance(expected, bool) and found == expected
    return found == expected


def _as_text(value):
    return value if isinstance(value, str) else json.dumps(value)


def _json(response):
    try:
        return json.loads(response.content or b"")
    except ValueError:
        return None


def _extract(request, response, values):
    """Sets each variable the request extracts; names the first it could not take."""
    missing = None
    for rule in request["extract"]:
        taken = None
        if rule["json_path"] is not None:
            document = _json(response)
            try:
                taken = _as_text(_at(document, rule["json_path"])) if document is not None else None
            except KeyError:
                taken = None
        else:
            match = re.search(rule["regex"], response.text or "")
            taken = match.group(1) if match and match.groups() else None
        if taken is None:
            missing = missing or rule["variable"]
        else:
            values[rule["variable"]] = taken
    return missing


def _failed_check(checks, response):
    """Which check the response failed (a fixed text, so that Locust's error list stays short)."""
    body = response.content or b""
    if checks["status"] and response.status_code not in checks["status"]:
        return "status"
    if checks["contains"] is not None and checks["contains"] not in (response.text or ""):
        return "contains"
    if checks["json_path"] is not None:
        document = _json(response)
        try:
            if document is None or not _same(_at(document, checks["json_path"]), checks["json_equals"]):
                return "json"
        except KeyError:
            return "json"
    if checks["max_bytes"] is not None and len(body) > checks["max_bytes"]:
        return "max_bytes"
    return None


def _send(user, request):
    values = user.tb_values
    path = _fill(request["path"], values, in_path=True)
    if request["query"]:
        path += "?" + urlencode([(key, _fill(value, values)) for key, value in request["query"].items()])
    # A value from a data row or a response cannot end a header line: CR, LF and NUL are dropped.
    headers = {key: _UNSENDABLE.sub("", _fill(value, values)) for key, value in request["headers"].items()}
    headers.update(EXTRA_HEADERS)
    body = _fill(request["body"], values).encode("utf-8") if request["body"] is not None else None
    extra = {} if FAST else {"timeout": TIMEOUT_S}
    with user.client.request(request["method"], path, name=request["name"], headers=headers, data=body,
                             catch_response=True, **extra) as response:
        if not response.status_code:
            return  # no response (refused, reset, timed out): Locust counts its error
        checks = request["checks"]
        missing = _extract(request, response, values)
        failed = _failed_check(checks, response) if checks is not None else None
        if failed is None and missing is not None and checks is not None:
            failed = f"extract {missing}"
        if failed is not None:
            response.failure(f"{CHECK}{failed}")
        elif checks is not None and checks["status"]:
            response.success()  # a status the check asks for, even a 4xx, is ok


def _task(request, takes_row):
    def task(owner):
        user = owner.user if isinstance(owner, TaskSet) else owner
        if takes_row:
            ROWS.take(user.tb_values)
        _send(user, request)
    task.__name__ = f"request_{request['name']}"
    return task


REQUESTS = W["requests"]
PER_ITERATION = ROWS.per == "iteration"


class Sequence(SequentialTaskSet):
    # Each iteration runs the requests in order; a new row, when per iteration, with its first.
    tasks = [_task(r, PER_ITERATION and i == 0) for i, r in enumerate(REQUESTS)]


class WorkloadUser(USER_CLASSES[W["user_class"]]):
    if W["think"] is None:
        wait_time = constant(0)
    elif W["think"]["min_s"] == W["think"]["max_s"]:
        wait_time = constant(W["think"]["min_s"])
    else:
        wait_time = between(W["think"]["min_s"], W["think"]["max_s"])
    if W["order"] == "sequence":
        tasks = [Sequence]
    else:
        tasks = {_task(r, PER_ITERATION): r["weight"] for r in REQUESTS}  # whole weights, in proportion
    if FAST:
        connection_timeout = TIMEOUT_S
        network_timeout = TIMEOUT_S
        if CA_FILE is not None:
            insecure = False
            ssl_context_factory = staticmethod(lambda: gevent.ssl.create_default_context(cafile=CA_FILE))

    def on_start(self):
        self.tb_values = {}
        if CA_FILE is not None and not FAST:
            self.client.verify = CA_FILE
        if ROWS.per == "user":
            ROWS.take(self.tb_values)


if STAGES:
    class WorkloadStages(LoadTestShape):
        """Each stage moves the users linearly from the previous stage's end (the first from 0):
        Locust ramps to the stage's users at |change| / duration users a second; a hold keeps
        the previous rate, so Locust sees no change."""

        def tick(self):
            run_time = self.get_run_time()
            begin, before, rate = 0.0, 0, 1.0
            for stage in STAGES:
                if stage["users"] != before:
                    rate = abs(stage["users"] - before) / stage["duration_s"]
                if run_time < begin + stage["duration_s"]:
                    return stage["users"], rate
                begin += stage["duration_s"]
                before = stage["users"]
            return None

