//! A model of what a `seal.bwrap.json` builds, read back from its bytes, so
//! `[[assert]]`s are proved on the Linux artifact as they are on `seal.sb`.
//!
//! Bubblewrap applies its options in order; the last mount whose destination
//! covers a path decides what that path is. The model answers three questions
//! per path, under the assumption the recorded facts still hold on the host:
//! can its data be read, can its metadata be read, can it be written. For a
//! remote endpoint it answers from the network namespace and the proxy.
//!
//! `seal.bwrap.json` mounts nothing for a root that was absent when compiled
//! (and `sealc exec` refuses a host where one has appeared), so every mount
//! it lists exists; the one exception, `--ro-bind-try` of a deny-default
//! system root, is modelled as present.

use serde::Deserialize;

use crate::ir::is_within;

#[derive(Deserialize)]
struct File {
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
    /// A symlink re-created by literal path, or a device.
    Literal,
    /// A device node bound from the host.
    Device,
    /// `--proc`, `--dev`.
    Special,
}

/// What one access needs.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Access {
    ReadData,
    ReadMetadata,
    Write,
}

/// The answer and the step (by index and text) that decided it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Answer {
    pub allowed: bool,
    pub why: String,
}

/// The namespace a bwrap argv builds.
#[derive(Debug)]
pub struct Model {
    mounts: Vec<(String, Mount, String)>,
    read_only: Vec<String>,
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
        for s in &file.steps {
            let text = s.args.join(" ");
            let arg = |i: usize| {
                s.args
                    .get(i)
                    .cloned()
                    .ok_or_else(|| format!("step `{text}` lacks an argument"))
            };
            match s.args.first().map(String::as_str) {
                Some("--ro-bind" | "--ro-bind-try")
                    if s.args.get(1).map(String::as_str) == Some("/dev/null")
                        && arg(2)? != "/dev/null" =>
                {
                    mounts.push((arg(2)?, Mount::EmptyFile, text))
                }
                Some("--ro-bind" | "--ro-bind-try") => {
                    mounts.push((arg(2)?, Mount::Bind { writable: false }, text))
                }
                Some("--bind" | "--bind-try") => {
                    mounts.push((arg(2)?, Mount::Bind { writable: true }, text))
                }
                Some("--tmpfs") => mounts.push((arg(1)?, Mount::Tmpfs, text)),
                Some("--symlink") => mounts.push((arg(2)?, Mount::Literal, text)),
                Some("--dev-bind-try" | "--dev-bind") => {
                    mounts.push((arg(2)?, Mount::Device, text))
                }
                Some("--proc" | "--dev") => mounts.push((arg(1)?, Mount::Special, text)),
                Some("--remount-ro") => read_only.push(arg(1)?),
                Some("--unshare-net") => net_unshared = true,
                Some(
                    "--unshare-pid"
                    | "--unshare-ipc"
                    | "--unshare-uts"
                    | "--new-session"
                    | "--die-with-parent"
                    | "--unshare-user"
                    | "--disable-userns"
                    | "--as-pid-1"
                    | "--unshare-cgroup-try",
                ) => {}
                Some("--cap-drop") => {
                    arg(1)?;
                }
                _ => return Err(format!("step `{text}` is not modelled")),
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
            read_only,
            net_unshared,
            proxy: file.network.proxy,
        })
    }

    /// May `access` happen on `path`?
    pub fn path(&self, access: Access, path: &str) -> Answer {
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
        let ro = self.read_only.iter().any(|r| r == dest);
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
            (Mount::Literal, Access::Write) => false,
            (Mount::Literal, _) => exact,
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

/// The access a seatbelt operation name needs, for the operations an
/// assertion may name on a path.
pub fn access_of(op: &str) -> Option<Access> {
    match op {
        "file-read-metadata" => Some(Access::ReadMetadata),
        "file-read*" | "file-read-data" | "file-read-xattr" => Some(Access::ReadData),
        o if o.starts_with("file-write") => Some(Access::Write),
        "file-link" | "file-clone" => Some(Access::Write),
        _ => None,
    }
}
