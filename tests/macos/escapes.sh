#!/usr/bin/env bash
# On a Mac: try each IPC escape of docs/ipc.md under `sandbox-exec` with a
# seal sealc compiled, and fail if any works. Not part of `cargo test` and
# not run by CI (Linux, where seatbelt cannot run): docs/ipc.md says it has
# not been run until someone runs it on a Mac and says so.
#
#   bash tests/macos/escapes.sh [SPEC]      (default: specs/minimal.toml)
set -uo pipefail
cd "$(dirname "$0")/../.."
[ "$(uname -s)" = Darwin ] || { echo "escapes.sh: macOS only (seatbelt)" >&2; exit 2; }
spec=${1:-specs/minimal.toml}
out=$(mktemp -d)
cargo build --release -q || exit 2
target/release/sealc compile "$spec" --platform macos --out "$out" --force -q || exit 2
sb="$out/seal.sb"
failed=0
try() { # what, command...
  local what=$1; shift
  if sandbox-exec -f "$sb" "$@" >/dev/null 2>&1; then
    echo "ESCAPED  $what: $*"; failed=1
  else
    echo "denied   $what"
  fi
}
try "LaunchServices starts an application" /usr/bin/open -a Calculator
try "Apple Events to an unsandboxed application" /usr/bin/osascript -e 'tell application "Finder" to get name'
try "the clipboard is read" /usr/bin/pbpaste
try "the clipboard is written" /bin/sh -c 'echo sealc | /usr/bin/pbcopy'
try "a launchd job is submitted" /bin/launchctl submit -l sealc.escape -- /usr/bin/true
try "the keychain is read" /usr/bin/security find-generic-password -s sealc-escape-probe
try "another application's defaults are written" /usr/bin/defaults write com.example.sealc-escape k v
launchctl remove sealc.escape >/dev/null 2>&1 || true
defaults delete com.example.sealc-escape >/dev/null 2>&1 || true
# The work still works: a program runs and prints under the same seal.
if sandbox-exec -f "$sb" /bin/echo ok >/dev/null 2>&1; then echo "works    /bin/echo"; else echo "BROKEN   /bin/echo"; failed=1; fi
rm -rf "$out"
exit $failed
