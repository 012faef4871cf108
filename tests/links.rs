//! Roots reached through symlinks, where seatbelt checks the path the
//! kernel resolved (issue 24): a denied root absent when compiled, with a
//! link on the way, is denied where it will appear, and a later run refuses
//! to start once the link leads elsewhere.

use sealc::facts::{FakeHost, VarFlags};
use sealc::sbpl::eval::{Action, Model, Target, Verdict};

/// A macOS-shaped host: `/tmp` → `private/tmp`, and `/tmp/c/link` → `real`.
fn host() -> FakeHost {
    FakeHost::new()
        .env("HOME", "/Users/agent")
        .link("/tmp", "private/tmp")
        .dir("/private/tmp/c/real")
        .link("/private/tmp/c/link", "real")
}

const SPEC: &str = r#"version = 1
name = "through-a-link"

[target]
platform = "macos"

[filesystem]
deny_read = ["/tmp/c/link/secret"]
metadata_only = ["/tmp/c/link/stat-only"]
"#;

fn decide(sb: &str, op: &str, path: &str) -> Action {
    let profile = sealc::sbpl::parse::parse(sb).unwrap();
    match Model::new(&profile, &Default::default()).query(op, &Target::Path(path.into())) {
        Verdict::Decided(d) => d.action,
        other => panic!("{op} {path}: {other:?}"),
    }
}

#[test]
fn an_absent_denied_root_through_a_link_is_denied_where_it_will_appear() {
    let c = sealc::compile("s.toml", SPEC, &VarFlags::new(), &host()).unwrap();
    assert_eq!(
        c.facts
            .absent_denied
            .get("/tmp/c/link/secret")
            .map(String::as_str),
        Some("/private/tmp/c/real/secret")
    );
    let sb = String::from_utf8(c.files["seal.sb"].clone()).unwrap();
    // Every spelling: as written, its alias, and where the links lead.
    for p in [
        "/tmp/c/link/secret/key",
        "/private/tmp/c/link/secret/key",
        "/private/tmp/c/real/secret/key",
    ] {
        assert_eq!(decide(&sb, "file-read-data", p), Action::Deny, "{p}\n{sb}");
    }
    // The stat-only root: its contents unreadable at the resolved path too.
    assert_eq!(
        decide(&sb, "file-read-data", "/private/tmp/c/real/stat-only/f"),
        Action::Deny
    );
    assert!(
        sb.contains("(where it would appear, through a link)"),
        "the comment says why the spelling is there\n{sb}"
    );
    // Outside the roots, reads stay allowed (allow-default base).
    assert_eq!(
        decide(&sb, "file-read-data", "/private/tmp/c/real/other"),
        Action::Allow
    );
}

#[test]
fn a_root_absent_without_a_link_on_the_way_records_nothing_extra() {
    let spec = SPEC.replace("/tmp/c/link/", "/private/tmp/c/real/");
    let c = sealc::compile("s.toml", &spec, &VarFlags::new(), &host()).unwrap();
    assert!(
        c.facts.absent_denied.is_empty(),
        "{:?}",
        c.facts.absent_denied
    );
}

#[test]
fn a_link_that_leads_elsewhere_at_run_time_is_drift() {
    let c = sealc::compile("s.toml", SPEC, &VarFlags::new(), &host()).unwrap();
    let moved = FakeHost::new()
        .env("HOME", "/Users/agent")
        .link("/tmp", "private/tmp")
        .dir("/private/tmp/c/real")
        .dir("/private/tmp/c/elsewhere")
        .link("/private/tmp/c/link", "elsewhere");
    let drift = sealc::drift::host_drift(&c.record, &moved);
    assert!(
        drift
            .iter()
            .any(|d| d.message.contains("/tmp/c/link/secret")
                && d.message.contains("/private/tmp/c/elsewhere/secret")),
        "{:?}",
        drift.iter().map(|d| &d.message).collect::<Vec<_>>()
    );
    // Unchanged, no drift.
    assert!(sealc::drift::host_drift(&c.record, &host()).is_empty());
}

/// The same on this machine's own file system, through the CLI: real links,
/// the profile the binary writes, and drift read from the real host once a
/// racing process points the link elsewhere.
#[test]
fn on_a_real_tree_the_compiled_profile_denies_the_resolved_place() {
    let t = tempfile::tempdir_in(env!("CARGO_TARGET_TMPDIR")).unwrap();
    let top = std::fs::canonicalize(t.path()).unwrap();
    std::fs::create_dir(top.join("real")).unwrap();
    std::fs::create_dir(top.join("elsewhere")).unwrap();
    std::os::unix::fs::symlink("real", top.join("link")).unwrap();
    let top = top.to_str().unwrap();
    let spec = format!(
        "version = 1\nname = \"real-links\"\n\n[target]\nplatform = \"macos\"\n\n[filesystem]\ndeny_read = [\"{top}/link/secret\"]\n"
    );
    std::fs::write(format!("{top}/seal.toml"), &spec).unwrap();
    let out = std::process::Command::new(env!("CARGO_BIN_EXE_sealc"))
        .args([
            "compile",
            &format!("{top}/seal.toml"),
            "--out",
            &format!("{top}/seal"),
            "-q",
        ])
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let sb = std::fs::read_to_string(format!("{top}/seal/seal.sb")).unwrap();
    let resolved = format!("{top}/real/secret");
    assert!(
        sb.contains(&format!("(deny file-read* (subpath \"{resolved}\"))")),
        "{sb}"
    );
    assert_eq!(
        decide(&sb, "file-read-data", &format!("{resolved}/key")),
        Action::Deny
    );
    // Recompiled here, with the link unchanged: no drift.
    let c = sealc::compile(
        "seal.toml",
        &spec,
        &VarFlags::new(),
        &sealc::facts::RealHost,
    )
    .unwrap();
    assert!(sealc::drift::host_drift(&c.record, &sealc::facts::RealHost).is_empty());
    // A host process points the link elsewhere before the run.
    std::fs::remove_file(format!("{top}/link")).unwrap();
    std::os::unix::fs::symlink("elsewhere", format!("{top}/link")).unwrap();
    let drift = sealc::drift::host_drift(&c.record, &sealc::facts::RealHost);
    assert!(
        drift
            .iter()
            .any(|d| d.message.contains(&format!("{top}/elsewhere/secret"))),
        "{:?}",
        drift.iter().map(|d| &d.message).collect::<Vec<_>>()
    );
}
