// Written by toolbench: a workload (several named requests, data, think time, checks, stages).
//
// Like ToolbenchSimulation.java, this file is the same for every cell (compiled once, cached by
// its hash): the workload is data, read at run time from the JSON file toolbench writes beside
// it (adapters/gatling/workload.py). Nothing from a scenario is pasted into code, and no value
// reaches Gatling as a string it would read as its Expression Language (`#{...}`): URLs, headers,
// bodies, check values and JSON paths are session functions or byte arrays; a `${name}` of the
// workload is filled here from the session's attributes (a data row's columns, extracted values).

import static io.gatling.javaapi.core.CoreDsl.*;
import static io.gatling.javaapi.http.HttpDsl.*;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import io.gatling.javaapi.core.*;
import io.gatling.javaapi.http.*;
import java.io.File;
import java.io.IOException;
import java.io.UncheckedIOException;
import java.net.URLEncoder;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.Iterator;
import java.util.List;
import java.util.Map;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.atomic.AtomicLong;
import java.util.function.Function;

public class ToolbenchWorkload extends Simulation {

  // Session attributes of toolbench's own: upper case, which no workload variable is.
  private static final String STARTED = "TB_STARTED";
  private static final String NO_ROW = "TB_NO_ROW";
  private static final String CHECK = "toolbench check ";
  private static final long PARK_MS = 20;  // how often a parked user looks at the profile again

  private static JsonNode params() {
    String path = System.getProperty("toolbench.params", "gatling_workload.json");
    try {
      return new ObjectMapper().readTree(new File(path));
    } catch (IOException e) {
      throw new UncheckedIOException("toolbench: cannot read " + path, e);
    }
  }

  // When the first user started (Gatling's injection clock starts just before: a profile read
  // from this one is never ahead of Gatling's), and the users sending now (closed model).
  private final AtomicLong startNanos = new AtomicLong();
  private final AtomicInteger sending = new AtomicInteger();
  private long[] stepEndsMs;
  private int[] stepFrom;
  private int[] stepTo;
  private long totalMs;

  private Session started(Session session) {
    startNanos.compareAndSet(0L, System.nanoTime());
    sending.incrementAndGet();
    return session;
  }

  private long elapsedMs() {
    return (System.nanoTime() - startNanos.get()) / 1_000_000L;
  }

  // The most users the profile lets send now: on a rise, Gatling starts them itself (a stage's
  // level is its end's); on a fall, the level rounded up.
  private int target(long at) {
    long begin = 0;
    for (int i = 0; i < stepEndsMs.length; i++) {
      if (at < stepEndsMs[i] && stepTo[i] >= stepFrom[i]) {
        return stepTo[i];
      }
      if (at < stepEndsMs[i]) {
        double span = stepEndsMs[i] - begin;
        double done = span > 0 ? (at - begin) / span : 1.0;
        return (int) Math.ceil(stepFrom[i] + (stepTo[i] - stepFrom[i]) * done - 1e-9);
      }
      begin = stepEndsMs[i];
    }
    return 0;
  }

  // Gatling's closed model ends no user on a ramp down, and replaces one that ends while its
  // own level (updated in steps of its own) is higher: a looping user that would leave would be
  // replaced at once, again and again. So, at the top of an iteration, a user beyond the level
  // stops sending and waits (parks), until the level rises again or the profile ends.
  private boolean parks() {
    int want = target(elapsedMs());
    while (true) {
      int now = sending.get();
      if (now <= want) {
        return false;
      }
      if (sending.compareAndSet(now, now - 1)) {
        return true;
      }
    }
  }

  private boolean resumes() {
    if (pastEnd()) {
      return true;  // to leave
    }
    int want = target(elapsedMs());
    while (true) {
      int now = sending.get();
      if (now >= want) {
        return false;
      }
      if (sending.compareAndSet(now, now + 1)) {
        return true;
      }
    }
  }

  private boolean pastEnd() {
    return elapsedMs() >= totalMs;
  }

  // ---- values: pieces of text and ${variables} filled from the session ----

  private static String value(Session session, String name) {
    return session.contains(name) ? String.valueOf((Object) session.get(name)) : "";
  }

  private static Function<Session, String> filled(JsonNode pieces) {
    List<String[]> parts = new ArrayList<>();
    for (JsonNode piece : pieces) {
      parts.add(new String[] {piece.get(0).asText(), piece.get(1).asText()});
    }
    return session -> {
      StringBuilder out = new StringBuilder();
      for (String[] part : parts) {
        switch (part[0]) {
          case "text": out.append(part[1]); break;
          case "path": out.append(URLEncoder.encode(value(session, part[1]), StandardCharsets.UTF_8).replace("+", "%20")); break;
          case "query": out.append(URLEncoder.encode(value(session, part[1]), StandardCharsets.UTF_8)); break;
          case "header": out.append(value(session, part[1]).replaceAll("[\\x00-\\x08\\x0a-\\x1f\\x7f]", "")); break;
          default: out.append(value(session, part[1]));
        }
      }
      return out.toString();
    };
  }

  // JSON equality as toolbench's own checks: a number equals a number of the same value, a
  // boolean only a boolean, a string only the same string.
  private static boolean same(Object found, JsonNode expected) {
    if (expected.isBoolean() || found instanceof Boolean) {
      return found instanceof Boolean && expected.isBoolean() && (Boolean) found == expected.asBoolean();
    }
    if (expected.isNumber()) {
      return found instanceof Number && ((Number) found).doubleValue() == expected.asDouble();
    }
    return found instanceof String && found.equals(expected.asText());
  }

  // ---- one request ----

  private static List<CheckBuilder> checks(JsonNode r) {
    List<CheckBuilder> out = new ArrayList<>();
    JsonNode c = r.get("checks");
    boolean checked = c != null && !c.isNull();
    if (checked && c.get("status").size() > 0) {
      List<Integer> codes = new ArrayList<>();
      c.get("status").forEach(code -> codes.add(code.asInt()));
      out.add(status().in(codes).name(CHECK + "status"));
    } else {
      // As without checks: a response below 400 is a success (its failure is its status's class).
      out.add(status().lt(400));
    }
    if (checked && c.hasNonNull("max_bytes")) {
      out.add(bodyLength().lte(c.get("max_bytes").asInt()).name(CHECK + "max_bytes"));
    }
    if (checked && c.hasNonNull("contains")) {
      String text = c.get("contains").asText();
      out.add(substring(session -> text).find().exists().name(CHECK + "contains"));
    }
    if (checked && c.hasNonNull("json_path")) {
      String path = c.get("json_path").asText();
      JsonNode expected = c.get("json_equals");
      out.add(jsonPath(session -> path).ofObject().find().transform(found -> same(found, expected)).is(true)
          .name(CHECK + "json"));
    }
    for (JsonNode e : r.get("extract")) {
      String variable = e.get("variable").asText();
      CheckBuilder.Validate<String> found = e.hasNonNull("json_path")
          ? jsonPath(session -> e.get("json_path").asText()).find()
          : regex(session -> e.get("regex").asText()).find();
      // A value not found fails the response as a check when the request has checks; else it
      // leaves the variable as it was.
      out.add(checked ? found.exists().name(CHECK + "extract " + variable).saveAs(variable)
          : found.optional().saveAs(variable));
    }
    return out;
  }

  private static HttpRequestActionBuilder request(JsonNode r, long timeoutMs) {
    String name = r.get("name").asText();
    HttpRequestActionBuilder out = http(session -> name)
        .httpRequest(r.get("method").asText(), filled(r.get("url")))
        .requestTimeout(Duration.ofMillis(timeoutMs))
        .check(checks(r));
    for (JsonNode pair : r.get("headers")) {
      out = out.header(pair.get(0).asText(), filled(pair.get(1)));
    }
    if (r.hasNonNull("body")) {
      Function<Session, String> body = filled(r.get("body"));
      out = out.body(ByteArrayBody(session -> body.apply(session).getBytes(StandardCharsets.UTF_8)));
    }
    return out;
  }

  // Think time before each request after a user's first, then the request (none past the end).
  private ChainBuilder step(JsonNode r, JsonNode p) {
    ChainBuilder out = exitHereIf(session -> pastEnd());
    JsonNode think = p.get("think");
    if (think != null && !think.isNull()) {
      long low = think.get("min_ms").asLong();
      long high = think.get("max_ms").asLong();
      ChainBuilder pause = low == high ? pause(Duration.ofMillis(low))
          : pause(Duration.ofMillis(low), Duration.ofMillis(high));
      out = out.doIf(session -> session.contains(STARTED)).then(pause).exitHereIf(session -> pastEnd());
    }
    return out.exec(request(r, p.get("timeout_ms").asLong())).exec(session -> session.set(STARTED, true));
  }

  private ChainBuilder iteration(JsonNode p) {
    List<ChainBuilder> steps = new ArrayList<>();
    for (JsonNode r : p.get("requests")) {
      steps.add(step(r, p));
    }
    if (!p.get("order").asText().equals("mix")) {
      return exec(steps);
    }
    // Each iteration picks one request: the others by their percentages, the last the rest.
    List<Choice.WithWeight> choices = new ArrayList<>();
    JsonNode percents = p.get("percents");
    for (int i = 0; i < steps.size() - 1; i++) {
      choices.add(percent(percents.get(i).asDouble()).then(steps.get(i)));
    }
    return randomSwitchOrElse().on(choices).orElse(steps.get(steps.size() - 1));
  }

  // ---- data: a row per user or per iteration, from the data file's rows ----

  private static ChainBuilder feeding(JsonNode data) {
    List<Map<String, Object>> rows = new ArrayList<>();
    for (JsonNode row : data.get("rows")) {
      Map<String, Object> values = new HashMap<>();
      row.fields().forEachRemaining(kv -> values.put(kv.getKey(), kv.getValue().asText()));
      rows.add(values);
    }
    if (data.get("at_end").asText().equals("recycle")) {
      return feed(listFeeder(rows).circular());
    }
    // After the last row a user stops (a queue feeder would stop the whole simulation instead):
    // it is fed a row that says so, and leaves.
    AtomicInteger next = new AtomicInteger();
    Map<String, Object> none = Map.of(NO_ROW, true);
    Iterator<Map<String, Object>> taken = new Iterator<>() {
      public boolean hasNext() { return true; }
      public Map<String, Object> next() {
        int at = next.getAndIncrement();
        return at < rows.size() ? rows.get(at) : none;
      }
    };
    return feed(taken);
  }

  {
    JsonNode p = params();
    totalMs = p.get("duration_ms").asLong();
    JsonNode steps = p.get("profile");
    stepEndsMs = new long[steps.size()];
    stepFrom = new int[steps.size()];
    stepTo = new int[steps.size()];
    long end = 0;
    for (int i = 0; i < steps.size(); i++) {
      end += steps.get(i).get("duration_ms").asLong();
      stepEndsMs[i] = end;
      stepFrom[i] = (int) Math.ceil(steps.get(i).get("from").asDouble());
      stepTo[i] = (int) Math.ceil(steps.get(i).get("to").asDouble());
    }
    JsonNode data = p.get("data");
    boolean hasData = data != null && !data.isNull();
    boolean perIteration = hasData && data.get("per").asText().equals("iteration");
    boolean closed = p.get("model").asText().equals("closed");
    // A user left without a row stops; in the closed model it waits for the end, as Gatling
    // would replace a user that ends at once.
    ChainBuilder stop = closed ? asLongAs(session -> !pastEnd()).on(pause(Duration.ofMillis(PARK_MS))).exitHere()
        : exitHere();
    ChainBuilder fed = hasData ? feeding(data).doIf(session -> session.contains(NO_ROW)).then(stop)
        : exec(session -> session);

    ChainBuilder one = iteration(p);
    ChainBuilder user;
    if (closed) {
      // Each user loops over the workload, parked while the profile asks for fewer, to its end.
      ChainBuilder park = doIf(session -> parks()).then(
          asLongAs(session -> !resumes()).on(pause(Duration.ofMillis(PARK_MS))));
      ChainBuilder loop = forever().on(
          exec(park).exitHereIf(session -> pastEnd()).exec(perIteration ? fed.exec(one) : one));
      user = exec(this::started).exec(perIteration ? loop : fed.exec(loop));
    } else {
      // The open model: a new user for each iteration, on the profile's schedule.
      user = exec(this::started).exec(fed).exec(one);
    }
    ScenarioBuilder scenario = scenario("toolbench").exec(user);

    HttpProtocolBuilder protocol = http.disableWarmUp().disableCaching().disableFollowRedirect().disableUrlEncoding();
    if (p.get("keepalive").asBoolean()) {
      if (!closed) {
        protocol = protocol.shareConnections();  // else each new user would open a connection of its own
      }
    } else {
      protocol = protocol.connectionHeader("close");
    }
    String base = p.get("base_url").asText();
    boolean http2 = p.path("http2").asBoolean(false);
    if (http2) {
      protocol = protocol.enableHttp2();
    }
    if (base.startsWith("https:")) {
      System.out.println("toolbench simulation: over TLS" + (http2 ? ", HTTP/2 enabled" : "")
          + "; Gatling does not check the server's certificate");
    }
    setUp(closed ? scenario.injectClosed(closedSteps(steps)) : scenario.injectOpen(openSteps(steps)))
        .protocols(protocol);
  }

  private static List<ClosedInjectionStep> closedSteps(JsonNode steps) {
    List<ClosedInjectionStep> out = new ArrayList<>();
    for (JsonNode s : steps) {
      int from = s.get("from").asInt();
      int to = s.get("to").asInt();
      Duration during = Duration.ofMillis(s.get("duration_ms").asLong());
      out.add(from == to ? constantConcurrentUsers(to).during(during) : rampConcurrentUsers(from).to(to).during(during));
    }
    return out;
  }

  private static List<OpenInjectionStep> openSteps(JsonNode steps) {
    List<OpenInjectionStep> out = new ArrayList<>();
    for (JsonNode s : steps) {
      double from = s.get("from").asDouble();
      double to = s.get("to").asDouble();
      Duration during = Duration.ofMillis(s.get("duration_ms").asLong());
      if (from == 0 && to == 0) {
        out.add(nothingFor(during));
      } else {
        out.add(from == to ? constantUsersPerSec(to).during(during) : rampUsersPerSec(from).to(to).during(during));
      }
    }
    return out;
  }
}
