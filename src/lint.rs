//! `sealc lint`: everything that can be said about a spec without a host.
//!
//! Three layers, all reported together: the JSON Schema (what an editor with
//! Taplo shows, mapped back to TOML spans), the compiler's own checks run on
//! symbolic var values (`/${name}` for any var whose value needs the host),
//! and warnings that help people write good seals.

use std::collections::BTreeSet;
use std::sync::OnceLock;

use serde_json::{json, Value};
use toml::de::{DeTable, DeValue};

use crate::diag::{quote, Diagnostic, Diagnostics, Span};
use crate::facts::{FakeHost, VarFlags};
use crate::ir::{Ir, PathSet, RootKind};
use crate::paths::PathMap;
use crate::spec::{Base, Spanned, Spec};

pub use crate::spec::SPEC_SCHEMA;

/// Lint spec text. Every finding, sorted by position.
pub fn lint(src: &str) -> Diagnostics {
    lint_for(src, None)
}

/// [`lint`], and, with `platform`, advice on each platform difference that
/// applies to the spec (`sealc lint --platform linux|macos|both`).
pub fn lint_for(src: &str, platform: Option<crate::platform::Select>) -> Diagnostics {
    let mut out = Diagnostics::default();
    let schema = schema_findings(src);
    let spec = match crate::spec::parse(src) {
        Ok(spec) => Some(spec),
        Err(d) => {
            out.extend(d);
            None
        }
    };
    if let Some(spec) = &spec {
        if let (Some(ir), Some(select)) = (compiler_findings(spec, src, &mut out), platform) {
            for d in crate::platform::findings(spec, &ir, select) {
                out.push(d);
            }
        }
    }
    // The schema says much of what the compiler says; keep a schema finding
    // only where no other finding already points (an empty span counts as
    // one byte). The other findings' spans, sorted by start, with the
    // furthest end of any span starting at or before each: one binary
    // search a finding.
    let mut spans: Vec<(usize, usize)> = out
        .0
        .iter()
        .filter_map(|o| o.span.as_ref())
        .map(|o| (o.start, o.end.max(o.start + 1)))
        .collect();
    spans.sort_unstable();
    let mut reach = Vec::with_capacity(spans.len());
    let mut far = 0;
    for (_, end) in &spans {
        far = far.max(*end);
        reach.push(far);
    }
    for d in schema.0 {
        let overlaps = d.span.as_ref().is_some_and(|s| {
            let end = s.end.max(s.start + 1);
            // Spans starting before this one ends; one of them overlaps
            // when the furthest of their ends lies past its start.
            let before = spans.partition_point(|(start, _)| *start < end);
            before > 0 && reach[before - 1] > s.start
        });
        if !overlaps {
            out.push(d);
        }
    }
    out.sorted()
}

/// The compiler's findings and advice on smells; the symbolic IR, when the
/// spec lowers.
fn compiler_findings(spec: &Spec, src: &str, out: &mut Diagnostics) -> Option<Ir> {
    // Host-free var values: defaults where they need no env, `/${name}`
    // otherwise. Nothing is read from this machine.
    let mut host_free = spec.clone();
    host_free.launcher = None;
    let flags: VarFlags = spec
        .vars
        .iter()
        .filter(|(_, v)| v.default.is_none())
        .map(|(k, _)| (k.clone(), format!("/${{{k}}}")))
        .collect();
    let facts = match crate::facts::gather(&host_free, src, &flags, &FakeHost::new()) {
        Ok((facts, _host_warnings)) => facts,
        Err(d) => {
            out.extend(Diagnostics(
                d.0.into_iter()
                    .filter(|x| x.code != crate::diag::code::ENV_ABSENT)
                    .collect(),
            ));
            return None;
        }
    };
    match crate::ir::lower_symbolic(spec, src, &facts) {
        Ok((ir, warnings)) => {
            out.extend(warnings);
            smells(spec, &ir, out);
            git_unprotected(&ir, out);
            Some(ir)
        }
        Err(d) => {
            out.extend(d);
            None
        }
    }
}

/// The warnings and advice of [`lint`] that are about a seal rather than
/// its text, for the IR `sealc compile` lowered: compile reports them too.
pub fn smells_of(spec: &Spec, ir: &Ir) -> Diagnostics {
    let mut out = Diagnostics::default();
    smells(spec, ir, &mut out);
    out
}

/// Warnings that help people write good seals.
fn smells(spec: &Spec, ir: &Ir, out: &mut Diagnostics) {
    let spellings = |kinds: &[RootKind]| -> Vec<&String> {
        ir.roots
            .iter()
            .filter(|r| kinds.contains(&r.kind))
            .flat_map(|r| r.spellings.iter())
            .collect()
    };
    let denied_paths = spellings(&[RootKind::DenyRead, RootKind::MetadataOnly]);
    let denied = PathSet::new(denied_paths.iter().copied());
    let write_paths = spellings(&[RootKind::Write]);
    let writable = PathSet::new(write_paths.iter().copied());
    // The roots a Codex seal adds itself: the user cannot move them.
    let codex_denied = spec.codex_denied();
    let implied: BTreeSet<&str> = codex_denied
        .iter()
        .map(|s| s.value.as_str())
        .filter(|v| !spec.filesystem.deny_read.iter().any(|d| d.value == *v))
        .collect();
    codex_layers(spec, out);
    // What each re-allowed IPC entry opens.
    for entry in &spec.ipc.allow {
        let Some(e) = crate::ipc::find(&entry.value) else {
            continue;
        };
        let (message, label) = match ir.platform {
            crate::spec::Platform::Macos => (
                format!(
                    "`ipc.allow` re-allows {}: the agent can {}",
                    quote(e.name()),
                    e.opens
                ),
                "outside the seal's file and network rules",
            ),
            crate::spec::Platform::Linux => (
                format!(
                    "`ipc.allow` entry {} has no effect on Linux",
                    quote(e.name())
                ),
                "macOS only",
            ),
        };
        out.push(
            Diagnostic::warning(crate::diag::code::LINT_IPC_ALLOWED, message)
                .at(entry.span.clone())
                .label(label)
                .help("keep it only if a tool of the run needs it; an `[[assert]]` that it is denied fails the compile while it is here"),
        );
    }
    // Keyed by the path's hash first, so that 10,000 roots that share a
    // long prefix are not compared byte by byte.
    let by_path = PathMap::new(
        ir.roots
            .iter()
            .filter(|r| r.kind != RootKind::WriteDevice)
            .map(|r| (r.path.as_str(), r)),
    );
    for root in &ir.roots {
        if root.kind == RootKind::AllowRead
            && ir.base == Base::AllowDefault
            && !root.spellings.iter().any(|s| denied.covers(s))
        {
            out.push(
                Diagnostic::warning(
                    crate::diag::code::LINT_ALLOW_OUTSIDE_DENY,
                    format!("`filesystem.allow_read` entry {} lies in no denied root, so it changes nothing", quote(&root.origin)),
                )
                .at(root.span.clone())
                .label("already readable under `allow-default`")
                .help("remove it, or deny a parent of it in `deny_read`"),
            );
        }
        // Redundant: the nearest root that contains this one is of the same list.
        if root.kind != RootKind::WriteDevice {
            if let Some(parent) = by_path.nearest_strictly_enclosing(&root.path) {
                if parent.kind == root.kind {
                    out.push(
                        Diagnostic::advice(
                            crate::diag::code::LINT_REDUNDANT_ROOT,
                            format!(
                                "{} lies inside {}, also in `{}`",
                                quote(&root.origin),
                                quote(&parent.origin),
                                root.kind.key()
                            ),
                        )
                        .at(root.span.clone())
                        .label("covered by a shallower root of the same list")
                        .help("remove it, unless it is a symlink that leads elsewhere: then keep it, so its realpath is covered too"),
                    );
                }
            }
        }
        if root.kind.is_denied()
            && root.spellings.iter().any(|s| writable.covers(s))
            && !implied.contains(root.origin.as_str())
        {
            let (label, help) = match ir.platform {
                crate::spec::Platform::Macos => (
                    "needs the move-blocking rules",
                    "sealc denies writes in it and renames of its writable ancestors, so it cannot be moved out from under its rule; move it out of the write root if you can",
                ),
                crate::spec::Platform::Linux => (
                    "a run can rename it or its ancestors",
                    "on Linux its stand-in stays with the moved directory, so sealc pins the identity of it and of its ancestors in the write root, and `sealc exec` refuses to start once one was moved; it must not be a symlink; move it out of the write root if you can",
                ),
            };
            out.push(
                Diagnostic::advice(
                    crate::diag::code::LINT_DENY_INSIDE_WRITE,
                    format!("{} lies inside a write root", quote(&root.origin)),
                )
                .at(root.span.clone())
                .label(label)
                .help(help),
            );
        }
    }

    // Vars declared but never used.
    let mut used: BTreeSet<&str> = BTreeSet::new();
    for s in spec_strings(spec) {
        if let Some(names) = crate::spec::reference_names(&s.value) {
            used.extend(names);
        }
    }
    for (name, decl) in &spec.vars {
        if !used.contains(name.as_str()) {
            out.push(
                Diagnostic::warning(
                    crate::diag::code::LINT_UNUSED_VAR,
                    format!("var `{name}` is declared but never used"),
                )
                .at(decl.name.span.clone())
                .label("no `${...}` refers to it")
                .help(format!("remove it, or use it as `${{{name}}}`")),
            );
        }
    }

    // Hosts and ports that nothing of sealc's enforces.
    if ir.network.mode == crate::spec::NetMode::Proxy {
        if let Some(first) = spec.network.hosts.first() {
            out.push(
                Diagnostic::advice(
                    crate::diag::code::LINT_UNENFORCED_HOSTS,
                    "in `proxy` mode `network.hosts` and `ports` are recorded for your proxy, not enforced by sealc",
                )
                .at(first.span.clone())
                .label("only as good as the proxy that reads env.json")
                .help("use `mode = \"allowlist\"`: `sealc exec` then runs its own proxy, which lets through only these hosts and ports and audits each connection"),
            );
        }
    }
    // Allowed ranges that reach this machine's own services.
    for r in &spec.network.allow_ranges {
        let Ok(c) = crate::netpolicy::Cidr::parse(&r.value) else {
            continue;
        };
        let loopback = [
            crate::netpolicy::Cidr::parse("127.0.0.0/8"),
            crate::netpolicy::Cidr::parse("::1/128"),
        ];
        if loopback
            .iter()
            .flatten()
            .any(|l| l.contains(c.addr) || c.contains(l.addr))
        {
            out.push(
                Diagnostic::warning(
                    crate::diag::code::LINT_LOOPBACK_RANGE,
                    format!("`network.allow_ranges` entry {} covers loopback", quote(&r.value)),
                )
                .at(r.span.clone())
                .label("an allowed name may then resolve to this machine")
                .help("a listed host that resolves to loopback reaches the services of the machine sealc runs on; allow loopback only for tests"),
            );
        }
    }

    // A `pass` that looks like a secret.
    for p in &spec.env.pass {
        if crate::spec::looks_secret(&p.value) {
            out.push(
                Diagnostic::warning(
                    crate::diag::code::LINT_SECRET_PASS,
                    format!("`{}` looks like a secret, and `pass` records its value", p.value),
                )
                .at(p.span.clone())
                .label("its value would be written to env.json, the Codex config and seal.json")
                .help(format!("list `{}` under `env.secret` instead: the runner supplies it, nothing records it", p.value)),
            );
        }
    }
}

/// Lint's form of `sealc::protect::git` (compile, which sees the host,
/// says it of a write root that holds a `.git`): the write roots whose
/// `.git/hooks` or `.git/config` no protect entry covers (nor a denied
/// root), in case one holds a checkout.
fn git_unprotected(ir: &Ir, out: &mut Diagnostics) {
    // By the paths the entries name: lint's host has none of them, and the
    // stand-in of an absent `.git` would cover all of it.
    let covered = |p: &str| {
        ir.roots.iter().any(|r| match r.kind {
            RootKind::Protect => crate::ir::is_within(p, &r.path),
            k if k.is_denied() => r.spellings.iter().any(|s| crate::ir::is_within(p, s)),
            _ => false,
        })
    };
    let open: Vec<&crate::ir::Root> = ir
        .roots_of(RootKind::Write)
        .filter(|w| {
            let places = std::iter::once(&w.path).chain(w.real.as_ref());
            let places: Vec<&String> = places.collect();
            [".git/hooks", ".git/config"]
                .iter()
                .any(|rel| !places.iter().any(|p| covered(&format!("{p}/{rel}"))))
        })
        .collect();
    let Some(first) = open.first() else {
        return;
    };
    let names: Vec<String> = open.iter().map(|w| quote(&w.origin)).collect();
    out.push(
        Diagnostic::advice(
            crate::diag::code::PROTECT_GIT,
            format!(
                "no `filesystem.protect` entry covers `.git/hooks` and `.git/config` in the write root{} {}",
                if open.len() == 1 { "" } else { "s" },
                names.join(", ")
            ),
        )
        .at(first.span.clone())
        .label("if one holds a git checkout, a hook the agent plants runs with your rights at your next `git commit`, and a `core.fsmonitor` or `core.hooksPath` in `.git/config` at any git command")
        .help("add `protect = [\".git/hooks\", \".git/config\"]` under `[filesystem]`: a name applies below every write root"),
    );
}

/// Codex's other config layers: what a Codex seal lets in.
fn codex_layers(spec: &Spec, out: &mut Diagnostics) {
    let c = &spec.codex;
    let Some(table) = &c.span else { return };
    if let Some(b) = c.allow_system_config.as_ref().filter(|b| b.value) {
        out.push(
            Diagnostic::warning(
                crate::diag::code::LINT_CODEX_LAYERS,
                format!("Codex may read `{}`", crate::spec::CODEX_SYSTEM_DIR),
            )
            .at(b.span.clone())
            .label("its config.toml adds keys, its managed_config.toml and requirements.toml override the sealed config")
            .help("remove `allow_system_config` unless the host's administrator layers are part of what you reviewed"),
        );
    }
    if let Some(b) = c.allow_project_config.as_ref().filter(|b| b.value) {
        out.push(
            Diagnostic::warning(
                crate::diag::code::LINT_CODEX_LAYERS,
                "Codex may load the workspace's `.codex/` layer",
            )
            .at(b.span.clone())
            .label("the workspace is recorded as trusted, and anything the agent writes to `.codex/config.toml` configures the next Codex")
            .help("remove `allow_project_config`: the workspace is then untrusted and its `.codex/` denied"),
        );
    }
    if c.workspace.is_none() && !c.allow_project_config.as_ref().is_some_and(|b| b.value) {
        out.push(
            Diagnostic::advice(
                crate::diag::code::LINT_CODEX_LAYERS,
                "this Codex seal names no `workspace`",
            )
            .at(table.clone())
            .label(
                "a `.codex/` where Codex runs is neither denied nor kept out by an untrusted entry",
            )
            .help("name the write root Codex works in: `workspace = \"${run}/ws\"`"),
        );
    }
}

/// Every string of the spec that may hold `${var}` references.
fn spec_strings(spec: &Spec) -> Vec<&Spanned<String>> {
    let mut v: Vec<&Spanned<String>> = spec
        .filesystem
        .all_roots()
        .chain(&spec.filesystem.protect)
        .chain(spec.env.set.values())
        .collect();
    v.extend(spec.launcher.as_ref().map(|l| &l.path));
    v.extend(spec.network.proxy.as_ref());
    v.extend(&spec.network.hosts);
    v.extend(spec.network.ports.iter().filter_map(|p| match p {
        crate::spec::PortEntry::Var(v) => Some(v),
        crate::spec::PortEntry::Number(_) => None,
    }));
    v.extend(spec.exec.sandbox_exec.as_ref());
    v.extend(&spec.exec.reset);
    v.extend(spec.exec.timeout.as_ref().map(|t| &t.bin));
    v.extend(spec.codex.workspace.as_ref());
    v.extend(spec.codex.version.as_ref());
    v.extend(spec.codex.provider.as_ref().map(|p| &p.base_url));
    v.extend(spec.vars.values().filter_map(|d| d.default.as_ref()));
    for a in &spec.asserts {
        v.extend(a.paths.iter().chain(&a.remote));
    }
    v
}

fn schema_validator() -> &'static Option<jsonschema::Validator> {
    static V: OnceLock<Option<jsonschema::Validator>> = OnceLock::new();
    V.get_or_init(|| {
        let schema: Value = serde_json::from_str(SPEC_SCHEMA).ok()?;
        jsonschema::draft7::new(&schema).ok()
    })
}

/// Validate against the committed schema; map each error to a TOML span.
fn schema_findings(src: &str) -> Diagnostics {
    let mut out = Diagnostics::default();
    let Ok(value) = toml::from_str::<Value>(src) else {
        return out;
    };
    let Ok(doc) = DeTable::parse(src) else {
        return out;
    };
    let Some(validator) = schema_validator() else {
        return out;
    };
    for e in validator.iter_errors(&value) {
        let pointer = e.instance_path().to_string();
        let mut segments: Vec<String> = pointer
            .split('/')
            .skip(1)
            .map(|s| s.replace("~1", "/").replace("~0", "~"))
            .collect();
        // An unexpected key: point at the key itself.
        let mut key_span = false;
        if let jsonschema::error::ValidationErrorKind::AdditionalProperties { unexpected } =
            e.kind()
        {
            if let Some(k) = unexpected.first() {
                segments.push(k.clone());
                key_span = true;
            }
        }
        let span = span_of(&doc, &segments, key_span);
        let at = if pointer.is_empty() {
            "the spec".to_string()
        } else {
            format!("`{}`", pointer_to_dotted(&pointer))
        };
        out.push(
            Diagnostic::error(
                crate::diag::code::LINT_SCHEMA,
                format!("{at}: {}", crate::diag::lowercase_first(&e.to_string())),
            )
            .at_opt(span)
            .label("the schema refuses this")
            .help("see `schemas/seal-spec.schema.json`, or hover the key in an editor with Taplo"),
        );
    }
    out
}

fn pointer_to_dotted(p: &str) -> String {
    let mut out = String::new();
    for seg in p.split('/').skip(1) {
        if seg.bytes().all(|b| b.is_ascii_digit()) {
            out.push_str(&format!("[{seg}]"));
        } else {
            if !out.is_empty() {
                out.push('.');
            }
            out.push_str(seg);
        }
    }
    out
}

/// The span of the value (or, with `key`, of the last key) at a path.
fn span_of(doc: &toml::Spanned<DeTable<'_>>, segments: &[String], key: bool) -> Option<Span> {
    let mut span = doc.span();
    let mut cur: Option<&DeValue<'_>> = None;
    let mut table: Option<&DeTable<'_>> = Some(doc.get_ref());
    for (i, seg) in segments.iter().enumerate() {
        let last = i + 1 == segments.len();
        if let Some(t) = table {
            let (k, v) = t
                .iter()
                .find(|(k, _)| k.get_ref().as_ref() == seg.as_str())?;
            span = if last && key { k.span() } else { v.span() };
            cur = Some(v.get_ref());
        } else if let Some(DeValue::Array(a)) = cur {
            let idx: usize = seg.parse().ok()?;
            let v = a.get(idx)?;
            span = v.span();
            cur = Some(v.get_ref());
        } else {
            return Some(span);
        }
        table = match cur {
            Some(DeValue::Table(t)) => Some(t),
            _ => None,
        };
    }
    Some(span)
}

/// 1-based line and column (in characters) of a byte offset.
pub fn line_col(src: &str, offset: usize) -> (usize, usize) {
    crate::diag::Lines::new(src).line_col(offset)
}

/// Each diagnostic as JSON, its range as 1-based lines and columns
/// (characters) into `src`: the `diagnostics` of `sealc lint` and `sealc
/// compile --format json`.
pub fn diagnostics_json(diags: &Diagnostics, src: &str) -> Vec<Value> {
    let lines = crate::diag::Lines::new(src);
    diags
        .0
        .iter()
        .map(|d| {
            let range = d.span.as_ref().map(|s| {
                let (sl, sc) = lines.line_col(s.start);
                let (el, ec) = lines.line_col(s.end);
                json!({ "start": { "line": sl, "column": sc }, "end": { "line": el, "column": ec } })
            });
            json!({
                "code": d.code,
                "severity": d.severity.as_str(),
                "message": d.message,
                "label": d.label,
                "help": d.help,
                "range": range,
            })
        })
        .collect()
}

/// Diagnostics as JSON for editors and CI annotations.
pub fn to_json(diags: &Diagnostics, file: &str, src: &str) -> String {
    let items = diagnostics_json(diags, src);
    let count = |sev| diags.0.iter().filter(|d| d.severity == sev).count();
    crate::record::canonical_json(&json!({
        "schema": "sealc.lint/v1",
        "file": file,
        "errors": count(crate::diag::Severity::Error),
        "warnings": count(crate::diag::Severity::Warning),
        "advice": count(crate::diag::Severity::Advice),
        "diagnostics": items,
    }))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn schema_findings_point_at_the_offending_toml() {
        let src = "version = 1\nname = \"s\"\nextra = true\n[filesystem]\ndeny_read = [\"/ok\", \"/bad/\"]\n[network]\nports = [443, 0]\n";
        let d = schema_findings(src);
        let at = |needle: &str| {
            let start = src.find(needle).unwrap();
            d.0.iter().any(|x| {
                x.span
                    .as_ref()
                    .is_some_and(|s| s.start == start && s.end == start + needle.len())
            })
        };
        assert!(at("extra"), "{d:#?}");
        assert!(at("\"/bad/\""), "{d:#?}");
        assert!(
            at("0]") || d.0.iter().any(|x| x.message.contains("network.ports[1]")),
            "{d:#?}"
        );
        assert!(d.0.iter().all(|x| x.code == crate::diag::code::LINT_SCHEMA));
    }

    #[test]
    fn line_and_column_are_one_based() {
        assert_eq!(line_col("ab\ncd", 0), (1, 1));
        assert_eq!(line_col("ab\ncd", 4), (2, 2));
        assert_eq!(line_col("é\nx", 3), (2, 1));
    }

    #[test]
    fn dotted_paths() {
        assert_eq!(
            pointer_to_dotted("/filesystem/deny_read/1"),
            "filesystem.deny_read[1]"
        );
    }
}
