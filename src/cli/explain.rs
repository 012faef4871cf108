//! `sealc explain`: which rule of a seatbelt profile, or which step of a
//! seal.bwrap.json, decides an operation.

mod bwrap;
mod landlock;
mod record;
use self::bwrap::explain_bwrap;
use self::landlock::explain_landlock;
use self::record::seal_of_record;

use std::io::Write;
use std::path::{Path, PathBuf};

use serde::Serialize;

use super::{Format, BAD_INPUT, OK, UNDECIDED};
use crate::diag::quote;
use crate::sbpl::eval::Target;

/// `--help`'s closing sections: the exit codes from [`crate::exit::EXPLAIN`].
fn after_help() -> String {
    crate::exit::help_section(
        None,
        crate::exit::EXPLAIN,
        "\n\
Example:
  sealc explain seal/seal.bwrap.json --op file-write-data \"$PWD/notes.md\"",
    )
}

/// Which rule of a seatbelt profile (or step of a seal.bwrap.json) decides an operation on a path or endpoint.
#[derive(clap::Args, Debug)]
#[command(after_help = after_help())]
pub struct Args {
    /// The seal: a seatbelt profile (SBPL), a seal.bwrap.json or seal.landlock.json, or the record (seal.json) that lists one beside it.
    #[arg(required_unless_present = "list_ops")]
    profile: Option<PathBuf>,
    /// The operation, e.g. `file-read-data` (`--list-ops` lists them).
    #[arg(long, required_unless_present = "list_ops")]
    op: Option<String>,
    /// The path the operation is applied to.
    #[arg(
        required_unless_present_any = ["remote", "name", "list_ops"],
        conflicts_with = "remote"
    )]
    path: Option<String>,
    /// An outbound TCP endpoint instead of a path.
    #[arg(long, value_name = "HOST:PORT")]
    remote: Option<String>,
    /// A name instead of a path, for an operation on one: a Mach service
    /// (`mach-lookup`), an Apple Events destination (`appleevent-send`), an
    /// IOKit class (`iokit-open`), a POSIX IPC name, a sysctl, a preference
    /// domain, or `self` / `same-sandbox` / `others` (`signal`).
    #[arg(long, value_name = "NAME", conflicts_with_all = ["path", "remote", "to", "cwd"])]
    name: Option<String>,
    /// The new name, for `rename` and `link` (or `file-link`) from PATH
    /// (seal.bwrap.json only).
    #[arg(
        long,
        value_name = "PATH",
        requires = "path",
        conflicts_with = "remote"
    )]
    to: Option<String>,
    /// The directory a relative PATH (and `--to`) is taken from; without
    /// it a relative path is refused.
    #[arg(long, value_name = "DIR", conflicts_with = "remote")]
    cwd: Option<String>,
    /// The record whose facts name the symlinks on the way (default:
    /// `seal.json` beside the profile, when there).
    #[arg(long, value_name = "RECORD")]
    record: Option<PathBuf>,
    /// A profile parameter, as `sandbox-exec -D K=V`.
    #[arg(short = 'D', value_name = "K=V")]
    params: Vec<String>,
    /// List the operations modelled, one per line, and which seal answers
    /// each (seal.sb, seal.bwrap.json).
    #[arg(long, conflicts_with_all = ["profile", "op", "path", "remote", "name", "to", "cwd", "record", "params"])]
    list_ops: bool,
    /// Output format.
    #[arg(long, value_enum, default_value = "text")]
    format: Format,
}

pub(super) fn run(a: Args, out: &mut dyn Write, err: &mut dyn Write) -> i32 {
    if a.list_ops {
        return list_ops(a.format, out);
    }
    let (Some(profile), Some(op)) = (a.profile, a.op) else {
        return BAD_INPUT; // clap requires both without `--list-ops`
    };
    if crate::ops::find(&op).is_none() {
        let (near, all) = crate::ops::unknown(&op);
        let near = near
            .map(|m| format!("; did you mean `{m}`?"))
            .unwrap_or_default();
        let _ = writeln!(
            err,
            "error: {} is not an operation sealc models{near}\n  the operations modelled: {all}\n  (`sealc explain --list-ops` says which seal answers each)",
            quote(&op)
        );
        return BAD_INPUT;
    }
    let mut asked = Asked {
        path: a.path,
        name: a.name,
        to: a.to,
        cwd: a.cwd,
        record: a.record,
    };
    // A record given where the seal goes: its seal is the one beside it
    // that it lists, and its facts name the links.
    let profile = match seal_of_record(&profile) {
        Some(Ok(seal)) => {
            let _ = writeln!(
                err,
                "note: {} is a record: explaining its seal {}",
                quote(&profile.display().to_string()),
                quote(&seal.display().to_string())
            );
            asked.record.get_or_insert(profile);
            seal
        }
        Some(Err(e)) => {
            let _ = writeln!(err, "error: {e}");
            return BAD_INPUT;
        }
        None => profile,
    };
    explain(
        &profile, &op, asked, a.remote, &a.params, a.format, out, err,
    )
}

/// `sealc explain --list-ops`: every operation, and which seal answers it.
fn list_ops(format: Format, out: &mut dyn Write) -> i32 {
    use crate::ops::{Seatbelt, OPERATIONS};
    let mut text = String::new();
    let mut json = Vec::new();
    for o in OPERATIONS {
        let mut by = Vec::new();
        let mut shown = Vec::new();
        match o.seatbelt {
            Seatbelt::Parent(_) => {
                by.push(crate::backend::SEATBELT);
                shown.push(crate::backend::SEATBELT.to_string());
            }
            Seatbelt::Alias(a) => {
                by.push(crate::backend::SEATBELT);
                shown.push(format!("{} (as {a})", crate::backend::SEATBELT));
            }
            Seatbelt::No => {}
        }
        if let Some(q) = o.linux {
            by.push(crate::backend::BWRAP);
            shown.push(format!("{} ({})", crate::backend::BWRAP, q.subject()));
        }
        text.push_str(&format!("{:<26}{}\n", o.name, shown.join(", ")));
        json.push(serde_json::json!({
            "name": o.name,
            "answered_by": by,
            "alias_of": match o.seatbelt { Seatbelt::Alias(a) => Some(a), _ => None },
            "bwrap_subject": o.linux.map(|q| q.subject()),
        }));
    }
    let _ = match format {
        Format::Text => write!(out, "{text}"),
        Format::Json => write!(
            out,
            "{}",
            crate::record::canonical_json(&serde_json::json!({
                "schema": "sealc.ops/v1",
                "operations": json,
            }))
        ),
    };
    OK
}

/// The paths of an `explain` question, as given.
struct Asked {
    path: Option<String>,
    name: Option<String>,
    to: Option<String>,
    cwd: Option<String>,
    record: Option<PathBuf>,
}

/// What `explain` says of the path it was asked about: the path checked
/// (the kernel's view: absolute, no `..`, recorded links followed) and a
/// note per recorded link on the way.
#[derive(Default)]
struct Checked {
    asked: String,
    path: String,
    notes: Vec<String>,
    /// What the answer takes for granted about links it cannot see.
    assumes: Option<String>,
    /// The asked path's last component, when a known link makes where the
    /// operation lands depend on whether it follows that name.
    end: Option<End>,
}

/// A last component that leads elsewhere: the name (where the kernel finds
/// it), where it leads, and whether the record says it is itself a link
/// (`false`: the record does not say).
struct End {
    name: String,
    to: String,
    itself: bool,
}

/// Operations that follow a final symlink to what it names (an `open` for
/// data, an `exec`).
const FOLLOWING: &[&str] = &[
    "file-read-data",
    "file-write-data",
    "file-map-executable",
    "process-exec",
    "process-exec*",
];
/// Operations that act on a final symlink's own name.
const ON_THE_NAME: &[&str] = &["file-write-unlink", "file-link"];

impl End {
    /// Where `op` may land: one place when the operation and the record
    /// settle it, both otherwise.
    fn places(&self, op: &str) -> Vec<String> {
        if FOLLOWING.contains(&op) {
            vec![self.to.clone()]
        } else if self.itself && ON_THE_NAME.contains(&op) {
            vec![self.name.clone()]
        } else {
            vec![self.name.clone(), self.to.clone()]
        }
    }
}

impl Checked {
    /// Add the lines that say how the path was read.
    fn annotate(&self, text: &mut String) {
        if self.path != self.asked {
            text.push_str(&format!("  checked as {}\n", quote(&self.path)));
        }
        for n in &self.notes {
            text.push_str(&format!("  note: {n}\n"));
        }
        if let Some(a) = &self.assumes {
            text.push_str(&format!("  assumes: {a}\n"));
        }
    }
}

/// The schema name of `sealc explain --format json`.
pub const SCHEMA: &str = "sealc.explain/v1";

/// What decided: a rule of the profile or a step of the plan, and the spec
/// entry it comes from. One shape for both seal kinds.
#[derive(Serialize)]
struct By {
    /// The seatbelt profile's line; `None` for a step.
    line: Option<usize>,
    /// The rule's text, or the step's arguments joined by spaces.
    rule: String,
    /// `seal.sb` or `seal.bwrap.json`.
    source: &'static str,
    /// The spec entry the rule or step comes from, as the spec writes it
    /// (`filesystem.write "${ws}"`); `None` for what every seal has.
    spec_entry: Option<String>,
    /// The plan's step number (from 1); `None` for a rule.
    step: Option<usize>,
    /// The reason the seal gives: the comment above the rule, or the
    /// step's `why`.
    why: Option<String>,
}

/// One reading of an ambiguous profile.
#[derive(Serialize)]
struct Reading {
    answer: &'static str,
    decided_by: Option<By>,
}

#[derive(Serialize)]
struct Readings {
    filtered_first: Reading,
    source_order: Reading,
}

#[derive(Serialize)]
struct Undetermined {
    construct: String,
    line: Option<usize>,
}

/// `sealc explain --format json` (`sealc.explain/v1`): every field always
/// present, `null` or empty where it does not apply.
#[derive(Serialize)]
struct Said {
    /// Other steps the answer names (a move across mounts names both).
    also: Vec<By>,
    /// `allow`, `deny`, `ambiguous` or `undetermined`.
    answer: &'static str,
    /// For a path: what the answer takes for granted about links no record
    /// names.
    assumes: Option<String>,
    /// The path as the kernel reaches it, when not the one asked.
    checked: Option<String>,
    decided_by: Option<By>,
    /// The model's own sentence, when it gives one.
    detail: Option<String>,
    notes: Vec<String>,
    /// The name asked about (`--name`), for an operation on one.
    name: Option<String>,
    op: String,
    path: Option<String>,
    /// Both readings, when they disagree.
    readings: Option<Readings>,
    remote: Option<String>,
    schema: &'static str,
    /// `seal.sb` or `seal.bwrap.json`.
    seal: &'static str,
    to: Option<String>,
    undetermined: Option<Undetermined>,
}

impl Said {
    fn new(
        seal: &'static str,
        op: &str,
        target: &Target,
        to: Option<&str>,
        checked: &Checked,
    ) -> Said {
        let (path, remote, name) = match target {
            Target::Path(_) => (Some(checked.asked.clone()), None, None),
            Target::Remote { host, port } => (None, Some(format!("{host}:{port}")), None),
            Target::Name { name, .. } => (None, None, Some(name.clone())),
        };
        Said {
            also: Vec::new(),
            answer: "undetermined",
            assumes: path.as_ref().and(checked.assumes.clone()),
            checked: (path.is_some() && checked.path != checked.asked)
                .then(|| checked.path.clone()),
            decided_by: None,
            detail: None,
            notes: checked.notes.clone(),
            name,
            op: op.to_string(),
            path,
            readings: None,
            remote,
            schema: SCHEMA,
            seal,
            to: to.map(str::to_string),
            undetermined: None,
        }
    }
}

/// The lines that name the spec entries behind the deciding rules or steps.
fn entry_lines(by: &[&By]) -> String {
    let one = |b: &By, of: String| match (&b.spec_entry, &b.why) {
        (Some(e), _) => format!("  spec entry{of}: {e}\n"),
        (None, Some(w)) => format!("  no spec entry{of} (every seal has it): {w}\n"),
        (None, None) => format!("  no spec entry{of}\n"),
    };
    match by {
        [b] => one(b, String::new()),
        many => many
            .iter()
            .map(|b| one(b, format!(" of `{}`", b.rule)))
            .collect(),
    }
}

fn write_said(said: &Said, text: String, format: Format, out: &mut dyn Write) {
    let _ = match format {
        Format::Text => write!(out, "{text}"),
        Format::Json => {
            let v = serde_json::to_value(said).unwrap_or(serde_json::Value::Null);
            write!(out, "{}", crate::record::canonical_json(&v))
        }
    };
}

/// The links the record knows (`--record`, or `seal.json` beside the
/// profile), for a seatbelt profile those every macOS has, and, for a
/// `seal.bwrap.json`, those it lists itself; each in every spelling.
fn known_links(
    profile: &Path,
    record: Option<&Path>,
    text: &str,
    notes: &mut Vec<String>,
) -> Result<crate::query::Links, String> {
    use crate::query::Links;
    let macos = !text.trim_start().starts_with('{');
    let mut links = Links::default();
    if macos {
        for (p, to) in crate::query::MACOS_LINKS {
            links.add(p, to, Some(true));
        }
    }
    let beside = profile
        .parent()
        .map(|d| d.join(crate::record::FILE))
        .filter(|p| p.is_file());
    if let Some(at) = record.map(Path::to_path_buf).or(beside) {
        let shown = quote(&at.display().to_string());
        let read = crate::hostfs::read_path(&at, crate::hostfs::MAX_RECORD)
            .map_err(|e| e.to_string())
            .and_then(|b| crate::verify::read_record(&b));
        match read {
            Ok(r) => links.extend(crate::query::known_links(&r.facts, macos)),
            Err(e) if record.is_some() => {
                return Err(format!("cannot read the record {shown}: {e}"))
            }
            Err(_) => notes.push(format!(
                "{shown} beside the profile does not read, so no recorded symlink is known"
            )),
        }
    }
    if let Ok(v) = serde_json::from_str::<serde_json::Value>(text) {
        if let Some(map) = v.get("links").and_then(|l| l.as_object()) {
            for (k, v) in map {
                if let Some(v) = v.as_str() {
                    links.add(k, v, Some(true));
                }
            }
        }
    }
    Ok(links.spelled_everywhere())
}

/// Resolve a path of the question: relative only with `--cwd`; `..`
/// taken away; recorded links on the way followed and named.
fn checked_path(
    p: &str,
    cwd: Option<&str>,
    links: &crate::query::Links,
    notes: &mut Vec<String>,
) -> Result<(String, Option<End>), String> {
    let absolute = if p.starts_with('/') {
        p.to_string()
    } else {
        match cwd {
            Some(c) if c.starts_with('/') => format!("{c}/{p}"),
            Some(c) => return Err(format!("`--cwd {c}` is not an absolute path")),
            None => {
                return Err(format!(
                    "{} is relative: the kernel takes it from the command's working directory; give an absolute path, or that directory with `--cwd`",
                    quote(p)
                ))
            }
        }
    };
    let Some(r) = crate::query::resolve(&absolute, links) else {
        return Err(format!("{} is not absolute", quote(&absolute)));
    };
    for (link, to, itself) in &r.followed {
        notes.push(match itself {
            Some(true) => format!(
                "{} is a recorded symlink to {}: the kernel goes on from there",
                quote(link),
                quote(to)
            ),
            Some(false) => format!(
                "{} lies below a recorded link: the kernel finds it at {}",
                quote(link),
                quote(to)
            ),
            None => format!(
                "{} leads to {} (a symlink, or below one: the record does not say which): the kernel goes on from there",
                quote(link),
                quote(to)
            ),
        });
    }
    let mut end = None;
    if let Some((link, to)) = &r.last {
        notes.push(format!(
            "{} is itself a recorded symlink to {}: reading or writing through it reaches that; metadata, unlink and rename act on the link",
            quote(link),
            quote(to)
        ));
        end = Some(End {
            name: link.clone(),
            to: to.clone(),
            itself: true,
        });
    }
    if let Some((name, to)) = &r.unsure {
        notes.push(format!(
            "{} leads to {}, and the record (made by an older sealc) does not say whether it is itself a symlink or lies below one: an operation on the name is checked at both",
            quote(name),
            quote(to)
        ));
        end = Some(End {
            name: name.clone(),
            to: to.clone(),
            itself: false,
        });
    }
    Ok((r.path, end))
}

#[allow(clippy::too_many_arguments)]
fn explain(
    profile: &Path,
    op: &str,
    asked: Asked,
    remote: Option<String>,
    params: &[String],
    format: Format,
    out: &mut dyn Write,
    err: &mut dyn Write,
) -> i32 {
    use crate::sbpl::eval::{Decision, Model, Verdict};
    let text = match crate::hostfs::read_text(profile, crate::hostfs::MAX_RECORD) {
        Ok(t) => t,
        Err(e) => {
            let _ = writeln!(
                err,
                "error: cannot read the profile {}: {e}",
                quote(&profile.display().to_string())
            );
            return BAD_INPUT;
        }
    };
    let mut checked = Checked::default();
    let mut to = None;
    if let Some(p) = &asked.path {
        let links = match known_links(profile, asked.record.as_deref(), &text, &mut checked.notes) {
            Ok(l) => l,
            Err(e) => {
                let _ = writeln!(err, "error: {e}");
                return BAD_INPUT;
            }
        };
        let cwd = asked.cwd.as_deref();
        let resolved = checked_path(p, cwd, &links, &mut checked.notes).and_then(|path| {
            let new = match &asked.to {
                Some(t) => Some(checked_path(t, cwd, &links, &mut checked.notes)?.0),
                None => None,
            };
            Ok((path, new))
        });
        match resolved {
            Ok(((path, end), new)) => {
                // What no record can settle: a link it does not name.
                // With `--to`, the new name's way too.
                let ways = match &new {
                    Some(n) => format!("{} or to {}", quote(&path), quote(n)),
                    None => quote(&path),
                };
                checked.assumes = Some(format!(
                    "no link on the way to {ways} but those named here (a record names the links on the way to its roots); through another, made after compiling or on no root's way, the kernel goes where it leads and the seal decides there: ask about that path"
                ));
                checked.asked = p.clone();
                checked.path = path;
                checked.end = end;
                to = new;
            }
            Err(e) => {
                let _ = writeln!(err, "error: {e}");
                return BAD_INPUT;
            }
        }
    }
    let named = crate::ops::NameKind::of(op);
    match (named, &asked.name, asked.path.is_some() || remote.is_some()) {
        (Some(kind), None, _) => {
            let _ = writeln!(
                err,
                "error: `{op}` is applied to a name ({} {}): give it with `--name`",
                if kind.noun().starts_with(['A', 'E', 'I', 'O', 'U']) {
                    "an"
                } else {
                    "a"
                },
                kind.noun()
            );
            return BAD_INPUT;
        }
        (None, Some(_), _) => {
            let _ = writeln!(
                err,
                "error: `{op}` is not applied to a name: give a path, or `--remote HOST:PORT`"
            );
            return BAD_INPUT;
        }
        _ => {}
    }
    let target = match (asked.path, remote, named) {
        (_, _, Some(kind)) => Target::Name {
            kind,
            name: asked.name.clone().unwrap_or_default(),
        },
        (Some(_), _, None) => Target::Path(checked.path.clone()),
        (None, Some(r), None) => match r
            .rsplit_once(':')
            .and_then(|(h, p)| p.parse::<u16>().ok().map(|p| (h, p)))
        {
            Some((h, port)) => Target::Remote {
                host: h.trim_matches(['[', ']']).to_string(),
                port,
            },
            None => {
                let _ = writeln!(err, "error: `--remote {r}` is not HOST:PORT");
                return BAD_INPUT;
            }
        },
        (None, None, None) => return BAD_INPUT,
    };
    if text.trim_start().starts_with('{') {
        // A Linux seal: the Landlock mode's rules, or bubblewrap's steps.
        let landlock = serde_json::from_str::<serde_json::Value>(&text)
            .is_ok_and(|v| v["schema"] == crate::backend::landlock::SCHEMA);
        let explain_linux = if landlock {
            explain_landlock
        } else {
            explain_bwrap
        };
        return explain_linux(
            profile,
            &text,
            op,
            &target,
            to.as_deref(),
            &checked,
            format,
            out,
            err,
        );
    }
    if to.is_some() {
        let _ = writeln!(
            err,
            "error: `--to` is for a seal.bwrap.json; on a seatbelt profile ask each path on its own"
        );
        return BAD_INPUT;
    }
    let arena = crate::sbpl::parse::Arena::new();
    let parsed = match crate::sbpl::parse::parse(&text, &arena) {
        Ok(p) => p,
        Err(e) => {
            let _ = writeln!(
                err,
                "error: {} is not readable SBPL: {e}",
                quote(&profile.display().to_string())
            );
            return BAD_INPUT;
        }
    };
    let mut defs = std::collections::BTreeMap::new();
    for p in params {
        match p.split_once('=') {
            Some((k, v)) => {
                defs.insert(k.to_string(), v.to_string());
            }
            None => {
                let _ = writeln!(err, "error: `-D {p}` is not of the form K=V");
                return BAD_INPUT;
            }
        }
    }
    let model = Model::new(&parsed, &defs);
    let seal = crate::backend::SEATBELT;
    // A last component that leads elsewhere: where the operation lands.
    let places = match (&checked.end, &target) {
        (Some(end), Target::Path(_)) => end.places(op),
        _ => Vec::new(),
    };
    let mut target = target;
    if let Some(first) = places.first() {
        checked.path = first.clone();
        target = Target::Path(first.clone());
    }
    let seatbelt_models =
        crate::ops::find(op).is_some_and(|o| o.seatbelt != crate::ops::Seatbelt::No);
    let verdict = if seatbelt_models {
        let v = model.query(op, &target);
        match places.get(1) {
            Some(other) => {
                let w = model.query(op, &Target::Path(other.clone()));
                match (v.action(), w.action()) {
                    (Some(a), Some(b)) if a == b => {
                        checked.notes.push(format!(
                            "the answer is the same at {}",
                            quote(other)
                        ));
                        v
                    }
                    (a, b) => Verdict::Undetermined {
                        construct: format!(
                            "`{op}` on a name that leads elsewhere: the profile says {} at {} and {} at {}, and which the kernel checks depends on whether the operation follows the name",
                            a.map_or("undetermined", |a| a.as_str()),
                            quote(&checked.path),
                            b.map_or("undetermined", |b| b.as_str()),
                            quote(other)
                        ),
                        line: 0,
                    },
                }
            }
            None => v,
        }
    } else {
        Verdict::Undetermined {
            construct: format!(
                "`{op}`: a seatbelt profile does not model it (a seal.bwrap.json does)"
            ),
            line: 0,
        }
    };
    let mut said = Said::new(seal, op, &target, None, &checked);
    let by = |d: &Decision| {
        d.rule.as_ref().map(|r| {
            let why = crate::sbpl::origin::comment_above(&text, r.line);
            let rule = r.text();
            By {
                line: Some(r.line),
                spec_entry: crate::sbpl::origin::spec_entry(why.as_deref(), &rule),
                rule,
                source: seal,
                step: None,
                why,
            }
        })
    };
    let rule_text = |d: &Decision| match &d.rule {
        Some(r) => format!("line {}: {}", r.line, r.text()),
        None => "no rule matched and no default is written (seatbelt allows)".to_string(),
    };
    let (code, mut text_out) = match &verdict {
        Verdict::Decided(d) => {
            said.answer = d.action.as_str();
            said.decided_by = by(d);
            if d.rule.is_none() {
                said.detail = Some(rule_text(d));
            }
            let mut t = format!("{}\n  decided by {}\n", d.action.as_str(), rule_text(d));
            t.push_str(&entry_lines(&said.decided_by.iter().collect::<Vec<_>>()));
            (OK, t)
        }
        Verdict::Ambiguous {
            filtered_first,
            source_order,
        } => {
            said.answer = "ambiguous";
            said.readings = Some(Readings {
                filtered_first: Reading {
                    answer: filtered_first.action.as_str(),
                    decided_by: by(filtered_first),
                },
                source_order: Reading {
                    answer: source_order.action.as_str(),
                    decided_by: by(source_order),
                },
            });
            (
                UNDECIDED,
                format!(
                    "ambiguous\n  filtered-first reading: {} by {}\n  source-order reading:   {} by {}\n",
                    filtered_first.action.as_str(),
                    rule_text(filtered_first),
                    source_order.action.as_str(),
                    rule_text(source_order)
                ),
            )
        }
        Verdict::Undetermined { construct, line } => {
            let line = (*line > 0).then_some(*line);
            said.detail = Some(match line {
                Some(l) => format!("cannot evaluate {construct} (line {l})"),
                None => format!("cannot evaluate {construct}"),
            });
            said.undetermined = Some(Undetermined {
                construct: construct.clone(),
                line,
            });
            (
                UNDECIDED,
                format!(
                    "undetermined\n  {}\n",
                    said.detail.as_deref().unwrap_or_default()
                ),
            )
        }
    };
    checked.annotate(&mut text_out);
    write_said(&said, text_out, format, out);
    code
}
