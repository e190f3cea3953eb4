"""A cell's workload (toolbench.scenario.workload) as a JMeter test plan, and what JMeter can
express of one.

The plan: one Thread Group that runs once per thread (so that a CSV Data Set Config at its level
gives each user one row) around a Loop Controller that runs until the scheduler's end; in the
loop, the requests in order (sequence) or a Random Controller over them, each repeated as often
as its whole weight (mix). Each request is an HTTP sampler labelled with its name, with its own
Header Manager, extractors (JSON Extractor, Regular Expression Extractor) and assertions (Response,
JSON and Size Assertions); think time is a Constant or Uniform Random Timer in the loop.

Values: every literal passes through plan.jmx_value (escaped for XML, `${` made literal for
JMeter); a workload's `${name}` stays a JMeter variable reference, its literal pieces escaped
around it (jmx_text). A variable in the path or the query is sent URL-encoded (`__urlencode`).
A failed check is a failed sample whose failure message is CHECK_PREFIX + the check (a Response
Assertion's custom message; a JSON check is a JSON Extractor and a Response Assertion on its
variable) or the Size Assertion's own message (labels.CHECK_MESSAGES)."""
from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING
from urllib.parse import quote
from xml.sax.saxutils import escape

from toolbench.adapters import workload_requests
from toolbench.adapters.jmeter import stages as jmeter_stages
from toolbench.adapters.jmeter.plan import _XML_ENTITIES, NOT_XML, jmx_value
from toolbench.contract.adapter import SUPPORTED, Support, option
from toolbench.contract.workload import FeatureSupport, approximated, honoured
from toolbench.errors import AdapterError
from toolbench.scenario.workload import VARIABLE, Checks, Workload, WorkloadRequest

if TYPE_CHECKING:
    from toolbench.contract.cell import Cell

DATA = "workload_data.csv"
CHECK_PREFIX = "toolbench check failed: "
MAX_COPIES = 100  # a mix's samplers repeated by whole weight: at most this many in all
METHODS = ("GET", "POST", "PUT", "PATCH", "DELETE", "HEAD", "OPTIONS")

FEATURES: dict[str, FeatureSupport] = {
    "sequence": honoured(),  # the samplers in order in a Loop Controller
    "mix": honoured(),  # a Random Controller over samplers repeated by whole weight
    "data": honoured(),  # CSV Data Set Config, shared by all threads
    "extract": approximated("JMeter's Regular Expression Extractor reads Perl 5 (ORO) regular expressions, not "
                            "Python's; a JSON path is the same"),
    "think": approximated("a Constant or Uniform Random Timer pauses before every request, a user's first too, "
                          "in whole milliseconds"),
    "checks": honoured(),  # Response Assertions (on the body, the status or a JSON Extractor's value), Size Assertion
    "stages": approximated(jmeter_stages.HOW),  # the Concurrency Thread Group plugin is not installed
    "per_request": honoured(),  # the JTL's label
}


def supports(cell: "Cell", workload: Workload) -> Support:
    if cell.stop.duration_s is None:
        return Support(False, "a JMeter workload runs for a duration (the scheduler's): its loops do not "
                              "count requests")
    if (refused := jmeter_stages.refusal(workload)) is not None:
        return Support(False, refused)
    names = {r.name for r in workload.requests}
    for request in workload.requests:
        if request.method not in METHODS:
            return Support(False, f"the HTTP sampler here sends {', '.join(METHODS)}, not {request.method}")
        base, _, tail = request.name.rpartition("-")
        if base in names and tail.isdigit():
            return Support(False, f"JMeter's JTL reads a label `{request.name}` after `{base}` as a sub-result of "
                                  f"it: name the requests otherwise")
        if any(NOT_XML.search(text) for text in _texts(request)):
            return Support(False, f"a JMeter test plan (XML) cannot carry control characters (request {request.name})")
    return SUPPORTED


def _texts(request: WorkloadRequest) -> list[str]:
    checks = request.checks or Checks()
    return [request.path, *request.query, *request.query.values(), *request.headers, *request.headers.values(),
            request.body or "", *(e.regex or "" for e in request.extract), checks.contains or "",
            str(checks.json_equals)]


def jmx_text(text: str) -> str:
    """A value with `${name}` variables that JMeter fills in, every other character literal and
    escaped for XML (see plan.jmx_value: in a string with `${`, `$` and `\\` are escaped)."""
    if not VARIABLE.search(text):
        return jmx_value(text)
    if NOT_XML.search(text):
        raise AdapterError(f"jmeter: a control character cannot be written into a test plan: {text!r}")
    out, at = [], 0
    for match in VARIABLE.finditer(text):
        out.append(_literal(text[at:match.start()]))
        out.append("${" + match.group(1) + "}")
        at = match.end()
    out.append(_literal(text[at:]))
    return escape("".join(out), _XML_ENTITIES)


def _literal(piece: str) -> str:
    return piece.replace("\\", "\\\\").replace("$", "${__char(36)}").replace(",", "\\,")


def _url_part(text: str) -> str:
    """A path or a query part: literal pieces percent-encoded here, variables by JMeter."""
    out, at = [], 0
    for match in VARIABLE.finditer(text):
        out.append(quote(text[at:match.start()], safe="/"))
        out.append("${__urlencode(${" + match.group(1) + "})}")
        at = match.end()
    out.append(quote(text[at:], safe="/"))
    return "".join(out)


def copies(requests: tuple[WorkloadRequest, ...]) -> list[int]:
    """How often each request appears under the Random Controller: whole weights in the asked
    proportion (to 1/100 of each), in smallest terms; beyond MAX_COPIES in all, rounded to about
    MAX_COPIES, each at least once."""
    return workload_requests.whole_weights(requests, 100, MAX_COPIES, "jmeter")


# ---- the plan's parts ----

def _prop(kind: str, name: str, value: str) -> str:
    """`value` is already escaped."""
    return f'<{kind} name="{name}">{value}</{kind}>'


def _data(cell: "Cell", workload: Workload) -> str:
    data = workload.data
    assert data is not None
    return "".join([
        '<CSVDataSet guiclass="TestBeanGUI" testclass="CSVDataSet" testname="data">',
        _prop("stringProp", "filename", DATA), _prop("stringProp", "fileEncoding", "UTF-8"),
        _prop("stringProp", "variableNames", jmx_value(",".join(data.columns))),
        _prop("boolProp", "ignoreFirstLine", "true"), _prop("stringProp", "delimiter", ","),
        _prop("boolProp", "quotedData", "true"),
        _prop("boolProp", "recycle", "true" if data.at_end == "recycle" else "false"),
        _prop("boolProp", "stopThread", "false" if data.at_end == "recycle" else "true"),
        _prop("stringProp", "shareMode", "shareMode.all"),
        "</CSVDataSet><hashTree/>"])


def _think(workload: Workload) -> str:
    think = workload.think
    if think is None:
        return ""
    low = round(think.min_s * 1000)
    if think.constant:
        return ('<ConstantTimer guiclass="ConstantTimerGui" testclass="ConstantTimer" testname="think">'
                + _prop("stringProp", "ConstantTimer.delay", str(low)) + "</ConstantTimer><hashTree/>")
    return ('<UniformRandomTimer guiclass="UniformRandomTimerGui" testclass="UniformRandomTimer" testname="think">'
            + _prop("stringProp", "ConstantTimer.delay", str(low))
            + _prop("stringProp", "RandomTimer.range", str(round(think.max_s * 1000) - low))
            + "</UniformRandomTimer><hashTree/>")


def _sampler(cell: "Cell", request: WorkloadRequest, host: str, port: int, protocol: str) -> str:
    path = _url_part(request.path)
    if request.query:
        path += "?" + "&".join(f"{_url_part(k)}={_url_part(v)}" for k, v in request.query.items())
    timeout_ms = str(int(option(cell, "timeout_s", 30)) * 1000)
    body = ""
    if request.body is not None:
        body = ('<elementProp name="" elementType="HTTPArgument">'
                + _prop("boolProp", "HTTPArgument.always_encode", "false")
                + _prop("stringProp", "Argument.value", jmx_text(request.body))
                + _prop("stringProp", "Argument.metadata", "=") + "</elementProp>")
    parts = [
        f'<HTTPSamplerProxy guiclass="HttpTestSampleGui" testclass="HTTPSamplerProxy" '
        f'testname="{jmx_value(request.name)}">',
        _prop("boolProp", "HTTPSampler.postBodyRaw", "true" if body else "false"),
        '<elementProp name="HTTPsampler.Arguments" elementType="Arguments">',
        f'<collectionProp name="Arguments.arguments">{body}</collectionProp></elementProp>',
        _prop("stringProp", "HTTPSampler.domain", jmx_value(host)),
        _prop("stringProp", "HTTPSampler.port", str(port)),
        _prop("stringProp", "HTTPSampler.protocol", jmx_value(protocol)),
        # The path is made of percent-encoded literals and __urlencode calls: written as JMeter reads it.
        _prop("stringProp", "HTTPSampler.path", escape(path, _XML_ENTITIES)),
        _prop("stringProp", "HTTPSampler.method", jmx_value(request.method)),
        _prop("stringProp", "HTTPSampler.implementation", "HttpClient4"),
        _prop("boolProp", "HTTPSampler.follow_redirects", "false"),
        _prop("boolProp", "HTTPSampler.auto_redirects", "false"),
        _prop("boolProp", "HTTPSampler.use_keepalive", "true" if cell.keepalive else "false"),
        _prop("stringProp", "HTTPSampler.connect_timeout", timeout_ms),
        _prop("stringProp", "HTTPSampler.response_timeout", timeout_ms),
        "</HTTPSamplerProxy><hashTree>", _headers(request), *_extractors(request), *_assertions(request),
        "</hashTree>"]
    return "".join(parts)


def _headers(request: WorkloadRequest) -> str:
    if not request.headers:
        return ""
    rows = "".join('<elementProp name="" elementType="Header">'
                   + _prop("stringProp", "Header.name", jmx_value(name))
                   + _prop("stringProp", "Header.value", jmx_text(value)) + "</elementProp>"
                   for name, value in request.headers.items())
    return ('<HeaderManager guiclass="HeaderPanel" testclass="HeaderManager" testname="headers">'
            f'<collectionProp name="HeaderManager.headers">{rows}</collectionProp></HeaderManager><hashTree/>')


def _extractors(request: WorkloadRequest) -> list[str]:
    out = []
    for rule in request.extract:
        name = jmx_value(rule.variable)
        if rule.json_path is not None:
            out.append('<JSONPostProcessor guiclass="JSONPostProcessorGui" testclass="JSONPostProcessor" '
                       f'testname="extract {name}">'
                       + _prop("stringProp", "JSONPostProcessor.referenceNames", name)
                       + _prop("stringProp", "JSONPostProcessor.jsonPathExprs", jmx_value(rule.json_path))
                       + _prop("stringProp", "JSONPostProcessor.match_numbers", "1")
                       + _prop("stringProp", "JSONPostProcessor.defaultValues", "")
                       + "</JSONPostProcessor><hashTree/>")
        else:
            out.append('<RegexExtractor guiclass="RegexExtractorGui" testclass="RegexExtractor" '
                       f'testname="extract {name}">'
                       + _prop("stringProp", "RegexExtractor.useHeaders", "false")
                       + _prop("stringProp", "RegexExtractor.refname", name)
                       + _prop("stringProp", "RegexExtractor.regex", jmx_value(rule.regex))
                       + _prop("stringProp", "RegexExtractor.template", "$1$")
                       + _prop("stringProp", "RegexExtractor.default", "")
                       + _prop("stringProp", "RegexExtractor.match_number", "1")
                       + "</RegexExtractor><hashTree/>")
    return out


# Response Assertion's test types (org.apache.jmeter.assertions.ResponseAssertion).
_CONTAINS, _NOT, _EQUALS, _SUBSTRING, _OR = 2, 4, 8, 16, 32
# What a JSON path that is not in the response reads as (upper case and spaces: no JSON value of a check).
NOT_THERE = "TOOLBENCH: NO VALUE AT THE PATH"


def _response_assertion(what: str, field: str, patterns: list[str], test_type: int, ignore_status: bool,
                        variable: str | None = None) -> str:
    strings = "".join(_prop("stringProp", str(i), jmx_value(p)) for i, p in enumerate(patterns))
    scope = (_prop("stringProp", "Assertion.scope", "variable") + _prop("stringProp", "Scope.variable", variable)
             if variable else "")
    return (f'<ResponseAssertion guiclass="AssertionGui" testclass="ResponseAssertion" testname="check {what}">'
            f'<collectionProp name="Asserion.test_strings">{strings}</collectionProp>' + scope
            + _prop("stringProp", "Assertion.custom_message", jmx_value(CHECK_PREFIX + what))
            + _prop("stringProp", "Assertion.test_field", field)
            + _prop("boolProp", "Assertion.assume_success", "true" if ignore_status else "false")
            + _prop("intProp", "Assertion.test_type", str(test_type))
            + "</ResponseAssertion><hashTree/>")


def _json_check(n: int, path: str, expected: str | None) -> str:
    """The value at `path` into a variable of its own (upper case: no workload variable's name), then
    a Response Assertion on it, so that its failure carries CHECK_PREFIX like the others: equal to
    `expected`, or (None) not the sentinel that says the path was not there."""
    variable = f"TB_CHECK_{n}"
    extractor = ('<JSONPostProcessor guiclass="JSONPostProcessorGui" testclass="JSONPostProcessor" '
                 f'testname="check json {n}">'
                 + _prop("stringProp", "JSONPostProcessor.referenceNames", variable)
                 + _prop("stringProp", "JSONPostProcessor.jsonPathExprs", jmx_value(path))
                 + _prop("stringProp", "JSONPostProcessor.match_numbers", "1")
                 + _prop("stringProp", "JSONPostProcessor.defaultValues", jmx_value(NOT_THERE))
                 + "</JSONPostProcessor><hashTree/>")
    if expected is None:
        assertion = _response_assertion("extract", "Assertion.response_data", [NOT_THERE], _NOT | _EQUALS, False,
                                        variable)
    else:
        assertion = _response_assertion("json", "Assertion.response_data", [expected], _EQUALS, False, variable)
    return extractor + assertion


def _assertions(request: WorkloadRequest) -> list[str]:
    checks = request.checks
    if checks is None:
        return []
    out = []
    if checks.status:  # first: it sets the sample's outcome by the status before the others judge it
        out.append(_response_assertion("status", "Assertion.response_code", [str(s) for s in checks.status],
                                       _EQUALS | _OR, True))
    if checks.contains is not None:
        out.append(_response_assertion("contains", "Assertion.response_data", [checks.contains], _SUBSTRING, False))
    if checks.json_path is not None:
        out.append(_json_check(0, checks.json_path, _expected(checks.json_equals)))
    if checks.max_bytes is not None:
        out.append('<SizeAssertion guiclass="SizeAssertionGui" testclass="SizeAssertion" testname="check max_bytes">'
                   + _prop("stringProp", "Assertion.test_field", "SizeAssertion.response_data")
                   + _prop("stringProp", "SizeAssertion.size", str(checks.max_bytes))
                   + _prop("intProp", "SizeAssertion.operator", "6")  # 6: less than or equal
                   + "</SizeAssertion><hashTree/>")
    # A value to extract that is not there fails the checks too (toolbench.scenario.workload.Extract).
    for n, rule in enumerate(request.extract, 1):
        if rule.json_path is not None:
            out.append(_json_check(n, rule.json_path, None))
        elif rule.regex is not None:
            out.append(_response_assertion("extract", "Assertion.response_data", [rule.regex],
                                           _CONTAINS, False))
    return out


def _expected(value: object) -> str | None:
    """The value as JMeter's JSON Assertion writes what it found: text as is, else JSON."""
    if value is None:
        return None
    if isinstance(value, bool):
        return "true" if value else "false"
    return value if isinstance(value, str) else repr(value)


def test_plan(cell: "Cell", workload: Workload, host: str, port: int, protocol: str) -> str:
    assert cell.stop.duration_s is not None, "supports() refuses a workload without a duration"
    samplers = [_sampler(cell, r, host, port, protocol) for r in workload.requests]
    if workload.order == "mix":
        body = "".join(s for s, n in zip(samplers, copies(workload.requests)) for _ in range(n))
        body = ('<RandomController guiclass="RandomControlGui" testclass="RandomController" testname="mix">'
                + _prop("intProp", "InterleaveControl.style", "1") + f"</RandomController><hashTree>{body}</hashTree>")
    else:
        body = "".join(samplers)
    per_iteration = workload.data is not None and workload.data.per == "iteration"
    per_user = workload.data is not None and not per_iteration
    loop = ('<LoopController guiclass="LoopControlPanel" testclass="LoopController" testname="iterations">'
            + _prop("stringProp", "LoopController.loops", "-1")
            + _prop("boolProp", "LoopController.continue_forever", "true") + "</LoopController><hashTree>"
            + (_data(cell, workload) if per_iteration else "") + _think(workload) + body + "</hashTree>")
    group = ('<ThreadGroup guiclass="ThreadGroupGui" testclass="ThreadGroup" testname="tg">'
             + _prop("stringProp", "ThreadGroup.num_threads", str(cell.concurrency))
             + _prop("stringProp", "ThreadGroup.ramp_time", str(jmeter_stages.ramp_s(workload)))
             + _prop("stringProp", "ThreadGroup.on_sample_error", "continue")
             + '<elementProp name="ThreadGroup.main_controller" elementType="LoopController" '
               'guiclass="LoopControlPanel" testclass="LoopController" testname="once per user">'
             + _prop("stringProp", "LoopController.loops", "1")
             + _prop("boolProp", "LoopController.continue_forever", "false") + "</elementProp>"
             + _prop("boolProp", "ThreadGroup.scheduler", "true")
             + _prop("stringProp", "ThreadGroup.duration", str(int(cell.stop.duration_s)))
             + _prop("stringProp", "ThreadGroup.delay", "0")
             + "</ThreadGroup><hashTree>" + (_data(cell, workload) if per_user else "") + loop + "</hashTree>")
    return ('<?xml version="1.0" encoding="UTF-8"?>\n'
            f"<!-- Written by toolbench: a workload of {len(workload.requests)} requests ({workload.order}), "
            f"{cell.concurrency} threads, {int(cell.stop.duration_s)} s by the scheduler. -->\n"
            '<jmeterTestPlan version="1.2" properties="5.0" jmeter="5.6.3"><hashTree>'
            f'<TestPlan guiclass="TestPlanGui" testclass="TestPlan" testname="toolbench {jmx_value(cell.id)}">'
            + _prop("boolProp", "TestPlan.functional_mode", "false")
            + _prop("boolProp", "TestPlan.serialize_threadgroups", "false")
            + f"</TestPlan><hashTree>{group}</hashTree></hashTree></jmeterTestPlan>\n")


def files(cell: "Cell", workload: Workload, host: str, port: int, protocol: str) -> dict[str, str]:
    """The plan and the data file's text beside it."""
    out = {"plan.jmx": test_plan(cell, workload, host, port, protocol)}
    if workload.data is not None:
        try:
            out[DATA] = Path(workload.data.path).read_text(encoding="utf-8")
        except (OSError, UnicodeDecodeError) as exc:
            raise AdapterError(f"jmeter: cannot read the data file {workload.data.given}: {exc}") from None
    return out
