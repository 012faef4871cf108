#!/usr/bin/env bash
# Time whole processes side by side: `sealc exec` running /bin/true under
# a minimal seal and under the same seal with a launcher of 300 MB (the
# size of npm's native Codex binary), whose digest is a fact every run
# checks. Interleaved so that all see the same machine:
#   minimal   no launcher
#   cached    the launcher, its digest kept for its identity (the usual run)
#   uncached  the launcher, the kept digest removed before each run (hashed)
#
#   bash benches/launcher.sh [RUNS]        (default 30 runs of each)
#
# Run as root (root's digests are kept in /run/sealc/digests); an
# unprivileged caller's are kept in its own $XDG_RUNTIME_DIR.
set -euo pipefail
cd "$(dirname "$0")/.."
runs=${1:-30}
cargo build --release -q
sealc=$PWD/target/release/sealc
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
chmod 755 "$work"
mkdir -p "$work/ws"
{ printf '#!/bin/sh\nexit 0\n'; head -c 300000000 /dev/zero | tr '\0' '#'; } > "$work/agent"
chmod 755 "$work/agent"

spec() { # name, extra lines
  cat > "$work/$1.toml" <<TOML
version = 1
name = "$1"
[target]
platform = "linux"
$2
[filesystem]
write = ["$work/ws"]
[network]
mode = "none"
TOML
  "$sealc" -q compile "$work/$1.toml" --out "$work/$1" >/dev/null 2>&1
}
spec minimal ""
spec launcher "[launcher]
path = \"$work/agent\""
cache=/run/sealc/digests
[ "$(id -u)" = 0 ] || cache=${XDG_RUNTIME_DIR:?}/sealc-digests
ino=$(stat -c %i "$work/agent")

now() { date +%s%N; }
declare -A samples
time_one() { # name, command...
  local name=$1; shift
  local t0 t1
  t0=$(now); "$@" >/dev/null 2>&1 </dev/null || { echo "$name failed" >&2; "$@" </dev/null; exit 1; }; t1=$(now)
  samples[$name]+="$(( (t1 - t0) / 1000 )) "
}
for _ in $(seq "$runs"); do
  time_one minimal "$sealc" exec "$work/minimal/seal.json" -- /bin/true
  time_one cached "$sealc" exec "$work/launcher/seal.json" -- /bin/true
  find "$cache" -maxdepth 1 -name "*-$ino-300000017-*" -delete
  time_one uncached "$sealc" exec "$work/launcher/seal.json" -- /bin/true
done
stats() { # prints "median mean" in microseconds
  tr ' ' '\n' <<<"${samples[$1]}" | grep . | sort -n | awk '{a[NR]=$1; s+=$1} END {printf "%d %d", a[int((NR+1)/2)], s/NR}'
}
printf '%-10s %12s %12s\n' case median_us mean_us
for k in minimal cached uncached; do
  read -r med mean <<<"$(stats "$k")"
  printf '%-10s %12s %12s\n' "$k" "$med" "$mean"
done
