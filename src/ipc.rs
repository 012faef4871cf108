//! The macOS IPC surface: what a seatbelt profile seals beyond files and the
//! network, under both bases, as one table with its provenance. The
//! seatbelt renderer emits a rule for each sealed entry; `docs/ipc.md` is
//! generated from the same table ([`docs`]) and checked fresh by a test.
//!
//! A process on macOS reaches most of the system through Mach services, by
//! name. Several of them act for the caller outside its sandbox: a service
//! that starts a program runs it with the user's full rights, a service that
//! holds the user's data reads it where the profile's file rules do not
//! apply. Those are denied here unless the table says why one must stay.

use std::fmt::Write as _;

/// What an entry asks seatbelt to refuse.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Sealed {
    /// `(deny mach-lookup (global-name NAME))`.
    Service(&'static str),
    /// `(deny OP)`: an operation with no filter.
    Operation(&'static str),
    /// `(deny process-exec* (literal PATH))`: a program, where no operation
    /// names the service it talks to.
    Program(&'static str),
}

/// One entry: what is sealed, what it would open, and where the knowledge
/// comes from.
#[derive(Clone, Copy, Debug)]
pub struct Entry {
    pub sealed: Sealed,
    /// What the agent could do with it, in words.
    pub opens: &'static str,
    /// The public source for the name and for denying it.
    pub source: &'static str,
    /// What `sealc show` lists it under ("can ...?"), and the answer a seal
    /// gives: entries of one capability share it.
    pub capability: (&'static str, &'static str),
}

/// Denied under both bases.
pub const SEALED: &[Entry] = &[
    Entry {
        sealed: Sealed::Service("com.apple.coreservices.launchservicesd"),
        opens: "start other applications outside the seal (LaunchServices: `open -a Terminal`), which run what they are told with the user's full rights",
        source: "Chromium's renderer policy (sandbox/policy/mac/renderer.sb) and Codex's seatbelt base policy allow no LaunchServices lookup",
        capability: ("start other applications (LaunchServices)", "no"),
    },
    Entry {
        sealed: Sealed::Service("com.apple.lsd.modifydb"),
        opens: "change the LaunchServices database (which application opens what) for the user's unsandboxed session",
        source: "the LaunchServices database service; no public sandbox policy for a command-line tool allows it",
        capability: ("start other applications (LaunchServices)", "no"),
    },
    Entry {
        sealed: Sealed::Service("com.apple.coreservices.appleevents"),
        opens: "send Apple Events to unsandboxed applications (`osascript -e 'tell app \"Terminal\" to do script …'`), which run commands outside the seal",
        source: "Codex's seatbelt policy allows Apple Events only when a profile grants `macos_automation`",
        capability: ("send Apple Events", "no"),
    },
    Entry {
        sealed: Sealed::Operation("appleevent-send"),
        opens: "send Apple Events at all (the operation seatbelt checks for every destination)",
        source: "Codex's seatbelt policy allows `appleevent-send` only when a profile grants `macos_automation`",
        capability: ("send Apple Events", "no"),
    },
    Entry {
        sealed: Sealed::Service("com.apple.pasteboard.1"),
        opens: "read and write the user's clipboard (`pbpaste`, `pbcopy`)",
        source: "the pasteboard server; Chromium's renderer policy allows no pasteboard lookup",
        capability: ("read or write the clipboard", "no"),
    },
    Entry {
        sealed: Sealed::Operation("user-preference-write"),
        opens: "write any application's defaults through cfprefsd, a process outside the seal (`defaults write`), such as a path another application later runs",
        source: "Codex's seatbelt policy allows `user-preference-write` only when a profile grants `macos_preferences = \"readwrite\"`",
        capability: ("write other applications' defaults", "no"),
    },
    Entry {
        sealed: Sealed::Program("/bin/launchctl"),
        opens: "ask launchd to run a job outside the seal that outlives the run (`launchctl submit`, `launchctl bootstrap`); launchd is reached through the bootstrap port, which no SBPL operation names, so the program is what a profile can refuse",
        source: "launchctl(1); a layer, not a seal: a program that speaks launchd's protocol itself is not stopped by it",
        capability: ("submit launchd jobs", "not with `launchctl` (a layer, not a seal)"),
    },
    Entry {
        sealed: Sealed::Service("com.apple.SecurityServer"),
        opens: "read the user's keychains through securityd (`SecItemCopyMatching`, what `security` does), passwords and keys the file rules cannot see because the daemon reads them",
        source: "Codex's seatbelt policy allows it only with the network (for TLS on older systems); certificate checks go through `com.apple.trustd.agent`, left open; a spec whose tool needs the keychain names it in `ipc.allow`. Only a Mac can confirm that HTTPS holds without it",
        capability: ("read the keychain", "no"),
    },
    Entry {
        sealed: Sealed::Program("/usr/bin/security"),
        opens: "read passwords and keys from the user's keychains (`security find-generic-password -w`)",
        source: "security(1); a second layer: the keychain's service is denied above",
        capability: ("read the keychain", "no"),
    },
];

/// The services the `deny-default` base allows by name (it allows no other
/// Mach service), and why a command-line program needs each.
pub const DENY_DEFAULT_SERVICES: &[(&str, &str)] = &[
    (
        "com.apple.logd",
        "os_log: every program that logs through the unified log (most of Apple's frameworks) talks to it",
    ),
    (
        "com.apple.system.notification_center",
        "notify(3): libSystem posts and reads notifications at start (time zone, network changes)",
    ),
    (
        "com.apple.system.opendirectoryd.libinfo",
        "getpwuid(3) and friends: a user's name and home directory (what `id`, `git` and Python ask)",
    ),
    (
        "com.apple.trustd.agent",
        "certificate checks for TLS (Codex's and Claude Code's macOS policies allow it with the network)",
    ),
];

/// Left open under both bases, and why.
pub const OPEN: &[(&str, &str)] = &[
    (
        "com.apple.trustd.agent",
        "TLS certificate checks go through trustd (Claude Code's and Codex's macOS policies allow it with the network), and the agent's own HTTPS needs them; it holds no secrets of the user's",
    ),
    (
        "user-preference-read",
        "reading defaults through cfprefsd: Apple's frameworks read them at start (locale, appearance), and Codex's seatbelt base policy allows it; another application's domain is readable this way",
    ),
];

impl Entry {
    /// The entry's name, as `ipc.allow` takes it: the service, the
    /// operation or the program's path.
    pub fn name(&self) -> &'static str {
        match self.sealed {
            Sealed::Service(n) | Sealed::Operation(n) | Sealed::Program(n) => n,
        }
    }
}

/// The sealed entry of this name.
pub fn find(name: &str) -> Option<&'static Entry> {
    SEALED.iter().find(|e| e.name() == name)
}

/// What a macOS seal's IPC section means, in words, for `sealc show` and
/// `sealc diff`: each capability of [`SEALED`] once, in the table's order,
/// with the answer the seal gives: the table's, or `yes` naming the entries
/// `allowed` (a spec's `ipc.allow`) re-allows.
pub fn summary(allowed: &std::collections::BTreeSet<String>) -> Vec<(&'static str, String)> {
    let mut out: Vec<(&'static str, String)> = Vec::new();
    for e in SEALED {
        if out.iter().any(|(c, _)| *c == e.capability.0) {
            continue;
        }
        let opened: Vec<String> = SEALED
            .iter()
            .filter(|o| o.capability.0 == e.capability.0 && allowed.contains(o.name()))
            .map(|o| format!("`{}`", o.name()))
            .collect();
        let has = if opened.is_empty() {
            e.capability.1.to_string()
        } else {
            format!("yes, re-allowed by `ipc.allow`: {}", opened.join(", "))
        };
        out.push((e.capability.0, has));
    }
    out
}

/// `docs/ipc.md`, from the table.
pub fn docs() -> String {
    let mut s = String::from(
        "# The macOS IPC surface\n\n\
         <!-- generated from src/ipc.rs; `SEALC_BLESS=1 cargo test --test ipc` rewrites it -->\n\n\
         A seatbelt profile seals files and the network; a process on macOS also reaches the\n\
         system through Mach services, by name, and several of them act for the caller\n\
         outside its sandbox. Every profile sealc compiles, under either base, ends with a\n\
         section `ipc` that denies each entry below. Under the `allow-default` base these\n\
         rules are what keeps them closed; under `deny-default` they are a second layer\n\
         (that base allows only the services it names).\n\n\
         The names and what they open come from the public sources given; a script under\n\
         `tests/macos/` is meant to try each escape on a Mac. **It has not been run:** CI\n\
         here is Linux, where seatbelt cannot run, and the SBPL evaluator proves only what\n\
         the profile says, not what macOS does with it.\n\n\
         A spec re-allows an entry by its name, for a tool that needs it:\n\n\
         ```toml\n[ipc]\nallow = [\"com.apple.SecurityServer\"]\n```\n\n\
         The profile then allows it by a rule whose comment names the entry; `sealc lint`\n\
         warns with what it opens (`sealc::lint::ipc_allowed`), `sealc show` and `sealc diff`\n\
         say it, and an `[[assert]]` that it is denied fails the compile. A name not in the\n\
         table is refused (`sealc::ipc::unknown`). `sealc explain --op mach-lookup --name\n\
         com.apple.pasteboard.1 seal.sb` answers for a service (and `appleevent-send`,\n\
         `iokit-open`, the `ipc-posix`, `sysctl` and `user-preference` operations and\n\
         `signal` for their names); every shipped spec asserts the escapes below denied.\n\n\
         ## Denied\n\n\
         | name (`ipc.allow`) | rule | what it would open | source |\n| --- | --- | --- | --- |\n",
    );
    for e in SEALED {
        let _ = writeln!(
            s,
            "| `{}` | `{}` | {} | {} |",
            e.name(),
            rule_text(e.sealed),
            e.opens,
            e.source
        );
    }
    s.push_str(
        "\n## Allowed by the `deny-default` base\n\n\
         It allows these services by name and no other (under `allow-default` every service\n\
         not denied above is open, as the base says).\n\n| name | why |\n| --- | --- |\n",
    );
    for (name, why) in DENY_DEFAULT_SERVICES {
        let _ = writeln!(s, "| `{name}` | {why} |");
    }
    s.push_str("\n## Left open\n\n| name | why |\n| --- | --- |\n");
    for (name, why) in OPEN {
        let _ = writeln!(s, "| `{name}` | {why} |");
    }
    s
}

/// The rule an entry becomes, as SBPL.
pub fn rule_text(s: Sealed) -> String {
    match s {
        Sealed::Service(n) => format!("(deny mach-lookup (global-name \"{n}\"))"),
        Sealed::Operation(op) => format!("(deny {op})"),
        Sealed::Program(p) => format!("(deny process-exec* (literal \"{p}\"))"),
    }
}
