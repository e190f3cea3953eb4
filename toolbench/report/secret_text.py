"""How a secret is found in a file whatever encoding it is written in, and the secrets found by
their shape alone (a credential header's value, a token in a query string, a URL's userinfo, the
user name in a home folder).

A known value (a header's value, a key path, an SSH user) is matched in every encoding a copied
file may hold it in: each character as itself (maybe after a backslash: JSON's `\\/`, `\\"`),
as a JSON or Python escape (`\\u0041`, `\\x41`), an HTML character reference (`&#65;`,
`&#x41;`, `&quot;`) or a percent escape (`%41`, `+` for a space). Each character is one group
of fixed alternatives, so a match runs in linear time."""
from __future__ import annotations

import re
from typing import Iterable

REDACTED = "[redacted]"
USER = "[user]"
# Headers whose value is a credential, whatever the scenario says; a scenario adds its own
# with `request.secret_headers`.
SECRET_HEADERS = ("Authorization", "Proxy-Authorization", "Cookie", "Set-Cookie", "X-Api-Key")
# A query parameter whose name contains one of these carries a credential: its value goes. Other
# query values stay: they are what the test asked for (a size, a delay, an id).
SECRET_QUERY_WORDS = ("token", "key", "secret", "pass", "pwd", "sig", "auth", "session", "cred")
# A known value shorter than this is not searched for everywhere (`Cookie: a` would take every `a`
# out of every file): the rules by shape still take it out of a header or a query.
SHORTEST = 4
_NAMED = {"&": ("amp",), "<": ("lt",), ">": ("gt",), '"': ("quot",), "'": ("apos", "#39")}
_JSON_SHORT = {"\n": "n", "\t": "t", "\r": "r", "\b": "b", "\f": "f"}
_QUOTE = r"(?:\\{0,3}[\"']|&(?:quot|apos|#34|#39|#x22|#x27);)"


def _char(c: str) -> str:
    """Every way a copied file may write the character c, as one regex group."""
    code = ord(c)
    # as itself or as an HTML reference, maybe after backslashes (JSON's `\/`, JSON in HTML's `\&quot;`)
    written = [re.escape(c), r"&#0*%d;" % code, r"&#[xX]0*(?i:%x);" % code, *(f"&{n};" for n in _NAMED.get(c, ()))]
    forms = [r"\\{0,3}(?:" + "|".join(written) + ")"]
    if code < 0x10000:
        forms.append(r"\\{1,3}u(?i:%04x)" % code)
    else:
        high, low = 0xD800 + ((code - 0x10000) >> 10), 0xDC00 + ((code - 0x10000) & 0x3FF)
        forms.append(r"\\{1,3}u(?i:%04x)\\{1,3}u(?i:%04x)" % (high, low))
    forms.append(r"\\{1,3}U(?i:%08x)" % code)  # YAML's long escape
    if code < 0x100:
        forms.append(r"\\{1,3}x(?i:%02x)" % code)
    if c in _JSON_SHORT:
        forms.append(r"\\{1,3}" + _JSON_SHORT[c])
    forms.append("".join(r"%%(?i:%02x)" % byte for byte in c.encode("utf-8")))
    if c == " ":  # a form's `+`; a YAML scalar folded there over lines, as text or JSON-escaped
        forms += [r"\+", r"[ \t]{0,64}(?:\r?\n|(?:\\{1,3}r)?\\{1,3}n)(?:[ \t]|\\{1,3}t){0,64}"]
    if c == "'":
        forms.append("''")  # in a YAML single-quoted scalar
    return "(?:" + "|".join(forms) + ")"


def any_encoding(value: str) -> str:
    """A regex of the value written in any of the encodings above (or a mix of them)."""
    return "".join(_char(c) for c in value)


def known(values: Iterable[str], shortest: int = SHORTEST) -> str | None:
    """One regex of every value, the longest first (a key path before its folder)."""
    ordered = sorted({v for v in values if len(v) >= shortest}, key=len, reverse=True)
    if not ordered:
        return None
    return _starts(ordered) + "(?:" + "|".join(f"(?:{any_encoding(v)})" for v in ordered) + ")"


def _starts(values: list[str]) -> str:
    """Every encoding starts with the character itself, a backslash, `&` or `%`: a lookahead of
    that set lets the regex engine skip the other positions quickly (several times faster)."""
    first = "".join(sorted({v[0] for v in values if v} | {"\\", "&", "%"}))
    return f"(?=[{re.escape(first)}])"


def header_values(names: Iterable[str]) -> str:
    """`Name: value` (a header line, `-H 'Name: value'`, YAML `Name: value`) and `"Name": "value"`
    (JSON, a Python dict), the name in any case; group 1 is what stays, the value goes to the end
    of the line or its closing quote."""
    alternatives = "|".join(re.escape(n) for n in sorted(set(names), key=len, reverse=True))
    cut = rf"(?![ \t]*{_QUOTE}?[ \t]*{re.escape(REDACTED)})"  # a known value, cut already: the rest stays
    starts = re.escape("".join(sorted({n[0].lower() for n in names} | {n[0].upper() for n in names})))
    return (rf"(?=[{starts}])((?<![\w-])(?i:{alternatives}){_QUOTE}?[ \t]*:{cut}[ \t]*{_QUOTE}?[ \t]*)"
            r"(?:[^\r\n\"'<>\\&]|&(?!quot;|apos;|#))+")


# `?token=...`, `&amp;api_key=...`: a parameter whose name has a word of SECRET_QUERY_WORDS.
QUERY = (r"([?&;](?i:[\w.-]{0,64}(?:" + "|".join(SECRET_QUERY_WORDS) + r")[\w.-]{0,64})=)"
         r"[^&#\s\"'<>\\]+")
# `scheme://user:pass@`, also JSON's `http:\/\/...`: the userinfo goes, the host stays. Found from
# its `://` on (a literal start, which the regex engine finds quickly), whatever the scheme.
USERINFO = r"(:(?:\\?/){2})[^/\s@\"'<>\\?#]+@"
# The user of an SSH label, `user@address:port` (toolbench's own, in messages and records), whoever
# it is. From the start of a word only: each word is read once, so a match runs in linear time.
SSH_LABEL = r"(?<![\w.@-])[\w.-]{1,64}(?=@[\w.:\[\]-]{1,253}:\d)"
# A home folder's user: `/home/alice`, `/Users/alice`, `~alice` (not `~/`).
HOME = r"(?=[/~])((?:(?<![\w.-])/(?:home|Users)/)|(?<![\w~/])~)(?=[A-Za-z_])[\w.-]+"


def users(names: Iterable[str]) -> str | None:
    """An SSH user name as a word of its own (`alice@host`, `user: alice`), in any encoding."""
    found = known(names, shortest=2)  # as a word of its own only: `bob@host`, not `bobcat`
    # Not inside a path (it goes with the path), nor a page's `:root` or a script's `data.x`.
    return rf"{_starts(list(names))}(?<![\w./:#-])(?:{found})(?![\w-]|\.\w)" if found else None
