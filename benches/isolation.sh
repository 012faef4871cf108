#!/usr/bin/env bash
# Time whole processes side by side: `sealc exec` of one seal running
# /bin/true in the namespaces mode and in the Landlock mode
# (`exec.isolation = "landlock"`), and in the Landlock mode with a denied
# directory inside a 500-entry "home" (the siblings granted one by one when
# the run starts), interleaved so that all see the same machine.
#
#   bash benches/isolation.sh [RUNS]        (default 50 runs of each)
#
# Prints the median and mean wall time of each, and the rules the hidden
# root cost (the run's --dry-run lists them; the siblings are counted here).
set -euo pipefail
cd "$(dirname "$0")/.."
runs=${1:-50}
cargo build --release -q
sealc=$PWD/target/release/sealc
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
chmod 755 "$work"
mkdir -p "$work/ws" "$work/home/.ssh"
for i in $(seq 500); do echo "$i" > "$work/home/f$i"; done
echo key > "$work/home/.ssh/id"

spec() { # name, isolation, extra [filesystem] lines
  cat > "$work/$1.toml" <<TOML
version = 1
name = "$1"
[target]
platform = "linux"
[filesystem]
write = ["$work/ws"]
$3
[network]
mode = "none"
[exec]
isolation = "$2"
TOML
  "$sealc" -q compile "$work/$1.toml" --out "$work/$1" >/dev/null
}
spec namespaces namespaces ""
spec landlock landlock ""
spec landlock-home landlock "deny_read = [\"$work/home/.ssh\"]"

now() { date +%s%N; }
declare -A samples
time_one() { # name, command...
  local name=$1; shift
  local t0 t1
  t0=$(now); "$@" >/dev/null 2>&1 </dev/null || { echo "$name failed" >&2; "$@" </dev/null; exit 1; }; t1=$(now)
  samples[$name]+="$(( (t1 - t0) / 1000 )) "
}
for _ in $(seq "$runs"); do
  for k in namespaces landlock landlock-home; do
    time_one "$k" "$sealc" exec "$work/$k/seal.json" -- /bin/true
  done
done
stats() { # prints "median mean" in microseconds
  tr ' ' '\n' <<<"${samples[$1]}" | grep . | sort -n | awk '{a[NR]=$1; s+=$1} END {printf "%d %d", a[int((NR+1)/2)], s/NR}'
}
printf '%-14s %12s %12s\n' case median_us mean_us
for k in namespaces landlock landlock-home; do
  read -r med mean <<<"$(stats "$k")"
  printf '%-14s %12s %12s\n' "$k" "$med" "$mean"
done
echo "landlock-home: $(ls -A "$work/home" | wc -l) entries in the home, one hidden: each other one a rule of its own"
