//! Roots reached through symlinks, where seatbelt checks the path the
//! kernel resolved (issue 24): a denied root absent when compiled, with a
//! link on the way, is denied where it will appear, and a later run refuses
//! to start once the link leads elsewhere.

mod common;

use common::Sealc;
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
    let arena = sealc::sbpl::parse::Arena::new();
    let profile = sealc::sbpl::parse::parse(sb, &arena).unwrap();
    let verdict = Model::new(&profile, &Default::default()).query(op, &Target::Path(path.into()));
    match verdict {
        Verdict::Decided(d) => d.action,
        other => panic!("{op} {path}: {other:?}"),
    }
}

#[test]
fn an_absent_denied_root_through_a_link_is_denied_where_it_will_appear() {
    let c = sealc::compile("s.toml", SPEC, &VarFlags::new(), &host()).unwrap();
    assert_eq!(
        c.facts()
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
        c.facts().absent_denied.is_empty(),
        "{:?}",
        c.facts().absent_denied
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

/// Compile `spec` on `host`, write its artifacts to a new directory, and
/// return `sealc explain`'s JSON answer for each (op, path) asked of it.
fn explained(spec: &str, host: &FakeHost, asked: &[(&str, &str)]) -> Vec<serde_json::Value> {
    let c = sealc::compile("s.toml", spec, &VarFlags::new(), host).unwrap();
    let dir = tempfile::tempdir().unwrap();
    for (name, bytes) in &c.files {
        let at = dir.path().join(name);
        std::fs::create_dir_all(at.parent().unwrap()).unwrap();
        std::fs::write(at, bytes).unwrap();
    }
    let sb = dir.path().join("seal.sb");
    asked
        .iter()
        .map(|(op, path)| {
            let out = Sealc::new()
                .args(["explain", sb.to_str().unwrap(), "--op", op, path])
                .args(["--format", "json"])
                .run();
            serde_json::from_str(&out.stdout).unwrap_or_else(|e| panic!("{e}: {}", out.stdout))
        })
        .collect()
}

/// Issue 24, finding 1: a link the record knows under `/tmp` is the same
/// link under `/private/tmp`; both spellings of a question reach what it
/// leads to, which the profile denies.
#[test]
fn explain_follows_a_recorded_link_in_every_spelling() {
    let host = FakeHost::new()
        .env("HOME", "/Users/agent")
        .link("/tmp", "private/tmp")
        .dir("/private/tmp/t/my dir/pub/priv")
        .link("/private/tmp/t/ln-notes.md", "my dir/pub/priv");
    let spec = r#"version = 1
name = "spellings"
[target]
platform = "macos"
[filesystem]
deny_read = ["/tmp/t/my dir"]
allow_read = ["/tmp/t/ln-notes.md"]
"#;
    let said = explained(
        spec,
        &host,
        &[
            ("file-link", "/tmp/t/ln-notes.md/out"),
            ("file-link", "/private/tmp/t/ln-notes.md/out"),
            ("file-read-data", "/private/tmp/t/ln-notes.md/x"),
        ],
    );
    for v in &said {
        assert_eq!(
            v["checked"],
            format!(
                "/private/tmp/t/my dir/pub/priv/{}",
                v["path"].as_str().unwrap().rsplit('/').next().unwrap()
            ),
            "{v}"
        );
    }
    // Through the link, reading is re-allowed (the allow_read root's
    // realpath); linking out of the denied tree is not.
    assert_eq!(said[0]["answer"], "deny", "{}", said[0]);
    assert_eq!(said[1]["answer"], "deny", "{}", said[1]);
    assert_eq!(said[2]["answer"], "allow", "{}", said[2]);
}

/// Issue 24, finding 2: a write root absent when compiled, below a
/// symlinked directory, is not itself a link: unlinking or linking it is
/// checked where it is made, where the profile denies both.
#[test]
fn a_root_reached_through_a_link_is_not_taken_for_a_link() {
    let host = FakeHost::new()
        .env("HOME", "/Users/agent")
        .link("/tmp", "private/tmp")
        .dir("/private/tmp/c/real")
        .link("/private/tmp/c/link", "real");
    let spec = r#"version = 1
name = "below-a-link"
[target]
platform = "macos"
[filesystem]
write = ["/tmp/c/link/out"]
"#;
    let said = explained(
        spec,
        &host,
        &[
            ("file-write-unlink", "/tmp/c/link/out"),
            ("file-link", "/tmp/c/link/out"),
            ("file-write-data", "/tmp/c/link/out/f"),
        ],
    );
    for v in &said {
        let notes = v["notes"].to_string();
        assert!(!notes.contains("itself a recorded symlink"), "{v}");
        assert!(
            v["checked"]
                .as_str()
                .unwrap()
                .starts_with("/private/tmp/c/real/out"),
            "{v}"
        );
    }
    assert_eq!(said[0]["answer"], "deny", "{}", said[0]);
    assert_eq!(said[1]["answer"], "deny", "{}", said[1]);
    assert_eq!(said[2]["answer"], "allow", "{}", said[2]);
}

/// A root that is itself a link: data follows it, unlinking acts on the
/// name; an operation that may do either is answered only when both agree.
#[test]
fn a_root_that_is_a_link_is_checked_where_the_operation_lands() {
    let host = FakeHost::new()
        .env("HOME", "/Users/agent")
        .link("/tmp", "private/tmp")
        .dir("/private/tmp/w/store/skills")
        .link("/private/tmp/w/skills", "store/skills");
    let spec = r#"version = 1
name = "a-link"
[target]
platform = "macos"
[filesystem]
write = ["/tmp/w"]
deny_read = ["/tmp/w/skills"]
"#;
    let said = explained(
        spec,
        &host,
        &[
            ("file-read-data", "/tmp/w/skills"),
            ("file-write-unlink", "/tmp/w/skills"),
            ("file-read-metadata", "/tmp/w/skills"),
        ],
    );
    assert_eq!(
        said[0]["checked"], "/private/tmp/w/store/skills",
        "{}",
        said[0]
    );
    assert_eq!(said[0]["answer"], "deny", "{}", said[0]);
    assert_eq!(said[1]["checked"], "/private/tmp/w/skills", "{}", said[1]);
    let notes = said[1]["notes"].to_string();
    assert!(notes.contains("itself a recorded symlink"), "{}", said[1]);
    // Metadata: `stat` follows the link, `lstat` does not; the profile
    // allows reading the metadata of both (allow-default base), so the
    // answer stands, and says it was checked at both.
    assert!(
        said[2]["notes"]
            .to_string()
            .contains("the answer is the same at"),
        "{}",
        said[2]
    );
}

/// The kernel's resolution, done here on the fake host: each component
/// looked at, a symlink on the way followed (relative to its directory),
/// the final one only when `follow`; an absent component taken as a name.
/// `None` when a file is on the way (`ENOTDIR`: nothing can be there).
fn kernel(host: &FakeHost, path: &str, follow: bool) -> Option<String> {
    use sealc::facts::Host;
    let mut pending: Vec<String> = path
        .split('/')
        .filter(|c| !c.is_empty())
        .rev()
        .map(str::to_string)
        .collect();
    let mut cur: Vec<String> = Vec::new();
    let mut hops = 0;
    while let Some(c) = pending.pop() {
        match c.as_str() {
            "." => continue,
            ".." => {
                cur.pop();
                continue;
            }
            _ => {}
        }
        if cur.is_empty() {
        } else if host.lstat(&format!("/{}", cur.join("/"))) == Some(sealc::facts::Kind::File) {
            return None;
        }
        cur.push(c);
        let here = format!("/{}", cur.join("/"));
        if pending.is_empty() && !follow {
            break;
        }
        if let Some(to) = host.read_link(&here) {
            hops += 1;
            assert!(hops < 40, "a loop at {here}");
            cur.pop();
            if to.starts_with('/') {
                cur.clear();
            }
            pending.extend(
                to.split('/')
                    .filter(|c| !c.is_empty())
                    .rev()
                    .map(str::to_string),
            );
        }
    }
    Some(format!("/{}", cur.join("/")))
}

proptest::proptest! {
    #![proptest_config(proptest::prelude::ProptestConfig {
        cases: 256,
        failure_persistence: None,
        ..Default::default()
    })]

    /// Random trees with links on the way to roots and to the paths asked
    /// (dangling ones, links to files, both `/tmp` spellings): the record's
    /// links resolve every question under a root as the kernel does, for an
    /// operation that follows the last name and for one that acts on it.
    #[test]
    fn recorded_links_resolve_as_the_kernel_does(
        links in proptest::collection::vec((0usize..4, 0usize..7, proptest::bool::ANY), 0..4),
        roots in proptest::collection::vec((0usize..3, 0usize..10, proptest::bool::ANY, proptest::bool::ANY), 1..5),
    ) {
        // Directories and a file under /private/tmp/p; links named l0..l3
        // in the first two directories, to one of the places (a directory,
        // the file, or nothing), relative or absolute.
        let dirs = ["/private/tmp/p", "/private/tmp/p/a", "/private/tmp/p/a/b", "/private/tmp/p/c"];
        let places = [
            "/private/tmp/p/a", "/private/tmp/p/a/b", "/private/tmp/p/c",
            "/private/tmp/p/f.txt", "/private/tmp/p/gone", "/tmp/p/c", "/private/tmp/p",
        ];
        let mut host = FakeHost::new().env("HOME", "/Users/agent").link("/tmp", "private/tmp");
        for d in dirs {
            host = host.dir(d);
        }
        host = host.file("/private/tmp/p/f.txt", b"x");
        let mut names = Vec::new();
        for (i, (at, to, relative)) in links.iter().enumerate() {
            let dir = dirs[at % 2 * 3];
            let name = format!("{dir}/l{i}");
            let target = places[*to];
            let text = match target.strip_prefix(&format!("{dir}/")) {
                Some(rel) if *relative => rel.to_string(),
                _ => target.to_string(),
            };
            // A link must not point at itself or above itself.
            if target.starts_with(&name) || name.starts_with(&format!("{target}/")) {
                continue;
            }
            host = host.link(&name, &text);
            names.push(name);
        }
        let mut candidates: Vec<String> = dirs.iter().map(|d| format!("{d}/new")).collect();
        candidates.extend(names.iter().cloned());
        candidates.extend(names.iter().map(|n| format!("{n}/x")));
        candidates.push("/private/tmp/p/a/b".into());
        let mut spec = String::from("version = 1\nname = \"random-links\"\n[target]\nplatform = \"macos\"\n[filesystem]\n");
        let mut lists: [Vec<String>; 3] = Default::default();
        let mut asked = Vec::new();
        for (kind, pick, short, _) in &roots {
            let p = &candidates[pick % candidates.len()];
            let p = if *short { p.replacen("/private/tmp", "/tmp", 1) } else { p.clone() };
            if lists.iter().any(|l| l.contains(&p)) {
                continue;
            }
            lists[*kind].push(p.clone());
            asked.push(p);
        }
        for (key, list) in ["deny_read", "write", "allow_read"].iter().zip(&lists) {
            spec.push_str(&format!("{key} = {list:?}\n"));
        }
        let Ok(c) = sealc::compile("s.toml", &spec, &VarFlags::new(), &host) else {
            return Ok(());
        };
        let known = sealc::query::known_links(c.facts(), true);
        for (root, (_, _, _, flip)) in asked.iter().zip(&roots) {
            let spelled = if *flip {
                match root.strip_prefix("/tmp/") {
                    Some(rest) => format!("/private/tmp/{rest}"),
                    None => root.replacen("/private/tmp", "/tmp", 1),
                }
            } else {
                root.clone()
            };
            for q in [spelled.clone(), format!("{spelled}/inner")] {
                let (Some(follows), Some(names)) = (kernel(&host, &q, true), kernel(&host, &q, false)) else {
                    continue;
                };
                let r = sealc::query::resolve(&q, &known).unwrap();
                proptest::prop_assert!(r.unsure.is_none(), "{q}: {r:?}");
                let (followed, named) = match &r.last {
                    Some((name, to)) => (sealc::query::resolve(to, &known).unwrap().path, name.clone()),
                    None => (r.path.clone(), r.path.clone()),
                };
                proptest::prop_assert_eq!(
                    &followed, &follows,
                    "{} (follow)\nspec:\n{}\nlinks: {:?}", q, spec, known
                );
                proptest::prop_assert_eq!(
                    &named, &names,
                    "{} (the name)\nspec:\n{}\nlinks: {:?}", q, spec, known
                );
            }
        }
    }
}

/// Found by the property test above: a denied root behind a dangling link
/// is denied where the link leads, which may appear during a run; a
/// re-allowed root likewise re-allowed there; a write root behind one is
/// refused (it could not be made where the kernel would follow the link).
#[test]
fn a_dangling_link_on_the_way_is_followed_where_the_root_would_appear() {
    let host = FakeHost::new()
        .env("HOME", "/Users/agent")
        .link("/tmp", "private/tmp")
        .dir("/private/tmp/d")
        .link("/private/tmp/d/l", "gone");
    let spec = r#"version = 1
name = "dangling"
[target]
platform = "macos"
[filesystem]
deny_read = ["/tmp/d/l/secret", "/tmp/d/top"]
allow_read = ["/tmp/d/l/secret/pub"]
"#;
    let c = sealc::compile("s.toml", spec, &VarFlags::new(), &host).unwrap();
    assert_eq!(
        c.facts()
            .absent_denied
            .get("/tmp/d/l/secret")
            .map(String::as_str),
        Some("/private/tmp/d/gone/secret")
    );
    assert_eq!(
        c.facts()
            .absent_allowed
            .get("/tmp/d/l/secret/pub")
            .map(String::as_str),
        Some("/private/tmp/d/gone/secret/pub")
    );
    let sb = String::from_utf8(c.files["seal.sb"].clone()).unwrap();
    assert_eq!(
        decide(&sb, "file-read-data", "/private/tmp/d/gone/secret/k"),
        Action::Deny
    );
    assert_eq!(
        decide(&sb, "file-read-data", "/private/tmp/d/gone/secret/pub/k"),
        Action::Allow
    );

    let spec = r#"version = 1
name = "dangling-write"
[target]
platform = "macos"
[filesystem]
write = ["/tmp/d/l/out"]
"#;
    let err = sealc::compile("s.toml", spec, &VarFlags::new(), &host).unwrap_err();
    let d = err
        .0
        .iter()
        .find(|d| d.code == "sealc::root::dangling-link")
        .unwrap_or_else(|| panic!("{err:?}"));
    assert!(
        d.message.contains("`/private/tmp/d/gone/out`"),
        "{}",
        d.message
    );
    assert!(d.span.is_some());
}

/// A re-allowed root absent behind a link: once the link leads elsewhere,
/// the re-allow is not where seatbelt looks, and a run refuses to start.
#[test]
fn a_reallowed_root_whose_link_moved_is_drift() {
    let spec = r#"version = 1
name = "reallowed"
[target]
platform = "macos"
[filesystem]
deny_read = ["/tmp/c"]
allow_read = ["/tmp/c/link/pub"]
"#;
    let c = sealc::compile("s.toml", spec, &VarFlags::new(), &host()).unwrap();
    assert_eq!(
        c.facts()
            .absent_allowed
            .get("/tmp/c/link/pub")
            .map(String::as_str),
        Some("/private/tmp/c/real/pub")
    );
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
            .any(|d| d.message.contains("the re-allowed root was absent")
                && d.message.contains("/private/tmp/c/elsewhere/pub")),
        "{:?}",
        drift.iter().map(|d| &d.message).collect::<Vec<_>>()
    );
    assert!(sealc::drift::host_drift(&c.record, &host()).is_empty());
}
