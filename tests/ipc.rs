//! The macOS IPC surface (issue 24): `docs/ipc.md` is fresh from the table
//! in `src/ipc.rs`, and every profile sealc compiles, from every
//! shipped spec and golden spec under either base, denies each sealed entry
//! with a rule after the last allow of its operation.

mod common;

use common::*;
use sealc::ipc::{rule_text, Sealed, SEALED};
use sealc::sbpl::eval::{Action, Model, Target, Verdict};

#[test]
fn the_document_is_fresh() {
    let failures: Vec<String> =
        check_golden(&root().join("docs/ipc.md"), sealc::ipc::docs().as_bytes())
            .into_iter()
            .collect();
    assert_goldens(failures);
}

/// Every spec the project ships or tests with, for macOS.
fn profiles() -> Vec<(String, String)> {
    let mut specs = toml_files(&root().join("specs"));
    specs.extend(toml_files(&root().join("tests/golden")));
    specs
        .into_iter()
        .map(|p| {
            let src = std::fs::read_to_string(&p).unwrap();
            let c = sealc::compile_for(
                "s.toml",
                &src,
                &flags_for(&src),
                Some(sealc::spec::Platform::Macos),
                &demo_host(),
            )
            .unwrap_or_else(|e| panic!("{}: {e:?}", p.display()));
            let sb = String::from_utf8(c.files["seal.sb"].clone()).unwrap();
            (p.display().to_string(), sb)
        })
        .collect()
}

#[test]
fn every_profile_denies_each_sealed_entry_after_every_allow() {
    let all = profiles();
    assert!(all.len() >= 8, "{} specs", all.len());
    let mut bases = std::collections::BTreeSet::new();
    for (spec, sb) in &all {
        bases.insert(sb.contains("(deny default)"));
        let rules: Vec<&str> = sb.lines().filter(|l| l.starts_with('(')).collect();
        for e in SEALED {
            let want = rule_text(e.sealed);
            let at = rules
                .iter()
                .position(|r| *r == want)
                .unwrap_or_else(|| panic!("{spec}: no `{want}`\n{sb}"));
            let op = match e.sealed {
                Sealed::Service(_) => "mach-lookup",
                Sealed::Operation(op) => op,
                Sealed::Program(_) => "process-exec",
            };
            // No allow of the same operation after it.
            for later in &rules[at + 1..] {
                assert!(
                    !(later.starts_with("(allow ") && later.contains(op)),
                    "{spec}: `{later}` follows `{want}`"
                );
            }
        }
    }
    assert_eq!(bases.len(), 2, "both bases are among the specs");
}

#[test]
fn the_evaluator_reads_the_sealed_programs_as_denied() {
    for (spec, sb) in profiles() {
        let arena = sealc::sbpl::parse::Arena::new();
        let profile = sealc::sbpl::parse::parse(&sb, &arena).unwrap();
        let model = Model::new(&profile, &Default::default());
        for e in SEALED {
            let Sealed::Program(p) = e.sealed else {
                continue;
            };
            match model.query("process-exec", &Target::Path(p.into())) {
                Verdict::Decided(d) => assert_eq!(d.action, Action::Deny, "{spec}: {p}"),
                other => panic!("{spec}: {p}: {other:?}"),
            }
        }
    }
}

fn decide(model: &Model, op: &str, target: Target) -> Action {
    match model.query(op, &target) {
        Verdict::Decided(d) => d.action,
        other => panic!("{op} {target:?}: {other:?}"),
    }
}

fn name(kind: sealc::ops::NameKind, n: &str) -> Target {
    Target::Name {
        kind,
        name: n.into(),
    }
}

/// The evaluator's answer for every sealed entry, from every profile, is
/// the table's: a sealed service, operation or program is denied; what the
/// table leaves open for TLS is not.
#[test]
fn the_evaluator_answers_every_entry_as_the_table_says() {
    use sealc::ops::NameKind;
    for (spec, sb) in profiles() {
        let arena = sealc::sbpl::parse::Arena::new();
        let profile = sealc::sbpl::parse::parse(&sb, &arena).unwrap();
        let model = Model::new(&profile, &Default::default());
        for e in SEALED {
            let got = match e.sealed {
                Sealed::Service(n) => decide(&model, "mach-lookup", name(NameKind::MachGlobal, n)),
                Sealed::Operation(op) => {
                    let kind = NameKind::of(op).unwrap();
                    decide(&model, op, name(kind, "com.apple.Terminal"))
                }
                Sealed::Program(p) => decide(&model, "process-exec", Target::Path(p.into())),
            };
            assert_eq!(got, Action::Deny, "{spec}: {}", e.name());
        }
        // Certificate checks stay possible under either base.
        assert_eq!(
            decide(
                &model,
                "mach-lookup",
                name(NameKind::MachGlobal, "com.apple.trustd.agent")
            ),
            Action::Allow,
            "{spec}"
        );
        // A name in another namespace is not the service's: a local name,
        // a preference domain spelled like a service.
        if sb.contains("(deny default)") {
            assert_eq!(
                decide(
                    &model,
                    "mach-lookup",
                    name(NameKind::MachGlobal, "com.example.unlisted")
                ),
                Action::Deny,
                "{spec}: deny-default allows only the services it names"
            );
        }
    }
}

/// Each filter the evaluator reads for names, on a profile of its own.
#[test]
fn the_name_filters_match_in_their_own_namespace() {
    use sealc::ops::NameKind::*;
    let sb = r#"(version 1)
(deny default)
(allow mach-lookup (global-name "com.a") (global-name-regex #"^com\.b\.") (local-name "com.c"))
(allow mach-lookup (global-name-prefix "org.d."))
(allow appleevent-send (appleevent-destination "com.apple.Notes"))
(allow iokit-open (iokit-registry-entry-class "IOSurfaceRootUserClient") (iokit-user-client-class "RootDomainUserClient"))
(allow ipc-posix-shm-read-data (ipc-posix-name "apple.shm.notification_center"))
(allow ipc-posix-sem (ipc-posix-name-regex #"^/mp-"))
(allow sysctl-read (sysctl-name "hw.ncpu") (sysctl-name-prefix "kern.os"))
(allow user-preference-read (preference-domain "com.apple.Terminal"))
(allow signal (target same-sandbox))
"#;
    let arena = sealc::sbpl::parse::Arena::new();
    let model = Model::new(
        &sealc::sbpl::parse::parse(sb, &arena).unwrap(),
        &Default::default(),
    );
    let cases: &[(&str, sealc::ops::NameKind, &str, Action)] = &[
        ("mach-lookup", MachGlobal, "com.a", Action::Allow),
        ("mach-lookup", MachGlobal, "com.b.x", Action::Allow),
        ("mach-lookup", MachGlobal, "com.c", Action::Deny),
        ("mach-lookup", MachLocal, "com.c", Action::Allow),
        ("mach-lookup", MachGlobal, "org.d.e", Action::Allow),
        ("mach-lookup", MachGlobal, "org.dx", Action::Deny),
        (
            "appleevent-send",
            AppleEvent,
            "com.apple.Notes",
            Action::Allow,
        ),
        (
            "appleevent-send",
            AppleEvent,
            "com.apple.Terminal",
            Action::Deny,
        ),
        (
            "iokit-open",
            IokitClass,
            "IOSurfaceRootUserClient",
            Action::Allow,
        ),
        (
            "iokit-open",
            IokitClass,
            "RootDomainUserClient",
            Action::Allow,
        ),
        (
            "iokit-open",
            IokitClass,
            "AppleUpstreamUserClient",
            Action::Deny,
        ),
        (
            "ipc-posix-shm-read-data",
            IpcPosix,
            "apple.shm.notification_center",
            Action::Allow,
        ),
        (
            "ipc-posix-shm-write-data",
            IpcPosix,
            "apple.shm.notification_center",
            Action::Deny,
        ),
        ("ipc-posix-sem", IpcPosix, "/mp-1", Action::Allow),
        ("ipc-posix-sem*", IpcPosix, "/other", Action::Deny),
        ("sysctl-read", Sysctl, "hw.ncpu", Action::Allow),
        ("sysctl-read", Sysctl, "kern.osversion", Action::Allow),
        ("sysctl-read", Sysctl, "kern.proc", Action::Deny),
        ("sysctl-write", Sysctl, "hw.ncpu", Action::Deny),
        (
            "user-preference-read",
            PreferenceDomain,
            "com.apple.Terminal",
            Action::Allow,
        ),
        (
            "user-preference-write",
            PreferenceDomain,
            "com.apple.Terminal",
            Action::Deny,
        ),
        ("signal", SignalTarget, "self", Action::Allow),
        ("signal", SignalTarget, "same-sandbox", Action::Allow),
        ("signal", SignalTarget, "others", Action::Deny),
    ];
    for (op, kind, n, want) in cases {
        assert_eq!(decide(&model, op, name(*kind, n)), *want, "{op} {n}");
    }
    // A path never matches a name filter, nor a name a path filter.
    assert_eq!(
        decide(&model, "mach-lookup", Target::Path("/com.a".into())),
        Action::Deny
    );
}

/// A spec can re-allow an entry by name: the profile allows it by a rule
/// that says so, lint says what it opens, show and diff say it, and an
/// `[[assert]]` that it is denied fails the compile.
#[test]
fn a_reallowed_service_is_said_everywhere_and_fails_an_assertion() {
    let dir = tempfile::tempdir().unwrap();
    let base = "version = 1\nname = \"kc\"\n[target]\nplatform = \"macos\"\n";
    let with = format!("{base}[ipc]\nallow = [\"com.apple.SecurityServer\"]\n");
    let c = sealc::compile("s.toml", &with, &Default::default(), &demo_host()).unwrap();
    let sb = String::from_utf8(c.files["seal.sb"].clone()).unwrap();
    assert!(
        sb.contains(
            "; ipc.allow \"com.apple.SecurityServer\": re-allowed by the spec; it can read the user's keychains through securityd\n(allow mach-lookup (global-name \"com.apple.SecurityServer\"))\n"
        ),
        "{sb}"
    );
    let arena = sealc::sbpl::parse::Arena::new();
    let model = Model::new(
        &sealc::sbpl::parse::parse(&sb, &arena).unwrap(),
        &Default::default(),
    );
    let kc = name(sealc::ops::NameKind::MachGlobal, "com.apple.SecurityServer");
    assert_eq!(decide(&model, "mach-lookup", kc.clone()), Action::Allow);
    // The clipboard stays sealed.
    let pb = name(sealc::ops::NameKind::MachGlobal, "com.apple.pasteboard.1");
    assert_eq!(decide(&model, "mach-lookup", pb), Action::Deny);
    // Lint names what it opens.
    let lint = sealc::lint::smells_of(&sealc::spec::parse(&with).unwrap(), &c.ir);
    let w = lint
        .0
        .iter()
        .find(|d| d.code == "sealc::lint::ipc_allowed")
        .unwrap_or_else(|| panic!("{lint:?}"));
    assert!(w.message.contains("keychains"), "{}", w.message);
    // An assertion that it is denied fails, naming the rule.
    let asserted = format!(
        "{with}[[assert]]\ndeny = \"mach-lookup\"\nnames = [\"com.apple.SecurityServer\"]\n"
    );
    let err = sealc::compile("s.toml", &asserted, &Default::default(), &demo_host()).unwrap_err();
    assert!(
        err.0.iter().any(|d| d.code == "sealc::assert::failed"
            && d.message.contains("`com.apple.SecurityServer`")),
        "{err:?}"
    );
    // A name not in the table is refused, with the nearest.
    let typo = format!("{base}[ipc]\nallow = [\"com.apple.pasteboard\"]\n");
    let err = sealc::compile("s.toml", &typo, &Default::default(), &demo_host()).unwrap_err();
    let d = err
        .0
        .iter()
        .find(|d| d.code == "sealc::ipc::unknown")
        .unwrap();
    assert!(
        d.help
            .as_deref()
            .unwrap_or("")
            .contains("com.apple.pasteboard.1"),
        "{d:?}"
    );
    // show and diff say it, through the CLI.
    let out_of = |src: &str, sub: &str| {
        let d = dir.path().join(sub);
        let spec = dir.path().join(format!("{sub}.toml"));
        std::fs::write(&spec, src).unwrap();
        let o = Sealc::new()
            .args([
                "compile",
                spec.to_str().unwrap(),
                "--out",
                d.to_str().unwrap(),
                "-q",
            ])
            .run();
        assert_eq!(o.code, 0, "{}", o.stderr);
        d.join("seal.json")
    };
    let (old, new) = (out_of(base, "old"), out_of(&with, "new"));
    let show = Sealc::new().args(["show", new.to_str().unwrap()]).run();
    assert!(
        show.stdout.contains(
            "can read the keychain: yes, re-allowed by `ipc.allow`: `com.apple.SecurityServer`"
        ),
        "{}",
        show.stdout
    );
    let show = Sealc::new().args(["show", old.to_str().unwrap()]).run();
    assert!(
        show.stdout.contains("can read the keychain: no"),
        "{}",
        show.stdout
    );
    let diff = Sealc::new()
        .args(["diff", old.to_str().unwrap(), new.to_str().unwrap()])
        .run();
    assert_eq!(diff.code, 1, "{}", diff.stdout);
    assert!(
        diff.stdout.contains("can read the keychain: yes"),
        "{}",
        diff.stdout
    );
}

/// `sealc explain --op mach-lookup --name ...` on every shipped profile.
#[test]
fn explain_answers_a_service_by_name() {
    let sb = root().join("tests/golden/probe-rep/seal.sb");
    let run = |args: &[&str]| {
        Sealc::new()
            .args(["explain", sb.to_str().unwrap()])
            .args(args.iter().copied())
            .run()
    };
    let o = run(&[
        "--op",
        "mach-lookup",
        "--name",
        "com.apple.pasteboard.1",
        "--format",
        "json",
    ]);
    assert_eq!(o.code, 0, "{}", o.stderr);
    let v: serde_json::Value = serde_json::from_str(&o.stdout).unwrap();
    assert_eq!(v["answer"], "deny", "{v}");
    assert_eq!(v["name"], "com.apple.pasteboard.1", "{v}");
    assert!(
        v["decided_by"]["why"]
            .as_str()
            .unwrap()
            .contains("clipboard"),
        "{v}"
    );
    let o = run(&["--op", "appleevent-send", "--name", "com.apple.Terminal"]);
    assert!(o.stdout.starts_with("deny\n"), "{}", o.stdout);
    let o = run(&["--op", "mach-lookup", "/x"]);
    assert_eq!(o.code, 2);
    let o = run(&["--op", "file-read-data", "--name", "x"]);
    assert_eq!(o.code, 2);
    assert!(o.stderr.contains("not applied to a name"), "{}", o.stderr);
}

proptest::proptest! {
    #![proptest_config(proptest::prelude::ProptestConfig {
        cases: 64,
        failure_persistence: None,
        ..Default::default()
    })]

    /// No spec without an `ipc.allow` gives any escape service, whatever
    /// its base, network mode and roots.
    #[test]
    fn no_spec_without_a_reallow_gives_an_escape(
        deny_default in proptest::bool::ANY,
        mode in 0usize..3,
        roots in proptest::collection::vec((0usize..4, 0usize..4), 0..5),
    ) {
        use sealc::ops::NameKind;
        let modes = ["none", "open", "proxy"];
        let paths = ["/Users/agent/a", "/Users/agent/a/b", "/tmp/w", "/Users/agent"];
        let lists = ["deny_read", "allow_read", "write", "metadata_only"];
        let mut src = format!(
            "version = 1\nname = \"p\"\n[target]\nplatform = \"macos\"\nbase = \"{}\"\n[network]\nmode = \"{}\"\n",
            if deny_default { "deny-default" } else { "allow-default" },
            modes[mode]
        );
        if mode == 2 {
            src.push_str("proxy = \"127.0.0.1:8080\"\n");
        }
        let mut by_list: std::collections::BTreeMap<&str, Vec<&str>> = Default::default();
        let mut used = std::collections::BTreeSet::new();
        for (l, p) in roots {
            if used.insert(paths[p]) {
                by_list.entry(lists[l]).or_default().push(paths[p]);
            }
        }
        src.push_str("[filesystem]\n");
        for (l, ps) in &by_list {
            src.push_str(&format!("{l} = {ps:?}\n"));
        }
        let Ok(c) = sealc::compile("s.toml", &src, &Default::default(), &demo_host()) else {
            return Ok(());
        };
        let sb = String::from_utf8(c.files["seal.sb"].clone()).unwrap();
        let arena = sealc::sbpl::parse::Arena::new();
        let model = Model::new(&sealc::sbpl::parse::parse(&sb, &arena).unwrap(), &Default::default());
        for e in SEALED {
            let target = match e.sealed {
                Sealed::Service(n) => ("mach-lookup", name(NameKind::MachGlobal, n)),
                Sealed::Operation(op) => (op, name(NameKind::of(op).unwrap(), "com.apple.Terminal")),
                Sealed::Program(p) => ("process-exec", Target::Path(p.into())),
            };
            proptest::prop_assert_eq!(
                model.query(target.0, &target.1).action(),
                Some(Action::Deny),
                "{}\n{}", e.name(), src
            );
        }
    }
}
