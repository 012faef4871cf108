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
