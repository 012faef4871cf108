#!/usr/bin/env bash
# Time whole processes side by side: `sealc exec` of the minimal Linux seal
# running /bin/true, against bare bubblewrap running /bin/true with the same
# steps (seal.bwrap.json's argv), in the same run, interleaved so that both
# see the same machine. Also the probe spec in `proxy` mode (a bridge).
#
#   bash benches/exec.sh [RUNS]        (default 100 runs of each)
#
# Prints the median and mean wall time of each and the ratio of medians.
# Target (issue 10): sealc exec at most 2.5x bare bubblewrap.
set -euo pipefail
cd "$(dirname "$0")/.."
runs=${1:-100}
cargo build --release -q
sealc=$PWD/target/release/sealc
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
chmod 755 "$work"
mkdir -p "$work/ws" "$work/run/ws" "$work/run/home" "$work/run/tmp" "$work/run/dispatch"

"$sealc" -q compile specs/minimal.toml --platform linux --var ws="$work/ws" --out "$work/minimal" >/dev/null
"$sealc" -q compile specs/probe-rep.toml --platform linux \
  --var home="$PWD/tests/fixtures/demo-home" --var run="$work/run" \
  --var checkout="$PWD" --var proxy_port=8080 --out "$work/probe" >/dev/null

# The bare bubblewrap argv of a seal: its steps, `--`, /bin/true.
bare_argv() {
  python3 -c 'import json,sys; d=json.load(open(sys.argv[1])); print("\0".join([d["bwrap"]]+[a for s in d["steps"] for a in s["args"] if True]+["--","/bin/true"]), end="")' "$1"
}
mapfile -d '' minimal_bare < <(bare_argv "$work/minimal/seal.bwrap.json")
mapfile -d '' probe_bare < <(bare_argv "$work/probe/seal.bwrap.json")
# Entries this kernel's /proc lacks cannot be mounted over: drop them, as
# `sealc exec` does.
filter() {
  local out=() i=0 a=("$@")
  while [ $i -lt ${#a[@]} ]; do
    case "${a[$i]}" in
      --ro-bind-try) if [[ "${a[$((i+2))]}" == /proc/* && ! -e "${a[$((i+2))]}" ]]; then i=$((i+3)); continue; fi ;;
      --tmpfs|--remount-ro) if [[ "${a[$((i+1))]}" == /proc/* && ! -e "${a[$((i+1))]}" ]]; then i=$((i+2)); continue; fi ;;
    esac
    out+=("${a[$i]}"); i=$((i+1))
  done
  printf '%s\0' "${out[@]}"
}
mapfile -d '' minimal_bare < <(filter "${minimal_bare[@]}")
mapfile -d '' probe_bare < <(filter "${probe_bare[@]}")

now() { date +%s%N; }
declare -A samples
time_one() { # name, command...
  local name=$1; shift
  local t0 t1
  t0=$(now); "$@" >/dev/null 2>&1 </dev/null || { echo "$name failed" >&2; "$@" </dev/null; exit 1; }; t1=$(now)
  samples[$name]+="$(( (t1 - t0) / 1000 )) "
}
# The probe spec is a Codex seal: `sealc exec` makes its Codex home fresh
# for each run (and removes it after), and the seal binds the config there
# read-only. Bare bubblewrap finds it made, outside the timing.
codex_home="$work/run/home/.codex"
for _ in $(seq "$runs"); do
  time_one bare-none "${minimal_bare[@]}"
  time_one sealc-none "$sealc" exec "$work/minimal/seal.json" -- /bin/true
  mkdir -p "$codex_home" && cp "$work/probe/codex/config.toml" "$codex_home/config.toml"
  time_one bare-proxy "${probe_bare[@]}"
  rm -rf "$codex_home"
  OPENAI_API_KEY=bench time_one sealc-proxy "$sealc" exec "$work/probe/seal.json" -- /bin/true
done

stats() { # prints "median mean" in microseconds
  tr ' ' '\n' <<<"${samples[$1]}" | grep . | sort -n | awk '{a[NR]=$1; s+=$1} END {printf "%d %d", a[int((NR+1)/2)], s/NR}'
}
printf '%-12s %12s %12s\n' case median_us mean_us
for k in bare-none sealc-none bare-proxy sealc-proxy; do
  read -r med mean <<<"$(stats $k)"
  printf '%-12s %12s %12s\n' "$k" "$med" "$mean"
done
for m in none proxy; do
  read -r b _ <<<"$(stats bare-$m)"; read -r s _ <<<"$(stats sealc-$m)"
  awk -v s="$s" -v b="$b" -v m="$m" 'BEGIN {printf "ratio %-6s sealc exec / bare bwrap = %.2fx\n", m, s/b}'
done
