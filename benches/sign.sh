#!/usr/bin/env bash
# What signed seals and run attestations add to a run, as whole processes
# side by side (farm-bench: A and B interleaved, the ratio taken pair by
# pair), each pair the same command with and without the signing step:
#
#   verify   `sealc verify RECORD --allowed-signers FILE` against `sealc verify RECORD`
#   exec     `sealc exec RECORD --allowed-signers FILE -- /bin/true` against
#            `sealc exec RECORD --expect sha256:B -- /bin/true`
#   attest   `sealc exec ... --attest FILE --sign-key KEY --stdout FILE` against the
#            same without `--attest` and `--sign-key`
#   sign     `sealc sign RECORD --key KEY` against `sealc verify RECORD`
#            (sign verifies the record first)
#
#   bash benches/sign.sh [RUNS]        (default 30; needs ssh-keygen, bwrap)
#
# Issue 29 asks that signing and verifying add under 2 ms each to a run.
set -euo pipefail
cd "$(dirname "$0")/.."
runs=${1:-30}
# SEALC: a sealc to time; by default this checkout's, built (or brought
# up to date) first.
if [ -z "${SEALC:-}" ]; then cargo build --release -q; fi
sealc=${SEALC:-target/release/sealc}
sealc=$(realpath "$sealc")
command -v farm-bench >/dev/null || { echo "sign.sh: needs farm-bench" >&2; exit 2; }
t=$(mktemp -d)
chmod 755 "$t" # started by root, the agent runs as a uid of its own and must pass through
trap 'rm -rf "$t"' EXIT
mkdir -p "$t/ws" "$t/out"
printf 'version = 1\nname = "bench"\n[target]\nplatform = "linux"\n[filesystem]\nwrite = ["%s/ws"]\n' "$t" > "$t/spec.toml"
"$sealc" compile "$t/spec.toml" --platform linux --out "$t/seal" -q
ssh-keygen -q -t ed25519 -N '' -C bench -f "$t/key"
awk '{print "bench@example.com", $1, $2}' "$t/key.pub" > "$t/allowed"
"$sealc" sign "$t/seal/seal.json" --key "$t/key" -q
binding=$(python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))["binding"])' "$t/seal/seal.json")
rec=$t/seal/seal.json
echo "load average at start: $(cat /proc/loadavg)"
bench() {
  local name=$1 b=$2
  shift 2
  echo "== $name"
  farm-bench -n "$runs" --vs "$b" -- "$@" 2>&1 | grep -E "^A exit|^B exit|^A wall|^B wall|^A/B wall|^A cpu|^B cpu"
}
bench verify "$sealc verify $rec -q" "$sealc" verify "$rec" -q --allowed-signers "$t/allowed"
bench exec "$sealc exec $rec -q --expect $binding -- /bin/true" \
  "$sealc" exec "$rec" -q --allowed-signers "$t/allowed" -- /bin/true
bench attest "$sealc exec $rec -q --expect $binding --stdout $t/out/b.txt -- /bin/true" \
  "$sealc" exec "$rec" -q --expect "$binding" --stdout "$t/out/a.txt" --attest "$t/out/att.json" --sign-key "$t/key" -- /bin/true
bench sign "$sealc verify $rec -q" "$sealc" sign "$rec" -q --key "$t/key" --signature "$t/out/s.sig"
echo "load average at end: $(cat /proc/loadavg)"
