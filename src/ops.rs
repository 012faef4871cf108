//! The operation names `sealc explain --op` and `[[assert]]` take, and what
//! each seal kind makes of them: one table, read by the seatbelt evaluator
//! (`sbpl::eval`: each operation's fallback parent), the mount model
//! (`mounts`: what each asks of the namespace bubblewrap builds), the spec's
//! JSON Schema (the names `[[assert]]` may use) and `sealc explain
//! --list-ops`. A name outside it is refused everywhere, with the nearest.

/// What one access on a path needs (a `seal.bwrap.json` question).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Access {
    ReadData,
    ReadMetadata,
    Write,
}

/// A change to one name in a directory.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Op {
    /// Make a new name: a file (`O_CREAT | O_EXCL`), a directory (`mkdir`),
    /// a node or a symlink (`file-write-create`, `mkdir`).
    Create,
    /// `unlink` a file or symlink (`unlink`).
    Unlink,
    /// `rmdir` a directory that is empty on the host (`rmdir`).
    Rmdir,
    /// The name goes away by `unlink`, by `rmdir` when it is an empty
    /// directory, or by a rename within its mount (`file-write-unlink`).
    Remove,
    /// Hard-link a file into a write root (`file-link`).
    Link,
}

/// An operation from one path to a new name.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Move {
    /// `rename(from, to)` (`rename`).
    Rename,
    /// `link(from, to)`, a symlink `from` not followed (`link`, `file-link`).
    Link,
}

/// What an operation name asks of the mount model.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Question {
    Path(Access),
    Name(Op),
    Move(Move),
    /// An outbound TCP connection to `--remote HOST:PORT`.
    Connect,
}

impl Question {
    /// What the question is asked about, as `sealc explain` takes it.
    pub fn subject(self) -> &'static str {
        match self {
            Question::Path(_)
            | Question::Name(Op::Create | Op::Unlink | Op::Rmdir | Op::Remove) => "PATH",
            Question::Name(Op::Link) => "PATH [--to PATH]",
            Question::Move(_) => "PATH --to PATH",
            Question::Connect => "--remote HOST:PORT",
        }
    }
}

/// What the seatbelt evaluator makes of a name.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Seatbelt {
    /// An operation with this fallback parent (macOS 10.15 table; `default`
    /// ends the chain).
    Parent(&'static str),
    /// Another name of this operation (the prelude's aliases).
    Alias(&'static str),
    /// Not a seatbelt operation the evaluator models.
    No,
}

/// One operation name.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Operation {
    pub name: &'static str,
    pub seatbelt: Seatbelt,
    /// What a `seal.bwrap.json` is asked; `None`: the mount model does
    /// not answer it.
    pub linux: Option<Question>,
}

const fn op(name: &'static str, seatbelt: Seatbelt, linux: Option<Question>) -> Operation {
    Operation {
        name,
        seatbelt,
        linux,
    }
}

use Seatbelt::{Alias, No, Parent};

const READ: Option<Question> = Some(Question::Path(Access::ReadData));
const WRITE: Option<Question> = Some(Question::Path(Access::Write));

/// Every operation modelled, sorted by name.
pub const OPERATIONS: &[Operation] = &[
    op("appleevent-send", Parent("default"), None),
    op("file*", Parent("default"), None),
    op("file-chroot", Parent("file*"), None),
    op("file-clone", Parent("default"), WRITE),
    op("file-ioctl", Parent("file*"), None),
    op("file-issue-extension", Parent("file*"), None),
    op(
        "file-link",
        Parent("default"),
        Some(Question::Name(Op::Link)),
    ),
    op("file-map-executable", Parent("default"), None),
    op("file-mknod", Parent("file*"), None),
    op("file-mount", Parent("file*"), None),
    op("file-mount-update", Parent("file-mount"), None),
    op("file-read*", Parent("file*"), READ),
    op("file-read-data", Parent("file-read*"), READ),
    op(
        "file-read-metadata",
        Parent("file-read*"),
        Some(Question::Path(Access::ReadMetadata)),
    ),
    op("file-read-xattr", Parent("file-read*"), READ),
    op("file-revoke", Parent("file*"), None),
    op("file-search", Parent("file*"), None),
    op("file-test-existence", Parent("default"), None),
    op(
        "file-unlink",
        Alias("file-write-unlink"),
        Some(Question::Name(Op::Remove)),
    ),
    op("file-unmount", Parent("file*"), None),
    op("file-write*", Parent("file*"), WRITE),
    op("file-write-acl", Parent("file-write*"), WRITE),
    op(
        "file-write-create",
        Parent("file-write*"),
        Some(Question::Name(Op::Create)),
    ),
    op("file-write-data", Parent("file-write*"), WRITE),
    op("file-write-finderinfo", Parent("file-write*"), WRITE),
    op("file-write-flags", Parent("file-write*"), WRITE),
    op("file-write-mode", Parent("file-write*"), WRITE),
    op("file-write-owner", Parent("file-write*"), WRITE),
    op("file-write-setugid", Parent("default"), WRITE),
    op("file-write-times", Parent("file-write*"), WRITE),
    op(
        "file-write-unlink",
        Parent("file-write*"),
        Some(Question::Name(Op::Remove)),
    ),
    op("file-write-xattr", Parent("file-write*"), WRITE),
    // IPC and system services (issue 24): asked with `--name`; each
    // parent as the 10.15 table gives it (`tests/sbpl.rs` checks).
    op("iokit*", Parent("default"), None),
    op("iokit-open", Parent("iokit*"), None),
    op("ipc*", Parent("default"), None),
    op("ipc-posix*", Parent("ipc*"), None),
    // `ipc-posix-sem` as profiles write it (Chromium's, Claude Code's):
    // taken as the family, as the prelude makes `ipc-posix-shm` of its own.
    op("ipc-posix-sem", Alias("ipc-posix-sem*"), None),
    op("ipc-posix-sem*", Parent("ipc-posix*"), None),
    op("ipc-posix-shm", Alias("ipc-posix-shm*"), None),
    op("ipc-posix-shm*", Parent("ipc-posix*"), None),
    op("ipc-posix-shm-read-data", Parent("ipc-posix-shm*"), None),
    op("ipc-posix-shm-write*", Parent("ipc-posix-shm*"), None),
    op(
        "ipc-posix-shm-write-create",
        Parent("ipc-posix-shm-write*"),
        None,
    ),
    op(
        "ipc-posix-shm-write-data",
        Parent("ipc-posix-shm-write*"),
        None,
    ),
    op("link", No, Some(Question::Move(Move::Link))),
    op("mach*", Parent("default"), None),
    op("mach-lookup", Parent("mach*"), None),
    op("mach-register", Parent("mach*"), None),
    op("mkdir", No, Some(Question::Name(Op::Create))),
    op("network*", Parent("default"), Some(Question::Connect)),
    op("network-bind", Parent("network-inbound"), None),
    op("network-inbound", Parent("network*"), None),
    op(
        "network-outbound",
        Parent("network*"),
        Some(Question::Connect),
    ),
    op("process*", Parent("default"), None),
    op("process-exec", Alias("process-exec*"), None),
    op("process-exec*", Parent("process*"), None),
    op("process-exec-interpreter", Parent("process-exec*"), None),
    op("process-fork", Parent("process*"), None),
    op("rename", No, Some(Question::Move(Move::Rename))),
    op("rmdir", No, Some(Question::Name(Op::Rmdir))),
    op("signal", Parent("default"), None),
    op("sysctl*", Parent("default"), None),
    op("sysctl-read", Parent("sysctl*"), None),
    op("sysctl-write", Alias("sysctl*"), None),
    op("unlink", No, Some(Question::Name(Op::Unlink))),
    op("user-preference*", Parent("default"), None),
    op("user-preference-read", Parent("user-preference*"), None),
    op("user-preference-write", Parent("user-preference*"), None),
];

/// The namespace of a name an operation is applied to (the seatbelt
/// evaluator's `Target::Name`), and the filter that matches in it.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub enum NameKind {
    /// `global-name` (a lookup in the bootstrap namespace).
    MachGlobal,
    /// `local-name` (a per-process service, such as an XPC service in the
    /// program's bundle).
    MachLocal,
    /// `appleevent-destination` (a bundle identifier).
    AppleEvent,
    /// `iokit-user-client-class` (`iokit-registry-entry-class`).
    IokitClass,
    /// `ipc-posix-name`.
    IpcPosix,
    /// `sysctl-name`.
    Sysctl,
    /// `preference-domain`.
    PreferenceDomain,
    /// `target`: `self`, `same-sandbox` or `others`.
    SignalTarget,
    /// `xpc-service-name` (an XPC service in the program's own domain, as
    /// Codex's policy denies with `(xpc-service-name-prefix "")`): its own
    /// namespace, so such a rule never matches a global or local name.
    XpcService,
}

impl NameKind {
    /// The namespace an operation's name is in (a Mach lookup is asked in
    /// the global namespace); `None` for an operation on a path or an
    /// endpoint.
    pub fn of(op: &str) -> Option<NameKind> {
        let op = match find(op).map(|o| o.seatbelt) {
            Some(Seatbelt::Alias(to)) => to,
            _ => op,
        };
        Some(if op.starts_with("mach") {
            NameKind::MachGlobal
        } else if op == "appleevent-send" {
            NameKind::AppleEvent
        } else if op.starts_with("iokit") {
            NameKind::IokitClass
        } else if op.starts_with("ipc") {
            NameKind::IpcPosix
        } else if op.starts_with("sysctl") {
            NameKind::Sysctl
        } else if op.starts_with("user-preference") {
            NameKind::PreferenceDomain
        } else if op == "signal" {
            NameKind::SignalTarget
        } else {
            return None;
        })
    }

    /// What `sealc explain` calls the name it is asked.
    pub fn noun(self) -> &'static str {
        match self {
            NameKind::MachGlobal => "Mach service (global name)",
            NameKind::MachLocal => "Mach service (local name)",
            NameKind::AppleEvent => "Apple Events destination",
            NameKind::IokitClass => "IOKit user client class",
            NameKind::IpcPosix => "POSIX IPC name",
            NameKind::Sysctl => "sysctl",
            NameKind::PreferenceDomain => "preference domain",
            NameKind::SignalTarget => "signal target",
            NameKind::XpcService => "XPC service",
        }
    }
}

/// The operation named `name`.
pub fn find(name: &str) -> Option<&'static Operation> {
    place(name).map(|i| &OPERATIONS[i])
}

/// The place of the operation `name` in [`OPERATIONS`]. A scan: names
/// of another length are passed over without reading them, which costs
/// less than a binary search's comparisons of bytes (measured).
pub fn place(name: &str) -> Option<usize> {
    OPERATIONS.iter().position(|o| o.name == name)
}

/// Every name, sorted.
pub fn names() -> Vec<&'static str> {
    OPERATIONS.iter().map(|o| o.name).collect()
}

/// What to say of a name that is not in the table: the nearest name, if
/// one is close, and every name.
pub fn unknown(name: &str) -> (Option<&'static str>, String) {
    (crate::diag::did_you_mean(name, names()), names().join(", "))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_table_is_sorted_unique_and_closed() {
        let names = names();
        let mut sorted = names.clone();
        sorted.sort_unstable();
        sorted.dedup();
        assert_eq!(names, sorted);
        // Each is found where it is, and nothing else is found.
        for (i, o) in OPERATIONS.iter().enumerate() {
            assert_eq!(place(o.name), Some(i), "{}", o.name);
        }
        for absent in ["", "default", "file-read", "zzz", "file-read-data "] {
            assert_eq!(place(absent), None, "{absent}");
        }
        for o in OPERATIONS {
            match o.seatbelt {
                Parent(p) => assert!(p == "default" || find(p).is_some(), "{}", o.name),
                Alias(a) => assert!(
                    matches!(find(a).map(|t| t.seatbelt), Some(Parent(_))),
                    "{}",
                    o.name
                ),
                No => assert!(o.linux.is_some(), "{} is answered by no seal", o.name),
            }
        }
    }

    #[test]
    fn a_typo_finds_its_operation() {
        assert_eq!(unknown("file-raed-data").0, Some("file-read-data"));
        assert_eq!(unknown("file-write-dat").0, Some("file-write-data"));
        assert_eq!(unknown("renmae").0, Some("rename"));
        assert_eq!(unknown("nvram-get").0, None);
        assert!(unknown("x")
            .1
            .starts_with("appleevent-send, file*, file-chroot, "));
    }
}
