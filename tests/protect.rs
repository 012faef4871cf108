//! Issue 22, "delayed escape through files the operator runs later":
//! `[filesystem] protect` keeps paths inside the write roots read-only, so
//! the agent cannot plant a git hook that runs at the operator's next
//! commit, a `core.fsmonitor` that runs at the next `git status`, or the
//! config, instructions and skills the next agent reads (`.codex`,
//! `.agents`).
//!
//! First what the seals say, read back (the mount model of
//! `seal.bwrap.json`, the SBPL evaluator of `seal.sb`, `[[assert]]`s), the
//! facts and the validation; then the attacks, tried for real under
//! bubblewrap in a git checkout the test makes, by a root caller and by the
//! unprivileged `sealc-test` (through `setpriv`). Without bubblewrap, root,
//! setpriv, git or that user, the real runs are ignored, unless
//! `SEALC_REQUIRE_BWRAP=1`, under which they fail.

mod common;

use std::collections::BTreeMap;
use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};

use common::{text, Caller, Verdict, USER};
use sealc::facts::{FakeHost, PathKind};
use sealc::mounts::{Access, Model, Move, Op};
use sealc::sbpl::eval::{Action, Model as Sbpl, Target, Verdict as Decision};

const PROTECT: &str = r#"protect = [".git/hooks", ".git/config", ".codex", ".agents"]"#;

/// A checkout `/t/w` (its `.git` with hooks, config, objects), a plain
/// directory `/t/p`, and a worktree `/t/wt` whose `.git` is a file.
fn host() -> FakeHost {
    FakeHost::new()
        .file("/usr/bin/bwrap", b"bwrap")
        .file("/usr/bin/env", b"env")
        .file("/t/w/.git/hooks/pre-commit.sample", b"#!/bin/sh\n")
        .file("/t/w/.git/config", b"[core]\n")
        .file("/t/w/.git/HEAD", b"ref: refs/heads/main\n")
        .file("/t/w/.git/objects/ab/cd", b"x")
        .file("/t/w/src.rs", b"fn main() {}\n")
        .dir("/t/p")
        .file("/t/wt/.git", b"gitdir: /t/main/.git/worktrees/wt\n")
        .dir("/t/out")
}

fn spec(platform: &str, extra: &str) -> String {
    format!(
        "version = 1\nname = \"protect\"\n[target]\nplatform = \"{platform}\"\n[filesystem]\nwrite = [\"/t/w\", \"/t/p\", \"/t/wt\"]\n{PROTECT}\n[network]\nmode = \"none\"\n{extra}"
    )
}

fn compile(platform: &str, extra: &str) -> sealc::Compiled {
    let src = spec(platform, extra);
    sealc::compile("p.toml", &src, &Vec::new(), &host())
        .unwrap_or_else(|d| panic!("{}", sealc::diag::render(&d, "p.toml", &src)))
}

#[track_caller]
fn check(a: sealc::mounts::Answer, allowed: bool, why: &str) {
    assert_eq!(a.allowed, allowed, "{}", a.why);
    assert!(a.why.contains(why), "{why:?} not in {:?}", a.why);
}

/// The facts: where each protected path is, or what holds its place.
#[test]
fn facts_place_each_protected_path_or_its_stand_in() {
    let c = compile("linux", "");
    let f = c.facts();
    assert_eq!(f.realpaths["/t/w/.git/hooks"], "/t/w/.git/hooks");
    assert_eq!(f.kinds["/t/w/.git/hooks"], PathKind::Dir);
    assert_eq!(f.kinds["/t/w/.git/config"], PathKind::File);
    let at = |p: &str| (f.stand_ins[p].at.as_str(), f.stand_ins[p].kind);
    // Absent: the first missing component, made by `sealc exec`.
    assert_eq!(at("/t/w/.codex"), ("/t/w/.codex", PathKind::Dir));
    assert_eq!(at("/t/p/.git/hooks"), ("/t/p/.git", PathKind::Dir));
    assert_eq!(at("/t/p/.git/config"), ("/t/p/.git", PathKind::Dir));
    // A worktree's `.git` file: protected in its place.
    assert_eq!(at("/t/wt/.git/hooks"), ("/t/wt/.git", PathKind::File));
    let bwrap: serde_json::Value = serde_json::from_slice(&c.files["seal.bwrap.json"]).unwrap();
    assert_eq!(
        bwrap["stand_ins"],
        serde_json::json!([
            "/t/p/.agents",
            "/t/p/.codex",
            "/t/p/.git",
            "/t/w/.agents",
            "/t/w/.codex",
            "/t/wt/.agents",
            "/t/wt/.codex"
        ])
    );
    let steps: Vec<String> = bwrap["steps"]
        .as_array()
        .unwrap()
        .iter()
        .map(|s| {
            s["args"]
                .as_array()
                .unwrap()
                .iter()
                .map(|a| a.as_str().unwrap())
                .collect::<Vec<_>>()
                .join(" ")
        })
        .collect();
    let at = |s: &str| {
        steps
            .iter()
            .position(|x| x == s)
            .unwrap_or_else(|| panic!("no step `{s}` in {steps:#?}"))
    };
    // The write root, then the pin, then what it protects (depth order).
    assert!(at("--bind /t/w /t/w") < at("--bind /t/w/.git /t/w/.git"));
    assert!(at("--bind /t/w/.git /t/w/.git") < at("--ro-bind /t/w/.git/hooks /t/w/.git/hooks"));
    at("--ro-bind /t/w/.git/config /t/w/.git/config");
    at("--ro-bind /t/wt/.git /t/wt/.git");
    at("--ro-bind /t/p/.git /t/p/.git");
    let why = bwrap["steps"][at("--ro-bind /t/wt/.git /t/wt/.git")]["why"]
        .as_str()
        .unwrap();
    assert!(why.contains("protected in its place"), "{why}");
    assert_eq!(
        c.ir.pins
            .iter()
            .map(|p| p.path.as_str())
            .collect::<Vec<_>>(),
        ["/t/w/.git"]
    );
}

/// Linux: read-only inside a read-write bind (EROFS), the pin and the
/// protected paths mount points (EBUSY), nothing renamed or linked across
/// them (EXDEV); the rest of `.git` works as before.
#[test]
fn the_mount_model_keeps_protected_paths_read_only_and_their_directories_fixed() {
    let c = compile("linux", "");
    let m = Model::from_artifact(&c.files["seal.bwrap.json"]).unwrap();
    // The hooks: nothing made, changed, removed; the directory stays.
    check(
        m.path(Access::Write, "/t/w/.git/hooks/pre-commit.sample"),
        false,
        "--ro-bind /t/w/.git/hooks /t/w/.git/hooks",
    );
    check(
        m.name(Op::Create, "/t/w/.git/hooks/pre-commit"),
        false,
        "(EROFS)",
    );
    check(
        m.name(Op::Unlink, "/t/w/.git/hooks/pre-commit.sample"),
        false,
        "(EROFS)",
    );
    check(m.name(Op::Rmdir, "/t/w/.git/hooks"), false, "(EBUSY)");
    check(
        m.moved(Move::Rename, "/t/w/.git/hooks", "/t/w/.git/h2"),
        false,
        "(EBUSY)",
    );
    // The config: not written, replaced by a rename, or linked elsewhere.
    check(
        m.path(Access::Write, "/t/w/.git/config"),
        false,
        "--ro-bind /t/w/.git/config",
    );
    check(
        m.moved(Move::Rename, "/t/w/.git/config.lock", "/t/w/.git/config"),
        false,
        "",
    );
    check(m.name(Op::Unlink, "/t/w/.git/config"), false, "(EBUSY)");
    check(
        m.moved(Move::Link, "/t/w/.git/config", "/t/w/x"),
        false,
        "(EXDEV)",
    );
    check(m.name(Op::Link, "/t/w/.git/config"), false, "(EXDEV)");
    // `.git` is a fixed name: `mv .git .git2 && mkdir -p .git/hooks` fails.
    check(
        m.moved(Move::Rename, "/t/w/.git", "/t/w/.git2"),
        false,
        "(EBUSY)",
    );
    check(m.name(Op::Rmdir, "/t/w/.git"), false, "(EBUSY)");
    // The rest of `.git` works: objects, refs, the index.
    check(
        m.name(Op::Create, "/t/w/.git/objects/ab/ef"),
        true,
        "--bind /t/w/.git /t/w/.git",
    );
    check(
        m.moved(Move::Rename, "/t/w/.git/index.lock", "/t/w/.git/index"),
        true,
        "one writable mount",
    );
    check(
        m.path(Access::Write, "/t/w/.git/HEAD"),
        true,
        "--bind /t/w/.git",
    );
    // Out of `.git` into the checkout: another mount.
    check(
        m.moved(Move::Rename, "/t/w/.git/HEAD", "/t/w/HEAD"),
        false,
        "(EXDEV)",
    );
    check(
        m.path(Access::Write, "/t/w/src.rs"),
        true,
        "--bind /t/w /t/w",
    );
    // A stand-in: nothing can be made in it, and it stays.
    check(m.name(Op::Create, "/t/p/.git/hooks"), false, "(EROFS)");
    check(
        m.name(Op::Create, "/t/p/.codex/config.toml"),
        false,
        "(EROFS)",
    );
    check(m.name(Op::Create, "/t/p/.git"), false, "(EEXIST)");
    check(m.name(Op::Rmdir, "/t/p/.agents"), false, "(EBUSY)");
    // The worktree's pointer file cannot be rewritten.
    check(
        m.path(Access::Write, "/t/wt/.git"),
        false,
        "--ro-bind /t/wt/.git",
    );
    check(m.name(Op::Unlink, "/t/wt/.git"), false, "(EBUSY)");
    // Reads are the write root's.
    check(
        m.path(Access::ReadData, "/t/w/.git/config"),
        true,
        "--ro-bind /t/w/.git/config",
    );
}

fn decided(m: &Sbpl, op: &str, p: &str) -> bool {
    match m.query(op, &Target::Path(p.to_string())) {
        Decision::Decided(d) => d.action == Action::Allow,
        v => panic!("{op} {p}: {v:?}"),
    }
}

/// macOS: the same meaning, read back by the SBPL evaluator (decided under
/// both readings of seatbelt's precedence, or `query` says otherwise).
#[test]
fn the_sbpl_evaluator_denies_writes_names_and_links_of_protected_paths() {
    let c = compile("macos", "");
    let sb = String::from_utf8(c.files["seal.sb"].clone()).unwrap();
    let arena = sealc::sbpl::parse::Arena::new();
    let profile = sealc::sbpl::parse::parse(&sb, &arena).unwrap();
    let m = Sbpl::new(&profile, &BTreeMap::new());
    let denied = [
        ("file-write-data", "/t/w/.git/hooks/pre-commit.sample"),
        ("file-write-create", "/t/w/.git/hooks/pre-commit"),
        ("file-write-unlink", "/t/w/.git/hooks/pre-commit.sample"),
        ("file-write-mode", "/t/w/.git/hooks/pre-commit.sample"),
        ("file-write-data", "/t/w/.git/config"),
        ("file-write-unlink", "/t/w/.git/config"),
        ("file-link", "/t/w/.git/config"),
        ("file-clone", "/t/w/.git/config"),
        // The directories on the way are fixed names.
        ("file-write-unlink", "/t/w/.git"),
        ("file-write-unlink", "/t/w/.git/hooks"),
        // Stand-ins and the worktree pointer.
        ("file-write-create", "/t/p/.git/hooks"),
        ("file-write-unlink", "/t/p/.git"),
        ("file-write-create", "/t/w/.codex/config.toml"),
        ("file-write-data", "/t/wt/.git"),
        ("file-write-unlink", "/t/wt/.git"),
    ];
    for (op, p) in denied {
        assert!(!decided(&m, op, p), "{op} {p} is allowed");
    }
    let allowed = [
        ("file-read-data", "/t/w/.git/config"),
        ("file-read-data", "/t/w/.git/hooks/pre-commit.sample"),
        ("file-write-data", "/t/w/.git/index"),
        ("file-write-create", "/t/w/.git/objects/ab/ef"),
        ("file-write-unlink", "/t/w/.git/index.lock"),
        ("file-write-data", "/t/w/src.rs"),
        ("file-write-create", "/t/p/notes.md"),
    ];
    for (op, p) in allowed {
        assert!(decided(&m, op, p), "{op} {p} is denied");
    }
}

/// `[[assert]]`s prove protected paths on the compiled bytes, on both
/// platforms; a false one stops the compile.
#[test]
fn asserts_prove_protected_paths_on_both_platforms() {
    let holds = "[[assert]]\ndeny = \"file-write-data\"\npaths = [\"/t/w/.git/hooks/pre-commit\", \"/t/w/.git/config\"]\n[[assert]]\ndeny = \"file-write-unlink\"\npaths = [\"/t/w/.git\"]\n[[assert]]\nallow = \"file-write-data\"\npaths = [\"/t/w/.git/index\"]\n";
    for platform in ["linux", "macos"] {
        compile(platform, holds);
        let src = spec(
            platform,
            "[[assert]]\nallow = \"file-write-create\"\npaths = [\"/t/w/.git/hooks/pre-commit\"]\n",
        );
        let err = sealc::compile("p.toml", &src, &Vec::new(), &host()).unwrap_err();
        assert!(
            err.0.iter().any(|d| d.code == "sealc::assert::failed"),
            "{platform}: {err:?}"
        );
    }
}

fn codes(src: &str, h: &FakeHost) -> Vec<&'static str> {
    match sealc::compile("p.toml", src, &Vec::new(), h) {
        Ok(c) => c.warnings.0.iter().map(|d| d.code).collect(),
        Err(d) => d.0.iter().map(|d| d.code).collect(),
    }
}

/// Validation: outside every write root, a write root or one that holds
/// one, a symlink, the Codex home; duplicates collapse; the order of the
/// entries does not show; a name with no directory write root is fine.
#[test]
fn protected_paths_are_validated_with_stable_codes() {
    let base = "version = 1\nname = \"v\"\n[target]\nplatform = \"linux\"\n[network]\nmode = \"none\"\n[filesystem]\n";
    let with = |fs: &str| format!("{base}{fs}\n");
    let h = host();
    assert!(
        codes(&with("write = [\"/t/w\"]\nprotect = [\"/t/out/x\"]"), &h)
            .contains(&"sealc::protect::outside")
    );
    assert!(codes(
        &with("write = [\"/t/w\", \"/t/w/.git/objects\"]\nprotect = [\"/t/w/.git\"]"),
        &h
    )
    .contains(&"sealc::protect::write-root"));
    assert!(codes(&with("write = [\"/t/w\"]\nprotect = [\"/t/w\"]"), &h)
        .contains(&"sealc::protect::write-root"));
    assert!(codes(&with("write = [\"/t/w\"]\nprotect = [\"../x\"]"), &h)
        .contains(&"sealc::path::invalid"));
    let linked = host().dir("/t/real").link("/t/w/.agents", "/t/real");
    assert!(codes(
        &with("write = [\"/t/w\"]\nprotect = [\".agents/skills\"]"),
        &linked
    )
    .contains(&"sealc::protect::link"));
    assert!(codes(
        &with("write = [\"/t/w\"]\nprotect = [\".agents\"]"),
        &linked
    )
    .contains(&"sealc::protect::link"));
    // A link above the write root is not on the way below it.
    let above = host().dir("/t/real2/ws").link("/t/lw", "/t/real2/ws");
    assert!(!codes(
        &with("write = [\"/t/lw\"]\nprotect = [\".git/hooks\"]"),
        &above
    )
    .contains(&"sealc::protect::link"));
    // In a denied root: advice, and no rule.
    let c = sealc::compile(
        "p.toml",
        &with("write = [\"/t/w\"]\ndeny_read = [\"/t/w/.git/objects\"]\nprotect = [\"/t/w/.git/objects/ab\"]"),
        &Vec::new(),
        &h,
    )
    .unwrap();
    assert!(c
        .warnings
        .0
        .iter()
        .any(|d| d.code == "sealc::protect::denied"));
    assert!(c.ir.protected().is_empty());
    // A write root inside a denied one re-allows: protected paths in it
    // are kept (the starter's scratch home lies in the denied home).
    let c = sealc::compile(
        "p.toml",
        &with("deny_read = [\"/t\"]\nwrite = [\"/t/w\"]\nprotect = [\".git/hooks\"]"),
        &Vec::new(),
        &h,
    )
    .unwrap();
    assert_eq!(c.ir.protected().len(), 1, "{:#?}", c.warnings);
    // A file write root: names do not apply below it.
    let file = host().file("/t/f", b"f");
    let c = sealc::compile(
        "p.toml",
        &with(&format!("write = [\"/t/f\", \"/t/w\"]\n{PROTECT}")),
        &Vec::new(),
        &file,
    )
    .unwrap();
    assert!(c
        .ir
        .protected()
        .iter()
        .all(|r| !r.path.starts_with("/t/f/")));
    // Duplicates and order.
    let a = sealc::compile(
        "p.toml",
        &with("write = [\"/t/w\", \"/t/p\"]\nprotect = [\".git/hooks\", \"/t/w/.git/hooks\", \".git/config\", \".git/hooks\"]"),
        &Vec::new(),
        &h,
    )
    .unwrap();
    let b = sealc::compile(
        "p.toml",
        &with("write = [\"/t/p\", \"/t/w\"]\nprotect = [\".git/config\", \"/t/w/.git/hooks\", \".git/hooks\"]"),
        &Vec::new(),
        &h,
    )
    .unwrap();
    assert_eq!(a.files["seal.bwrap.json"], b.files["seal.bwrap.json"]);
    assert_eq!(
        a.ir.roots_of(sealc::ir::RootKind::Protect).count(),
        4,
        "{:#?}",
        a.ir.roots
    );
}

/// A Codex seal's config is protected too: `CODEX_HOME` and the
/// directories above it below the write root are pins (made by `sealc
/// exec`); a Codex home that lies in a protected path is refused.
#[test]
fn the_codex_config_is_protected_and_the_codex_home_cannot_be_a_protected_path() {
    let codex = "[env]\nset = { HOME = \"/t/p\", CODEX_HOME = \"/t/p/h/codex\" }\n[codex]\nworkspace = \"/t/w\"\n";
    let c = compile("linux", codex);
    let pins: Vec<(&str, bool)> =
        c.ir.pins
            .iter()
            .map(|p| (p.path.as_str(), p.made))
            .collect();
    assert_eq!(
        pins,
        [
            ("/t/p/h", true),
            ("/t/p/h/codex", true),
            ("/t/w/.git", false)
        ]
    );
    let bwrap = String::from_utf8(c.files["seal.bwrap.json"].clone()).unwrap();
    assert!(bwrap.contains("\"/t/p/h/codex/config.toml\""), "{bwrap}");
    let m = Model::from_artifact(&c.files["seal.bwrap.json"]).unwrap();
    check(
        m.path(Access::Write, "/t/p/h/codex/config.toml"),
        false,
        "--ro-bind /t/p/h/codex/config.toml",
    );
    check(
        m.name(Op::Create, "/t/p/h/codex/sessions"),
        true,
        "--bind /t/p/h/codex",
    );
    check(
        m.moved(Move::Rename, "/t/p/h/codex", "/t/p/h/old"),
        false,
        "(EBUSY)",
    );
    let mac = compile("macos", codex);
    let sb = String::from_utf8(mac.files["seal.sb"].clone()).unwrap();
    let arena = sealc::sbpl::parse::Arena::new();
    let m = Sbpl::new(
        &sealc::sbpl::parse::parse(&sb, &arena).unwrap(),
        &BTreeMap::new(),
    );
    assert!(!decided(&m, "file-write-data", "/t/p/h/codex/config.toml"));
    assert!(!decided(&m, "file-write-unlink", "/t/p/h/codex"));
    assert!(decided(&m, "file-write-create", "/t/p/h/codex/sessions"));
    // `.codex` protected, and CODEX_HOME named `.codex` below a write root.
    let clash = spec(
        "linux",
        "[env]\nset = { CODEX_HOME = \"/t/p/.codex\" }\n[codex]\nworkspace = \"/t/w\"\n",
    );
    assert!(codes(&clash, &host()).contains(&"sealc::protect::codex-home"));
}

/// A protected `.git/config` that sends git into the work tree (husky's
/// `core.hooksPath = .husky`, an included config) would run what the agent
/// writes: compile warns, naming the path to protect as well.
#[test]
fn a_git_config_that_points_into_the_write_root_is_warned_about() {
    let config = "[core]\n\thooksPath = .husky\n\tfsmonitor = false\n[include]\n\tpath = \"../.gitconfig.local\" # local\n[includeIf \"gitdir:/t/\"]\n\tpath = /etc/gitconfig.d/x\n";
    let h = host().file("/t/w/.git/config", config.as_bytes());
    let src = spec("linux", "");
    let c = sealc::compile("p.toml", &src, &Vec::new(), &h).unwrap();
    let warned: Vec<&str> = c
        .warnings
        .0
        .iter()
        .filter(|d| d.code == "sealc::protect::git-config")
        .map(|d| d.message.as_str())
        .collect();
    assert_eq!(warned.len(), 2, "{warned:#?}");
    assert!(
        warned[0].contains("`core.hooksPath` to `.husky`"),
        "{warned:?}"
    );
    assert!(
        warned[1].contains("`include.path` to `../.gitconfig.local`"),
        "{warned:?}"
    );
    // Protected as well: nothing to say.
    let src = src.replace(
        PROTECT,
        r#"protect = [".git/hooks", ".git/config", ".husky", ".gitconfig.local"]"#,
    );
    let c = sealc::compile("p.toml", &src, &Vec::new(), &h).unwrap();
    assert!(
        c.warnings
            .0
            .iter()
            .all(|d| d.code != "sealc::protect::git-config"),
        "{:#?}",
        c.warnings
    );
}

/// Drift: a stand-in's place taken by a directory since compiling is used
/// (a host process made it); by a file, or a link on the way, it is drift.
#[test]
fn a_stand_in_made_since_is_used_and_anything_else_is_drift() {
    let c = compile("linux", "");
    let r = &c.record;
    assert!(sealc::drift::host_drift(r, &host()).is_empty());
    let made = host().dir("/t/p/.git/hooks");
    assert!(
        sealc::drift::host_drift(r, &made).is_empty(),
        "{:?}",
        sealc::drift::host_drift(r, &made)
    );
    let file = host().file("/t/p/.codex", b"x");
    let d = sealc::drift::host_drift(r, &file);
    assert!(
        d.iter().any(|d| d.message.contains("`/t/p/.codex`")),
        "{d:?}"
    );
    let link = host().dir("/t/elsewhere").link("/t/p/.git", "/t/elsewhere");
    assert!(!sealc::drift::host_drift(r, &link).is_empty());
    // `verify --live` says the same, stand-in by stand-in.
    let live = |h: &FakeHost| {
        let mut rep = sealc::verify::Report::default();
        sealc::verify::live_facts(r, h, &mut rep);
        rep.to_text()
    };
    let text = live(&host());
    assert!(
        text.contains("live stand-in /t/p/.git/hooks") && !text.contains("drift"),
        "{text}"
    );
    let text = live(&made);
    assert!(!text.contains("drift "), "{text}");
    let text = live(&file);
    assert!(
        text.lines()
            .any(|l| l.starts_with("drift") && l.contains("/t/p/.codex")),
        "{text}"
    );
}

// ---------------------------------------------------------------------------
// For real, under bubblewrap.

/// Everything the real runs need (git, and what every root battery needs),
/// or the test fails saying why (`common::not_run`).
fn ready() -> bool {
    let git = Command::new("git")
        .arg("--version")
        .stdout(Stdio::null())
        .status()
        .is_ok_and(|s| s.success());
    if !git {
        assert!(
            std::env::var_os("SEALC_REQUIRE_BWRAP").is_none_or(|v| v != "1"),
            "SEALC_REQUIRE_BWRAP=1, but: git is missing"
        );
        common::not_run("git is missing");
    }
    common::ready_as_root_with(&[USER])
}

/// chown -R, no link followed.
fn chown_tree(p: &Path, uid: u32, gid: u32) {
    std::os::unix::fs::lchown(p, Some(uid), Some(gid)).unwrap();
    if std::fs::symlink_metadata(p).unwrap().is_dir() {
        for e in std::fs::read_dir(p).unwrap() {
            chown_tree(&e.unwrap().path(), uid, gid);
        }
    }
}

/// Git on the host, as the operator: whoever owns the checkout. Never
/// above the lab (the lab lies in this crate's own checkout).
fn git(dir: &Path, args: &[&str]) -> Output {
    Command::new("git")
        .arg("-C")
        .arg(dir)
        .args([
            "-c",
            "safe.directory=*",
            "-c",
            "user.name=op",
            "-c",
            "user.email=op@example.com",
        ])
        .args(args)
        .env_clear()
        .env("PATH", "/usr/bin:/bin")
        .env("HOME", dir)
        .env("GIT_CEILING_DIRECTORIES", dir.parent().unwrap())
        .output()
        .unwrap()
}

struct Lab {
    _tmp: tempfile::TempDir,
    t: PathBuf,
    who: Caller,
}

impl Lab {
    /// `ws`, a git checkout with one commit; `plain`, an empty directory;
    /// both write roots with the default protect list. `marks` is where a
    /// hook or fsmonitor the agent planted would leave a trace when the
    /// operator runs git after the run (not a write root).
    fn new(who: Caller) -> Lab {
        let tmp = tempfile::tempdir_in(env!("CARGO_TARGET_TMPDIR")).unwrap();
        let t = tmp.path().canonicalize().unwrap();
        std::fs::set_permissions(&t, std::fs::Permissions::from_mode(0o755)).unwrap();
        for d in ["ws", "plain", "marks"] {
            std::fs::create_dir(t.join(d)).unwrap();
        }
        std::fs::set_permissions(t.join("marks"), std::fs::Permissions::from_mode(0o777)).unwrap();
        let ws = t.join("ws");
        assert!(git(&ws, &["init", "-q", "-b", "main"]).status.success());
        std::fs::write(ws.join("README"), "hello\n").unwrap();
        assert!(git(&ws, &["add", "README"]).status.success());
        assert!(git(&ws, &["commit", "-q", "-m", "first"]).status.success());
        if who == Caller::User {
            for d in ["ws", "plain"] {
                let (uid, gid) = common::ids(USER);
                chown_tree(&t.join(d), uid, gid);
            }
        }
        let spec = format!(
            "version = 1\nname = \"protect\"\n[target]\nplatform = \"linux\"\n[filesystem]\nwrite = [\"{t}/ws\", \"{t}/plain\"]\n{PROTECT}\n[network]\nmode = \"none\"\n[env]\npass = [\"PATH\"]\n",
            t = t.display()
        );
        std::fs::write(t.join("spec.toml"), spec).unwrap();
        let o = Command::new(env!("CARGO_BIN_EXE_sealc"))
            .current_dir(&t)
            .env_clear()
            .env("PATH", "/usr/bin:/bin")
            .args(["compile", "spec.toml", "--out", "seal"])
            .output()
            .unwrap();
        assert_eq!(o.status.code(), Some(0), "compile: {}", text(&o));
        Lab { _tmp: tmp, t, who }
    }

    fn p(&self, rel: &str) -> PathBuf {
        self.t.join(rel)
    }

    /// `sealc exec` of the seal, as the caller, `sh -c script` in `ws`.
    fn run(&self, script: &str) -> Output {
        let record = self.p("seal/seal.json").display().to_string();
        let ws = self.p("ws").display().to_string();
        let argv = [
            env!("CARGO_BIN_EXE_sealc"),
            "exec",
            &record,
            "--",
            "/bin/sh",
            "-c",
            script,
            "sh",
            &ws,
        ];
        common::as_user(self.who.user(), &argv)
            .current_dir(&self.t)
            .output()
            .unwrap()
    }
}

fn listing(dir: &Path) -> Vec<String> {
    let mut v: Vec<String> = std::fs::read_dir(dir)
        .map(|d| {
            d.flatten()
                .map(|e| e.file_name().to_string_lossy().into_owned())
                .collect()
        })
        .unwrap_or_default();
    v.sort();
    v
}

/// The agent's attempts, each printing a word when it worked: the hook,
/// the rename of `.git` and a new `.git/hooks`, removing the hooks, a hard
/// link to the config, `core.fsmonitor` and `core.hooksPath` by `git
/// config` and by appending, making `.git`, `.codex` and `.agents` in a
/// plain directory (and `git init` there). Git itself still commits.
const ATTACK: &str = r#"cd "$1"; M="${1%/ws}/marks"; export GIT_CEILING_DIRECTORIES="${1%/ws}"
G="git -c user.name=agent -c user.email=agent@example.com"
printf '#!/bin/sh\ntouch %s/hook\n' "$M" > .git/hooks/pre-commit 2>/dev/null && chmod +x .git/hooks/pre-commit && echo PLANTED-HOOK
mv .git .git2 2>/dev/null && mkdir -p .git/hooks && echo MOVED-GIT
mv .git/hooks .git/h2 2>/dev/null && echo MOVED-HOOKS
rm -rf .git/hooks 2>/dev/null; test -f .git/hooks/pre-commit.sample && echo HOOKS-STAY
ln .git/config cfg 2>/dev/null && echo LINKED-CONFIG
$G config core.fsmonitor "touch $M/fsmonitor" 2>/dev/null && echo SET-FSMONITOR
$G config core.hooksPath "$1/evil-hooks" 2>/dev/null && echo SET-HOOKSPATH
printf '[core]\n\tfsmonitor = touch %s/fsmonitor\n' "$M" >> .git/config 2>/dev/null && echo APPENDED-CONFIG
cp .git/config cfg.new 2>/dev/null; mv cfg.new .git/config 2>/dev/null && echo REPLACED-CONFIG
$G commit -q --allow-empty -m inside && echo COMMITTED
echo more > notes.md && $G add notes.md && $G commit -q -m notes && echo COMMITTED-FILE
cd ../plain
mkdir -p .git/hooks 2>/dev/null && echo MADE-GIT
git init -q . 2>/dev/null && echo GIT-INIT
mkdir -p .codex 2>/dev/null; echo 'model = "x"' > .codex/config.toml 2>/dev/null && echo MADE-CODEX
mkdir -p .agents/skills/evil 2>/dev/null && echo MADE-AGENTS
rmdir .git .codex .agents 2>/dev/null && echo REMOVED-STAND-INS
ls -A
exit 0
"#;

#[test]
#[cfg_attr(
    any(
        sealc_no_bwrap,
        sealc_cannot_become = "sealc-test",
        sealc_no_tool = "git"
    ),
    ignore = "needs root, bubblewrap, setpriv, git and the user sealc-test"
)]
fn an_agent_cannot_plant_what_the_operator_runs_later() {
    if !ready() {
        return;
    }
    let mut v = Verdict::default();
    for who in common::CALLERS {
        let lab = Lab::new(who);
        let ws = lab.p("ws");
        let config = std::fs::read(ws.join(".git/config")).unwrap();
        let hooks = listing(&ws.join(".git/hooks"));
        let o = lab.run(ATTACK);
        let out = String::from_utf8_lossy(&o.stdout).into_owned();
        let said = text(&o);
        v.check(o.status.code() == Some(0), || {
            format!("[{who:?}] exit {:?}\n{said}", o.status.code())
        });
        for word in [
            "PLANTED-HOOK",
            "MOVED-GIT",
            "MOVED-HOOKS",
            "LINKED-CONFIG",
            "SET-FSMONITOR",
            "SET-HOOKSPATH",
            "APPENDED-CONFIG",
            "REPLACED-CONFIG",
            "MADE-GIT",
            "GIT-INIT",
            "MADE-CODEX",
            "MADE-AGENTS",
            "REMOVED-STAND-INS",
        ] {
            v.check(!out.contains(word), || {
                format!("[{who:?}] {word}: the agent did it\n{said}")
            });
        }
        for word in ["HOOKS-STAY", "COMMITTED\n", "COMMITTED-FILE"] {
            v.check(out.contains(word), || {
                format!("[{who:?}] not {word:?}\n{said}")
            });
        }
        // Inside, the stand-ins were there (and empty).
        v.check(out.contains(".agents\n.codex\n.git\n"), || {
            format!("[{who:?}] the plain directory inside: {out}")
        });
        // After the run: the checkout's hooks and config as they were, the
        // agent's commits there, no stand-in left in the plain directory.
        v.check(
            std::fs::read(ws.join(".git/config")).unwrap() == config,
            || format!("[{who:?}] .git/config changed"),
        );
        v.check(listing(&ws.join(".git/hooks")) == hooks, || {
            format!(
                "[{who:?}] .git/hooks: {:?}",
                listing(&ws.join(".git/hooks"))
            )
        });
        v.check(listing(&lab.p("plain")).is_empty(), || {
            format!(
                "[{who:?}] left in the plain directory: {:?}",
                listing(&lab.p("plain"))
            )
        });
        let log = String::from_utf8_lossy(&git(&ws, &["log", "--format=%s"]).stdout).into_owned();
        v.check(log == "notes\ninside\nfirst\n", || {
            format!("[{who:?}] log: {log:?}")
        });
        // The operator's git runs nothing the agent planted.
        let commit = git(
            &ws,
            &["commit", "-q", "--allow-empty", "-m", "by the operator"],
        );
        v.check(commit.status.success(), || {
            format!("[{who:?}] the operator's commit: {}", text(&commit))
        });
        let status = git(&ws, &["status", "--short"]);
        v.check(status.status.success(), || {
            format!("[{who:?}] the operator's status: {}", text(&status))
        });
        v.check(listing(&lab.p("marks")).is_empty(), || {
            format!(
                "[{who:?}] ran at the operator's git: {:?}",
                listing(&lab.p("marks"))
            )
        });
    }
    v.done();
}

/// The same hooks, without `protect`: the attack works, so the test above
/// fails for the right reason on a seal without it.
#[test]
#[cfg_attr(
    any(
        sealc_no_bwrap,
        sealc_cannot_become = "sealc-test",
        sealc_no_tool = "git"
    ),
    ignore = "needs root, bubblewrap, setpriv, git and the user sealc-test"
)]
fn without_protect_the_planted_hook_runs_at_the_operators_commit() {
    if !ready() {
        return;
    }
    let lab = Lab::new(Caller::Root);
    let spec = std::fs::read_to_string(lab.p("spec.toml")).unwrap();
    std::fs::write(lab.p("spec.toml"), spec.replace(PROTECT, "")).unwrap();
    let o = Command::new(env!("CARGO_BIN_EXE_sealc"))
        .current_dir(&lab.t)
        .env_clear()
        .env("PATH", "/usr/bin:/bin")
        .args(["compile", "spec.toml", "--out", "seal", "--force"])
        .output()
        .unwrap();
    assert_eq!(o.status.code(), Some(0), "{}", text(&o));
    // Compile, which sees the host, advises protecting the checkout's `.git`.
    assert!(
        text(&o).contains("sealc::protect::git") && text(&o).contains("holds a `.git`"),
        "{}",
        text(&o)
    );
    let plant = ATTACK.lines().take(3).collect::<Vec<_>>().join("\n");
    let o = lab.run(&plant);
    let out = String::from_utf8_lossy(&o.stdout);
    assert!(out.contains("PLANTED-HOOK"), "{}", text(&o));
    let commit = git(&lab.p("ws"), &["commit", "-q", "--allow-empty", "-m", "op"]);
    assert!(commit.status.success(), "{}", text(&commit));
    assert_eq!(listing(&lab.p("marks")), ["hook"]);
}

/// `sealc explain` names the step or rule that keeps a protected path
/// read-only, on both platforms, and `exec --dry-run` lists the stand-ins.
#[test]
fn explain_and_dry_run_name_what_protects() {
    let tmp = tempfile::tempdir_in(env!("CARGO_TARGET_TMPDIR")).unwrap();
    let t = tmp.path().canonicalize().unwrap();
    std::fs::create_dir_all(t.join("ws/.git/hooks")).unwrap();
    std::fs::write(t.join("ws/.git/config"), "[core]\n").unwrap();
    let spec = format!(
        "version = 1\nname = \"x\"\n[filesystem]\nwrite = [\"{t}/ws\"]\n{PROTECT}\n[network]\nmode = \"none\"\n",
        t = t.display()
    );
    std::fs::write(t.join("spec.toml"), spec).unwrap();
    let sealc = |args: &[&str]| {
        Command::new(env!("CARGO_BIN_EXE_sealc"))
            .current_dir(&t)
            .env_clear()
            .env("PATH", "/usr/bin:/bin")
            .args(args)
            .output()
            .unwrap()
    };
    let hook = format!("{}/ws/.git/hooks/pre-commit", t.display());
    for (platform, artifact, says) in [
        ("linux", "linux/seal.bwrap.json", "--ro-bind"),
        ("macos", "macos/seal.sb", "(deny file-write* (subpath"),
    ] {
        let o = sealc(&[
            "compile",
            "spec.toml",
            "--platform",
            platform,
            "--out",
            platform,
        ]);
        assert_eq!(o.status.code(), Some(0), "{}", text(&o));
        let o = sealc(&["explain", artifact, "--op", "file-write-create", &hook]);
        let out = text(&o);
        assert!(
            out.contains("deny") && out.contains(says),
            "{platform}: {out}"
        );
        assert!(out.contains(".git/hooks"), "{platform}: {out}");
    }
    let o = sealc(&["exec", "linux/seal.json", "--dry-run", "--", "true"]);
    assert_eq!(o.status.code(), Some(0), "{}", text(&o));
    let plan: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    let ws = format!("{}/ws", t.display());
    assert_eq!(
        plan["stand_ins"],
        serde_json::json!([format!("{ws}/.agents"), format!("{ws}/.codex")])
    );
    // A dry run makes nothing.
    assert!(!t.join("ws/.codex").exists());
}

/// A second name of a protected file, made in the write root by a run
/// before it was protected, would let the agent write it: nothing starts.
#[test]
#[cfg_attr(
    any(
        sealc_no_bwrap,
        sealc_cannot_become = "sealc-test",
        sealc_no_tool = "git"
    ),
    ignore = "needs root, bubblewrap, setpriv, git and the user sealc-test"
)]
fn a_protected_file_with_a_second_name_in_a_write_root_is_refused_at_exec() {
    if !ready() {
        return;
    }
    for who in common::CALLERS {
        let lab = Lab::new(who);
        std::fs::hard_link(lab.p("ws/.git/config"), lab.p("ws/notes.txt")).unwrap();
        let o = lab.run("echo STARTED");
        assert_eq!(o.status.code(), Some(125), "[{who:?}] {}", text(&o));
        assert!(!String::from_utf8_lossy(&o.stdout).contains("STARTED"));
        assert!(
            text(&o).contains("another hard link"),
            "[{who:?}] {}",
            text(&o)
        );
        // Nothing was made for the run.
        assert!(listing(&lab.p("plain")).is_empty());
    }
}

/// A protected path with a symlink on the way, inside the write root, is
/// refused when compiling: the agent could point it elsewhere.
#[test]
fn a_symlink_on_the_way_to_a_protected_path_is_refused_at_compile() {
    let tmp = tempfile::tempdir_in(env!("CARGO_TARGET_TMPDIR")).unwrap();
    let t = tmp.path().canonicalize().unwrap();
    std::fs::create_dir_all(t.join("ws/real-git/hooks")).unwrap();
    std::os::unix::fs::symlink("real-git", t.join("ws/.git")).unwrap();
    let spec = format!(
        "version = 1\nname = \"l\"\n[target]\nplatform = \"linux\"\n[filesystem]\nwrite = [\"{t}/ws\"]\nprotect = [\".git/hooks\"]\n",
        t = t.display()
    );
    std::fs::write(t.join("spec.toml"), spec).unwrap();
    let o = Command::new(env!("CARGO_BIN_EXE_sealc"))
        .current_dir(&t)
        .env_clear()
        .env("PATH", "/usr/bin:/bin")
        .args(["compile", "spec.toml", "--out", "seal"])
        .output()
        .unwrap();
    assert_eq!(o.status.code(), Some(2), "{}", text(&o));
    assert!(text(&o).contains("sealc::protect::link"), "{}", text(&o));
    assert!(!t.join("seal").exists());
}
