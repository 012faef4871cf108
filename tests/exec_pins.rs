//! `sealc exec` starts only the seal it was given, on the host it was
//! compiled for: a denied root that a run moved out of its stand-in's way
//! (Linux mounts stay with the moved directory), a replaced program that
//! starts the sandbox, or a record other than the one `--expect` pins, and
//! nothing starts.
//!
//! The moves are made for real, by a first run inside the seal, under
//! bubblewrap. Without bubblewrap those tests are ignored, unless
//! `SEALC_REQUIRE_BWRAP=1`, under which they fail.

mod common;
use common::{bwrap_works, text};

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

const SECRET: &str = "MOVED-SECRET-3c8e";

/// A temp directory (outside `/tmp`), a Linux spec compiled in it, and
/// `sealc exec` of its record.
struct Lab {
    _tmp: tempfile::TempDir,
    t: PathBuf,
}

impl Lab {
    /// `spec` may use `@` for the lab's directory.
    fn new(setup: impl FnOnce(&Path), spec: &str) -> Lab {
        let tmp = tempfile::tempdir_in(env!("CARGO_TARGET_TMPDIR")).unwrap();
        let t = tmp.path().canonicalize().unwrap();
        setup(&t);
        let spec = spec.replace('@', &t.display().to_string());
        std::fs::write(t.join("spec.toml"), spec).unwrap();
        let lab = Lab { _tmp: tmp, t };
        let out = lab.compile();
        assert_eq!(out.status.code(), Some(0), "compile: {}", text(&out));
        lab
    }

    fn sealc(&self) -> Command {
        let mut c = Command::new(env!("CARGO_BIN_EXE_sealc"));
        c.current_dir(&self.t)
            .env_clear()
            .env("PATH", "/usr/bin:/bin");
        c
    }

    fn compile(&self) -> Output {
        self.sealc()
            .args(["compile", "spec.toml", "--platform", "linux", "--force"])
            .args(["--out", "seal"])
            .output()
            .unwrap()
    }

    fn exec(&self, flags: &[&str], script: &str) -> Output {
        self.sealc()
            .arg("exec")
            .arg(self.t.join("seal/seal.json"))
            .args(flags)
            .args(["--", "/bin/sh", "-c", script])
            .output()
            .unwrap()
    }

    fn path(&self, p: &str) -> PathBuf {
        self.t.join(p)
    }

    fn binding(&self) -> String {
        let record: serde_json::Value =
            serde_json::from_slice(&std::fs::read(self.path("seal/seal.json")).unwrap()).unwrap();
        record["binding"].as_str().unwrap().to_string()
    }
}

const MOVED_SPEC: &str = r#"version = 1
name = "moved"
[target]
platform = "linux"
[filesystem]
write = ["@/ws"]
deny_read = ["@/ws/a/secret"]
"#;

/// Run 1 moves a denied root's directory away inside the seal and leaves a
/// decoy; run 2 must not start, and must not advise compiling again (the
/// new compile would hide the decoy and expose the moved secret).
fn the_next_run_refuses_a_move(
    setup: impl FnOnce(&Path),
    moves: &str,
    moved_secret: &str,
    pinned: &str,
) {
    let lab = Lab::new(setup, MOVED_SPEC);
    // Run 1: the secret is hidden where it was compiled...
    let out = lab.exec(&[], "cat ws/a/secret ws/a/secret/token; echo RUN-1-UP");
    assert!(text(&out).contains("RUN-1-UP"), "{}", text(&out));
    assert!(!text(&out).contains(SECRET), "{}", text(&out));
    // ... and the run moves it out of the stand-in's way.
    let out = lab.exec(&[], moves);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out));
    assert_eq!(
        std::fs::read_to_string(lab.path(moved_secret))
            .unwrap()
            .trim(),
        SECRET,
        "the move did not happen: {}",
        text(&out)
    );

    // Run 2 starts nothing.
    let marker = lab.path("ws/started");
    let script = format!(
        "touch {}; cat ws/a2/secret ws/a2/secret/* 2>/dev/null",
        marker.display()
    );
    let out = lab.exec(&[], &script);
    let all = text(&out);
    assert_eq!(out.status.code(), Some(125), "{all}");
    assert!(!marker.exists(), "the command started: {all}");
    assert!(!all.contains(SECRET), "{all}");
    assert!(all.contains("nothing was started"), "{all}");
    assert!(all.contains(pinned), "{all}");
    assert!(
        all.contains("was moved or replaced since compiling"),
        "{all}"
    );
    assert!(
        all.contains("compiling again would expose what was moved"),
        "{all}"
    );
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        !stderr.lines().any(|l| l.starts_with("help: compile")),
        "advised compiling again: {all}"
    );
    assert!(
        stderr.contains("help: keep this record") && !stderr.contains("compile the seal again"),
        "{all}"
    );
}

#[test]
#[cfg_attr(sealc_no_bwrap, ignore = "needs bubblewrap that can make namespaces")]
fn a_denied_file_whose_directory_a_run_moved_does_not_start_the_next_run() {
    if !bwrap_works() {
        return;
    }
    the_next_run_refuses_a_move(
        |t| {
            std::fs::create_dir_all(t.join("ws/a")).unwrap();
            std::fs::write(t.join("ws/a/secret"), SECRET).unwrap();
        },
        "mv ws/a ws/a2 && mkdir ws/a && echo decoy > ws/a/secret",
        "ws/a2/secret",
        "an ancestor of the denied root",
    );
}

#[test]
#[cfg_attr(sealc_no_bwrap, ignore = "needs bubblewrap that can make namespaces")]
fn a_denied_directory_whose_parent_a_run_replaced_by_a_link_does_not_start_the_next_run() {
    if !bwrap_works() {
        return;
    }
    the_next_run_refuses_a_move(
        |t| {
            std::fs::create_dir_all(t.join("ws/a/secret")).unwrap();
            std::fs::write(t.join("ws/a/secret/token"), SECRET).unwrap();
        },
        "mv ws/a ws/a2 && mkdir -p ws/decoy/secret && echo decoy > ws/decoy/secret/token && ln -s decoy ws/a",
        "ws/a2/secret/token",
        "the denied root",
    );
}

#[test]
fn a_replaced_missing_or_new_program_that_starts_the_sandbox_is_drift() {
    // `--dry-run` verifies and checks the host exactly as a run does, and
    // starts nothing, so no working bubblewrap is needed here.
    let spec = r#"version = 1
name = "builder"
[target]
platform = "linux"
[filesystem]
write = ["@/ws"]
[exec]
bwrap = "@/tools/bwrap"
"#;
    let lab = Lab::new(
        |t| {
            std::fs::create_dir_all(t.join("ws")).unwrap();
            std::fs::create_dir_all(t.join("tools")).unwrap();
            std::fs::write(t.join("tools/bwrap"), "the reviewed bwrap").unwrap();
        },
        spec,
    );
    let dry = |lab: &Lab| lab.exec(&["--dry-run"], "true");
    let out = dry(&lab);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out));

    let check = |out: Output, now: &str| {
        let all = text(&out);
        assert_eq!(out.status.code(), Some(125), "{all}");
        assert!(all.contains("which starts the sandbox, changed"), "{all}");
        assert!(all.contains(now), "{all}");
        assert!(all.contains("nothing was started"), "{all}");
        assert!(
            all.contains("help: a program that starts the sandbox changed"),
            "{all}"
        );
    };
    std::fs::write(lab.path("tools/bwrap"), "a replaced bwrap").unwrap();
    check(dry(&lab), &sealc::digest::sha256(b"a replaced bwrap"));
    std::fs::remove_file(lab.path("tools/bwrap")).unwrap();
    check(dry(&lab), "now absent");

    // Compiled while absent, present since.
    let out = lab.compile();
    assert_eq!(out.status.code(), Some(0), "{}", text(&out));
    assert_eq!(dry(&lab).status.code(), Some(0));
    std::fs::write(lab.path("tools/bwrap"), "a new bwrap").unwrap();
    check(dry(&lab), "compiled as absent");
}

#[test]
#[cfg_attr(sealc_no_bwrap, ignore = "needs bubblewrap that can make namespaces")]
fn exec_expect_starts_only_the_pinned_seal() {
    let lab = Lab::new(
        |t| std::fs::create_dir_all(t.join("ws")).unwrap(),
        "version = 1\nname = \"pinned\"\n[filesystem]\nwrite = [\"@/ws\"]\n",
    );
    let binding = lab.binding();
    let other = format!("sha256:{}", "a".repeat(64));
    let marker = lab.path("ws/started");
    let touch = format!("touch {}", marker.display());

    let out = lab.exec(&["--expect", &other], &touch);
    let all = text(&out);
    assert_eq!(out.status.code(), Some(125), "{all}");
    assert!(!marker.exists(), "the command started: {all}");
    assert!(all.contains(&binding) && all.contains(&other), "{all}");
    assert!(all.contains("nothing was started"), "{all}");

    for bad in [
        "sha256:xyz",
        binding.trim_start_matches("sha256:"),
        "latest",
    ] {
        let out = lab.exec(&["--expect", bad], &touch);
        assert_eq!(out.status.code(), Some(125), "{}", text(&out));
        assert!(!marker.exists(), "the command started: {}", text(&out));
    }

    let out = lab.exec(&["--expect", &binding, "--dry-run"], &touch);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out));
    if !bwrap_works() {
        return;
    }
    let out = lab.exec(&["--expect", &binding], &touch);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out));
    assert!(marker.exists(), "{}", text(&out));
}

/// A launcher of 1 MiB or more is hashed once per file identity (device,
/// inode, size, modification and change times) and its digest kept where
/// only the caller writes: root's in `/run/sealc/digests`, an unprivileged
/// caller's in its own `$XDG_RUNTIME_DIR`, never in a write root of the
/// seal. Content changed behind a restored modification time still changes
/// the change time: drift, and nothing starts.
#[test]
#[cfg_attr(
    sealc_not_root,
    ignore = "needs root (root's digest cache, a test user)"
)]
fn a_large_launcher_is_hashed_once_per_identity_and_a_changed_one_is_drift() {
    use std::os::unix::fs::{MetadataExt, PermissionsExt};
    if !common::ready_as_root_with(&[common::USER]) {
        return;
    }
    let spec = r#"version = 1
name = "big-launcher"
[target]
platform = "linux"
[launcher]
path = "@/tools/agent"
[filesystem]
write = ["@/ws"]
"#;
    let mut body = b"#!/bin/sh\nexit 0\n".to_vec();
    body.resize(2 << 20, b'#');
    let lab = Lab::new(
        |t| {
            std::fs::set_permissions(t, std::fs::Permissions::from_mode(0o755)).unwrap();
            std::fs::create_dir_all(t.join("ws")).unwrap();
            std::fs::create_dir_all(t.join("tools")).unwrap();
            std::fs::write(t.join("tools/agent"), &body).unwrap();
            std::fs::set_permissions(
                t.join("tools/agent"),
                std::fs::Permissions::from_mode(0o755),
            )
            .unwrap();
        },
        spec,
    );
    let entries = |dir: &Path, ino: u64| -> Vec<String> {
        std::fs::read_dir(dir)
            .map(|d| {
                d.flatten()
                    .map(|e| e.file_name().to_string_lossy().into_owned())
                    .filter(|n| n.contains(&format!("-{ino}-{}-", 2 << 20)))
                    .collect()
            })
            .unwrap_or_default()
    };
    let launcher = lab.path("tools/agent");
    let ino = std::fs::metadata(&launcher).unwrap().ino();
    let root_cache = Path::new("/run/sealc/digests");
    let kept = entries(root_cache, ino);
    assert_eq!(kept.len(), 1, "{kept:?}");
    let digest = std::fs::read_to_string(root_cache.join(&kept[0])).unwrap();
    assert_eq!(digest, format!("{}\n", sealc::digest::sha256(&body)));
    let out = lab.exec(&["--dry-run"], "true");
    assert_eq!(out.status.code(), Some(0), "{}", text(&out));

    // One byte changed, the modification time put back: the change time
    // still moves, so the launcher is hashed again, and it is drift.
    let mtime = std::fs::metadata(&launcher).unwrap().mtime();
    let mut changed = body.clone();
    changed[100] = b'!';
    std::fs::write(&launcher, &changed).unwrap();
    let touch = Command::new("touch")
        .args(["-m", "-d", &format!("@{mtime}")])
        .arg(&launcher)
        .status()
        .unwrap();
    assert!(touch.success());
    let out = lab.exec(&["--dry-run"], "true");
    let all = text(&out);
    assert_eq!(out.status.code(), Some(125), "{all}");
    assert!(all.contains("the launcher chain differs"), "{all}");
    let kept = entries(root_cache, ino);
    assert_eq!(kept.len(), 2, "{kept:?}");

    // An unprivileged caller keeps its digests in its own runtime
    // directory; a seal that writes that directory keeps none there.
    std::fs::write(&launcher, &body).unwrap();
    assert_eq!(lab.compile().status.code(), Some(0));
    let (uid, gid) = common::ids(common::USER);
    let xdg = lab.path("xdg");
    std::fs::create_dir(&xdg).unwrap();
    std::fs::set_permissions(&xdg, std::fs::Permissions::from_mode(0o700)).unwrap();
    std::os::unix::fs::chown(&xdg, Some(uid), Some(gid)).unwrap();
    let as_user = |seal: &str| {
        let record = lab.path(seal).display().to_string();
        common::as_user(
            Some(common::USER),
            &[
                env!("CARGO_BIN_EXE_sealc"),
                "exec",
                &record,
                "--dry-run",
                "--",
                "true",
            ],
        )
        .env("XDG_RUNTIME_DIR", &xdg)
        .current_dir(lab.path("ws"))
        .output()
        .unwrap()
    };
    let ino = std::fs::metadata(&launcher).unwrap().ino();
    let out = as_user("seal/seal.json");
    assert_eq!(out.status.code(), Some(0), "{}", text(&out));
    assert_eq!(entries(&xdg.join("sealc-digests"), ino).len(), 1);
    std::fs::remove_dir_all(xdg.join("sealc-digests")).unwrap();
    let spec2 = spec.replace("write = [\"@/ws\"]", "write = [\"@/ws\", \"@/xdg\"]");
    std::fs::write(
        lab.path("spec2.toml"),
        spec2.replace('@', &lab.t.display().to_string()),
    )
    .unwrap();
    let out = lab
        .sealc()
        .args([
            "compile",
            "spec2.toml",
            "--platform",
            "linux",
            "--out",
            "seal2",
        ])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(0), "{}", text(&out));
    let out = as_user("seal2/seal.json");
    assert_eq!(out.status.code(), Some(0), "{}", text(&out));
    assert!(!xdg.join("sealc-digests").exists());
}

/// npm's native Codex inside a hidden root, run for real: the seal shows
/// its package read-only with it, so the tool it runs from beside it
/// (`codex-path/rg`) runs, while the rest of the hidden root stays hidden
/// and the package cannot be written.
#[test]
#[cfg_attr(sealc_no_bwrap, ignore = "needs bubblewrap that can make namespaces")]
fn npm_codex_in_a_hidden_root_runs_its_bundled_tools_and_nothing_else_of_the_root() {
    use std::os::unix::fs::PermissionsExt;
    if !bwrap_works() {
        return;
    }
    const V: &str =
        "home/lib/node_modules/@openai/codex-linux-x64/vendor/x86_64-unknown-linux-musl";
    let spec = format!(
        "version = 1\nname = \"npm-codex\"\n[target]\nplatform = \"linux\"\n[launcher]\npath = \"@/{}/bin/codex\"\n[filesystem]\ndeny_read = [\"@/home\"]\nwrite = [\"@/ws\"]\n",
        // `@` is the lab's directory in a spec: npm's scope escaped.
        V.replace('@', "\\u0040")
    );
    let lab = Lab::new(
        |t| {
            let exe = |p: &Path, body: &str| {
                std::fs::create_dir_all(p.parent().unwrap()).unwrap();
                std::fs::write(p, body).unwrap();
                std::fs::set_permissions(p, std::fs::Permissions::from_mode(0o755)).unwrap();
            };
            std::fs::set_permissions(t, std::fs::Permissions::from_mode(0o755)).unwrap();
            let package = t.join(V);
            exe(
                &package.join("bin/codex"),
                &format!(
                    "#!/bin/sh\nd=\"$(dirname \"$0\")/..\"\n\"$d/codex-path/rg\"\ncat '{}/home/secret' 2>&1\ntouch \"$d/codex-path/planted\" 2>&1\nexit 0\n",
                    t.display()
                ),
            );
            exe(&package.join("codex-path/rg"), "#!/bin/sh\necho RG-RAN\n");
            std::fs::write(t.join("home/secret"), SECRET).unwrap();
            std::fs::create_dir_all(t.join("ws")).unwrap();
        },
        &spec,
    );
    let check = |out: Output, who: &str| {
        let all = text(&out);
        assert_eq!(out.status.code(), Some(0), "{who}: {all}");
        assert!(
            all.contains("RG-RAN"),
            "{who}: the bundled tool did not run: {all}"
        );
        assert!(
            !all.contains(SECRET),
            "{who}: the hidden root showed: {all}"
        );
        assert!(all.contains("No such file"), "{who}: {all}");
        assert!(all.contains("Read-only file system"), "{who}: {all}");
        assert!(!lab.path(V).join("codex-path/planted").exists(), "{who}");
    };
    let record = lab.path("seal/seal.json").display().to_string();
    let sealc = env!("CARGO_BIN_EXE_sealc");
    let argv = [sealc, "exec", record.as_str(), "--", "codex"];
    // This process (root in CI; otherwise an unprivileged caller itself).
    check(
        common::as_user(None, &argv)
            .current_dir(&lab.t)
            .output()
            .unwrap(),
        "this process",
    );
    // Started by root, also an unprivileged caller (the secret is
    // readable to it on the host: only the seal hides it).
    if rustix::process::geteuid().is_root() && common::ready_as_root_with(&[common::USER]) {
        check(
            common::as_user(Some(common::USER), &argv)
                .current_dir(&lab.t)
                .output()
                .unwrap(),
            common::USER,
        );
    }
}
