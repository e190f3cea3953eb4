#!/usr/bin/env bash
# Install Gatling (default 3.10.5) as a small home built only from the io.gatling artifacts
# published to Maven Central plus their transitive dependencies, resolved with `mvn` through a
# throwaway pom (io.gatling.highcharts:gatling-charts-highcharts pulls in gatling-app, the HTTP
# module and the Java DSL).
#
# Why 3.10.5: its simulation.log is tab-separated text (3.13 made it a binary format; 3.11 and 3.12,
# still text, need nothing else here but are not the version toolbench was tested with); it runs on
# Java 17 (Debian 12's) without --add-opens, which 3.13 needs.
#
# Layout produced in ${TOOLBENCH_TOOLS}/gatling-<version>:
#   lib/*.jar              the runtime dependencies
#   conf/gatling.conf      no warm-up request to gatling.io, no usage analytics (only loopback
#                          traffic here), console summary every 5 s
#   conf/logback.xml       warnings only (without it every library logs at DEBUG)
#   prefs/                 Java user preferences of the runs: no check for a newer Gatling release
#   bin/gatling            the launcher toolbench runs (written by this script): compiles a
#                          simulation source once into classes/<hash>/ and runs it
#   .toolbench-complete    stamp written last; its presence = complete
#
# Idempotent: with the stamp of this version and launcher revision in place it only compiles
# templates/ToolbenchSimulation.java (beside this script) when its hash is new (a second or so) and exits 0.
# Otherwise it builds in a temporary directory next to the target, verifies it by running a probe
# simulation through the launcher, and renames it into place. The last line printed on success is
# always the Gatling home path.
#
# Environment:
#   TOOLBENCH_TOOLS        tools directory (required; `toolbench install gatling` sets it)
#   GATLING_VERSION        Gatling version (default: 3.10.5)
#   TOOLBENCH_MAVEN_REPO   maven local repository (default: maven's, ~/.m2/repository)
#   TOOLBENCH_FORCE=1      rebuild even if the stamp is present
set -euo pipefail

SCRIPT_DIR="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
# `toolbench install` always sets it (toolbench.contract.toolsdir); this script is package data,
# in a checkout or an installed wheel alike, so there is no folder of its own to fall back on.
TOOLS_DIR="${TOOLBENCH_TOOLS:?set TOOLBENCH_TOOLS to the tools folder, or run: toolbench install gatling}"
VERSION="${GATLING_VERSION:-3.10.5}"
DEP_PLUGIN="org.apache.maven.plugins:maven-dependency-plugin:3.6.1"
LAUNCHER=3  # the revision of bin/gatling and conf/ written below: a home of another is built again

# shellcheck source=adapters/maven_home.sh
. "${SCRIPT_DIR}/../maven_home.sh"
mkdir -p "${TOOLS_DIR}"
TOOLS_DIR="$(cd "${TOOLS_DIR}" && pwd)"
G_HOME="${TOOLS_DIR}/gatling-${VERSION}"

log() { printf 'install_gatling: %s\n' "$*" >&2; }
die() { printf 'install_gatling: ERROR: %s\n' "$*" >&2; exit 1; }

is_complete() {
    [[ -f "${1}/.toolbench-complete" && -f "${1}/lib/gatling-app-${VERSION}.jar" && -x "${1}/bin/gatling" &&
       -f "${1}/prefs/.java/.userPrefs/io/gatling/latestVersion/prefs.xml" ]] &&
        grep -qx "version=${VERSION}" "${1}/.toolbench-complete" &&
        grep -qx "launcher=${LAUNCHER}" "${1}/.toolbench-complete"
}

# toolbench's simulation, compiled ahead of the first cell (a second call: a check of its hash).
TEMPLATE="${SCRIPT_DIR}/templates/ToolbenchSimulation.java"
precompile() {
    if [[ -f "${TEMPLATE}" ]]; then
        "${1}/bin/gatling" compile "${TEMPLATE}" || die "toolbench's simulation does not compile against Gatling ${VERSION}"
    fi
}

if [[ "${TOOLBENCH_FORCE:-0}" != 1 ]] && is_complete "${G_HOME}"; then
    precompile "${G_HOME}"
    printf '%s\n' "${G_HOME}"
    exit 0
fi

command -v javac >/dev/null 2>&1 || die "javac not found on PATH (install a JDK >= 11, e.g. apt-get install openjdk-17-jdk-headless)"
command -v mvn >/dev/null 2>&1 || die "mvn not found on PATH (install maven, e.g. apt-get install maven)"

lock_home "gatling-${VERSION}"
if [[ "${TOOLBENCH_FORCE:-0}" != 1 ]] && is_complete "${G_HOME}"; then
    precompile "${G_HOME}"
    printf '%s\n' "${G_HOME}"
    exit 0
fi
stage_home "gatling-${VERSION}"

WORK="${STAGE}/work"
NEW_HOME="${STAGE}/gatling-${VERSION}"
mkdir -p "${WORK}" "${NEW_HOME}/lib" "${NEW_HOME}/conf" "${NEW_HOME}/bin" "${NEW_HOME}/classes"

cat >"${WORK}/pom.xml" <<EOF
<?xml version="1.0" encoding="UTF-8"?>
<project>
  <modelVersion>4.0.0</modelVersion>
  <groupId>local.toolbench</groupId>
  <artifactId>gatling-home</artifactId>
  <version>1</version>
  <packaging>pom</packaging>
  <dependencies>
    <dependency><groupId>io.gatling.highcharts</groupId><artifactId>gatling-charts-highcharts</artifactId><version>${VERSION}</version></dependency>
    <dependency><groupId>io.gatling</groupId><artifactId>gatling-app</artifactId><version>${VERSION}</version></dependency>
    <dependency><groupId>io.gatling</groupId><artifactId>gatling-http-java</artifactId><version>${VERSION}</version></dependency>
  </dependencies>
</project>
EOF

log "resolving io.gatling ${VERSION} with maven"
resolve "${WORK}/pom.xml" "${NEW_HOME}/lib" "${WORK}" "-DoutputDirectory=${NEW_HOME}/lib" -DincludeScope=runtime \
    "${DEP_PLUGIN}:copy-dependencies" ||
    die "maven could not resolve io.gatling.highcharts:gatling-charts-highcharts:${VERSION}"
for jar in gatling-app gatling-core gatling-http gatling-core-java gatling-http-java; do
    [[ -f "${NEW_HOME}/lib/${jar}-${VERSION}.jar" ]] || die "${jar}-${VERSION}.jar missing from the resolved set"
done

cat >"${NEW_HOME}/conf/gatling.conf" <<'EOF'
# Written by toolbench's adapters/gatling/install.sh: toolbench sends load to loopback only.
gatling {
  http { warmUpUrl = "" }
  data {
    enableAnalytics = false
    console { writePeriod = 5 }
  }
}
EOF
# Every Gatling 3.10 run asks search.maven.org for its latest release, unless a check of less than
# maxAge ago is stored in Java's user preferences (io.gatling.commons.util.LatestGatlingRelease).
# The launcher points the preferences at this folder, where a failed check "made" in 2100 stays
# valid: no run looks anything up beyond loopback.
PREFS="${NEW_HOME}/prefs/.java/.userPrefs/io/gatling/latestVersion"
mkdir -p "${PREFS}"
cat >"${PREFS}/prefs.xml" <<'EOF'
<?xml version="1.0" encoding="UTF-8" standalone="no"?>
<!DOCTYPE map SYSTEM "http://java.sun.com/dtd/preferences.dtd">
<map MAP_XML_VERSION="1.0">
  <entry key="lastCheckSuccess" value="false"/>
  <entry key="lastCheckTimestamp" value="4102444800000"/>
</map>
EOF
cat >"${NEW_HOME}/conf/logback.xml" <<'EOF'
<?xml version="1.0" encoding="UTF-8"?>
<configuration>
  <appender name="CONSOLE" class="ch.qos.logback.core.ConsoleAppender">
    <encoder><pattern>%d{HH:mm:ss.SSS} [%-5level] %logger{15} - %msg%n%rEx</pattern></encoder>
    <immediateFlush>false</immediateFlush>
  </appender>
  <root level="WARN"><appender-ref ref="CONSOLE"/></root>
</configuration>
EOF

# bin/gatling: `gatling --version`, or `gatling run SOURCE.java PARAMS.json RESULTS-FOLDER`.
cat >"${NEW_HOME}/bin/gatling" <<'EOF'
#!/bin/sh
# Gatling launcher written by toolbench's adapters/gatling/install.sh.
#   gatling --version                        prints "Gatling <version>"
#   gatling compile SOURCE.java              compiles SOURCE into classes/<hash of SOURCE>/, once
#   gatling run SOURCE.java PARAMS.json DIR  compiles SOURCE (cached by its hash in classes/),
#       runs its class with -Dtoolbench.params=PARAMS, results under DIR, no HTML report, and
#       hard-links DIR/<run>/simulation.log to ./simulation.log as soon as Gatling creates it,
#       so that a run killed at any moment leaves its log where the caller looks.
# JVM flags: $GATLING_JVM (default: a 512m heap).
set -u
PRG="$0"
while [ -h "$PRG" ]; do
  link=$(readlink "$PRG")
  case "$link" in
    /*) PRG="$link" ;;
    *) PRG="$(dirname "$PRG")/$link" ;;
  esac
done
HOME_DIR=$(cd "$(dirname "$PRG")/.." && pwd)
if [ -n "${JAVA_HOME:-}" ] && [ -x "$JAVA_HOME/bin/java" ]; then
  JAVA="$JAVA_HOME/bin/java"; JAVAC="$JAVA_HOME/bin/javac"
else
  JAVA=java; JAVAC=javac
fi
VERSION=$(cd "$HOME_DIR/lib" && ls gatling-app-*.jar 2>/dev/null | sed -n 's/^gatling-app-\(.*\)\.jar$/\1/p' | head -n 1)
USAGE="usage: gatling --version | gatling compile SOURCE.java | gatling run SOURCE.java PARAMS.json RESULTS-FOLDER"
case "${1:-}" in
  --version) echo "Gatling $VERSION"; exit 0 ;;
  compile) [ $# -eq 2 ] || { echo "$USAGE" >&2; exit 2; } ;;
  run) [ $# -eq 4 ] || { echo "$USAGE" >&2; exit 2; } ;;
  *) echo "$USAGE" >&2; exit 2 ;;
esac
SOURCE=$2
CLASS=$(basename "$SOURCE" .java)
HASH=$(cat "$SOURCE" | sha256sum | cut -c1-16)
CLASSES="$HOME_DIR/classes/$HASH"
if [ ! -f "$CLASSES/.complete" ]; then
  TMP=$(mktemp -d "$HOME_DIR/classes/.tmp.XXXXXX") && chmod 755 "$TMP" || exit 1
  if ! "$JAVAC" -nowarn -cp "$HOME_DIR/lib/*" -d "$TMP" "$SOURCE"; then
    rm -rf "$TMP"; echo "gatling: javac could not compile $SOURCE" >&2; exit 3
  fi
  touch "$TMP/.complete"
  # Another run may have compiled the same source meanwhile: its copy is as good.
  mv -T "$TMP" "$CLASSES" 2>/dev/null || rm -rf "$TMP"
fi
[ "$1" = compile ] && exit 0
PARAMS=$3; RESULTS=$4
mkdir -p "$RESULTS"
(
  i=0
  while [ $i -lt 6000 ]; do
    for log in "$RESULTS"/*/simulation.log; do
      if [ -f "$log" ]; then ln -f "$log" simulation.log && exit 0; fi
    done
    sleep 0.05; i=$((i + 1))
  done
) &
LINKER=$!
# shellcheck disable=SC2086
"$JAVA" ${GATLING_JVM:--Xms512m -Xmx512m} -Djava.net.preferIPv4Stack=true -Djava.util.prefs.userRoot="$HOME_DIR/prefs" \
  -Dtoolbench.params="$PARAMS" -cp "$HOME_DIR/conf:$CLASSES:$HOME_DIR/lib/*" \
  io.gatling.app.Gatling -s "$CLASS" -rf "$RESULTS" -nr
rc=$?
kill "$LINKER" 2>/dev/null
wait "$LINKER" 2>/dev/null
for log in "$RESULTS"/*/simulation.log; do
  if [ -f "$log" ] && [ ! -f simulation.log ]; then ln -f "$log" simulation.log; fi
done
exit $rc
EOF
chmod 0755 "${NEW_HOME}/bin/gatling"
# Verify: the launcher compiles a simulation against lib/ and Gatling runs it to its end.
log "verifying: bin/gatling run (javac, then io.gatling.app.Gatling)"
cat >"${WORK}/Probe.java" <<'EOF2'
import static io.gatling.javaapi.core.CoreDsl.*;
import io.gatling.javaapi.core.*;
public class Probe extends Simulation { { setUp(scenario("probe").exec(pause(1)).injectOpen(atOnceUsers(1))); } }
EOF2
if ! (cd "${WORK}" && GATLING_JVM="-Xmx256m -XX:TieredStopAtLevel=1" "${NEW_HOME}/bin/gatling" run Probe.java none results \
        >"${WORK}/probe.log" 2>&1) || [[ ! -s "${WORK}/simulation.log" ]]; then
    tail -n 40 "${WORK}/probe.log" >&2
    die "Gatling ${VERSION} did not run a probe simulation to its end"
fi
rm -rf "${NEW_HOME}/classes" && mkdir -p "${NEW_HOME}/classes"

printf 'version=%s\nlauncher=%s\nbuilt=%s\n' "${VERSION}" "${LAUNCHER}" "$(date -u +%Y-%m-%dT%H:%M:%SZ)" \
    >"${NEW_HOME}/.toolbench-complete"

move_into_place "${NEW_HOME}" "${G_HOME}"
precompile "${G_HOME}"
log "installed Gatling ${VERSION}"
printf '%s\n' "${G_HOME}"
