//! Lowering the filesystem: the roots of every kind, with their spellings
//! (as written, realpath, macOS aliases), the protected paths inside write
//! roots, what was absent when compiled, and the conflicts between roots.

use super::*;

impl Lower<'_> {
    pub(super) fn roots(&mut self, spec: &Spec) -> Vec<Root> {
        let fs = &spec.filesystem;
        // A Codex seal also denies Codex's other config layers (listed after
        // the spec's own, which are not copied to make one list).
        let codex_denied = spec.codex_denied();
        type List<'s> = &'s [Spanned<String>];
        let lists: [(RootKind, List, List); 5] = [
            (RootKind::DenyRead, &fs.deny_read, &codex_denied),
            (RootKind::AllowRead, &fs.allow_read, &[]),
            (RootKind::MetadataOnly, &fs.metadata_only, &[]),
            (RootKind::Write, &fs.write, &[]),
            (RootKind::WriteDevice, &fs.write_devices, &[]),
        ];
        let mut out: Vec<Root> =
            Vec::with_capacity(lists.iter().map(|(_, l, more)| l.len() + more.len()).sum());
        for (kind, list, more) in lists {
            for entry in list.iter().chain(more) {
                let Some(path) = self.path(entry, format_args!("`{}` entry", kind.key())) else {
                    continue;
                };
                if kind == RootKind::WriteDevice && !path.starts_with("/dev/") {
                    self.diags.push(
                        Diagnostic::error(
                            crate::diag::code::PATH_DEVICE,
                            format!("device {} is not under `/dev`", quote(&path)),
                        )
                        .at(entry.span.clone())
                        .label("`write_devices` lists devices by exact path")
                        .help("list a device such as `/dev/null`, or move the path to `write`"),
                    );
                    continue;
                }
                let mut spellings = Spellings::one(path.clone());
                let mut real = self.facts.realpaths.get(&path).cloned();
                let mut host_kind = real.as_ref().and_then(|r| self.facts.kinds.get(r).copied());
                // A write root that does not exist yet is made when the seal
                // starts: mounted and allowed where it will be.
                let made = kind == RootKind::Write
                    && real.is_none()
                    && self.facts.absent_writes.contains_key(&path);
                if made {
                    real = self.facts.absent_writes.get(&path).cloned();
                    if self.platform(spec) == Platform::Linux {
                        host_kind = Some(PathKind::Dir);
                    }
                }
                // Absent, through a link: denied where it would appear too.
                let place = match kind {
                    RootKind::DenyRead | RootKind::MetadataOnly if real.is_none() => {
                        self.facts.absent_denied.get(&path)
                    }
                    RootKind::AllowRead if real.is_none() => self.facts.absent_allowed.get(&path),
                    _ => None,
                };
                if let Some(real) = real.as_ref().or(place) {
                    if let Err(problem) = check_path(real) {
                        self.diags.push(
                            Diagnostic::error(
                                crate::diag::code::PATH_REALPATH,
                                format!(
                                    "{} resolves on this host to {}, which {}",
                                    quote(&path),
                                    quote(real),
                                    problem.message()
                                ),
                            )
                            .at(entry.span.clone())
                            .label("its realpath cannot be written into a profile")
                            .help("resolve the symlink to a plain path, or list a different root"),
                        );
                        continue;
                    }
                    spellings.insert(real.clone());
                }
                if self
                    .add_aliases(&mut spellings, entry, self.platform(spec))
                    .is_none()
                {
                    continue;
                }
                let root = Root {
                    kind,
                    path,
                    spellings,
                    real,
                    host_kind,
                    made,
                    origin: entry.value.clone(),
                    span: entry.span.clone(),
                    protect: None,
                    launcher_package: false,
                };
                out.push(root);
            }
        }
        // Duplicates collapse; the smallest spelling of the entry is kept
        // as its origin (the first listed among equal ones: the sort is
        // stable), so the order of the list does not show. One sort, where
        // a map was an insert a root.
        out.sort_by(|a, b| (a.kind, &a.path, &a.origin).cmp(&(b.kind, &b.path, &b.origin)));
        out.dedup_by(|later, first| later.kind == first.kind && later.path == first.path);
        let mut roots: Vec<Root> = out;
        self.conflicts(&roots);
        let protected = self.protected(spec, &roots);
        roots.extend(protected);
        roots.sort_by(|a, b| (a.kind, &a.path).cmp(&(b.kind, &b.path)));
        if !self.symbolic {
            self.absent(&roots, self.platform(spec));
        }
        if self.platform(spec) == Platform::Linux && !self.symbolic {
            // Bubblewrap mounts by kind: a recorded realpath without one
            // cannot be hidden (only an edited record lacks it).
            for r in roots
                .iter()
                .filter(|r| r.real.is_some() && r.host_kind.is_none())
            {
                self.diags.push(
                    Diagnostic::error(
                        crate::diag::code::LINUX_KIND,
                        format!(
                            "the facts give {} a realpath but not what it is",
                            quote(&r.path)
                        ),
                    )
                    .at(r.span.clone())
                    .label("a Linux seal needs `facts.kinds` for every existing root")
                    .help("compile the spec again on the host instead of editing the record"),
                );
            }
            for r in roots.iter().filter(|r| r.kind.is_denied()) {
                if r.host_kind == Some(PathKind::File) {
                    self.diags.push(
                        Diagnostic::warning(
                            crate::diag::code::LINUX_FILE_ROOT,
                            format!(
                                "{} is a file: on Linux it is hidden by a mount on the file itself",
                                quote(&r.path)
                            ),
                        )
                        .at(r.span.clone())
                        .label("the host undoes it by replacing the file during the run")
                        .help("deny its directory instead: an atomic rewrite (such as a token refresh) swaps the file for one the sandbox can read"),
                    );
                }
            }
        }
        roots
    }

    /// The `filesystem.protect` roots: each path an entry names (a name
    /// below every write root that is a directory), placed where the facts
    /// say, checked to lie strictly inside a write root, to hold none, and
    /// not to lie in a denied root; duplicates collapse.
    pub(super) fn protected(&mut self, spec: &Spec, roots: &[Root]) -> Vec<Root> {
        let platform = self.platform(spec);
        // Each entry is checked once, whatever it expands to.
        for entry in &spec.filesystem.protect {
            if !crate::facts::is_protect_name(&entry.value) {
                self.path(entry, "`filesystem.protect` entry");
                continue;
            }
            let Some(name) = self.subst(entry) else {
                continue;
            };
            let problem = if name.is_empty() || name.starts_with('/') {
                Some("is not a relative name".to_string())
            } else {
                check_path(&format!("/{name}"))
                    .err()
                    .map(|p| p.message().to_string())
            };
            if let Some(why) = problem {
                self.diags.push(
                    Diagnostic::error(
                        crate::diag::code::PATH_INVALID,
                        format!("`filesystem.protect` name {} {why}", quote(&entry.value)),
                    )
                    .at(entry.span.clone())
                    .label("a name is a relative path, applied below every write root")
                    .help("write a name such as `.git/hooks`, or an absolute path inside a write root"),
                );
            }
        }
        let writes: Vec<&Root> = roots.iter().filter(|r| r.kind == RootKind::Write).collect();
        let denied: Vec<&Root> = roots.iter().filter(|r| r.kind.is_denied()).collect();
        let paths = crate::facts::protected_paths(spec, self.src, &self.facts.vars, &|_| true);
        let mut out: BTreeMap<String, Root> = BTreeMap::new();
        let mut said: BTreeSet<(usize, usize, &'static str)> = BTreeSet::new();
        for pp in paths {
            let entry = pp.entry;
            let path = normalize(&pp.path);
            if check_path(&path).is_err() {
                continue; // said above, for the entry
            }
            let name = pp.below.is_some();
            // Where it is, or what holds its place.
            let (real, standing, kind) = match (
                self.facts.realpaths.get(&pp.path),
                self.facts.stand_ins.get(&pp.path),
            ) {
                (Some(real), _) => (
                    real.clone(),
                    Standing::Here,
                    self.facts.kinds.get(real).copied(),
                ),
                (None, Some(si)) if si.kind == PathKind::Dir => {
                    (si.at.clone(), Standing::StandIn, Some(PathKind::Dir))
                }
                (None, Some(si)) => (si.at.clone(), Standing::InPlace, Some(si.kind)),
                // A name below a write root that is not a directory.
                (None, None) if name => continue,
                // Placed in no directory write root when compiled.
                (None, None) => {
                    if said.insert((
                        entry.span.start,
                        entry.span.end,
                        crate::diag::code::PROTECT_OUTSIDE,
                    )) {
                        self.diags.push(outside(&path, entry.span.clone()));
                    }
                    continue;
                }
            };
            if let Err(problem) = check_path(&real) {
                self.diags.push(
                    Diagnostic::error(
                        crate::diag::code::PATH_REALPATH,
                        format!(
                            "{} resolves on this host to {}, which {}",
                            quote(&path),
                            quote(&real),
                            problem.message()
                        ),
                    )
                    .at(entry.span.clone())
                    .label("its realpath cannot be written into a profile")
                    .help("resolve the symlink to a plain path, or protect a different path"),
                );
                continue;
            }
            // Where each write root is (lint's symbolic roots may have no place).
            let at = |w: &Root| w.real.clone().unwrap_or_else(|| w.path.clone());
            let holds_write = writes.iter().find(|w| {
                is_within(&at(w), &real) || w.spellings.iter().any(|sp| is_within(sp, &path))
            });
            if let Some(w) = holds_write {
                if said.insert((
                    entry.span.start,
                    entry.span.end,
                    crate::diag::code::PROTECT_WRITE_ROOT,
                )) {
                    let what = if w.real.as_deref() == Some(real.as_str()) || w.path == path {
                        "is"
                    } else {
                        "holds"
                    };
                    self.diags.push(
                        Diagnostic::error(
                            crate::diag::code::PROTECT_WRITE_ROOT,
                            format!(
                                "the protected path {} {what} the write root {}",
                                quote(&path),
                                quote(&w.origin)
                            ),
                        )
                        .at(entry.span.clone())
                        .label("it cannot be both read-only and writable")
                        .help("protect a path strictly inside the write root, or narrow `filesystem.write`"),
                    );
                }
                continue;
            }
            // The deepest write root that holds it, by where it is.
            let Some(w) = writes
                .iter()
                .filter(|w| is_within(&real, &at(w)))
                .max_by_key(|w| at(w).len())
            else {
                if said.insert((
                    entry.span.start,
                    entry.span.end,
                    crate::diag::code::PROTECT_OUTSIDE,
                )) {
                    self.diags.push(outside(&path, entry.span.clone()));
                }
                continue;
            };
            let within = at(w);
            // Hidden inside its write root: a denied root below the write
            // root holds it (the write root re-allows what a shallower
            // denied root hides).
            let wspell: Vec<&String> = w.spellings.iter().chain(w.real.iter()).collect();
            let hidden = denied.iter().any(|d| {
                d.spellings.iter().any(|ds| {
                    (is_within(&real, ds) || is_within(&path, ds))
                        && wspell.iter().any(|ws| ds != *ws && is_within(ds, ws))
                })
            });
            if hidden {
                if !name
                    && said.insert((
                        entry.span.start,
                        entry.span.end,
                        crate::diag::code::PROTECT_DENIED,
                    ))
                {
                    self.diags.push(
                        Diagnostic::advice(
                            crate::diag::code::PROTECT_DENIED,
                            format!(
                                "the protected path {} lies inside a denied or metadata-only root",
                                quote(&entry.value)
                            ),
                        )
                        .at(entry.span.clone())
                        .label("neither readable nor writable already: the entry changes nothing")
                        .help("remove it from `filesystem.protect`"),
                    );
                }
                continue;
            }
            // Its spellings: where it is, as written below its write root,
            // the path as named, and their macOS aliases.
            let mut spellings = Spellings::one(real.clone());
            spellings.insert(below_as_written(&w.path, &within, &real));
            if !spellings.iter().any(|sp| is_within(&path, sp)) {
                spellings.insert(path.clone());
            }
            if self.add_aliases(&mut spellings, entry, platform).is_none() {
                continue;
            }
            let root = Root {
                kind: RootKind::Protect,
                path: path.clone(),
                spellings,
                real: Some(real),
                host_kind: kind,
                made: false,
                origin: entry.value.clone(),
                span: entry.span.clone(),
                protect: Some(Protected {
                    standing,
                    within,
                    write_root: w.path.clone(),
                }),
                launcher_package: false,
            };
            // Duplicates collapse, keeping the smallest entry.
            match out.entry(path) {
                std::collections::btree_map::Entry::Vacant(v) => {
                    v.insert(root);
                }
                std::collections::btree_map::Entry::Occupied(mut o) => {
                    if root.origin < o.get().origin {
                        o.insert(root);
                    }
                }
            }
        }
        out.into_values().collect()
    }

    /// A Codex seal's config, which `sealc exec` installs in `CODEX_HOME`:
    /// protected like a `filesystem.protect` file, so a change during the
    /// run fails rather than being found after it. The Codex home must
    /// neither lie in nor hold a protected root (Codex writes it).
    pub(super) fn codex_protected(&mut self, spec: &Spec, roots: &mut Vec<Root>, codex: &CodexIr) {
        let Some(home) = codex.home.as_ref().filter(|_| codex.sealed) else {
            return;
        };
        let Some(w) = roots
            .iter()
            .filter(|r| r.kind == RootKind::Write && is_within(home, &r.path) && *home != r.path)
            .max_by_key(|r| r.path.len())
        else {
            return;
        };
        let Some(wreal) = w.real.clone() else {
            return;
        };
        let below = &home[w.path.len()..];
        let home_at = normalize(&format!("{wreal}{below}"));
        let span = spec
            .env
            .set
            .get("CODEX_HOME")
            .or_else(|| spec.env.set.get("HOME"))
            .map(|s| s.span.clone())
            .or_else(|| spec.codex.span.clone());
        let clashes: Vec<&Root> = roots
            .iter()
            .filter(|r| r.kind == RootKind::Protect)
            .filter(|r| {
                let at = r.real.as_deref().unwrap_or(&r.path);
                is_within(at, &home_at)
                    || is_within(&home_at, at)
                    || is_within(&r.path, home)
                    || is_within(home, &r.path)
            })
            .collect();
        if let Some(r) = clashes.first() {
            let inside = is_within(&home_at, r.real.as_deref().unwrap_or(&r.path))
                || is_within(home, &r.path);
            let how = if inside { "lies in" } else { "holds" };
            self.diags.push(
                Diagnostic::error(
                    crate::diag::code::PROTECT_CODEX_HOME,
                    format!(
                        "the seal's CODEX_HOME {} {how} a protected path (`filesystem.protect` {})",
                        quote(home),
                        quote(&r.origin)
                    ),
                )
                .at_opt(span)
                .label("Codex writes its home, and `sealc exec` makes and removes it for every run")
                .help("set `CODEX_HOME` to a directory whose name no protect entry names (such as `${scratch}/home/codex`), or narrow `filesystem.protect`"),
            );
            return;
        }
        let config = format!("{home}/config.toml");
        let real = format!("{home_at}/config.toml");
        if check_path(&config).is_err() || check_path(&real).is_err() {
            return;
        }
        let mut spellings = Spellings::from([config.clone(), real.clone()]);
        if self.platform(spec) == Platform::Macos {
            let extra: Vec<String> = spellings.iter().filter_map(|s| macos_aliases(s)).collect();
            spellings.extend(extra.into_iter().filter(|a| check_path(a).is_ok()));
        }
        roots.push(Root {
            kind: RootKind::Protect,
            path: config.clone(),
            spellings,
            real: Some(real),
            host_kind: Some(PathKind::File),
            made: false,
            origin: config,
            span: span.unwrap_or(0..0),
            protect: Some(Protected {
                standing: Standing::CodexConfig,
                within: wreal,
                write_root: w.path.clone(),
            }),
            launcher_package: false,
        });
        roots.sort_by(|a, b| (a.kind, &a.path).cmp(&(b.kind, &b.path)));
    }

    /// Say which roots did not exist when compiled, and what that means.
    pub(super) fn absent(&mut self, roots: &[Root], platform: Platform) {
        // The write root a path lies in, as written or where it is (the
        // first by path when several hold it): those of the path's
        // ancestors as long as a write root looked up, not every write
        // root compared.
        let mut writes: BTreeMap<&str, &str> = BTreeMap::new();
        for w in roots.iter().filter(|w| w.kind == RootKind::Write) {
            for at in std::iter::once(w.path.as_str()).chain(w.real.as_deref()) {
                let first = writes.entry(at).or_insert(&w.path);
                *first = (*first).min(w.path.as_str());
            }
        }
        let lens = crate::paths::lengths(writes.keys().map(|k| k.len()));
        let write_holding = |p: &str| {
            ancestors_of_lengths(p, &lens)
                .filter_map(|a| writes.get(a).copied())
                .min()
                .map(str::to_string)
        };
        for r in roots.iter().filter(|r| r.kind != RootKind::Protect) {
            let provided = r.kind == RootKind::WriteDevice
                && platform == Platform::Linux
                && crate::known::DEV_SET.contains(&r.path.as_str());
            let in_write = (r.kind.is_denied() && r.real.is_none())
                .then(|| write_holding(&r.path))
                .flatten();
            let (message, label, help) = if let Some(w) = in_write {
                // Issue 22, finding 3: what a run can do with it meanwhile.
                let label = match platform {
                    Platform::Linux => "absent when compiled: nothing is mounted for it",
                    Platform::Macos => "absent when compiled: its rules apply by path",
                };
                let exposed = match platform {
                    Platform::Linux => "it is not hidden while it is absent: a run may create it (and link the files it makes there to names elsewhere in the write root), and anything a host process writes there during a run is readable by the agent",
                    Platform::Macos => "its rules apply by path if it appears during a run, but a run may be what makes it",
                };
                (
                    format!(
                        "`{}` root {} does not exist here, inside the write root {}: {exposed}; a later `sealc exec` refuses to start once it exists",
                        r.kind.key(),
                        quote(&r.path),
                        quote(&w)
                    ),
                    label,
                    "make it before compiling (an empty directory will do), so it is hidden from the first run; otherwise correct the path",
                )
            } else if r.made {
                (
                    format!(
                        "write root {} does not exist here: `sealc exec` makes it at {} before the sandbox starts",
                        quote(&r.path),
                        quote(r.real.as_deref().unwrap_or(&r.path))
                    ),
                    "absent when compiled; made as a directory when the seal starts",
                    "nothing to do if that is meant; otherwise correct the path",
                )
            } else if r.real.is_none() && !provided {
                let label = match platform {
                    Platform::Linux => "absent when compiled: nothing is mounted for it, and `sealc exec` refuses to start once it exists",
                    Platform::Macos => "absent when compiled: its rules apply by path if it appears",
                };
                // Put together by hand: 10,000 absent roots are 10,000 of
                // these.
                let mut message = String::with_capacity(r.path.len() + 40);
                message.push('`');
                message.push_str(r.kind.key());
                message.push_str("` root ");
                crate::diag::push_quote(&r.path, &mut message);
                message.push_str(" does not exist here");
                (
                    message,
                    label,
                    "correct the path, or make it before compiling if it should exist",
                )
            } else {
                continue;
            };
            self.diags.push(
                Diagnostic::warning(crate::diag::code::ROOT_ABSENT, message)
                    .at(r.span.clone())
                    .label(label)
                    .help(help),
            );
        }
    }

    pub(super) fn add_aliases(
        &mut self,
        spellings: &mut Spellings,
        entry: &Spanned<String>,
        platform: Platform,
    ) -> Option<()> {
        if platform != Platform::Macos {
            return Some(());
        }
        let extra: Vec<String> = spellings.iter().filter_map(|s| macos_aliases(s)).collect();
        for a in extra {
            if let Err(problem) = check_path(&a) {
                self.diags.push(
                    path_error("its macOS alias", &entry.value, &a, &problem)
                        .at(entry.span.clone()),
                );
                return None;
            }
            spellings.insert(a);
        }
        Some(())
    }

    pub(super) fn conflicts(&mut self, roots: &[Root]) {
        use RootKind::*;
        let contradicts = |a: RootKind, b: RootKind| {
            matches!(
                (a, b),
                (Write | WriteDevice, DenyRead | MetadataOnly)
                    | (DenyRead | MetadataOnly, Write | WriteDevice)
                    | (AllowRead, DenyRead | MetadataOnly)
                    | (DenyRead | MetadataOnly, AllowRead)
                    | (DenyRead, MetadataOnly)
                    | (MetadataOnly, DenyRead)
            )
        };
        // Roots that share a spelling, found through an index rather than by
        // comparing every pair.
        // One sorted list of (spelling, root), not a list a spelling.
        // Sorted by the spelling's hash first, so that grouping compares
        // integers; the few shared spellings are then put in their order.
        let mut pairs: Vec<(u64, &str, usize)> = roots
            .iter()
            .enumerate()
            .flat_map(|(i, r)| {
                r.spellings
                    .iter()
                    .map(move |sp| (crate::paths::path_hash(sp), sp.as_str(), i))
            })
            .collect();
        crate::paths::sort_by_hash(&mut pairs, |e| e.0, |e| (e.1, e.2));
        let mut by_spelling: Vec<(&str, Vec<usize>)> = Vec::new();
        for group in pairs.chunk_by(|a, b| a.0 == b.0 && a.1 == b.1) {
            if group.len() > 1 {
                by_spelling.push((group[0].1, group.iter().map(|(_, _, i)| *i).collect()));
            }
        }
        by_spelling.sort_unstable();
        let mut seen: BTreeSet<(usize, usize)> = BTreeSet::new();
        for (shared, ids) in &by_spelling {
            for (x, &i) in ids.iter().enumerate() {
                for &j in &ids[x + 1..] {
                    let (a, b) = (&roots[i], &roots[j]);
                    if i == j || !contradicts(a.kind, b.kind) || !seen.insert((i.min(j), i.max(j)))
                    {
                        continue;
                    }
                    // Point at whichever entry comes later in the file.
                    let (first, second) = if a.span.start <= b.span.start {
                        (a, b)
                    } else {
                        (b, a)
                    };
                    // Name the path as written; a realpath or a macOS alias
                    // only when that is where the two entries meet.
                    let meet = if first.path == second.path {
                        String::new()
                    } else {
                        let common: Vec<&String> = first
                            .spellings
                            .iter()
                            .filter(|s| second.spellings.contains(s))
                            .collect();
                        let at = common
                            .iter()
                            .find(|s| ***s == first.path || ***s == second.path)
                            .or_else(|| common.iter().find(|s| macos_aliases(s).is_some()))
                            .map_or(*shared, |s| s.as_str());
                        if at == second.path.as_str() {
                            String::new()
                        } else {
                            format!(" (as {})", quote(at))
                        }
                    };
                    self.diags.push(
                        Diagnostic::error(
                            crate::diag::code::ROOT_CONFLICT,
                            format!(
                                "{}{meet} is listed in both `{}` and `{}`",
                                quote(&second.path),
                                first.kind.key(),
                                second.kind.key()
                            ),
                        )
                        .at(second.span.clone())
                        .label(format!(
                            "also in `{}` as {}",
                            first.kind.key(),
                            quote(&first.origin)
                        ))
                        .help("a path cannot be both; keep it in one list"),
                    );
                }
            }
        }
    }
}
