//! The hostile-input catalogue: every spec under `tests/hostile/` is refused
//! by the CLI with exit 2, a rendered diagnostic with a code (and a span where
//! the problem has one), no panic, and nothing written. The rendered
//! diagnostics are snapshotted beside each spec as `NAME.stderr`.
//!
//! A spec may start with `# args: ...` (extra CLI arguments, split on spaces)
//! and `# link: NAME -> TARGET` lines (symlinks made in the run directory,
//! which is `$HOME`; it is shown as `$HOME` in the snapshot).

mod common;

use common::*;

/// A secret value placed in the environment of every hostile run; it must
/// never appear in any output.
const SECRET: &str = "sk-hostile-7f3a9c-never-print";

#[test]
fn every_hostile_spec_is_refused_cleanly() {
    let dir = root().join("tests/hostile");
    let specs = toml_files(&dir);
    assert!(specs.len() >= 30, "the catalogue has {} specs", specs.len());
    let mut failures = Vec::new();
    for spec in specs {
        let name = spec.file_name().unwrap().to_string_lossy().into_owned();
        let text = std::fs::read(&spec).unwrap();
        let extra: Vec<String> = String::from_utf8_lossy(&text)
            .lines()
            .find_map(|l| l.strip_prefix("# args: "))
            .map(|a| a.split(' ').map(String::from).collect())
            .unwrap_or_default();
        let links: Vec<(String, String)> = String::from_utf8_lossy(&text)
            .lines()
            .filter_map(|l| l.strip_prefix("# link: "))
            .filter_map(|l| l.split_once(" -> "))
            .map(|(n, t)| (n.to_string(), t.to_string()))
            .collect();
        // Under `/tmp`, so the path (shown in messages) is as long on every
        // machine and miette wraps the same lines.
        let dir = tempfile::Builder::new().tempdir_in("/tmp").unwrap();
        let home = dir.path().display().to_string();
        for (link, target) in &links {
            let at = dir.path().join(link);
            std::fs::create_dir_all(at.parent().unwrap()).unwrap();
            std::os::unix::fs::symlink(target, at).unwrap();
        }
        let mut out = Sealc::new()
            .in_dir(dir)
            .file(&name, text)
            .env("OPENAI_API_KEY", SECRET)
            .args(["compile", name.as_str(), "--out", "out"])
            .args(extra)
            .run();
        out.stderr = out.stderr.replace(&home, "$HOME");
        let mut problems = Vec::new();
        if out.code != 2 {
            problems.push(format!("exit {} (want 2)", out.code));
        }
        if out.path("out").exists() {
            problems.push("wrote an output directory".into());
        }
        if !out.stderr.contains("sealc::") {
            problems.push("no diagnostic code in stderr".into());
        }
        if out.stderr.contains("panicked") {
            problems.push("panicked".into());
        }
        if out.stderr.contains(SECRET) || out.stdout.contains(SECRET) {
            problems.push("printed the secret".into());
        }
        let spanless = ["bad-var-flag", "unknown-var-flag"];
        if !spanless.iter().any(|s| name.starts_with(s)) && !out.stderr.contains("╭─[") {
            problems.push("no span in the diagnostic".into());
        }
        if !out.stdout.is_empty() {
            problems.push(format!("printed to stdout: {}", out.stdout));
        }
        if !problems.is_empty() {
            failures.push(format!("{name}: {}\n{}", problems.join("; "), out.stderr));
        }
        failures.extend(check_golden(
            &spec.with_extension("stderr"),
            out.stderr.as_bytes(),
        ));
    }
    assert_goldens(failures);
}

/// A TOML syntax error is reported alone: one diagnostic, with its code, a
/// span and a lowercase message, whatever the parser's recovery made of the
/// rest of the file (one missing `]` once gave 79 diagnostics).
#[test]
fn a_toml_syntax_error_is_the_only_diagnostic() {
    let mut failures = Vec::new();
    let mut check = |what: &str, src: &str| {
        let lint = sealc::lint::lint(src);
        let parse = sealc::spec::parse(src).err().unwrap_or_default();
        for (how, diags) in [("lint", &lint), ("parse", &parse)] {
            match diags.0.as_slice() {
                [d] if d.code == "sealc::spec::toml"
                    && d.span.is_some()
                    && d.message
                        .strip_prefix("invalid TOML: ")
                        .is_some_and(|m| m.starts_with(|c: char| !c.is_uppercase())) => {}
                ds => failures.push(format!(
                    "{what} ({how}): {:?}",
                    ds.iter().map(|d| (d.code, &d.message)).collect::<Vec<_>>()
                )),
            }
        }
    };
    let shapes = toml_files(&root().join("tests/hostile"))
        .into_iter()
        .filter(|f| {
            let name = f.file_name().unwrap().to_string_lossy();
            name.starts_with("toml-") || name.starts_with("duplicate-")
        })
        .collect::<Vec<_>>();
    assert!(shapes.len() >= 8, "{shapes:?}");
    for f in &shapes {
        check(
            &f.display().to_string(),
            &std::fs::read_to_string(f).unwrap(),
        );
    }
    // Every example spec with one bracket, brace or quote deleted: whenever
    // that breaks the TOML, the break is the one diagnostic.
    let mut specs = toml_files(&root().join("specs"));
    specs.extend(toml_files(&root().join("tests/golden")));
    let mut broken = 0;
    for spec in specs {
        let src = std::fs::read_to_string(&spec).unwrap();
        for (at, c) in src.char_indices() {
            if !matches!(c, '[' | ']' | '{' | '}' | '"' | ',') {
                continue;
            }
            let cut = format!("{}{}", &src[..at], &src[at + 1..]);
            if toml::from_str::<toml::Table>(&cut).is_ok() {
                continue;
            }
            broken += 1;
            let line = src[..at].matches('\n').count() + 1;
            check(
                &format!("{} without the `{c}` of line {line}", spec.display()),
                &cut,
            );
        }
    }
    assert!(broken >= 300, "only {broken} deletions broke the TOML");
    assert_goldens(failures);
}

/// A value of the wrong type is named by its whole key path, in every
/// section whose reader builds the path only when it says it.
#[test]
fn a_wrong_type_is_named_by_its_key_path() {
    let src = r#"version = 1
name = "paths"
[target]
platform = "linux"
[vars]
run = { required = "yes" }
[filesystem]
write = ["/tmp/w", 3]
[env]
set = { HOME = 1 }
[limits]
wall_seconds = "ten"
memory_mib = 99999999999999999999
[codex.mcp_servers.docs]
seal = 1
binding = "sha256:00"
command = [2]
port = "p"
starts = "s"
[[assert]]
deny = "file-read-data"
paths = "/x"
remote = [1]
names = 5
"#;
    let Err(diags) = sealc::spec::parse(src) else {
        panic!("the spec is refused")
    };
    let messages: Vec<&str> = diags.0.iter().map(|d| d.message.as_str()).collect();
    for want in [
        "`vars.run.required` must be a boolean, found a string",
        "`filesystem.write[1]` must be a string, found an integer",
        "`env.set.HOME` must be a string, found an integer",
        "`limits.wall_seconds` must be an integer, found a string",
        "`codex.mcp_servers.docs.seal` must be a string, found an integer",
        "`codex.mcp_servers.docs.command[0]` must be a string, found an integer",
        "`codex.mcp_servers.docs.port` must be an integer, found a string",
        "`codex.mcp_servers.docs.starts` must be an integer, found a string",
        "`assert[0].paths` must be an array of strings, found a string",
        "`assert[0].remote[0]` must be a string, found an integer",
        "`assert[0].names` must be an array of strings, found an integer",
    ] {
        assert!(messages.contains(&want), "no {want:?} in {messages:#?}");
    }
    assert!(
        messages
            .iter()
            .any(|m| m.starts_with("`limits.memory_mib`")),
        "{messages:#?}"
    );
}
