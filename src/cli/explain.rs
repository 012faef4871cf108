//! `sealc explain`: which rule of a seatbelt profile, or which step of a
//! seal.bwrap.json, decides an operation.

use std::io::Write;
use std::path::{Path, PathBuf};

use super::{Format, BAD_INPUT, OK, UNDECIDED};
use crate::diag::quote;

const AFTER_HELP: &str = "\
Exit codes:
  0  decided: allowed or denied (the answer is printed)
  2  bad input: the profile, the record, the operation or a path
  3  ambiguous or undetermined

Example:
  sealc explain seal/seal.bwrap.json --op file-write-data \"$PWD/notes.md\"";

/// Which rule of a seatbelt profile (or step of a seal.bwrap.json) decides an operation on a path or endpoint.
#[derive(clap::Args, Debug)]
#[command(after_help = AFTER_HELP)]
pub struct Args {
    /// The profile (SBPL).
    profile: PathBuf,
    /// The operation, e.g. `file-read-data`.
    #[arg(long)]
    op: String,
    /// The path the operation is applied to.
    #[arg(required_unless_present = "remote", conflicts_with = "remote")]
    path: Option<String>,
    /// An outbound TCP endpoint instead of a path.
    #[arg(long, value_name = "HOST:PORT")]
    remote: Option<String>,
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
    /// Output format.
    #[arg(long, value_enum, default_value = "text")]
    format: Format,
}

pub(super) fn run(a: Args, out: &mut dyn Write, err: &mut dyn Write) -> i32 {
    let asked = Asked {
        path: a.path,
        to: a.to,
        cwd: a.cwd,
        record: a.record,
    };
    explain(
        &a.profile, &a.op, asked, a.remote, &a.params, a.format, out, err,
    )
}

/// The paths of an `explain` question, as given.
struct Asked {
    path: Option<String>,
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
}

impl Checked {
    /// Add the lines and fields that say how the path was read.
    fn annotate(&self, text: &mut String, json: &mut serde_json::Value) {
        if self.path != self.asked {
            text.push_str(&format!("  checked as {}\n", quote(&self.path)));
            json["checked"] = serde_json::Value::String(self.path.clone());
        }
        for n in &self.notes {
            text.push_str(&format!("  note: {n}\n"));
        }
        if !self.notes.is_empty() {
            json["notes"] = serde_json::json!(self.notes);
        }
    }
}

/// The links the record knows (`--record`, or `seal.json` beside the
/// profile) and, for a `seal.bwrap.json`, those it lists itself.
fn known_links(
    profile: &Path,
    record: Option<&Path>,
    text: &str,
    notes: &mut Vec<String>,
) -> Result<std::collections::BTreeMap<String, String>, String> {
    let mut links = std::collections::BTreeMap::new();
    let beside = profile
        .parent()
        .map(|d| d.join(crate::record::FILE))
        .filter(|p| p.is_file());
    if let Some(at) = record.map(Path::to_path_buf).or(beside) {
        let shown = quote(&at.display().to_string());
        let read = std::fs::read(&at)
            .map_err(|e| e.to_string())
            .and_then(|b| crate::verify::read_record(&b));
        match read {
            Ok(r) => links.extend(crate::query::known_links(&r.facts)),
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
                    links.insert(k.clone(), v.to_string());
                }
            }
        }
    }
    Ok(links)
}

/// Resolve a path of the question: relative only with `--cwd`; `..`
/// taken away; recorded links on the way followed and named.
fn checked_path(
    p: &str,
    cwd: Option<&str>,
    links: &std::collections::BTreeMap<String, String>,
    notes: &mut Vec<String>,
) -> Result<String, String> {
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
    for (link, to) in &r.followed {
        notes.push(format!(
            "{} is a recorded symlink to {}: the kernel goes on from there",
            quote(link),
            quote(to)
        ));
    }
    if let Some((link, to)) = &r.last {
        notes.push(format!(
            "{} is itself a recorded symlink to {}: reading or writing through it reaches that; metadata, unlink and rename act on the link",
            quote(link),
            quote(to)
        ));
    }
    Ok(r.path)
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
    use crate::sbpl::eval::{Decision, Model, Target, Verdict};
    let text = match std::fs::read_to_string(profile) {
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
                Some(t) => Some(checked_path(t, cwd, &links, &mut checked.notes)?),
                None => None,
            };
            Ok((path, new))
        });
        match resolved {
            Ok((path, new)) => {
                checked.asked = p.clone();
                checked.path = path;
                to = new;
            }
            Err(e) => {
                let _ = writeln!(err, "error: {e}");
                return BAD_INPUT;
            }
        }
    }
    let target = match (asked.path, remote) {
        (Some(_), _) => Target::Path(checked.path.clone()),
        (None, Some(r)) => match r
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
        (None, None) => return BAD_INPUT,
    };
    if text.trim_start().starts_with('{') {
        return explain_bwrap(
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
    let parsed = match crate::sbpl::parse::parse(&text) {
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
    let verdict = model.query(op, &target);
    let rule_json = |d: &Decision| {
        serde_json::json!({
            "action": d.action.as_str(),
            "line": d.rule.as_ref().map(|r| r.line),
            "rule": d.rule.as_ref().map(|r| r.text.clone()),
        })
    };
    let rule_text = |d: &Decision| match &d.rule {
        Some(r) => format!("line {}: {}", r.line, r.text),
        None => "no rule matched and no default is written (seatbelt allows)".to_string(),
    };
    let (code, text_out, json_out) = match &verdict {
        Verdict::Decided(d) => (
            OK,
            format!("{}\n  decided by {}\n", d.action.as_str(), rule_text(d)),
            serde_json::json!({ "answer": d.action.as_str(), "decided_by": rule_json(d) }),
        ),
        Verdict::Ambiguous { filtered_first, source_order } => (
            UNDECIDED,
            format!(
                "ambiguous\n  filtered-first reading: {} by {}\n  source-order reading:   {} by {}\n",
                filtered_first.action.as_str(),
                rule_text(filtered_first),
                source_order.action.as_str(),
                rule_text(source_order)
            ),
            serde_json::json!({
                "answer": "ambiguous",
                "filtered_first": rule_json(filtered_first),
                "source_order": rule_json(source_order),
            }),
        ),
        Verdict::Undetermined { construct, line } => (
            UNDECIDED,
            format!("undetermined\n  cannot evaluate {construct} (line {line})\n"),
            serde_json::json!({ "answer": "undetermined", "construct": construct, "line": line }),
        ),
    };
    let (mut text_out, mut json_out) = (text_out, json_out);
    checked.annotate(&mut text_out, &mut json_out);
    let _ = match format {
        Format::Text => write!(out, "{text_out}"),
        Format::Json => write!(out, "{}", crate::record::canonical_json(&json_out)),
    };
    code
}

/// `sealc explain seal.bwrap.json ...`: the mount model's answer and the
/// step that decides it.
#[allow(clippy::too_many_arguments)]
fn explain_bwrap(
    profile: &Path,
    text: &str,
    op: &str,
    target: &crate::sbpl::eval::Target,
    to: Option<&str>,
    checked: &Checked,
    format: Format,
    out: &mut dyn Write,
    err: &mut dyn Write,
) -> i32 {
    use crate::sbpl::eval::Target;
    let model = match crate::mounts::Model::from_artifact(text.as_bytes()) {
        Ok(m) => m,
        Err(e) => {
            let _ = writeln!(
                err,
                "error: {} is not a readable seal.bwrap.json: {e}",
                quote(&profile.display().to_string())
            );
            return BAD_INPUT;
        }
    };
    let answer = match target {
        Target::Path(p) => model.ask(op, p, to),
        Target::Remote { host, port } if op.starts_with("network") => {
            Some(model.connect(host, *port))
        }
        Target::Remote { .. } => None,
    };
    let (code, text_out, json_out) = match answer {
        Some(a) => {
            let action = if a.allowed { "allow" } else { "deny" };
            (
                OK,
                format!("{action}\n  decided by {}\n", a.why),
                serde_json::json!({ "answer": action, "decided_by": a.why }),
            )
        }
        None if matches!(target, Target::Path(_)) => {
            let how = match (crate::mounts::question_of(op), to) {
                (Some(crate::mounts::Question::Move(_)), None) => {
                    format!("`{op}` needs the new name: `--to PATH`")
                }
                (Some(_), Some(_)) => format!("`{op}` takes one path, without `--to`"),
                _ => format!("seal.bwrap.json does not model `{op}` on a path"),
            };
            (
                UNDECIDED,
                format!("undetermined\n  {how}\n"),
                serde_json::json!({ "answer": "undetermined", "construct": op }),
            )
        }
        None => (
            UNDECIDED,
            format!("undetermined\n  seal.bwrap.json does not model `{op}` on this target\n"),
            serde_json::json!({ "answer": "undetermined", "construct": op }),
        ),
    };
    let (mut text_out, mut json_out) = (text_out, json_out);
    checked.annotate(&mut text_out, &mut json_out);
    let _ = match format {
        Format::Text => write!(out, "{text_out}"),
        Format::Json => write!(out, "{}", crate::record::canonical_json(&json_out)),
    };
    code
}
