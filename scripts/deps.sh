#!/usr/bin/env bash
# The one install step of the build and test dependencies, sourced by
# scripts/test.sh, scripts/demo.sh and .ci/run so that each of them works on
# a fresh Debian machine by itself. It installs with apt only when run as
# root and something is missing; otherwise it says what to install and
# leaves the machine alone (CMake then names the missing package too).
mosaic_deps_pkgs="cmake make gcc libc6-dev pkg-config python3 libcmocka-dev libcjson-dev libcsv-dev libxgboost-dev"
mosaic_deps_missing() {
  command -v cmake >/dev/null && command -v pkg-config >/dev/null &&
    pkg-config --exists cmocka libcjson 2>/dev/null && [ -f /usr/include/csv.h ] &&
    [ -f /usr/include/xgboost/c_api.h ] && return 1
  return 0
}
if mosaic_deps_missing; then
  if [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null; then
    echo "scripts/deps.sh: installing $mosaic_deps_pkgs" >&2
    apt-get update -qq
    DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends \
      $mosaic_deps_pkgs >/dev/null
  else
    echo "scripts/deps.sh: missing build dependencies; as root run:" \
         "apt-get install $mosaic_deps_pkgs" >&2
  fi
fi
