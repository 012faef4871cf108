//! The catalogue of every code sealc can emit, with what it means and an
//! example that raises it. A code is part of the interface: harnesses match
//! on it, so codes are never reused.

/// Every diagnostic code with a one-line description and an example that
/// raises it (spec text, or a command). Error tables live in
/// source so that a test can check that every code used is listed exactly once.
use super::code;

pub const CODES: &[(&str, &str, &str)] = &[
    (
        code::SPEC_TOML,
        "the spec is not valid TOML; only the first syntax error is reported, since the parser's guesses past it make the rest unreliable, and nothing else about the spec is checked until it parses",
        "name = \"unterminated",
    ),
    (
        code::SPEC_UNKNOWN_KEY,
        "a key the spec format does not have",
        "[filesystem]\ndeny_raed = [\"/x\"]",
    ),
    (
        code::SPEC_MISSING_KEY,
        "a key the spec format requires is absent",
        "name = \"no-version\"",
    ),
    (
        code::SPEC_TYPE,
        "a value has the wrong TOML type",
        "[filesystem]\ndeny_read = \"/x\"",
    ),
    (
        code::SPEC_VERSION,
        "the spec `version` is not one sealc reads",
        "version = 2",
    ),
    (
        code::SPEC_VALUE,
        "a value is outside what the key accepts",
        "[network]\nmode = \"proxied\"",
    ),
    (
        code::SPEC_INTERPOLATION,
        "a `${var}` reference is malformed",
        "[filesystem]\ndeny_read = [\"${home\"]",
    ),
    (
        code::VAR_UNDECLARED,
        "a `${var}` reference or `--var` names no declared var",
        "[filesystem]\ndeny_read = [\"${hoem}/.ssh\"]",
    ),
    (
        code::VAR_MISSING,
        "a var has no value from `--var`, its env var or its default",
        "[vars]\nrun = { required = true }   # and no --var run=...",
    ),
    (
        code::VAR_CYCLE,
        "var defaults refer to each other in a cycle",
        "[vars]\na = { default = \"${b}\" }\nb = { default = \"${a}\" }",
    ),
    (
        code::VAR_SECRET,
        "a var reads its value from an env var listed as a secret",
        "[vars]\nk = { env = \"OPENAI_API_KEY\" }\n[env]\nsecret = [\"OPENAI_API_KEY\"]",
    ),
    (
        code::VAR_ENCODING,
        "an env var read for a var or `pass` is not UTF-8",
        "# HOME holds bytes that are not UTF-8 while compiling\n[vars]\nhome = { env = \"HOME\" }",
    ),
    (
        code::VAR_FLAG,
        "a `--var` flag is not of the form NAME=VALUE, or gives a var used as a path a value that is not one",
        "# sealc compile spec.toml --var run",
    ),
    (
        code::PATH_INVALID,
        "a path is not absolute, normalized and safe to write into a profile",
        "[filesystem]\ndeny_read = [\"/Users/agent/\"]",
    ),
    (
        code::PATH_REALPATH,
        "a path resolves on this host to a path that cannot be written into a profile",
        "# a root whose realpath on this host holds a `\"`\n[filesystem]\ndeny_read = [\"/Users/agent/link\"]",
    ),
    (
        code::PATH_DEVICE,
        "a `write_devices` entry is not under `/dev`",
        "[filesystem]\nwrite_devices = [\"/etc/hosts\"]",
    ),
    (
        code::ROOT_CONFLICT,
        "one path is listed in two lists that contradict each other",
        "[filesystem]\ndeny_read = [\"/r\"]\nwrite = [\"/r\"]",
    ),
    (
        code::ROOT_ABSENT,
        "a root does not exist on the compiling host: a write root is made when the seal starts, any other is left as it is",
        "# compiled where /r does not exist yet\n[filesystem]\nwrite = [\"/r/ws\"]",
    ),
    (
        code::ROOT_DANGLING_LINK,
        "a write root does not exist, and a symlink on the way (or the root itself) leads to a path that does not exist either: the root cannot be made where the kernel would follow the link, so it is refused",
        "# /w/l is a symlink to /w/gone, which does not exist\n[filesystem]\nwrite = [\"/w/l/out\"]",
    ),
    (
        code::ROOT_LINKED,
        "a denied or metadata-only root inside a write root holds a file with another hard link, which the seal does not hide (hiding a path does not hide the file): each file is named with its other links found in the write roots, and links elsewhere are counted; checked at compile and before every `sealc exec`, on either target",
        "# ${ws}/grader/answer is also ${ws}/.peek (`ln ${ws}/grader/answer ${ws}/.peek`)\n[filesystem]\nwrite = [\"${ws}\"]\ndeny_read = [\"${ws}/grader\"]",
    ),
    (
        code::ROOT_UNCHECKABLE,
        "a denied or metadata-only root inside a write root cannot be walked to the end for hard links: more than 1,000,000 entries, deeper than 512 directories, or an entry that cannot be read",
        "# ${ws}/cache holds more than 1,000,000 entries\n[filesystem]\nwrite = [\"${ws}\"]\ndeny_read = [\"${ws}/cache\"]",
    ),
    (
        code::LAUNCHER_CHAIN,
        "the launcher symlink chain cannot be walked to a regular file",
        "[launcher]\npath = \"/nonexistent/codex\"",
    ),
    (
        code::LAUNCHER_PACKAGE,
        "the launcher is npm's native Codex inside a hidden root: its package directory (`.../vendor/<triple>`, with the bundled `codex-path/rg` and `codex-resources/`) is shown read-only with the binary, an `allow_read` root the seal lists as the launcher's (an advice); a warning when the spec denies that package by name, or its realpath cannot be written into a profile, which keeps it hidden",
        "# launcher.path = \"${home}/.npm/lib/node_modules/@openai/codex-linux-x64/vendor/x86_64-unknown-linux-musl/bin/codex\"\n[filesystem]\ndeny_read = [\"${home}\"]",
    ),
    (
        code::LAUNCHER_SCRIPT,
        "the launcher is a `#!` script (npm's Codex is one): the seal pins the script, not its interpreter nor what it starts; for npm's Codex the help names the native binary to point `launcher.path` at (a warning)",
        "# launcher.path = \"/usr/lib/node_modules/@openai/codex/bin/codex.js\" (`#!/usr/bin/env node`)",
    ),
    (
        code::NETWORK_PROXY,
        "the proxy is not a loopback `host:port`",
        "[network]\nmode = \"proxy\"\nproxy = \"10.0.0.1:8080\"",
    ),
    (
        code::NETWORK_PORT,
        "a port is outside 1-65535",
        "[network]\nports = [0]",
    ),
    (
        code::NETWORK_HOST,
        "a proxy allowlist host is not a host name, a `*.` suffix entry or an IP literal",
        "[network]\nhosts = [\"evil host\"]",
    ),
    (
        code::NETWORK_ALLOWLIST,
        "`allowlist` mode lets nothing through (no `hosts` or no `ports`), or `allow_ranges` is set in another mode",
        "[network]\nmode = \"allowlist\"\nports = [443]",
    ),
    (
        code::NETWORK_RANGE,
        "an `allow_ranges` entry is not an address range in CIDR notation",
        "[network]\nmode = \"allowlist\"\nhosts = [\"a.example\"]\nports = [443]\nallow_ranges = [\"10.0.0.1/8\"]",
    ),
    (
        code::LINUX_KIND,
        "the facts of a Linux seal give a root a realpath but no kind (an edited record)",
        "# seal.json with an entry removed from facts.kinds",
    ),
    (
        code::LINUX_FILE_ROOT,
        "a denied or metadata-only root is a file, which the host can replace from under its mount on Linux",
        "# deny_read = [\"${home}/.codex/auth.json\"] compiled with --platform linux",
    ),
    (
        code::LINUX_DENIED_LINK_IN_WRITE_ROOT,
        "a denied or metadata-only root of a Linux seal is a symlink inside a write root: a run could point it at a decoy (Linux only: seatbelt denies the unlink)",
        "# ${ws}/link is a symlink
[target]
platform = \"linux\"
[filesystem]
write = [\"${ws}\"]
deny_read = [\"${ws}/link\"]",
    ),
    (
        code::PLATFORM_STAND_IN,
        "a platform difference: on Linux a hidden root, and each directory on the way to a deeper root, is an empty stand-in whose name stays",
        "# sealc lint --platform both\n[filesystem]\ndeny_read = [\"/secret\"]",
    ),
    (
        code::PLATFORM_METADATA_INSIDE,
        "a platform difference: on Linux nothing inside a metadata-only root can be stat'ed or walked through",
        "# sealc lint --platform both\n[filesystem]\nmetadata_only = [\"/dispatch\"]",
    ),
    (
        code::PLATFORM_DENIED_SYMLINK,
        "a platform difference: on Linux a deny_read root that is a symlink leaves the link itself visible",
        "# sealc lint --platform both\n[filesystem]\ndeny_read = [\"/home/me/.claude/skills\"]",
    ),
    (
        code::PLATFORM_TEST_EXISTENCE,
        "a platform difference: macOS decides file-test-existence by the base, not by the roots",
        "# sealc lint --platform both\n[filesystem]\ndeny_read = [\"/secret\"]",
    ),
    (
        code::PLATFORM_CROSS_MOUNT,
        "a platform difference: on Linux renames and hard links never cross a root's mount",
        "# sealc lint --platform both\n[filesystem]\nwrite = [\"/ws\"]",
    ),
    (
        code::PLATFORM_RENAME_ANCESTOR,
        "a platform difference: on Linux the writable ancestors of a denied root inside a write root can be renamed within a run",
        "# sealc lint --platform both\n[filesystem]\nwrite = [\"/ws\"]\ndeny_read = [\"/ws/.harness/secrets\"]",
    ),
    (
        code::PLATFORM_PROXY_ADDRESS,
        "a platform difference: on macOS every loopback address reaches the proxy's port",
        "# sealc lint --platform both\n[network]\nmode = \"proxy\"\nproxy = \"127.0.0.1:8080\"",
    ),
    (
        code::PLATFORM_SYSTEM_BASE,
        "a platform difference: the deny-default system base is each platform's own",
        "# sealc lint --platform both\n[target]\nbase = \"deny-default\"",
    ),
    (
        code::PLATFORM_HIDDEN_AT_START,
        "a platform difference: on Linux roots are hidden when the sandbox starts, on macOS by path for the whole run",
        "# sealc lint --platform both\n[filesystem]\ndeny_read = [\"/secret\"]",
    ),
    (
        code::PROTECT_OUTSIDE,
        "a `filesystem.protect` path lies inside no write root (by any spelling): it is read-only already, so the entry protects nothing",
        "[filesystem]\nwrite = [\"/w\"]\nprotect = [\"/etc/hosts\"]",
    ),
    (
        code::PROTECT_WRITE_ROOT,
        "a `filesystem.protect` path is a write root or holds one: it cannot be both read-only and writable",
        "[filesystem]\nwrite = [\"/w\", \"/w/.git\"]\nprotect = [\"/w/.git\"]",
    ),
    (
        code::PROTECT_DENIED,
        "a `filesystem.protect` path lies inside a denied or metadata-only root: it can be neither read nor written already, so the entry changes nothing",
        "[filesystem]\nwrite = [\"/w\"]\ndeny_read = [\"/w/secret\"]\nprotect = [\"/w/secret/key\"]",
    ),
    (
        code::PROTECT_LINK,
        "a protected path, or a component on the way to it below a write root, is a symlink: the agent could point it elsewhere, and the tools that use the path would follow",
        "# /w/.git is a symlink to /w/real-git when compiling\n[filesystem]\nwrite = [\"/w\"]\nprotect = [\"/w/.git/hooks\"]",
    ),
    (
        code::PROTECT_CODEX_HOME,
        "the seal's CODEX_HOME lies in or holds a protected path: Codex must write its home, and `sealc exec` makes and removes it for every run",
        "[filesystem]\nwrite = [\"/w\"]\nprotect = [\".codex\"]\n[env]\nset = { CODEX_HOME = \"/w/.codex\" }\n[codex]",
    ),
    (
        code::PROTECT_GIT,
        "a write root holds a `.git` whose `hooks` and `config` are not protected (compile), or write roots exist and no `filesystem.protect` entry covers `.git/hooks` and `.git/config` (lint): what the agent writes there runs with the operator's rights at the next git command",
        "# /w is a git checkout when compiling\n[filesystem]\nwrite = [\"/w\"]",
    ),
    (
        code::PROTECT_GIT_CONFIG,
        "a protected `.git/config` points git at a file or directory the agent may write (`core.hooksPath`, `core.fsmonitor`, `include.path`, `includeIf.*.path` inside a write root, not protected): what it names runs, or is read as config, at your next git command",
        "# /w/.git/config sets `hooksPath = .husky` when compiling\n[filesystem]\nwrite = [\"/w\"]\nprotect = [\".git/hooks\", \".git/config\"]",
    ),
    (
        code::NETWORK_OPEN,
        "the network is open: the seal does not restrict it",
        "[network]\nmode = \"open\"",
    ),
    (
        code::ENV_NAME,
        "an env var name is not a portable name (letters, digits, `_`)",
        "[env]\nset = { \"A=B\" = \"x\" }",
    ),
    (
        code::ENV_VALUE,
        "an env var value holds a NUL byte",
        "[env]\nset = { A = \"x\\u0000y\" }",
    ),
    (
        code::ENV_DUPLICATE,
        "an env var name is listed in more than one of `pass`, `set`, `secret`",
        "[env]\npass = [\"HOME\"]\nset = { HOME = \"/r/home\" }",
    ),
    (
        code::ENV_ABSENT,
        "a `pass` env var is not set while compiling, so it does not cross",
        "# TERM unset while compiling\n[env]\npass = [\"TERM\"]",
    ),
    (
        code::ENV_LOADER,
        "`pass`, `set` or `secret` names a loader or libc variable (`LD_*`, `DYLD_*`, `GCONV_PATH`, ...) without `allow_loader_vars = true`",
        "[env]\nset = { LD_PRELOAD = \"/w/evil.so\" }",
    ),
    (
        code::LIMITS_WALL_TWICE,
        "the wall-clock limit is given both as `limits.wall_seconds` and as `exec.timeout`",
        "[exec]\ntimeout = { bin = \"/usr/bin/timeout\", seconds = 60 }\n[limits]\nwall_seconds = 60",
    ),
    (
        code::ASSERT_SHAPE,
        "an `[[assert]]` does not name exactly one verdict and one kind of subject",
        "[[assert]]\ndeny = \"file-read-data\"",
    ),
    (
        code::ASSERT_OP,
        "an `[[assert]]` names an operation no seal models (`sealc explain --list-ops` lists them)",
        "[[assert]]\ndeny = \"file-raed-data\"\npaths = [\"/x\"]",
    ),
    (
        code::ASSERT_FAILED,
        "an `[[assert]]` is false, ambiguous or undetermined on the compiled profile",
        "[filesystem]\ndeny_read = [\"/secret\"]\n[[assert]]\nallow = \"file-read-data\"\npaths = [\"/secret/x\"]",
    ),
    (
        code::EXEC_SECRET,
        "a `secret` named by the seal is not set in the environment of `sealc exec`",
        "# env -u OPENAI_API_KEY sealc exec seal/seal.json -- codex exec",
    ),
    (
        code::EXEC_COMMAND,
        "`sealc exec` was given no command, or one that cannot cross into the sandbox as written",
        "# sealc exec seal/seal.json -- A=1 codex",
    ),
    (
        code::EXEC_IN_WRITE_ROOT,
        "a program that starts the sandbox (`bwrap`, `sandbox-exec`, `env`) or an entry of the launcher chain lies inside a write root, by its path or its realpath",
        "[target]\nplatform = \"linux\"\n[filesystem]\nwrite = [\"/opt/tools\"]\n[exec]\nbwrap = \"/opt/tools/bwrap\"",
    ),
    (
        code::EXEC_ISOLATION,
        "a Linux seal with `exec.isolation = \"landlock\"` asks for what Landlock without namespaces cannot keep: a protected path (a Codex seal's config among them) or a denied root inside a write root, network mode `allowlist`, or an `exec.proc` other than the host's; and, as warnings, network mode `proxy` in that mode (TCP to the proxy's port on any address) and `exec.isolation` or `exec.proc` in a spec compiled for macOS, whose seal runs under seatbelt whatever they say",
        "[target]\nplatform = \"linux\"\n[exec]\nisolation = \"landlock\"\n[network]\nmode = \"allowlist\"\nhosts = [\"example.com\"]\nports = [443]",
    ),
    (
        code::EXEC_RESET,
        "an `exec.reset` entry is not a write root of the seal, or holds another root that exists (emptying it before each run would remove that root)",
        "[filesystem]\nwrite = [\"/tmp/ws\"]\n[exec]\nreset = [\"/tmp/elsewhere\"]",
    ),
    (
        code::EXEC_OUTPUT,
        "an `exec.outputs` entry lies in no write root, is a root itself, lies in a root inside its write root that the agent cannot write, or has the file name of another output (attestation subjects are named by file name)",
        "[filesystem]\nwrite = [\"/tmp/ws\"]\n[exec]\noutputs = [\"/tmp/elsewhere/answer.md\"]",
    ),
    (
        code::EXEC_NO_BWRAP,
        "a Linux seal is compiled on a Linux host where its bubblewrap (`[exec] bwrap`, default `/usr/bin/bwrap`) does not exist, so `sealc exec` cannot run it here (a warning)",
        "# on a Linux host without /usr/bin/bwrap: sealc compile spec.toml --platform linux",
    ),
    (
        code::EXEC_HOST_LAYERS,
        "a Linux seal is compiled on a Linux host that says it may refuse the sandbox (user namespaces switched off or restricted, a seccomp filter on sealc, a masked `/proc`, WSL 1): `sealc doctor` tries each layer (a warning)",
        "# in a Kubernetes pod with procMount: Default: sealc compile spec.toml --platform linux",
    ),
    (
        code::CODEX_VERSION,
        "`codex.version` is not a tested Codex release or a range over them",
        "[codex]\nversion = \"0.150.0\"",
    ),
    (
        code::CODEX_WORKSPACE,
        "`codex.workspace` is not one of the write roots",
        "[filesystem]\nwrite = [\"/r/ws\"]\n[codex]\nworkspace = \"/r/other\"",
    ),
    (
        code::CODEX_PROVIDER,
        "`codex.provider.base_url` is not an http(s) URL, or its `env_key` is not an `env.secret`; or `hold_key` without what it needs (`network.mode = \"allowlist\"`, an `https://` base URL whose host and port the allowlist lets through, an `env_key`)",
        "[codex.provider]\nbase_url = \"ftp://127.0.0.1/v1\"",
    ),
    (
        code::CODEX_PROFILE,
        "`codex.sandbox = \"profile\"` for a seal with a meaning no Codex permission profile can express (a `metadata_only` root), or a profile that fails the strict check of `[permissions]`",
        "[filesystem]\nmetadata_only = [\"/r/secrets\"]\n[codex]\nsandbox = \"profile\"",
    ),
    (
        code::CODEX_REALLOW,
        "`codex.sandbox = \"profile\"` with an `allow_read` root inside a denied one: Codex's sandbox refuses those reads (stricter than the seal)",
        "[filesystem]\ndeny_read = [\"/r/secrets\"]\nallow_read = [\"/r/secrets/public\"]\n[codex]\nsandbox = \"profile\"",
    ),
    (
        code::CODEX_SANDBOX_PATH,
        "`codex.sandbox = \"profile\"` for a Codex release (before 0.169.0) whose own sandbox does not start when the env allowlist sets `PATH`",
        "[env]\nset = { PATH = \"/usr/bin:/bin\" }\n[codex]\nversion = \"0.160.1\"\nsandbox = \"profile\"",
    ),
    (
        code::CODEX_HOME,
        "a Codex seal's `CODEX_HOME` (or `HOME/.codex`) lies strictly below no write root (`sealc exec` makes it fresh for every run)",
        "[env]\nset = { CODEX_HOME = \"/opt/codex\" }\n[codex]\nmodel = \"gpt-5.5\"",
    ),
    (
        code::CODEX_MCP,
        "a `codex.mcp_servers` entry cannot be sealed: a macOS or Landlock-mode seal, network `open`, a seal inside a write root, a malformed binding, no command, a port taken",
        "[codex.mcp_servers.docs]\nseal = \"/srv/docs/seal.json\"\nbinding = \"sha256:00\"\ncommand = [\"/usr/bin/python3\"]",
    ),
    (
        code::CODEX_CREDENTIALS_SHARED,
        "a Codex seal gives Codex credentials (`codex.credentials`, copied into each run's Codex home, or `env.secret` values, in Codex's environment) that every tool Codex runs can read too: the tools run as Codex's user, and Codex leaves itself dumpable, so `/proc/PID/environ` of Codex is theirs to read; the help says what bounds it (an advice: `sealc show` and the docs say it to every reviewer)",
        "[filesystem]\nwrite = [\"/w\"]\n[env]\nset = { CODEX_HOME = \"/w/home/.codex\" }\n[codex]\ncredentials = \"/op/auth.json\"",
    ),
    (
        code::CODEX_CREDENTIALS,
        "`codex.credentials` names a file inside a write root, where the agent could put anything in its place",
        "[filesystem]\nwrite = [\"/w\"]\n[env]\nset = { CODEX_HOME = \"/w/home/.codex\" }\n[codex]\ncredentials = \"/w/auth.json\"",
    ),
    (
        code::LINT_CODEX_LAYERS,
        "a Codex seal lets another Codex config layer in (`/etc/codex`, the workspace's `.codex/`), or has no `workspace` to keep its project layer out",
        "[codex]\nallow_system_config = true",
    ),
    (
        code::LINT_SCHEMA,
        "the spec does not match the JSON Schema (the editor's view)",
        "# a value the JSON Schema refuses that no other check names",
    ),
    (
        code::IPC_UNKNOWN,
        "an `ipc.allow` entry names nothing in the sealed IPC table (docs/ipc.md), so there is nothing to re-allow",
        "[ipc]\nallow = [\"com.apple.pasteboard\"]",
    ),
    (
        code::LINT_IPC_ALLOWED,
        "an `ipc.allow` entry re-opens a service, operation or program the seal otherwise denies: the warning says what the agent can then do outside the seal's file and network rules (on Linux the entry has no effect)",
        "[ipc]\nallow = [\"com.apple.SecurityServer\"]",
    ),
    (
        code::LINT_ALLOW_OUTSIDE_DENY,
        "an `allow_read` root lies in no denied root, so it changes nothing",
        "[filesystem]\nallow_read = [\"/opt/tools\"]",
    ),
    (
        code::LINT_REDUNDANT_ROOT,
        "a root lies inside another root of the same list",
        "[filesystem]\ndeny_read = [\"/u\", \"/u/.ssh\"]",
    ),
    (
        code::LINT_DENY_INSIDE_WRITE,
        "a denied root lies inside a write root, so move-blocking rules are added",
        "[filesystem]\nwrite = [\"/r/ws\"]\ndeny_read = [\"/r/ws/.harness\"]",
    ),
    (
        code::LINT_UNENFORCED_HOSTS,
        "`proxy` mode lists `hosts`, which only the external proxy can enforce",
        "[network]\nmode = \"proxy\"\nproxy = \"127.0.0.1:8080\"\nhosts = [\"api.openai.com\"]",
    ),
    (
        code::LINT_LOOPBACK_RANGE,
        "`allow_ranges` covers loopback: an allowed name may reach this machine's own services",
        "[network]\nmode = \"allowlist\"\nhosts = [\"a.example\"]\nports = [443]\nallow_ranges = [\"127.0.0.0/8\"]",
    ),
    (
        code::LINT_UNUSED_VAR,
        "a var is declared but never used",
        "[vars]\nunused = { default = \"/x\" }",
    ),
    (
        code::LINT_SECRET_PASS,
        "a `pass` name looks like a secret; its value would be recorded",
        "[env]\npass = [\"GITHUB_TOKEN\"]",
    ),
    (
        code::IO_READ,
        "a file could not be read",
        "# sealc compile missing.toml",
    ),
    (
        code::IO_WRITE,
        "an output could not be written",
        "# sealc compile spec.toml --out /read-only/dir",
    ),
    (
        code::RECORD_UNUSABLE,
        "`show` or `diff` was given a file that is not a usable record, or one whose spec does not compile",
        "# sealc show spec.toml",
    ),
    (
        code::OUT_DIFFERS,
        "an existing output differs and `--force` was not given",
        "# sealc compile spec.toml, after seal/seal.sb was edited",
    ),
    (
        code::OUT_IN_WRITE_ROOT,
        "the seal is written inside one of its own write roots, where the agent could rewrite it for the next run (`sealc exec` refuses it)",
        "# sealc compile spec.toml --var ws=$PWD (the default --out seal is inside ${ws})",
    ),
];
