//! A new user's first commands: `sealc init` writes a starter spec that
//! lints clean, compiles for both platforms and runs under `sealc exec`;
//! `sealc completions`, `sealc man`, and every command's `--help` (its exit
//! codes and an example).
//!
//! The exec tests need bubblewrap: without it they are ignored, unless
//! `SEALC_REQUIRE_BWRAP=1` (set by `.ci/run`), under which they fail.

mod common;

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

use common::{bwrap_works, text, Sealc};

/// Credentials a home holds: the starter denies the whole home, so none of
/// these (listed or not) reaches the agent.
const CREDENTIALS: &[&str] = &[".ssh", ".gnupg", ".aws", ".config/gh", ".codex"];

/// Run sealc in `dir` with exactly `env`.
fn sealc(dir: &Path, env: &[(&str, &str)], args: &[&str]) -> Output {
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_sealc"));
    cmd.current_dir(dir).env_clear().args(args);
    for (k, v) in env {
        cmd.env(k, v);
    }
    cmd.output().unwrap()
}

/// The codes of the diagnostics in a rendered stderr, in order.
fn codes(stderr: &str) -> Vec<String> {
    stderr
        .lines()
        .filter(|l| l.starts_with("sealc::"))
        .map(|l| l.trim().to_string())
        .collect()
}

/// A lab outside `/tmp` that an unprivileged user can walk (a root caller's
/// agent runs as `nobody`): a home, a checkout, and a stand-in Codex.
struct Lab {
    _tmp: tempfile::TempDir,
    t: PathBuf,
}

impl Lab {
    fn new() -> Lab {
        let tmp = tempfile::tempdir_in(env!("CARGO_TARGET_TMPDIR")).unwrap();
        let t = tmp.path().canonicalize().unwrap();
        for d in ["home", "checkout", "bin"] {
            std::fs::create_dir_all(t.join(d)).unwrap();
        }
        for d in [&t, &t.join("home"), &t.join("checkout"), &t.join("bin")] {
            std::fs::set_permissions(d, std::os::unix::fs::PermissionsExt::from_mode(0o755))
                .unwrap();
        }
        let codex = t.join("bin/codex");
        std::fs::write(
            &codex,
            "#!/bin/sh\necho \"codex ran: $*\"\necho \"key ${OPENAI_API_KEY:+set} proxy $HTTPS_PROXY\"\nhead -1 \"$CODEX_HOME/config.toml\"\n",
        )
        .unwrap();
        std::fs::set_permissions(&codex, std::os::unix::fs::PermissionsExt::from_mode(0o755))
            .unwrap();
        Lab { _tmp: tmp, t }
    }

    fn path(&self, p: &str) -> String {
        self.t.join(p).display().to_string()
    }

    /// The host a user has: the credential directories and the scratch
    /// directories exist.
    fn furnish(&self) {
        for d in CREDENTIALS.iter().chain(&[
            ".cache/sealc/agent/home",
            ".cache/sealc/agent/tmp",
            ".cache/sealc/codex-agent/home",
            ".cache/sealc/codex-agent/tmp",
        ]) {
            std::fs::create_dir_all(self.t.join("home").join(d)).unwrap();
        }
    }

    fn env(&self) -> Vec<(&'static str, String)> {
        vec![
            ("HOME", self.path("home")),
            ("PATH", "/usr/bin:/bin".into()),
            ("LANG", "C.UTF-8".into()),
        ]
    }

    fn run(&self, extra: &[(&str, &str)], args: &[&str]) -> Output {
        let env = self.env();
        let mut all: Vec<(&str, &str)> = env.iter().map(|(k, v)| (*k, v.as_str())).collect();
        all.extend_from_slice(extra);
        sealc(&self.t, &all, args)
    }

    /// `sealc init` then `sealc compile` for `platform`, into `out`.
    fn init_and_compile(&self, agent: Option<&str>, platform: &str, out: &str) -> Output {
        let spec = format!("{out}.toml");
        let mut args = vec!["init", "--out", &spec, "--platform", platform];
        if let Some(a) = agent {
            args.extend(["--agent", a]);
        }
        let o = self.run(&[], &args);
        assert_eq!(o.status.code(), Some(0), "{}", text(&o));
        let checkout = format!("checkout={}", self.path("checkout"));
        let codex = format!("codex={}", self.path("bin/codex"));
        let mut args = vec!["compile", &spec, "--out", out, "--var", &checkout];
        if agent.is_some() {
            args.extend(["--var", &codex]);
        }
        self.run(&[], &args)
    }
}

#[test]
fn init_writes_a_starter_spec_and_keeps_an_existing_one() {
    let o = Sealc::new().args(["init"]).run();
    assert_eq!(o.code, 0, "{}", o.stderr);
    let spec = std::fs::read_to_string(o.path("seal.toml")).unwrap();
    assert!(
        spec.starts_with("#:schema ./seal-spec.schema.json\n"),
        "{spec}"
    );
    assert!(o.stderr.contains("sealc lint seal.toml --platform both"));
    assert!(o.stdout.is_empty());

    // What the operator runs later stays read-only inside the write roots.
    assert!(
        spec.contains(
            "\nprotect       = [\".git/hooks\", \".git/config\", \".codex\", \".agents\"]\n"
        ),
        "{spec}"
    );

    // The same spec again: nothing to do.
    let again = Sealc::new().in_dir(o.dir).args(["init"]).run();
    assert_eq!(again.code, 0, "{}", again.stderr);
    assert!(again.stderr.contains("already holds"), "{}", again.stderr);

    // Another spec is refused, and left as it is.
    let other = Sealc::new()
        .in_dir(again.dir)
        .args(["init", "--agent", "codex"])
        .run();
    assert_eq!(other.code, 1, "{}", other.stderr);
    assert!(
        other.stderr.contains("sealc::out::differs"),
        "{}",
        other.stderr
    );
    assert!(other.stderr.contains("--force"), "{}", other.stderr);
    assert_eq!(
        std::fs::read_to_string(other.path("seal.toml")).unwrap(),
        spec
    );

    // Unless --force.
    let forced = Sealc::new()
        .in_dir(other.dir)
        .args(["init", "--agent", "codex", "--force"])
        .run();
    assert_eq!(forced.code, 0, "{}", forced.stderr);
    let codex = std::fs::read_to_string(forced.path("seal.toml")).unwrap();
    assert!(codex.contains("\n[codex]\n"), "{codex}");
    assert!(codex.contains("mode  = \"allowlist\""), "{codex}");
    assert!(codex.contains("\"api.openai.com\""), "{codex}");
    assert!(codex.contains("secret = [\"OPENAI_API_KEY\"]"), "{codex}");
    let leftovers: Vec<_> = std::fs::read_dir(forced.dir.path())
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .filter(|n| n.contains("sealc-tmp"))
        .collect();
    assert!(leftovers.is_empty(), "{leftovers:?}");
}

#[test]
fn init_to_stdout_writes_no_file_and_is_deterministic() {
    let a = Sealc::new()
        .args(["init", "--out", "-", "--agent", "codex"])
        .run();
    assert_eq!(a.code, 0, "{}", a.stderr);
    assert!(!a.path("seal.toml").exists());
    assert!(a.stdout.starts_with("#:schema "), "{}", a.stdout);
    let b = Sealc::new()
        .args(["init", "--out", "-", "--agent", "codex"])
        .env("HOME", "/elsewhere")
        .env("LANG", "de_DE.UTF-8")
        .run();
    assert_eq!(a.stdout, b.stdout);
    for p in ["linux", "macos"] {
        let o = Sealc::new()
            .args(["init", "--out", "-", "--platform", p])
            .run();
        assert!(
            o.stdout.contains(&format!("\nplatform = \"{p}\"")),
            "{}",
            o.stdout
        );
    }
}

#[test]
fn init_reports_a_file_it_cannot_write() {
    let o = Sealc::new()
        .args(["init", "--out", "no/such/dir/seal.toml"])
        .run();
    assert_eq!(o.code, 2, "{}", o.stderr);
    assert!(o.stderr.contains("sealc::io::write"), "{}", o.stderr);
    assert!(o.stderr.contains("`no/such/dir/seal.toml`"), "{}", o.stderr);
    let bad = Sealc::new().args(["init", "--agent", "claude"]).run();
    assert_eq!(bad.code, 2, "{}", bad.stderr);
}

#[test]
fn every_starter_lints_clean_for_both_platforms() {
    for agent in [None, Some("codex")] {
        for platform in ["linux", "macos"] {
            let mut args = vec!["init", "--platform", platform];
            args.extend(agent.iter().flat_map(|a| ["--agent", *a]));
            let init = Sealc::new().args(args).run();
            assert_eq!(init.code, 0, "{}", init.stderr);
            let o = Sealc::new()
                .in_dir(init.dir)
                .args([
                    "lint",
                    "seal.toml",
                    "--platform",
                    "both",
                    "--format",
                    "json",
                ])
                .run();
            assert_eq!(o.code, 0, "{agent:?} {platform}: {}", o.stdout);
            let v: serde_json::Value = serde_json::from_str(&o.stdout).unwrap();
            let loud: Vec<&serde_json::Value> = v
                .as_array()
                .or_else(|| v["diagnostics"].as_array())
                .expect("a list of diagnostics")
                .iter()
                .filter(|d| d["severity"] != "advice")
                .collect();
            assert!(loud.is_empty(), "{agent:?} {platform}: {loud:#?}");
            let text = Sealc::new()
                .in_dir(o.dir)
                .args(["lint", "seal.toml", "--platform", "both"])
                .run();
            assert!(
                text.stdout.contains("seal.toml: 0 error(s), 0 warning(s)"),
                "{}",
                text.stdout
            );
        }
    }
}

#[test]
fn every_starter_compiles_for_both_platforms_without_a_warning() {
    let lab = Lab::new();
    lab.furnish();
    for agent in [None, Some("codex")] {
        for platform in ["linux", "macos"] {
            let out = format!("{}-{platform}", agent.unwrap_or("plain"));
            let o = lab.init_and_compile(agent, platform, &out);
            assert_eq!(o.status.code(), Some(0), "{out}: {}", text(&o));
            let stderr = String::from_utf8_lossy(&o.stderr);
            // A Codex seal also denies /etc/codex and the checkout's .codex/,
            // which this host need not have; and the lab's stand-in Codex
            // is a shell script (the real one is a native binary), which
            // compile says it pins without its interpreter. Nothing else
            // may be reported.
            for c in codes(&stderr) {
                let script = agent.is_some() && c == "sealc::launcher::script";
                assert!(c == "sealc::root::absent" || script, "{out}: {stderr}");
            }
            // One line per diagnostic (miette wraps a long path).
            let joined = stderr
                .lines()
                .map(|l| l.trim().trim_start_matches('│').trim())
                .collect::<Vec<_>>()
                .join(" ")
                .replace("sealc::", "\nsealc::");
            for l in joined.lines().filter(|l| l.contains("does not exist here")) {
                assert!(
                    agent.is_some()
                        && (l.contains("`/etc/codex`") || l.contains("checkout/.codex`")),
                    "{out}: {stderr}"
                );
            }
            let profile = if platform == "linux" {
                "seal.bwrap.json"
            } else {
                "seal.sb"
            };
            assert!(lab.t.join(&out).join(profile).is_file(), "{out}");
            let v = lab.run(&[], &["verify", &format!("{out}/seal.json")]);
            assert_eq!(v.status.code(), Some(0), "{out}: {}", text(&v));
        }
    }
}

#[test]
fn a_starter_on_a_bare_home_compiles_and_names_each_absent_root() {
    let lab = Lab::new();
    let o = lab.init_and_compile(None, "linux", "bare");
    assert_eq!(o.status.code(), Some(0), "{}", text(&o));
    let stderr = String::from_utf8_lossy(&o.stderr);
    let found = codes(&stderr);
    // Only the scratch directories, which `sealc exec` makes: the home
    // itself is the denied root, so no credential directory is named.
    assert_eq!(found.len(), 2, "{stderr}");
    assert!(found.iter().all(|c| c == "sealc::root::absent"), "{stderr}");
    for d in ["sealc/agent/home", "sealc/agent/tmp"] {
        assert!(stderr.contains(&format!("{d}`")), "{d}: {stderr}");
    }
}

#[test]
#[cfg_attr(sealc_no_bwrap, ignore = "needs bubblewrap that can make namespaces")]
fn a_starter_runs_a_command_under_sealc_exec() {
    if !bwrap_works() {
        return;
    }
    let lab = Lab::new();
    lab.furnish();
    std::fs::write(lab.t.join("home/.ssh/id_ed25519"), "PRIVATE-KEY-3c1e").unwrap();
    // Credentials no list names are just as hidden: the whole home is denied.
    std::fs::write(lab.t.join("home/.netrc"), "NETRC-PASSWORD-9f2a").unwrap();
    std::fs::write(lab.t.join("home/.git-credentials"), "GIT-TOKEN-71bd").unwrap();
    let o = lab.init_and_compile(None, "linux", "plain");
    assert_eq!(o.status.code(), Some(0), "{}", text(&o));
    let key = lab.path("home/.ssh/id_ed25519");
    let outside = lab.path("outside");
    // The starter's `protect`: what the operator runs later cannot be
    // planted in the checkout, nor in the agent's home.
    let script = format!(
        "echo hi; echo \"home $HOME\"; cat {key} {home}/.netrc {home}/.git-credentials 2>/dev/null; ls -a {home} 2>/dev/null; echo x > {outside} 2>/dev/null; echo note > notes.md; \
         mkdir -p .git/hooks 2>/dev/null && echo PLANTED-GIT; mkdir -p .codex 2>/dev/null; echo x > .codex/config.toml 2>/dev/null && echo PLANTED-CODEX; \
         mkdir -p \"$HOME/.agents/skills\" 2>/dev/null && echo PLANTED-SKILLS; echo done",
        home = lab.path("home")
    );
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_sealc"));
    cmd.current_dir(lab.t.join("checkout"))
        .env_clear()
        .env("HOME", lab.path("home"))
        .env("PATH", "/usr/bin:/bin")
        .args([
            "exec",
            &lab.path("plain/seal.json"),
            "--",
            "sh",
            "-c",
            &script,
        ]);
    let r = cmd.output().unwrap();
    let stdout = String::from_utf8_lossy(&r.stdout);
    assert_eq!(r.status.code(), Some(0), "{}", text(&r));
    assert!(stdout.starts_with("hi\n"), "{}", text(&r));
    assert!(
        stdout.contains(&format!(
            "home {}",
            lab.path("home/.cache/sealc/agent/home")
        )),
        "{}",
        text(&r)
    );
    assert!(stdout.ends_with("done\n"), "{}", text(&r));
    for secret in [
        "PRIVATE-KEY",
        "NETRC-PASSWORD",
        "GIT-TOKEN",
        ".netrc",
        ".ssh",
    ] {
        assert!(!stdout.contains(secret), "{secret}: {}", text(&r));
    }
    assert!(!lab.t.join("outside").exists());
    assert_eq!(
        std::fs::read_to_string(lab.t.join("checkout/notes.md")).unwrap(),
        "note\n"
    );
    for planted in ["PLANTED-GIT", "PLANTED-CODEX", "PLANTED-SKILLS"] {
        assert!(!stdout.contains(planted), "{planted}: {}", text(&r));
    }
    // No stand-in is left behind.
    let mut left: Vec<String> = std::fs::read_dir(lab.t.join("checkout"))
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    left.sort();
    assert_eq!(left, ["notes.md"]);
    assert!(!lab.t.join("home/.cache/sealc/agent/home/.agents").exists());
}

#[test]
#[cfg_attr(sealc_no_bwrap, ignore = "needs bubblewrap that can make namespaces")]
fn a_codex_starter_runs_its_launcher_through_the_allowlist_proxy() {
    if !bwrap_works() {
        return;
    }
    let lab = Lab::new();
    lab.furnish();
    let o = lab.init_and_compile(Some("codex"), "linux", "codex");
    assert_eq!(o.status.code(), Some(0), "{}", text(&o));
    let run = |key: Option<&str>| {
        let mut cmd = Command::new(env!("CARGO_BIN_EXE_sealc"));
        cmd.current_dir(lab.t.join("checkout"))
            .env_clear()
            .env("HOME", lab.path("home"))
            .env("PATH", "/usr/bin:/bin")
            .args([
                "exec",
                &lab.path("codex/seal.json"),
                "--",
                "codex",
                "exec",
                "write notes.md",
            ]);
        if let Some(k) = key {
            cmd.env("OPENAI_API_KEY", k);
        }
        cmd.output().unwrap()
    };
    // The secret is required: nothing starts without it.
    let missing = run(None);
    assert_eq!(missing.status.code(), Some(125), "{}", text(&missing));
    assert!(
        String::from_utf8_lossy(&missing.stderr).contains("OPENAI_API_KEY"),
        "{}",
        text(&missing)
    );
    let r = run(Some("sk-test-9d2f"));
    assert_eq!(r.status.code(), Some(0), "{}", text(&r));
    let stdout = String::from_utf8_lossy(&r.stdout);
    assert!(
        stdout.contains("codex ran: exec write notes.md"),
        "{}",
        text(&r)
    );
    assert!(
        stdout.contains("key set proxy http://127.0.0.1:"),
        "{}",
        text(&r)
    );
    assert!(
        stdout.contains("# Codex config for seal `codex-agent`"),
        "{}",
        text(&r)
    );
    assert!(!text(&r).contains("sk-test-9d2f"));
}

#[test]
fn completions_for_every_shell_name_the_commands() {
    let o = Sealc::new().args(["completions", "bash"]).run();
    assert_eq!(o.code, 0, "{}", o.stderr);
    for c in [
        "compile",
        "verify",
        "exec",
        "lint",
        "explain",
        "schema",
        "init",
        "completions",
        "man",
    ] {
        assert!(o.stdout.contains(c), "bash completion lacks {c}");
    }
    assert!(o.stdout.contains("--platform"), "{}", o.stdout);
    assert!(
        !o.stdout.contains("__confine"),
        "a hidden command is offered"
    );
    for shell in ["zsh", "fish", "elvish", "powershell"] {
        let o = Sealc::new().args(["completions", shell]).run();
        assert_eq!(o.code, 0, "{shell}: {}", o.stderr);
        assert!(o.stdout.contains("compile"), "{shell}");
    }
    let bad = Sealc::new().args(["completions", "tcsh"]).run();
    assert_eq!(bad.code, 2, "{}", bad.stderr);
}

/// The visible commands, as `sealc --help` lists them.
fn commands() -> Vec<String> {
    let o = Sealc::new().args(["--help"]).run();
    assert_eq!(o.code, 0);
    let list = o
        .stdout
        .split("Commands:\n")
        .nth(1)
        .expect("a Commands section")
        .split("\n\n")
        .next()
        .unwrap();
    let names: Vec<String> = list
        .lines()
        .filter_map(|l| l.split_whitespace().next())
        .filter(|n| *n != "help")
        .map(str::to_string)
        .collect();
    assert!(names.len() >= 9, "{names:?}");
    names
}

#[test]
fn every_command_help_shows_its_exit_codes_and_an_example() {
    let top = Sealc::new().args(["--help"]).run();
    assert!(top.stdout.contains("Exit codes:"), "{}", top.stdout);
    assert!(top.stdout.contains("\nExample"), "{}", top.stdout);
    for c in commands() {
        for flag in ["--help", "-h"] {
            let o = Sealc::new().args([c.as_str(), flag]).run();
            assert_eq!(o.code, 0, "{c} {flag}: {}", o.stderr);
            let exit = o
                .stdout
                .split("\nExit codes:\n")
                .nth(1)
                .unwrap_or_else(|| panic!("`sealc {c} {flag}` has no Exit codes section"));
            assert!(
                exit.trim_start().starts_with('0') || exit.trim_start().starts_with('N'),
                "{c}: {exit}"
            );
            let example = o
                .stdout
                .split("\nExample:\n")
                .nth(1)
                .unwrap_or_else(|| panic!("`sealc {c} {flag}` has no Example"));
            assert!(
                example.trim_start().starts_with(&format!("sealc {c}")),
                "{c}: {example}"
            );
        }
    }
    let compile = Sealc::new().args(["compile", "--help"]).run();
    assert!(
        compile.stdout.contains("seal.bwrap.json"),
        "{}",
        compile.stdout
    );
    assert!(compile.stdout.contains("seal.sb"), "{}", compile.stdout);
}

#[test]
fn the_documented_exit_codes_are_the_real_ones() {
    // lint: 2 for an unreadable spec, 1 for errors.
    let o = Sealc::new().args(["lint", "missing.toml"]).run();
    assert_eq!(o.code, 2, "{}", o.stderr);
    let o = Sealc::new()
        .file(
            "bad.toml",
            "version = 1\nname = \"x\"\n[network]\nmode = \"wide\"\n",
        )
        .args(["lint", "bad.toml"])
        .run();
    assert_eq!(o.code, 1, "{}", o.stdout);
    // verify: 2 for an unusable record.
    let o = Sealc::new()
        .file("seal.json", "{}")
        .args(["verify", "seal.json"])
        .run();
    assert_eq!(o.code, 2, "{}", o.stdout);
    // man: 2 for an unknown command, with the likely one.
    let o = Sealc::new().args(["man", "complie"]).run();
    assert_eq!(o.code, 2, "{}", o.stderr);
    assert!(o.stderr.contains("did you mean `compile`?"), "{}", o.stderr);
}

#[test]
fn the_man_pages_name_every_command_with_exit_status_and_example() {
    let o = Sealc::new().args(["man"]).run();
    assert_eq!(o.code, 0, "{}", o.stderr);
    assert!(o.stdout.contains(".TH sealc 1"), "{}", o.stdout);
    assert!(o.stdout.contains(".SH NAME\nsealc \\- "), "{}", o.stdout);
    assert!(!o.stdout.contains("__init"), "a hidden command has a page");
    let names = commands();
    for c in &names {
        assert!(
            o.stdout
                .contains(&format!("sealc\\-{}(1)", c.replace('-', "\\-"))),
            "sealc(1) does not name {c}"
        );
        let page = Sealc::new().args(["man", c.as_str()]).run();
        assert_eq!(page.code, 0, "{c}: {}", page.stderr);
        let roff = page.stdout;
        assert!(
            roff.contains(&format!(
                ".TH sealc-{c} 1  \"sealc {}\"",
                env!("CARGO_PKG_VERSION")
            )),
            "{c}: {roff}"
        );
        for section in [
            ".SH NAME",
            ".SH SYNOPSIS",
            ".SH \"EXIT STATUS\"\n.nf\n",
            ".SH EXAMPLE\n.nf\n  sealc ",
        ] {
            assert!(roff.contains(section), "{c} lacks {section:?}:\n{roff}");
        }
        // Every line is a request, or text that does not start like one.
        for line in roff.lines() {
            assert!(
                !line.starts_with('\'') && (!line.starts_with('.') || line.len() > 1),
                "{c}: {line:?}"
            );
        }
        assert_eq!(
            roff.matches("\n.nf\n").count(),
            roff.matches("\n.fi\n").count(),
            "{c}"
        );
    }
    let dir = Sealc::new().args(["man", "--dir", "man1"]).run();
    assert_eq!(dir.code, 0, "{}", dir.stderr);
    let mut files: Vec<String> = std::fs::read_dir(dir.path("man1"))
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    files.sort();
    let mut want: Vec<String> = names.iter().map(|c| format!("sealc-{c}.1")).collect();
    want.push("sealc.1".into());
    want.sort();
    assert_eq!(files, want);
    let compile = Sealc::new().args(["man", "compile"]).run();
    assert_eq!(
        std::fs::read_to_string(dir.path("man1/sealc-compile.1")).unwrap(),
        compile.stdout
    );
}

/// `sealc --help`'s example, run as written (read from the help, not
/// retyped) in a fresh checkout: it compiles, and the seal lands outside
/// the checkout, so compile does not warn that the agent could rewrite it.
#[test]
fn the_help_example_runs_as_written_and_keeps_the_seal_out_of_the_checkout() {
    let tmp = tempfile::tempdir().unwrap();
    let (home, checkout) = (tmp.path().join("home"), tmp.path().join("co"));
    std::fs::create_dir_all(&home).unwrap();
    std::fs::create_dir_all(&checkout).unwrap();
    let help = sealc(tmp.path(), &[], &["--help"]);
    let help = String::from_utf8(help.stdout).unwrap();
    let example = help
        .split_once("\nExample")
        .and_then(|(_, rest)| rest.split_once(":\n"))
        .map(|(_, lines)| lines.trim())
        .unwrap_or_else(|| panic!("no example in:\n{help}"));
    assert!(example.contains("--out"), "{example}");
    let bin = Path::new(env!("CARGO_BIN_EXE_sealc")).parent().unwrap();
    let out = Command::new("bash")
        .args(["-euc", example])
        .current_dir(&checkout)
        .env_clear()
        .env("HOME", &home)
        .env("PATH", format!("{}:/usr/bin:/bin", bin.display()))
        .output()
        .unwrap();
    assert!(out.status.success(), "{example}\n{}", text(&out));
    assert!(
        home.join(".local/state/sealc/agent/seal.json").is_file(),
        "{}",
        text(&out)
    );
    assert!(
        !codes(&String::from_utf8_lossy(&out.stderr))
            .contains(&"sealc::out::in-write-root".to_string()),
        "{}",
        text(&out)
    );
}
