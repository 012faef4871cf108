//! The command line: the only module that prints.
//!
//! Exit codes: 0 ok; 1 what is on disk differs (`--check`, or an existing
//! output that would be replaced without `--force`); 2 bad input (the spec,
//! a flag, or a file that cannot be read or written).

use std::ffi::OsString;
use std::io::Write;
use std::path::{Path, PathBuf};

use clap::{Parser, Subcommand, ValueEnum};

use crate::diag::{quote, Diagnostic, Diagnostics};
use crate::facts::{parse_var_flag, RealHost, VarFlags};

/// Exit code: success.
pub const OK: i32 = 0;
/// Exit code: what is on disk differs from what sealc would write.
pub const DIFFERS: i32 = 1;
/// Exit code: bad input.
pub const BAD_INPUT: i32 = 2;

#[derive(Parser, Debug)]
#[command(
    name = "sealc",
    version,
    about = "Compile seal specs to sandbox profiles, env allowlists and Codex configs"
)]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Subcommand, Debug)]
enum Command {
    /// Compile a spec: write seal.sb, env.json, codex/config.toml and seal.json.
    Compile {
        /// The seal spec (TOML).
        spec: PathBuf,
        /// Give a var its value: NAME=VALUE (repeatable; wins over env and default).
        #[arg(long = "var", value_name = "NAME=VALUE")]
        vars: Vec<String>,
        /// Output directory.
        #[arg(long, default_value = "seal")]
        out: PathBuf,
        /// Compare with what is on disk and write nothing; exit 1 if it differs.
        #[arg(long)]
        check: bool,
        /// Replace existing outputs that differ.
        #[arg(long)]
        force: bool,
        /// The target, over the spec's `target.platform`: `macos` writes
        /// seal.sb, `linux` writes seal.bwrap.json.
        #[arg(long, value_enum)]
        platform: Option<PlatformArg>,
    },
    /// Recompile a record and compare: digests, binding, invariants, and the artifact files.
    Verify {
        /// The record (seal.json).
        record: PathBuf,
        /// Directory of the artifact files (default: the record's directory).
        #[arg(long, value_name = "DIR")]
        artifacts: Option<PathBuf>,
        /// Also re-resolve the facts on this host and report each one.
        #[arg(long)]
        live: bool,
        /// Output format.
        #[arg(long, value_enum, default_value = "text")]
        format: Format,
        /// Refuse any record but the one with this binding (`sha256:<hex>`, as in its `binding`).
        #[arg(long, value_name = "sha256:BINDING", value_parser = parse_expect)]
        expect: Option<String>,
        /// A Codex config after a run, to compare with the generated one.
        #[arg(long, value_name = "PATH", requires = "workspace")]
        codex_config: Option<PathBuf>,
        /// The agent's workspace: the one `[projects."<DIR>"]` entry Codex may add.
        #[arg(long, value_name = "DIR", requires = "codex_config")]
        workspace: Option<PathBuf>,
    },
    /// Verify a record, then run a command under its seal (exit 1 on drift: nothing starts).
    Exec {
        /// The record (seal.json).
        record: PathBuf,
        /// Directory of the artifact files (default: the record's directory).
        #[arg(long, value_name = "DIR")]
        artifacts: Option<PathBuf>,
        /// Verify and print the plan (program, argv, env names) as JSON; start nothing.
        #[arg(long)]
        dry_run: bool,
        /// Started by root (Linux): the unprivileged user the agent runs as, `NAME`, `UID` or `UID:GID`; its write roots are handed to it.
        #[arg(long, value_name = "USER")]
        user: Option<String>,
        /// Write a JSON run report here (atomically, also when nothing could start): outcome, limits, usage, bytes relayed.
        #[arg(long, value_name = "FILE")]
        report: Option<PathBuf>,
        /// Start nothing unless the record's binding is this one (`sha256:<hex>`, the seal you reviewed).
        #[arg(long, value_name = "sha256:BINDING", value_parser = parse_expect)]
        expect: Option<String>,
        /// Replace a different Codex config in the seal's CODEX_HOME (otherwise drift: nothing starts).
        #[arg(long)]
        force: bool,
        /// For tests only: sealc's proxy resolves NAME to ADDR without asking DNS (the answer is still checked).
        #[arg(long, value_name = "NAME=ADDR", hide = true)]
        resolve: Vec<String>,
        /// The command and its arguments, after `--` (the launcher's file name, e.g. `codex`, runs the recorded launcher).
        #[arg(
            trailing_var_arg = true,
            allow_hyphen_values = true,
            required = true,
            value_name = "CMD"
        )]
        command: Vec<OsString>,
    },
    /// Inside a Linux sandbox, pid 1: the command's environment, the proxy bridge, reaping.
    #[command(name = "__init", hide = true)]
    Init {
        /// The pipe that carries the command's environment.
        #[arg(long)]
        env_fd: i32,
        /// The pipe the command's start and end are reported on.
        #[arg(long)]
        status_fd: Option<i32>,
        #[arg(long, requires = "socket")]
        listen: Option<String>,
        #[arg(long, requires = "listen")]
        socket: Option<PathBuf>,
        #[arg(trailing_var_arg = true, allow_hyphen_values = true, required = true)]
        command: Vec<OsString>,
    },
    /// Inside a Linux sandbox: Landlock and the seccomp filter, then become the command.
    #[command(name = "__confine", hide = true)]
    Confine {
        /// Also refuse new unix sockets (network `none` and `proxy`).
        #[arg(long)]
        offline: bool,
        /// TCP connect is not restricted (network `open`).
        #[arg(long)]
        tcp_any: bool,
        /// A port TCP connect may reach (otherwise none).
        #[arg(long)]
        tcp_port: Vec<u16>,
        /// A path beneath which writes are allowed.
        #[arg(long)]
        write: Vec<OsString>,
        /// The pipe that carries the command's environment.
        #[arg(long)]
        env_fd: Option<i32>,
        /// The pipe a failure to start the command is reported on.
        #[arg(long)]
        status_fd: Option<i32>,
        /// A resource limit, `NAME=VALUE` (`[limits]` names).
        #[arg(long, value_parser = parse_limit)]
        limit: Vec<(String, u64)>,
        #[arg(trailing_var_arg = true, allow_hyphen_values = true, required = true)]
        command: Vec<OsString>,
    },
    /// Check a spec without a host: the JSON Schema, the compiler's checks, and advice.
    Lint {
        /// The seal spec (TOML).
        spec: PathBuf,
        /// Also report where the seal for this platform (or either) cannot
        /// mean what the other one means (docs/platform-differences.md).
        #[arg(long, value_enum)]
        platform: Option<PlatformSel>,
        /// Output format.
        #[arg(long, value_enum, default_value = "text")]
        format: Format,
    },
    /// Which rule of a seatbelt profile (or step of a seal.bwrap.json) decides an operation on a path or endpoint.
    Explain {
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
    },
    /// Print a JSON Schema (also committed under schemas/).
    Schema {
        /// Which schema.
        #[arg(value_enum, default_value = "spec")]
        which: Which,
    },
}

#[derive(Clone, Copy, Debug, ValueEnum)]
enum Format {
    Text,
    Json,
}

#[derive(Clone, Copy, Debug, ValueEnum)]
enum PlatformArg {
    Macos,
    Linux,
}

impl From<PlatformArg> for crate::spec::Platform {
    fn from(p: PlatformArg) -> Self {
        match p {
            PlatformArg::Macos => crate::spec::Platform::Macos,
            PlatformArg::Linux => crate::spec::Platform::Linux,
        }
    }
}

#[derive(Clone, Copy, Debug, ValueEnum)]
enum PlatformSel {
    Linux,
    Macos,
    Both,
}

impl From<PlatformSel> for crate::platform::Select {
    fn from(p: PlatformSel) -> Self {
        match p {
            PlatformSel::Linux => crate::platform::Select::Linux,
            PlatformSel::Macos => crate::platform::Select::Macos,
            PlatformSel::Both => crate::platform::Select::Both,
        }
    }
}

#[derive(Clone, Copy, Debug, ValueEnum)]
enum Which {
    Spec,
    Record,
}

/// Run with the process's arguments and streams.
pub fn main() -> i32 {
    let stdout = std::io::stdout();
    let stderr = std::io::stderr();
    run(std::env::args_os(), &mut stdout.lock(), &mut stderr.lock())
}

/// Run with the given arguments (the first is the program name).
pub fn run(
    args: impl IntoIterator<Item = OsString>,
    out: &mut dyn Write,
    err: &mut dyn Write,
) -> i32 {
    let cli = match Cli::try_parse_from(args) {
        Ok(c) => c,
        Err(e) => {
            let code = if e.use_stderr() { BAD_INPUT } else { OK };
            let text = e.render().to_string();
            if e.use_stderr() {
                let _ = write!(err, "{text}");
            } else {
                let _ = write!(out, "{text}");
            }
            return code;
        }
    };
    match cli.command {
        Command::Compile {
            spec,
            vars,
            out: dir,
            check,
            force,
            platform,
        } => compile(
            &spec,
            &vars,
            platform.map(Into::into),
            &dir,
            Mode { check, force },
            out,
            err,
        ),
        Command::Verify {
            record,
            artifacts,
            live,
            format,
            expect,
            codex_config,
            workspace,
        } => {
            let opts = VerifyArgs {
                record,
                artifacts,
                live,
                expect,
                codex_config: codex_config.zip(workspace),
            };
            let report = verify(&opts);
            let text = match format {
                Format::Text => report.to_text(),
                Format::Json => report.to_json(),
            };
            let _ = write!(out, "{text}");
            report.verdict().exit_code()
        }
        Command::Exec {
            record,
            artifacts,
            dry_run,
            user,
            expect,
            report,
            force,
            resolve,
            command,
        } => exec(
            &record,
            &ExecOpts {
                artifacts: artifacts.as_deref(),
                dry_run,
                user: user.as_deref(),
                expect: expect.as_deref(),
                report: report.as_deref(),
                force,
                resolve: &resolve,
            },
            &command,
            out,
            err,
        ),
        Command::Init {
            env_fd,
            status_fd,
            listen,
            socket,
            command,
        } => {
            let bridge = listen.as_deref().zip(socket.as_deref());
            match crate::exec::init_main(env_fd, status_fd, bridge, &command) {
                Ok(code) => code,
                Err(e) => {
                    let _ = writeln!(err, "sealc: the sandbox cannot start: {e}");
                    crate::exec::CANNOT_START
                }
            }
        }
        Command::Confine {
            offline,
            tcp_any,
            tcp_port,
            write,
            env_fd,
            status_fd,
            limit,
            command,
        } => {
            let c = crate::exec::Confinement {
                offline,
                limits: limit,
                write,
                tcp: if tcp_any {
                    crate::exec::Tcp::Any
                } else {
                    crate::exec::Tcp::Only(tcp_port)
                },
            };
            let e = crate::exec::confine_main(&c, env_fd, status_fd, &command);
            let _ = writeln!(err, "sealc: cannot start the command: {e}");
            crate::exec::CANNOT_START
        }
        Command::Lint {
            spec,
            platform,
            format,
        } => {
            let display = spec.display().to_string();
            let src = match std::fs::read_to_string(&spec) {
                Ok(s) => s,
                Err(e) => {
                    let d = Diagnostic::error(
                        "sealc::io::read",
                        format!("cannot read spec {}: {e}", quote(&display)),
                    );
                    let _ = write!(err, "{}", render_diagnostics(&d.into(), &display, ""));
                    return BAD_INPUT;
                }
            };
            let diags = crate::lint::lint_for(&src, platform.map(Into::into));
            match format {
                Format::Text => {
                    let _ = write!(out, "{}", render_diagnostics(&diags, &display, &src));
                    let count = |sev| diags.0.iter().filter(|d| d.severity == sev).count();
                    let _ = writeln!(
                        out,
                        "{display}: {} error(s), {} warning(s), {} advice",
                        count(crate::diag::Severity::Error),
                        count(crate::diag::Severity::Warning),
                        count(crate::diag::Severity::Advice)
                    );
                }
                Format::Json => {
                    let _ = write!(out, "{}", crate::lint::to_json(&diags, &display, &src));
                }
            }
            if diags.has_errors() {
                DIFFERS
            } else {
                OK
            }
        }
        Command::Explain {
            profile,
            op,
            path,
            remote,
            to,
            cwd,
            record,
            params,
            format,
        } => {
            let asked = Asked {
                path,
                to,
                cwd,
                record,
            };
            explain(&profile, &op, asked, remote, &params, format, out, err)
        }
        Command::Schema { which } => {
            let v = match which {
                Which::Spec => crate::spec::json_schema(),
                Which::Record => record_schema(),
            };
            let _ = write!(out, "{}", crate::record::canonical_json(&v));
            OK
        }
    }
}

/// Exit code of `explain` when the answer is ambiguous or undetermined.
pub const UNDECIDED: i32 = 3;

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

/// `--expect`: a binding digest, `sha256:` and 64 lowercase hex digits.
fn parse_expect(s: &str) -> Result<String, String> {
    if crate::verify::is_binding(s) {
        Ok(s.to_string())
    } else {
        Err(
            "give the `binding` of the reviewed seal.json: `sha256:` and 64 lowercase hex digits"
                .into(),
        )
    }
}

struct VerifyArgs {
    record: PathBuf,
    artifacts: Option<PathBuf>,
    live: bool,
    expect: Option<String>,
    codex_config: Option<(PathBuf, PathBuf)>,
}

/// Read the record and the artifact files beside it (or in `--artifacts`),
/// then verify; the live and Codex-config checks come after.
/// `NAME=VALUE` of `__confine --limit`.
fn parse_limit(s: &str) -> Result<(String, u64), String> {
    let (k, v) = s.split_once('=').ok_or("NAME=VALUE")?;
    Ok((k.to_string(), v.parse().map_err(|_| "a number")?))
}

/// `sealc exec`'s options.
struct ExecOpts<'a> {
    artifacts: Option<&'a Path>,
    dry_run: bool,
    user: Option<&'a str>,
    expect: Option<&'a str>,
    report: Option<&'a Path>,
    force: bool,
    resolve: &'a [String],
}

/// What `exec` learns on its way, for the run report.
struct ExecCtx {
    /// The network part: each connection through sealc's own proxy.
    network: crate::report::Report,
    phase: crate::exec::report::Phase,
    codex_config: Option<&'static str>,
    binding: Option<String>,
    layers: serde_json::Value,
    limits: std::collections::BTreeMap<&'static str, crate::exec::report::Limit>,
    result: Option<crate::exec::RunResult>,
}

/// A writer that also keeps what was written (the report names the error).
struct Tee<'a> {
    inner: &'a mut dyn Write,
    text: Vec<u8>,
}

impl Write for Tee<'_> {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        self.text.extend_from_slice(buf);
        self.inner.write_all(buf)?;
        Ok(buf.len())
    }
    fn flush(&mut self) -> std::io::Result<()> {
        self.inner.flush()
    }
}

/// `sealc exec`, and its run report.
fn exec(
    record: &Path,
    opts: &ExecOpts<'_>,
    command: &[OsString],
    out: &mut dyn Write,
    err: &mut dyn Write,
) -> i32 {
    use crate::exec::report;
    let started = std::time::SystemTime::now();
    let t0 = std::time::Instant::now();
    let mut ctx = ExecCtx {
        network: crate::report::Report::default(),
        phase: report::Phase::Verify,
        codex_config: None,
        binding: None,
        layers: serde_json::Value::Null,
        limits: Default::default(),
        result: None,
    };
    if let Some(path) = opts.report.filter(|_| !opts.dry_run) {
        if let Err(e) = crate::report::check_path(path) {
            let _ = writeln!(
                err,
                "error: cannot write the run report {}: {e}, so nothing was started",
                quote(&path.display().to_string())
            );
            return BAD_INPUT;
        }
    }
    let mut tee = Tee {
        inner: err,
        text: Vec::new(),
    };
    let code = exec_run(record, opts, command, out, &mut tee, &mut ctx);
    let Some(path) = opts.report.filter(|_| !opts.dry_run) else {
        return code;
    };
    let said = String::from_utf8_lossy(&tee.text);
    let r = ctx.result.unwrap_or_default();
    let outcome = r.outcome.unwrap_or_else(|| report::Outcome::CouldNotStart {
        phase: ctx.phase,
        message: said
            .lines()
            .find_map(|l| l.strip_prefix("error: "))
            .unwrap_or("nothing was started")
            .to_string(),
    });
    let rep = report::Report {
        argv: command
            .iter()
            .map(|a| a.to_string_lossy().into_owned())
            .collect(),
        binding: ctx.binding,
        codex_config: ctx.codex_config,
        cpu_seconds: r.cpu_seconds,
        duration_seconds: t0.elapsed().as_secs_f64(),
        ended_at: report::rfc3339(std::time::SystemTime::now()),
        exit_code: code,
        layers: ctx.layers,
        limits: ctx.limits,
        limits_reached: r.limits_reached,
        network: ctx.network.network,
        network_omitted: ctx.network.network_omitted,
        outcome: Some(outcome),
        peak_memory_kib: r.peak_memory_kib,
        resolve_overrides: ctx.network.resolve_overrides,
        schema: report::SCHEMA,
        started_at: report::rfc3339(started),
        stderr: r.stderr,
        stdout: r.stdout,
    };
    if let Err(e) = report::write(path, &rep) {
        let _ = writeln!(
            tee.inner,
            "error: cannot write the run report {}: {e}",
            quote(&path.display().to_string())
        );
        return if code == OK { BAD_INPUT } else { code };
    }
    code
}

/// Who the sandbox runs as: started by root, an unprivileged user (Linux).
fn exec_user(
    platform: crate::spec::Platform,
    user: Option<&str>,
) -> Result<Option<crate::exec::Ids>, String> {
    let root = rustix::process::geteuid().is_root();
    match (platform, root, user) {
        (crate::spec::Platform::Linux, true, u) => {
            let passwd = std::fs::read_to_string("/etc/passwd").unwrap_or_default();
            crate::exec::user::parse_user(u.unwrap_or(crate::exec::user::DEFAULT_USER), &passwd)
                .map(Some)
        }
        (_, _, Some(u)) => Err(format!(
            "`--user {u}` is for a Linux seal started by root; the agent runs as its caller here"
        )),
        _ => Ok(None),
    }
}

/// `sealc exec`: verify exactly as `sealc verify` does, then run.
fn exec_run(
    record: &Path,
    opts: &ExecOpts<'_>,
    command: &[OsString],
    out: &mut dyn Write,
    err: &mut dyn Write,
    ctx: &mut ExecCtx,
) -> i32 {
    let (artifacts, dry_run, expect) = (opts.artifacts, opts.dry_run, opts.expect);
    let mut overrides = std::collections::BTreeMap::new();
    for r in opts.resolve {
        match crate::proxy::parse_resolve(r) {
            Ok((name, ip)) => {
                overrides.insert(name, ip);
            }
            Err(e) => {
                let _ = writeln!(err, "error: `--resolve`: {e}");
                return BAD_INPUT;
            }
        }
    }
    let display = record.display().to_string();
    let bytes = match std::fs::read(record) {
        Ok(b) => b,
        Err(e) => {
            let _ = writeln!(
                err,
                "error: cannot read the record {}: {e}",
                quote(&display)
            );
            return BAD_INPUT;
        }
    };
    let dir = match artifacts {
        Some(d) => d.to_path_buf(),
        None => record.parent().map(Path::to_path_buf).unwrap_or_default(),
    };
    let files = |name: &str| std::fs::read(dir.join(name)).ok();
    let outcome = crate::verify::verify(&bytes, &files);
    if let (Some(want), Some(rec)) = (expect, &outcome.record) {
        if rec.binding != want {
            let _ = writeln!(
                err,
                "error: {display} binds {}, not the expected {want}, so nothing was started",
                rec.binding
            );
            let _ = writeln!(
                err,
                "help: run the seal you reviewed, or review this one and pass its binding to `--expect`"
            );
            return DIFFERS;
        }
    }
    let verdict = outcome.report.verdict();
    let (Some(rec), Some(recompiled), crate::verify::Verdict::Verified) =
        (&outcome.record, &outcome.recompiled, verdict)
    else {
        let _ = write!(err, "{}", outcome.report.to_text());
        let _ = writeln!(
            err,
            "error: {display} does not verify, so nothing was started"
        );
        return verdict.exit_code().max(DIFFERS);
    };
    ctx.binding = Some(rec.binding.clone());
    ctx.phase = crate::exec::report::Phase::HostCheck;
    let drift = crate::exec::host_drift(rec, &RealHost);
    if !drift.is_empty() {
        for d in &drift {
            let _ = writeln!(err, "drift       live {d}");
        }
        let _ = writeln!(
            err,
            "error: this host no longer matches the facts {display} was compiled against, so nothing was started"
        );
        for help in drift_help(&drift) {
            let _ = writeln!(err, "help: {help}");
        }
        return DIFFERS;
    }
    let compiled =
        match crate::compile_with_facts(&rec.spec.file, &rec.spec.text, rec.facts.clone()) {
            Ok(c) => c,
            Err(_) => {
                let _ = writeln!(
                    err,
                    "error: {display} does not recompile, so nothing was started"
                );
                return DIFFERS;
            }
        };
    // `codex` (the launcher's name) runs the recorded, checked launcher.
    let command = &crate::exec::resolve_launcher(&compiled.ir, command)[..];
    let ways = match crate::exec::stdio::ways() {
        Ok(w) => w,
        Err(e) => {
            let _ = writeln!(err, "error: {e}");
            let _ = writeln!(
                err,
                "help: give the command a file, a pipe or a terminal, e.g. `< /dev/null`"
            );
            return BAD_INPUT;
        }
    };
    let user = match exec_user(compiled.ir.platform, opts.user) {
        Ok(u) => u,
        Err(e) => {
            let _ = writeln!(err, "error: {e}");
            return BAD_INPUT;
        }
    };
    let exe = std::env::current_exe().unwrap_or_else(|_| PathBuf::from("sealc"));
    // sealc runs inside as pid 1 and before the command is confined: a copy
    // the agent can replace would run unconfined in the next run.
    if let Some(w) = compiled.ir.roots.iter().find(|r| {
        r.kind == crate::ir::RootKind::Write
            && r.real
                .as_deref()
                .is_some_and(|real| crate::ir::is_within(&exe.to_string_lossy(), real))
    }) {
        let _ = writeln!(
            err,
            "error: sealc's own binary {} is inside the write root {}, where the agent could replace it for the next run, so nothing was started",
            quote(&exe.display().to_string()),
            quote(&w.origin)
        );
        let _ = writeln!(
            err,
            "help: install sealc outside every write root (`cargo install --locked --path .`)"
        );
        return BAD_INPUT;
    }
    let needs_bridge =
        compiled.ir.platform == crate::spec::Platform::Linux && compiled.ir.network.mode.proxied();
    let profile = recompiled
        .get(crate::backend::SEATBELT)
        .map(Vec::as_slice)
        .unwrap_or_default();
    let has_proc_entry = |p: &str| Path::new(p).exists();
    ctx.limits = crate::exec::report::limits(&compiled.ir);
    let mut rt = crate::exec::Runtime {
        exe: &exe,
        bridge_dir: Path::new("<bridge-dir>"), // made below, once nothing can fail
        profile,
        user,
        has_proc_entry: &has_proc_entry,
    };
    let plan = match crate::exec::plan(&compiled.ir, command, &|n| std::env::var_os(n), &rt) {
        Ok(p) => p,
        Err(d) => {
            let _ = write!(err, "{}", render_diagnostics(&d.into(), &display, ""));
            return BAD_INPUT;
        }
    };
    ctx.layers = dry_run_layers(&compiled.ir, &plan);
    ctx.phase = crate::exec::report::Phase::SandboxStart;
    if dry_run {
        let layers = ctx.layers.clone();
        let shown = serde_json::json!({
            "argv": std::iter::once(plan.program.clone())
                .chain(plan.args.iter().map(|a| a.to_string_lossy().into_owned()))
                .collect::<Vec<_>>(),
            "env": plan.env.iter().map(|(k, _)| k.clone()).collect::<Vec<_>>(),
            "layers": layers,
            "secrets": plan.secrets,
            "timeout": plan.timeout.map(|t| t.as_secs()),
            "user": plan.user.map(|u| format!("{}:{}", u.uid, u.gid)),
            "codex_config": codex_target(&compiled.ir),
        });
        let _ = writeln!(
            out,
            "{}",
            serde_json::to_string_pretty(&shown).unwrap_or_default()
        );
        return OK;
    }
    // Write roots absent when compiled: made now, where the seal mounts them.
    let made = match crate::absent::make_write_roots(&compiled.ir) {
        Ok(m) => m,
        Err(e) => {
            let _ = writeln!(err, "error: {e}, so nothing was started");
            return crate::exec::CANNOT_START;
        }
    };
    let roots: Vec<String> = compiled
        .ir
        .roots
        .iter()
        .filter(|r| r.kind == crate::ir::RootKind::Write)
        .filter_map(|r| r.real.clone())
        .collect();
    if let Some(ids) = user {
        if let Some(e) = roots
            .iter()
            .find_map(|r| crate::exec::user::reachable(r, ids).err())
        {
            crate::absent::unmake(&made);
            let _ = writeln!(err, "error: {e}, so nothing was started");
            let _ = writeln!(
                err,
                "help: let that user search every directory above the write roots (`chmod o+x`), or pick another with `--user`"
            );
            return BAD_INPUT;
        }
    }
    // The verified Codex config goes into the seal's CODEX_HOME (in a write
    // root, so before the roots are handed over).
    let codex_config = recompiled
        .get(crate::backend::CODEX)
        .cloned()
        .unwrap_or_default();
    let installs = codex_target(&compiled.ir).is_some();
    if installs {
        use crate::exec::codex_home::{install, Refused};
        match install(&compiled.ir, &codex_config, opts.force) {
            Ok(_) => {}
            Err(Refused::Drift(why)) => {
                let _ = writeln!(err, "drift       codex config  {why}");
                let _ = writeln!(
                    err,
                    "error: the seal's Codex config is not the verified one, so nothing was started"
                );
                let _ = writeln!(
                    err,
                    "help: look at what changed it (`sealc verify {display} --codex-config PATH --workspace DIR` shows how), then run again with `--force` to replace it"
                );
                return DIFFERS;
            }
            Err(Refused::Io(why)) => {
                let _ = writeln!(err, "error: {why}, so nothing was started");
                return crate::exec::CANNOT_START;
            }
        }
    }
    if let Some(ids) = user {
        if let Err(e) = crate::exec::user::hand_over(&roots, ids) {
            let _ = writeln!(err, "error: {e}, so nothing was started");
            return crate::exec::CANNOT_START;
        }
    }
    let bridge_dir;
    let mut plan = if needs_bridge {
        bridge_dir = match crate::exec::private_dir(&std::env::temp_dir()) {
            Ok(d) => d,
            Err(e) => {
                let _ = writeln!(err, "error: cannot make the proxy bridge's directory: {e}");
                return crate::exec::CANNOT_START;
            }
        };
        rt.bridge_dir = &bridge_dir;
        match crate::exec::plan(&compiled.ir, command, &|n| std::env::var_os(n), &rt) {
            Ok(p) => p,
            Err(_) => return crate::exec::CANNOT_START,
        }
    } else {
        plan
    };
    // sealc's own proxy tells each refusal on stderr, in one write, through
    // its own copy of the descriptor: this thread holds the lock on
    // `Stderr` meanwhile.
    use std::os::fd::AsFd;
    let log: Option<crate::proxy::Log> = std::io::stderr()
        .as_fd()
        .try_clone_to_owned()
        .ok()
        .map(std::fs::File::from)
        .map(|f| -> crate::proxy::Log {
            Box::new(move |line: &str| {
                let _ = (&f).write_all(format!("sealc: {line}\n").as_bytes());
            })
        });
    let audit = crate::proxy::Audit::new(log, overrides);
    if let Some(p) = plan.proxy.as_mut() {
        p.audit = audit.clone();
    }
    let _ = out.flush();
    let code = match crate::exec::run(&plan, ways) {
        Ok(result) => {
            use crate::exec::report::Outcome;
            let said = match &result.outcome {
                Some(Outcome::WallTimeout) => Some("the wall-clock limit".to_string()),
                Some(Outcome::CpuLimit) => Some("the CPU limit".into()),
                Some(Outcome::MemoryLimit) => Some("the memory limit".into()),
                Some(Outcome::OutputLimit) => Some("the output limit".into()),
                Some(Outcome::FileSizeLimit) => Some("the file size limit".into()),
                Some(Outcome::CouldNotStart { phase, message }) => {
                    let _ = writeln!(err, "error: {} failed: {message}", phase.as_str());
                    None
                }
                _ => None,
            };
            if let Some(what) = said {
                let _ = writeln!(
                    err,
                    "sealc: the run was stopped at {what} (exit {})",
                    result.exit_code()
                );
            }
            let mut code = result.exit_code();
            if installs {
                let after = codex_after(&compiled.ir, &codex_config, code, err);
                ctx.codex_config = Some(
                    if after == crate::exec::CODEX_CONFIG_DRIFT && code != after {
                        "drift"
                    } else {
                        "unchanged"
                    },
                );
                code = after;
            }
            ctx.result = Some(result);
            code
        }
        Err(e) => {
            if let Some(b) = &plan.bridge {
                let _ = std::fs::remove_file(b.dir.join(crate::exec::BRIDGE_SOCKET));
                let _ = std::fs::remove_dir(&b.dir);
            }
            let _ = writeln!(err, "error: cannot start {}: {e}", quote(&plan.program));
            crate::exec::CANNOT_START
        }
    };
    audit.fill(&mut ctx.network);
    code
}

/// Where `sealc exec` installs the Codex config: a Codex seal's
/// `CODEX_HOME/config.toml`.
fn codex_target(ir: &crate::ir::Ir) -> Option<String> {
    let home = ir.codex.home.as_ref().filter(|_| ir.codex.sealed)?;
    Some(format!("{home}/{}", crate::exec::codex_home::CONFIG))
}

/// After the command: the drift check of the Codex config (what
/// `sealc verify --codex-config` does). Drift is reported and gives
/// [`crate::exec::CODEX_CONFIG_DRIFT`], whatever the command's status.
fn codex_after(ir: &crate::ir::Ir, generated: &[u8], code: i32, err: &mut dyn Write) -> i32 {
    use crate::facts::Host as _;
    let mut report = crate::verify::Report::default();
    let mut workspaces = ir.codex.workspaces.clone();
    if workspaces.is_empty() {
        // No workspace recorded: Codex may trust the directory it ran in.
        if let Ok(cwd) = std::env::current_dir() {
            let cwd = cwd.display().to_string();
            workspaces.extend(RealHost.canonicalize(&cwd).filter(|r| *r != cwd));
            workspaces.insert(0, cwd);
        }
    }
    match crate::exec::codex_home::read_back(ir) {
        Ok(after) => crate::verify::check_codex_config(generated, &after, &workspaces, &mut report),
        Err(why) => report.push("codex config", crate::verify::Status::Drift, why),
    }
    if report.verdict() == crate::verify::Verdict::Verified {
        return code;
    }
    let _ = write!(err, "{}", report.to_text());
    let _ = writeln!(
        err,
        "error: the Codex config in the seal's CODEX_HOME drifted during the run (the command exited with {code})"
    );
    let _ = writeln!(
        err,
        "help: the agent or Codex changed its own config: review the change; the next `sealc exec` refuses to start until it is put back or replaced with `--force`"
    );
    crate::exec::CODEX_CONFIG_DRIFT
}

/// What `--dry-run` says of the sandbox's layers.
fn dry_run_layers(ir: &crate::ir::Ir, plan: &crate::exec::Plan) -> serde_json::Value {
    if ir.platform != crate::spec::Platform::Linux {
        return serde_json::json!({ "seatbelt": "the verified profile, by sandbox-exec -p", "network": crate::proxy::layer(&ir.network, plan.proxy.as_ref()) });
    }
    let abi = crate::exec::landlock_abi();
    let landlock = crate::backend::bwrap::landlock(ir);
    let mut applied = Vec::new();
    if abi >= 1 {
        applied.push("writes only beneath the write roots and devices");
    }
    if abi >= 4 && landlock.tcp_connect.is_some() {
        applied.push("TCP connect only to the listed ports");
    }
    if abi >= 6 {
        applied.push("abstract unix sockets and signals scoped to the command");
    }
    serde_json::json!({
        "landlock": { "abi": abi, "applied": applied, "policy": landlock },
        "namespaces": "user (no nested one), mount, pid (sealc's init is pid 1), ipc, uts, cgroup; network unless `open`",
        "network": crate::proxy::layer(&ir.network, plan.proxy.as_ref()),
        "seccomp": crate::backend::bwrap::refused(ir),
        "skipped": plan.skipped,
    })
}

/// What to do about host drift, by its kind. A denied root that a run moved
/// is never answered with "compile again": the new seal would hide the decoy
/// left in its place and expose what was moved.
fn drift_help(drift: &[crate::drift::Drift]) -> Vec<&'static str> {
    use crate::drift::DriftKind;
    let has = |k: DriftKind| drift.iter().any(|d| d.kind == k);
    if has(DriftKind::Moved) {
        return vec!["keep this record: a denied root (or an ancestor of one) inside a write root was moved or replaced, and a new compile would hide what now stands there and expose what was moved; put the moved paths back, or start from a fresh write root, then run this record"];
    }
    let mut help = Vec::new();
    if has(DriftKind::Builder) {
        help.push("a program that starts the sandbox changed: make sure the new one is one you trust (a package upgrade), then compile the seal again on this host");
    }
    if has(DriftKind::Host) {
        help.push("compile the seal again on this host, after the roots exist");
    }
    help
}

fn verify(a: &VerifyArgs) -> crate::verify::Report {
    use crate::facts::Host as _;
    let bytes = match std::fs::read(&a.record) {
        Ok(b) => b,
        Err(e) => {
            return crate::verify::Report {
                unusable: Some(format!(
                    "cannot read the record {}: {e}",
                    quote(&a.record.display().to_string())
                )),
                ..Default::default()
            }
        }
    };
    let dir = match &a.artifacts {
        Some(d) => d.clone(),
        None => a.record.parent().map(Path::to_path_buf).unwrap_or_default(),
    };
    // Only the artifact names recompilation produces are ever opened.
    let files = |name: &str| std::fs::read(dir.join(name)).ok();
    let outcome = crate::verify::verify(&bytes, &files);
    let mut report = outcome.report;
    if let (Some(want), Some(record)) = (&a.expect, &outcome.record) {
        crate::verify::check_expected(record, want, &mut report);
    }
    if let (true, Some(record)) = (a.live, &outcome.record) {
        crate::verify::live_facts(record, &RealHost, &mut report);
    }
    if let (Some((cfg, ws)), Some(recompiled)) = (&a.codex_config, &outcome.recompiled) {
        match std::fs::read(cfg) {
            Ok(after) => {
                let given = ws.display().to_string();
                let mut workspaces = vec![given.clone()];
                workspaces.extend(RealHost.canonicalize(&given).filter(|r| *r != given));
                let generated = recompiled
                    .get(crate::backend::CODEX)
                    .map(Vec::as_slice)
                    .unwrap_or_default();
                crate::verify::check_codex_config(generated, &after, &workspaces, &mut report);
            }
            Err(e) => report.checks.push(crate::verify::Check {
                subject: "codex config".into(),
                status: crate::verify::Status::Drift,
                detail: format!("cannot read {}: {e}", quote(&cfg.display().to_string())),
            }),
        }
    }
    report
}

/// The JSON Schema of the record.
pub fn record_schema() -> serde_json::Value {
    crate::spec::draft07_schema::<crate::record::Record>(false)
}

/// Render diagnostics as miette reports, without colour, so output is stable.
pub fn render_diagnostics(diags: &Diagnostics, file: &str, src: &str) -> String {
    let handler =
        miette::GraphicalReportHandler::new_themed(miette::GraphicalTheme::unicode_nocolor())
            .with_width(100)
            .with_links(false);
    let mut s = String::new();
    for d in &diags.0 {
        let report = miette::Report::new(d.clone())
            .with_source_code(miette::NamedSource::new(file, src.to_string()));
        let _ = handler.render_report(&mut s, report.as_ref());
    }
    s
}

/// How `compile` treats what is on disk.
struct Mode {
    check: bool,
    force: bool,
}

fn compile(
    spec_path: &Path,
    var_args: &[String],
    platform: Option<crate::spec::Platform>,
    dir: &Path,
    Mode { check, force }: Mode,
    out: &mut dyn Write,
    err: &mut dyn Write,
) -> i32 {
    let display = spec_path.display().to_string();
    let src = match std::fs::read_to_string(spec_path) {
        Ok(s) => s,
        Err(e) => {
            let d = Diagnostic::error(
                "sealc::io::read",
                format!("cannot read spec {}: {e}", quote(&display)),
            )
            .help("give the path of a seal spec (TOML)");
            let _ = write!(err, "{}", render_diagnostics(&d.into(), &display, ""));
            return BAD_INPUT;
        }
    };
    let mut flags: VarFlags = Vec::new();
    let mut flag_errors = Diagnostics::default();
    for v in var_args {
        match parse_var_flag(v) {
            Ok(kv) => flags.push(kv),
            Err(d) => flag_errors.push(d),
        }
    }
    if flag_errors.has_errors() {
        let _ = write!(err, "{}", render_diagnostics(&flag_errors, &display, &src));
        return BAD_INPUT;
    }
    let file_name = spec_path
        .file_name()
        .map(|f| f.to_string_lossy().into_owned())
        .unwrap_or_else(|| display.clone());
    let compiled = match crate::compile_for(&file_name, &src, &flags, platform, &RealHost) {
        Ok(c) => c,
        Err(diags) => {
            let _ = write!(err, "{}", render_diagnostics(&diags, &display, &src));
            let n = diags.0.iter().filter(|d| d.is_error()).count();
            let _ = writeln!(
                err,
                "error: {display}: {n} problem{} found; nothing written",
                if n == 1 { "" } else { "s" }
            );
            return BAD_INPUT;
        }
    };
    if !compiled.warnings.0.is_empty() {
        let _ = write!(
            err,
            "{}",
            render_diagnostics(&compiled.warnings, &display, &src)
        );
    }

    // Compare with what is on disk before touching anything.
    let mut differing = Vec::new();
    for (name, bytes) in &compiled.files {
        let path = dir.join(name);
        match std::fs::read(&path) {
            Ok(existing) if existing == *bytes => {}
            Ok(_) => differing.push((name.clone(), "differs")),
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
                differing.push((name.clone(), "missing"))
            }
            Err(e) => {
                let d = Diagnostic::error(
                    "sealc::io::read",
                    format!(
                        "cannot read existing output {}: {e}",
                        quote(&path.display().to_string())
                    ),
                );
                let _ = write!(err, "{}", render_diagnostics(&d.into(), &display, &src));
                return BAD_INPUT;
            }
        }
    }
    if check {
        for (name, bytes) in &compiled.files {
            let state = differing
                .iter()
                .find(|(n, _)| n == name)
                .map_or("ok", |(_, s)| s);
            let _ = writeln!(
                out,
                "{state:<8}{}  ({} bytes)",
                dir.join(name).display(),
                bytes.len()
            );
        }
        return if differing.is_empty() { OK } else { DIFFERS };
    }
    let refused: Vec<&String> = differing
        .iter()
        .filter(|(_, s)| *s == "differs")
        .map(|(n, _)| n)
        .collect();
    if !refused.is_empty() && !force {
        for name in &refused {
            let d = Diagnostic::error(
                "sealc::out::differs",
                format!(
                    "{} exists and differs from this compile",
                    quote(&dir.join(name).display().to_string())
                ),
            )
            .help("pass `--force` to replace it, or `--check` to compare without writing");
            let _ = write!(err, "{}", render_diagnostics(&d.into(), &display, &src));
        }
        let _ = writeln!(err, "error: nothing written");
        return DIFFERS;
    }
    if let Err(e) = write_all_atomically(dir, &compiled.files) {
        let d = Diagnostic::error(
            "sealc::io::write",
            format!(
                "cannot write outputs to {}: {e}",
                quote(&dir.display().to_string())
            ),
        )
        .help("check that the output directory is writable");
        let _ = write!(err, "{}", render_diagnostics(&d.into(), &display, &src));
        return BAD_INPUT;
    }
    for (name, bytes) in &compiled.files {
        let _ = writeln!(
            out,
            "{}  {}",
            crate::digest::sha256(bytes),
            dir.join(name).display()
        );
    }
    OK
}

/// Write every file to a temp file beside its target, then rename each into
/// place, the record last. If any temp file cannot be written, every temp file
/// is removed and nothing is renamed.
fn write_all_atomically(
    dir: &Path,
    files: &std::collections::BTreeMap<String, Vec<u8>>,
) -> std::io::Result<()> {
    let mut staged: Vec<(PathBuf, PathBuf)> = Vec::new();
    let result = (|| {
        // The record goes last, so it never describes artifacts not yet in place.
        let mut order: Vec<(&String, &Vec<u8>)> = files
            .iter()
            .filter(|(n, _)| *n != crate::record::FILE)
            .collect();
        order.extend(files.iter().filter(|(n, _)| *n == crate::record::FILE));
        for (name, bytes) in order {
            let target = dir.join(name);
            let parent = target.parent().unwrap_or(dir).to_path_buf();
            std::fs::create_dir_all(&parent)?;
            let file_name = target
                .file_name()
                .map(|f| f.to_string_lossy().into_owned())
                .unwrap_or_default();
            let tmp = parent.join(format!(".{file_name}.sealc-tmp-{}", std::process::id()));
            staged.push((tmp.clone(), target));
            let mut f = std::fs::File::create(&tmp)?;
            f.write_all(bytes)?;
            f.sync_all()?;
        }
        Ok(())
    })();
    if let Err(e) = result {
        for (tmp, _) in &staged {
            let _ = std::fs::remove_file(tmp);
        }
        return Err(e);
    }
    for (i, (tmp, target)) in staged.iter().enumerate() {
        if let Err(e) = std::fs::rename(tmp, target) {
            for (t, _) in &staged[i..] {
                let _ = std::fs::remove_file(t);
            }
            return Err(e);
        }
    }
    Ok(())
}
