"""Which optional part of the package (pyproject.toml's extras) brings each module a command
may import: a command that needs one that is not installed says which, in one line, instead
of a traceback."""
from __future__ import annotations

from toolbench.errors import MissingExtra

# The top-level module name -> the extra that installs it.
EXTRA_OF = {
    "psutil": "run", "paramiko": "run", "uvloop": "run", "httptools": "run", "msgpack": "run", "zmq": "run",
    "flask": "servers", "gevent": "servers", "gunicorn": "servers", "uwsgi": "servers", "werkzeug": "servers",
    "locust": "locust",
    "pyarrow": "parquet",
}


def missing_extra(exc: ModuleNotFoundError, command: str) -> MissingExtra | None:
    """The extra that would have brought the module `exc` could not find; None when no extra
    brings it (then it is a defect, not a missing install)."""
    module = (exc.name or "").split(".")[0]
    extra = EXTRA_OF.get(module)
    return MissingExtra(extra, module, f"`toolbench {command}`") if extra else None
