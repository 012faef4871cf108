#!/usr/bin/env bash
# What sealc's walks of the trees in write roots cost, as whole processes
# side by side, interleaved so that every case sees the same machine. Three
# Linux seals, each with one write root and one denied root inside it:
#
#   empty   both empty
#   own     FILES files in the write root (what an earlier run left)
#   hidden  FILES files in the denied root
#
# Started by root, every `sealc exec` walks each write root before the run
# (clearing set-id bits and file capabilities, looking for hard links out)
# and after it (clearing them again); every compile and exec walks each
# denied root inside a write root (hard links). Unprivileged, there is no
# ownership walk.
#
#   bash benches/walk.sh [FILES] [RUNS]     (default 100000 files, 20 runs)
#
# Prints the median wall time of each case and the cost per entry (the
# difference over FILES plus their directories).
set -euo pipefail
cd "$(dirname "$0")/.."
files=${1:-100000}
runs=${2:-20}
cargo build --release -q
sealc=$PWD/target/release/sealc
work=$(mktemp -d "$PWD/target/walk-bench.XXXXXX")
trap 'rm -rf "$work"' EXIT
chmod 755 "$work"
mkdir -p "$work/empty/denied" "$work/own/denied" "$work/hidden"
make_tree() { # directory: FILES files, 1000 to a directory
  python3 -c '
import os, sys
top, n = sys.argv[1], int(sys.argv[2])
for i in range(n):
    d = os.path.join(top, "d%04d" % (i // 1000))
    if i % 1000 == 0:
        os.makedirs(d, exist_ok=True)
    open(os.path.join(d, "f%04d" % (i % 1000)), "w").close()
' "$1" "$files"
}
make_tree "$work/own/tree"
make_tree "$work/hidden/denied"
dirs=$(( (files + 999) / 1000 ))
for w in empty own hidden; do
  printf 'version = 1\nname = "walk"\n[target]\nplatform = "linux"\n[filesystem]\nwrite = ["%s"]\ndeny_read = ["%s"]\n[network]\nmode = "none"\n' \
    "$work/$w" "$work/$w/denied" > "$work/$w.toml"
  "$sealc" -q compile "$work/$w.toml" --out "$work/seal-$w" >/dev/null
done

now() { date +%s%N; }
declare -A samples
time_one() { # name, command...
  local name=$1; shift
  local t0 t1
  t0=$(now); "$@" >/dev/null 2>&1 </dev/null || { echo "$name failed" >&2; "$@" </dev/null; exit 1; }; t1=$(now)
  samples[$name]+="$(( (t1 - t0) / 1000 )) "
}
for _ in $(seq "$runs"); do
  for w in empty own hidden; do
    time_one "exec-$w" "$sealc" exec "$work/seal-$w/seal.json" -- /bin/true
    time_one "compile-$w" "$sealc" -q compile "$work/$w.toml" --out "$work/seal-$w" --check
  done
done

median() { tr ' ' '\n' <<<"${samples[$1]}" | grep . | sort -n | awk '{a[NR]=$1} END {print a[int((NR+1)/2)]}'; }
printf 'who: %s (uid %s); %s files in %s directories; %s runs each\n' "$(id -un)" "$(id -u)" "$files" "$dirs" "$runs"
printf '%-16s %12s\n' case median_us
for k in exec-empty exec-own exec-hidden compile-empty compile-own compile-hidden; do
  printf '%-16s %12s\n' "$k" "$(median "$k")"
done
per() { # what, case, base
  awk -v e="$(median "$3")" -v f="$(median "$2")" -v n="$((files + dirs))" -v w="$1" \
    'BEGIN {printf "%-36s %+9d us over %d entries: %.2f us per entry\n", w, f - e, n, (f - e) / n}'
}
per "exec: the write root's walks" exec-own exec-empty
per "exec: link check + walks (tree in both)" exec-hidden exec-empty
per "compile: the denied root's link check" compile-hidden compile-empty
