//! The rules of each section of the profile, from the IR: reads, metadata,
//! writes, links and clones, the network, the IPC surface, and the
//! deny-default base.

use super::*;
use smallvec::smallvec;

pub(super) fn read_rules<'a>(cx: &Cx<'a>) -> Vec<Rule<'a>> {
    let ir = cx.ir;
    let mut s = Sorted::with_capacity(spelling_count(ir) + 16);
    if ir.base == Base::DenyDefault {
        for p in DENY_DEFAULT_READ_ROOTS {
            s.push(
                p,
                0,
                rule(
                    "deny-default base".into(),
                    Action::Allow,
                    &["file-read*"],
                    Filter::Subpath((*p).into()),
                ),
            );
        }
        // Rank 0, like the base's roots: a user's rule on the same path
        // comes after it and decides (`deny_read = ["/"]` denies `/`).
        for p in DENY_DEFAULT_READ_FILES {
            s.push(
                p,
                0,
                rule(
                    "deny-default base".into(),
                    Action::Allow,
                    &["file-read*"],
                    Filter::Literal((*p).into()),
                ),
            );
        }
    }
    for root in &ir.roots {
        let (action, rank, literal) = match root.kind {
            // Read as its write root is.
            RootKind::Protect => continue,
            RootKind::DenyRead => (Action::Deny, 1, false),
            RootKind::MetadataOnly => (Action::Deny, 2, false),
            RootKind::AllowRead => (Action::Allow, 3, false),
            RootKind::Write => (Action::Allow, 4, false),
            RootKind::WriteDevice => (Action::Allow, 5, true),
        };
        for sp in &root.spellings {
            let f = if literal {
                Filter::Literal(sp.as_str().into())
            } else {
                Filter::Subpath(sp.as_str().into())
            };
            s.push(sp, rank, rule(origin(root, sp), action, &["file-read*"], f));
        }
    }
    for e in ir.launcher.iter().filter(|e| e.reallow) {
        for sp in &e.spellings {
            s.push(
                sp,
                7,
                rule(
                    format!(
                        "launcher chain entry \"{}\" ({}), re-allowed by literal path",
                        e.path,
                        match e.kind {
                            crate::facts::LinkKind::Symlink => "symlink",
                            crate::facts::LinkKind::File => "file",
                        }
                    )
                    .into(),
                    Action::Allow,
                    &["file-read*"],
                    Filter::Literal(sp.as_str().into()),
                ),
            );
        }
    }
    s.finish()
}

pub(super) fn metadata_rules<'a>(cx: &Cx<'a>) -> Vec<Rule<'a>> {
    let ir = cx.ir;
    let mut rules = Vec::new();
    let meta = PathSet::new(
        ir.roots_of(RootKind::MetadataOnly)
            .flat_map(|r| r.spellings.iter()),
    );
    if !meta.is_empty() {
        let mut s = Sorted::with_capacity(spelling_count(ir) + 16);
        for root in &ir.roots {
            let action = match root.kind {
                RootKind::DenyRead => Action::Deny,
                RootKind::MetadataOnly | RootKind::AllowRead | RootKind::Write => Action::Allow,
                RootKind::WriteDevice | RootKind::Protect => continue,
            };
            for sp in &root.spellings {
                let inside_meta = meta.covers_strictly(sp);
                if root.kind == RootKind::MetadataOnly || inside_meta {
                    let mut c = origin(root, sp);
                    if root.kind == RootKind::MetadataOnly {
                        c = c.with_suffix(": stat only");
                    }
                    s.push(
                        sp,
                        0,
                        rule(
                            c,
                            action,
                            &["file-read-metadata"],
                            Filter::Subpath(sp.as_str().into()),
                        ),
                    );
                }
            }
        }
        rules.extend(s.finish());
    }
    // Ancestors of every re-allowed path, so getcwd and stat work on the way down.
    let needs = |a: &str| ir.base == Base::DenyDefault || cx.denied().covers(a);
    let mut done: BTreeSet<&str> = BTreeSet::new();
    if ir.base == Base::DenyDefault {
        // What the user denied stays denied: the base never overrides a
        // `deny_read` root of the same or a shallower path.
        let kept: Vec<&str> = DENY_DEFAULT_METADATA
            .iter()
            .copied()
            .filter(|p| !user_denies(ir, p))
            .collect();
        let filters: Vec<Filter> = kept.iter().map(|p| Filter::Literal((*p).into())).collect();
        done.extend(kept);
        if !user_denies(ir, "/") {
            done.insert("/");
        }
        rules.push(Rule {
            comment: "deny-default base: symlinks and directories walked to reach system files"
                .into(),
            action: Action::Allow,
            ops: &["file-read-metadata"],
            filters: filters.into(),
        });
    }
    // The comment is written with the rule, and only if there is one.
    let mut reallowed: Vec<(Comment, &crate::ir::Spellings)> = Vec::new();
    for root in &ir.roots {
        if matches!(
            root.kind,
            RootKind::AllowRead | RootKind::MetadataOnly | RootKind::Write | RootKind::WriteDevice
        ) {
            reallowed.push((
                Comment::Ancestors {
                    of: root.kind.key(),
                    entry: &root.origin,
                },
                &root.spellings,
            ));
        }
    }
    for e in ir.launcher.iter().filter(|e| e.reallow) {
        reallowed.push((
            Comment::Ancestors {
                of: "launcher chain entry",
                entry: &e.path,
            },
            &e.spellings,
        ));
    }
    for (comment, spellings) in reallowed {
        let mut filters = Vec::new();
        for sp in spellings {
            for a in ancestors(sp) {
                if needs(a) && done.insert(a) {
                    filters.push(Filter::Literal(a.into()));
                }
            }
        }
        if !filters.is_empty() {
            filters.sort();
            rules.push(Rule {
                comment,
                action: Action::Allow,
                ops: &["file-read-metadata"],
                filters: filters.into(),
            });
        }
    }
    rules
}

/// Proper ancestors of an absolute path, `/` first, as slices of it.
pub(super) fn ancestors(p: &str) -> impl Iterator<Item = &str> {
    let root = (p != "/").then_some("/");
    let inner = p
        .match_indices('/')
        .map(|(i, _)| i)
        .filter(|&i| i > 0)
        .map(move |i| &p[..i]);
    root.into_iter().chain(inner)
}

/// The spellings of a root that name the object itself: its realpath and
/// the realpath's `/private` twin (a name the kernel checks after resolving
/// every link on the way). A spelling whose last component is a symlink
/// names the link, which can be renamed where its directory is writable,
/// as on Linux. Without a recorded realpath, every spelling.
pub(super) fn object_spellings(root: &Root) -> impl Iterator<Item = &str> {
    root.spellings
        .iter()
        .filter(move |s| match &root.real {
            None => true,
            Some(r) => {
                *s == r
                    || macos_aliases(s).as_deref() == Some(r.as_str())
                    || macos_aliases(r).as_deref() == Some(s.as_str())
            }
        })
        .map(String::as_str)
}

/// Does the user's deepest root that holds `p` (by any spelling; devices
/// aside) deny reading it? The deny-default base gives way to it.
pub(super) fn user_denies(ir: &Ir, p: &str) -> bool {
    ir.roots
        .iter()
        .filter(|r| r.kind != RootKind::WriteDevice)
        .filter_map(|r| {
            r.spellings
                .iter()
                .filter(|s| is_within(p, s))
                .map(|s| s.len())
                .max()
                .map(|len| (len, r.kind))
        })
        .max_by_key(|(len, kind)| (*len, *kind == RootKind::DenyRead))
        .is_some_and(|(_, kind)| kind == RootKind::DenyRead)
}

pub(super) fn write_rules<'a>(cx: &Cx<'a>) -> Vec<Rule<'a>> {
    let ir = cx.ir;
    let mut s = Sorted::with_capacity(spelling_count(ir) + 16);
    s.push(
        "/",
        0,
        rule(
            "writes are an allow-list: every path is denied, then write roots re-allowed".into(),
            Action::Deny,
            &["file-write*"],
            Filter::Subpath("/".into()),
        ),
    );
    let writable = PathSet::new(
        ir.roots_of(RootKind::Write)
            .flat_map(|r| r.spellings.iter()),
    );
    for root in &ir.roots {
        for sp in &root.spellings {
            match root.kind {
                RootKind::Write => s.push(
                    sp,
                    1,
                    rule(
                        origin(root, sp),
                        Action::Allow,
                        &["file-write*"],
                        Filter::Subpath(sp.as_str().into()),
                    ),
                ),
                RootKind::WriteDevice => s.push(
                    sp,
                    2,
                    rule(
                        origin(root, sp),
                        Action::Allow,
                        &["file-write*"],
                        Filter::Literal(sp.as_str().into()),
                    ),
                ),
                RootKind::DenyRead | RootKind::MetadataOnly if writable.covers(sp) => s.push(
                    sp,
                    3,
                    rule(
                        origin(root, sp).with_suffix(
                            ": inside a write root, so not writable, creatable or removable",
                        ),
                        Action::Deny,
                        &["file-write*"],
                        Filter::Subpath(sp.as_str().into()),
                    ),
                ),
                _ => {}
            }
        }
    }
    for root in ir.protected() {
        for sp in &root.spellings {
            s.push(
                sp,
                3,
                rule(
                    protect_origin(root, sp).with_suffix(
                        ": read-only inside a write root: nothing in it or at its name is created, changed, removed or renamed",
                    ),
                    Action::Deny,
                    &["file-write*"],
                    Filter::Subpath(sp.as_str().into()),
                ),
            );
        }
    }
    let mut rules = s.finish();
    // A denied root inside a write root must not be moved out from under its
    // rule: its writable ancestors cannot be unlinked (renamed) either.
    for root in ir.roots.iter().filter(|r| r.kind.is_denied()) {
        let mut filters = BTreeSet::new();
        for sp in &root.spellings {
            if !writable.covers(sp) {
                continue;
            }
            for a in ancestors(sp) {
                if writable.covers(a) {
                    filters.insert(Filter::Literal(a.into()));
                }
            }
        }
        if !filters.is_empty() {
            rules.push(Rule {
                comment: format!(
                    "{} \"{}\": its writable ancestors cannot be renamed or removed",
                    root.kind.key(),
                    root.origin
                )
                .into(),
                action: Action::Deny,
                ops: &["file-write-unlink"],
                filters: filters.into_iter().collect(),
            });
        }
    }
    // A write root is a fixed name, as on Linux (where it is a mount
    // point): it cannot be removed or renamed away, only written inside.
    for root in ir.roots_of(RootKind::Write) {
        rules.push(Rule {
            comment: Comment::Root {
                root,
                note: "the directory or file itself",
                suffix: ": the root cannot be removed or renamed",
                alias: false,
            },
            action: Action::Deny,
            ops: &["file-write-unlink"],
            filters: object_spellings(root)
                .map(|s| Filter::Literal(s.into()))
                .collect(),
        });
    }
    // A protected root and the directories between its write root and it
    // are fixed names (on Linux: mount points), so it cannot be moved away
    // and a writable one made in its place.
    for pin in &ir.pins {
        let holds: Vec<&str> = pin.holds.iter().map(String::as_str).collect();
        rules.push(Rule {
            comment: format!(
                "`{}`{} lies between a write root and what is protected in it ({}): not renamed or removed",
                pin.path,
                if pin.made { " (made by `sealc exec` with the Codex home)" } else { "" },
                holds.join(", ")
            )
            .into(),
            action: Action::Deny,
            ops: &["file-write-unlink"],
            filters: pin
                .spellings
                .iter()
                .map(|s| Filter::Literal(s.as_str().into()))
                .collect(),
        });
    }
    for root in ir.protected() {
        rules.push(Rule {
            comment: protect_origin(root, root.real.as_deref().unwrap_or(&root.path))
                .with_suffix(": not removed or renamed"),
            action: Action::Deny,
            ops: &["file-write-unlink"],
            filters: root
                .spellings
                .iter()
                .map(|s| Filter::Literal(s.as_str().into()))
                .collect(),
        });
    }
    rules.push(rule(
        "no set-user-id or set-group-id bits anywhere (file-write-setugid falls back to the default, not to file-write*)".into(),
        Action::Deny,
        &["file-write-setugid"],
        Filter::Subpath("/".into()),
    ));
    rules
}

/// Hard links and clones: never *of* a denied or stat-only file (laundering),
/// always of a file in a write root (package managers link inside the
/// workspace), even when the write root lies in a denied root or the base is
/// deny-default. Per spelling, deepest last, so the deepest root decides; a
/// write root itself is never linked (on Linux it is a mount point).
/// How many spellings the roots have: about how many rules a section has.
fn spelling_count(ir: &Ir) -> usize {
    ir.roots.iter().map(|r| r.spellings.len()).sum()
}

pub(super) fn launder_rules<'a>(cx: &Cx<'a>) -> Vec<Rule<'a>> {
    let ir = cx.ir;
    let mut s = Sorted::with_capacity(spelling_count(ir) + 16);
    for root in ir.roots_of(RootKind::Write) {
        for sp in &root.spellings {
            if ir.base == Base::DenyDefault || cx.denied().covers(sp) {
                s.push(
                    sp,
                    0,
                    Rule {
                        comment: origin(root, sp)
                            .with_suffix(": links and clones of its own files"),
                        action: Action::Allow,
                        ops: &["file-link", "file-clone"],
                        filters: one_filter(Filter::Subpath(sp.as_str().into())),
                    },
                );
            }
        }
        for sp in object_spellings(root) {
            s.push(
                sp,
                2,
                rule(
                    origin(root, sp).with_suffix(": the root itself is never hard-linked"),
                    Action::Deny,
                    &["file-link"],
                    Filter::Literal(sp.into()),
                ),
            );
        }
    }
    // A hard link of a protected file made elsewhere in the write root
    // would be a writable name for it.
    for root in ir.protected() {
        for sp in &root.spellings {
            s.push(
                sp,
                1,
                Rule {
                    comment: protect_origin(root, sp).with_suffix(
                        ": never linked or cloned (a link elsewhere would be writable)",
                    ),
                    action: Action::Deny,
                    ops: &["file-link", "file-clone"],
                    filters: one_filter(Filter::Subpath(sp.as_str().into())),
                },
            );
        }
    }
    for root in ir.roots.iter().filter(|r| r.kind.is_denied()) {
        for sp in &root.spellings {
            s.push(
                sp,
                1,
                Rule {
                    comment: origin(root, sp).with_suffix(": derived, always"),
                    action: Action::Deny,
                    ops: &["file-link", "file-clone"],
                    filters: one_filter(Filter::Subpath(sp.as_str().into())),
                },
            );
        }
    }
    s.finish()
}

pub(super) fn network_rules<'a>(cx: &Cx<'a>) -> Vec<Rule<'a>> {
    let ir = cx.ir;
    let deny_all = || Rule {
        comment: format!(
            "network.mode = \"{}\": no IP traffic in or out, no unix sockets",
            ir.network.mode.as_str()
        )
        .into(),
        action: Action::Deny,
        ops: &["network*"],
        filters: smallvec![
            Filter::Raw("(remote ip \"*:*\")".into()),
            Filter::Raw("(local ip \"*:*\")".into()),
            Filter::Subpath("/".into()),
        ],
    };
    match ir.network.mode {
        // Under `(deny default)` no rule would leave it closed: open it
        // explicitly, as the Linux seal is (no network namespace).
        NetMode::Open if ir.base == Base::DenyDefault => vec![Rule {
            comment: "network.mode = \"open\" under the deny-default base: IP traffic in and out and unix sockets, which `(deny default)` would refuse".into(),
            action: Action::Allow,
            ops: &["network*"],
            filters: smallvec![
                Filter::Raw("(remote ip \"*:*\")".into()),
                Filter::Raw("(local ip \"*:*\")".into()),
                Filter::Subpath("/".into()),
            ],
        }],
        NetMode::Open => Vec::new(),
        NetMode::None => vec![deny_all()],
        NetMode::Proxy | NetMode::Allowlist => {
            let mut rules = vec![deny_all()];
            if let Some(p) = &ir.network.proxy {
                let comment = match ir.network.mode {
                    NetMode::Allowlist => format!(
                        "network.proxy \"{}:{}\": outbound TCP to sealc's own proxy only, which `sealc exec` runs and which lets through only `network.hosts` and `ports` (localhost is 127.0.0.1 and ::1)",
                        p.host, p.port
                    ),
                    _ => format!(
                        "network.proxy \"{}:{}\": outbound TCP to the loopback proxy only (localhost is 127.0.0.1 and ::1)",
                        p.host, p.port
                    ),
                };
                rules.push(Rule {
                    comment: comment.into(),
                    action: Action::Allow,
                    ops: &["network-outbound"],
                    filters: smallvec![Filter::Raw(Cow::Owned(format!(
                        "(remote tcp \"localhost:{}\")",
                        p.port
                    )))],
                });
            }
            rules
        }
    }
}

/// The IPC surface sealed under both bases: one deny rule per entry of
/// [`crate::ipc::SEALED`], after every allow, so neither reading of
/// precedence lets a base's allow win.
pub(super) fn ipc_rules<'a>(cx: &Cx<'a>) -> Vec<Rule<'a>> {
    let ir = cx.ir;
    use crate::ipc::{Sealed, SEALED};
    SEALED
        .iter()
        .map(|e| {
            let (ops, filters): (&'static [&'static str], _) = match &e.sealed {
                Sealed::Service(n) => (&["mach-lookup"], vec![Filter::GlobalName(n)]),
                Sealed::Operation(op) => (std::slice::from_ref(op), Vec::new()),
                Sealed::Program(p) => (&["process-exec*"], vec![Filter::Literal((*p).into())]),
            };
            // Re-allowed by the spec: said, and allowed by its own rule
            // (the deny-default base allows none of these).
            let allowed = ir.ipc_allowed.contains(e.name());
            let action = if allowed { Action::Allow } else { Action::Deny };
            let comment = Comment::Ipc {
                allowed: allowed.then(|| e.name()),
                opens: first_clause(e.opens),
            };
            Rule {
                comment,
                action,
                ops,
                filters: filters.into(),
            }
        })
        .collect()
}

/// The words before the first `(` or `;` of an entry's description: the
/// profile's comment stays one short line.
pub(super) fn first_clause(s: &str) -> &str {
    s.split([';', '(', ',']).next().unwrap_or(s).trim_end()
}

pub(super) fn base_rules<'a>(cx: &Cx<'a>) -> Vec<Rule<'a>> {
    let ir = cx.ir;
    let mut exec_filters: Vec<Filter> = ["/System", "/bin", "/sbin", "/usr"]
        .iter()
        .map(|p| Filter::Subpath((*p).into()))
        .collect();
    for root in ir
        .roots
        .iter()
        .filter(|r| matches!(r.kind, RootKind::AllowRead | RootKind::Write))
    {
        exec_filters.extend(
            root.spellings
                .iter()
                .map(|s| Filter::Subpath(s.as_str().into())),
        );
    }
    for e in &ir.launcher {
        exec_filters.extend(
            e.spellings
                .iter()
                .map(|s| Filter::Literal(s.as_str().into())),
        );
    }
    exec_filters.sort();
    exec_filters.dedup();
    vec![
        Rule {
            comment: "deny-default base: run programs from the system, the launcher chain, and allowed roots".into(),
            action: Action::Allow,
            ops: &["process-exec*"],
            filters: exec_filters.into(),
        },
        Rule {
            comment: "deny-default base: fork takes no filter and no other rule names process*, so this cannot conflict".into(),
            action: Action::Allow,
            ops: &["process-fork"],
            filters: Filters::new(),
        },
        Rule {
            comment: "deny-default base: signals within this sandbox only".into(),
            action: Action::Allow,
            ops: &["signal"],
            filters: smallvec![Filter::Raw("(target same-sandbox)".into())],
        },
        Rule {
            comment: "deny-default base: hardware and kernel facts programs read at start".into(),
            action: Action::Allow,
            ops: &["sysctl-read"],
            filters: smallvec![
                Filter::Raw("(sysctl-name-prefix \"hw.\")".into()),
                Filter::Raw("(sysctl-name-prefix \"kern.\")".into()),
                Filter::Raw("(sysctl-name-prefix \"machdep.cpu.\")".into()),
            ],
        },
        Rule {
            comment: "deny-default base: user lookup, notifications, logging and certificate checks".into(),
            action: Action::Allow,
            ops: &["mach-lookup"],
            filters: crate::ipc::DENY_DEFAULT_SERVICES
                .iter()
                .map(|(n, _)| Filter::Raw(format!("(global-name {})", lit(n)).into()))
                .collect(),
        },
        Rule {
            comment: "deny-default base: the notification center's shared memory".into(),
            action: Action::Allow,
            ops: &["ipc-posix-shm-read-data"],
            filters: smallvec![Filter::Raw("(ipc-posix-name \"apple.shm.notification_center\")".into())],
        },
    ]
}
