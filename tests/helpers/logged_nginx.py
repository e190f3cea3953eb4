"""nginx-static with its access log on, for tests that count what the target itself served
(the bundled config turns the log off: writing it costs the server)."""
from __future__ import annotations

import contextlib
import functools
from dataclasses import dataclass
from pathlib import Path
from typing import Iterator

import pytest

from toolbench.errors import TargetError
from toolbench.scenario.targets import NginxOptions, ReadySpec
from toolbench.servers import nginx


@dataclass(frozen=True)
class LoggedNginx:
    base_url: str
    access_log: Path

    def lines(self) -> list[str]:
        return self.access_log.read_text().splitlines() if self.access_log.exists() else []


def need_nginx() -> None:
    try:
        nginx.binary()
    except TargetError:
        pytest.skip("nginx is not installed (scripts/install.sh installs it)")


def config(port: int, log: Path, workdir: Path, www: Path, host: str = "127.0.0.1") -> str:
    """nginx-static's config for `host`:`port`, with its access log in `log`."""
    conf = nginx.render(port, workdir=workdir.resolve(), host=host, options=NginxOptions(workers=1),
                        max_concurrency=64, server=nginx.static_server(www))
    assert "access_log off;" in conf
    return conf.replace("access_log off;", f"access_log {nginx.quote(str(log))};")


@contextlib.contextmanager
def logged_nginx(workdir: Path) -> Iterator[LoggedNginx]:
    log = workdir.resolve() / "access.log"
    with nginx.static_files() as www:
        conf = functools.partial(config, log=log, workdir=workdir, www=www)
        with nginx.run(workdir, "nginx-logged", ReadySpec(), conf) as (target, _):
            yield LoggedNginx(target.base_url, log)
