"""Study 000's first stack: the app on Flask's own development server,
`app.run(debug=False, threaded=True)`. Run as `python -m toolbench.servers.apps.flask_dev
CONFIG.json`, the config holding `host` and `port`, and optionally `app` ("hello" or "workload": which
app it serves) and `env` (what that app reads from its environment)."""
from __future__ import annotations

import json
import logging
import os
import sys

from toolbench.servers.apps import flask_hello


def main(argv: list[str]) -> None:
    with open(argv[0], encoding="utf-8") as fh:
        config = json.load(fh)
    # No log line per request: every bundled stack is measured serving, not logging.
    logging.getLogger("werkzeug").setLevel(logging.WARNING)
    os.environ.update({str(k): str(v) for k, v in config.get("env", {}).items()})
    if config.get("app", "hello") == "workload":
        from toolbench.servers.apps import workload_app  # only this app's module is loaded

        app = workload_app.create_app()
    else:
        app = flask_hello.create_app()
    app.run(debug=False, threaded=True, host=config["host"], port=int(config["port"]))


if __name__ == "__main__":
    main(sys.argv[1:])
