//! `sealc compile`: spec → artifacts and record, written atomically.

use std::io::Write;
use std::path::{Path, PathBuf};

use super::render_diagnostics;
use super::{PlatformArg, BAD_INPUT, DIFFERS, OK};
use crate::diag::{quote, Diagnostic, Diagnostics};
use crate::facts::{parse_var_flag, RealHost, VarFlags};

const AFTER_HELP: &str = "\
Exit codes:
  0  written (or, with --check, what is on disk is what would be written)
  1  what is on disk differs: --check found a file that differs, is missing
     or is stale (the other platform's), or an existing output differs and
     --force was not given; nothing written
  2  bad input: the spec, a --var, a flag, or a file that cannot be read
     or written; nothing written

Example:
  sealc compile seal.toml --platform linux --var checkout=\"$PWD\" --out seal";

/// Compile a spec: write seal.sb (macOS) or seal.bwrap.json (Linux),
/// env.json, codex/config.toml, and the record seal.json.
#[derive(clap::Args, Debug)]
#[command(after_help = AFTER_HELP)]
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
}

pub(super) fn run(a: Args, out: &mut dyn Write, err: &mut dyn Write) -> i32 {
    compile(
        &a.spec,
        &a.vars,
        a.platform.map(Into::into),
        &a.out,
        Mode {
            check: a.check,
            force: a.force,
        },
        out,
        err,
    )
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
    let src = match crate::hostfs::read_text(spec_path, crate::hostfs::MAX_SPEC) {
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
    // A seal inside its own write root: the agent could rewrite it, and
    // `sealc exec` refuses to run it without `--expect`.
    if let Some(w) = super::exec::write_root_holding(&compiled.ir, &resolved(dir)) {
        let d = Diagnostic::warning(
            "sealc::out::in-write-root",
            format!(
                "the seal goes to {}, inside the write root {}, where the agent could rewrite it for the next run",
                quote(&dir.display().to_string()),
                quote(&w)
            ),
        )
        .help("compile with `--out` outside every write root: `sealc exec` refuses to run this one");
        let _ = write!(err, "{}", render_diagnostics(&d.into(), &display, &src));
    }
    // Every warning in full; advice (style, redundancy, platform
    // differences: nothing that changes what the seal allows) as one line
    // that names the command that shows exactly that advice: `sealc lint`
    // for this target. Advice only this host's values give (lint reads no
    // host) is not in that command's, so it is shown in full here.
    let target = compiled.ir.platform;
    let linted: Vec<crate::diag::Diagnostic> = crate::lint::lint_for(&src, Some(select(target)))
        .0
        .into_iter()
        .filter(|d| d.severity == crate::diag::Severity::Advice)
        .collect();
    let same = |a: &crate::diag::Diagnostic, b: &crate::diag::Diagnostic| {
        a.code == b.code && a.message == b.message && a.span == b.span
    };
    let shown: Vec<_> = compiled
        .warnings
        .0
        .iter()
        .filter(|d| {
            d.severity != crate::diag::Severity::Advice
                || !(super::quiet() || linted.iter().any(|l| same(l, d)))
        })
        .cloned()
        .collect();
    if !shown.is_empty() {
        let _ = write!(
            err,
            "{}",
            render_diagnostics(&Diagnostics(shown), &display, &src)
        );
    }
    if !linted.is_empty() && !super::quiet() {
        let _ = writeln!(
            err,
            "note: {} advice for {display} (style, redundancy and platform differences; `{}` shows it)",
            linted.len(),
            lint_command(&display, target)
        );
    }

    // Compare with what is on disk before touching anything (no link
    // followed: a link where an output goes differs, and is replaced).
    let mut differing = Vec::new();
    for (name, bytes) in &compiled.files {
        let path = dir.join(name);
        match read_output(dir, name) {
            Ok(Some(existing)) if existing == *bytes => {}
            Ok(Some(existing)) => differing.push((name.clone(), "differs", Some(existing))),
            Ok(None) => differing.push((name.clone(), "missing", None)),
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
                differing.push((name.clone(), "missing", None))
            }
            Err(e) if e.raw_os_error() == Some(libc::ELOOP) => {
                differing.push((name.clone(), "differs", Some(Vec::new())))
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
    // Artifacts of another seal in the same directory (a compile for the
    // other platform): `verify` would refuse them; a write removes them.
    let stale: Vec<&str> = crate::backend::ALL
        .into_iter()
        .filter(|n| !compiled.files.contains_key(*n) && dir.join(n).is_file())
        .collect();
    let quiet = super::quiet();
    if check {
        for (name, bytes) in &compiled.files {
            let state = differing
                .iter()
                .find(|(n, _, _)| n == name)
                .map_or("ok", |(_, s, _)| s);
            if !quiet {
                let _ = writeln!(
                    out,
                    "{state:<8}{}  ({} bytes)",
                    dir.join(name).display(),
                    bytes.len()
                );
            }
        }
        for name in &stale {
            if !quiet {
                let _ = writeln!(
                    out,
                    "{:<8}{}  (not part of this seal)",
                    "stale",
                    dir.join(name).display()
                );
            }
        }
        // What differs, as a unified diff from what is on disk to what this
        // compile would write.
        for (name, _, existing) in &differing {
            let (Some(existing), Some(ours), false) = (existing, compiled.files.get(name), quiet)
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
            let _ = write!(out, "{diff}");
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
                "sealc::out::differs",
                format!(
                    "{} exists and differs from this compile",
                    quote(&dir.join(name).display().to_string())
                ),
            )
            .help(
                "pass `--force` to replace it, or `--check` to see the difference without writing",
            );
            let _ = write!(err, "{}", render_diagnostics(&d.into(), &display, &src));
        }
        let _ = writeln!(err, "error: nothing written");
        return DIFFERS;
    }
    // A secret-looking `pass` value is in these files: readable by their
    // owner only (the warning says so). Otherwise the seal is for reviewers
    // to read, as any file.
    let private: Vec<&str> = if crate::recorded_secret_looking(&compiled.facts).is_empty() {
        Vec::new()
    } else {
        crate::PASS_VALUE_FILES.to_vec()
    };
    let top = match write_all_atomically(dir, &compiled.files, &private) {
        Ok(top) => top,
        Err(e) => {
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
    };
    for w in top.warnings() {
        let _ = writeln!(err, "warning: the seal's directory: {w}");
    }
    // Through the directory written (not its path again, which another
    // user could have pointed elsewhere meanwhile).
    let mut removed = Vec::new();
    for name in &stale {
        let path = dir.join(name);
        match top.remove_below(name) {
            Ok(()) => removed.push(*name),
            Err(e) => {
                let _ = writeln!(
                    err,
                    "warning: cannot remove {}, which is not part of this seal: {e}",
                    quote(&path.display().to_string())
                );
            }
        }
    }
    if quiet {
        return OK;
    }
    let written = differing.len();
    for (name, bytes) in &compiled.files {
        let state = if differing.iter().any(|(n, _, _)| n == name) {
            "wrote"
        } else {
            "unchanged"
        };
        let _ = writeln!(
            out,
            "{state:<10}{}  {}",
            crate::digest::sha256(bytes),
            dir.join(name).display()
        );
    }
    for name in &removed {
        let _ = writeln!(
            out,
            "{:<10}{}  (not part of this seal)",
            "removed",
            dir.join(name).display()
        );
    }
    let n = compiled.ir.asserts.len();
    let _ = writeln!(
        out,
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
    );
    OK
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
        shell_word(spec),
        target.as_str()
    )
}

/// One shell word for `s`: as it is when it needs no quoting, otherwise in
/// single quotes (a `'` inside written `'\''`).
pub(super) fn shell_word(s: &str) -> String {
    let plain = !s.is_empty()
        && s.chars()
            .all(|c| c.is_ascii_alphanumeric() || "@%+=:,./_-".contains(c));
    if plain {
        s.to_string()
    } else {
        format!("'{}'", s.replace('\'', "'\\''"))
    }
}

/// Write every file to a temp file beside its target, then rename each into
/// place, the record last. If any temp file cannot be written, every temp file
/// is removed and nothing is renamed. Everything goes through
/// [`crate::hostfs`]: directories reached without following a link, temp
/// files of random names, renames relative to the directory's descriptor.
/// The files named in `private` are made readable and writable by their
/// owner only (0600), also when their bytes are unchanged; the others 0644.
fn write_all_atomically(
    dir: &Path,
    files: &std::collections::BTreeMap<String, Vec<u8>>,
    private: &[&str],
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
        // On an error, what is staged so far is removed as it drops.
        staged.push(d.stage(file.as_ref(), bytes, mode)?);
    }
    for s in staged {
        s.commit()?;
    }
    Ok(top)
}

/// An output that is there already, read without following a link (on the
/// way to it either) and never more than any seal holds (`Ok(None)`: not
/// there).
fn read_output(dir: &Path, name: &str) -> std::io::Result<Option<Vec<u8>>> {
    match crate::hostfs::Dir::open(dir) {
        Ok(d) => d.read_below(name, crate::hostfs::MAX_RECORD),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(None),
        Err(e) => Err(e),
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
