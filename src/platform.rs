//! Where the macOS seal and the Linux seal of one spec cannot mean the same
//! thing: the platform limits, named. `docs/platform-differences.md` lists
//! them for people, `sealc lint --platform` reports the ones that apply to a
//! spec, and `tests/parity.rs` allows no other disagreement between the two
//! seals read back.

use crate::diag::{quote, Diagnostic, Span};
use crate::ir::{is_within, Ir, Root, RootKind};
use crate::spec::{Base, NetMode, Spec};

/// Which platform's seal a difference is about: the one that departs from
/// what the spec says.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Side {
    Linux,
    Macos,
    Both,
}

/// Which differences `sealc lint --platform` reports.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Select {
    Linux,
    Macos,
    Both,
}

impl Select {
    fn covers(self, side: Side) -> bool {
        matches!(
            (self, side),
            (Select::Both, _)
                | (_, Side::Both)
                | (Select::Linux, Side::Linux)
                | (Select::Macos, Side::Macos)
        )
    }
}

/// One platform difference.
#[derive(Clone, Copy, Debug)]
pub struct Difference {
    /// Its diagnostic code.
    pub code: &'static str,
    pub side: Side,
    /// What differs, in one line.
    pub what: &'static str,
    /// Which way: stricter or looser, and on which platform.
    pub direction: &'static str,
    /// Why it cannot be the same.
    pub why: &'static str,
}

/// Every platform difference.
pub const DIFFERENCES: &[Difference] = &[
    Difference {
        code: crate::diag::code::PLATFORM_STAND_IN,
        side: Side::Linux,
        what: "a hidden root (deny_read, metadata_only) and every directory on the way to a deeper root is an empty stand-in on Linux: its own name can be stat'ed and a directory listed (empty, or the names on the way to deeper roots), with the stand-in's metadata; macOS refuses stat and listing of a denied root and shows the host's metadata where it allows stat",
        direction: "Linux looser for a denied root's own name and the names on the way; the metadata shown differs",
        why: "a mount can cover a path but not remove it: bubblewrap puts an empty tmpfs (or /dev/null) over the root, and makes the directories a deeper mount needs",
    },
    Difference {
        code: crate::diag::code::PLATFORM_METADATA_INSIDE,
        side: Side::Linux,
        what: "inside a metadata-only root nothing is there on Linux: its files cannot be stat'ed (macOS: stat but not read) and a symlink in it cannot be walked through",
        direction: "Linux stricter",
        why: "the root is an empty stand-in; a mount cannot show names and metadata without the data",
    },
    Difference {
        code: crate::diag::code::PLATFORM_DENIED_SYMLINK,
        side: Side::Linux,
        what: "a deny_read root that is a symlink on the host: Linux hides what it leads to, but the link itself stays (lstat, readlink, and walking through it to a re-allowed root); macOS denies the link's own name too",
        direction: "Linux looser",
        why: "mounts are made at the realpath; the link is an entry of the directory that holds it, which stays as the host has it",
    },
    Difference {
        code: crate::diag::code::PLATFORM_TEST_EXISTENCE,
        side: Side::Macos,
        what: "macOS answers file-test-existence from the base alone: under allow-default the existence of a denied file can be tested, under deny-default no existence test is allowed; on Linux a path exists exactly when it can be stat'ed",
        direction: "macOS looser under allow-default, stricter under deny-default",
        why: "file-test-existence falls back to the default, not to file-read*, so no path rule of the profile decides it",
    },
    Difference {
        code: crate::diag::code::PLATFORM_CROSS_MOUNT,
        side: Side::Linux,
        what: "renames and hard links never cross two mounts on Linux: not between two write roots, not out of a write root into a nested root (or back), not out of a directory a protected path keeps fixed (such as `.git` around a protected `.git/hooks`) into the rest of its write root (or back), not from outside the write roots into one (EXDEV); macOS allows what the rules allow on one volume",
        direction: "Linux stricter",
        why: "each root, and each directory on the way to a protected path, is its own bind mount, and the kernel refuses a rename or link across mounts, even of one file system; tools such as mv, cargo, pnpm and uv copy instead",
    },
    Difference {
        code: crate::diag::code::PLATFORM_RENAME_ANCESTOR,
        side: Side::Linux,
        what: "a denied or metadata-only root inside a write root: macOS refuses renaming its writable ancestors; on Linux they can be renamed (the stand-in moves with them), and the next `sealc exec` refuses to start because the pinned identities moved",
        direction: "Linux looser within a run",
        why: "only a mount point cannot be renamed; the ancestors are ordinary directories of the write root's mount",
    },
    Difference {
        code: crate::diag::code::PLATFORM_PROXY_ADDRESS,
        side: Side::Macos,
        what: "network proxy: macOS allows outbound TCP to the proxy's port on every loopback address (127.0.0.1 and ::1); Linux bridges only the proxy's own address",
        direction: "macOS looser",
        why: "seatbelt names loopback as `localhost:PORT` only; the Linux sandbox has its own network namespace where sealc bridges exactly the proxy's address",
    },
    Difference {
        code: crate::diag::code::PLATFORM_SYSTEM_BASE,
        side: Side::Both,
        what: "the deny-default system base differs: macOS reads /System, /bin, /sbin, /usr, /private/etc, /private/var/db/dyld and a few devices; Linux reads /bin, /etc, /lib*, /sbin, /usr and has a fresh /dev and /proc and a /sys of its own with only the CPU, NUMA and transparent huge page entries",
        direction: "neither: each platform's own minimum to start a program",
        why: "the two systems keep what programs need in different places",
    },
    Difference {
        code: crate::diag::code::PLATFORM_HIDDEN_AT_START,
        side: Side::Linux,
        what: "Linux hides (or protects) a root when the sandbox starts: a denied root absent then is not hidden if it appears during the run, and one the host renames or replaces during the run loses its stand-in (a protected file the host rewrites by a rename, such as your own `git config` meanwhile, loses its read-only bind); macOS decides by path for the whole run",
        direction: "Linux looser during a run",
        why: "mounts act on the objects that are there when they are made; seatbelt checks every access by path",
    },
];

/// The difference with this code.
pub fn difference(code: &str) -> Option<&'static Difference> {
    DIFFERENCES.iter().find(|d| d.code == code)
}

/// Advice, one per difference that applies to this spec's seal, naming the
/// roots it concerns (at the first of them).
pub fn findings(spec: &Spec, ir: &Ir, select: Select) -> Vec<Diagnostic> {
    let base_span = spec.target.base.as_ref().map(|b| b.span.clone());
    let proxy_span = (spec.network.proxy.as_ref().map(|p| p.span.clone()))
        .or_else(|| spec.network.mode.as_ref().map(|m| m.span.clone()));
    let mut out = Vec::new();
    let of = |kinds: &[RootKind]| -> Vec<&Root> {
        ir.roots
            .iter()
            .filter(|r| kinds.contains(&r.kind))
            .collect()
    };
    let denied = of(&[RootKind::DenyRead, RootKind::MetadataOnly]);
    let deny = of(&[RootKind::DenyRead]);
    let meta = of(&[RootKind::MetadataOnly]);
    let writes = of(&[RootKind::Write]);
    let protected: Vec<&Root> = ir.protected();
    let denied_in_write: Vec<&Root> = denied
        .iter()
        .copied()
        .filter(|d| {
            writes
                .iter()
                .any(|w| d.path != w.path && is_within(&d.path, &w.path))
        })
        .collect();
    let mut push = |code: &'static str, roots: &[&Root], at: Option<Span>, detail: String| {
        let Some(d) = difference(code) else {
            return;
        };
        if !select.covers(d.side) {
            return;
        }
        let span: Option<Span> = roots.first().map(|r| r.span.clone()).or(at);
        let names: Vec<String> = roots.iter().map(|r| quote(&r.origin)).collect();
        let message = if names.is_empty() {
            detail
        } else {
            format!("{detail}: {}", names.join(", "))
        };
        out.push(
            Diagnostic::advice(code, message)
                .at_opt(span)
                .label(d.direction)
                .help(format!("{}; see docs/platform-differences.md", d.what)),
        );
    };
    if !denied.is_empty() || !protected.is_empty() {
        let at_start: Vec<&Root> = denied.iter().chain(&protected).copied().collect();
        push(
            crate::diag::code::PLATFORM_HIDDEN_AT_START,
            &at_start,
            None,
            "on Linux these are hidden or protected when the sandbox starts, not by path".into(),
        );
    }
    if !denied.is_empty() {
        push(
            crate::diag::code::PLATFORM_STAND_IN,
            &denied,
            None,
            "on Linux these are empty stand-ins, whose names stay".into(),
        );
    } else if ir.base == Base::DenyDefault && !ir.roots.is_empty() {
        push(
            crate::diag::code::PLATFORM_STAND_IN,
            &[],
            base_span.clone(),
            "on Linux the directories on the way to each root are made empty".into(),
        );
    }
    if !meta.is_empty() {
        push(
            crate::diag::code::PLATFORM_METADATA_INSIDE,
            &meta,
            None,
            "on Linux nothing inside these metadata-only roots can be stat'ed".into(),
        );
    }
    if !deny.is_empty() {
        push(
            crate::diag::code::PLATFORM_DENIED_SYMLINK,
            &deny,
            None,
            "where one of these is a symlink on the host, the link itself stays on Linux".into(),
        );
    }
    if ir.base == Base::DenyDefault {
        push(
            crate::diag::code::PLATFORM_TEST_EXISTENCE,
            &[],
            base_span.clone(),
            "under deny-default macOS allows no file-test-existence".into(),
        );
    } else if !denied.is_empty() {
        push(
            crate::diag::code::PLATFORM_TEST_EXISTENCE,
            &denied,
            None,
            "on macOS the existence of files in these can be tested".into(),
        );
    }
    if !writes.is_empty() {
        push(
            crate::diag::code::PLATFORM_CROSS_MOUNT,
            &writes,
            None,
            "on Linux nothing is renamed or hard-linked across these write roots' edges".into(),
        );
    }
    if !denied_in_write.is_empty() {
        push(
            crate::diag::code::PLATFORM_RENAME_ANCESTOR,
            &denied_in_write,
            None,
            "on Linux the writable ancestors of these can be renamed within a run".into(),
        );
    }
    if ir.network.mode == NetMode::Proxy {
        push(
            crate::diag::code::PLATFORM_PROXY_ADDRESS,
            &[],
            proxy_span.clone(),
            "on macOS every loopback address reaches the proxy's port".into(),
        );
    }
    if ir.base == Base::DenyDefault {
        push(
            crate::diag::code::PLATFORM_SYSTEM_BASE,
            &[],
            base_span.clone(),
            "the deny-default system base is each platform's own".into(),
        );
    }
    out
}

/// `docs/platform-differences.md`, generated from [`DIFFERENCES`].
pub fn docs() -> String {
    let mut out = String::from(
        "# Platform differences\n\n\
One spec means one thing on macOS (`seal.sb`, seatbelt) and on Linux \
(`seal.bwrap.json`, bubblewrap, Landlock, seccomp), except for the \
differences below: limits of one platform that the other does not have. \
This is the one list of them. Generated from `DIFFERENCES` in \
`src/platform.rs`; a test fails when this file is stale \
(`SEALC_BLESS=1 cargo test --test platform` rewrites it).\n\n\
- `sealc lint SPEC --platform linux|macos|both` reports, as advice, each \
difference that applies to a spec, with the roots it concerns (`linux`: \
where the Linux seal departs from what the spec says, `macos`: where the \
macOS seal does, `both`: all).\n\
- `tests/parity.rs` compiles random specs for both platforms, reads both \
seals back (the SBPL evaluator and the mount model) and asks them the same \
questions by every spelling of every path; any disagreement must be one of \
these, and one that `lint --platform both` reports for that spec.\n\n\
| code | seal | what differs | direction | why |\n| --- | --- | --- | --- | --- |\n",
    );
    for d in DIFFERENCES {
        let side = match d.side {
            Side::Linux => "Linux",
            Side::Macos => "macOS",
            Side::Both => "both",
        };
        out.push_str(&format!(
            "| `{}` | {side} | {} | {} | {} |\n",
            d.code, d.what, d.direction, d.why
        ));
    }
    out.push_str(
        "\nNot differences in meaning, but in what compiles: a Linux seal refuses a \
denied or metadata-only root that is itself a symlink inside a write root \
(`sealc::linux::denied-link-in-write-root`: the agent could point it \
elsewhere between runs; seatbelt denies unlinking it, so macOS is not \
affected), and warns about a denied root that is a file \
(`sealc::linux::file-root`).\n\n\
What is the same on both, since issue 11: `network.mode = \"open\"` is open \
under either base; the deny-default base never overrides a `deny_read` of \
the same path; a root written through a symlink is reached by both \
spellings; a write root is a fixed name (not removed, renamed or \
hard-linked; on Linux it is a mount point); files of a write root are \
hard-linked and cloned within it wherever it lies, and never out of a \
denied root; a write root absent when compiled is made when the seal \
starts; a denied root inside another hidden one shows no name.\n",
    );
    out
}
