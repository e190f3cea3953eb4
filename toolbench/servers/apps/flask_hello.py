"""Study 000's Flask app, both forms on one app: hello1.py's plain string at `/`, and
hello2.py's Jinja template at `/hello/` and `/hello/<name>` (the study loaded
`/hello/libai`). gunicorn and uWSGI build it with `toolbench.servers.apps.flask_hello:create_app()`."""
from __future__ import annotations

from flask import Flask, render_template


def create_app() -> Flask:
    app = Flask(__name__)

    @app.route("/")
    def hello_world() -> str:
        return "Hello, World!"

    @app.route("/hello/")
    @app.route("/hello/<name>")
    def hello(name: str | None = None) -> str:
        return render_template("hello.html", name=name)

    return app

