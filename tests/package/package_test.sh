#!/usr/bin/env bash
# The Debian package end to end (docs/packaging.md): cpack builds `vigil` from this build tree;
# dpkg installs it on this machine; the account, data directory, conffile and unit are checked;
# the installed vigild runs exactly as vigild.service's ExecStartPre/ExecStart would (the unit's
# User/Group, UMask, resource limits, NoNewPrivileges and empty capability bounding set, applied
# with prlimit and setpriv: there is no systemd here), records a clip through the installed
# `vigil`, plays it back out of /var/lib/vigil and stops on SIGTERM; then the package is purged
# and nothing of it may be left. The sandboxing directives (ProtectSystem=, PrivateTmp=, …) need
# systemd and are not exercised here.
# Usage: package_test.sh SOURCE_DIR BUILD_DIR CPACK
# Exit 0: passed; 77: skipped (not root, no dpkg, or the machine already has a vigil install this
# test would destroy); anything else: failed. The machine is left as it was, on failure too.
set -euo pipefail
src=${1:?SOURCE_DIR}
build=${2:?BUILD_DIR}
cpack=${3:?CPACK}

skip() { echo "SKIP: $*"; exit 77; }
fail() { echo "FAIL: $*" >&2; exit 1; }
step() { echo "== [${SECONDS}s] $*"; }

[ "$(id -u)" -eq 0 ] || skip "the package test needs root (dpkg -i, a system account)"
for tool in dpkg dpkg-deb dpkg-query setpriv prlimit ffmpeg ffprobe curl; do
  command -v "$tool" >/dev/null || skip "$tool is missing"
done
if dpkg-query -W -f='${Status}' vigil 2>/dev/null | grep -q 'installed'; then
  skip "a vigil package is installed on this machine: this test would purge it and its recordings"
fi
for p in /var/lib/vigil /etc/vigil /etc/systemd/system/multi-user.target.wants/vigild.service; do
  [ ! -e "$p" ] || skip "$p exists on this machine: this test would delete it (purge)"
done

tmp=$(mktemp -d /tmp/vigil-package-XXXXXX)
chmod 0755 "$tmp"
user_existed=0
group_existed=0
getent passwd vigil >/dev/null && user_existed=1
getent group vigil >/dev/null && group_existed=1
vigild_pid=

cleanup() {
  local rc=$?
  set +e
  if [ -n "$vigild_pid" ] && kill -0 "$vigild_pid" 2>/dev/null; then
    kill -TERM "$vigild_pid"
    for _ in $(seq 1 300); do kill -0 "$vigild_pid" 2>/dev/null || break; sleep 0.1; done
    kill -KILL "$vigild_pid" 2>/dev/null
  fi
  if [ "$rc" -ne 0 ] && [ -f "$tmp/vigild.log" ]; then
    echo "--- last lines of the installed vigild's log" >&2
    tail -n 40 "$tmp/vigild.log" >&2
  fi
  if dpkg-query -W -f='${Status}' vigil 2>/dev/null | grep -q 'installed\|config-files\|half'; then
    dpkg --purge vigil >/dev/null 2>&1 || echo "cleanup: dpkg --purge vigil failed" >&2
  fi
  # Both were absent when the test started (checked above).
  rm -rf /var/lib/vigil /etc/vigil
  # The account goes if this test's install created it — unless a test beside this one has
  # started using it meanwhile (vigild as root runs its embedded PostgreSQL as `vigil` too).
  if [ "$user_existed" = 0 ] && getent passwd vigil >/dev/null; then
    if pgrep -u vigil >/dev/null; then
      echo "cleanup: the vigil account is in use by other processes: left in place" >&2
    else
      userdel vigil 2>/dev/null
      [ "$group_existed" = 1 ] || groupdel vigil 2>/dev/null
    fi
  fi
  rm -rf "$tmp"
  exit "$rc"
}
trap cleanup EXIT
trap 'exit 1' INT TERM

# Waits up to SECONDS for COMMAND to succeed (a deadline, not a fixed sleep).
eventually() {
  local seconds=$1
  shift
  local until=$((SECONDS + seconds))
  while ! "$@"; do
    [ "$SECONDS" -lt "$until" ] || return 1
    sleep 0.1
  done
}

step "cpack builds the package from $build"
(cd "$build" && "$cpack" -G DEB -B "$tmp/pkg" >"$tmp/cpack.log" 2>&1) || { cat "$tmp/cpack.log" >&2; fail "cpack failed"; }
deb=$(ls "$tmp"/pkg/vigil_*.deb 2>/dev/null | head -1)
[ -n "$deb" ] || { cat "$tmp/cpack.log" >&2; fail "cpack wrote no vigil_*.deb"; }
[ "$(dpkg-deb -f "$deb" Package)" = vigil ] || fail "package name is not vigil"
depends=$(dpkg-deb -f "$deb" Depends)
echo "Depends: $depends"
for want in 'postgresql-15 | postgresql' libavformat libpqxx liburing passwd; do
  grep -qF "$want" <<<"$depends" || fail "Depends lacks $want (shlibdeps or the PostgreSQL server): $depends"
done
contents=$(dpkg-deb -c "$deb")
# The web UI is in the package when the build has it (VIGIL_WEB_UI, the default).
web=()
[ -f "$build/web/index.html" ] && web=(./usr/share/vigil/web/index.html ./usr/share/vigil/web/hls.min.js)
for f in ./usr/bin/vigild ./usr/bin/vigil "${web[@]}" ./usr/share/vigil/schema/0001_catalog.sql ./usr/share/doc/vigil/README.md ./usr/share/doc/vigil/docs/packaging.md \
  ./etc/vigil/vigild.conf ./lib/systemd/system/vigild.service; do
  grep -q " $f\$" <<<"$contents" || fail "the package lacks $f"
done

step "dpkg -i (its dependencies are this machine's: nothing is fetched)"
dpkg -i "$deb" >"$tmp/dpkg.log" 2>&1 || { cat "$tmp/dpkg.log" >&2; fail "dpkg -i failed"; }
getent passwd vigil >/dev/null || fail "no vigil account"
[ "$(stat -c '%U:%G %a' /var/lib/vigil)" = "vigil:vigil 750" ] ||
  fail "/var/lib/vigil is $(stat -c '%U:%G %a' /var/lib/vigil), not vigil:vigil 750"
[ "$(stat -c '%U:%G %a' /etc/vigil/vigild.conf)" = "root:vigil 640" ] ||
  fail "/etc/vigil/vigild.conf is $(stat -c '%U:%G %a' /etc/vigil/vigild.conf), not root:vigil 640"
dpkg-query -W -f='${Conffiles}\n' vigil | grep -q '^ /etc/vigil/vigild.conf ' || fail "vigild.conf is not a conffile"
unit=/lib/systemd/system/vigild.service
[ -f "$unit" ] || fail "$unit is missing"
# Enabled as dh_installsystemd would, so the service starts at the next boot.
wants=/etc/systemd/system/multi-user.target.wants/vigild.service
if command -v deb-systemd-helper >/dev/null; then
  [ -L "$wants" ] || fail "vigild.service is not enabled ($wants)"
fi
if command -v systemd-analyze >/dev/null; then
  # Checks the unit's syntax and that its programs exist (works without a running systemd).
  systemd-analyze verify "$unit" >"$tmp/verify.log" 2>&1 || { cat "$tmp/verify.log" >&2; fail "systemd-analyze verify $unit"; }
fi

# The unit's settings, as systemd would read them (the last assignment wins).
setting() { sed -n "s/^$1=//p" "$unit" | tail -1; }
user=$(setting User)
group=$(setting Group)
[ "$user" = vigil ] && [ "$group" = vigil ] || fail "the unit runs as $user:$group, not vigil:vigil"
[ "$(setting NoNewPrivileges)" = yes ] || fail "NoNewPrivileges is not yes"
grep -q '^CapabilityBoundingSet=$' "$unit" || fail "the unit keeps capabilities"
# systemd's sizes are base 1024.
bytes() {
  local v=$1
  case "$v" in
    infinity) echo unlimited ;;
    *K) echo $((${v%K} << 10)) ;; *M) echo $((${v%M} << 20)) ;; *G) echo $((${v%G} << 30)) ;;
    *) echo "$v" ;;
  esac
}
# LimitX= sets soft and hard. Raising a hard limit needs CAP_SYS_RESOURCE, which systemd has; a
# root without it (some containers) cannot, and the test says which limits it could not apply.
limits=()
unapplied=()
for pair in "RTPRIO:rtprio" "MEMLOCK:memlock" "NOFILE:nofile"; do
  value=$(setting "Limit${pair%%:*}")
  [ -n "$value" ] || continue
  [ "${pair%%:*}" = MEMLOCK ] && value=$(bytes "$value")
  if prlimit "--${pair##*:}=$value" -- true 2>/dev/null; then
    limits+=("--${pair##*:}=$value")
  else
    unapplied+=("Limit${pair%%:*}=$value")
  fi
done
if [ "${#unapplied[@]}" -gt 0 ]; then
  echo "NOTE: this root lacks CAP_SYS_RESOURCE: not applied: ${unapplied[*]} (systemd applies them)"
fi
umask_value=$(setting UMask)
as_unit=(prlimit "${limits[@]}" -- setpriv --reuid="$user" --regid="$group" --init-groups --no-new-privs
  --bounding-set=-all --inh-caps=-all --)

# Other tests run beside this one: the shipped ports (7070, 8080) become 0 (any free port), as an
# operator would edit the conffile; vigild writes the ports it got to DATA/run/endpoints.json.
sed -i -e 's/^listen = .*/listen = 127.0.0.1:0/' -e 's/^http-port = .*/http-port = 0/' /etc/vigil/vigild.conf
data=$(sed -n 's/^data = //p' /etc/vigil/vigild.conf)
[ "$data" = /var/lib/vigil ] || fail "the conffile's data directory is $data"

step "ExecStartPre, as the unit runs it"
while IFS= read -r line; do
  eval "set -- $line"
  (umask "${umask_value:-0022}" && exec "${as_unit[@]}" "$@") >>"$tmp/prestart.log" 2>&1 || { cat "$tmp/prestart.log" >&2; fail "ExecStartPre failed: $line"; }
done < <(sed -n 's/^ExecStartPre=//p' "$unit")
[ -s "$data/disk-profile.json" ] || fail "ExecStartPre wrote no disk profile"
[ "$(stat -c %U "$data/disk-profile.json")" = vigil ] || fail "the disk profile is not vigil's"

step "ExecStart, as the unit runs it"
exec_start=$(setting ExecStart)
echo "ExecStart=$exec_start"
eval "set -- $exec_start"
[ "$1" = /usr/bin/vigild ] || fail "ExecStart does not run /usr/bin/vigild"
# The subshell execs (prlimit, then setpriv, then vigild exec in turn): $! is vigild's pid.
(umask "${umask_value:-0022}" && exec "${as_unit[@]}" "$@") >"$tmp/vigild.log" 2>&1 &
vigild_pid=$!
ready() {
  if ! kill -0 "$vigild_pid" 2>/dev/null; then
    local st=0
    wait "$vigild_pid" || st=$?
    vigild_pid=
    fail "the installed vigild exited with status $st before it was ready"
  fi
  grep -q "\"pid\":$vigild_pid" "$data/run/endpoints.json" 2>/dev/null
}
eventually 120 ready || fail "the installed vigild was not ready within 120 s"
wire=$(sed -n 's/.*"wire":"\([^"]*\)".*/\1/p' "$data/run/endpoints.json")
http=$(sed -n 's/.*"http":"\([^"]*\)".*/\1/p' "$data/run/endpoints.json")
echo "vigild pid $vigild_pid: wire $wire, http $http"

status=/proc/$vigild_pid/status
[ "$(awk '/^Uid:/ {print $2}' "$status")" = "$(id -u vigil)" ] || fail "vigild does not run as vigil"
grep -q '^NoNewPrivs:[[:space:]]*1' "$status" || fail "vigild may gain privileges"
grep -q '^CapBnd:[[:space:]]*0000000000000000' "$status" || fail "vigild has capabilities: $(grep CapBnd "$status")"
# Its children (ingest workers, the embedded PostgreSQL) are vigil's too, nothing runs as root.
for child in $(pgrep -P "$vigild_pid"); do
  [ "$(awk '/^Uid:/ {print $2}' /proc/"$child"/status)" = "$(id -u vigil)" ] || fail "child $child of vigild is not vigil's"
done

curl -sf "http://$http/healthz" >"$tmp/healthz.json" || fail "GET /healthz failed"
grep -q '"status":"ok"' "$tmp/healthz.json" || fail "healthz: $(cat "$tmp/healthz.json")"
# The web UI from /usr/share/vigil/web (default_web_root's installed path), hls.js with it.
if [ "${#web[@]}" -gt 0 ]; then
  curl -sf -o "$tmp/index.html" "http://$http/ui/" || fail "GET /ui/ failed"
  grep -qi '<html' "$tmp/index.html" || fail "the installed web UI is not served at /ui/"
  curl -sf -o /dev/null "http://$http/ui/hls.min.js" || fail "hls.min.js is not served"
  grep -q 'web UI loaded.*root=/usr/share/vigil/web' "$tmp/vigild.log" || fail "vigild did not load the UI from /usr/share/vigil/web"
fi
curl -sf "http://$http/metrics" >"$tmp/metrics.txt" || fail "GET /metrics failed"
realtime=$(awk '/^vigil_disk_io_thread_realtime/ {print $2; exit}' "$tmp/metrics.txt")
rtprio_soft=$(awk '/^Max realtime priority/ {print $4}' /proc/"$vigild_pid"/limits)
echo "IO thread real-time: $realtime (RLIMIT_RTPRIO $rtprio_soft)"
if [ "$rtprio_soft" -ge 10 ]; then
  # LimitRTPRIO alone (no CAP_SYS_NICE) must be enough for SCHED_FIFO.
  [ "$realtime" = 1 ] || fail "LimitRTPRIO=$rtprio_soft applied but the IO thread is not real-time"
else
  [ "$realtime" = 0 ] || fail "the IO thread is real-time without RLIMIT_RTPRIO or a capability"
  grep -q 'LimitRTPRIO' "$tmp/vigild.log" || fail "vigild did not say how to get real-time IO"
fi

step "record a clip through the installed vigil, play it back out of $data"
clip=$tmp/clip.mp4
ffmpeg -loglevel error -y -f lavfi -i testsrc=size=320x180:rate=25 -t 2 -c:v libx264 -g 25 -bf 0 \
  -pix_fmt yuv420p "$clip"
frames_in=$(ffprobe -v error -count_packets -select_streams v:0 -show_entries stream=nb_read_packets -of csv=p=0 "$clip")
from=$(($(date +%s) - 2))
/usr/bin/vigil --server "$wire" --token-file "$data/admin.token" record --stream pkgtest "$clip" >"$tmp/record.log" 2>&1 ||
  { cat "$tmp/record.log" >&2; fail "vigil record failed"; }
to=$(($(date +%s) + 2))
# Every acknowledged frame is readable at once (the open segment): no waiting.
/usr/bin/vigil --server "$wire" --token-file "$data/admin.token" play --stream pkgtest --from "@$from" --to "@$to" \
  --rate 8 -o "$tmp/played.mkv" >"$tmp/play.log" 2>&1 || { cat "$tmp/play.log" >&2; fail "vigil play failed"; }
frames_out=$(ffprobe -v error -count_packets -select_streams v:0 -show_entries stream=nb_read_packets -of csv=p=0 \
  "$tmp/played.mkv")
echo "frames recorded $frames_in, played back $frames_out"
[ "$frames_out" = "$frames_in" ] || fail "played back $frames_out frames of $frames_in"
ls "$data"/volume0 >/dev/null || fail "no volume at $data/volume0"
# LimitMEMLOCK alone (no CAP_IPC_LOCK) must be enough to lock the recording's IO buffers.
curl -sf "http://$http/metrics" >"$tmp/metrics.txt" || fail "GET /metrics failed"
locked=$(awk '/^vigil_disk_io_buffers_locked/ {print $2; exit}' "$tmp/metrics.txt")
memlock_soft=$(awk '/^Max locked memory/ {print $4}' /proc/"$vigild_pid"/limits)
echo "IO buffers locked: $locked (RLIMIT_MEMLOCK $memlock_soft bytes)"
if [ "$memlock_soft" = unlimited ] || [ "$memlock_soft" -ge $((1 << 30)) ]; then
  [ "$locked" = 1 ] || fail "RLIMIT_MEMLOCK $memlock_soft applied but the IO buffers are not locked"
fi

step "SIGTERM stops it cleanly"
kill -TERM "$vigild_pid"
code=0
wait "$vigild_pid" || code=$?
vigild_pid=
[ "$code" = 0 ] || fail "vigild exited with status $code after SIGTERM"
! pgrep -f -- "-D $data/pg/data" >/dev/null || fail "the embedded PostgreSQL outlived vigild"

step "dpkg -r keeps the recordings and the configuration"
dpkg -r vigil >"$tmp/remove.log" 2>&1 || { cat "$tmp/remove.log" >&2; fail "dpkg -r failed"; }
[ ! -e /usr/bin/vigild ] || fail "/usr/bin/vigild is left after dpkg -r"
for p in "$data/volume0" "$data/pg/data" "$data/admin.token" /etc/vigil/vigild.conf; do
  [ -e "$p" ] || fail "dpkg -r removed $p"
done
dpkg-query -W -f='${Status}' vigil | grep -q 'config-files' || fail "dpkg does not keep vigil's configuration after -r"

step "dpkg --purge leaves nothing"
dpkg --purge vigil >"$tmp/purge.log" 2>&1 || { cat "$tmp/purge.log" >&2; fail "dpkg --purge failed"; }
! dpkg-query -W -f='${Status}' vigil 2>/dev/null | grep -q 'installed\|config-files' || fail "vigil still known to dpkg"
for p in /var/lib/vigil /etc/vigil /usr/bin/vigild /usr/bin/vigil /usr/share/vigil /usr/share/doc/vigil "$unit" \
  "$wants" /etc/systemd/system/vigild.service /var/lib/systemd/deb-systemd-helper-enabled/vigild.service.dsh-also \
  /var/lib/systemd/deb-systemd-helper-enabled/multi-user.target.wants/vigild.service \
  /var/lib/systemd/deb-systemd-helper-masked/vigild.service; do
  [ ! -e "$p" ] || fail "$p is left after the purge"
done
echo "PASS: the package built, installed, ran as its unit, recorded and played back, and purged cleanly"
