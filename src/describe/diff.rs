//! `sealc diff`: what changed between two seals' policies, each change with
//! its effect (wider, narrower, other) and its section.

use super::*;

/// Which way a change goes.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Effect {
    /// The new seal allows more (`+`).
    More,
    /// The new seal allows less (`-`).
    Less,
    /// Different, neither more nor less (`~`).
    Changed,
}

impl Effect {
    pub fn sign(self) -> char {
        match self {
            Effect::More => '+',
            Effect::Less => '-',
            Effect::Changed => '~',
        }
    }
    pub fn heading(self) -> &'static str {
        match self {
            Effect::More => "allows more",
            Effect::Less => "allows less",
            Effect::Changed => "changed",
        }
    }
}

/// The part of the policy a change is in, in the order they are shown.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Section {
    Seal,
    Filesystem,
    Network,
    Env,
    Limits,
    Codex,
    Ipc,
}

impl Section {
    pub fn as_str(self) -> &'static str {
        match self {
            Section::Seal => "seal",
            Section::Filesystem => "filesystem",
            Section::Network => "network",
            Section::Env => "env",
            Section::Limits => "limits",
            Section::Codex => "codex",
            Section::Ipc => "ipc",
        }
    }
}

/// One difference between two seals, in policy terms.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct Change {
    pub effect: Effect,
    pub section: Section,
    /// What changed: a path, a host, a name, a setting.
    pub subject: String,
    /// The change in words, the subject included.
    pub text: String,
}

/// A var whose value differs between two seals of one spec.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct VarChange {
    pub name: String,
    pub old: String,
    pub new: String,
}

/// Do two seals differ only in their var values? Yes when both come from
/// the same spec text, some var's value differs, and the two policies are
/// the same once each var's value is written back as `${name}` (a value
/// taken only where a whole path component or string ends with it). A
/// host that differs in anything else (a root that exists on one side
/// only, a link) leaves a difference, and the answer is no. The seals a
/// harness compiles per run directory from one reviewed spec are such a
/// pair.
pub fn only_vars_differ(
    old: (&str, &std::collections::BTreeMap<String, String>, &Policy),
    new: (&str, &std::collections::BTreeMap<String, String>, &Policy),
) -> Option<Vec<VarChange>> {
    if old.0 != new.0 || old.1.keys().ne(new.1.keys()) {
        return None;
    }
    let changed: Vec<VarChange> = old
        .1
        .iter()
        .zip(new.1.values())
        .filter(|((_, a), b)| a != b)
        .map(|((name, a), b)| VarChange {
            name: name.clone(),
            old: a.clone(),
            new: b.clone(),
        })
        .collect();
    if changed.is_empty() {
        return None;
    }
    let symbolic = |vars: &std::collections::BTreeMap<String, String>, p: &Policy| {
        let mut text = serde_json::to_string(p).ok()?;
        let mut by_len: Vec<(&String, &String)> =
            vars.iter().filter(|(_, v)| !v.is_empty()).collect();
        by_len.sort_by_key(|(_, v)| std::cmp::Reverse(v.len()));
        for (name, value) in by_len {
            text = replace_whole(&text, value, &format!("${{{name}}}"));
        }
        Some(text)
    };
    (symbolic(old.1, old.2)? == symbolic(new.1, new.2)?).then_some(changed)
}

/// `text` with each `value` that ends a path component or a string (the
/// next character `/`, `"`, `)` or a space, or the end) replaced by `with`.
fn replace_whole(text: &str, value: &str, with: &str) -> String {
    let mut out = String::with_capacity(text.len());
    let mut rest = text;
    while let Some(i) = rest.find(value) {
        let after = &rest[i + value.len()..];
        out.push_str(&rest[..i]);
        if after.is_empty() || after.starts_with(['/', '"', ')', ' ']) {
            out.push_str(with);
        } else {
            out.push_str(value);
        }
        rest = after;
    }
    out.push_str(rest);
    out
}

/// What `new` allows differently from `old`: sorted by effect (more, less,
/// changed), then section, then subject. Empty when they allow the same.
pub fn diff(old: &Policy, new: &Policy) -> Vec<Change> {
    let mut out = Vec::new();
    diff_seal(old, new, &mut out);
    diff_filesystem(old, new, &mut out);
    diff_network(&old.network, &new.network, &mut out);
    diff_env(&old.env, &new.env, &mut out);
    diff_limits(&old.limits, &new.limits, &mut out);
    diff_reset(&old.reset, &new.reset, &mut out);
    diff_outputs(&old.outputs, &new.outputs, &mut out);
    diff_codex(&old.codex, &new.codex, &mut out);
    for (what, has) in &new.ipc {
        let was = old.ipc.get(what);
        if was.is_some_and(|w| w != has) || (was.is_none() && !old.ipc.is_empty()) {
            let effect = if has.starts_with("yes") {
                Effect::More
            } else {
                Effect::Less
            };
            push(
                &mut out,
                effect,
                Section::Ipc,
                what,
                format!(
                    "can {what}: {has} (was {})",
                    was.map_or("not listed", String::as_str)
                ),
            );
        }
    }
    // A stable sort keeps each section's own order within a subject.
    out.sort_by_key(|c| (c.effect, c.section));
    out
}

pub(super) fn push(
    out: &mut Vec<Change>,
    effect: Effect,
    section: Section,
    subject: &str,
    text: String,
) {
    out.push(Change {
        effect,
        section,
        subject: subject.to_string(),
        text,
    });
}

pub(super) fn diff_seal(old: &Policy, new: &Policy, out: &mut Vec<Change>) {
    if old.platform != new.platform {
        push(
            out,
            Effect::Changed,
            Section::Seal,
            "platform",
            format!("platform {} (was {})", new.platform, old.platform),
        );
    }
    if old.isolation != new.isolation {
        // Landlock alone keeps less than the namespaces around it.
        let landlock = |i: &Option<String>| i.as_deref().is_some_and(|i| i.starts_with("landlock"));
        let effect = match (landlock(&old.isolation), landlock(&new.isolation)) {
            (false, true) => Effect::More,
            (true, false) => Effect::Less,
            _ => Effect::Changed,
        };
        push(
            out,
            effect,
            Section::Seal,
            "isolation",
            format!(
                "isolation {} (was {})",
                new.isolation.as_deref().unwrap_or("-"),
                old.isolation.as_deref().unwrap_or("-")
            ),
        );
    }
    if old.proc != new.proc {
        // What the agent sees: none < fresh < host.
        let rank = |p: &Option<String>| {
            let p = p.as_deref()?;
            ["none", "fresh", "host"]
                .iter()
                .position(|m| p.starts_with(m))
        };
        let effect = match (rank(&old.proc), rank(&new.proc)) {
            (Some(a), Some(b)) if b > a => Effect::More,
            (Some(a), Some(b)) if b < a => Effect::Less,
            _ => Effect::Changed,
        };
        push(
            out,
            effect,
            Section::Seal,
            "proc",
            format!(
                "/proc {} (was {})",
                new.proc.as_deref().unwrap_or("-"),
                old.proc.as_deref().unwrap_or("-")
            ),
        );
    }
    if old.base != new.base {
        let effect = if new.base == Base::DenyDefault.as_str() {
            Effect::Less
        } else {
            Effect::More
        };
        push(
            out,
            effect,
            Section::Seal,
            "base",
            format!(
                "base {} (was {}): reads {}",
                new.base, old.base, new.filesystem.base_reads
            ),
        );
    }
}

/// What a path gets, from the deepest root that holds it (or the base).
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub(super) enum Access {
    Hidden,
    Stat,
    Read,
    /// Read-only inside a write root (`protect`).
    ReadOnly,
    Write,
}

impl Access {
    pub(super) fn words(self) -> &'static str {
        match self {
            Access::Hidden => "hidden",
            Access::Stat => "stat only",
            Access::Read => "readable",
            Access::ReadOnly => "read-only inside a write root",
            Access::Write => "writable",
        }
    }
}

/// The roots of a policy by path, with the access each gives.
pub(super) fn listed(p: &Policy) -> BTreeMap<&str, (Access, &PathItem)> {
    let fs = &p.filesystem;
    let mut m = BTreeMap::new();
    for (access, group) in [
        (Access::Read, &fs.can_read),
        (Access::Stat, &fs.stat_only),
        (Access::Write, &fs.can_write),
        (Access::ReadOnly, &fs.read_only),
        // Hidden last: a path listed twice is refused when compiling, but
        // if it were not, denying wins.
        (Access::Hidden, &fs.cannot_read),
    ] {
        for item in &group.paths {
            m.insert(item.path.as_str(), (access, item));
        }
    }
    m
}

/// The access `path` gets under a policy: the deepest listed root holding
/// it decides, else the base.
pub(super) fn access(
    p: &Policy,
    roots: &BTreeMap<&str, (Access, &PathItem)>,
    path: &str,
) -> Access {
    let deepest = roots
        .iter()
        .filter(|(root, _)| is_within(path, root))
        .max_by_key(|(root, _)| root.len());
    if let Some((_, (a, _))) = deepest {
        return *a;
    }
    if p.base == Base::AllowDefault.as_str() {
        return Access::Read;
    }
    if p.filesystem.system_base.iter().any(|s| is_within(path, s)) {
        Access::Read
    } else {
        Access::Hidden
    }
}

pub(super) fn shown(item: &PathItem) -> String {
    if item.written == item.path {
        format!("`{}`", item.path)
    } else {
        format!("`{}` ({})", item.written, item.path)
    }
}

pub(super) fn diff_filesystem(old: &Policy, new: &Policy, out: &mut Vec<Change>) {
    let (o, n) = (listed(old), listed(new));
    let paths: BTreeSet<&str> = o.keys().chain(n.keys()).copied().collect();
    for path in paths {
        let (was, now) = (access(old, &o, path), access(new, &n, path));
        let item = n.get(path).or_else(|| o.get(path)).map(|(_, i)| *i);
        let Some(item) = item else { continue };
        let what = shown(item);
        if was != now {
            let effect = if now > was {
                Effect::More
            } else {
                Effect::Less
            };
            let how = match (o.contains_key(path), n.contains_key(path)) {
                (false, true) => "newly listed",
                (true, false) => "no longer listed",
                _ => "listed differently",
            };
            push(
                out,
                effect,
                Section::Filesystem,
                path,
                format!("{what} is {} (was {}; {how})", now.words(), was.words()),
            );
            continue;
        }
        if let (Some((_, a)), Some((_, b))) = (o.get(path), n.get(path)) {
            if a.realpath != b.realpath {
                push(
                    out,
                    Effect::Changed,
                    Section::Filesystem,
                    path,
                    format!(
                        "{what} resolves to `{}` (was `{}`)",
                        b.realpath.as_deref().unwrap_or(&b.path),
                        a.realpath.as_deref().unwrap_or(&a.path)
                    ),
                );
            }
        }
    }
    let devices = |p: &Policy| -> BTreeSet<String> {
        p.filesystem
            .devices
            .paths
            .iter()
            .map(|d| d.path.clone())
            .collect()
    };
    let (od, nd) = (devices(old), devices(new));
    for d in nd.difference(&od) {
        push(
            out,
            Effect::More,
            Section::Filesystem,
            d,
            format!("device `{d}` is writable"),
        );
    }
    for d in od.difference(&nd) {
        push(
            out,
            Effect::Less,
            Section::Filesystem,
            d,
            format!("device `{d}` is no longer writable"),
        );
    }
    let chain = |p: &Policy| -> Vec<String> {
        p.filesystem
            .launcher
            .iter()
            .map(|l| l.path.clone())
            .collect()
    };
    let (oc, nc) = (chain(old), chain(new));
    if oc != nc {
        let list = |c: &[String]| {
            if c.is_empty() {
                "none".to_string()
            } else {
                c.iter()
                    .map(|p| format!("`{p}`"))
                    .collect::<Vec<_>>()
                    .join(" → ")
            }
        };
        push(
            out,
            Effect::Changed,
            Section::Filesystem,
            "launcher",
            format!("launcher {} (was {})", list(&nc), list(&oc)),
        );
    }
}

pub(super) fn net_rank(mode: &str) -> u8 {
    match mode {
        "none" => 0,
        "allowlist" => 1,
        "proxy" => 2,
        _ => 3,
    }
}

pub(super) fn set_diff<T: Ord + Clone + std::fmt::Display>(
    old: &[T],
    new: &[T],
    section: Section,
    what: &str,
    out: &mut Vec<Change>,
) {
    let (o, n): (BTreeSet<&T>, BTreeSet<&T>) = (old.iter().collect(), new.iter().collect());
    for x in n.difference(&o) {
        let s = x.to_string();
        push(
            out,
            Effect::More,
            section,
            &s,
            format!("{what} `{s}` added"),
        );
    }
    for x in o.difference(&n) {
        let s = x.to_string();
        push(
            out,
            Effect::Less,
            section,
            &s,
            format!("{what} `{s}` removed"),
        );
    }
}

pub(super) fn diff_network(old: &Network, new: &Network, out: &mut Vec<Change>) {
    if old.mode != new.mode {
        let effect = if net_rank(&new.mode) > net_rank(&old.mode) {
            Effect::More
        } else {
            Effect::Less
        };
        push(
            out,
            effect,
            Section::Network,
            "mode",
            format!("mode {} (was {}): {}", new.mode, old.mode, new.meaning),
        );
    }
    if old.proxy != new.proxy && old.proxy.is_some() && new.proxy.is_some() {
        push(
            out,
            Effect::Changed,
            Section::Network,
            "proxy",
            format!(
                "proxy at `{}` (was `{}`)",
                new.proxy.as_deref().unwrap_or_default(),
                old.proxy.as_deref().unwrap_or_default()
            ),
        );
    }
    set_diff(&old.hosts, &new.hosts, Section::Network, "host", out);
    set_diff(&old.ports, &new.ports, Section::Network, "port", out);
    set_diff(
        &old.allow_ranges,
        &new.allow_ranges,
        Section::Network,
        "allowed range",
        out,
    );
}

/// How a name crosses into the sandbox.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum Cross {
    Passed,
    PassedUnset,
    Set,
    Proxy,
    Secret,
}

impl Cross {
    pub(super) fn words(self) -> &'static str {
        match self {
            Cross::Passed => "passed, its value captured when compiled",
            Cross::PassedUnset => "listed in `pass` but unset when compiled, so it does not cross",
            Cross::Set => "set",
            Cross::Proxy => "set for the proxy",
            Cross::Secret => "a secret (supplied at start)",
        }
    }
    pub(super) fn crosses(self) -> bool {
        self != Cross::PassedUnset
    }
}

pub(super) fn crossing(e: &Env) -> BTreeMap<&str, Cross> {
    let mut m = BTreeMap::new();
    for (list, c) in [
        (&e.passed, Cross::Passed),
        (&e.passed_unset, Cross::PassedUnset),
        (&e.set, Cross::Set),
        (&e.proxy_vars, Cross::Proxy),
        (&e.secrets, Cross::Secret),
    ] {
        for name in list {
            m.insert(name.as_str(), c);
        }
    }
    m
}

pub(super) fn diff_env(old: &Env, new: &Env, out: &mut Vec<Change>) {
    let (o, n) = (crossing(old), crossing(new));
    let names: BTreeSet<&str> = o.keys().chain(n.keys()).copied().collect();
    for name in names {
        let (was, now) = (o.get(name).copied(), n.get(name).copied());
        let crosses = |c: Option<Cross>| c.is_some_and(Cross::crosses);
        let (effect, text) = match (was, now) {
            (Some(a), Some(b)) if a == b => {
                if old.values.get(name) != new.values.get(name) {
                    let how = if b == Cross::Passed {
                        "a different captured value"
                    } else {
                        "a different value"
                    };
                    (Effect::Changed, format!("`{name}` crosses with {how}"))
                } else {
                    continue;
                }
            }
            (a, b) => {
                let effect = match (crosses(a), crosses(b)) {
                    (false, true) => Effect::More,
                    (true, false) => Effect::Less,
                    _ => Effect::Changed,
                };
                let text = match (a, b) {
                    (None, Some(b)) => format!("`{name}` added: {}", b.words()),
                    (Some(a), None) => format!("`{name}` removed (was {})", a.words()),
                    (Some(a), Some(b)) => {
                        format!("`{name}` is {} (was {})", b.words(), a.words())
                    }
                    (None, None) => continue,
                };
                (effect, text)
            }
        };
        push(out, effect, Section::Env, name, text);
    }
}

pub(super) fn diff_limits(
    old: &BTreeMap<String, u64>,
    new: &BTreeMap<String, u64>,
    out: &mut Vec<Change>,
) {
    let names: BTreeSet<&String> = old.keys().chain(new.keys()).collect();
    for name in names {
        let (effect, text) = match (old.get(name), new.get(name)) {
            (Some(a), Some(b)) if a == b => continue,
            (Some(a), Some(b)) => (
                if b > a { Effect::More } else { Effect::Less },
                format!("{name} {b} (was {a})"),
            ),
            (None, Some(b)) => (Effect::Less, format!("{name} {b} (was unlimited)")),
            (Some(a), None) => (Effect::More, format!("{name} unlimited (was {a})")),
            (None, None) => continue,
        };
        push(out, effect, Section::Limits, name, text);
    }
}

/// `exec.reset`: a root no longer emptied lets one run's state reach the
/// next (more); one emptied now, less.
pub(super) fn diff_reset(old: &[String], new: &[String], out: &mut Vec<Change>) {
    for r in old.iter().filter(|r| !new.contains(r)) {
        let text = format!(
            "{} kept from one run to the next (was emptied before each run)",
            crate::diag::visible(r)
        );
        push(out, Effect::More, Section::Filesystem, r, text);
    }
    for r in new.iter().filter(|r| !old.contains(r)) {
        let text = format!(
            "{} emptied before each run (was kept from one run to the next)",
            crate::diag::visible(r)
        );
        push(out, Effect::Less, Section::Filesystem, r, text);
    }
}

/// `exec.outputs`: what a run's attestation names; neither more nor less
/// is allowed.
fn diff_outputs(old: &[String], new: &[String], out: &mut Vec<Change>) {
    for o in old.iter().filter(|o| !new.contains(o)) {
        let text = format!(
            "{} no longer hashed and attested after each run",
            crate::diag::visible(o)
        );
        push(out, Effect::Changed, Section::Filesystem, o, text);
    }
    for o in new.iter().filter(|o| !old.contains(o)) {
        let text = format!(
            "{} hashed and attested after each run",
            crate::diag::visible(o)
        );
        push(out, Effect::Changed, Section::Filesystem, o, text);
    }
}

pub(super) fn opt(v: &Option<String>) -> String {
    match v {
        Some(s) => format!("`{s}`"),
        None => "unset".to_string(),
    }
}

pub(super) fn diff_codex(old: &Codex, new: &Codex, out: &mut Vec<Change>) {
    let mut changed = |subject: &str, text: String| {
        push(out, Effect::Changed, Section::Codex, subject, text);
    };
    if old.sealed != new.sealed {
        changed(
            "sealed",
            if new.sealed {
                "a Codex seal now: `sealc exec` installs the Codex config".to_string()
            } else {
                "no longer a Codex seal: `sealc exec` installs no Codex config".to_string()
            },
        );
    }
    if old.versions != new.versions {
        changed(
            "versions",
            format!(
                "for Codex {} (was {})",
                new.versions.join(", "),
                old.versions.join(", ")
            ),
        );
    }
    if old.sandbox != new.sandbox {
        changed(
            "sandbox",
            format!("Codex's own sandbox {} (was {})", new.sandbox, old.sandbox),
        );
    }
    if old.config != new.config {
        changed(
            "config",
            format!("config at {} (was {})", opt(&new.config), opt(&old.config)),
        );
    }
    if old.model != new.model {
        changed(
            "model",
            format!("model {} (was {})", opt(&new.model), opt(&old.model)),
        );
    }
    if old.reasoning_effort != new.reasoning_effort {
        changed(
            "reasoning_effort",
            format!(
                "reasoning effort {} (was {})",
                opt(&new.reasoning_effort),
                opt(&old.reasoning_effort)
            ),
        );
    }
    if old.workspace != new.workspace {
        changed(
            "workspace",
            format!(
                "workspace {} (was {})",
                opt(&new.workspace),
                opt(&old.workspace)
            ),
        );
    }
    if old.provider != new.provider {
        let p = |p: &Option<Provider>| match p {
            Some(Provider {
                base_url,
                held_at: Some(_),
                ..
            }) => format!("`{base_url}`, its key held by sealc"),
            Some(p) => format!("`{}`", p.base_url),
            None => "the default".to_string(),
        };
        changed(
            "provider",
            format!("provider {} (was {})", p(&new.provider), p(&old.provider)),
        );
    }
    if old.credentials != new.credentials {
        let (effect, text) = match (&old.credentials, &new.credentials) {
            (None, Some(c)) => (
                Effect::More,
                format!("Codex gets the credentials `{c}`, copied into its home (its tools can read them)"),
            ),
            (Some(c), None) => (Effect::Less, format!("Codex no longer gets the credentials `{c}`")),
            _ => (
                Effect::Changed,
                format!(
                    "credentials {} (was {})",
                    opt(&new.credentials),
                    opt(&old.credentials)
                ),
            ),
        };
        push(out, effect, Section::Codex, "credentials", text);
    }
    if old.workspace_trusted != new.workspace_trusted {
        let (effect, text) = if new.workspace_trusted {
            (
                Effect::More,
                "the workspace is trusted: Codex reads its `.codex/` project config",
            )
        } else {
            (
                Effect::Less,
                "the workspace is untrusted: its `.codex/` is hidden",
            )
        };
        push(
            out,
            effect,
            Section::Codex,
            "workspace trust",
            text.to_string(),
        );
    }
}
