//! What some tests need that a machine may lack, probed when the tests are
//! built, so that a test that cannot run here is reported `ignored` with the
//! reason (`#[cfg_attr(<cfg>, ignore = "...")]`) instead of passing without
//! having run. A test that still finds its prerequisite missing when it runs
//! fails (tests/common/mod.rs, `not_run`).
//!
//! | cfg                               | set when                                               |
//! |-----------------------------------|--------------------------------------------------------|
//! | `sealc_no_bwrap`                  | `bwrap --ro-bind / / --unshare-pid --unshare-net true` fails (or there is no `bwrap` on `PATH`) |
//! | `sealc_not_root`                  | the build does not run as root (`id -u`)               |
//! | `sealc_cannot_become = "USER"`    | root cannot switch to the test user `USER` (`sealc-test`, `sealc-rival`; `.ci/run` makes them): not root, no `setpriv` on `PATH`, or `id USER` fails |
//! | `sealc_no_tool = "gcc"`, `"git"`, `"ssh-keygen"` | not on `PATH`                              |
//! | `sealc_no_tool = "curl"`, `"python3"` | not in `/usr/bin` (where the sealed runs take them) |
//! | `sealc_no_codex = "V"`            | the pinned Codex release V (`.ci/install-codex`) is not installed under `$SEALC_CODEX_DIR` (default `.codex-cli`) |
//! | `sealc_no_codex_policy = "V"`     | Codex V's macOS seatbelt policy (`.ci/install-codex-macos-policy`) is not there |
//! | `sealc_no_sslib`                  | `target/sslib-venv/bin/python` cannot import `securesystemslib` (`.ci/run` installs it there from PyPI) |
//! | `sealc_require_codex`             | `CI` is set or `SEALC_REQUIRE_CODEX=1`                 |
//! | `sealc_unwinder_shared`           | glibc Linux, but no `libgcc_eh.a` to link in (see [`static_unwinder`]); never under `CI` or a `SEALC_REQUIRE_*` |
//!
//! Nothing of the first four is set under `SEALC_REQUIRE_BWRAP=1`, and no
//! `sealc_no_codex*` under `CI` or `SEALC_REQUIRE_CODEX=1` (what
//! `codex_support::required()` reads): then every test runs, and one whose
//! prerequisite is missing fails, as it always did. Under `.ci/run` nothing
//! is ignored.
//!
//! The probes are cheap and local (files, `id`, one `bwrap` run), never the
//! network or `$HOME`, and run as whoever builds, who is whoever runs
//! `cargo test`. Cargo probes again when `SEALC_REQUIRE_BWRAP`,
//! `SEALC_REQUIRE_CODEX`, `SEALC_CODEX_DIR` or `CI` changes, or `bwrap`,
//! `/etc/passwd`, the Codex directory or `.ci/install-codex` does. A path
//! that did not exist is not watched (cargo would run this and rebuild the
//! crate on every build), nor is `PATH` or the user: after installing what
//! was missing, `touch build.rs` (the `.ci/install-codex*` scripts do).
//!
//! One thing is not a probe: on Linux with glibc, every binary of this
//! package links libgcc's unwinder from `libgcc_eh.a` instead of loading
//! `libgcc_s.so.1` ([`static_unwinder`]).

use std::ffi::OsStr;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

const USERS: [&str; 2] = ["sealc-test", "sealc-rival"];
const ON_PATH: [&str; 3] = ["gcc", "git", "ssh-keygen"];
const IN_USR_BIN: [&str; 2] = ["curl", "python3"];

fn main() {
    println!("cargo::rerun-if-changed=build.rs");
    for var in [
        "SEALC_REQUIRE_BWRAP",
        "SEALC_REQUIRE_CODEX",
        "SEALC_CODEX_DIR",
        "CI",
    ] {
        println!("cargo::rerun-if-env-changed={var}");
    }
    let quoted = |v: &[&str]| {
        v.iter()
            .map(|s| format!("{s:?}"))
            .collect::<Vec<_>>()
            .join(", ")
    };
    let releases = pinned_releases();
    let releases: Vec<&str> = releases.iter().map(String::as_str).collect();
    let tools: Vec<&str> = ON_PATH.iter().chain(&IN_USR_BIN).copied().collect();
    println!("cargo::rustc-check-cfg=cfg(sealc_no_bwrap, sealc_not_root, sealc_require_codex, sealc_no_sslib)");
    println!(
        "cargo::rustc-check-cfg=cfg(sealc_cannot_become, values({}))",
        quoted(&USERS)
    );
    println!(
        "cargo::rustc-check-cfg=cfg(sealc_no_tool, values({}))",
        quoted(&tools)
    );
    println!(
        "cargo::rustc-check-cfg=cfg(sealc_no_codex, sealc_no_codex_policy, values({}))",
        quoted(&releases)
    );

    static_unwinder();
    if !is_set("SEALC_REQUIRE_BWRAP", |v| v == "1") {
        sandbox_probes();
    }
    if is_set("CI", |v| !v.is_empty()) || is_set("SEALC_REQUIRE_CODEX", |v| v == "1") {
        println!("cargo::rustc-cfg=sealc_require_codex");
    } else {
        codex_probes(&releases);
    }
}

/// Link libgcc's unwinder into the binaries (`libgcc_eh.a`) rather than
/// load `libgcc_s.so.1` when they start: that library's constructor
/// (`__cpu_indicator_init`) probes the CPU with `CPUID`, which traps to the
/// hypervisor on a VM (6.6 us each on the VM this was measured on), and it
/// is one more library to map and relocate: a hello-world's whole process
/// took 0.82 ms against 0.99 ms (benches/peers/measure.py, 100 runs).
/// Unwinding (panics, `catch_unwind`, backtraces) is the same code, linked
/// in. The C library stays shared (its NSS modules, for the proxy's DNS).
///
/// A linker script named `libgcc_s.so` in a directory searched first names
/// the archive instead (`INPUT(-lgcc_eh)`); `-lgcc_s` (Rust's standard
/// library and the C compiler's driver ask for it) then finds it. A cross
/// build is left as it is. Where the C compiler has no archive, the
/// binaries load `libgcc_s.so.1` as before, and the build warns.
fn static_unwinder() {
    let var = |k: &str| std::env::var(k).unwrap_or_default();
    if var("CARGO_CFG_TARGET_OS") != "linux"
        || var("CARGO_CFG_TARGET_ENV") != "gnu"
        || var("HOST") != var("TARGET")
    {
        return;
    }
    println!("cargo::rustc-check-cfg=cfg(sealc_unwinder_shared)");
    println!("cargo::rerun-if-env-changed=CC");
    let cc = std::env::var_os("CC").unwrap_or_else(|| "cc".into());
    let found = Command::new(&cc)
        .arg("-print-file-name=libgcc_eh.a")
        .stdin(Stdio::null())
        .stderr(Stdio::null())
        .output()
        .ok()
        .filter(|o| o.status.success())
        .map(|o| PathBuf::from(String::from_utf8_lossy(&o.stdout).trim()))
        .is_some_and(|p| p.is_absolute() && p.is_file());
    if !found {
        println!(
            "cargo::warning=libgcc_eh.a not found by `{} -print-file-name`: the binaries load libgcc_s.so.1 (slower start-up)",
            cc.to_string_lossy()
        );
        unwinder_shared();
        return;
    }
    let dir = PathBuf::from(var("OUT_DIR")).join("unwinder");
    // By name, not by the path found: after the C compiler is upgraded the
    // linker finds the new archive where the old path would be gone (this
    // script is not written again unless build.rs runs again).
    let script = "INPUT(-lgcc_eh)\n";
    if std::fs::create_dir_all(&dir)
        .and_then(|()| std::fs::write(dir.join("libgcc_s.so"), script))
        .is_err()
    {
        println!("cargo::warning=cannot write the unwinder's linker script: the binaries load libgcc_s.so.1");
        unwinder_shared();
        return;
    }
    println!("cargo::rustc-link-search=native={}", dir.display());
}

/// The loader test is reported ignored where the unwinder could not be
/// linked in, unless a run requires every test (then it fails).
fn unwinder_shared() {
    let required = is_set("CI", |v| !v.is_empty())
        || is_set("SEALC_REQUIRE_BWRAP", |v| v == "1")
        || is_set("SEALC_REQUIRE_CODEX", |v| v == "1");
    if !required {
        println!("cargo::rustc-cfg=sealc_unwinder_shared");
    }
}

fn is_set(var: &str, when: impl Fn(&OsStr) -> bool) -> bool {
    std::env::var_os(var).is_some_and(|v| when(&v))
}

/// Bubblewrap, root, the test users and the tools the sealed runs use.
fn sandbox_probes() {
    let bwrap = on_path("bwrap");
    if let Some(b) = &bwrap {
        watch(b);
    }
    if !bwrap.is_some_and(|b| bwrap_sandboxes(&b)) {
        println!("cargo::rustc-cfg=sealc_no_bwrap");
    }
    let root = Command::new("id")
        .arg("-u")
        .stdin(Stdio::null())
        .stderr(Stdio::null())
        .output()
        .is_ok_and(|o| o.status.success() && o.stdout.trim_ascii() == b"0");
    if !root {
        println!("cargo::rustc-cfg=sealc_not_root");
    }
    watch(Path::new("/etc/passwd"));
    let setpriv = on_path("setpriv").is_some();
    for user in USERS {
        if !(root && setpriv && runs(Path::new("id"), &[user])) {
            println!("cargo::rustc-cfg=sealc_cannot_become={user:?}");
        }
    }
    for tool in ON_PATH {
        if on_path(tool).is_none() {
            println!("cargo::rustc-cfg=sealc_no_tool={tool:?}");
        }
    }
    for tool in IN_USR_BIN {
        if !Path::new("/usr/bin").join(tool).is_file() {
            println!("cargo::rustc-cfg=sealc_no_tool={tool:?}");
        }
    }
    // securesystemslib, the reference DSSE verifier, in the private virtual
    // environment `.ci/run` makes (`target/sslib-venv`).
    let python = Path::new(env!("CARGO_MANIFEST_DIR")).join("target/sslib-venv/bin/python");
    if python.exists() {
        watch(&python);
    }
    if !runs(&python, &["-c", "import securesystemslib.dsse"]) {
        println!("cargo::rustc-cfg=sealc_no_sslib");
    }
}

/// Can bubblewrap make a sandbox here (what tests/common/mod.rs's
/// `bwrap_sandboxes` asks, with fewer tries)?
fn bwrap_sandboxes(bwrap: &Path) -> bool {
    let probe = [
        "--ro-bind",
        "/",
        "/",
        "--unshare-pid",
        "--unshare-net",
        "true",
    ];
    (0..3).any(|i| {
        if i > 0 {
            std::thread::sleep(std::time::Duration::from_millis(100));
        }
        runs(bwrap, &probe)
    })
}

/// The pinned Codex releases and their macOS policy.
fn codex_probes(releases: &[&str]) {
    let dir = match std::env::var_os("SEALC_CODEX_DIR") {
        Some(d) if !d.is_empty() => PathBuf::from(d),
        _ => Path::new(env!("CARGO_MANIFEST_DIR")).join(".codex-cli"),
    };
    watch(&dir);
    for v in releases {
        if find_codex(&dir.join(v)).is_none() {
            println!("cargo::rustc-cfg=sealc_no_codex={v:?}");
        }
        let policy = dir.join("macos-policy").join(v).join("codex-seatbelt.sbpl");
        if !policy.is_file() {
            println!("cargo::rustc-cfg=sealc_no_codex_policy={v:?}");
        }
    }
}

/// The native binary of the release installed at `prefix`, found as
/// tests/codex_support/mod.rs's `find` finds it.
fn find_codex(prefix: &Path) -> Option<PathBuf> {
    let scope = prefix.join("node_modules/@openai");
    for pkg in std::fs::read_dir(scope).ok()?.flatten() {
        if !pkg.file_name().to_string_lossy().starts_with("codex-") {
            continue;
        }
        for triple in std::fs::read_dir(pkg.path().join("vendor")).ok()?.flatten() {
            let bin = triple.path().join("bin/codex");
            if bin.is_file() {
                return Some(bin);
            }
        }
    }
    None
}

/// The releases `.ci/install-codex` installs by default (its
/// `versions=(...)` line, which tests/codex_conformance.rs holds to what
/// the tests need).
fn pinned_releases() -> Vec<String> {
    let script = Path::new(env!("CARGO_MANIFEST_DIR")).join(".ci/install-codex");
    watch(&script);
    let text = std::fs::read_to_string(&script).unwrap_or_default();
    let Some(line) = text
        .lines()
        .map(str::trim)
        .find(|l| l.starts_with("versions=(0"))
    else {
        println!(
            "cargo::warning=no `versions=(...)` line in {}: no Codex release is probed",
            script.display()
        );
        return Vec::new();
    };
    line.trim_start_matches("versions=(")
        .trim_end_matches(')')
        .split_whitespace()
        .map(str::to_string)
        .collect()
}

/// Rerun when `path` changes (a directory: anything in it), if it exists.
fn watch(path: &Path) {
    if path.exists() {
        println!("cargo::rerun-if-changed={}", path.display());
    }
}

/// Where `name` is found on `PATH`, as `Command::new(name)` would find it.
fn on_path(name: &str) -> Option<PathBuf> {
    let path = std::env::var_os("PATH")?;
    std::env::split_paths(&path)
        .map(|d| d.join(name))
        .find(|p| std::fs::metadata(p).is_ok_and(|m| m.is_file() && executable(&m)))
}

#[cfg(unix)]
fn executable(m: &std::fs::Metadata) -> bool {
    use std::os::unix::fs::PermissionsExt;
    m.permissions().mode() & 0o111 != 0
}

#[cfg(not(unix))]
fn executable(_: &std::fs::Metadata) -> bool {
    true
}

fn runs(program: &Path, args: &[&str]) -> bool {
    Command::new(program)
        .args(args)
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .status()
        .is_ok_and(|s| s.success())
}
