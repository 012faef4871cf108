//! `sealc compile`: spec → artifacts and record, written atomically.

use std::io::Write;
use std::path::{Path, PathBuf};

use super::render_diagnostics;
use super::{Format, PlatformArg, BAD_INPUT, DIFFERS, OK};
use crate::diag::{quote, Diagnostic, Diagnostics};
use crate::facts::{parse_var_flag, RealHost, VarFlags};

/// `--help`'s closing sections: the exit codes from [`crate::exit::COMPILE`].
fn after_help() -> String {
    crate::exit::help_section(
        None,
        crate::exit::COMPILE,
        "\n\
Example:
  sealc compile seal.toml --platform linux --var checkout=\"$PWD\" --out seal",
    )
}

/// Compile a spec: write seal.sb (macOS) or seal.bwrap.json (Linux),
/// env.json, codex/config.toml, and the record seal.json.
#[derive(clap::Args, Debug)]
#[command(after_help = after_help())]
pub struct Args {
    /// The seal spec (TOML).
    spec: PathBuf,
    /// Give a var its value: NAME=VALUE (repeatable; wins over env and
    /// default). For a var a path starts with, a trailing `/` is dropped and
    /// a relative value (`.`) is made absolute against the current
    /// directory; the absolute path is what is recorded.
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
    /// Output format: `json` prints one document on stdout (schema
    /// `sealc.compile/v1`: the seal, its binding, each file and what became
    /// of it, and every finding, where the text groups many of one kind).
    #[arg(long, value_enum, default_value = "text")]
    format: Format,
}

pub(super) fn run(a: Args, out: &mut dyn Write, err: &mut dyn Write) -> i32 {
    crate::heap::tune_for_a_short_command();
    let mut sink = Sink {
        json: matches!(a.format, Format::Json),
        out,
        err,
        file: a.spec.display().to_string(),
        src: String::new(),
        diags: Diagnostics::default(),
        notes: Vec::new(),
        files: Vec::new(),
        seal: None,
    };
    let code = compile(
        &a.spec,
        &a.vars,
        a.platform.map(Into::into),
        &a.out,
        Mode {
            check: a.check,
            force: a.force,
        },
        &mut sink,
    );
    sink.finish(code)
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
    sink: &mut Sink<'_>,
) -> i32 {
    let display = spec_path.display().to_string();
    let src = match crate::hostfs::read_text(spec_path, crate::hostfs::MAX_SPEC) {
        Ok(s) => {
            crate::heap::expect_a_compile_of(s.len());
            sink.src = s.clone();
            s
        }
        Err(e) => {
            let d = Diagnostic::error(
                crate::diag::code::IO_READ,
                format!("cannot read spec {}: {e}", quote(&display)),
            )
            .help("give the path of a seal spec (TOML)");
            sink.report(d);
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
        sink.report(flag_errors);
        return BAD_INPUT;
    }
    let file_name = spec_path
        .file_name()
        .map(|f| f.to_string_lossy().into_owned())
        .unwrap_or_else(|| display.clone());
    let compiled = match crate::compile_for(&file_name, &src, &flags, platform, &RealHost) {
        // The process ends soon after: what a big seal allocated is left to
        // the exit, not freed piece by piece (a tenth of compiling 10,000
        // roots).
        Ok(c) => std::mem::ManuallyDrop::new(c),
        Err(diags) => {
            let n = diags.0.iter().filter(|d| d.is_error()).count();
            sink.listing(diags);
            sink.note(format!(
                "error: {display}: {n} problem{} found; nothing written",
                if n == 1 { "" } else { "s" }
            ));
            return BAD_INPUT;
        }
    };
    // A seal inside its own write root: the agent could rewrite it, and
    // `sealc exec` refuses to run it without `--expect`.
    if let Some(w) = compiled
        .ir
        .write_root_holding(&resolved(dir).to_string_lossy())
    {
        let d = Diagnostic::warning(
            crate::diag::code::OUT_IN_WRITE_ROOT,
            format!(
                "the seal goes to {}, inside the write root {}, where the agent could rewrite it for the next run",
                quote(&dir.display().to_string()),
                quote(&w)
            ),
        )
        .help("compile with `--out` outside every write root: `sealc exec` refuses to run this one");
        sink.report(d);
    }
    // Every warning in full; advice (style, redundancy, platform
    // differences: nothing that changes what the seal allows) as one line
    // that names the command that shows exactly that advice: `sealc lint`
    // for this target. Advice only this host's values give (lint reads no
    // host) is not in that command's, so it is shown in full here.
    let target = compiled.ir.platform;
    let quiet = super::quiet();
    // `-q` prints no advice: lint is not run for it.
    let linted: Vec<crate::diag::Diagnostic> = if quiet {
        Vec::new()
    } else {
        crate::lint::lint_for(&src, Some(select(target)))
            .0
            .into_iter()
            .filter(|d| d.severity == crate::diag::Severity::Advice)
            .collect()
    };
    let key = |d: &crate::diag::Diagnostic| {
        (
            d.code,
            d.message.clone(),
            d.span.as_ref().map(|s| (s.start, s.end)),
        )
    };
    let in_lint: std::collections::BTreeSet<_> = linted.iter().map(key).collect();
    let mut compiled = compiled;
    let shown: Vec<_> = std::mem::take(&mut compiled.warnings)
        .0
        .into_iter()
        .filter(|d| {
            d.severity != crate::diag::Severity::Advice || !(quiet || in_lint.contains(&key(d)))
        })
        .collect();
    sink.listing(Diagnostics(shown));
    if !linted.is_empty() {
        sink.note(format!(
            "note: {} advice for {display} (style, redundancy and platform differences; `{}` shows it)",
            linted.len(),
            lint_command(&display, target)
        ));
    }

    // Compare with what is on disk before touching anything (no link
    // followed: a link where an output goes differs, and is replaced).
    // The directory is opened once: every output is compared in the same
    // directory, whatever a host process does to its path meanwhile.
    let existing = crate::hostfs::Dir::open(dir);
    let mut differing = Vec::new();
    for (name, bytes) in &compiled.files {
        let path = dir.join(name);
        match read_output(&existing, name, bytes) {
            Ok(Some(None)) => {}
            Ok(Some(Some(existing))) => differing.push((name.clone(), "differs", Some(existing))),
            Ok(None) => differing.push((name.clone(), "missing", None)),
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
                differing.push((name.clone(), "missing", None))
            }
            Err(e) if e.raw_os_error() == Some(libc::ELOOP) => {
                differing.push((name.clone(), "differs", Some(Vec::new())))
            }
            Err(e) => {
                let d = Diagnostic::error(
                    crate::diag::code::IO_READ,
                    format!(
                        "cannot read existing output {}: {e}",
                        quote(&path.display().to_string())
                    ),
                );
                sink.report(d);
                return BAD_INPUT;
            }
        }
    }
    // Artifacts of another seal in the same directory (a compile for the
    // other platform): `verify` would refuse them; a write removes them.
    let stale: Vec<&str> = crate::backend::ALL
        .into_iter()
        .filter(|n| !compiled.files.contains_key(*n) && dir.join(n).is_file())
        .collect();
    sink.seal = Some((compiled.ir.name.clone(), compiled.record.binding.clone()));
    if check {
        for (name, bytes) in &compiled.files {
            let state = differing
                .iter()
                .find(|(n, _, _)| n == name)
                .map_or("ok", |(_, s, _)| s);
            let path = dir.join(name).display().to_string();
            sink.file(state, &path, Some(bytes), false);
            if !quiet {
                sink.line(format!("{state:<8}{path}  ({} bytes)", bytes.len()));
            }
        }
        for name in &stale {
            let path = dir.join(name).display().to_string();
            sink.file("stale", &path, None, false);
            if !quiet {
                sink.line(format!("{:<8}{path}  (not part of this seal)", "stale"));
            }
        }
        // What differs, as a unified diff from what is on disk to what this
        // compile would write.
        for (name, _, existing) in &differing {
            let (Some(existing), Some(ours), false) =
                (existing, compiled.files.get(name), quiet || sink.json)
            else {
                continue;
            };
            let shown = dir.join(name).display().to_string();
            let theirs = String::from_utf8_lossy(existing);
            let ours = String::from_utf8_lossy(ours);
            let diff = similar::TextDiff::from_lines(theirs.as_ref(), ours.as_ref())
                .unified_diff()
                .context_radius(2)
                .header(
                    &format!("{shown} (on disk)"),
                    &format!("{shown} (this compile)"),
                )
                .to_string();
            sink.text(&diff);
        }
        return if differing.is_empty() && stale.is_empty() {
            OK
        } else {
            DIFFERS
        };
    }
    let refused: Vec<&String> = differing
        .iter()
        .filter(|(_, s, _)| *s == "differs")
        .map(|(n, _, _)| n)
        .collect();
    if !refused.is_empty() && !force {
        for name in &refused {
            let d = Diagnostic::error(
                crate::diag::code::OUT_DIFFERS,
                format!(
                    "{} exists and differs from this compile",
                    quote(&dir.join(name).display().to_string())
                ),
            )
            .help(
                "pass `--force` to replace it, or `--check` to see the difference without writing",
            );
            sink.report(d);
        }
        sink.note("error: nothing written".to_string());
        return DIFFERS;
    }
    // A secret-looking `pass` value is in these files: readable by their
    // owner only (the warning says so). Otherwise the seal is for reviewers
    // to read, as any file.
    let private: Vec<&str> = if crate::recorded_secret_looking(compiled.facts()).is_empty() {
        Vec::new()
    } else {
        crate::PASS_VALUE_FILES.to_vec()
    };
    // The outputs on disk that hold this compile's bytes already.
    let same: Vec<&str> = compiled
        .files
        .keys()
        .filter(|n| !differing.iter().any(|(d, _, _)| d == *n))
        .map(String::as_str)
        .collect();
    let top = match write_all_atomically(dir, &compiled.files, &private, &same) {
        Ok(top) => top,
        Err(e) => {
            let d = Diagnostic::error(
                crate::diag::code::IO_WRITE,
                format!(
                    "cannot write outputs to {}: {e}",
                    quote(&dir.display().to_string())
                ),
            )
            .help("check that the output directory is writable");
            sink.report(d);
            return BAD_INPUT;
        }
    };
    for w in top.warnings() {
        sink.note(format!("warning: the seal's directory: {w}"));
    }
    // Through the directory written (not its path again, which another
    // user could have pointed elsewhere meanwhile).
    let mut removed = Vec::new();
    for name in &stale {
        let path = dir.join(name);
        match top.remove_below(name) {
            Ok(()) => removed.push(*name),
            Err(e) => {
                sink.note(format!(
                    "warning: cannot remove {}, which is not part of this seal: {e}",
                    quote(&path.display().to_string())
                ));
            }
        }
    }
    let written = differing.len();
    for (name, bytes) in &compiled.files {
        let state = if differing.iter().any(|(n, _, _)| n == name) {
            "wrote"
        } else {
            "unchanged"
        };
        let path = dir.join(name).display().to_string();
        let digest = sink.file(state, &path, Some(bytes), !quiet);
        if !quiet {
            sink.line(format!("{state:<10}{}  {path}", digest.unwrap_or_default()));
        }
    }
    for name in &removed {
        let path = dir.join(name).display().to_string();
        sink.file("removed", &path, None, false);
        if !quiet {
            sink.line(format!("{:<10}{path}  (not part of this seal)", "removed"));
        }
    }
    if quiet {
        return OK;
    }
    let n = compiled.ir.asserts.len();
    sink.line(format!(
        "seal `{}`: {written} written, {} unchanged{}; {n} assertion{} proved; binding {}",
        compiled.ir.name,
        compiled.files.len() - written,
        if removed.is_empty() {
            String::new()
        } else {
            format!(", {} removed", removed.len())
        },
        if n == 1 { "" } else { "s" },
        compiled.record.binding
    ));
    OK
}

/// Where compile's findings and results go: rendered as they come, or
/// (`--format json`) gathered into one JSON document on stdout at the end,
/// with every finding (the text groups many of one kind).
struct Sink<'a> {
    json: bool,
    out: &'a mut dyn Write,
    err: &'a mut dyn Write,
    file: String,
    src: String,
    diags: Diagnostics,
    notes: Vec<String>,
    files: Vec<serde_json::Value>,
    /// The seal's name and binding, once compiled.
    seal: Option<(String, String)>,
}

impl Sink<'_> {
    /// A problem (or a few) that ends or accompanies the compile.
    fn report(&mut self, d: impl Into<Diagnostics>) {
        let d = d.into();
        if self.json {
            self.diags.extend(d);
        } else {
            let _ = write!(
                self.err,
                "{}",
                render_diagnostics(&d, &self.file, &self.src)
            );
        }
    }

    /// The spec's findings, many of one kind grouped in the text.
    fn listing(&mut self, d: Diagnostics) {
        if self.json {
            self.diags.extend(d);
        } else if !d.0.is_empty() {
            let text = crate::diag::Render {
                file: &self.file,
                src: &self.src,
                color: super::color(),
                all_in: Some("`--format json`"),
            }
            .render(&d);
            let _ = write!(self.err, "{text}");
        }
    }

    /// A line for stderr (a note, a warning about the host).
    fn note(&mut self, line: String) {
        if self.json {
            self.notes.push(line);
        } else {
            let _ = writeln!(self.err, "{line}");
        }
    }

    /// A line of the listing on stdout (text only).
    fn line(&mut self, line: String) {
        if !self.json {
            let _ = writeln!(self.out, "{line}");
        }
    }

    /// Text for stdout as it is (text only).
    fn text(&mut self, text: &str) {
        if !self.json {
            let _ = write!(self.out, "{text}");
        }
    }

    /// An output and what became of it; its digest, if it has bytes and
    /// the JSON or the caller (`printed`) wants it.
    fn file(
        &mut self,
        state: &str,
        path: &str,
        bytes: Option<&Vec<u8>>,
        printed: bool,
    ) -> Option<String> {
        if self.json {
            let digest = bytes.map(|b| crate::digest::sha256(b));
            self.files.push(serde_json::json!({
                "path": path,
                "state": state,
                "sha256": digest,
            }));
            return digest;
        }
        printed.then(|| bytes.map(|b| crate::digest::sha256(b)))?
    }

    /// The exit code; the JSON document first, if asked for.
    fn finish(self, code: i32) -> i32 {
        if self.json {
            let count = |sev| self.diags.0.iter().filter(|d| d.severity == sev).count();
            let diags = crate::lint::diagnostics_json(&self.diags, &self.src);
            let (seal, binding) = self.seal.unzip();
            let doc = serde_json::json!({
                "schema": "sealc.compile/v1",
                "file": self.file,
                "exit": code,
                "seal": seal,
                "binding": binding,
                "files": self.files,
                "notes": self.notes,
                "errors": count(crate::diag::Severity::Error),
                "warnings": count(crate::diag::Severity::Warning),
                "advice": count(crate::diag::Severity::Advice),
                "diagnostics": diags,
            });
            let _ = write!(self.out, "{}", crate::record::canonical_json(&doc));
        }
        code
    }
}

/// `sealc lint` for one target platform.
fn select(p: crate::spec::Platform) -> crate::platform::Select {
    match p {
        crate::spec::Platform::Linux => crate::platform::Select::Linux,
        crate::spec::Platform::Macos => crate::platform::Select::Macos,
    }
}

/// The lint command whose advice is what compile counts for `target`.
fn lint_command(spec: &str, target: crate::spec::Platform) -> String {
    format!(
        "sealc lint {} --platform {}",
        crate::diag::shell_word(spec),
        target.as_str()
    )
}

/// Write every file to a temp file beside its target, then rename each into
/// place, the record last. If any temp file cannot be written, every temp file
/// is removed and nothing is renamed. Everything goes through
/// [`crate::hostfs`]: directories reached without following a link, temp
/// files of random names, renames relative to the directory's descriptor.
/// The files named in `private` are made readable and writable by their
/// owner only (0600), also when their bytes are unchanged; the others 0644.
///
/// They are not synced to the disk (as a compiler's outputs are not): the
/// record binds every artifact's digest and `sealc verify` and `sealc exec`
/// recompile it, so a file a crash left torn is refused, never trusted, and
/// compiling again mends it. Syncing the four files took 1.4 ms a compile
/// on this project's CI disk, a third of the whole process.
fn write_all_atomically(
    dir: &Path,
    files: &std::collections::BTreeMap<String, Vec<u8>>,
    private: &[&str],
    same: &[&str],
) -> std::io::Result<crate::hostfs::Dir> {
    let top = crate::hostfs::Dir::create_all(dir, 0o755)?;
    // The record goes last, so it never describes artifacts not yet in place.
    let mut order: Vec<(&String, &Vec<u8>)> = files
        .iter()
        .filter(|(n, _)| *n != crate::record::FILE)
        .collect();
    order.extend(files.iter().filter(|(n, _)| *n == crate::record::FILE));
    // Each file's directory (an artifact name may hold one: `codex/`).
    let mut dirs: Vec<crate::hostfs::Dir> = Vec::new();
    let mut placed = Vec::new();
    for (name, _) in &order {
        let (sub, file) = match name.rsplit_once('/') {
            Some((sub, file)) => (Some(sub), file),
            None => (None, name.as_str()),
        };
        let at = match sub {
            None => None,
            Some(sub) => {
                let mut d: Option<crate::hostfs::Dir> = None;
                for c in sub.split('/') {
                    let next = match &d {
                        None => top.subdir(c.as_ref(), Some(0o755))?,
                        Some(p) => p.subdir(c.as_ref(), Some(0o755))?,
                    };
                    d = Some(next);
                }
                d.map(|d| {
                    dirs.push(d);
                    dirs.len() - 1
                })
            }
        };
        placed.push((at, file));
    }
    let mut staged = Vec::new();
    for ((name, bytes), (at, file)) in order.iter().zip(&placed) {
        let d = at.map_or(&top, |i| &dirs[i]);
        let mode = if private.contains(&name.as_str()) {
            0o600
        } else {
            0o644
        };
        // What is there already, ours and as it would be written, stays
        // (compiling again into the same directory writes nothing).
        if same.contains(&name.as_str()) && d.holds_own(file.as_ref(), bytes.len(), mode) {
            continue;
        }
        // On an error, what is staged so far is removed as it drops.
        staged.push(d.stage_unsynced(file.as_ref(), bytes, mode)?);
    }
    for s in staged {
        s.commit()?;
    }
    Ok(top)
}

/// An output that is there already in `dir` (the output directory, opened
/// without following a link, or why it could not be), compared with
/// `bytes` without following a link (below it either): `Ok(None)` when it
/// is not there, `Ok(Some(None))` when it holds `bytes`, else what it
/// holds (never more than any seal holds).
fn read_output(
    dir: &std::io::Result<crate::hostfs::Dir>,
    name: &str,
    bytes: &[u8],
) -> std::io::Result<Option<Option<Vec<u8>>>> {
    match dir {
        Ok(d) => d.compare_below(name, bytes, crate::hostfs::MAX_RECORD),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(None),
        // The directory's own error, told for each output as before.
        Err(e) => Err(match e.raw_os_error() {
            Some(code) => std::io::Error::from_raw_os_error(code),
            None => std::io::Error::new(e.kind(), e.to_string()),
        }),
    }
}

/// `dir` made absolute, links resolved as far as it exists (the rest as
/// given): where the files will really be.
fn resolved(dir: &Path) -> PathBuf {
    let abs = std::path::absolute(dir).unwrap_or_else(|_| dir.to_path_buf());
    let mut rest = Vec::new();
    let mut at = abs.as_path();
    loop {
        if let Ok(real) = std::fs::canonicalize(at) {
            return rest.iter().rev().fold(real, |p, c| p.join(c));
        }
        match (at.parent(), at.file_name()) {
            (Some(parent), Some(name)) => {
                rest.push(name.to_os_string());
                at = parent;
            }
            _ => return abs,
        }
    }
}
