//! The compiled profile of the example specs carries every meaning of the
//! contract, read rule by rule (the SBPL evaluator will prove the same
//! decisions; these tests pin the emission discipline).

mod common;

use common::*;

/// The spec's seatbelt profile (a Linux spec's too: its macOS seal).
fn compile(path: &str) -> (sealc::Compiled, String) {
    let src = std::fs::read_to_string(root().join(path)).unwrap();
    let macos = Some(sealc::spec::Platform::Macos);
    let c = sealc::compile_for("s.toml", &src, &flags_for(&src), macos, &demo_host()).unwrap();
    let sb = String::from_utf8(c.files["seal.sb"].clone()).unwrap();
    (c, sb)
}

fn rules(sb: &str) -> Vec<&str> {
    sb.lines().filter(|l| l.starts_with('(')).collect()
}

/// The rule `rule` (one filter), or the first rule of the same action and
/// operations that holds that filter among others (a root and its macOS
/// alias share one rule: its filters are OR'd).
fn index_of(sb: &str, rule: &str) -> usize {
    let (head, filter) = match rule.find(" (") {
        Some(i) => (&rule[..i], &rule[i + 1..rule.len() - 1]),
        None => (rule, ""),
    };
    rules(sb)
        .iter()
        .position(|l| {
            *l == rule
                || (!filter.is_empty()
                    && l.starts_with(&format!("{head} ("))
                    && l[head.len()..].contains(&format!(" {filter}"))
                    && (l.contains(&format!(" {filter} ")) || l.ends_with(&format!(" {filter})"))))
        })
        .unwrap_or_else(|| panic!("missing rule {rule}\n{sb}"))
}

#[test]
fn emission_discipline_holds_for_every_spec() {
    let mut specs = toml_files(&root().join("specs"));
    specs.extend(toml_files(&root().join("tests/golden")));
    for spec in specs {
        let rel = spec
            .strip_prefix(root())
            .unwrap()
            .to_string_lossy()
            .into_owned();
        let (_, sb) = compile(&rel);
        let lines: Vec<&str> = sb.lines().collect();
        let rules = rules(&sb);
        assert_eq!(rules[0], "(version 1)", "{rel}");
        assert!(
            rules[1] == "(allow default)" || rules[1] == "(deny default)",
            "{rel}"
        );
        // Unfiltered rules after the default: fork, and the IPC section's
        // denials of operations no other rule names (one rule decides them
        // under either reading of precedence).
        let unfiltered_ipc = ["(deny appleevent-send)", "(deny user-preference-write)"];
        for r in &rules[2..] {
            let ops_only = !r.contains(" (");
            assert!(
                !ops_only || *r == "(allow process-fork)" || unfiltered_ipc.contains(r),
                "{rel}: unfiltered rule after the default: {r}"
            );
            for u in unfiltered_ipc {
                let op = u.trim_start_matches("(deny ").trim_end_matches(')');
                assert!(
                    *r == u || !r.contains(op),
                    "{rel}: {r} names {op}, which the IPC section denies unfiltered"
                );
            }
            assert!(
                !r.contains("#\"") && !r.contains("(regex"),
                "{rel}: regex emitted: {r}"
            );
        }
        // Every rule after the default has a comment right above it.
        for (i, l) in lines.iter().enumerate() {
            if l.starts_with('(') && !l.starts_with("(version") && !l.ends_with("default)") {
                assert!(
                    lines[i - 1].starts_with("; "),
                    "{rel}: no comment above {l}"
                );
            }
        }
        // Every string literal is under 1025 bytes.
        for lit in sb.split('"').skip(1).step_by(2) {
            assert!(lit.len() < 1025, "{rel}: literal of {} bytes", lit.len());
        }
    }
}

#[test]
fn probe_rep_denies_every_spelling_of_every_denied_root() {
    let (c, sb) = compile("specs/probe-rep.toml");
    for p in [
        "/var/folders/xy/T",
        "/private/var/folders/xy/T",
        "/tmp",
        "/private/tmp",
        "/Users/agent",
        "/Users/agent/.codex",
        "/Users/agent/src/skills",
        "/Users/agent/.claude/skills",
        "/Users/agent/skill-store/skills",
    ] {
        index_of(&sb, &format!("(deny file-read* (subpath \"{p}\"))"));
    }
    // Laundering: link and clone denied on every denied and stat-only root, in every spelling.
    for root in c.ir.roots.iter().filter(|r| r.kind.is_denied()) {
        for s in &root.spellings {
            index_of(
                &sb,
                &format!("(deny file-link file-clone (subpath \"{s}\"))"),
            );
        }
    }
    // Issue 11, item 6: a workspace under a denied root links and clones its
    // own files (after the deny of the root that holds it).
    let tmp = index_of(
        &sb,
        "(deny file-link file-clone (subpath \"/Users/agent\"))",
    );
    let ws = index_of(
        &sb,
        "(allow file-link file-clone (subpath \"/Users/agent/runs/r1/ws\"))",
    );
    assert!(tmp < ws);
    // Stat-only: data denied, metadata allowed, after it.
    let d = index_of(
        &sb,
        "(deny file-read* (subpath \"/Users/agent/runs/r1/dispatch\"))",
    );
    let m = index_of(
        &sb,
        "(allow file-read-metadata (subpath \"/Users/agent/runs/r1/dispatch\"))",
    );
    assert!(d < m);
    // Re-allowed write roots come after the deny of the root that contains them.
    let home = index_of(&sb, "(deny file-read* (subpath \"/Users/agent\"))");
    let ws = index_of(
        &sb,
        "(allow file-read* (subpath \"/Users/agent/runs/r1/ws\"))",
    );
    assert!(home < ws);
    // Ancestors of re-allowed roots are stat-able.
    assert!(sb.contains("(literal \"/Users/agent/runs\")"));
    // Launcher chain re-allowed by literal path, both entries.
    index_of(
        &sb,
        "(allow file-read* (literal \"/Users/agent/.local/bin/codex\"))",
    );
    index_of(&sb, "(allow file-read* (literal \"/Users/agent/.local/lib/node_modules/@openai/codex/bin/codex.js\"))");
    // Writes: an allow-list; only the four devices.
    let all = index_of(&sb, "(deny file-write* (subpath \"/\"))");
    for dev in ["/dev/null", "/dev/zero", "/dev/dtracehelper", "/dev/tty"] {
        assert!(index_of(&sb, &format!("(allow file-write* (literal \"{dev}\"))")) > all);
    }
    assert!(!sb.contains("(allow file-write* (subpath \"/dev\"))"));
    // Network: only the loopback proxy.
    let deny = index_of(
        &sb,
        "(deny network* (remote ip \"*:*\") (local ip \"*:*\") (subpath \"/\"))",
    );
    let proxy = index_of(
        &sb,
        "(allow network-outbound (remote tcp \"localhost:8080\"))",
    );
    assert!(deny < proxy);
}

#[test]
fn a_denied_root_inside_a_write_root_cannot_be_written_or_moved() {
    let (_, sb) = compile("tests/golden/nested-roots.toml");
    let d = "/Users/agent/runs/r1/ws/.harness/secrets";
    let allow = index_of(
        &sb,
        "(allow file-write* (subpath \"/Users/agent/runs/r1/ws\"))",
    );
    let deny = index_of(&sb, &format!("(deny file-write* (subpath \"{d}\"))"));
    assert!(allow < deny);
    let unlink = index_of(
        &sb,
        "(deny file-write-unlink (literal \"/Users/agent/runs/r1/ws\") (literal \"/Users/agent/runs/r1/ws/.harness\"))",
    );
    assert!(unlink > deny);
    // And it stays unreadable although the write root re-allows reads around it.
    let ws = index_of(
        &sb,
        "(allow file-read* (subpath \"/Users/agent/runs/r1/ws\"))",
    );
    let sec = index_of(&sb, &format!("(deny file-read* (subpath \"{d}\"))"));
    assert!(ws < sec);
}

#[test]
fn nested_allow_and_deny_follow_depth() {
    let (_, sb) = compile("tests/golden/nested-roots.toml");
    let outer = index_of(&sb, "(deny file-read* (subpath \"/Users/agent\"))");
    let pub_ = index_of(&sb, "(allow file-read* (subpath \"/Users/agent/pub\"))");
    let private = index_of(
        &sb,
        "(deny file-read* (subpath \"/Users/agent/pub/private\"))",
    );
    assert!(outer < pub_ && pub_ < private);
    // Inside the stat-only root: the denied root loses metadata too, the open one keeps it.
    let meta = index_of(
        &sb,
        "(allow file-read-metadata (subpath \"/Users/agent/runs/r1/dispatch\"))",
    );
    let hidden = index_of(
        &sb,
        "(deny file-read-metadata (subpath \"/Users/agent/runs/r1/dispatch/hidden\"))",
    );
    assert!(meta < hidden);
}

#[test]
fn deny_default_starts_from_the_documented_base() {
    let (_, sb) = compile("specs/deny-default.toml");
    assert!(sb.contains("(deny default)"));
    index_of(&sb, "(allow file-read* (subpath \"/usr\"))");
    index_of(&sb, "(allow file-read* (subpath \"/opt/job/src\"))");
    let src = index_of(&sb, "(allow file-read* (subpath \"/opt/job/src\"))");
    let git = index_of(&sb, "(deny file-read* (subpath \"/opt/job/src/.git\"))");
    assert!(src < git);
    index_of(
        &sb,
        "(deny network* (remote ip \"*:*\") (local ip \"*:*\") (subpath \"/\"))",
    );
}

/// Compile spec text for macOS on the demo host and read its profile back.
/// The model borrows the profile's text and the arena its lists are read
/// into, which this test process keeps.
fn evaluator(src: &str) -> sealc::sbpl::eval::Model<'static> {
    let c = sealc::compile("s.toml", src, &Vec::new(), &demo_host()).unwrap();
    let sb: &'static str = String::from_utf8(c.files["seal.sb"].clone())
        .unwrap()
        .leak();
    let arena = Box::leak(Box::new(sealc::sbpl::parse::Arena::new()));
    let profile = sealc::sbpl::parse::parse(sb, arena).unwrap();
    sealc::sbpl::eval::Model::new(&profile, &Default::default())
}

fn says(
    m: &sealc::sbpl::eval::Model<'_>,
    op: &str,
    path: &str,
) -> Option<sealc::sbpl::eval::Action> {
    m.query(op, &sealc::sbpl::eval::Target::Path(path.into()))
        .action()
}

/// Issue 11, item 1: `mode = "open"` means open under `deny-default` too
/// (the Linux seal has no network namespace then), IP and unix sockets.
#[test]
fn open_network_is_open_under_deny_default() {
    use sealc::sbpl::eval::{Action, Target};
    let m = evaluator("version = 1\nname = \"o\"\n[target]\nbase = \"deny-default\"\n[network]\nmode = \"open\"\n");
    for (host, port) in [("93.184.216.34", 443), ("127.0.0.1", 22), ("::1", 8080)] {
        let t = Target::Remote {
            host: host.into(),
            port,
        };
        assert_eq!(
            m.query("network-outbound", &t).action(),
            Some(Action::Allow),
            "{host}"
        );
    }
    assert_eq!(
        says(&m, "network-outbound", "/private/var/run/mDNSResponder"),
        Some(Action::Allow)
    );
}

/// Issue 11, item 2: the deny-default base never overrides what the user
/// denied at the same depth (a literal of the base against a `deny_read`).
#[test]
fn the_deny_default_base_gives_way_to_the_user() {
    use sealc::sbpl::eval::Action::{Allow, Deny};
    let spec = |deny: &str| {
        format!("version = 1\nname = \"d\"\n[target]\nbase = \"deny-default\"\n[filesystem]\ndeny_read = [{deny}]\nwrite = [\"/Users/agent/runs/r1/ws\"]\n[network]\nmode = \"none\"\n")
    };
    let m = evaluator(&spec("\"/\""));
    assert_eq!(says(&m, "file-read-data", "/"), Some(Deny));
    // The write root's ancestors stay stat-able, `/` included.
    assert_eq!(says(&m, "file-read-metadata", "/"), Some(Allow));
    assert_eq!(
        says(&m, "file-read-data", "/Users/agent/runs/r1/ws/f"),
        Some(Allow)
    );
    let m = evaluator(&spec("\"/dev/null\""));
    assert_eq!(says(&m, "file-read-data", "/dev/null"), Some(Deny));
    assert_eq!(says(&m, "file-read-data", "/dev/zero"), Some(Allow));
    let m = evaluator(&spec("\"/tmp\", \"/private/tmp\", \"/dev\""));
    for p in ["/tmp", "/private/tmp", "/dev"] {
        assert_eq!(says(&m, "file-read-metadata", p), Some(Deny), "{p}");
    }
    // A deeper entry of the base still decides below it.
    assert_eq!(says(&m, "file-read-data", "/dev/null"), Some(Allow));
    // Without the user's deny the base reads them.
    let m = evaluator(&spec(""));
    assert_eq!(says(&m, "file-read-data", "/"), Some(Allow));
    assert_eq!(says(&m, "file-read-data", "/dev/null"), Some(Allow));
    assert_eq!(says(&m, "file-read-metadata", "/tmp"), Some(Allow));
}

/// Issue 11, item 4: a write root that is a file is a fixed name on both
/// platforms (on Linux a mount point): an `[[assert]]` that it can be
/// unlinked fails to compile for either, the opposite one compiles.
#[test]
fn a_write_root_file_cannot_be_unlinked_on_either_platform() {
    let host = demo_host().file("/Users/agent/runs/r1/ws/state.json", b"{}");
    for platform in [sealc::spec::Platform::Macos, sealc::spec::Platform::Linux] {
        for (verdict, compiles) in [("allow", false), ("deny", true)] {
            let src = format!(
                "version = 1\nname = \"f\"\n[filesystem]\nwrite = [\"/Users/agent/runs/r1/ws\", \"/Users/agent/runs/r1/ws/state.json\"]\n[[assert]]\n{verdict} = \"file-write-unlink\"\npaths = [\"/Users/agent/runs/r1/ws/state.json\"]\n[[assert]]\nallow = \"file-write-unlink\"\npaths = [\"/Users/agent/runs/r1/ws/other.json\"]\n"
            );
            let c = sealc::compile_for("f.toml", &src, &Vec::new(), Some(platform), &host);
            assert_eq!(c.is_ok(), compiles, "{platform:?} {verdict}: {:?}", c.err());
        }
    }
}
