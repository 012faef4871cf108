//! Public profiles in the SBPL corpus, read and queried: Codex's own seatbelt
//! policy as its pinned macOS release ships it (deny-default, a named
//! `mach-lookup` allowlist, sysctl, IOKit, POSIX IPC and preference rules,
//! much of it taken from Chromium's `common.sb` and `renderer.sb`).
//!
//! The text is not committed: `.ci/install-codex-macos-policy` takes it from
//! the npm package `@openai/codex@<version>-darwin-arm64` when the tests are
//! set up, and writes its provenance beside it. Where it is missing the
//! tests are ignored (build.rs), except under CI or `SEALC_REQUIRE_CODEX=1`,
//! where they fail.

#[path = "codex_support/mod.rs"]
mod codex_support;

// pest_derive without its `std` feature names `alloc::`.
extern crate alloc;

#[path = "support/sbpl_oracle.rs"]
mod oracle;

use sealc::ops::NameKind::{self, *};
use sealc::sbpl::eval::{Action, Model, Target, Verdict};

const VERSION: &str = "0.171.0";

fn codex_policy() -> String {
    let dir = codex_support::codex_dir()
        .join("macos-policy")
        .join(VERSION);
    match std::fs::read_to_string(dir.join("codex-seatbelt.sbpl")) {
        Ok(text) => text,
        Err(e) => {
            let how = format!(
                "Codex {VERSION}'s seatbelt policy is not at {} ({e}; run `bash .ci/install-codex-macos-policy`)",
                dir.display()
            );
            codex_support::not_installed(&how)
        }
    }
}

fn name(kind: NameKind, n: &str) -> Target {
    Target::Name {
        kind,
        name: n.into(),
    }
}

fn path(p: &str) -> Target {
    Target::Path(p.into())
}

#[test]
#[cfg_attr(
    sealc_no_codex_policy = "0.171.0",
    ignore = "needs Codex 0.171.0's macOS policy (bash .ci/install-codex-macos-policy)"
)]
fn codex_seatbelt_policy_reads_and_answers() {
    let text = codex_policy();
    let arena = sealc::sbpl::parse::Arena::new();
    let profile = sealc::sbpl::parse::parse(&text, &arena)
        .unwrap_or_else(|e| panic!("Codex {VERSION}'s policy does not read: {e:?}"));
    // The grammar reads the same tree from it (tests/sbpl_grammar.rs holds
    // the reader to the grammar on every profile in the repository).
    let by_grammar = oracle::parse(&text, &arena)
        .unwrap_or_else(|e| panic!("the grammar does not read Codex {VERSION}'s policy: {e}"));
    assert!(
        by_grammar == profile,
        "the reader and the grammar read Codex {VERSION}'s policy differently"
    );
    let model = Model::new(&profile, &Default::default());
    let cases: &[(&str, Target, Action)] = &[
        // Its base is deny-default, with a named allowlist of services.
        (
            "mach-lookup",
            name(MachGlobal, "com.apple.system.opendirectoryd.libinfo"),
            Action::Allow,
        ),
        (
            "mach-lookup",
            name(MachGlobal, "com.apple.cfprefsd.daemon"),
            Action::Allow,
        ),
        (
            "mach-lookup",
            name(MachLocal, "com.apple.cfprefsd.agent"),
            Action::Allow,
        ),
        (
            "mach-lookup",
            name(MachGlobal, "com.apple.logd"),
            Action::Allow,
        ),
        // The escapes sealc seals are not in Codex's list either.
        (
            "mach-lookup",
            name(MachGlobal, "com.apple.pasteboard.1"),
            Action::Deny,
        ),
        (
            "mach-lookup",
            name(MachGlobal, "com.apple.coreservices.launchservicesd"),
            Action::Deny,
        ),
        (
            "mach-lookup",
            name(MachGlobal, "com.apple.coreservices.appleevents"),
            Action::Deny,
        ),
        (
            "appleevent-send",
            name(AppleEvent, "com.apple.Terminal"),
            Action::Deny,
        ),
        // Its last rule denies XPC services of the program's own domain,
        // which no global name is.
        (
            "mach-lookup",
            name(XpcService, "com.example.helper"),
            Action::Deny,
        ),
        // Chromium's sysctl list: a name, a prefix, and one not listed.
        ("sysctl-read", name(Sysctl, "hw.ncpu"), Action::Allow),
        (
            "sysctl-read",
            name(Sysctl, "kern.proc.pid.123"),
            Action::Allow,
        ),
        ("sysctl-read", name(Sysctl, "kern.boottime"), Action::Deny),
        (
            "sysctl-write",
            name(Sysctl, "kern.grade_cputype"),
            Action::Allow,
        ),
        ("sysctl-write", name(Sysctl, "kern.hostname"), Action::Deny),
        (
            "iokit-open",
            name(IokitClass, "RootDomainUserClient"),
            Action::Allow,
        ),
        (
            "iokit-open",
            name(IokitClass, "IOSurfaceRootUserClient"),
            Action::Deny,
        ),
        ("ipc-posix-sem", name(IpcPosix, "/mp-12"), Action::Allow),
        (
            "user-preference-read",
            name(PreferenceDomain, "com.apple.Terminal"),
            Action::Allow,
        ),
        (
            "user-preference-write",
            name(PreferenceDomain, "com.apple.Terminal"),
            Action::Deny,
        ),
        ("signal", name(SignalTarget, "same-sandbox"), Action::Allow),
        ("signal", name(SignalTarget, "others"), Action::Deny),
        // Files: the system roots it reads, and a home it does not.
        (
            "file-read-data",
            path("/usr/lib/libSystem.B.dylib"),
            Action::Allow,
        ),
        (
            "file-map-executable",
            path("/System/Library/Frameworks/Foundation.framework/Foundation"),
            Action::Allow,
        ),
        (
            "file-read-data",
            path("/Users/agent/.ssh/id_ed25519"),
            Action::Deny,
        ),
        (
            "file-write-data",
            path("/usr/lib/libSystem.B.dylib"),
            Action::Deny,
        ),
        ("file-write-data", path("/dev/null"), Action::Allow),
        ("process-exec", path("/bin/sh"), Action::Allow),
        (
            "network-outbound",
            Target::Remote {
                host: "203.0.113.7".into(),
                port: 443,
            },
            Action::Deny,
        ),
    ];
    let mut wrong = Vec::new();
    for (op, target, want) in cases {
        match model.query(op, target) {
            Verdict::Decided(d) if d.action == *want => {}
            other => wrong.push(format!("{op} {target:?}: want {want:?}, got {other:?}")),
        }
    }
    assert!(
        wrong.is_empty(),
        "Codex {VERSION}'s policy:\n{}",
        wrong.join("\n")
    );
    // `ipc-posix-shm-read*` is a family a later macOS added above
    // `ipc-posix-shm-read-data`; the table is macOS 10.15's, so a read of
    // shared memory is said to be undetermined, naming the family, rather
    // than answered as if the rule were not there.
    match model.query(
        "ipc-posix-shm-read-data",
        &name(IpcPosix, "apple.cfprefs.501"),
    ) {
        Verdict::Undetermined { construct, .. } => {
            assert!(construct.contains("`ipc-posix-shm-read*`"), "{construct}")
        }
        other => panic!("ipc-posix-shm-read-data: {other:?}"),
    }
}

/// Every operation the policy names, asked of a name or path in its own
/// namespace, is answered, or is undetermined for a reason the answer
/// names: exactly the operations and filters listed here, which sealc's
/// table (macOS 10.15's) and evaluator do not model.
#[test]
#[cfg_attr(
    sealc_no_codex_policy = "0.171.0",
    ignore = "needs Codex 0.171.0's macOS policy (bash .ci/install-codex-macos-policy)"
)]
fn every_operation_codex_names_is_answered_or_said_undetermined() {
    let text = codex_policy();
    let arena = sealc::sbpl::parse::Arena::new();
    let profile = sealc::sbpl::parse::parse(&text, &arena).unwrap();
    let model = Model::new(&profile, &Default::default());
    let mut ops: Vec<&str> = Vec::new();
    for line in text.lines() {
        let l = line.trim_start();
        for head in ["(allow ", "(deny "] {
            if let Some(rest) = l.strip_prefix(head) {
                for w in rest.split_whitespace() {
                    if w.starts_with('(') || w.starts_with('"') {
                        break;
                    }
                    ops.push(w.trim_end_matches(')'));
                }
            }
        }
    }
    ops.retain(|o| *o != "default");
    ops.sort();
    ops.dedup();
    assert!(
        ops.len() >= 20,
        "only {} operations read: {ops:?}",
        ops.len()
    );
    let mut undetermined = Vec::new();
    for op in &ops {
        let target = match NameKind::of(op) {
            Some(k) => name(k, "com.example.x"),
            None if op.starts_with("network") => Target::Remote {
                host: "127.0.0.1".into(),
                port: 80,
            },
            None => path("/private/tmp/x"),
        };
        match model.query(op, &target) {
            Verdict::Decided(_) => {}
            Verdict::Undetermined { construct, .. } => {
                assert!(!construct.is_empty(), "{op}");
                undetermined.push(format!("{op}: {construct}"));
            }
            other => panic!("{op}: {other:?}"),
        }
    }
    let want = [
        // Whether `/private/tmp/x` is a directory is not in the question.
        "file-read-metadata: (vnode-type DIRECTORY)",
        "ipc-posix-shm-read*: the operation `ipc-posix-shm-read*` is not modelled",
        "ipc-posix-shm-read-data: `ipc-posix-shm-read*` is not in the operation table (macOS 10.15's), and may hold `ipc-posix-shm-read-data`",
        "process-info*: the operation `process-info*` is not modelled",
        "pseudo-tty: the operation `pseudo-tty` is not modelled",
        "system-fsctl: the operation `system-fsctl` is not modelled",
        "system-mac-syscall: the operation `system-mac-syscall` is not modelled",
    ];
    assert_eq!(undetermined, want, "of {} operations: {ops:?}", ops.len());
}
