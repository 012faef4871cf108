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
# The keychain's service itself, not the `security` program: a lookup that
# fails with errSecItemNotFound (-25300) when securityd answers, and with
# another status when the seal refuses the service.
if command -v python3 >/dev/null; then
  probe='import ctypes, ctypes.util as u
s = ctypes.cdll.LoadLibrary(u.find_library("Security"))
cf = ctypes.cdll.LoadLibrary(u.find_library("CoreFoundation"))
print(s.SecKeychainFindGenericPassword(None, 5, b"sealc", 0, None, None, None, None))'
  if [ "$(sandbox-exec -f "$sb" python3 -c "$probe" 2>/dev/null)" = "-25300" ]; then
    echo "ESCAPED  the keychain's service answers"; failed=1
  else
    echo "denied   the keychain's service"
  fi
fi
launchctl remove sealc.escape >/dev/null 2>&1 || true
defaults delete com.example.sealc-escape >/dev/null 2>&1 || true
# The work still works: a program runs and prints under the same seal.
if sandbox-exec -f "$sb" /bin/echo ok >/dev/null 2>&1; then echo "works    /bin/echo"; else echo "BROKEN   /bin/echo"; failed=1; fi
# HTTPS still works under a seal with the network open, without the
# keychain's service (certificate checks go through trustd).
open_spec="$out/open.toml"
printf 'version = 1\nname = "tls"\n[target]\nplatform = "macos"\n[network]\nmode = "open"\n' >"$open_spec"
target/release/sealc compile "$open_spec" --out "$out/tls" --force -q || exit 2
if sandbox-exec -f "$out/tls/seal.sb" /usr/bin/curl -sS -o /dev/null https://www.apple.com; then
  echo "works    HTTPS without the keychain's service"
else
  echo "BROKEN   HTTPS without the keychain's service: TLS needs com.apple.SecurityServer here"; failed=1
fi
# A sealed `codex exec` turn still works (one model call with your own
# Codex login, so only when asked: CODEX_TURN=1, with `codex` on PATH): the
# seal of a spec with a workspace, the Codex home sealc makes for the run,
# the network open and the Codex config sealc generates, run by `sealc exec`
# under `sandbox-exec`.
if [ "${CODEX_TURN:-}" = 1 ] && command -v codex >/dev/null; then
  ws="$out/turn-ws"; mkdir -p "$ws"
  printf 'version = 1\nname = "turn"\n[target]\nplatform = "macos"\n[filesystem]\nwrite = ["%s"]\n[network]\nmode = "open"\n[codex]\nworkspace = "%s"\n' \
    "$ws" "$ws" >"$out/turn.toml"
  target/release/sealc compile "$out/turn.toml" --out "$out/turn" --force -q || exit 2
  sealc="$PWD/target/release/sealc"
  if (cd "$ws" && "$sealc" exec "$out/turn/seal.json" -- \
      "$(command -v codex)" exec --skip-git-repo-check "Reply with the single word ok." </dev/null | grep -qi ok); then
    echo "works    a sealed codex exec turn"
  else
    echo "BROKEN   a sealed codex exec turn"; failed=1
  fi
else
  echo "skipped  a sealed codex exec turn (CODEX_TURN=1 and codex on PATH to run it)"
fi
rm -rf "$out"
exit $failed
