#!/usr/bin/env bash
# sealc against a peer, as whole processes side by side, interleaved (A, B,
# A, B, ...) so that both see the same machine:
#
#   A  `sealc compile SPEC --out DIR --force -q`, macOS target: the seatbelt
#      profile (seal.sb), with env.json, codex/config.toml and seal.json
#   B  the seatbelt profile of Anthropic's sandbox-runtime
#      (@anthropic-ai/sandbox-runtime from npm, pinned below) for a config
#      that means the same, printed by `node benches/peers/driver.mjs
#      CONFIG.json`: the package's wrapCommandWithSandboxMacOS, called
#      directly because its manager only reaches it on macOS (the driver
#      says what it does in the manager's place)
#
# Workloads (the configs are made by benches/peers/gen.py, which says how
# each maps the spec):
#
#   startup  `sealc --version` against `node -e 0`: process start-up only
#   probe    specs/probe-rep.toml (proxy mode, the demo home)
#   minimal  specs/minimal.toml
#   deny10k  a generated spec of 10,000 absent denied roots and one write root
#
#   bash benches/peers.sh
#   RUNS=N SEALC=path/to/sealc bash benches/peers.sh
#
# Wall time and peak RSS are taken in separate runs of the same rounds:
# wall time of the bare process (Python's perf_counter_ns around
# posix_spawn and wait4), peak RSS under GNU time (%M); see
# benches/peers/measure.py.
#
# RUNS runs of each (default 30, and 10 for deny10k); SEALC defaults to
# target/release/sealc, built with `cargo build --release` if missing. The
# package is installed under target/peers/srt once per pinned version;
# everything else the bench makes is under target/peers/ too. Prints the
# versions, each workload's median and minimum wall time and peak RSS (max
# over runs) of A and B, the ratio of medians, and the load average at the
# start and the end.
set -euo pipefail
cd "$(dirname "$0")/.."
srt_version=0.0.83 # `npm view @anthropic-ai/sandbox-runtime version`
runs_small=${RUNS:-30}
runs_big=${RUNS:-10}
load_start=$(cat /proc/loadavg)

sealc=${SEALC:-target/release/sealc}
if [ ! -x "$sealc" ]; then
  if [ -n "${SEALC:-}" ]; then echo "peers.sh: SEALC=$sealc is not an executable" >&2; exit 2; fi
  cargo build --release -q
fi
sealc=$(realpath "$sealc")
node=$(command -v node) || { echo "peers.sh: no node on PATH" >&2; exit 2; }
[ -x /usr/bin/time ] || { echo "peers.sh: no GNU time at /usr/bin/time" >&2; exit 2; }

peers=$PWD/target/peers
srt=$peers/srt
pkg=$srt/node_modules/@anthropic-ai/sandbox-runtime
mkdir -p "$peers/out"
installed=$(python3 -c 'import json, sys; print(json.load(open(sys.argv[1]))["version"])' \
  "$pkg/package.json" 2>/dev/null || true)
if [ "$installed" != "$srt_version" ]; then
  npm install --prefix "$srt" --no-save --no-audit --no-fund --loglevel=error \
    "@anthropic-ai/sandbox-runtime@$srt_version" >&2
fi
# Next to node_modules, so that its imports resolve to this install.
cp benches/peers/driver.mjs "$srt/driver.mjs"
python3 benches/peers/gen.py "$peers" "$PWD"

# The probe's vars; tmpdir and codex_home pinned to their defaults, so that
# TMPDIR and CODEX_HOME in the caller's env do not change the spec. B runs
# with HOME set to the same home: the package puts its default write paths
# (~/.npm/_logs, ~/.claude/debug) under it.
home=$PWD/tests/fixtures/demo-home
probe_vars=(--var home="$home" --var run=/tmp/sealc-demo/run --var checkout="$PWD"
  --var proxy_port=8080 --var tmpdir=/tmp --var codex_home="$home/.codex")
a_startup=("$sealc" --version)
b_startup=("$node" -e 0)
a_probe=("$sealc" compile specs/probe-rep.toml --out "$peers/out/probe" --force -q "${probe_vars[@]}")
b_probe=("$node" "$srt/driver.mjs" "$peers/probe.json")
a_minimal=("$sealc" compile specs/minimal.toml --out "$peers/out/minimal" --force -q)
b_minimal=("$node" "$srt/driver.mjs" "$peers/minimal.json")
a_deny10k=("$sealc" compile "$peers/deny10k.toml" --out "$peers/out/deny10k" --force -q)
b_deny10k=("$node" "$srt/driver.mjs" "$peers/deny10k.json")

# Once each, before timing: A exits 0 (its warnings, about absent roots,
# counted here and sent to /dev/null while timing), B prints a profile.
check() { # workload
  local w=$1 a b
  a="a_$w[@]" b="b_$w[@]"
  "${!a}" 2>"$peers/$w.stderr" >/dev/null ||
    { echo "peers.sh: $w: sealc failed:" >&2; cat "$peers/$w.stderr" >&2; exit 1; }
  HOME=$home "${!b}" >"$peers/$w.srt.sb"
  if [ ! -s "$peers/$w.srt.sb" ] || ! grep -qF '(version 1)' "$peers/$w.srt.sb"; then
    echo "peers.sh: $w: sandbox-runtime printed no profile" >&2; exit 1
  fi
  printf '%-8s A exit 0, %5s stderr lines, seal.sb %9s bytes | B profile %9s bytes\n' "$w" \
    "$(wc -l <"$peers/$w.stderr")" "$(wc -c <"$peers/out/$w/seal.sb")" "$(wc -c <"$peers/$w.srt.sb")"
}

printf 'host: %s, %s CPUs\n' "$(uname -sr)" "$(nproc)"
printf 'A: %s (%s)\n' "$("$sealc" --version)" "${sealc#"$PWD/"}"
printf 'B: @anthropic-ai/sandbox-runtime %s on node %s' \
  "$(python3 -c 'import json, sys; print(json.load(open(sys.argv[1]))["version"])' "$pkg/package.json")" \
  "$("$node" --version)"
node_major=$("$node" -p 'process.versions.node.split(".")[0]')
[ "$node_major" -ge 22 ] && echo || echo " (the package asks for node >= 22.12)"
for w in probe minimal deny10k; do check "$w"; done
echo
HOME=$home python3 benches/peers/measure.py \
  case startup "$runs_small" -- "${a_startup[@]}" ::: "${b_startup[@]}" \
  case probe "$runs_small" -- "${a_probe[@]}" ::: "${b_probe[@]}" \
  case minimal "$runs_small" -- "${a_minimal[@]}" ::: "${b_minimal[@]}" \
  case deny10k "$runs_big" -- "${a_deny10k[@]}" ::: "${b_deny10k[@]}"
echo
printf 'load average at start: %s\nload average at end:   %s\n' "$load_start" "$(cat /proc/loadavg)"
