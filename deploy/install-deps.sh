#!/usr/bin/env bash
# The one place that installs every system package Vigil needs to build, run and test.
# Idempotent: a second run with everything present does no apt work at all.
# Runs as root on Debian 12 (bookworm). Used by README's Quick start and by .ci/run.
set -euo pipefail

packages=(
  cmake ninja-build g++ pkg-config git
  libboost1.81-dev libboost-program-options1.81-dev libboost-json1.81-dev
  libavformat-dev libavcodec-dev libavutil-dev libswscale-dev ffmpeg
  libprotobuf-dev protobuf-compiler
  libpq-dev libpqxx-dev postgresql-15
  liburing-dev libisal-dev libssl-dev openssl
  libexpat1-dev   # onvif/: the XML of ONVIF cameras
  curl procps
  # deploy/package.sh and the package test: CPack's DEB generator (dpkg-shlibdeps, file), and
  # setpriv/prlimit (util-linux) to run the installed vigild as its unit does.
  dpkg-dev file util-linux
  gnuplot-nox
  # deploy/format-check.sh (run by deploy/test.sh) checks the tree against .clang-format.
  clang-format
  # deploy/fuzz.sh (run by deploy/test.sh): the libFuzzer targets build with clang-14 and its runtimes.
  clang-14 libclang-rt-14-dev
  # The web UI's end-to-end test drives Debian's Chromium (headless) through playwright-core.
  chromium
  # Test peers: a real RTSP camera (GStreamer's RTSP server, run with Debian's /usr/bin/python3).
  python3-gi gir1.2-gst-rtsp-server-1.0 gstreamer1.0-plugins-base gstreamer1.0-plugins-good
  gstreamer1.0-plugins-ugly gstreamer1.0-plugins-bad
)
# Catch2 v3 lives in bookworm-backports only (main has v2.13, whose single-header main TU
# costs ~22 s to compile); backports is pinned low, so nothing else moves unless asked with -t.
backports_packages=(libcatch2-dev)

if [ "$(id -u)" -ne 0 ]; then
  echo "install-deps: must run as root (it calls apt-get)" >&2
  exit 1
fi

# Node.js and npm fetch the web UI's pinned npm packages (deploy/web-deps.sh). A Node.js that
# already brings its own npm (e.g. NodeSource's nodejs) is kept: Debian's npm would conflict with it.
if ! command -v npm >/dev/null 2>&1; then
  packages+=(nodejs npm)
fi

missing=()
for p in "${packages[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q '^install ok installed$' || missing+=("$p")
done
catch_ok=0
if dpkg-query -W -f='${Status} ${Version}' libcatch2-dev 2>/dev/null | grep -q '^install ok installed 3\.'; then
  catch_ok=1
fi

if [ ${#missing[@]} -eq 0 ] && [ $catch_ok -eq 1 ]; then
  echo "install-deps: all packages present"
  exit 0
fi

export DEBIAN_FRONTEND=noninteractive
if [ $catch_ok -eq 0 ]; then
  # Add bookworm-backports by cloning the machine's own first (non-security) bookworm stanza,
  # so no mirror host is written here.
  src=/etc/apt/sources.list.d/backports.sources
  if [ ! -f "$src" ] && ! grep -rqs 'bookworm-backports' /etc/apt/sources.list /etc/apt/sources.list.d/; then
    if [ -f /etc/apt/sources.list.d/debian.sources ]; then
      awk 'BEGIN{RS="";ORS="\n\n"} /Suites:[^\n]*bookworm( |\n|$)/ && !/security/ {sub(/Suites:[^\n]*/,"Suites: bookworm-backports"); print; exit}' \
        /etc/apt/sources.list.d/debian.sources > "$src"
    else
      line=$(grep -hE '^deb .* bookworm( |$)' /etc/apt/sources.list | head -n1)
      echo "${line/ bookworm/ bookworm-backports}" > /etc/apt/sources.list.d/backports.list
    fi
  fi
fi

echo "install-deps: installing ${missing[*]:-} ${backports_packages[*]}"
apt-get update -qq
if [ ${#missing[@]} -gt 0 ]; then
  apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
fi
if [ $catch_ok -eq 0 ]; then
  apt-get install -y -qq --no-install-recommends -t bookworm-backports "${backports_packages[@]}" >/dev/null
fi
echo "install-deps: done"
