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
        sealed: Sealed::Program("/usr/bin/security"),
        opens: "read passwords and keys from the user's keychains (`security find-generic-password -w`)",
        source: "security(1); a layer, not a seal: see `com.apple.SecurityServer` below",
        capability: ("read the keychain", "not with `security`; through Security.framework not sealed (TLS needs its service)"),
    },
];

/// Left open under both bases, and why.
pub const OPEN: &[(&str, &str)] = &[
    (
        "com.apple.SecurityServer",
        "TLS certificate checks go through it (Chromium's network policy and Codex's allow it with the network), and the agent's own HTTPS needs them; it also serves the user's keychains, so a program that calls Security.framework itself can read what the keychain lets it read without a prompt. Only a Mac can confirm which of the two a profile can keep apart",
    ),
    (
        "user-preference-read",
        "reading defaults through cfprefsd: Apple's frameworks read them at start (locale, appearance), and Codex's seatbelt base policy allows it; another application's domain is readable this way",
    ),
];

/// What a macOS seal's IPC section means, in words, for `sealc show`:
/// each capability of [`SEALED`] once, in the table's order, with the
/// answer every seal gives.
pub fn summary() -> Vec<(&'static str, &'static str)> {
    let mut out: Vec<(&'static str, &'static str)> = Vec::new();
    for e in SEALED {
        if !out.iter().any(|(c, _)| *c == e.capability.0) {
            out.push(e.capability);
        }
    }
    out
}

/// `docs/ipc.md`, from the table.
pub fn docs() -> String {
    let mut s = String::from(
        "# The macOS IPC surface\n\n\
         <!-- generated from src/backend/ipc.rs; `SEALC_BLESS=1 cargo test --test ipc` rewrites it -->\n\n\
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
         ## Denied\n\n\
         | rule | what it would open | source |\n| --- | --- | --- |\n",
    );
    for e in SEALED {
        let _ = writeln!(
            s,
            "| `{}` | {} | {} |",
            rule_text(e.sealed),
            e.opens,
            e.source
        );
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
