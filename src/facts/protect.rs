//! The facts of `filesystem.protect`: the paths a write root's worktrees and
//! configs make writable elsewhere (git's), the stand-ins of absent ones,
//! and the denied roots found inside write roots.

use super::*;

/// One path a `filesystem.protect` entry names, on these var values.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ProtectedPath<'a> {
    pub entry: &'a Spanned<String>,
    /// After `${var}` substitution; a name joined below its write root.
    pub path: String,
    /// For a name: the write root (as written, after substitution) it is below.
    pub below: Option<String>,
}

/// Is a `filesystem.protect` entry a name (applied below every write root)
/// rather than a path? A path starts with `/` or with a `${var}`.
pub fn is_protect_name(entry: &str) -> bool {
    !entry.starts_with('/') && !entry.starts_with("${")
}

/// Every path the `filesystem.protect` entries name: a path entry after
/// `${var}` substitution (when absolute), a name below each write root for
/// which `dir` holds. Entries that do not resolve are left out (the IR
/// reports them, with their spans).
pub fn protected_paths<'a>(
    spec: &'a Spec,
    src: &str,
    vars: &BTreeMap<String, String>,
    dir: &dyn Fn(&str) -> bool,
) -> Vec<ProtectedPath<'a>> {
    let writes: Vec<String> = spec
        .filesystem
        .write
        .iter()
        .filter_map(|w| root_path(w, src, vars))
        .collect();
    let mut out = Vec::new();
    for entry in &spec.filesystem.protect {
        let Ok(value) = interpolate(entry, src, vars) else {
            continue;
        };
        if !is_protect_name(&entry.value) {
            if value.starts_with('/') && !value.contains('\0') {
                out.push(ProtectedPath {
                    entry,
                    path: value,
                    below: None,
                });
            }
            continue;
        }
        if value.starts_with('/') || crate::paths::check_path(&format!("/{value}")).is_err() {
            continue;
        }
        for w in writes.iter().filter(|w| dir(w)) {
            let path = if w == "/" {
                format!("/{value}")
            } else {
                format!("{w}/{value}")
            };
            out.push(ProtectedPath {
                entry,
                path,
                below: Some(w.clone()),
            });
        }
    }
    out
}

/// The protected paths: the realpath (and, for Linux, the kind) of each
/// that exists, recorded with the roots'; what holds the place of each that
/// does not (returned); a symlink on the way below a write root refused
/// (`sealc::protect::link`); and advice for a write root that holds a
/// `.git` whose hooks and config are not protected (`sealc::protect::git`).
#[allow(clippy::too_many_arguments)]
pub(super) fn protected(
    spec: &Spec,
    src: &str,
    vars: &BTreeMap<String, String>,
    linux: bool,
    (realpaths, kinds): (
        &mut BTreeMap<String, String>,
        &mut BTreeMap<String, PathKind>,
    ),
    absent_writes: &BTreeMap<String, String>,
    host: &dyn Host,
    diags: &mut Diagnostics,
) -> BTreeMap<String, StandIn> {
    use crate::paths::is_within;
    let mut stand_ins = BTreeMap::new();
    // Each write root as written, and where it is (or is made).
    let writes: Vec<(String, String)> = spec
        .filesystem
        .write
        .iter()
        .filter_map(|w| root_path(w, src, vars))
        .filter_map(|w| {
            let at = realpaths.get(&w).or_else(|| absent_writes.get(&w))?.clone();
            Some((w, at))
        })
        .collect();
    let dirs: BTreeSet<String> = writes
        .iter()
        .filter(|(w, at)| absent_writes.contains_key(w) || host.lstat(at) == Some(Kind::Dir))
        .map(|(w, _)| w.clone())
        .collect();
    let is_dir = |w: &str| dirs.contains(w);
    // The spec entry of the write root `w` (as written): where advice points.
    let write_entry = |w: &str| {
        spec.filesystem
            .write
            .iter()
            .find(|e| root_path(e, src, vars).as_deref() == Some(w))
    };
    let paths = protected_paths(spec, src, vars, &is_dir);
    let kind_of = |k: Option<Kind>| match k {
        Some(Kind::Dir) => PathKind::Dir,
        Some(Kind::File) => PathKind::File,
        _ => PathKind::Other,
    };
    for pp in &paths {
        if let Some(d) = protect_link(&pp.path, &writes, host) {
            diags.push(d.at(pp.entry.span.clone()));
            continue;
        }
        if let Some(real) = host.canonicalize(&pp.path) {
            if linux {
                kinds.insert(real.clone(), kind_of(host.lstat(&real)));
            }
            realpaths.insert(pp.path.clone(), real);
            continue;
        }
        if let Some(s) = stand_in(&pp.path, &writes, absent_writes, host) {
            stand_ins.insert(pp.path.clone(), s);
        }
    }
    // A checkout in a write root: what the agent leaves in its `.git` runs
    // with the operator's rights at the next git command.
    for (w, at) in &writes {
        if !is_dir(w) || host.lstat(&format!("{at}/.git")).is_none() {
            continue;
        }
        let covered = |rel: &str| {
            paths.iter().any(|pp| {
                is_within(&format!("{w}/{rel}"), &pp.path)
                    || realpaths
                        .get(&pp.path)
                        .or_else(|| stand_ins.get(&pp.path).map(|s: &StandIn| &s.at))
                        .is_some_and(|l| is_within(&format!("{at}/{rel}"), l))
            })
        };
        let open: Vec<&str> = [".git/hooks", ".git/config"]
            .into_iter()
            .filter(|rel| !covered(rel))
            .collect();
        if open.is_empty() {
            continue;
        }
        let Some(entry) = write_entry(w) else {
            continue;
        };
        let names: Vec<String> = open.iter().map(|o| format!("`{o}`")).collect();
        diags.push(
            Diagnostic::advice(
                crate::diag::code::PROTECT_GIT,
                format!(
                    "the write root {} holds a `.git`, and {} {} not protected",
                    quote(w),
                    names.join(" and "),
                    if open.len() == 1 { "is" } else { "are" }
                ),
            )
            .at(entry.span.clone())
            .label("a hook the agent plants there runs with your rights at your next `git commit`; a `core.fsmonitor` or `core.hooksPath` in `.git/config` runs at any git command")
            .help(format!(
                "add `protect = [{}]` under `[filesystem]` (the starter of `sealc init` protects `.git/hooks`, `.git/config`, `.codex` and `.agents`)",
                open.iter().map(|o| format!("\"{o}\"")).collect::<Vec<_>>().join(", ")
            )),
        );
    }
    // A protected `.git/config` that sends git to what the agent writes:
    // a hooks directory, a monitor program or an included config in a
    // write root, not protected.
    for (w, at) in &writes {
        let config = format!("{at}/.git/config");
        if !is_dir(w) || host.lstat(&config) != Some(Kind::File) {
            continue;
        }
        let protected_here = |p: &str| {
            paths.iter().any(|pp| {
                is_within(p, &pp.path)
                    || realpaths
                        .get(&pp.path)
                        .or_else(|| stand_ins.get(&pp.path).map(|s: &StandIn| &s.at))
                        .is_some_and(|l| is_within(p, l))
            })
        };
        if !protected_here(&config) {
            continue; // `sealc::protect::git` says so
        }
        // In a write root: the agent may have made it any size.
        let Some(bytes) = host.read_at_most(&config, 1 << 20) else {
            continue;
        };
        let text = String::from_utf8_lossy(&bytes);
        let Some(entry) = write_entry(w) else {
            continue;
        };
        for (key, value) in git_config_reach(&text) {
            // `core.hooksPath` and `core.fsmonitor` are taken from the top
            // of the work tree, an include from the config's directory.
            let base = if key.starts_with("include") {
                format!("{at}/.git")
            } else {
                at.clone()
            };
            let Some(target) = config_path(&value, &base) else {
                continue;
            };
            let in_write = writes
                .iter()
                .any(|(wp, wl)| is_within(&target, wl) || is_within(&target, wp));
            if !in_write || protected_here(&target) {
                continue;
            }
            diags.push(
                Diagnostic::warning(
                    crate::diag::code::PROTECT_GIT_CONFIG,
                    format!(
                        "the protected `.git/config` of the write root {} sets `{key}` to {}, which the agent may write",
                        quote(w),
                        quote(&value)
                    ),
                )
                .at(entry.span.clone())
                .label(if key.starts_with("include") {
                    "git reads it as config at every command: a `core.fsmonitor` the agent puts there runs with your rights"
                } else {
                    "git runs what is there with your rights at your next git command"
                })
                .help(format!(
                    "add {} to `filesystem.protect` (or review it after each run)",
                    quote(&target)
                )),
            );
        }
    }
    stand_ins
}

/// The settings of a git config that name a file git runs or reads as
/// config: `core.hooksPath`, `core.fsmonitor` (when it is a path, not a
/// boolean), `include.path` and `includeIf.<condition>.path`, as (key,
/// value). A small reader: sections, `key = value` lines, quotes.
pub(super) fn git_config_reach(text: &str) -> Vec<(String, String)> {
    let mut out = Vec::new();
    let mut section = String::new();
    for line in text.lines() {
        let line = line.trim();
        if line.starts_with('#') || line.starts_with(';') || line.is_empty() {
            continue;
        }
        if let Some(rest) = line.strip_prefix('[') {
            let name = rest.split([']', ' ', '"', '.']).next().unwrap_or_default();
            section = name.to_ascii_lowercase();
            continue;
        }
        let Some((key, value)) = line.split_once('=') else {
            continue;
        };
        let key = key.trim().to_ascii_lowercase();
        let value = value
            .split(['#', ';'])
            .next()
            .unwrap_or_default()
            .trim()
            .trim_matches('"')
            .to_string();
        let named = match (section.as_str(), key.as_str()) {
            ("core", "hookspath") => Some("core.hooksPath"),
            ("core", "fsmonitor") => {
                let boolean = ["true", "false", "yes", "no", "on", "off", "1", "0"]
                    .contains(&value.to_ascii_lowercase().as_str());
                (!boolean).then_some("core.fsmonitor")
            }
            ("include", "path") => Some("include.path"),
            ("includeif", "path") => Some("includeIf.path"),
            _ => None,
        };
        if let Some(k) = named.filter(|_| !value.is_empty()) {
            out.push((k.to_string(), value));
        }
    }
    out
}

/// A config value taken as a path: absolute, or relative to `base`; `None`
/// for a value sealc cannot place (`~`, a command line with arguments).
pub(super) fn config_path(value: &str, base: &str) -> Option<String> {
    if value.starts_with('~') || value.contains(char::is_whitespace) {
        return None;
    }
    Some(if value.starts_with('/') {
        normalize(value)
    } else {
        normalize(&format!("{base}/{value}"))
    })
}

/// A symlink on the way to a protected path, below a write root (or the
/// path itself a symlink): the agent could point it elsewhere, and the
/// operator's tools, which use the path, would follow.
pub(super) fn protect_link(
    path: &str,
    writes: &[(String, String)],
    host: &dyn Host,
) -> Option<Diagnostic> {
    use crate::paths::is_within;
    let inside = |p: &str, w: &str| p != w && is_within(p, w);
    let mut q = String::new();
    for c in path.split('/').filter(|c| !c.is_empty()) {
        q.push('/');
        q.push_str(c);
        match host.lstat(&q) {
            None => return None,
            Some(Kind::Symlink) => {}
            Some(_) => continue,
        }
        // A write root written through a link is not on the way below it.
        if writes.iter().any(|(w, _)| *w == q) {
            continue;
        }
        let at = located(&q, host).unwrap_or_else(|| q.clone());
        let Some((w, _)) = writes
            .iter()
            .find(|(w, loc)| inside(&q, w) || inside(&at, loc))
        else {
            continue;
        };
        let target = host.read_link(&q).unwrap_or_default();
        let what = if q == path {
            format!("the protected path {} is a symlink", quote(path))
        } else {
            format!(
                "{} on the way to the protected path {} is a symlink",
                quote(&q),
                quote(path)
            )
        };
        return Some(
            Diagnostic::error(crate::diag::code::PROTECT_LINK, format!("{what} inside the write root {}", quote(w)))
                .label("the agent can point it elsewhere, and your tools, which use this path, would follow it to what the agent wrote")
                .help(format!(
                    "protect the path it leads to ({}), or replace the link by what it points at",
                    quote(&target)
                )),
        );
    }
    None
}

/// What holds the place of a protected path that does not exist: the
/// first missing component, made by `sealc exec` (below what it makes for
/// a write root absent when compiled: that is there when the seal starts),
/// or the object on the way that cannot hold it. `None` outside every write
/// root (the IR says so), or when that object is the write root itself.
pub(super) fn stand_in(
    path: &str,
    writes: &[(String, String)],
    absent_writes: &BTreeMap<String, String>,
    host: &dyn Host,
) -> Option<StandIn> {
    use crate::paths::is_within;
    let path = normalize(path);
    // The nearest existing ancestor, by realpath, and the rest below it.
    let mut cut = path.len();
    let (real, rest) = loop {
        let above = match path[..cut].rfind('/') {
            Some(0) | None => "/",
            Some(i) => &path[..i],
        };
        if let Some(real) = host.canonicalize(above) {
            break (real, &path[above.len().max(1)..]);
        }
        if above == "/" {
            return None;
        }
        cut = above.len();
    };
    let rest: Vec<&str> = rest.split('/').filter(|c| !c.is_empty()).collect();
    let join = |a: &str, b: &str| {
        if a == "/" {
            format!("/{b}")
        } else {
            format!("{a}/{b}")
        }
    };
    let would = rest.iter().fold(real.clone(), |acc, c| join(&acc, c));
    let (_, loc) = writes
        .iter()
        .filter(|(_, loc)| would != *loc && is_within(&would, loc))
        .max_by_key(|(_, loc)| loc.len())?;
    // What `sealc exec` makes on the way to a write root absent when
    // compiled is there when the seal starts: the stand-in goes below it
    // (and is the path itself when that is on the way to such a root,
    // which the IR refuses: it would hold a write root).
    let mut base = real.clone();
    let mut made = 0;
    for c in &rest {
        let next = join(&base, c);
        if !absent_writes.values().any(|m| is_within(m, &next)) {
            break;
        }
        base = next;
        made += 1;
    }
    if made == rest.len() {
        return Some(StandIn {
            at: would,
            kind: PathKind::Dir,
        });
    }
    if made > 0 {
        return Some(StandIn {
            at: join(&base, rest[made]),
            kind: PathKind::Dir,
        });
    }
    match host.lstat(&real) {
        Some(Kind::Dir) => Some(StandIn {
            at: join(&real, rest.first()?),
            kind: PathKind::Dir,
        }),
        _ if real == *loc => None,
        Some(Kind::File) => Some(StandIn {
            at: real,
            kind: PathKind::File,
        }),
        _ => Some(StandIn {
            at: real,
            kind: PathKind::Other,
        }),
    }
}

/// For a Linux target: the identity of every denied or metadata-only root
/// whose realpath lies inside a write root's realpath, and of each of its
/// ancestors below the outermost such write root. Between runs the agent may
/// rename any of them (its mounts hide a root only where it is), so
/// `sealc exec` compares them before starting. A denied root that is itself a
/// symlink inside a write root is refused: the agent could point it anywhere.
pub(super) fn denied_in_write_roots(
    spec: &Spec,
    src: &str,
    vars: &BTreeMap<String, String>,
    realpaths: &BTreeMap<String, String>,
    host: &dyn Host,
    diags: &mut Diagnostics,
) -> BTreeMap<String, Identity> {
    use crate::paths::is_within;
    let writes: Vec<(String, Option<&String>)> = spec
        .filesystem
        .write
        .iter()
        .filter_map(|w| root_path(w, src, vars))
        .map(|p| {
            let real = realpaths.get(&p);
            (p, real)
        })
        .collect();
    let fs = &spec.filesystem;
    let mut identities = BTreeMap::new();
    let codex_denied = spec.codex_denied();
    for entry in fs
        .deny_read
        .iter()
        .chain(&fs.metadata_only)
        .chain(&codex_denied)
    {
        let Some(path) = root_path(entry, src, vars) else {
            continue;
        };
        if host.lstat(&path) == Some(Kind::Symlink) {
            let location = located(&path, host).unwrap_or_else(|| path.clone());
            let inside = writes.iter().find(|(w, real)| {
                is_within(&path, w) || real.is_some_and(|r| is_within(&location, r))
            });
            if let Some((w, _)) = inside {
                let target = host.read_link(&path).unwrap_or_default();
                diags.push(
                    Diagnostic::error(
                        crate::diag::code::LINUX_DENIED_LINK_IN_WRITE_ROOT,
                        format!(
                            "{} is a symlink inside the write root {}",
                            quote(&path),
                            quote(w)
                        ),
                    )
                    .at(entry.span.clone())
                    .label("the agent can point it at a decoy between runs, and what it hid is exposed")
                    .help(format!(
                        "list the path it points to ({}) instead, or move the link out of the write root",
                        quote(&target)
                    )),
                );
            }
        }
        let Some(real) = realpaths.get(&path) else {
            continue;
        };
        let Some(outer) = writes
            .iter()
            .filter_map(|(_, r)| *r)
            .filter(|w| is_within(real, w))
            .min_by_key(|w| w.len())
        else {
            continue;
        };
        let mut cur = real.as_str();
        loop {
            if let Some(id) = host.identity(cur) {
                identities.insert(cur.to_string(), id);
            }
            let up = parent(cur);
            if up == cur || up == outer.as_str() || !is_within(up, outer) {
                break;
            }
            cur = up;
        }
    }
    identities
}

/// The most paths a `sealc::root::linked` diagnostic names (the rest are
/// counted).
pub(super) const LISTED: usize = 20;

/// `1 file`, `2 files`.
pub(super) fn count(n: u64, one: &str, many: &str) -> String {
    format!("{n} {}", if n == 1 { one } else { many })
}

/// Why a walk stopped, in words.
pub(super) fn unwalked(root: &str, why: &Unwalked) -> String {
    match why {
        Unwalked::Entries(n) => format!("more than {n} entries under {}", quote(root)),
        Unwalked::Depth(n, at) => format!(
            "{} is more than {n} directories below {}",
            quote(at),
            quote(root)
        ),
        Unwalked::Read { path, error } => {
            format!("cannot read {} ({error})", quote(path))
        }
    }
}
