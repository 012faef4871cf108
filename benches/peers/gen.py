"""The inputs of benches/peers.sh: for each workload, what sandbox-runtime
is given in place of a sealc spec (a config JSON that means the same), and
the generated spec of the 10,000-root workload.

    python3 benches/peers/gen.py OUT REPO [ROOTS]

writes OUT/probe.json, OUT/minimal.json, OUT/deny10k.toml and
OUT/deny10k.json (ROOTS denied roots, default 10000). REPO is the checkout
(the probe spec's `checkout`); its tests/fixtures/demo-home is `home`.
"""
import json
import os
import sys

out, repo = sys.argv[1], os.path.abspath(sys.argv[2])
roots = int(sys.argv[3]) if len(sys.argv) > 3 else 10000
home = os.path.join(repo, "tests/fixtures/demo-home")
run = "/tmp/sealc-demo/run"  # the probe's `run` var, as peers.sh gives it


def write_json(name, config):
    with open(os.path.join(out, name), "w") as f:
        json.dump(config, f, indent=1)
        f.write("\n")


# specs/probe-rep.toml, with what sealc derives from it spelled out:
# - deny_read as listed (tmpdir=/tmp, codex_home=${home}/.codex), plus the
#   two roots sealc adds for [codex] (/etc/codex and the workspace's .codex);
#   metadata_only `${run}/dispatch` is a deny here (sandbox-runtime lets
#   every directory be stat'ed once anything is denied, and has no
#   stat-only roots);
# - sealc re-allows reading the write roots (they are under the denied
#   /tmp) and the launcher chain (the codex symlink and what it points at):
#   that is allowRead;
# - write roots as listed, /dev/zero from write_devices (the package's
#   defaults already hold /dev/null, /dev/tty and /dev/dtracehelper), and
#   the Codex config `sealc exec` installs kept read-only (denyWrite);
# - proxy mode through 127.0.0.1:8080: the external proxy ports, both
#   protocols on the one port (what sandbox-runtime's own proxy does);
#   hosts and ports as allowedDomains (recorded, not in the profile, and
#   decided by the proxy in both).
write_roots = [f"{run}/home", f"{run}/ws", f"{run}/tmp"]
write_json("probe.json", {
    "network": {
        "allowedDomains": [f"{h}:443" for h in [
            "chatgpt.com", "ab.chatgpt.com", "*.oaiusercontent.com",
            "api.openai.com", "auth.openai.com"]],
        "deniedDomains": [],
        "httpProxyPort": 8080,
        "socksProxyPort": 8080,
    },
    "filesystem": {
        "denyRead": [
            "/tmp", "/tmp", home, f"{home}/.codex", repo,
            f"{home}/.agents", f"{home}/.claude/skills", f"{home}/.gemini/skills",
            f"{home}/.codex/skills",
            "/etc/codex", f"{run}/ws/.codex", f"{run}/dispatch",
        ],
        "allowRead": write_roots + [
            f"{home}/.local/bin/codex", f"{home}/.local/lib/codex/bin/codex.js"],
        "allowWrite": write_roots + ["/dev/zero"],
        "denyWrite": [f"{run}/home/.codex/config.toml"],
    },
})

# specs/minimal.toml: one denied root, one write root, no network (no
# domains, no proxy port).
write_json("minimal.json", {
    "network": {"allowedDomains": [], "deniedDomains": []},
    "filesystem": {
        "denyRead": ["/Users/Shared/secrets"],
        "allowWrite": ["/tmp/sealc-minimal/ws"],
        "denyWrite": [],
    },
})

# ROOTS denied roots (absent: sealc warns about each) and one write root,
# no network.
denied = ["/tmp/sealc-peers/projects/p%05d" % i for i in range(roots)]
ws = "/tmp/sealc-peers/ws"
with open(os.path.join(out, "deny10k.toml"), "w") as f:
    f.write('version = 1\nname = "deny10k"\n\n[target]\nplatform = "macos"\n\n')
    f.write("[filesystem]\ndeny_read = [\n")
    f.writelines(f'  "{p}",\n' for p in denied)
    f.write(f']\nwrite = ["{ws}"]\n\n[network]\nmode = "none"\n')
write_json("deny10k.json", {
    "network": {"allowedDomains": [], "deniedDomains": []},
    "filesystem": {"denyRead": denied, "allowWrite": [ws], "denyWrite": []},
})
