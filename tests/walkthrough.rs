//! Findings of a new user's walkthrough of compile and exec: each message
//! says what happened and what to run next, and the command it names does
//! what it says.

mod common;

use common::*;

/// Rendered diagnostics with their line wrapping undone, so a test can look
/// for a phrase wherever the renderer broke the line.
fn flat(s: &str) -> String {
    s.lines()
        .map(|l| {
            let l = l.trim();
            l.strip_prefix("│").map_or(l, str::trim)
        })
        .collect::<Vec<_>>()
        .join(" ")
}

/// A Linux seal whose bubblewrap is not on this host: compile warns (and
/// says how to get it), and `sealc exec` says the same when it cannot start
/// it. No write root, so nothing is prepared before the start fails.
#[cfg(target_os = "linux")]
#[test]
fn a_missing_bubblewrap_is_told_at_compile_and_at_exec() {
    let spec = "version = 1\nname = \"nb\"\n[target]\nplatform = \"linux\"\n[exec]\nbwrap = \"/nonexistent/sealc-test/bwrap\"\n";
    let out = Sealc::new()
        .file("s.toml", spec)
        .args(["compile", "s.toml"])
        .run();
    assert_eq!(out.code, 0, "{}", out.stderr);
    let said = flat(&out.stderr);
    for phrase in [
        "sealc::exec::no-bwrap",
        "`sealc exec` cannot run this seal here",
        "apt-get install bubblewrap",
        "then compile again",
    ] {
        assert!(said.contains(phrase), "{phrase}: {said}");
    }

    let out = Sealc::new()
        .in_dir(out.dir)
        .args(["exec", "seal/seal.json", "--", "/bin/true"])
        .run();
    assert_eq!(out.code, 122, "{}", out.stderr);
    assert!(
        out.stderr
            .contains("error: cannot start `/nonexistent/sealc-test/bwrap`"),
        "{}",
        out.stderr
    );
    let help = out
        .stderr
        .lines()
        .find(|l| l.starts_with("help: "))
        .unwrap_or_else(|| panic!("no help line:\n{}", out.stderr));
    assert!(help.contains("apt-get install bubblewrap"), "{help}");
    assert!(help.contains("`[exec] bwrap`"), "{help}");
    assert!(help.contains("compile the seal again"), "{help}");
}

/// Where bubblewrap is, or for a macOS seal, compile says nothing of it.
#[test]
fn a_present_bubblewrap_or_a_macos_seal_gets_no_warning() {
    let dir = tempfile::tempdir().unwrap();
    let bwrap = dir.path().join("bwrap");
    std::fs::write(&bwrap, "stand-in bwrap").unwrap();
    for (platform, program) in [
        ("linux", bwrap.display().to_string()),
        ("macos", "/nonexistent/sealc-test/bwrap".to_string()),
    ] {
        let spec = format!(
            "version = 1\nname = \"nb\"\n[target]\nplatform = {platform:?}\n[exec]\nbwrap = {program:?}\n"
        );
        let out = Sealc::new()
            .file("s.toml", spec)
            .args(["compile", "s.toml"])
            .run();
        assert_eq!(out.code, 0, "{}", out.stderr);
        assert!(
            !out.stderr.contains("sealc::exec::no-bwrap"),
            "{platform}: {}",
            out.stderr
        );
    }
}

/// The warning is the host's: the same spec on an in-memory host that plays
/// Linux is warned about, on one that plays no platform it is not, and
/// neither the artifacts nor the record differ.
#[test]
fn the_missing_bubblewrap_warning_depends_on_the_host_only() {
    use sealc::facts::FakeHost;
    use sealc::spec::Platform;
    let spec = "version = 1\nname = \"nb\"\n[target]\nplatform = \"linux\"\n";
    let linux = sealc::compile(
        "s.toml",
        spec,
        &Vec::new(),
        &FakeHost::new().running(Platform::Linux),
    )
    .unwrap();
    let none = sealc::compile("s.toml", spec, &Vec::new(), &FakeHost::new()).unwrap();
    let codes = |c: &sealc::Compiled| c.warnings.0.iter().map(|d| d.code).collect::<Vec<_>>();
    assert!(
        codes(&linux).contains(&"sealc::exec::no-bwrap"),
        "{:?}",
        codes(&linux)
    );
    assert!(
        !codes(&none).contains(&"sealc::exec::no-bwrap"),
        "{:?}",
        codes(&none)
    );
    let bwrap = FakeHost::new()
        .running(Platform::Linux)
        .file("/usr/bin/bwrap", b"bwrap");
    let present = sealc::compile("s.toml", spec, &Vec::new(), &bwrap).unwrap();
    assert!(
        !codes(&present).contains(&"sealc::exec::no-bwrap"),
        "{:?}",
        codes(&present)
    );
    assert_eq!(linux.files, none.files);
}

/// Compile's one line of advice names a command, and that command shows
/// exactly as many advice as the line counts: `sealc lint` for the target
/// the seal was compiled for (platform differences included). Advice that
/// only this host's var values give (lint reads no host) is shown in full.
#[test]
fn the_advice_note_counts_what_its_lint_command_shows() {
    let spec = std::fs::read_to_string(root().join("specs/probe-rep.toml")).unwrap();
    let home = root().join("tests/fixtures/demo-home");
    for platform in ["linux", "macos"] {
        let out = Sealc::new()
            .file("probe.toml", spec.as_str())
            .args(["compile", "probe.toml", "--platform", platform])
            .args(["--var", &format!("home={}", home.display())])
            .args(["--var", &format!("checkout={}", root().display())])
            .args(["--var", "run=/tmp/sealc-walkthrough-run"])
            .args(["--var", "proxy_port=8080"])
            .run();
        assert_eq!(out.code, 0, "{}", out.stderr);
        let note = out
            .stderr
            .lines()
            .find(|l| l.starts_with("note: "))
            .unwrap_or_else(|| panic!("no note:\n{}", out.stderr));
        let counted: usize = note
            .strip_prefix("note: ")
            .and_then(|n| n.split(' ').next())
            .and_then(|n| n.parse().ok())
            .unwrap_or_else(|| panic!("{note}"));
        let command = note
            .split('`')
            .nth(1)
            .unwrap_or_else(|| panic!("no command in {note}"));
        assert_eq!(
            command,
            format!("sealc lint probe.toml --platform {platform}"),
            "{note}"
        );
        let args: Vec<&str> = command.split(' ').skip(1).collect();
        let lint = Sealc::new().in_dir(out.dir).args(args).run();
        assert_eq!(lint.code, 0, "{}", lint.stderr);
        let summary = lint.stdout.lines().last().unwrap_or_default().to_string();
        assert!(
            summary.ends_with(&format!(", {counted} advice")),
            "{platform}: the note counts {counted}, `{command}` says {summary:?}"
        );
        // This host's values put `${home}` inside `${checkout}`: lint cannot
        // know, so compile shows that advice itself.
        assert!(
            flat(&out.stderr).contains("`${home}` lies inside `${checkout}`"),
            "{}",
            out.stderr
        );
        assert!(!lint.stdout.contains("`${home}` lies inside `${checkout}`"));
    }
}

/// Host drift: the help is the whole command that compiles the seal again
/// over the drifted one (`--force`, the recorded platform and var values),
/// and how to review the change with `sealc diff` first. Each command it
/// names does what it says.
#[test]
fn drift_help_gives_commands_that_work() {
    let spec = "version = 1\nname = \"d\"\n[target]\nplatform = \"linux\"\n[vars]\nws = { required = true }\ncache = { required = true }\n[filesystem]\ndeny_read = [\"${cache}\"]\nwrite = [\"${ws}\"]\n";
    let out = Sealc::new()
        .file("d.toml", spec)
        .file("ws/.keep", "")
        .args([
            "compile",
            "d.toml",
            "--var",
            "ws=ws",
            "--var",
            "cache=cache",
            "--platform",
            "linux",
        ])
        .run();
    assert_eq!(out.code, 0, "{}", out.stderr);
    // The denied root (outside the write root) appears after compiling:
    // the host drifted.
    std::fs::create_dir(out.path("cache")).unwrap();
    let exec = |dir| {
        Sealc::new()
            .in_dir(dir)
            .args(["exec", "seal/seal.json", "--dry-run", "--", "/bin/true"])
            .run()
    };
    let drifted = exec(out.dir);
    assert_eq!(drifted.code, 125, "{}", drifted.stderr);
    let helps: Vec<&str> = drifted
        .stderr
        .lines()
        .filter_map(|l| l.strip_prefix("help: "))
        .collect();
    assert_eq!(helps.len(), 2, "{}", drifted.stderr);
    let command = |line: &str, after: &str| -> Vec<String> {
        let tail = &line[line
            .find(after)
            .unwrap_or_else(|| panic!("{after} in {line}"))..];
        let cmd = tail.split('`').nth(1).unwrap().to_string();
        assert!(!cmd.contains('\''), "plain words expected: {cmd}");
        cmd.split(' ').skip(1).map(str::to_string).collect()
    };
    let recompile = command(helps[0], "compiled from): ");
    assert_eq!(&recompile[..2], ["compile", "d.toml"], "{recompile:?}");
    assert!(recompile.contains(&"--force".to_string()), "{recompile:?}");
    assert!(
        recompile.windows(2).any(|w| w == ["--platform", "linux"]),
        "{recompile:?}"
    );
    let ws = drifted.dir.path().canonicalize().unwrap().join("ws");
    assert!(
        recompile.contains(&format!("ws={}", ws.display())),
        "{recompile:?}"
    );
    assert!(helps[1].contains("sealc diff "), "{}", helps[1]);

    // The review first: compile into the new directory, without `--force`,
    // and compare.
    let new_dir = helps[1]
        .split("(`--out ")
        .nth(1)
        .and_then(|t| t.split('`').next())
        .unwrap_or_else(|| panic!("no new directory in {}", helps[1]))
        .to_string();
    let mut into_new: Vec<String> = recompile
        .iter()
        .filter(|w| *w != "--force")
        .cloned()
        .collect();
    let at = into_new.iter().position(|w| w == "--out").unwrap();
    into_new[at + 1] = new_dir;
    let review = Sealc::new().in_dir(drifted.dir).args(&into_new).run();
    assert_eq!(review.code, 0, "{}", review.stderr);
    let diff = command(helps[1], "and run ");
    let diffed = Sealc::new().in_dir(review.dir).args(&diff).run();
    assert!(
        diffed.code == 0 || diffed.code == 1,
        "{diff:?}: {}",
        diffed.stderr
    );

    // Then over the drifted seal: it compiles (no "exists and differs"),
    // and the seal runs again.
    let again = Sealc::new().in_dir(diffed.dir).args(&recompile).run();
    assert_eq!(again.code, 0, "{}", again.stderr);
    let ok = exec(again.dir);
    assert_eq!(ok.code, 0, "{}", ok.stderr);
}

/// Issue 22, finding 3: a denied root inside the write root that appeared
/// since compiling (a run may have made it, with links to what the host
/// writes there later) is never answered with "compile again", even when
/// another drift, which alone would be, comes with it.
#[test]
fn an_appeared_denied_root_in_a_write_root_is_never_recompiled() {
    let spec = "version = 1\nname = \"d\"\n[target]\nplatform = \"linux\"\n[vars]\nws = { required = true }\ncache = { required = true }\n[filesystem]\ndeny_read = [\"${ws}/grader\", \"${cache}\"]\nwrite = [\"${ws}\"]\n";
    let out = Sealc::new()
        .file("d.toml", spec)
        .file("ws/.keep", "")
        .args([
            "compile",
            "d.toml",
            "--var",
            "ws=ws",
            "--var",
            "cache=cache",
            "--platform",
            "linux",
        ])
        .run();
    assert_eq!(out.code, 0, "{}", out.stderr);
    let said = flat(&out.stderr);
    assert!(
        said.contains("not hidden while it is absent"),
        "compile does not say an absent denied root in a write root is not hidden: {said}"
    );
    std::fs::create_dir(out.path("ws/grader")).unwrap();
    std::fs::write(out.path("ws/grader/answer"), "").unwrap();
    std::fs::hard_link(out.path("ws/grader/answer"), out.path("ws/.peek")).unwrap();
    std::fs::create_dir(out.path("cache")).unwrap();
    let drifted = Sealc::new()
        .in_dir(out.dir)
        .args(["exec", "seal/seal.json", "--dry-run", "--", "/bin/true"])
        .run();
    assert_eq!(drifted.code, 125, "{}", drifted.stderr);
    let err = &drifted.stderr;
    assert!(err.contains("exists now"), "{err}");
    assert!(err.contains("/ws/.peek`"), "{err}");
    assert!(err.contains("compiled as absent, now"), "{err}");
    let helps: Vec<&str> = err
        .lines()
        .filter_map(|l| l.strip_prefix("help: "))
        .collect();
    assert_eq!(helps.len(), 2, "{err}");
    for h in &helps {
        assert!(h.starts_with("keep this record"), "{h}");
        assert!(
            !h.contains("compile again") && !h.contains("sealc compile"),
            "{h}"
        );
    }
    assert!(helps[0].contains("start from a fresh write root"), "{err}");
    assert!(helps[1].contains("remove the links named above"), "{err}");
}

/// A secret-looking `pass` name: compile says its value *is* recorded, and
/// where, and writes those files readable by their owner only; lint still
/// says it *would be*. Without a recorded value the seal's files keep the
/// ordinary mode, as reviewers read them.
#[test]
fn a_recorded_secret_looking_pass_is_said_so_and_written_0600() {
    use std::os::unix::fs::PermissionsExt;
    const SPEC: &str = "version = 1\nname = \"sp\"\n[target]\nplatform = \"linux\"\n[env]\npass = [\"GITHUB_TOKEN\"]\n";
    let mode = |out: &Out, f: &str| {
        std::fs::metadata(out.path("seal").join(f))
            .unwrap()
            .permissions()
            .mode()
            & 0o777
    };
    let out = Sealc::new()
        .file("s.toml", SPEC)
        .env("GITHUB_TOKEN", "ghp_walkthrough")
        .args(["compile", "s.toml"])
        .run();
    assert_eq!(out.code, 0, "{}", out.stderr);
    let said = flat(&out.stderr);
    assert!(
        said.contains("its value is recorded in env.json, seal.json and codex/config.toml, written readable by you only (mode 0600)"),
        "{said}"
    );
    assert!(!said.contains("would be written"), "{said}");
    for f in ["env.json", "seal.json", "codex/config.toml"] {
        assert_eq!(mode(&out, f), 0o600, "{f}");
        let text = std::fs::read_to_string(out.path("seal").join(f)).unwrap();
        assert!(text.contains("ghp_walkthrough"), "{f} records the value");
    }
    let lint = Sealc::new().in_dir(out.dir).args(["lint", "s.toml"]).run();
    let linted = flat(&lint.stdout);
    assert!(linted.contains("its value would be written"), "{linted}");
    assert!(!linted.contains("is recorded in"), "{linted}");

    // Compiled again with the name unset: nothing recorded, the ordinary
    // mode again (the seal's other artifact's), and the warning says so.
    let again = Sealc::new()
        .in_dir(lint.dir)
        .args(["compile", "s.toml", "--force"])
        .run();
    assert_eq!(again.code, 0, "{}", again.stderr);
    let said = flat(&again.stderr);
    assert!(
        said.contains("not set while compiling, so nothing was recorded"),
        "{said}"
    );
    let ordinary = mode(&again, "seal.bwrap.json");
    for f in ["env.json", "seal.json", "codex/config.toml"] {
        assert_eq!(mode(&again, f), ordinary, "{f}");
    }
}

const LAUNCHED: &str = "version = 1\nname = \"l\"\n[vars]\ncodex = { required = true, help = \"the Codex binary\" }\n[launcher]\npath = \"${codex}\"\n";

/// `--var codex="$(command -v codex)"` without Codex installed: the flag is
/// `--var codex=`. The help says the value is empty and why it may be, not
/// "pass a directory", and `${codex}` is not also called undeclared.
#[test]
fn an_empty_var_flag_says_so_and_nothing_else() {
    let out = Sealc::new()
        .file("s.toml", LAUNCHED)
        .args(["compile", "s.toml", "--var", "codex="])
        .run();
    assert_eq!(out.code, 2, "{}", out.stderr);
    let said = flat(&out.stderr);
    assert!(
        said.contains("`--var codex=` gives a path var an empty value"),
        "{said}"
    );
    assert!(said.contains("the value is empty"), "{said}");
    assert!(said.contains("is `codex` installed"), "{said}");
    assert!(!said.contains("directory"), "{said}");
    assert!(!said.contains("names no declared var"), "{said}");
    assert!(said.contains("1 problem found"), "{said}");

    // No flag at all: the missing value, and no knock-on either.
    let out = Sealc::new()
        .file("s.toml", LAUNCHED)
        .args(["compile", "s.toml"])
        .run();
    assert_eq!(out.code, 2, "{}", out.stderr);
    let said = flat(&out.stderr);
    assert!(said.contains("required var `codex` has no value"), "{said}");
    assert!(!said.contains("names no declared var"), "{said}");
    assert!(said.contains("1 problem found"), "{said}");

    // A reference to a var that really is not declared still is one.
    let out = Sealc::new()
        .file(
            "s.toml",
            LAUNCHED.replace("path = \"${codex}\"", "path = \"${codx}/x\""),
        )
        .args(["compile", "s.toml", "--var", "codex=/bin/sh"])
        .run();
    assert_eq!(out.code, 2, "{}", out.stderr);
    assert!(
        flat(&out.stderr).contains("`${codx}` names no declared var"),
        "{}",
        out.stderr
    );
}

/// `${HOME}` with no var for it: environment variables are not expanded;
/// the help declares a var that reads it, and following it compiles.
#[test]
fn an_environment_variable_reference_is_answered_with_a_var_that_reads_it() {
    const SPEC: &str = "version = 1\nname = \"h\"\n[filesystem]\ndeny_read = [\"${HOME}/.ssh\"]\n";
    for cmd in ["lint", "compile"] {
        let out = Sealc::new()
            .file("s.toml", SPEC)
            .args([cmd, "s.toml"])
            .run();
        assert_ne!(out.code, 0, "{cmd}: {}", out.stderr);
        let said = flat(&format!("{}{}", out.stdout, out.stderr));
        assert!(
            said.contains("environment variables are not expanded unless a var reads them"),
            "{cmd}: {said}"
        );
        assert!(
            said.contains("declare `[vars] home = { env = \"HOME\" }` and write `${home}`"),
            "{cmd}: {said}"
        );
        assert!(!said.contains("required = true"), "{cmd}: {said}");
    }
    let fixed = SPEC.replace("${HOME}", "${home}") + "[vars]\nhome = { env = \"HOME\" }\n";
    let out = Sealc::new()
        .file("s.toml", fixed)
        .args(["compile", "s.toml"])
        .run();
    assert_eq!(out.code, 0, "{}", out.stderr);
}
