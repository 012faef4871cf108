//! The command line parsed, the named command's arguments built alone.
//!
//! clap's derive builds every command's arguments, with their help, before
//! it parses one: about 0.3 ms of a 3.7 ms `sealc compile`, and paid again
//! by each `__init` and `__confine` a run starts inside its sandbox. So
//! the command named is built on its own first ([`quick`]). Whatever that
//! does not parse cleanly (`--help`, `--version`, an error, a command it
//! does not know) is parsed again by the whole tree ([`Cli`]), so what is
//! printed then is exactly what the whole tree prints; and a test holds the
//! quick parse, wherever it succeeds, to the whole tree's result.

use std::ffi::OsString;

use clap::{Args as _, FromArgMatches as _, Parser as _};

use super::{Cli, Globals};

/// The command line as the whole tree reads it.
pub(super) fn parse(args: Vec<OsString>) -> Result<Cli, clap::Error> {
    match quick(&args) {
        Some(cli) => Ok(cli),
        None => Cli::try_parse_from(args),
    }
}

/// How a command's arguments are added to it.
type Build = fn(clap::Command) -> clap::Command;

/// Each command's name and how its arguments are built.
const COMMANDS: &[(&str, Build)] = &[
    ("compile", super::compile::Args::augment_args),
    ("verify", super::verify::Args::augment_args),
    ("sign", super::sign::Args::augment_args),
    ("verify-run", super::verify_run::Args::augment_args),
    ("exec", super::exec::Args::augment_args),
    ("__init", super::inside::InitArgs::augment_args),
    ("__confine", super::inside::ConfineArgs::augment_args),
    ("__probe", super::inside::ProbeArgs::augment_args),
    ("__mcp", super::inside::McpArgs::augment_args),
    ("doctor", super::doctor::Args::augment_args),
    ("lint", super::lint::Args::augment_args),
    ("explain", super::explain::Args::augment_args),
    ("schema", super::schema::Args::augment_args),
    ("show", super::show::Args::augment_args),
    ("diff", super::diff::Args::augment_args),
    ("init", super::init::Args::augment_args),
    ("completions", super::completions::Args::augment_args),
    ("man", super::man::Args::augment_args),
];

/// The command line parsed with only the named command built, or `None`
/// when that cannot say (see the module's comment).
fn quick(args: &[OsString]) -> Option<Cli> {
    let name = named(args)?;
    let (name, build) = COMMANDS.iter().find(|(n, _)| *n == name)?;
    let root = Globals::augment_args(clap::Command::new("sealc"))
        .subcommand(build(clap::Command::new(*name)))
        .subcommand_required(true);
    let mut matches = root.try_get_matches_from(args).ok()?;
    Cli::from_arg_matches_mut(&mut matches).ok()
}

/// The command's name: the first argument after the program's that is not
/// one of the options every command takes (`-q`, `--quiet`, `--color WHEN`,
/// `--color=WHEN`); `None` when an argument before it is anything else.
fn named(args: &[OsString]) -> Option<&str> {
    let mut rest = args.iter().skip(1);
    while let Some(a) = rest.next() {
        let a = a.to_str()?;
        match a {
            "-q" | "--quiet" => {}
            "--color" => {
                rest.next()?;
            }
            _ if a.starts_with("--color=") => {}
            _ if a.starts_with('-') => return None,
            _ => return Some(a),
        }
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;
    use clap::CommandFactory as _;
    use proptest::prelude::*;

    fn argv(words: &[&str]) -> Vec<OsString> {
        std::iter::once("sealc")
            .chain(words.iter().copied())
            .map(OsString::from)
            .collect()
    }

    /// The whole tree's parse, `Debug`-printed (errors by their kind).
    fn whole(args: &[OsString]) -> Result<String, clap::error::ErrorKind> {
        Cli::try_parse_from(args)
            .map(|c| format!("{c:?}"))
            .map_err(|e| e.kind())
    }

    #[test]
    fn every_command_of_the_tree_is_built_quickly_by_its_own_name() {
        let tree: Vec<String> = Cli::command()
            .get_subcommands()
            .map(|c| c.get_name().to_string())
            .collect();
        let quick: Vec<String> = COMMANDS.iter().map(|(n, _)| n.to_string()).collect();
        assert_eq!(tree, quick);
    }

    #[test]
    fn the_quick_parse_is_the_whole_trees_and_help_and_errors_are_left_to_it() {
        for words in [
            &["compile", "specs/minimal.toml"][..],
            &[
                "-q", "compile", "s.toml", "--out", "o", "--force", "--var", "a=b",
            ],
            &["--color", "never", "verify", "seal/seal.json", "--live"],
            &["--color=always", "lint", "s.toml", "--format", "json", "-q"],
            &[
                "exec",
                "seal/seal.json",
                "--report",
                "r.json",
                "--",
                "/bin/sh",
                "-c",
                "echo hi",
            ],
            &["exec", "--walk-limit", "50", "seal/seal.json", "--", "true"],
            &[
                "explain",
                "seal/seal.sb",
                "/etc/passwd",
                "--op",
                "file-read-data",
            ],
            &["init"],
            &["show", "seal/seal.json"],
            &["schema"],
        ] {
            let args = argv(words);
            let q = quick(&args).map(|c| format!("{c:?}"));
            assert!(q.is_some(), "{words:?} is not parsed quickly");
            assert_eq!(q.ok_or(()), whole(&args).map_err(|_| ()), "{words:?}");
        }
        for words in [
            &["--version"][..],
            &["--help"],
            &["compile", "--help"],
            &["compile"],
            &["compile", "--bogus", "s.toml"],
            &["help", "compile"],
            &["nosuch"],
            &["--color", "sometimes", "compile", "s.toml"],
            &[],
        ] {
            assert!(quick(&argv(words)).is_none(), "{words:?}");
        }
    }

    /// A word of a command line: a command's name, an option some command
    /// takes, a value, or `--`.
    fn word() -> impl Strategy<Value = String> {
        prop_oneof![
            proptest::sample::select(COMMANDS.iter().map(|(n, _)| *n).collect::<Vec<_>>())
                .prop_map(str::to_string),
            proptest::sample::select(vec![
                "-q",
                "--quiet",
                "--color",
                "--color=never",
                "never",
                "--out",
                "--force",
                "--var",
                "a=b",
                "--platform",
                "linux",
                "macos",
                "both",
                "--format",
                "json",
                "--check",
                "--live",
                "--report",
                "--walk-limit",
                "7",
                "--",
                "-h",
                "--help",
                "--version",
                "--expect",
                "s.toml",
                "seal.json",
                "read",
                "/etc",
                "--user",
                "nobody",
                "--dry-run",
                "-",
                "",
                // The hidden commands run inside the sandbox, and odd spellings.
                "--env-fd",
                "3",
                "--status-fd",
                "--listen",
                "127.0.0.1:8080",
                "--socket",
                "/b/s",
                "--offline",
                "--tcp-any",
                "--tcp-port",
                "--write",
                "--limit",
                "memory=1024",
                "-V",
                "--color=always",
                "-qq",
                "--quiet=true",
                "help",
                "-D",
                "--artifacts",
            ])
            .prop_map(str::to_string),
        ]
    }

    proptest! {
        /// Wherever the quick parse gives a result, the whole tree gives
        /// the same one.
        #[test]
        fn a_quick_parse_never_differs_from_the_whole_tree(
            before in proptest::collection::vec(word(), 0..3),
            name in proptest::sample::select(COMMANDS.iter().map(|(n, _)| *n).collect::<Vec<_>>()),
            after in proptest::collection::vec(word(), 0..7),
        ) {
            let words: Vec<&str> = before
                .iter()
                .map(String::as_str)
                .chain(std::iter::once(name))
                .chain(after.iter().map(String::as_str))
                .collect();
            let args = argv(&words);
            if let Some(q) = quick(&args) {
                prop_assert_eq!(Ok(format!("{q:?}")), whole(&args));
            }
        }
    }

    /// The property above is not vacuous: of such command lines, many
    /// parse quickly.
    #[test]
    fn many_generated_command_lines_parse_quickly() {
        use proptest::strategy::ValueTree as _;
        let mut runner = proptest::test_runner::TestRunner::deterministic();
        let lines = (
            proptest::collection::vec(word(), 0..3),
            proptest::sample::select(COMMANDS.iter().map(|(n, _)| *n).collect::<Vec<_>>()),
            proptest::collection::vec(word(), 0..7),
        );
        let mut quick_ones = 0;
        for _ in 0..500 {
            let (before, name, after) = lines.new_tree(&mut runner).unwrap().current();
            let words: Vec<&str> = before
                .iter()
                .map(String::as_str)
                .chain(std::iter::once(name))
                .chain(after.iter().map(String::as_str))
                .collect();
            quick_ones += usize::from(quick(&argv(&words)).is_some());
        }
        assert!(quick_ones >= 50, "only {quick_ones} of 500 parsed quickly");
    }
}
