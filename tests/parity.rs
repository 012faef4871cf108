//! One spec, one meaning (issue 11): random specs over a host with nested
//! roots, roots written through symlinks and an absent write root are
//! compiled for macOS and for Linux; both seals are read back (the SBPL
//! evaluator for `seal.sb`, the mount model for `seal.bwrap.json`) and asked
//! the same questions, on every directory of the host by both spellings
//! (as written, through a link, and as the realpath): read, stat, lstat,
//! existence, listing, write, create, mkdir, unlink, rename and hard links
//! within a directory and across directories, renames of directories, and
//! connections. Each side reads a path as its kernel does: macOS resolves
//! every link on the host (and needs `file-read-metadata` on each link it
//! walks through), Linux follows the links the sandbox shows.
//!
//! The answers must agree, except where a documented platform difference
//! (`docs/platform-differences.md`) explains the disagreement, and that
//! difference must be one `sealc lint --platform both` reports for the spec.

use std::collections::{BTreeMap, BTreeSet};

use proptest::prelude::*;
use sealc::facts::{normalize, FakeHost};
use sealc::mounts::{Access, Model as Mounts, Move, Op};
use sealc::sbpl::eval::{Action, Model as Sbpl, Target, Verdict};

/// The directories of the host; each holds a file `f`.
const DIRS: &[&str] = &[
    "/h",
    "/h/u",
    "/h/u/.cfg",
    "/h/u/src",
    "/h/u/src/pub",
    "/h/u/src/pub/x",
    "/o",
    "/o/a",
    "/o/a/b",
    "/o/a/b/c",
    "/s",
    "/s/run",
    "/s/run/disp",
    "/s/run/disp/open",
    "/s/run/ws",
    "/s/run/ws/.h",
    "/s/run/ws/.h/k",
];
/// Symlinks of the host: a link to another tree, and two relative ones.
const LINKS: &[(&str, &str)] = &[
    ("/h/u/lnk", "/o/a"),
    ("/h/u/src/cur", "pub"),
    ("/s/run/w2", "ws"),
];
/// A file that may be a root of its own.
const FILE_ROOT: &str = "/o/a/b/g";
/// A write root that does not exist when compiled.
const ABSENT: &str = "/s/run/out";
/// Where renames and hard links across directories go.
const ELSEWHERE: &[&str] = &["/h/u", "/o/a", "/s/run/ws"];

/// What a random spec may give a role: every directory, every link, the
/// file, the absent path.
fn candidates() -> Vec<&'static str> {
    let mut v: Vec<&str> = DIRS
        .iter()
        .filter(|d| d.matches('/').count() > 1)
        .copied()
        .collect();
    v.extend(LINKS.iter().map(|(l, _)| *l));
    v.push(FILE_ROOT);
    v.push(ABSENT);
    v
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
enum Role {
    Deny,
    Allow,
    Meta,
    Write,
}

const LISTS: [(Role, &str); 4] = [
    (Role::Deny, "deny_read"),
    (Role::Allow, "allow_read"),
    (Role::Meta, "metadata_only"),
    (Role::Write, "write"),
];

fn host() -> FakeHost {
    let mut h = FakeHost::new()
        .file("/usr/bin/bwrap", b"bwrap")
        .file("/usr/bin/env", b"env")
        .file("/usr/bin/sandbox-exec", b"sandbox-exec")
        .file(FILE_ROOT, b"g");
    for d in DIRS {
        h = h.dir(d).file(&format!("{d}/f"), b"f");
    }
    for (l, t) in LINKS {
        h = h.link(l, t);
    }
    h
}

/// The host's links, with absolute targets.
fn host_links() -> BTreeMap<String, String> {
    LINKS
        .iter()
        .map(|(l, t)| {
            let to = if t.starts_with('/') {
                t.to_string()
            } else {
                normalize(&format!("{}/{t}", parent(l)))
            };
            (l.to_string(), to)
        })
        .collect()
}

fn parent(p: &str) -> &str {
    match p.rfind('/') {
        Some(0) | None => "/",
        Some(i) => &p[..i],
    }
}

fn within(p: &str, root: &str) -> bool {
    root == "/" || p == root || (p.starts_with(root) && p.as_bytes().get(root.len()) == Some(&b'/'))
}

/// Every directory by every spelling: as it is, and through each link
/// that leads into it.
fn spellings() -> Vec<String> {
    let mut v: Vec<String> = DIRS.iter().map(|d| d.to_string()).collect();
    for (l, to) in host_links() {
        for d in DIRS.iter().filter(|d| within(d, &to)) {
            v.push(format!("{l}{}", &d[to.len()..]));
        }
    }
    v.sort();
    v.dedup();
    v
}

/// Names a random spec may protect below every write root: a directory
/// that some write roots hold (`.h`, and `.h/k` inside it), a file every
/// directory holds (`f`), and absent ones (`zz`, and `.h/zz`: below `.h`
/// where there is one, else `.h` is the stand-in).
const NAMES: &[&str] = &["", "", ".h", ".h/k", "f", "zz", ".h/zz"];

/// A random spec: the roles drawn, the spec text.
struct Drawn {
    roles: BTreeMap<&'static str, Role>,
    deny_default: bool,
    mode: &'static str,
    src: String,
}

fn draw(
    picks: &[u8],
    protect: &[bool],
    name: &str,
    deny_default: bool,
    mode: &'static str,
) -> Drawn {
    let mut roles = BTreeMap::new();
    for (c, r) in candidates().into_iter().zip(picks) {
        let role = match r {
            1 => Role::Deny,
            2 => Role::Allow,
            3 => Role::Meta,
            4 => Role::Write,
            _ => continue,
        };
        if c == ABSENT && role != Role::Write {
            continue;
        }
        roles.insert(c, role);
    }
    // A link and what it leads to are one root: keep the one the target
    // has. On Linux a denied link inside a write root is refused (the agent
    // could point it elsewhere between runs): keep it out of write roots.
    let links = host_links();
    let known = sealc::query::Links::symlinks(links.clone());
    let real = |p: &str| {
        sealc::query::resolve(p, &known)
            .map(|r| r.path)
            .unwrap_or_default()
    };
    for (l, to) in &links {
        let Some(role) = roles.get(l.as_str()).copied() else {
            continue;
        };
        let target_has = roles.keys().any(|k| *k != l.as_str() && real(k) == *to);
        let in_write = roles
            .iter()
            .any(|(w, r)| *r == Role::Write && (within(l, w) || within(l, &real(w))));
        if target_has || (matches!(role, Role::Deny | Role::Meta) && in_write) {
            roles.remove(l.as_str());
        }
    }
    let mut src = format!(
        "version = 1\nname = \"parity\"\n[target]\nbase = \"{}\"\n[filesystem]\n",
        if deny_default {
            "deny-default"
        } else {
            "allow-default"
        }
    );
    for (role, key) in LISTS {
        let v: Vec<String> = roles
            .iter()
            .filter(|(_, r)| **r == role)
            .map(|(p, _)| format!("{p:?}"))
            .collect();
        src.push_str(&format!("{key} = [{}]\n", v.join(", ")));
    }
    // Protected: directories strictly inside a write root (where they
    // lead) that hold none, and a name below every write root.
    let writes: Vec<String> = roles
        .iter()
        .filter(|(_, r)| **r == Role::Write)
        .map(|(w, _)| real(w))
        .collect();
    let mut protected: Vec<String> = candidates()
        .into_iter()
        .zip(protect)
        .filter(|(_, p)| **p)
        .map(|(c, _)| c)
        .filter(|c| !roles.contains_key(c) && *c != ABSENT && *c != FILE_ROOT)
        .filter(|c| {
            let r = real(c);
            writes.iter().any(|w| r != *w && within(&r, w)) && !writes.iter().any(|w| within(w, &r))
        })
        .map(|c| format!("{c:?}"))
        .collect();
    if !name.is_empty() {
        protected.push(format!("{name:?}"));
    }
    src.push_str(&format!("protect = [{}]\n", protected.join(", ")));
    src.push_str(&format!("[network]\nmode = \"{mode}\"\n"));
    if mode == "proxy" {
        src.push_str("proxy = \"127.0.0.1:3128\"\n");
    }
    Drawn {
        roles,
        deny_default,
        mode,
        src,
    }
}

/// Both seals of a spec, read back.
struct Seals {
    mac: Sbpl<'static>,
    linux: Mounts,
}

fn compile(d: &Drawn) -> Result<Option<Seals>, TestCaseError> {
    use sealc::spec::Platform;
    let host = host();
    let mut out = Vec::new();
    for platform in [Platform::Macos, Platform::Linux] {
        match sealc::compile_for("p.toml", &d.src, &Vec::new(), Some(platform), &host) {
            Ok(c) => out.push(c),
            // A link and what it leads to in contradicting lists; on Linux a
            // denied link inside a write root: refused, so nothing to compare.
            Err(e)
                if e.0.iter().filter(|x| x.is_error()).all(|x| {
                    matches!(
                        x.code,
                        "sealc::root::conflict"
                            | "sealc::linux::denied-link-in-write-root"
                            // A protected path through a link in a write
                            // root, or one that holds a write root.
                            | "sealc::protect::link"
                            | "sealc::protect::write-root"
                    )
                }) =>
            {
                return Ok(None)
            }
            Err(e) => return Err(TestCaseError::fail(format!("{}\n{e:?}", d.src))),
        }
    }
    // The model borrows the profile's text and the arena its lists are
    // read into: both kept for the test process (a few kilobytes a case).
    let sb: &'static str = String::from_utf8(out[0].files["seal.sb"].clone())
        .unwrap()
        .leak();
    let arena = Box::leak(Box::new(sealc::sbpl::parse::Arena::new()));
    let profile =
        sealc::sbpl::parse::parse(sb, arena).map_err(|e| TestCaseError::fail(e.to_string()))?;
    let mac = Sbpl::new(&profile, &BTreeMap::new());
    let mut linux =
        Mounts::from_artifact(&out[1].files["seal.bwrap.json"]).map_err(TestCaseError::fail)?;
    linux.know_links(host_links());
    Ok(Some(Seals { mac, linux }))
}

/// The kernel's path on macOS: every link on the host followed (the final
/// one with `last`), and the links walked through on the way.
fn mac_path(p: &str, last: bool) -> (String, Vec<String>) {
    let links = sealc::query::Links::symlinks(host_links());
    let mut walked = Vec::new();
    let mut cur = p.to_string();
    for _ in 0..8 {
        let r = sealc::query::resolve(&cur, &links).unwrap();
        walked.extend(r.followed.iter().map(|(l, _, _)| l.clone()));
        match r.last {
            Some((l, to)) if last => {
                walked.push(l);
                cur = to;
            }
            _ => return (r.path, walked),
        }
    }
    (cur, walked)
}

fn decided(m: &Sbpl, op: &str, p: &str) -> Result<bool, TestCaseError> {
    match m.query(op, &Target::Path(p.to_string())) {
        Verdict::Decided(d) => Ok(d.action == Action::Allow),
        v => Err(TestCaseError::fail(format!("{op} {p}: {v:?}"))),
    }
}

/// macOS: `op` on what `p` leads to, and metadata of every link walked.
fn mac(m: &Sbpl, op: &str, p: &str, last: bool) -> Result<bool, TestCaseError> {
    let (real, walked) = mac_path(p, last);
    for l in &walked {
        if !decided(m, "file-read-metadata", l)? {
            return Ok(false);
        }
    }
    decided(m, op, &real)
}

/// One question and both answers.
#[derive(Debug)]
struct Asked {
    op: &'static str,
    path: String,
    to: Option<String>,
    mac: bool,
    linux: bool,
    why: String,
}

fn questions(s: &Seals) -> Result<Vec<Asked>, TestCaseError> {
    let (m, l) = (&s.mac, &s.linux);
    let mut v = Vec::new();
    let mut ask = |op, path: &str, to: Option<String>, mac: bool, a: sealc::mounts::Answer| {
        v.push(Asked {
            op,
            path: path.to_string(),
            to,
            mac,
            linux: a.allowed,
            why: a.why,
        })
    };
    for (k, d) in spellings().iter().enumerate() {
        let f = format!("{d}/f");
        // The directory itself.
        ask(
            "stat",
            d,
            None,
            mac(m, "file-read-metadata", d, true)?,
            l.path(Access::ReadMetadata, &l.resolve(d, true)),
        );
        ask(
            "lstat",
            d,
            None,
            mac(m, "file-read-metadata", d, false)?,
            l.path(Access::ReadMetadata, d),
        );
        ask(
            "exists",
            d,
            None,
            mac(m, "file-test-existence", d, false)?,
            l.path(Access::ReadMetadata, d),
        );
        ask(
            "list",
            d,
            None,
            mac(m, "file-read-data", d, true)?,
            l.path(Access::ReadData, d),
        );
        // Its file.
        ask(
            "read",
            &f,
            None,
            mac(m, "file-read-data", &f, true)?,
            l.path(Access::ReadData, &f),
        );
        ask(
            "stat",
            &f,
            None,
            mac(m, "file-read-metadata", &f, true)?,
            l.path(Access::ReadMetadata, &l.resolve(&f, true)),
        );
        ask(
            "exists",
            &f,
            None,
            mac(m, "file-test-existence", &f, false)?,
            l.path(Access::ReadMetadata, &f),
        );
        ask(
            "write",
            &f,
            None,
            mac(m, "file-write-data", &f, true)?,
            l.path(Access::Write, &f),
        );
        // New names.
        let new = format!("{d}/new{k}");
        ask(
            "create",
            &new,
            None,
            mac(m, "file-write-create", &new, false)?,
            l.name(Op::Create, &new),
        );
        // Names going away or moving.
        ask(
            "unlink",
            &f,
            None,
            mac(m, "file-write-unlink", &f, false)?,
            l.name(Op::Unlink, &f),
        );
        let moves: Vec<String> = std::iter::once(format!("{d}/r{k}"))
            .chain(ELSEWHERE.iter().map(|e| format!("{e}/r{k}")))
            .collect();
        for to in moves {
            let mac_rename =
                mac(m, "file-write-unlink", &f, false)? && mac(m, "file-write-create", &to, false)?;
            ask(
                "rename",
                &f,
                Some(to.clone()),
                mac_rename,
                l.moved(Move::Rename, &f, &to),
            );
            let mac_link =
                mac(m, "file-link", &f, false)? && mac(m, "file-write-create", &to, false)?;
            ask(
                "link",
                &f,
                Some(to.clone()),
                mac_link,
                l.moved(Move::Link, &f, &to),
            );
        }
        // The directory renamed within its parent.
        let to = format!("{d}.r{k}");
        let mac_rename =
            mac(m, "file-write-unlink", d, false)? && mac(m, "file-write-create", &to, false)?;
        ask(
            "rename",
            d,
            Some(to.clone()),
            mac_rename,
            l.moved(Move::Rename, d, &to),
        );
    }
    Ok(v)
}

/// The roots of a spec: as written, where they lead, their role.
fn roots(d: &Drawn) -> Vec<(String, String, Role)> {
    d.roles
        .iter()
        .map(|(w, r)| (w.to_string(), mac_path(w, true).0, *r))
        .collect()
}

/// The deepest root (by where it leads) that holds `real`.
fn deepest<'a>(
    roots: &'a [(String, String, Role)],
    real: &str,
) -> Option<&'a (String, String, Role)> {
    roots
        .iter()
        .filter(|(_, r, _)| within(real, r))
        .max_by_key(|(_, r, _)| r.len())
}

/// The documented difference that explains a disagreement, if one does.
fn explain(d: &Drawn, a: &Asked) -> Option<&'static str> {
    let roots = roots(d);
    let follows_last = !matches!(
        a.op,
        "lstat" | "exists" | "unlink" | "create" | "rename" | "link"
    );
    let (real, mut walked) = mac_path(&a.path, follows_last);
    if matches!(a.op, "lstat" | "exists") {
        walked.push(a.path.clone());
    }
    // A denied root that is a symlink: Linux hides what it leads to, the
    // link itself stays (lstat, readlink, walking through it).
    let denied_link = |l: &String| {
        roots
            .iter()
            .any(|(w, r, role)| w == l && w != r && *role == Role::Deny)
    };
    if walked.iter().any(denied_link) {
        return Some("denied-symlink");
    }
    // Inside a metadata-only root nothing is there on Linux: no stat, and
    // no symlink to walk through.
    let inside_meta =
        |p: &str| deepest(&roots, p).is_some_and(|(_, r, role)| *role == Role::Meta && r != p);
    if a.mac && !a.linux && walked.iter().any(|l| inside_meta(l)) {
        return Some("metadata-inside");
    }
    match a.op {
        // macOS decides existence by the base alone.
        "exists" if a.mac != d.deny_default => Some("test-existence"),
        "stat" | "lstat" if a.mac && !a.linux && inside_meta(&real) => Some("metadata-inside"),
        "stat" | "lstat" if !a.mac && a.linux => Some("stand-in"),
        "rename" | "link" if a.mac && !a.linux && a.why.contains("(EXDEV)") => Some("cross-mount"),
        "rename"
            if !a.mac
                && a.linux
                && roots.iter().any(|(_, r, role)| {
                    matches!(role, Role::Deny | Role::Meta) && r != &real && within(r, &real)
                }) =>
        {
            Some("rename-ancestor")
        }
        _ => None,
    }
}

/// A listing of a directory bubblewrap made shows only the way to deeper
/// mounts: in a hidden root's stand-in, only the way to what is re-allowed
/// (issue 11, item 5). Returns the names that should not be there.
fn stray_names(d: &Drawn, l: &Mounts, dir: &str) -> Vec<String> {
    let roots = roots(d);
    let real = l.resolve(dir, true);
    let hidden =
        deepest(&roots, &real).is_some_and(|(_, _, role)| matches!(role, Role::Deny | Role::Meta));
    let mut ok = BTreeSet::new();
    for (w, r, role) in &roots {
        if hidden && *role == Role::Deny {
            continue;
        }
        for p in [w, r] {
            if p != &real && within(p, &real) {
                let rest = if real == "/" {
                    &p[1..]
                } else {
                    &p[real.len() + 1..]
                };
                ok.extend(rest.split('/').next().map(str::to_string));
            }
        }
    }
    l.shown(dir)
        .into_iter()
        .filter(|n| !ok.contains(n))
        .collect()
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 512, failure_persistence: None, .. ProptestConfig::default() })]

    #[test]
    fn macos_and_linux_seals_mean_the_same(
        picks in prop::collection::vec(0u8..5, candidates().len()),
        protect in prop::collection::vec(prop::bool::weighted(0.15), candidates().len()),
        name in prop::sample::select(NAMES.to_vec()),
        deny_default in any::<bool>(),
        mode in prop::sample::select(vec!["none", "proxy", "open"]),
    ) {
        let d = draw(&picks, &protect, name, deny_default, mode);
        let report = std::env::var_os("PARITY_REPORT").is_some();
        let Some(seals) = compile(&d)? else {
            if report {
                println!("SKIPPED");
            }
            return Ok(());
        };
        let mut seen = BTreeSet::new();
        // Listings of what bubblewrap made (stand-ins, the way to mounts).
        for dir in spellings() {
            let l = &seals.linux;
            if l.path(Access::ReadData, &dir).allowed || !l.path(Access::ReadMetadata, &l.resolve(&dir, true)).allowed {
                continue;
            }
            let stray = stray_names(&d, l, &dir);
            prop_assert!(stray.is_empty(), "the stand-in {} lists {:?}\n{}", dir, stray, d.src);
            if !l.shown(&dir).is_empty() {
                seen.insert("stand-in");
            }
        }
        // Connections.
        for (host, port) in [("127.0.0.1", 3128), ("::1", 3128), ("127.0.0.1", 22), ("93.184.216.34", 443)] {
            let t = Target::Remote { host: host.into(), port };
            let mac = match seals.mac.query("network-outbound", &t) {
                Verdict::Decided(x) => x.action == Action::Allow,
                v => return Err(TestCaseError::fail(format!("connect {host}: {v:?}"))),
            };
            let linux = seals.linux.connect(host, port).allowed;
            if mac != linux {
                prop_assert!(d.mode == "proxy" && host == "::1" && port == 3128, "connect {}:{}: macOS {}, Linux {}\n{}", host, port, mac, linux, d.src);
                seen.insert("proxy-address");
            }
        }
        let asked = questions(&seals)?;
        if report {
            println!("COMPARED {} questions", asked.len());
        }
        for a in asked {
            if a.mac == a.linux {
                continue;
            }
            if report {
                if let Some(code) = explain(&d, &a) {
                    println!("SEEN {code}");
                }
            }
            match explain(&d, &a) {
                Some(code) => {
                    seen.insert(code);
                }
                None if report => {
                    println!("DIFF {} {} -> {:?}: mac {} linux {} ({})\n{}", a.op, a.path, a.to, a.mac, a.linux, a.why, d.src);
                }
                None => prop_assert!(false, "{} {}{}: macOS {}, Linux {} ({})\n{}", a.op, a.path, a.to.as_deref().map(|t| format!(" -> {t}")).unwrap_or_default(), a.mac, a.linux, a.why, d.src),
            }
        }
        // Each difference seen is one lint names for this spec. Lint reads
        // no host: it judges each root where it is written, so it is given
        // the spec with each root written where it leads on this host.
        let mut real_src = d.src.clone();
        for w in d.roles.keys() {
            let real = mac_path(w, true).0;
            real_src = real_src.replace(&format!("{w:?}"), &format!("{real:?}"));
        }
        let reported: BTreeSet<String> = sealc::lint::lint_for(&real_src, Some(sealc::platform::Select::Both))
            .0
            .iter()
            .map(|x| x.code.to_string())
            .collect();
        for code in seen {
            prop_assert!(
                reported.contains(&format!("sealc::platform::{code}")),
                "the seals differ by `{}`, which lint --platform both does not report\n{}",
                code,
                d.src
            );
        }
    }
}
