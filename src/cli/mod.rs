//! The command line: the only module that prints. One file per command;
//! this one parses the arguments and hands each command its own.
//!
//! Exit codes: 0 ok; 1 what is on disk differs (`--check`, or an existing
//! output that would be replaced without `--force`); 2 bad input (the spec,
//! a flag, or a file that cannot be read or written).

use std::ffi::OsString;
use std::io::{IsTerminal, Write};
use std::sync::atomic::{AtomicBool, Ordering};

use clap::{Parser, Subcommand, ValueEnum};

mod compile;
mod completions;
mod diff;
mod doctor;
mod exec;
mod explain;
mod init;
mod inside;
mod lint;
mod man;
mod parse;
mod schema;
mod show;
mod sign;
mod verify;
mod verify_run;

pub use crate::exit::{BAD_INPUT, DIFFERS, OK, UNDECIDED};

/// `--help`'s closing sections: the exit codes from [`crate::exit::SEALC`].
fn after_help() -> String {
    crate::exit::help_section(
        None,
        crate::exit::SEALC,
        "  Each command's --help lists its own; `exec` passes its command's through.

Example (the seal goes outside the checkout, which the agent can write):
  sealc init && sealc lint seal.toml --platform both &&
    sealc compile seal.toml --var checkout=\"$PWD\" --out ~/.local/state/sealc/agent",
    )
}

#[derive(Parser, Debug)]
#[command(
    name = "sealc",
    version,
    about = "Compile seal specs to sandbox profiles, env allowlists and Codex configs",
    after_help = after_help()
)]
struct Cli {
    #[command(flatten)]
    globals: Globals,
    #[command(subcommand)]
    command: Command,
}

/// The options every command takes.
#[derive(clap::Args, Debug)]
struct Globals {
    /// Colour in diagnostics: `auto` (when stderr is a terminal and
    /// `NO_COLOR` is not set), `always` or `never`.
    #[arg(
        long,
        global = true,
        value_enum,
        default_value = "auto",
        value_name = "WHEN"
    )]
    color: ColorChoice,
    /// Print problems only: no list of files written, no summary.
    #[arg(long, short, global = true)]
    quiet: bool,
}

#[derive(Clone, Copy, Debug, ValueEnum)]
enum ColorChoice {
    Auto,
    Always,
    Never,
}

/// `--color` and `--quiet`, as given for this run.
static COLOR: AtomicBool = AtomicBool::new(false);
static QUIET: AtomicBool = AtomicBool::new(false);

/// Diagnostics in colour?
fn color() -> bool {
    COLOR.load(Ordering::Relaxed)
}

/// `--quiet`: problems only.
fn quiet() -> bool {
    QUIET.load(Ordering::Relaxed)
}

/// Diagnostics rendered as miette reports: without colour unless `--color`
/// (or a terminal) asks for it, at a fixed width, so output is stable.
fn render_diagnostics(diags: &crate::diag::Diagnostics, file: &str, src: &str) -> String {
    crate::diag::render_in(diags, file, src, color())
}

#[derive(Subcommand, Debug)]
enum Command {
    Compile(compile::Args),
    Verify(verify::Args),
    Sign(sign::Args),
    #[command(name = "verify-run")]
    VerifyRun(verify_run::Args),
    Exec(exec::Args),
    #[command(name = "__init", hide = true)]
    Init(inside::InitArgs),
    #[command(name = "__confine", hide = true)]
    Confine(inside::ConfineArgs),
    #[command(name = "__probe", hide = true)]
    Probe(inside::ProbeArgs),
    #[command(name = "__mcp", hide = true)]
    Mcp(inside::McpArgs),
    Doctor(doctor::Args),
    Lint(lint::Args),
    Explain(explain::Args),
    Schema(schema::Args),
    Show(show::Args),
    Diff(diff::Args),
    #[command(name = "init")]
    Starter(init::Args),
    Completions(completions::Args),
    Man(man::Args),
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

/// `RECORD [--artifacts DIR]`: a record and where its artifact files are,
/// for every command that reads a compiled seal back.
#[derive(clap::Args, Debug)]
struct SealArgs {
    /// The record (seal.json).
    record: std::path::PathBuf,
    /// Directory of the artifact files (default: the record's directory).
    #[arg(long, value_name = "DIR")]
    artifacts: Option<std::path::PathBuf>,
}

impl SealArgs {
    /// Where the artifact files are read from.
    fn artifact_dir(&self) -> std::path::PathBuf {
        match &self.artifacts {
            Some(d) => d.clone(),
            None => self
                .record
                .parent()
                .map(std::path::Path::to_path_buf)
                .unwrap_or_default(),
        }
    }

    /// An artifact file by its name in the record (only the names
    /// recompilation produces are ever asked for).
    /// Each read below the artifacts' directory (opened once): no link
    /// followed, a regular file only (never a fifo that would block), at
    /// most [`crate::hostfs::MAX_RECORD`] bytes.
    fn files(&self) -> impl Fn(&str) -> Option<Vec<u8>> {
        let dir = crate::hostfs::Dir::open(&self.artifact_dir()).ok();
        move |name: &str| {
            dir.as_ref()?
                .read_below(name, crate::hostfs::MAX_RECORD)
                .ok()
                .flatten()
        }
    }
}

/// Run with the process's arguments and streams.
pub fn main() -> i32 {
    let stdout = std::io::stdout();
    let stderr = std::io::stderr();
    run(std::env::args_os(), &mut stdout.lock(), &mut stderr.lock())
}

/// Whether the command line names `exec` as its command: its first word
/// that is neither a global flag nor `--color`'s value.
fn names_exec(args: &[OsString]) -> bool {
    let mut words = args.iter().skip(1);
    while let Some(w) = words.next() {
        if w == "--color" {
            words.next();
        } else if !w.to_string_lossy().starts_with('-') {
            return w == "exec";
        }
    }
    false
}

/// Run with the given arguments (the first is the program name).
pub fn run(
    args: impl IntoIterator<Item = OsString>,
    out: &mut dyn Write,
    err: &mut dyn Write,
) -> i32 {
    let args: Vec<OsString> = args.into_iter().collect();
    // `sealc exec`'s own failures are never a status a command gives
    // (`crate::exit::REFUSED`), its command line's included.
    let usage_error = if names_exec(&args) {
        crate::exit::REFUSED
    } else {
        BAD_INPUT
    };
    let cli = match parse::parse(args) {
        Ok(c) => c,
        Err(e) => {
            let code = if e.use_stderr() { usage_error } else { OK };
            let text = e.render().to_string();
            if e.use_stderr() {
                let _ = write!(err, "{text}");
            } else {
                let _ = write!(out, "{text}");
            }
            return code;
        }
    };
    let no_color = std::env::var_os("NO_COLOR").is_some_and(|v| !v.is_empty())
        || std::env::var_os("TERM").is_some_and(|t| t == "dumb");
    let color = match cli.globals.color {
        ColorChoice::Always => true,
        ColorChoice::Never => false,
        ColorChoice::Auto => !no_color && std::io::stderr().is_terminal(),
    };
    COLOR.store(color, Ordering::Relaxed);
    QUIET.store(cli.globals.quiet, Ordering::Relaxed);
    match cli.command {
        Command::Compile(a) => compile::run(a, out, err),
        Command::Verify(a) => verify::run(a, out, err),
        Command::Sign(a) => sign::run(a, out, err),
        Command::VerifyRun(a) => verify_run::run(a, out, err),
        Command::Exec(a) => exec::run(a, out, err),
        Command::Init(a) => inside::init(a, err),
        Command::Confine(a) => inside::confine(a, err),
        Command::Mcp(a) => inside::mcp(a, err),
        Command::Probe(_) => inside::probe(out, err),
        Command::Doctor(a) => doctor::run(a, out, err),
        Command::Lint(a) => lint::run(a, out, err),
        Command::Explain(a) => explain::run(a, out, err),
        Command::Schema(a) => schema::run(a, out, err),
        Command::Show(a) => show::run(a, out, err),
        Command::Diff(a) => diff::run(a, out, err),
        Command::Starter(a) => init::run(a, out, err),
        Command::Completions(a) => completions::run(a, out, err),
        Command::Man(a) => man::run(a, out, err),
    }
}

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
