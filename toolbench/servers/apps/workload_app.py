"""The bundled workload target (issue 32): a small Flask app with what a portable workload
exercises, served by the Python stacks as `app: workload` (`create_app()`, like flask_hello).

- POST /login, JSON {"user", "password"}: 200 {"token": T} for a pair that is a row of the bundled
  `scenarios/data/users.csv` (read once at start), else 401.
- GET /api/search?q=...: with `Authorization: Bearer T`, 200 {"q", "count": 3, "results": [3 items]};
  without a valid token, 401.
- POST /api/items, a JSON body: 201 {"id": N} (N counts per worker process); 400 on a body that is
  not JSON.
- GET /page: a fixed HTML page of about 2 KB. GET /: a one-line answer (readiness checks).

The token is stateless, so that it is valid in every worker process of a stack: the user's name
in hex, then HMAC-SHA256 of it under a secret the stack makes at each start and passes in the
environment (SECRET_ENV); all lowercase hex, so that a regex `[a-z0-9]+` extracts it. Request
bodies are bounded (MAX_BODY: 413 beyond). Nothing here runs at import time, and it imports
nothing of the toolbench catalogue (the monitor measures the served process's memory)."""
from __future__ import annotations

import csv
import hashlib
import hmac
import itertools
import os
import secrets
from pathlib import Path
from typing import Any

from flask import Flask, Response, jsonify, request

SECRET_ENV = "TOOLBENCH_WORKLOAD_SECRET"
MAX_BODY = 64 * 1024
MAX_USERS = 100_000
MAX_QUERY = 256  # characters of `q` echoed back
_MAC_HEX = 64  # hex digits of an HMAC-SHA256
USERS_FILE = Path("data") / "users.csv"  # under the bundled scenarios' folder

PAGE = ("<!DOCTYPE html>\n<html><head><meta charset=\"utf-8\"><title>toolbench workload page</title></head>\n"
        "<body><h1>toolbench workload page</h1>\n"
        + "".join(f"<p id=\"p{i}\">Paragraph {i:02d} of the page a portable workload loads: a fixed text of "
                  "about two kilobytes, the same on every request.</p>\n" for i in range(16))
        + "</body></html>\n")


def scenarios_folder() -> Path | None:
    """toolbench/scenarios/ of an installed package, else the checkout's scenarios/ (as
    toolbench.scenario.bundled finds them, without importing it: it brings yaml)."""
    package = Path(__file__).resolve().parents[2]
    return next((c for c in (package / "scenarios", package.parent / "scenarios") if c.is_dir()), None)


def load_users(path: Path) -> dict[str, str]:
    """user -> password, from a CSV file with a header row holding `user` and `password`."""
    with path.open(encoding="utf-8", newline="") as fh:
        rows = csv.DictReader(fh)
        if not rows.fieldnames or not {"user", "password"} <= set(rows.fieldnames):
            raise ValueError(f"{path}: expected a header row with the columns user and password")
        return {row["user"]: row["password"] for row in itertools.islice(rows, MAX_USERS)
                if row.get("user") and row.get("password") is not None}


def token_for(secret: bytes, user: str) -> str:
    named = user.encode("utf-8")
    return named.hex() + hmac.new(secret, named, hashlib.sha256).hexdigest()


def user_of(secret: bytes, token: str) -> str | None:
    """The user a token was made for; None when it is not one this secret made."""
    if len(token) <= _MAC_HEX or len(token) > 4096:
        return None
    try:
        named = bytes.fromhex(token[:-_MAC_HEX])
    except ValueError:
        return None
    if not hmac.compare_digest(token_for(secret, named.decode("utf-8", "replace")), token):
        return None
    return named.decode("utf-8", "replace")


def _bearer(header: str | None) -> str:
    scheme, _, value = (header or "").partition(" ")
    return value.strip() if scheme.lower() == "bearer" else ""


def _json_body() -> Any:
    return request.get_json(force=True, silent=True)


def create_app(users_file: Path | None = None) -> Flask:
    """The app; `users_file`: the valid logins (the bundled scenarios/data/users.csv by default)."""
    folder = scenarios_folder()
    path = users_file or (folder / USERS_FILE if folder else None)
    if path is None:
        raise RuntimeError("workload app: the bundled scenarios/data/users.csv is not there")
    users = load_users(path)
    # Made here when the stack passed none: valid in this process only (one-process stacks).
    secret = (os.environ.get(SECRET_ENV) or secrets.token_hex(32)).encode("ascii")
    item_ids = itertools.count(1)
    app = Flask(__name__)
    app.config["MAX_CONTENT_LENGTH"] = MAX_BODY

    @app.route("/")
    def index() -> str:
        return "toolbench workload app\n"

    @app.route("/login", methods=["POST"])
    def login() -> tuple[Response, int]:
        body = _json_body()
        user = body.get("user") if isinstance(body, dict) else None
        password = body.get("password") if isinstance(body, dict) else None
        if not isinstance(user, str) or not isinstance(password, str) or users.get(user) != password:
            return jsonify(error="unknown user or wrong password"), 401
        return jsonify(token=token_for(secret, user)), 200

    @app.route("/api/search")
    def search() -> tuple[Response, int]:
        if user_of(secret, _bearer(request.headers.get("Authorization"))) is None:
            return jsonify(error="a valid bearer token is needed"), 401
        q = request.args.get("q", "")[:MAX_QUERY]
        results = [{"rank": i, "title": f"{q} result {i}"} for i in (1, 2, 3)]
        return jsonify(q=q, count=len(results), results=results), 200

    @app.route("/api/items", methods=["POST"])
    def items() -> tuple[Response, int]:
        if _json_body() is None:
            return jsonify(error="expected a JSON body"), 400
        return jsonify(id=next(item_ids)), 201

    @app.route("/page")
    def page() -> Response:
        return Response(PAGE, mimetype="text/html")

    return app
