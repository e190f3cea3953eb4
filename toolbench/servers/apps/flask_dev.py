"""Study 000's first stack: the app on Flask's own development server,
`app.run(debug=False, threaded=True)`. Run as `python -m toolbench.servers.apps.flask_dev
CONFIG.json`, the config holding `host` and `port`."""
from __future__ import annotations

import json
import logging
import sys

from toolbench.servers.apps.flask_hello import create_app


def main(argv: list[str]) -> None:
    with open(argv[0], encoding="utf-8") as fh:
        config = json.load(fh)
    # No log line per request: every bundled stack is measured serving, not logging.
    logging.getLogger("werkzeug").setLevel(logging.WARNING)
    create_app().run(debug=False, threaded=True, host=config["host"], port=int(config["port"]))


if __name__ == "__main__":
    main(sys.argv[1:])
