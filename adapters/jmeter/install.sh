#!/usr/bin/env bash
# Install Apache JMeter (default 5.6.3) as a normal JMeter home, built only
# from the org.apache.jmeter artifacts published to Maven Central plus their
# transitive dependencies, resolved with `mvn` through a throwaway pom.
#
# Layout produced in ${TOOLBENCH_TOOLS}/jmeter-<version>:
#   bin/ApacheJMeter.jar                 launcher (org.apache.jmeter:ApacheJMeter)
#   bin/jmeter                           small POSIX wrapper (written by this script)
#   bin/*.properties, bin/log4j2.xml ... unpacked from ApacheJMeter_config
#   lib/*.jar                            third-party runtime dependencies (+ jorphan.jar)
#   lib/ext/ApacheJMeter_*.jar           core, http, components, functions, config
#   lib/junit/                           empty (as in the binary distribution)
#   .toolbench-complete                  stamp written last; its presence = complete
#
# Idempotent: if the stamp and bin/ApacheJMeter.jar exist it exits 0 at once.
# Otherwise it builds in a temporary directory next to the target, verifies it
# with `java -jar bin/ApacheJMeter.jar --version` and renames it into place.
# The last line printed on success is always the JMeter home path.
#
# Environment:
#   TOOLBENCH_TOOLS        tools directory (required; `toolbench install jmeter` sets it)
#   JMETER_VERSION         JMeter version (default: 5.6.3)
#   TOOLBENCH_MAVEN_REPO   maven local repository (default: maven's, ~/.m2/repository)
#   TOOLBENCH_FORCE=1      rebuild even if the stamp is present
set -euo pipefail

SCRIPT_DIR="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
# `toolbench install` always sets it (toolbench.contract.toolsdir); this script is package data,
# in a checkout or an installed wheel alike, so there is no folder of its own to fall back on.
TOOLS_DIR="${TOOLBENCH_TOOLS:?set TOOLBENCH_TOOLS to the tools folder, or run: toolbench install jmeter}"
VERSION="${JMETER_VERSION:-5.6.3}"
DEP_PLUGIN="org.apache.maven.plugins:maven-dependency-plugin:3.6.1"
# Artifacts that go to lib/ext (the rest of the graph goes to lib/).
MODULES=(ApacheJMeter_core ApacheJMeter_http ApacheJMeter_components ApacheJMeter_functions ApacheJMeter_config)

# shellcheck source=adapters/maven_home.sh
. "${SCRIPT_DIR}/../maven_home.sh"
mkdir -p "${TOOLS_DIR}"
TOOLS_DIR="$(cd "${TOOLS_DIR}" && pwd)"
JM_HOME="${TOOLS_DIR}/jmeter-${VERSION}"
STAMP="${JM_HOME}/.toolbench-complete"

log() { printf 'install_jmeter: %s\n' "$*" >&2; }
die() { printf 'install_jmeter: ERROR: %s\n' "$*" >&2; exit 1; }

is_complete() {
    [[ -f "${1}/.toolbench-complete" && -f "${1}/bin/ApacheJMeter.jar" ]] &&
        grep -qx "version=${VERSION}" "${1}/.toolbench-complete"
}

if [[ "${TOOLBENCH_FORCE:-0}" != 1 ]] && is_complete "${JM_HOME}"; then
    printf '%s\n' "${JM_HOME}"
    exit 0
fi

command -v java >/dev/null 2>&1 || die "java not found on PATH (install a JRE >= 8, e.g. toolbench's apt-get install openjdk-17-jdk-headless)"
command -v mvn >/dev/null 2>&1 || die "mvn not found on PATH (install maven, e.g. apt-get install maven)"

lock_home "jmeter-${VERSION}"
if [[ "${TOOLBENCH_FORCE:-0}" != 1 ]] && is_complete "${JM_HOME}"; then
    printf '%s\n' "${JM_HOME}"
    exit 0
fi
stage_home "jmeter-${VERSION}"

WORK="${STAGE}/work"
NEW_HOME="${STAGE}/jmeter-${VERSION}"
mkdir -p "${WORK}/deps" "${NEW_HOME}/bin" "${NEW_HOME}/lib/ext" "${NEW_HOME}/lib/junit"

{
    cat <<EOF
<?xml version="1.0" encoding="UTF-8"?>
<project>
  <modelVersion>4.0.0</modelVersion>
  <groupId>local.toolbench</groupId>
  <artifactId>jmeter-home</artifactId>
  <version>1</version>
  <packaging>pom</packaging>
  <dependencies>
EOF
    for m in ApacheJMeter "${MODULES[@]}"; do
        printf '    <dependency><groupId>org.apache.jmeter</groupId><artifactId>%s</artifactId><version>%s</version></dependency>\n' "$m" "${VERSION}"
    done
    cat <<EOF
  </dependencies>
  <build>
    <plugins>
      <plugin>
        <groupId>org.apache.maven.plugins</groupId>
        <artifactId>maven-dependency-plugin</artifactId>
        <version>3.6.1</version>
        <executions>
          <execution>
            <id>copy</id>
            <configuration>
              <outputDirectory>${WORK}/deps</outputDirectory>
              <includeScope>runtime</includeScope>
            </configuration>
          </execution>
          <execution>
            <id>unpack-config</id>
            <configuration>
              <outputDirectory>${NEW_HOME}</outputDirectory>
              <includeGroupIds>org.apache.jmeter</includeGroupIds>
              <includeArtifactIds>ApacheJMeter_config</includeArtifactIds>
              <excludeTransitive>true</excludeTransitive>
              <excludes>META-INF/**</excludes>
            </configuration>
          </execution>
        </executions>
      </plugin>
    </plugins>
  </build>
</project>
EOF
} >"${WORK}/pom.xml"

log "resolving org.apache.jmeter ${VERSION} with maven"
resolve "${WORK}/pom.xml" "${WORK}/deps" "${WORK}" \
    "${DEP_PLUGIN}:copy-dependencies@copy" "${DEP_PLUGIN}:unpack-dependencies@unpack-config" ||
    die "maven could not resolve org.apache.jmeter:*:${VERSION}"

# Sort the jars into the JMeter home layout.
shopt -s nullglob
for jar in "${WORK}/deps"/*.jar; do
    name="$(basename "${jar}")"
    case "${name}" in
        "ApacheJMeter-${VERSION}.jar") cp "${jar}" "${NEW_HOME}/bin/ApacheJMeter.jar" ;;
        ApacheJMeter_*"-${VERSION}.jar") cp "${jar}" "${NEW_HOME}/lib/ext/${name%-"${VERSION}".jar}.jar" ;;
        "jorphan-${VERSION}.jar") cp "${jar}" "${NEW_HOME}/lib/jorphan.jar" ;;
        *) cp "${jar}" "${NEW_HOME}/lib/${name}" ;;
    esac
done
shopt -u nullglob

[[ -f "${NEW_HOME}/bin/ApacheJMeter.jar" ]] || die "launcher jar org.apache.jmeter:ApacheJMeter:${VERSION} missing from the resolved set"
for m in "${MODULES[@]}"; do
    [[ -f "${NEW_HOME}/lib/ext/${m}.jar" ]] || die "${m}.jar missing from the resolved set"
done
for f in jmeter.properties saveservice.properties upgrade.properties system.properties user.properties log4j2.xml; do
    [[ -f "${NEW_HOME}/bin/${f}" ]] || die "bin/${f} missing after unpacking ApacheJMeter_config"
done

# bin/jmeter: minimal launcher, same contract as the distribution's script
# (JVM_ARGS, JMETER_OPTS, JMETER_HEAP, JMETER_GC_ALGO, JMETER_LANGUAGE, JAVA_HOME).
cat >"${NEW_HOME}/bin/jmeter" <<'EOF'
#!/bin/sh
# JMeter launcher written by toolbench's adapters/jmeter/install.sh.
PRG="$0"
while [ -h "$PRG" ]; do
  link=$(readlink "$PRG")
  case "$link" in
    /*) PRG="$link" ;;
    *) PRG="$(dirname "$PRG")/$link" ;;
  esac
done
BIN_DIR=$(cd "$(dirname "$PRG")" && pwd)
[ -r "$BIN_DIR/setenv.sh" ] && . "$BIN_DIR/setenv.sh"
if [ -n "$JAVA_HOME" ] && [ -x "$JAVA_HOME/bin/java" ]; then
  JAVA="$JAVA_HOME/bin/java"
else
  JAVA=java
fi
: "${JMETER_HEAP:=-Xms1g -Xmx1g -XX:MaxMetaspaceSize=256m}"
: "${JMETER_GC_ALGO:=-XX:+UseG1GC -XX:MaxGCPauseMillis=100 -XX:G1ReservePercent=20}"
: "${JMETER_LANGUAGE:=-Duser.language=en -Duser.region=EN}"
# Java 9+: open the JDK packages that JMeter/XStream reflect into (5.6.3 runs
# without them; older releases, e.g. 3.3, need java.lang.reflect on Java 17).
JAVA_MAJOR=$("$JAVA" -version 2>&1 | awk -F'"' '/version/ {v=$2; sub(/^1\./, "", v); sub(/[^0-9].*$/, "", v); print v; exit}')
OPENS=""
if [ "${JAVA_MAJOR:-8}" -ge 9 ] 2>/dev/null; then
  for p in java.base/java.lang java.base/java.lang.reflect java.base/java.util java.base/java.text \
           java.base/java.net java.desktop/java.awt java.desktop/java.awt.font java.desktop/sun.awt \
           java.desktop/sun.swing java.desktop/javax.swing.text.html; do
    OPENS="$OPENS --add-opens=$p=ALL-UNNAMED"
  done
fi
# shellcheck disable=SC2086
exec "$JAVA" -server -XX:+HeapDumpOnOutOfMemoryError $JMETER_HEAP $JMETER_GC_ALGO \
  -Djava.security.egd=file:/dev/urandom -Djava.awt.headless=true $JMETER_LANGUAGE $OPENS \
  $JVM_ARGS $JMETER_OPTS -jar "$BIN_DIR/ApacheJMeter.jar" "$@"
EOF
chmod 0755 "${NEW_HOME}/bin/jmeter"

# Verify: the launcher must find its home and print the version banner.
log "verifying with java -jar bin/ApacheJMeter.jar --version"
set +e
VERSION_OUT="$(cd "${WORK}" && java -jar "${NEW_HOME}/bin/ApacheJMeter.jar" --version -j "${WORK}/version.log" 2>&1)"
rc=$?
set -e
if [[ ${rc} -ne 0 ]] || ! grep -q "${VERSION//./\\.}" <<<"${VERSION_OUT}"; then
    printf '%s\n' "${VERSION_OUT}" >&2
    die "java -jar bin/ApacheJMeter.jar --version failed (exit ${rc}) or did not report ${VERSION}"
fi
printf '%s\n' "${VERSION_OUT}" >"${NEW_HOME}/.toolbench-version.txt"

printf 'version=%s\nbuilt=%s\n' "${VERSION}" "$(date -u +%Y-%m-%dT%H:%M:%SZ)" >"${NEW_HOME}/.toolbench-complete"

move_into_place "${NEW_HOME}" "${JM_HOME}"
log "installed JMeter ${VERSION}"
printf '%s\n' "${JM_HOME}"
