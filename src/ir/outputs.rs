//! `exec.outputs`: the files a run produces that its attestation names.

use super::*;

/// A file the command is to produce, inside a write root: `sealc exec`
/// hashes it after the run and, when this run wrote it, names it in the run
/// report and the attestation (a subject, by its file name).
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub struct Output {
    /// The path as written, after `${var}` substitution.
    pub path: String,
    /// Where it is on the host: its write root's recorded realpath (or the
    /// place `sealc exec` makes the root) joined with the rest of the path,
    /// so no link is followed to reach it at run time.
    pub real: String,
}

impl Output {
    /// The name its attestation subject goes by.
    pub fn name(&self) -> &str {
        self.path.rsplit('/').next().unwrap_or_default()
    }
}

impl Lower<'_> {
    /// Each entry must lie strictly inside a write root, and the deepest
    /// root that holds it must be that kind (a denied, read-only or
    /// protected root inside the write root would keep the agent from
    /// writing it). No two may share a file name: subjects are named so.
    pub(super) fn outputs(&mut self, spec: &Spec, roots: &[Root]) -> Vec<Output> {
        let mut out: Vec<Output> = Vec::new();
        for entry in &spec.exec.outputs {
            let Some(p) = self.path(entry, "`exec.outputs`") else {
                continue;
            };
            let p = normalize(&p);
            let deepest = roots
                .iter()
                .filter(|r| is_within(&p, &r.path))
                .max_by_key(|r| r.path.len());
            let refuse = |label: &str, message: String, help: &str| {
                Diagnostic::error(crate::diag::code::EXEC_OUTPUT, message)
                    .at(entry.span.clone())
                    .label(label.to_string())
                    .help(help.to_string())
            };
            let cannot_write = |r: &Root| {
                refuse(
                    "the agent cannot write it",
                    format!(
                        "{} in `exec.outputs` lies in the root {}, which the agent cannot write",
                        quote(&p),
                        r.entry()
                    ),
                    "name a file inside a write root, outside every root listed inside it",
                )
            };
            let d = match deepest {
                Some(w) if w.path == p => Err(refuse(
                    "a root, not a file inside one",
                    format!(
                        "{} in `exec.outputs` is the root {} itself",
                        quote(&p),
                        w.entry()
                    ),
                    "name the file the command writes inside the root",
                )),
                Some(w) if w.kind == RootKind::Write && w.protect.is_none() => Ok(w),
                Some(r) => Err(cannot_write(r)),
                None => Err(refuse(
                    "in no write root",
                    format!(
                        "{} in `exec.outputs` lies in no write root of the seal, so the agent cannot write it",
                        quote(&p)
                    ),
                    "name a file inside an entry of `filesystem.write`",
                )),
            };
            let w = match d {
                Ok(w) => w,
                Err(d) => {
                    self.diags.push(d);
                    continue;
                }
            };
            let rest = &p[w.path.trim_end_matches('/').len()..];
            let real = format!(
                "{}{rest}",
                w.real.as_deref().unwrap_or(&w.path).trim_end_matches('/')
            );
            // A root inside the write root that names the output by another
            // spelling (its realpath, a macOS alias) keeps it from the agent too.
            let w_real = w.real.as_deref().unwrap_or(&w.path);
            let inner = roots.iter().find(|r| {
                !(r.kind == RootKind::Write && r.protect.is_none())
                    && r.spellings.iter().any(|sp| {
                        (is_within(&p, sp) && is_within(sp, &w.path))
                            || (is_within(&real, sp) && is_within(sp, w_real))
                    })
            });
            if let Some(r) = inner {
                self.diags.push(cannot_write(r));
                continue;
            }
            let o = Output { path: p, real };
            if let Some(other) = out
                .iter()
                .find(|x| x.name() == o.name() && x.path != o.path)
            {
                self.diags.push(
                    Diagnostic::error(
                        crate::diag::code::EXEC_OUTPUT,
                        format!(
                            "{} in `exec.outputs` has the file name of {}: the attestation names its subjects by file name",
                            quote(&o.path),
                            quote(&other.path)
                        ),
                    )
                    .at(entry.span.clone())
                    .label("a second subject of that name")
                    .help("give each output a file name of its own"),
                );
                continue;
            }
            if !out.contains(&o) {
                out.push(o);
            }
        }
        out.sort();
        out
    }
}

#[cfg(test)]
mod tests {
    /// Reached through the write root's realpath; every misplaced output
    /// refused, each with its own reason.
    #[test]
    fn outputs_lie_in_write_roots_and_are_reached_through_their_realpath() {
        let spec = |outputs: &str| {
            format!("version = 1\nname = \"o\"\n[target]\nplatform = \"linux\"\n[filesystem]\nwrite = [\"/run/ws\"]\ndeny_read = [\"/run/ws/secret\", \"/data/ws/hidden\"]\n[exec]\noutputs = [{outputs}]\n")
        };
        let host = crate::facts::FakeHost::new()
            .dir("/data/ws")
            .link("/run/ws", "/data/ws");
        let c = crate::compile(
            "o.toml",
            &spec("\"/run/ws/a/answer.md\""),
            &Vec::new(),
            &host,
        )
        .unwrap();
        let o = &c.ir.exec.outputs[0];
        assert_eq!(
            (o.path.as_str(), o.real.as_str(), o.name()),
            ("/run/ws/a/answer.md", "/data/ws/a/answer.md", "answer.md")
        );
        for (bad, why) in [
            ("\"/elsewhere/x\"", "lies in no write root"),
            ("\"/run/ws\"", "itself"),
            ("\"/run/ws/secret/x\"", "which the agent cannot write"),
            // Denied by its realpath: the same root.
            ("\"/run/ws/hidden/x\"", "which the agent cannot write"),
            ("\"/run/ws/x\", \"/run/ws/a/x\"", "has the file name of"),
        ] {
            let Err(d) = crate::compile("o.toml", &spec(bad), &Vec::new(), &host) else {
                panic!("{bad} compiled");
            };
            let messages: Vec<_> = d.0.iter().map(|d| d.message.clone()).collect();
            assert!(
                messages.iter().any(|m| m.contains(why)),
                "{bad}: {messages:?}"
            );
        }
    }
}
