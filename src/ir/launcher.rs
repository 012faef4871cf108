//! Lowering the launcher chain (the program the seal starts, through its
//! links) and keeping the programs that build the sandbox out of the
//! agent's reach.

use super::*;

impl Lower<'_> {
    pub(super) fn launcher(
        &mut self,
        spec: &Spec,
        base: Base,
        roots: &[Root],
    ) -> (Vec<LauncherEntry>, Option<Root>) {
        let chain = &self.facts.launcher;
        let Some(l) = &spec.launcher else {
            if !chain.is_empty() {
                self.diags.push(Diagnostic::error(
                    crate::diag::code::LAUNCHER_CHAIN,
                    "the facts hold a launcher chain but the spec has no `[launcher]`",
                ));
            }
            return (Vec::new(), None);
        };
        if self.symbolic {
            self.path(&l.path, "`launcher.path`");
            return (Vec::new(), None);
        }
        let span = l.path.span.clone();
        let bad = |msg: String| {
            Diagnostic::error(crate::diag::code::LAUNCHER_CHAIN, msg)
                .at(span.clone())
                .label("the recorded launcher chain")
                .help("recompile on a host where the launcher exists")
        };
        let Some(head) = self.subst(&l.path) else {
            return (Vec::new(), None);
        };
        if chain.is_empty() {
            self.diags.push(bad(format!(
                "no launcher chain is recorded for {}",
                quote(&head)
            )));
            return (Vec::new(), None);
        }
        if chain[0].path != normalize(&head) {
            self.diags.push(bad(format!(
                "the launcher chain starts at {}, not at the launcher {}",
                quote(&chain[0].path),
                quote(&head)
            )));
        }
        let denied = PathSet::new(
            roots
                .iter()
                .filter(|r| r.kind.is_denied())
                .flat_map(|r| r.spellings.iter()),
        );
        let mut out = Vec::new();
        for (i, link) in chain.iter().enumerate() {
            let last = i + 1 == chain.len();
            let shape_ok = match link.kind {
                LinkKind::Symlink => !last && link.target.is_some() && link.digest.is_none(),
                LinkKind::File => {
                    last && link.target.is_none() && link.digest.as_deref().is_some_and(is_digest)
                }
            };
            if !shape_ok {
                self.diags.push(bad(format!(
                    "launcher chain entry {} is not adjacent: each entry but the last is a symlink, the last a regular file with a digest",
                    quote(&link.path)
                )));
                continue;
            }
            if let (Some(target), Some(next)) = (&link.target, chain.get(i + 1)) {
                if !adjacent(&link.path, target, &next.path) {
                    self.diags.push(bad(format!(
                        "launcher chain entry {} links to {}, not to the next entry {}",
                        quote(&link.path),
                        quote(target),
                        quote(&next.path)
                    )));
                }
            }
            if let Err(problem) = check_path(&link.path) {
                self.diags.push(
                    path_error("launcher chain entry", &link.path, &link.path, &problem)
                        .at(span.clone()),
                );
                continue;
            }
            let mut spellings = Spellings::one(link.path.clone());
            if self.platform(spec) == Platform::Macos {
                spellings.extend(macos_aliases(&link.path));
            }
            let under_denied = spellings.iter().any(|s| denied.covers(s));
            out.push(LauncherEntry {
                path: link.path.clone(),
                spellings,
                kind: link.kind,
                target: link.target.clone(),
                reallow: under_denied || base == Base::DenyDefault,
            });
        }
        let package = match out.last().filter(|e| e.reallow) {
            Some(last) => {
                let binary = last.path.clone();
                self.npm_codex_package(spec, base, &binary, roots, &span)
            }
            None => None,
        };
        (out, package)
    }

    /// npm's native Codex (`.../vendor/<triple>/bin/codex`) re-allowed by
    /// its literal path inside a hidden root: the tools it runs from beside
    /// it (`codex-path/rg`, `codex-resources/`) would stay hidden. Its
    /// package directory is shown read-only with it, as an `allow_read`
    /// root the seal lists as the launcher's (an advice says so), unless
    /// the spec shows it already.
    fn npm_codex_package(
        &mut self,
        spec: &Spec,
        base: Base,
        binary: &str,
        roots: &[Root],
        span: &Span,
    ) -> Option<Root> {
        let package = crate::facts::npm_codex_package(binary)?;
        let covering = |kind: fn(RootKind) -> bool| {
            roots
                .iter()
                .filter(|r| kind(r.kind))
                .filter(|r| r.spellings.iter().any(|s| is_within(package, s)))
                .max_by_key(|r| r.path.len())
        };
        let hider = covering(RootKind::is_denied);
        // Denied by name: the spec's word stands, and the binary runs
        // without its bundled tools, said loudly.
        if let Some(h) = hider.filter(|h| h.spellings.iter().any(|s| s == package)) {
            self.diags.push(
                Diagnostic::warning(
                    crate::diag::code::LAUNCHER_PACKAGE,
                    format!(
                        "the launcher `{}` is npm's native Codex, and {} hides its package by name: only the binary is re-allowed, so the tools it runs from there (`codex-path/rg`, `codex-resources/`) stay hidden from it",
                        visible(binary),
                        h.entry()
                    ),
                )
                .at(span.clone())
                .label("re-allowed by its literal path alone")
                .help("deny what the package holds that the agent must not run, not the package itself"),
            );
            return None;
        }
        // What hides it: the deepest denied root, else a deny-default base.
        let (hidden_by, depth) = match (hider, base) {
            (Some(h), _) => (format!("{} ({})", quote(&h.path), h.entry()), h.path.len()),
            (None, Base::DenyDefault) => ("the `deny-default` base".to_string(), 0),
            (None, Base::AllowDefault) => return None,
        };
        if covering(|k| k == RootKind::AllowRead).is_some_and(|shown| shown.path.len() > depth) {
            return None;
        }
        let real = self.facts.realpaths.get(package).cloned();
        if let Some(problem) = real.as_deref().and_then(|r| check_path(r).err()) {
            // Nothing binds a path a profile cannot hold: the package stays
            // hidden, said loudly.
            self.diags.push(
                Diagnostic::warning(
                    crate::diag::code::LAUNCHER_PACKAGE,
                    format!(
                        "the launcher `{}` is npm's native Codex, but its package resolves to a path that {}: only the binary is re-allowed, so its bundled tools stay hidden",
                        visible(binary),
                        problem.message()
                    ),
                )
                .at(span.clone())
                .label("re-allowed by its literal path alone")
                .help("install Codex where its package's realpath is a plain path"),
            );
            return None;
        }
        let host_kind = real.as_ref().and_then(|r| self.facts.kinds.get(r).copied());
        let mut spellings = Spellings::one(package.to_string());
        if let Some(r) = &real {
            spellings.insert(r.clone());
        }
        let entry = Spanned {
            value: package.to_string(),
            span: span.clone(),
        };
        self.add_aliases(&mut spellings, &entry, self.platform(spec))?;
        self.diags.push(
            Diagnostic::advice(
                crate::diag::code::LAUNCHER_PACKAGE,
                format!(
                    "the launcher `{}` is npm's native Codex inside {hidden_by}: its package `{}` is shown read-only with it, so the tools it runs from there (`codex-path/rg`, `codex-resources/`) work",
                    visible(binary),
                    visible(package)
                ),
            )
            .at(span.clone())
            .label("re-allowed with its package")
            .help("the seal lists the package as the launcher's `allow_read` root; install Codex outside every hidden root to keep that root whole"),
        );
        Some(Root {
            kind: RootKind::AllowRead,
            path: package.to_string(),
            spellings,
            real,
            host_kind,
            made: false,
            origin: package.to_string(),
            span: span.clone(),
            protect: None,
            launcher_package: true,
        })
    }

    /// The programs that start the sandbox (`exec.bwrap` or
    /// `exec.sandbox_exec`, and `env`) and every entry of the launcher chain
    /// must lie outside every write root, by the path as written and by
    /// every place their symlink chains pass through: a run could replace
    /// them, and the next run would start what it wrote, `bwrap` as the
    /// caller and before any sandbox.
    pub(super) fn builders_out_of_reach(&mut self, spec: &Spec, roots: &[Root], exec: &ExecIr) {
        let writes: Vec<&Root> = roots.iter().filter(|r| r.kind == RootKind::Write).collect();
        if writes.is_empty() {
            return;
        }
        let inside = |p: &str| -> Option<(&Root, &String)> {
            writes.iter().find_map(|r| {
                r.spellings
                    .iter()
                    .find(|s| is_within(p, s))
                    .map(|s| (*r, s))
            })
        };
        // (what, the path as written, the span to point at, if the spec names it)
        let (key, program, given) = match self.platform(spec) {
            Platform::Linux => ("`exec.bwrap`", &exec.bwrap, &spec.exec.bwrap),
            Platform::Macos => (
                "`exec.sandbox_exec`",
                &exec.sandbox_exec,
                &spec.exec.sandbox_exec,
            ),
        };
        let mut programs: Vec<(String, String, Option<Span>)> = Vec::new();
        if !program.is_empty() {
            programs.push((
                key.to_string(),
                program.clone(),
                given.as_ref().map(|g| g.span.clone()),
            ));
        }
        programs.push(("`env`".to_string(), crate::known::ENV_BIN.to_string(), None));
        let launcher_span = spec.launcher.as_ref().map(|l| l.path.span.clone());
        if let (Some(l), Some(span)) = (&spec.launcher, &launcher_span) {
            if self.symbolic {
                if let Ok(p) = interpolate(&l.path, self.src, &self.facts.vars) {
                    programs.push(("the launcher".into(), p, Some(span.clone())));
                }
            }
        }
        let mut found: Vec<(String, String, Option<Span>, &Root, String)> = Vec::new();
        for (what, path, span) in programs {
            let chain = self.facts.builders.get(&path);
            let places = std::iter::once(path.clone()).chain(
                chain
                    .into_iter()
                    .flatten()
                    .flat_map(|l| std::iter::once(l.path.clone()).chain(l.real.clone())),
            );
            for place in places {
                if let Some((root, spelling)) = inside(&place) {
                    let shown = if place == path {
                        quote(&path)
                    } else {
                        format!("{} (through {})", quote(&path), quote(&place))
                    };
                    found.push((what, shown, span, root, spelling.clone()));
                    break;
                }
            }
        }
        for link in &self.facts.launcher {
            let places = std::iter::once(&link.path).chain(link.real.as_ref());
            for place in places {
                if let Some((root, spelling)) = inside(place) {
                    found.push((
                        "the launcher chain entry".into(),
                        quote(place),
                        launcher_span.clone(),
                        root,
                        spelling.clone(),
                    ));
                    break;
                }
            }
        }
        for (what, shown, span, root, spelling) in found {
            let root_shown = if spelling == root.path {
                quote(&root.path)
            } else {
                format!("{} (as {})", quote(&root.path), quote(&spelling))
            };
            self.diags.push(
                Diagnostic::error(
                    crate::diag::code::EXEC_IN_WRITE_ROOT,
                    format!("{what} {shown} lies inside the write root {root_shown}"),
                )
                .at(span.unwrap_or_else(|| root.span.clone()))
                .label("a run could replace it, and the next run would start what it wrote, outside the sandbox")
                .help("install it outside every write root (such as under `/usr/bin`), or narrow `filesystem.write`"),
            );
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// npm's Codex in a hidden root: its package is shown with it, as an
    /// `allow_read` root marked as the launcher's (the case of a realpath
    /// no profile can hold is in tests/friction.rs, on a real host).
    #[test]
    fn an_npm_codex_package_is_shown_with_it() {
        let spec = "version = 1\nname = \"n\"\n[target]\nplatform = \"linux\"\n[launcher]\npath = \"/h/npm/vendor/t/bin/codex\"\n[filesystem]\ndeny_read = [\"/h\"]\n";
        let plain = crate::facts::FakeHost::new()
            .dir("/h")
            .file("/h/npm/vendor/t/bin/codex", b"\x7fELF");
        let c = crate::compile("n.toml", spec, &Vec::new(), &plain).unwrap();
        let package = c.ir.roots.iter().find(|r| r.launcher_package).unwrap();
        assert_eq!(package.path, "/h/npm/vendor/t");
        assert_eq!(package.kind, RootKind::AllowRead);
    }
}
