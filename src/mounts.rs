//! A model of what a `seal.bwrap.json` builds, read back from its bytes, so
//! `[[assert]]`s are proved on the Linux artifact as they are on `seal.sb`.
//!
//! Bubblewrap applies its options in order; the last mount whose destination
//! covers a path decides what that path is. The model answers, under the
//! assumption the recorded facts still hold on the host:
//!
//! - per path ([`Model::path`]): can its data be read, can its metadata be
//!   read, can it be written;
//! - per name ([`Model::name`]): can a new name be made, can a name be
//!   unlinked, removed as a directory, removed or renamed away, can its object
//!   be hard-linked into a write root;
//! - from one path to another ([`Model::moved`]): `rename`, `link`.
//!
//! Names follow the kernel, not the policy alone: a mount point cannot be
//! unlinked, removed or renamed (`EBUSY`); a rename or a hard link never
//! crosses from one mount to another (`EXDEV`), even when both are writable
//! binds of one file system; nothing is made or removed in a read-only mount
//! (`EROFS`); a hidden directory (an empty tmpfs, remounted read-only) holds
//! nothing but the mount points bubblewrap made on the way to deeper mounts.
//! What the model cannot see on the host is taken to be what the operation
//! needs: a file to unlink or link, an empty directory to remove, no entry at
//! a new name, a directory above it, and an agent that owns them (no
//! permission bits, sticky directories or `protected_hardlinks` refusal).
//! Paths are absolute and taken as given: no component but the last is a
//! symlink, and the last is not followed.
//!
//! `seal.bwrap.json` mounts nothing for a root that was absent when compiled
//! (and `sealc exec` refuses a host where one has appeared), so every mount
//! it lists exists; the exceptions, `--ro-bind-try` of a deny-default
//! system root and of what the sandbox's own `/sys` shows of the host's
//! (`bwrap::SYS_SHOWN`), are modelled as present. Host mounts below a bound
//! root are not in the artifact, so the model takes each bind to be one
//! mount.

use std::collections::{BTreeMap, BTreeSet};

use serde::Deserialize;

use crate::facts::normalize;
use crate::ir::is_within;

#[derive(Deserialize)]
struct File {
    #[serde(default)]
    links: BTreeMap<String, String>,
    network: Network,
    steps: Vec<Step>,
}

#[derive(Deserialize)]
struct Network {
    mode: String,
    proxy: Option<String>,
}

#[derive(Deserialize)]
struct Step {
    args: Vec<String>,
    #[serde(default)]
    spec: Option<String>,
    #[serde(default)]
    why: String,
}

/// One step of the artifact, as an answer names it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct StepInfo {
    /// Its place among the artifact's `steps`, from 1.
    pub number: usize,
    /// Its arguments, joined by spaces (as answers quote it).
    pub text: String,
    /// The spec entry it comes from (`filesystem.write "${ws}"`).
    pub spec: Option<String>,
    /// The reason the artifact gives for it.
    pub why: String,
}

#[derive(Clone, Debug, PartialEq, Eq)]
enum Mount {
    /// The host tree from `src`, read-only or not.
    Bind { writable: bool },
    /// An empty tmpfs: a hidden or metadata-only directory when remounted
    /// read-only, else the sandbox's own scratch space.
    Tmpfs,
    /// `/dev/null` over a hidden file.
    EmptyFile,
    /// A symlink made by bubblewrap (a launcher chain entry, a root written
    /// through a link the sandbox would not show), with its text: an entry
    /// in the mount below it, not a mount of its own.
    Literal { target: String },
    /// A device node bound from the host.
    Device,
    /// `--proc`, `--dev`.
    Special,
}

pub use crate::ops::{Access, Move, Op, Question};

/// The answer and the step (by index and text) that decided it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Answer {
    pub allowed: bool,
    pub why: String,
}

pub(crate) fn allow(why: String) -> Answer {
    Answer { allowed: true, why }
}

pub(crate) fn deny(why: String) -> Answer {
    Answer {
        allowed: false,
        why,
    }
}

/// The directory that holds `path`'s name; `None` for `/` or a relative path.
pub(crate) fn parent(path: &str) -> Option<&str> {
    match path.rsplit_once('/') {
        Some(("", "")) | None => None,
        Some(("", _)) => Some("/"),
        Some((dir, _)) => Some(dir),
    }
}

/// The namespace a bwrap argv builds.
#[derive(Debug)]
pub struct Model {
    mounts: Vec<(String, Mount, String)>,
    steps: Vec<StepInfo>,
    /// Roots written through a symlink on the host: the path as written,
    /// and the realpath it leads to.
    links: BTreeMap<String, String>,
    /// `--remount-ro` destinations, with the step's text.
    read_only: Vec<(String, String)>,
    net_unshared: bool,
    proxy: Option<String>,
}

impl Model {
    /// Read `seal.bwrap.json` back.
    pub fn from_artifact(bytes: &[u8]) -> Result<Model, String> {
        let file: File = serde_json::from_slice(bytes).map_err(|e| e.to_string())?;
        let mut mounts = Vec::new();
        let mut read_only = Vec::new();
        let mut net_unshared = false;
        let mut steps = Vec::new();
        for (i, s) in file.steps.iter().enumerate() {
            let text = s.args.join(" ");
            steps.push(StepInfo {
                number: i + 1,
                text: text.clone(),
                spec: s.spec.clone(),
                why: s.why.clone(),
            });
            use crate::backend::bwrap::{Bind, Flag, Op};
            match Op::parse(&s.args)? {
                // `/dev/null` bound anywhere (even over itself: a denied
                // device) is a stand-in: nothing of the host's to read.
                Op::Bind {
                    how: Bind::ReadOnly,
                    src,
                    dst,
                    ..
                } if src == "/dev/null" => mounts.push((dst, Mount::EmptyFile, text)),
                Op::Bind { how, dst, .. } => {
                    let mount = match how {
                        Bind::ReadOnly => Mount::Bind { writable: false },
                        Bind::Writable => Mount::Bind { writable: true },
                        Bind::Device => Mount::Device,
                    };
                    mounts.push((dst, mount, text))
                }
                Op::Tmpfs(d) => mounts.push((d, Mount::Tmpfs, text)),
                Op::Symlink { target, at } => mounts.push((at, Mount::Literal { target }, text)),
                Op::Proc(d) | Op::Dev(d) => mounts.push((d, Mount::Special, text)),
                Op::RemountRo(d) => read_only.push((d, text)),
                Op::Flag(Flag::UnshareNet) => net_unshared = true,
                Op::Flag(_) | Op::CapDrop(_) => {}
            }
        }
        if !net_unshared && file.network.mode != "open" {
            return Err(format!(
                "network `{}` without `--unshare-net`",
                file.network.mode
            ));
        }
        Ok(Model {
            mounts,
            steps,
            links: file.links,
            read_only,
            net_unshared,
            proxy: file.network.proxy,
        })
    }

    /// The steps an answer names, in the order it names them (each answer
    /// quotes a step by its text in backticks; the first is the one that
    /// decides, a second the other side of a move).
    pub fn steps_named(&self, a: &Answer) -> Vec<&StepInfo> {
        let mut found: Vec<(usize, &StepInfo)> = self
            .steps
            .iter()
            .filter_map(|s| a.why.find(&format!("`{}`", s.text)).map(|at| (at, s)))
            .collect();
        found.sort_by_key(|(at, s)| (*at, s.number));
        found.dedup_by(|a, b| a.1.text == b.1.text);
        found.into_iter().map(|(_, s)| s).collect()
    }

    /// Also follow these symlinks of the host (a link's path, and where it
    /// leads), where the sandbox shows them: the host's tree binds them
    /// from above. `seal.bwrap.json` itself lists only the roots written
    /// through a link.
    pub fn know_links(&mut self, links: impl IntoIterator<Item = (String, String)>) {
        self.links.extend(links);
    }

    /// May `access` happen on `path`?
    pub fn path(&self, access: Access, path: &str) -> Answer {
        // Data and writes follow a final symlink (`open`); metadata is the
        // name's own (`lstat`).
        let resolved = self.resolve(path, access != Access::ReadMetadata);
        let path = resolved.as_str();
        let Some((dest, mount, text)) = self
            .mounts
            .iter()
            .rev()
            .find(|(dest, _, _)| is_within(path, dest))
        else {
            // Bubblewrap makes the directories on the way to a mount.
            let on_the_way = self.mounts.iter().any(|(d, _, _)| is_within(d, path));
            return Answer {
                allowed: on_the_way && access == Access::ReadMetadata,
                why: if on_the_way {
                    "a directory bubblewrap made on the way to a mount (stat only)".into()
                } else {
                    "no mount covers it: it does not exist in the sandbox".into()
                },
            };
        };
        let why = format!("`{text}`");
        // A path strictly inside a tmpfs, with no deeper mount, does not exist
        // there; unless a deeper mount lies under it, then it is a directory
        // bubblewrap made on the way (stat only).
        let exact = path == dest;
        let on_the_way = self
            .mounts
            .iter()
            .any(|(d, _, _)| d != dest && is_within(d, path) && is_within(path, dest));
        let ro = self.is_read_only(dest);
        let allowed = match (mount, access) {
            (Mount::Bind { writable }, Access::Write) => *writable && !ro,
            (Mount::Bind { .. }, _) => true,
            // A tmpfs left writable is the sandbox's own scratch space
            // (`/dev/shm`): whatever is in it, the sandbox put there.
            (Mount::Tmpfs, _) if !ro => true,
            (Mount::Tmpfs, Access::ReadMetadata) => exact || on_the_way,
            (Mount::Tmpfs, Access::ReadData | Access::Write) => false,
            (Mount::EmptyFile, Access::ReadMetadata) => exact,
            (Mount::EmptyFile, _) => false,
            (Mount::Literal { .. }, Access::Write) => false,
            (Mount::Literal { .. }, _) => exact,
            (Mount::Device, _) => exact,
            // `--dev`'s device nodes stay writable (a device ignores a
            // read-only mount); nothing else in /dev can be written.
            (Mount::Special, Access::Write) => {
                dest == "/dev" && crate::backend::bwrap::DEV_SET.contains(&path)
            }
            (Mount::Special, _) => true,
        };
        Answer { allowed, why }
    }

    /// May `op` happen to the name `path`?
    pub fn name(&self, op: Op, path: &str) -> Answer {
        let resolved = self.resolve(path, false);
        let path = resolved.as_str();
        let Some(dir) = parent(path) else {
            return deny(format!(
                "`{path}` has no directory to change: the sandbox's root is a mount point (EBUSY)"
            ));
        };
        if let Some(no) = self.absent(dir) {
            return no;
        }
        if op == Op::Create {
            if let Some(no) = self.made_here(path) {
                return no;
            }
            let holder = self.holder(dir);
            return match self.unwritable(holder) {
                Some(no) => no,
                None => allow(format!(
                    "{}: a writable mount, and nothing is mounted at `{path}`",
                    self.step_of(holder)
                )),
            };
        }
        if op == Op::Link {
            return self.link_anywhere(path);
        }
        let holder = self.holder(dir);
        if let Some(no) = self.unwritable(holder) {
            return no;
        }
        if let Some(no) = self.absent(path) {
            return no;
        }
        if let Some(no) = self.mount_point(path) {
            return no;
        }
        if op == Op::Rmdir {
            if let Some((d, _, text)) = self.below(path) {
                return deny(format!(
                    "`{text}` mounts `{d}` inside it: not empty (ENOTEMPTY)"
                ));
            }
        }
        let how = match op {
            Op::Unlink => "it can be unlinked",
            Op::Rmdir => "it can be removed",
            _ => {
                "it can be unlinked, removed when an empty directory, or renamed within that mount"
            }
        };
        allow(format!(
            "{}: a writable mount, and `{path}` is not a mount point; {how}",
            self.step_of(holder)
        ))
    }

    /// May `op` go from `from` to the new name `to`?
    pub fn moved(&self, op: Move, from: &str, to: &str) -> Answer {
        let (from, to) = (self.resolve(from, false), self.resolve(to, false));
        let (from, to) = (from.as_str(), to.as_str());
        let (Some(from_dir), Some(to_dir)) = (parent(from), parent(to)) else {
            return deny(
                "the sandbox's root is a mount point: it is neither moved nor made (EBUSY)".into(),
            );
        };
        match op {
            Move::Rename => {
                if let Some(no) = self.absent(from_dir).or_else(|| self.absent(to_dir)) {
                    return no;
                }
                let (a, b) = (self.holder(from_dir), self.holder(to_dir));
                if a != b {
                    return deny(format!(
                        "{} and {}: different mounts, a rename cannot cross them (EXDEV)",
                        self.step_of(a),
                        self.step_of(b)
                    ));
                }
                if let Some(decided) = self
                    .unwritable(a)
                    .or_else(|| self.absent(from))
                    .or_else(|| {
                        (from == to).then(|| {
                            allow(format!("`{from}` renamed to itself: nothing changes"))
                        })
                    })
                    .or_else(|| {
                        is_within(to, from).then(|| {
                            deny(format!(
                                "`{to}` is inside `{from}`: a directory cannot move into itself (EINVAL)"
                            ))
                        })
                    })
                    .or_else(|| self.mount_point(from))
                    .or_else(|| self.made_here(to))
                {
                    return decided;
                }
                allow(format!(
                    "{}: one writable mount holds both names, and neither is a mount point",
                    self.step_of(a)
                ))
            }
            Move::Link => {
                if let Some(no) = self
                    .absent(from)
                    .or_else(|| self.absent(to_dir))
                    .or_else(|| self.made_here(to))
                {
                    return no;
                }
                let b = self.holder(to_dir);
                if let Some(no) = self.unwritable(b) {
                    return no;
                }
                let a = self.holder(from);
                if a != b {
                    return deny(format!(
                        "`{from}` is on {}, `{to}` on {}: a hard link cannot cross mounts (EXDEV)",
                        self.step_of(a),
                        self.step_of(b)
                    ));
                }
                allow(format!(
                    "{}: one writable mount holds `{from}` and `{to}`",
                    self.step_of(b)
                ))
            }
        }
    }

    /// Answer an operation by the name `sealc explain` and `[[assert]]`
    /// use (see [`question_of`]), on one path or, for `rename` and `link`
    /// (`file-link` too), from `path` to `to`. `None`: not modelled for
    /// that many paths.
    pub fn ask(&self, op: &str, path: &str, to: Option<&str>) -> Option<Answer> {
        match (question_of(op)?, to) {
            (Question::Path(a), None) => Some(self.path(a, path)),
            (Question::Name(o), None) => Some(self.name(o, path)),
            (Question::Name(Op::Link), Some(to)) => Some(self.moved(Move::Link, path, to)),
            (Question::Move(m), Some(to)) => Some(self.moved(m, path, to)),
            _ => None,
        }
    }

    /// `file-link` on one path: can it be hard-linked into some write root?
    /// Only within its own mount, so that mount must be writable and the
    /// file not a mount of its own.
    fn link_anywhere(&self, path: &str) -> Answer {
        if let Some(no) = self.absent(path) {
            return no;
        }
        let holder = self.holder(path);
        if let Some((dest, _, text)) = holder.and_then(|i| self.mounts.get(i)) {
            if dest == path {
                return deny(format!(
                    "`{text}` is a mount of its own: a hard link of it cannot be made anywhere else (EXDEV)"
                ));
            }
        }
        match self.unwritable(holder) {
            Some(no) => deny(format!(
                "{}, and a hard link cannot leave its mount (EXDEV)",
                no.why
            )),
            None => allow(format!(
                "{}: a writable mount; a hard link can be made within it",
                self.step_of(holder)
            )),
        }
    }

    /// The path the kernel reaches in the sandbox: every symlink the
    /// sandbox shows on the way is followed (one bubblewrap made, or a
    /// root's recorded link where the host's tree shows it), the final
    /// component only with `last`. Other components are taken as given.
    pub fn resolve(&self, path: &str, last: bool) -> String {
        let mut cur = path.to_string();
        // As the kernel, give up after 40 links (the path is then as far as
        // it got: the answer is about a path that does not resolve).
        for _ in 0..40 {
            let comps: Vec<&str> = cur.split('/').filter(|c| !c.is_empty()).collect();
            let mut prefix = String::new();
            let mut next = None;
            for (i, c) in comps.iter().enumerate() {
                if i + 1 == comps.len() && !last {
                    break;
                }
                prefix.push('/');
                prefix.push_str(c);
                if let Some(target) = self.link_at(&prefix) {
                    let base = if target.starts_with('/') {
                        target
                    } else {
                        format!("{}/{target}", parent(&prefix).unwrap_or("/"))
                    };
                    next = Some(normalize(&format!("{base}/{}", comps[i + 1..].join("/"))));
                    break;
                }
            }
            match next {
                Some(n) => cur = n,
                None => break,
            }
        }
        cur
    }

    /// The text of the symlink the sandbox shows at `p`, if it shows one
    /// there that the model knows.
    fn link_at(&self, p: &str) -> Option<String> {
        let (dest, mount, _) = self.mounts.iter().rev().find(|(d, _, _)| is_within(p, d))?;
        match mount {
            Mount::Literal { target } if dest == p => Some(target.clone()),
            Mount::Bind { .. } if dest != p => self.links.get(p).cloned(),
            _ => None,
        }
    }

    fn is_read_only(&self, dest: &str) -> bool {
        self.read_only.iter().any(|(r, _)| r == dest)
    }

    /// The mount whose tree holds `path` (the mount at `path` when it is a
    /// mount point); `None`: the sandbox's own root, bubblewrap's tmpfs. A
    /// `--symlink` is an entry in a mount, not a mount.
    fn holder(&self, path: &str) -> Option<usize> {
        self.mounts
            .iter()
            .rposition(|(d, m, _)| !matches!(m, Mount::Literal { .. }) && is_within(path, d))
    }

    fn step_of(&self, holder: Option<usize>) -> String {
        match holder.and_then(|i| self.mounts.get(i)) {
            Some((_, _, text)) => format!("`{text}`"),
            None => "the sandbox's own root".into(),
        }
    }

    /// Why nothing can be made or removed in the mount `holder`, if so.
    fn unwritable(&self, holder: Option<usize>) -> Option<Answer> {
        let Some((dest, mount, text)) = holder.and_then(|i| self.mounts.get(i)) else {
            let remount = self
                .read_only
                .iter()
                .find(|(r, _)| r == "/")
                .map(|(_, t)| format!(" by `{t}`"))
                .unwrap_or_default();
            return Some(deny(format!(
                "the sandbox's own root: read-only{remount} (EROFS)"
            )));
        };
        let remount = self.read_only.iter().find(|(r, _)| r == dest);
        match (mount, remount) {
            (Mount::Bind { writable: true } | Mount::Tmpfs, None) => None,
            (Mount::Bind { writable: true } | Mount::Tmpfs, Some((_, t))) => {
                Some(deny(format!("`{text}`: read-only since `{t}` (EROFS)")))
            }
            (Mount::Bind { writable: false }, _) => {
                Some(deny(format!("`{text}`: read-only (EROFS)")))
            }
            (Mount::Special, Some((_, t))) => {
                Some(deny(format!("`{text}`: read-only since `{t}` (EROFS)")))
            }
            // `/proc` refuses each change in its own way (ENOENT, EACCES).
            (Mount::Special, None) => Some(deny(format!(
                "`{text}`: nothing can be made, removed or renamed in it"
            ))),
            // Only reached for the file itself, as a directory.
            (Mount::EmptyFile | Mount::Device | Mount::Literal { .. }, _) => {
                Some(deny(format!("`{text}` is not a directory (ENOTDIR)")))
            }
        }
    }

    /// Why `path` is not there in the sandbox, if so.
    fn absent(&self, path: &str) -> Option<Answer> {
        if self.path(Access::ReadMetadata, path).allowed {
            return None;
        }
        Some(deny(
            match self
                .mounts
                .iter()
                .rev()
                .find(|(d, _, _)| is_within(path, d))
            {
                Some((_, _, text)) => format!("`{text}`: `{path}` is not there (ENOENT)"),
                None => format!("no mount covers `{path}`: it is not there (ENOENT)"),
            },
        ))
    }

    /// Why `path` cannot be removed or renamed because it is a mount point.
    fn mount_point(&self, path: &str) -> Option<Answer> {
        let (dest, _, text) = self.holder(path).and_then(|i| self.mounts.get(i))?;
        (dest == path).then(|| {
            deny(format!(
                "`{text}` makes `{path}` a mount point: it cannot be removed or renamed (EBUSY)"
            ))
        })
    }

    /// Why a new name `path` cannot be made: bubblewrap already put a mount
    /// point, a symlink or a directory on the way to a mount there.
    fn made_here(&self, path: &str) -> Option<Answer> {
        let (_, _, text) = self
            .mounts
            .iter()
            .rev()
            .find(|(d, _, _)| d == path)
            .or_else(|| self.below(path))?;
        Some(deny(format!(
            "`{text}`: `{path}` is already there (EEXIST)"
        )))
    }

    /// The names a listing of the directory `dir` shows where bubblewrap
    /// made it (a hidden directory's stand-in, a directory on the way to a
    /// mount): the next name towards each deeper mount or symlink. Where
    /// the host's tree shows (`file-read-data` on `dir` is allowed), a
    /// listing shows the host's entries instead.
    pub fn shown(&self, dir: &str) -> BTreeSet<String> {
        let dir = self.resolve(dir, true);
        let dir = dir.as_str();
        self.mounts
            .iter()
            .filter(|(d, _, _)| d != dir && is_within(d, dir))
            .filter_map(|(d, _, _)| {
                let rest = if dir == "/" {
                    &d[1..]
                } else {
                    &d[dir.len() + 1..]
                };
                rest.split('/').next().map(str::to_string)
            })
            .collect()
    }

    /// A mount (or `--symlink`) strictly inside `path`.
    fn below(&self, path: &str) -> Option<&(String, Mount, String)> {
        self.mounts
            .iter()
            .find(|(d, _, _)| d != path && is_within(d, path))
    }

    /// May the sandbox connect to `host:port`?
    pub fn connect(&self, host: &str, port: u16) -> Answer {
        if !self.net_unshared {
            return Answer {
                allowed: true,
                why: "network open: no `--unshare-net`".into(),
            };
        }
        let target = format!("{host}:{port}");
        match &self.proxy {
            Some(p) if *p == target => Answer {
                allowed: true,
                why: format!("the proxy `{p}`, bridged by `sealc exec`"),
            },
            _ => Answer {
                allowed: false,
                why: "`--unshare-net`: only the sandbox's own loopback exists".into(),
            },
        }
    }
}

/// What an operation name asks on a Linux seal ([`crate::ops`]): the
/// seatbelt names an assertion may use on a path (`file-write-unlink` is
/// [`Op::Remove`], `file-write-create` [`Op::Create`], `file-link`
/// [`Op::Link`], or [`Move::Link`] given a destination), the system calls
/// `mkdir`, `unlink`, `rmdir`, `rename` and `link`, and an outbound
/// connection (`network-outbound`, `network*`).
pub fn question_of(op: &str) -> Option<Question> {
    crate::ops::find(op)?.linux
}

#[cfg(test)]
mod tests;
