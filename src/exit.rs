//! Every exit status sealc gives, defined once: the code that returns a
//! status names it from here, and each command's `--help` (and so
//! `docs/commands.md`; `docs/exit-codes.md` is tested against [`EXEC`])
//! lists its own from its table here.

/// Success.
pub const OK: i32 = 0;
/// A difference: what is on disk differs from what sealc would write, drift
/// (the record, its artifacts or the host), or `--expect` names another
/// seal; nothing was written or started.
pub const DIFFERS: i32 = 1;
/// Bad input: nothing was written or started.
pub const BAD_INPUT: i32 = 2;
/// `explain`: the answer is ambiguous or undetermined.
pub const UNDECIDED: i32 = 3;
/// sealc stopped the run at the memory limit.
pub const MEMORY_LIMIT: i32 = 120;
/// sealc stopped the run at the output limit.
pub const OUTPUT_LIMIT: i32 = 121;
/// The sandbox could not be started (or its layers could not be applied):
/// nothing of the command ran.
pub const SANDBOX_FAILED: i32 = 122;
/// The recorded timeout ran out (as `timeout(1)`).
pub const TIMED_OUT: i32 = 124;
/// The command ran, but the Codex config in the seal's `CODEX_HOME` drifted
/// during the run.
pub const CODEX_CONFIG_DRIFT: i32 = 123;
/// `sealc exec` itself refused or failed, as GNU `timeout` and `docker run`
/// use 125: drift, `--expect` naming another seal, or bad input (nothing
/// of the command ran), or the report of a run that succeeded could not be
/// written. Never 1 or 2, which commands give.
pub const REFUSED: i32 = 125;
/// The sandbox was built and the command is there but could not be
/// executed (as a shell's 126).
pub const CANNOT_EXECUTE: i32 = 126;
/// The sandbox was built but the command is not in it (as a shell's 127).
pub const CANNOT_START: i32 = 127;
/// A command killed at the CPU limit (128 + `SIGXCPU`).
pub const CPU_LIMIT: i32 = 128 + 24;
/// A command killed at the file size limit (128 + `SIGXFSZ`).
pub const FILE_SIZE_LIMIT: i32 = 128 + 25;

/// `sealc exec`'s own statuses, each with what `--help` says of it (besides
/// the command's own status, which it passes through).
pub const EXEC: &[(i32, &str)] = &[
    (MEMORY_LIMIT, "the memory limit was reached"),
    (OUTPUT_LIMIT, "the output limit"),
    (
        SANDBOX_FAILED,
        "the sandbox (or one of its layers) could not be built; nothing ran",
    ),
    (
        CODEX_CONFIG_DRIFT,
        "the command ran, but the Codex config in CODEX_HOME changed",
    ),
    (TIMED_OUT, "the wall-clock limit"),
    (
        REFUSED,
        "sealc refused, nothing of the command ran: drift (the record, its artifacts or the host differ, or a Codex home an earlier run left is there: --force discards it), --expect names another seal, the seal is not signed by a key --allowed-signers trusts, or bad input (an unreadable record, a seal for the other platform, stdio, --user, a missing secret, a --report path that cannot be written, the command line itself); or the report of a run could not be written. --report's phase and message say which",
    ),
    (
        CANNOT_EXECUTE,
        "the command is in the sandbox but could not be executed",
    ),
    (CANNOT_START, "the command is not in the sandbox"),
    (CPU_LIMIT, "the CPU limit (SIGXCPU)"),
    (
        FILE_SIZE_LIMIT,
        "the file-size limit (SIGXFSZ); a SIGXCPU or SIGXFSZ that no limit of the seal sent is 128+S as well, and --report says `signaled`",
    ),
];

/// The "Exit codes:" section of a command's help from its table: a line
/// for the command's own status first (`own`, if any), then each code with
/// its meaning, wrapped under it.
pub fn help_section(own: Option<&str>, table: &[(i32, &str)], footer: &str) -> String {
    let mut out = String::from("Exit codes:\n");
    // The codes in a column as wide as the widest, two spaces after it.
    let width = table
        .iter()
        .map(|(c, _)| c.to_string().len())
        .max()
        .unwrap_or(1);
    let mut line = |code: &str, meaning: &str| {
        let mut cur = format!("  {code:<width$}  ");
        let indent = cur.len();
        for word in meaning.split(' ') {
            if cur.len() + word.len() > 74 && cur.len() > indent {
                out.push_str(cur.trim_end());
                out.push('\n');
                cur = " ".repeat(indent);
            }
            cur.push_str(word);
            cur.push(' ');
        }
        out.push_str(cur.trim_end());
        out.push('\n');
    };
    if let Some(own) = own {
        line("N", own);
    }
    for (code, meaning) in table {
        line(&code.to_string(), meaning);
    }
    out.push_str(footer);
    out
}

/// `sealc compile`'s statuses.
pub const COMPILE: &[(i32, &str)] = &[
    (OK, "written (or, with --check, what is on disk is what would be written)"),
    (DIFFERS, "what is on disk differs: --check found a file that differs, is missing or is stale (the other platform's), or an existing output differs and --force was not given; nothing written"),
    (BAD_INPUT, "bad input: the spec, a --var, a flag, or a file that cannot be read or written; nothing written"),
];

/// `sealc verify`'s statuses.
pub const VERIFY: &[(i32, &str)] = &[
    (OK, "verified"),
    (DIFFERS, "drift: an artifact, the binding, an invariant, the sealc version, the --expect binding, a --live fact or the --codex-config differs, or the signature does not hold (missing, changed bytes, an unknown key, another namespace, outside the key's validity window)"),
    (BAD_INPUT, "unusable input: the record cannot be read or is not a canonical record, or the --allowed-signers file cannot be read"),
];

/// `sealc sign`'s statuses.
pub const SIGN: &[(i32, &str)] = &[
    (OK, "signed: the signature was written"),
    (DIFFERS, "the record does not verify (drift), so it was not signed"),
    (BAD_INPUT, "bad input: the record, the key (unreadable, encrypted, readable by others) or the signature's path"),
];

/// `sealc verify-run`'s statuses.
pub const VERIFY_RUN: &[(i32, &str)] = &[
    (OK, "the attestation holds: signed by a trusted key, for the expected seal, every subject's digest, the record verifies"),
    (DIFFERS, "something does not hold: the signature (a changed envelope, an unknown or untrusted key), the --expect binding, a subject (missing, another digest), or the record (another digest, or it does not verify)"),
    (BAD_INPUT, "bad input: the attestation or the allowed signers cannot be read"),
];

/// `sealc lint`'s statuses.
pub const LINT: &[(i32, &str)] = &[
    (OK, "no error (warnings and advice do not fail)"),
    (DIFFERS, "the spec has errors"),
    (BAD_INPUT, "bad input: the spec cannot be read, or a flag"),
];

/// `sealc explain`'s statuses.
pub const EXPLAIN: &[(i32, &str)] = &[
    (OK, "decided: allowed or denied (the answer is printed)"),
    (
        BAD_INPUT,
        "bad input: the profile, the record, the operation or a path",
    ),
    (UNDECIDED, "ambiguous or undetermined"),
];

/// `sealc show`'s statuses.
pub const SHOW: &[(i32, &str)] = &[
    (OK, "shown, and the record verifies"),
    (DIFFERS, "shown, but the record does not verify (the problems head the output)"),
    (BAD_INPUT, "bad input: the record cannot be read, is not a record, or its spec does not compile with this sealc"),
];

/// `sealc doctor`'s statuses.
pub const DOCTOR: &[(i32, &str)] = &[
    (OK, "a seal in the default mode (namespaces) can run here"),
    (
        BAD_INPUT,
        "bad input: an unknown `--user`, or `--user` from a caller other than root",
    ),
    (
        SANDBOX_FAILED,
        "it cannot: the first missing layer and its fix are printed",
    ),
];

/// `sealc diff`'s statuses.
pub const DIFF: &[(i32, &str)] = &[
    (OK, "the two seals allow the same"),
    (DIFFERS, "they differ (each change is listed)"),
    (BAD_INPUT, "bad input: a record cannot be read, is not a record, or its spec does not compile with this sealc"),
];

/// `sealc init`'s statuses.
pub const INIT: &[(i32, &str)] = &[
    (
        OK,
        "the spec was written (or the file already holds exactly this spec)",
    ),
    (
        DIFFERS,
        "the file exists and differs; nothing written (pass --force to replace it)",
    ),
    (
        BAD_INPUT,
        "bad input: a flag, or a file that cannot be written",
    ),
];

/// `sealc schema`'s statuses.
pub const SCHEMA: &[(i32, &str)] = &[
    (OK, "the schema was printed"),
    (BAD_INPUT, "bad input: an unknown schema name"),
];

/// `sealc completions`'s statuses.
pub const COMPLETIONS: &[(i32, &str)] = &[
    (OK, "the script was written to stdout"),
    (
        BAD_INPUT,
        "bad input: an unknown shell, or stdout cannot be written",
    ),
];

/// `sealc man`'s statuses.
pub const MAN: &[(i32, &str)] = &[
    (OK, "the page was written to stdout, or every page to --dir"),
    (
        BAD_INPUT,
        "bad input: an unknown command, or a page that cannot be written",
    ),
];

/// `sealc` itself (its `--help`): what the codes mean across commands.
pub const SEALC: &[(i32, &str)] = &[
    (OK, "ok"),
    (
        DIFFERS,
        "what is on disk differs, drift, or a spec with errors (lint)",
    ),
    (
        BAD_INPUT,
        "bad input: a flag, a spec, a record, a file that cannot be read or written",
    ),
];

#[cfg(test)]
mod tests {
    use super::*;

    /// Each status `sealc exec` can give of its own is in its table once,
    /// in order, and none is a status a shell or `timeout(1)` gives for
    /// something else than its meaning here.
    #[test]
    fn the_exec_table_holds_every_status_of_a_run_once() {
        let codes: Vec<i32> = EXEC.iter().map(|(c, _)| *c).collect();
        let mut sorted = codes.clone();
        sorted.sort_unstable();
        sorted.dedup();
        assert_eq!(codes, sorted);
        for c in [
            REFUSED,
            MEMORY_LIMIT,
            OUTPUT_LIMIT,
            SANDBOX_FAILED,
            TIMED_OUT,
            CODEX_CONFIG_DRIFT,
            CANNOT_EXECUTE,
            CANNOT_START,
            CPU_LIMIT,
            FILE_SIZE_LIMIT,
        ] {
            assert!(codes.contains(&c), "{c} is not in `sealc exec --help`");
        }
        // Nothing of sealc's own looks like a command's usual statuses.
        for c in [OK, DIFFERS, BAD_INPUT, UNDECIDED] {
            assert!(
                !codes.contains(&c),
                "{c} is sealc's own in `sealc exec --help`"
            );
        }
    }

    #[test]
    fn the_help_section_wraps_under_its_meaning() {
        let text = help_section(Some("own"), EXEC, "");
        assert!(text.starts_with("Exit codes:\n  N    own\n  120  the memory"));
        assert!(text.lines().all(|l| l.len() <= 76), "{text}");
        assert!(text.contains("\n  153  the file-size limit"));
    }
}
