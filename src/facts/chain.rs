//! The links on the way to each root and to each program the seal starts
//! (the launcher chain, the builders of the sandbox), walked one component
//! at a time without following the last.

use super::*;

/// Hidden by identity, not only by path: each denied or metadata-only root
/// whose realpath lies inside a write root's realpath (for either target:
/// the host is the same) is walked for objects with another hard link
/// ([`links::exposed`]), which the seal would not hide: the agent reads the
/// file through the other name (one it made itself in an earlier run, when
/// the root was absent, or one a host process made). Each such root is
/// refused (`sealc::root::linked`), naming where the other links are; a
/// root whose walk cannot finish cannot be checked and is refused too
/// (`sealc::root::uncheckable`). Nothing is recorded: `sealc exec` runs the
/// same check before every run (`drift::host_drift`).
pub(super) fn linked_roots(
    spec: &Spec,
    src: &str,
    vars: &BTreeMap<String, String>,
    realpaths: &BTreeMap<String, String>,
    host: &dyn Host,
    bounds: Bounds,
    diags: &mut Diagnostics,
) {
    use crate::paths::is_within;
    let fs = &spec.filesystem;
    let real_of = |e: &Spanned<String>| {
        let p = root_path(e, src, vars)?;
        let r = realpaths.get(&p)?.clone();
        Some((p, r))
    };
    let writes: Vec<String> = fs
        .write
        .iter()
        .filter_map(real_of)
        .map(|(_, r)| r)
        .collect();
    let codex = spec.codex_denied();
    let denied = fs.deny_read.iter().chain(&codex).map(|e| ("deny_read", e));
    let stat_only = fs.metadata_only.iter().map(|e| ("metadata_only", e));
    // Each hidden realpath, with the first entry that names it.
    let mut hidden: BTreeMap<String, (&str, String, crate::diag::Span)> = BTreeMap::new();
    for (key, entry) in denied.chain(stat_only) {
        let Some((path, real)) = real_of(entry) else {
            continue;
        };
        if writes.iter().any(|w| is_within(&real, w)) {
            hidden
                .entry(real)
                .or_insert((key, path, entry.span.clone()));
        }
    }
    if hidden.is_empty() {
        return;
    }
    // What shows: the write roots, and a root re-allowed or writable inside
    // a hidden one.
    let mut visible = writes.clone();
    for e in fs.allow_read.iter().chain(&fs.write) {
        if let Some((_, r)) = real_of(e) {
            if hidden.keys().any(|h| *h != r && is_within(&r, h)) {
                visible.push(r);
            }
        }
    }
    let roots: Vec<String> = hidden.keys().cloned().collect();
    let found = links::exposed(&roots, &visible, host, bounds);

    let what = |key: &str, path: &str| format!("the `filesystem.{key}` root {}", quote(path));
    for (root, why) in &found.unchecked {
        let Some((key, path, span)) = hidden.get(root) else {
            continue;
        };
        let help = match why {
            Unwalked::Read { .. } => "make it readable to the user that runs sealc (the check runs at every compile and every `sealc exec`), or start from a fresh write root",
            _ => "hide a smaller tree, or move this one out of the write root (the check runs at every compile and every `sealc exec`), or start from a fresh write root",
        };
        diags.push(
            Diagnostic::error(
                crate::diag::code::ROOT_UNCHECKABLE,
                format!(
                    "{}: {}, so sealc cannot check it for hard links",
                    what(key, path),
                    unwalked(root, why)
                ),
            )
            .at(span.clone())
            .label("inside a write root, where another link to a file in it would show it")
            .help(help),
        );
    }
    let partial: Vec<String> = found
        .partial
        .iter()
        .map(|(root, why)| {
            format!(
                "the write root {} was not walked to the end ({}), so links there may be among those counted outside",
                quote(root),
                unwalked(root, why)
            )
        })
        .collect();
    let mut by_root: BTreeMap<&str, Vec<&links::Exposed>> = BTreeMap::new();
    for e in &found.exposed {
        by_root.entry(e.root.as_str()).or_default().push(e);
    }
    for (root, group) in by_root {
        let Some((key, path, span)) = hidden.get(root) else {
            continue;
        };
        let mut named = 0;
        let mut items = Vec::new();
        let (mut files_left, mut links_left, mut shown, mut outside) = (0u64, 0u64, 0u64, 0u64);
        for e in &group {
            outside += e.elsewhere;
            let visible = e.visible.len() as u64 + e.more_visible;
            shown += visible;
            if named >= LISTED {
                files_left += 1;
                links_left += visible;
                continue;
            }
            named += 1;
            let take = e.visible.len().min(LISTED - named);
            named += take;
            links_left += visible - take as u64;
            let links: Vec<String> = e.visible[..take].iter().map(|l| quote(l)).collect();
            items.push(if links.is_empty() {
                quote(&e.path)
            } else {
                format!("{} is also {}", quote(&e.path), links.join(", "))
            });
        }
        let mut message = format!(
            "{} holds {} with another hard link, which the seal does not hide: {}",
            what(key, path),
            count(group.len() as u64, "file", "files"),
            items.join("; ")
        );
        if files_left > 0 || links_left > 0 {
            message.push_str(&format!(
                "; and {} and {} in the write roots, not listed",
                count(files_left, "more file", "more files"),
                count(links_left, "more link", "more links")
            ));
        }
        if outside > 0 {
            let n = if shown > 0 {
                count(outside, "more link", "more links")
            } else {
                count(outside, "link", "links")
            };
            message.push_str(&format!(
                "; {} {n} outside the write roots",
                if shown > 0 { "and" } else { "with" }
            ));
        }
        for p in &partial {
            message.push_str(&format!(" ({p})"));
        }
        diags.push(
            Diagnostic::error(crate::diag::code::ROOT_LINKED, message)
                .at(span.clone())
                .label("hiding a path does not hide the file: every other link of it reads the same data")
                .help("remove the other links (the file keeps its content), or give the file a single link of its own (copy it over itself: `cp -p FILE FILE.new && mv FILE.new FILE`; what it holds now stays readable through the old links), or start from a fresh write root"),
        );
    }
}

/// The programs that start the sandbox, each walked as the launcher is:
/// `exec.bwrap` (Linux) or `exec.sandbox_exec` (macOS), and `env`. A program
/// absent here is recorded with an empty chain.
pub(super) fn builders(
    spec: &Spec,
    src: &str,
    vars: &BTreeMap<String, String>,
    linux: bool,
    host: &dyn Host,
) -> BTreeMap<String, Vec<ChainLink>> {
    let (given, default) = if linux {
        (&spec.exec.bwrap, crate::known::BWRAP)
    } else {
        (&spec.exec.sandbox_exec, crate::known::SANDBOX_EXEC)
    };
    let mut programs = vec![crate::known::ENV_BIN.to_string()];
    // The Landlock mode starts no bubblewrap: sealc runs the command itself.
    let starts_bwrap = !linux || spec.isolation() == crate::spec::Isolation::Namespaces;
    match given {
        Some(p) if starts_bwrap => programs.extend(root_path(p, src, vars)),
        None if starts_bwrap => programs.push(default.to_string()),
        _ => {}
    }
    programs
        .into_iter()
        .map(|p| {
            let (chain, _) = walk(&p, host);
            (p, chain)
        })
        .collect()
}

/// A Linux seal compiled on a Linux host where its bubblewrap is not a
/// program (absent, or a chain that ends elsewhere than at a file): the
/// seal compiles, but `sealc exec` cannot start it here.
pub(super) fn no_bwrap(
    spec: &Spec,
    builders: &BTreeMap<String, Vec<ChainLink>>,
    diags: &mut Diagnostics,
) {
    let given = spec.exec.bwrap.as_ref();
    let Some((path, chain)) = builders
        .iter()
        .find(|(p, _)| p.as_str() != crate::known::ENV_BIN)
    else {
        return;
    };
    if chain.last().is_some_and(|l| l.kind == LinkKind::File) {
        return;
    }
    let what = if chain.is_empty() {
        "does not exist on this host"
    } else {
        "does not lead to a program on this host"
    };
    let key = if given.is_some() {
        "correct `[exec] bwrap`"
    } else {
        "set `[exec] bwrap` to where it is"
    };
    diags.push(
        Diagnostic::warning(
            crate::diag::code::EXEC_NO_BWRAP,
            format!(
                "bubblewrap {} {what}, so `sealc exec` cannot run this seal here",
                quote(path)
            ),
        )
        .at_opt(given.map(|g| g.span.clone()))
        .label("not found while compiling")
        .help(format!(
            "install bubblewrap 0.8 or newer (`apt-get install bubblewrap`), or {key}; then compile again: its digest is part of the seal"
        )),
    );
}

/// Walk the symlink chain from `path` to a regular file.
pub(super) fn walk_chain(path: &str, host: &dyn Host) -> Result<Vec<ChainLink>, String> {
    let (chain, end) = walk(path, host);
    end.map(|()| chain)
}

/// Walk the symlink chain from `path`: the entries walked, and why the walk
/// did not end at a regular file, if it did not.
pub(super) fn walk(path: &str, host: &dyn Host) -> (Vec<ChainLink>, Result<(), String>) {
    let mut chain = Vec::new();
    let end = walk_into(path, host, &mut chain);
    (chain, end)
}

pub(super) fn walk_into(
    path: &str,
    host: &dyn Host,
    chain: &mut Vec<ChainLink>,
) -> Result<(), String> {
    let mut cur = normalize(path);
    for _ in 0..=MAX_LINKS {
        let real = located(&cur, host).filter(|r| *r != cur);
        match host.lstat(&cur) {
            Some(Kind::Symlink) => {
                let target = host
                    .read_link(&cur)
                    .ok_or_else(|| format!("cannot read the symlink {}", quote(&cur)))?;
                let parent = parent(&cur);
                let base = host
                    .canonicalize(parent)
                    .unwrap_or_else(|| parent.to_string());
                let next = if target.starts_with('/') {
                    normalize(&target)
                } else {
                    normalize(&format!("{base}/{target}"))
                };
                chain.push(ChainLink {
                    path: cur,
                    kind: LinkKind::Symlink,
                    real,
                    target: Some(target),
                    digest: None,
                });
                cur = next;
            }
            Some(Kind::File) => {
                let digest = host
                    .program_digest(&cur, &|_| false)
                    .ok_or_else(|| format!("cannot read the launcher file {}", quote(&cur)))?;
                chain.push(ChainLink {
                    path: cur,
                    kind: LinkKind::File,
                    real,
                    target: None,
                    digest: Some(digest),
                });
                return Ok(());
            }
            Some(Kind::Dir) => {
                return Err(format!(
                    "launcher chain ends at the directory {}",
                    quote(&cur)
                ))
            }
            Some(Kind::Other) => {
                return Err(format!(
                    "launcher chain ends at {}, which is not a regular file",
                    quote(&cur)
                ))
            }
            None if chain.is_empty() => {
                return Err(format!(
                    "launcher {} does not exist on this host",
                    quote(&cur)
                ))
            }
            None => {
                return Err(format!(
                    "launcher chain is broken: {} does not exist",
                    quote(&cur)
                ))
            }
        }
    }
    Err(format!(
        "launcher chain from {} has more than {MAX_LINKS} links",
        quote(path)
    ))
}

pub(super) fn parent(p: &str) -> &str {
    match p.rfind('/') {
        Some(0) | None => "/",
        Some(i) => &p[..i],
    }
}
