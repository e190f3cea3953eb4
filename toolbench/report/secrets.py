"""What a run itself says is secret, read from its manifest as stored: the values of credential
headers and of the headers its scenario marks secret (`request.secret_headers`), credentials in
URLs (query tokens, userinfo), its hosts' SSH users and key paths, and the known-hosts file it
was run with. A manifest may come from anyone: every part is checked for its type, and the
scenario text is read back bounded (toolbench.record.yamltext)."""
from __future__ import annotations

import os
import re
import urllib.parse
from dataclasses import dataclass
from typing import Any, Iterator

import yaml

from toolbench.record import yamltext
from toolbench.report import secret_text

_HOST_SECRETS = ("key", "known_hosts")  # under `hosts:`: paths on this machine that say whose it is
_ARGV_PATHS = ("--known-hosts",)
_LABEL_USER = re.compile(r"^([^@\s]+)@")


@dataclass(frozen=True)
class Secrets:
    values: tuple[str, ...] = ()  # redacted wherever and however they are written
    headers: tuple[str, ...] = tuple(sorted(secret_text.SECRET_HEADERS))  # names whose value is redacted by its shape
    users: tuple[str, ...] = ()  # SSH user names, redacted as words


def of_manifest(manifest: Any) -> Secrets:
    """The secrets of a run, from its manifest.json as decoded JSON."""
    values: set[str] = set()
    users: set[str] = set()
    headers = set(secret_text.SECRET_HEADERS)
    if not isinstance(manifest, dict):
        return Secrets()
    scenario = manifest.get("scenario")
    text = scenario.get("text") if isinstance(scenario, dict) else None
    loaded = _scenario(text)
    headers |= set(_secret_header_names(loaded))
    for key, value in _pairs(loaded, ()):
        _take(key, value, headers, values, users)
    environment = manifest.get("environment")
    argv = environment.get("argv") if isinstance(environment, dict) else None
    if isinstance(argv, list):
        values.update(_argv_paths([a for a in argv if isinstance(a, str)]))
    generators = manifest.get("generators")
    for generator in generators if isinstance(generators, list) else []:
        label = generator.get("host") if isinstance(generator, dict) else None
        if isinstance(label, str) and (found := _LABEL_USER.match(label)):
            users.add(found.group(1))
    return Secrets(tuple(sorted(values)), tuple(sorted(headers)), tuple(sorted(users)))


def _scenario(text: Any) -> Any:
    if not isinstance(text, str):
        return None
    try:
        return yamltext.load(text)
    except (yaml.YAMLError, ValueError, RecursionError):
        return None  # what does not read gives no values; the rules by shape still apply


def _secret_header_names(loaded: Any) -> Iterator[str]:
    for key, value in _pairs(loaded, ()):
        if key[-1:] == ("secret_headers",) and isinstance(value, list):
            yield from (v for v in value if isinstance(v, str))


def _pairs(node: Any, path: tuple[str, ...]) -> Iterator[tuple[tuple[str, ...], Any]]:
    """Every (key path, value) of a loaded YAML value; yamltext has bounded its size."""
    if isinstance(node, dict):
        for key, value in node.items():
            step = (*path, str(key))
            yield step, value
            yield from _pairs(value, step)
    elif isinstance(node, list):
        for value in node:
            yield path, value
            yield from _pairs(value, path)


def _take(key: tuple[str, ...], value: Any, headers: set[str], values: set[str], users: set[str]) -> None:
    if not isinstance(value, (str, int, float)) or isinstance(value, bool) or not key:
        return
    text = str(value)
    name = key[-1]
    if name.lower() in {h.lower() for h in headers}:
        values.add(text.strip())
    elif "query" in key[:-1] and any(word in name.lower() for word in secret_text.SECRET_QUERY_WORDS):
        values.add(text.strip())  # a workload request's query parameter named like a credential
    elif "hosts" in key and name == "user":
        users.add(text)
    elif "hosts" in key and name in _HOST_SECRETS:
        values.update(_path_forms(text))
    values.update(url_secrets(text))


def url_secrets(text: str) -> Iterator[str]:
    """The userinfo of a URL and the values of its query parameters named like credentials."""
    for url in re.findall(r"[A-Za-z][\w+.-]*://[^\s\"'<>]+|/[^\s\"'<>?]*\?[^\s\"'<>]+", text):
        parts = urllib.parse.urlsplit(url)
        if "@" in parts.netloc:
            info = parts.netloc.rsplit("@", 1)[0]
            yield from (v for v in (info, *info.split(":", 1), urllib.parse.unquote(info)) if len(v) > 1)
        for name, value in urllib.parse.parse_qsl(parts.query, keep_blank_values=False):
            if any(word in name.lower() for word in secret_text.SECRET_QUERY_WORDS) and len(value) > 1:
                yield value
                yield urllib.parse.quote(value, safe="")


def _argv_paths(argv: list[str]) -> Iterator[str]:
    for n, arg in enumerate(argv):
        for flag in _ARGV_PATHS:
            if arg == flag and n + 1 < len(argv):
                yield from _path_forms(argv[n + 1])
            elif arg.startswith(flag + "="):
                yield from _path_forms(arg[len(flag) + 1:])


def _path_forms(path: str) -> Iterator[str]:
    """A path as given and as the home folder makes it (`~/.ssh/id` and `/home/me/.ssh/id`)."""
    if path.strip():
        yield path
        expanded = os.path.expanduser(path)
        if expanded != path:
            yield expanded
        name = os.path.basename(path.rstrip("/"))
        if len(name) > 3:
            yield name  # a key's file name (`id_lab`) says whose key it is too
