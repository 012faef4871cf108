//! A model of what a `seal.landlock.json` lets the command do, read back
//! from its bytes, so `[[assert]]`s are proved on the Landlock mode's seal
//! as they are on `seal.sb` and `seal.bwrap.json`.
//!
//! Landlock grants access beneath a path and never takes it back deeper:
//!
//! - data is read beneath a `read` rule unless the path lies in a root the
//!   artifact hides from that rule (`sealc exec` grants the rule's access on
//!   the entries beside the hidden root instead), or beneath a `write` rule;
//! - metadata is read everywhere: Landlock refuses no `stat` (nor the walk
//!   of a path), so only the host's own permissions decide it;
//! - a file is written beneath a `write` rule only; a name is made or
//!   removed in a directory beneath one; a rename or a hard link stays
//!   within what the write rules cover (Landlock refuses one that would
//!   give a file access it did not have, `EXDEV`);
//! - TCP connect reaches the ports listed, on any address (Landlock's TCP
//!   rules name a port, not an address); no list: any.
//!
//! Paths are absolute and taken as given, after the artifact's `links`
//! (a root written through a symlink: its rule is at the realpath).

use std::collections::BTreeMap;

use serde::Deserialize;

use crate::ir::is_within;
use crate::mounts::{allow, deny, parent, Answer};
use crate::ops::{Access, Move, Op, Question};

#[derive(Deserialize)]
struct File {
    #[serde(default)]
    links: BTreeMap<String, String>,
    network: Network,
    rules: Vec<Rule>,
    hidden: Vec<Hidden>,
}

#[derive(Deserialize)]
struct Network {
    tcp_connect: Option<Vec<u16>>,
}

#[derive(Deserialize)]
struct Rule {
    access: String,
    path: String,
}

#[derive(Deserialize)]
struct Hidden {
    from: String,
    path: String,
}

/// What a `seal.landlock.json` grants.
#[derive(Debug)]
pub struct Model {
    rules: Vec<(String, crate::backend::landlock::Access)>,
    hidden: Vec<(String, String)>,
    links: BTreeMap<String, String>,
    tcp_connect: Option<Vec<u16>>,
}

impl Model {
    /// Read a `seal.landlock.json`.
    pub fn from_artifact(bytes: &[u8]) -> Result<Model, String> {
        let f: File = serde_json::from_slice(bytes).map_err(|e| e.to_string())?;
        let mut rules = Vec::new();
        for r in f.rules {
            let access = crate::backend::landlock::Access::parse(&r.access)
                .ok_or_else(|| format!("unknown access `{}`", r.access))?;
            rules.push((r.path, access));
        }
        Ok(Model {
            rules,
            hidden: f.hidden.into_iter().map(|h| (h.path, h.from)).collect(),
            links: f.links,
            tcp_connect: f.network.tcp_connect,
        })
    }

    /// `path` with a root's recorded link replaced by its realpath.
    fn real(&self, path: &str) -> String {
        for (link, real) in &self.links {
            if let Some(rest) = path.strip_prefix(link.as_str()) {
                if rest.is_empty() || rest.starts_with('/') {
                    return format!("{real}{rest}");
                }
            }
        }
        path.to_string()
    }

    /// The deepest write rule over `path`.
    fn writer(&self, path: &str) -> Option<&str> {
        use crate::backend::landlock::Access as A;
        self.rules
            .iter()
            .filter(|(p, a)| *a == A::Write && is_within(path, p))
            .map(|(p, _)| p.as_str())
            .max_by_key(|p| p.len())
    }

    /// Can `path`'s data be read? With the rule that decides.
    fn read_data(&self, path: &str) -> Answer {
        use crate::backend::landlock::Access as A;
        if let Some(w) = self.writer(path) {
            return allow(format!("write rule `{w}`"));
        }
        let mut hidden_by = None;
        for (p, _) in self
            .rules
            .iter()
            .filter(|(p, a)| *a == A::Read && is_within(path, p))
        {
            // The rule is granted on the entries beside each root hidden
            // strictly inside it.
            match self
                .hidden
                .iter()
                .find(|(h, _)| h != p && is_within(h, p) && is_within(path, h))
            {
                None => return allow(format!("read rule `{p}`")),
                Some((h, _)) => hidden_by = Some((p.clone(), h.clone())),
            }
        }
        match hidden_by {
            Some((p, h)) => deny(format!(
                "hidden root `{h}`: kept out of read rule `{p}` (its names and metadata stay readable)"
            )),
            None => deny("no read or write rule is over it".into()),
        }
    }

    /// One path: read its data, its metadata, or write it.
    pub fn path(&self, access: Access, path: &str) -> Answer {
        let path = self.real(path);
        match access {
            Access::ReadData => self.read_data(&path),
            Access::ReadMetadata => allow(
                "Landlock refuses no stat: every path's metadata is read where the host's permissions allow".into(),
            ),
            Access::Write => match self.writer(&path) {
                Some(w) => allow(format!("write rule `{w}`")),
                None => deny("no write rule is over it".into()),
            },
        }
    }

    /// One name: made, removed, or hard-linked into a write root.
    pub fn name(&self, op: Op, path: &str) -> Answer {
        let path = self.real(path);
        if op == Op::Link {
            // A link may only go where it gains no access (EXDEV).
            return match self.writer(&path) {
                Some(w) => allow(format!(
                    "write rule `{w}`: a hard link can be made beneath it"
                )),
                None => deny(
                    "no write rule is over it: Landlock refuses a link that would make it writable (EXDEV)"
                        .into(),
                ),
            };
        }
        let Some(dir) = parent(&path) else {
            return deny("`/` has no directory to change".into());
        };
        match self.writer(dir) {
            Some(w) => allow(format!("write rule `{w}` is over its directory")),
            None => deny("no write rule is over its directory".into()),
        }
    }

    /// From one path to a new name: both within the write rules.
    pub fn moved(&self, op: Move, from: &str, to: &str) -> Answer {
        let (from, to) = (self.real(from), self.real(to));
        let to_dir = parent(&to).unwrap_or("/");
        let from_ok = match op {
            Move::Rename => parent(&from).and_then(|d| self.writer(d)),
            Move::Link => self.writer(&from),
        };
        match (from_ok, self.writer(to_dir)) {
            (Some(a), Some(b)) => allow(format!("write rules `{a}` and `{b}`")),
            (None, _) => deny(format!(
                "no write rule is over `{from}`{}: Landlock refuses it",
                if op == Move::Rename {
                    "'s directory"
                } else {
                    ""
                }
            )),
            (_, None) => deny(format!("no write rule is over `{to_dir}`")),
        }
    }

    /// As [`crate::mounts::Model::ask`].
    pub fn ask(&self, op: &str, path: &str, to: Option<&str>) -> Option<Answer> {
        match (crate::mounts::question_of(op)?, to) {
            (Question::Path(a), None) => Some(self.path(a, path)),
            (Question::Name(o), None) => Some(self.name(o, path)),
            (Question::Name(Op::Link), Some(to)) => Some(self.moved(Move::Link, path, to)),
            (Question::Move(m), Some(to)) => Some(self.moved(m, path, to)),
            _ => None,
        }
    }

    /// May the command connect to `host:port`?
    pub fn connect(&self, _host: &str, port: u16) -> Answer {
        match &self.tcp_connect {
            None => allow("network open: TCP is not restricted".into()),
            Some(ports) if ports.contains(&port) => allow(format!(
                "Landlock lets TCP connect to port {port}, on any address (its rules name no address)"
            )),
            Some(_) => deny(format!("Landlock lets no TCP connect to port {port}")),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn model() -> Model {
        Model::from_artifact(
            br#"{"links":{"/l":"/w"},"network":{"tcp_connect":[3128]},
            "rules":[{"access":"read","path":"/"},{"access":"write","path":"/w"},
                     {"access":"read","path":"/h/again"},{"access":"list","path":"/m"}],
            "hidden":[{"from":"/","path":"/h"},{"from":"/","path":"/m"}]}"#,
        )
        .unwrap()
    }

    #[test]
    fn hidden_roots_keep_their_data_not_their_names() {
        let m = model();
        assert!(m.path(Access::ReadData, "/etc/passwd").allowed);
        assert!(!m.path(Access::ReadData, "/h/key").allowed);
        assert!(m.path(Access::ReadData, "/h/again/x").allowed);
        assert!(!m.path(Access::ReadData, "/m/x").allowed);
        assert!(m.path(Access::ReadMetadata, "/h/key").allowed);
        assert!(!m.path(Access::Write, "/etc/passwd").allowed);
        assert!(m.path(Access::Write, "/l/x").allowed);
        assert!(m.name(Op::Create, "/w/new").allowed);
        assert!(!m.name(Op::Remove, "/w").allowed);
        assert!(!m.name(Op::Link, "/etc/passwd").allowed);
        assert!(!m.moved(Move::Link, "/etc/passwd", "/w/p").allowed);
        assert!(m.moved(Move::Rename, "/w/a", "/w/b").allowed);
        assert!(m.connect("192.0.2.1", 3128).allowed);
        assert!(!m.connect("127.0.0.1", 22).allowed);
    }
}
