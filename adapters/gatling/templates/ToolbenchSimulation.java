// Written by toolbench: one scenario, one request, no pause.
//
// This file is the same for every cell (it is compiled once and cached by its hash): what a
// cell asks for (URL, method, headers, body, load model, duration or request budget) is data,
// read at run time from the JSON file toolbench writes beside it. Nothing from a scenario is
// pasted into code. Values reach Gatling only as session functions and byte arrays, never as
// strings, which Gatling would read as its Expression Language (`#{...}`).

import static io.gatling.javaapi.core.CoreDsl.*;
import static io.gatling.javaapi.http.HttpDsl.*;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import io.gatling.javaapi.core.*;
import io.gatling.javaapi.http.*;
import java.io.File;
import java.io.IOException;
import java.io.UncheckedIOException;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.Iterator;
import java.util.concurrent.atomic.AtomicLong;

public class ToolbenchSimulation extends Simulation {

  private static JsonNode params() {
    String path = System.getProperty("toolbench.params", "gatling_params.json");
    try {
      return new ObjectMapper().readTree(new File(path));
    } catch (IOException e) {
      throw new UncheckedIOException("toolbench: cannot read " + path, e);
    }
  }

  private static boolean has(JsonNode p, String key) {
    return p.hasNonNull(key);
  }

  // Requests left to send in a request-count cell of the closed model, shared by all users.
  private final AtomicLong budget = new AtomicLong();

  {
    JsonNode p = params();
    String url = p.get("url").asText();
    HttpRequestActionBuilder request = http("request")
        .httpRequest(p.get("method").asText(), session -> url)
        .requestTimeout(Duration.ofMillis(p.get("timeout_ms").asLong()))
        // Like the other tools: a response below 400 is a success, a redirect is not followed.
        .check(status().lt(400));
    for (Iterator<JsonNode> it = p.get("headers").elements(); it.hasNext(); ) {
      JsonNode pair = it.next();
      String value = pair.get(1).asText();
      request = request.header(pair.get(0).asText(), session -> value);
    }
    if (has(p, "body")) {
      request = request.body(ByteArrayBody(p.get("body").asText().getBytes(StandardCharsets.UTF_8)));
    }

    // A request count in the closed model: c users that loop, each on a connection of its own.
    boolean looping = !has(p, "rate_rps") && has(p, "requests");
    HttpProtocolBuilder protocol = http.disableWarmUp().disableCaching().disableFollowRedirect();
    if (p.get("keepalive").asBoolean()) {
      if (!looping) {
        // Otherwise a new virtual user sends each request: without a shared pool every user
        // would open a connection of its own.
        protocol = protocol.shareConnections();
      }
    } else if (!p.get("connection_header_given").asBoolean()) {
      protocol = protocol.connectionHeader("close");
    }
    boolean http2 = p.path("http2").asBoolean(false);
    if (http2) {
      // HTTP/2 where the server offers it by ALPN (over TLS: Gatling has no HTTP/2 in clear).
      protocol = protocol.enableHttp2();
    }
    if (url.startsWith("https:")) {
      // Read by toolbench's parser: Gatling's HTTPS trusts any certificate unless given a trust store.
      System.out.println("toolbench simulation: over TLS" + (http2 ? ", HTTP/2 enabled" : "")
          + "; Gatling does not check the server's certificate");
    }

    int concurrency = p.get("concurrency").asInt();
    PopulationBuilder population;
    if (looping && has(p, "per_user")) {
      population = scenario("toolbench")
          .repeat(p.get("per_user").asInt()).on(exec(request))
          .injectOpen(atOnceUsers(concurrency));
    } else if (has(p, "requests")) {
      long requests = p.get("requests").asLong();
      if (has(p, "rate_rps")) {
        Duration spread = Duration.ofMillis(Math.round(requests * 1000.0 / p.get("rate_rps").asDouble()));
        population = scenario("toolbench").exec(request).injectOpen(rampUsers((int) requests).during(spread));
      } else {
        budget.set(requests);
        population = scenario("toolbench")
            .asLongAs(session -> budget.getAndDecrement() > 0).on(exec(request))
            .injectOpen(atOnceUsers(concurrency));
      }
    } else {
      Duration during = Duration.ofMillis(p.get("duration_ms").asLong());
      ScenarioBuilder one = scenario("toolbench").exec(request);
      population = has(p, "rate_rps")
          ? one.injectOpen(constantUsersPerSec(p.get("rate_rps").asDouble()).during(during))
          : one.injectClosed(constantConcurrentUsers(concurrency).during(during));
    }
    setUp(population).protocols(protocol);
  }
}
