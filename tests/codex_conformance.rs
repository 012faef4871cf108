//! The generated Codex configs against the real Codex releases (npm
//! `@openai/codex`, installed by `.ci/install-codex`): every spec's config,
//! rendered for each installed tested release (the oldest and the newest at
//! least), loads with `codex exec --strict-config` offline (the model is the
//! local stand-in, selected with `-c` so the config itself is what sealc
//! wrote), with no `deprecated`, `ignoring` or unknown-field message; and
//! `codex features list` shows every flag sealc writes as read and off, none
//! deprecated or removed.

mod codex_support;
mod common;

use std::path::Path;
use std::process::{Command, Stdio};

use codex_support::*;
use common::*;

/// The installed tested releases (all of them, at least the oldest and the
/// newest, which are required).
fn installed() -> Option<Vec<(String, std::path::PathBuf)>> {
    use sealc::backend::codex::TESTED;
    let ends = [TESTED[0], TESTED[TESTED.len() - 1]];
    let mut out = releases(&ends)?;
    for v in &TESTED[1..TESTED.len() - 1] {
        if let Some(bin) = find(v) {
            out.push((v.to_string(), bin));
        }
    }
    out.sort();
    Some(out)
}

fn spec_files() -> Vec<std::path::PathBuf> {
    let mut specs = toml_files(&root().join("specs"));
    specs.extend(toml_files(&root().join("tests/codex")));
    specs
}

fn config_for(spec: &Path, version: &str) -> Vec<u8> {
    let src = std::fs::read_to_string(spec).unwrap();
    let mut c = sealc::compile("s.toml", &src, &flags_for(&src), &demo_host()).unwrap();
    c.ir.codex.versions = vec![version.to_string()];
    let config = sealc::backend::codex::render(&c.ir);
    // A sealed MCP server's relay exists only inside the seal: here every
    // key loads, and the server's start may fail without failing Codex.
    String::from_utf8(config)
        .unwrap()
        .replace("required = true", "required = false")
        .into_bytes()
}

/// Run `codex ARGS` with `config` as the only config, offline, the model
/// provider pointed at `standin`. Exit status and all output.
fn codex(bin: &Path, config: &[u8], standin: u16, args: &[&str]) -> (i32, String) {
    let t = tempfile::tempdir().unwrap();
    let (home, codex_home, ws) = (t.path().join("h"), t.path().join("c"), t.path().join("w"));
    // Codex makes its sandbox helper's link (`codex-linux-sandbox`) in
    // CODEX_HOME only outside TMPDIR; a profile config needs it to start.
    let tmp = t.path().join("t");
    for d in [&home, &codex_home, &ws, &tmp] {
        std::fs::create_dir_all(d).unwrap();
    }
    std::fs::write(codex_home.join("config.toml"), config).unwrap();
    let provider = format!(
        "model_providers.conformance={{ name = \"conformance\", base_url = \"http://127.0.0.1:{standin}/v1\", wire_api = \"responses\", env_key = \"CONFORMANCE_KEY\" }}"
    );
    let out = Command::new(bin)
        .args(args)
        .args(["-c", "model_provider=\"conformance\"", "-c", &provider])
        .current_dir(&ws)
        .env_clear()
        .env("HOME", &home)
        .env("CODEX_HOME", &codex_home)
        .env("TMPDIR", &tmp)
        .env("PATH", "/usr/bin:/bin")
        .env("CONFORMANCE_KEY", "sk-conformance")
        .stdin(Stdio::null())
        .output()
        .unwrap();
    let text = format!(
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    (out.status.code().unwrap_or(-1), text)
}

#[test]
#[cfg_attr(
    any(sealc_no_codex = "0.137.0", sealc_no_codex = "0.171.0"),
    ignore = "needs Codex 0.137.0 and 0.171.0 (bash .ci/install-codex)"
)]
fn every_generated_config_loads_strictly_without_a_complaint() {
    let Some(releases) = installed() else { return };
    let standin = StandIn::start(Vec::new());
    let mut runs = 0;
    for (version, bin) in &releases {
        for spec in spec_files() {
            let config = config_for(&spec, version);
            let before = standin.requests().len();
            let (code, out) = codex(
                bin,
                &config,
                standin.port,
                &[
                    "exec",
                    "--strict-config",
                    "--skip-git-repo-check",
                    "say done",
                ],
            );
            let what = format!("{} for Codex {version}", spec.display());
            assert_eq!(code, 0, "{what}:\n{out}");
            assert!(out.contains(FINAL), "{what}: no final message:\n{out}");
            assert_eq!(
                config_complaints(&out),
                Vec::<String>::new(),
                "{what}:\n{out}"
            );
            assert_eq!(standin.requests().len(), before + 1, "{what}");
            runs += 1;
        }
    }
    assert!(runs >= 2 * spec_files().len(), "{runs}");
}

#[test]
#[cfg_attr(
    any(sealc_no_codex = "0.137.0", sealc_no_codex = "0.171.0"),
    ignore = "needs Codex 0.137.0 and 0.171.0 (bash .ci/install-codex)"
)]
fn every_flag_written_is_read_and_off() {
    let Some(releases) = installed() else { return };
    for (version, bin) in &releases {
        let config = config_for(&root().join("specs/probe-rep.toml"), version);
        let value: toml::Table = toml::from_str(std::str::from_utf8(&config).unwrap()).unwrap();
        let written: Vec<&String> = value["features"].as_table().unwrap().keys().collect();
        let (code, out) = codex(bin, &config, 9, &["features", "list"]);
        assert_eq!(code, 0, "{out}");
        for flag in written {
            let line = out
                .lines()
                .find(|l| l.split_whitespace().next() == Some(flag.as_str()))
                .unwrap_or_else(|| panic!("Codex {version} does not know `{flag}`:\n{out}"));
            let words: Vec<&str> = line.split_whitespace().collect();
            assert_eq!(
                words.last(),
                Some(&"false"),
                "Codex {version}: `{flag}` is not off: {line}"
            );
            assert!(
                !line.contains("removed") && !line.contains("deprecated"),
                "Codex {version}: {line}"
            );
        }
    }
}

#[test]
#[cfg_attr(
    any(sealc_no_codex = "0.137.0", sealc_no_codex = "0.171.0"),
    ignore = "needs Codex 0.137.0 and 0.171.0 (bash .ci/install-codex)"
)]
fn the_check_sees_a_deprecated_or_unknown_key() {
    // The check is not vacuous: an old alias is reported, and an unknown key
    // stops a strict load.
    let Some(releases) = installed() else { return };
    let standin = StandIn::start(Vec::new());
    for (version, bin) in &releases {
        let mut config = config_for(&root().join("specs/minimal.toml"), version);
        let text = String::from_utf8(config.clone()).unwrap();
        let deprecated = text.replace("[features]\n", "[features]\nconnectors = false\n");
        let (code, out) = codex(
            bin,
            deprecated.as_bytes(),
            standin.port,
            &[
                "exec",
                "--strict-config",
                "--skip-git-repo-check",
                "say done",
            ],
        );
        assert_eq!(code, 0, "{out}");
        assert!(
            config_complaints(&out)
                .iter()
                .any(|l| l.contains("deprecated")),
            "Codex {version} said nothing of `connectors`:\n{out}"
        );
        let mut unknown = b"not_a_codex_key = true\n".to_vec();
        unknown.append(&mut config);
        let (code, out) = codex(
            bin,
            &unknown,
            standin.port,
            &[
                "exec",
                "--strict-config",
                "--skip-git-repo-check",
                "say done",
            ],
        );
        assert_ne!(code, 0, "{out}");
        assert!(!config_complaints(&out).is_empty(), "{out}");
    }
}

#[test]
fn the_install_script_pins_what_the_tests_need() {
    // `.ci/install-codex` installs, by default, the releases these tests and
    // tests/codex_e2e.rs require: the oldest and newest tested, and the
    // oldest whose tools start under the Linux seal.
    use sealc::backend::codex::TESTED;
    let script = std::fs::read_to_string(root().join(".ci/install-codex")).unwrap();
    let line = script
        .lines()
        .find(|l| l.trim_start().starts_with("versions=(0"))
        .expect("a default versions=(...) line");
    let pinned: Vec<&str> = line
        .trim()
        .trim_start_matches("versions=(")
        .trim_end_matches(')')
        .split_whitespace()
        .collect();
    let mut needed = vec![TESTED[0], TESTED[TESTED.len() - 1]];
    needed.extend(sealed_run_versions());
    for v in needed {
        assert!(pinned.contains(&v), "{v} is not in {line}");
    }
    for v in &pinned {
        assert!(TESTED.contains(v), "{v} is pinned but not a tested release");
    }
}

/// Each installed release's npm launcher (`@openai/codex/bin/codex.js`, a
/// `node` script) gets the script warning at compile, naming that
/// release's own native binary, the one the Codex tests run: the layout
/// sealc looks for is npm's, release by release.
#[test]
#[cfg_attr(
    any(sealc_no_codex = "0.137.0", sealc_no_codex = "0.171.0"),
    ignore = "needs Codex 0.137.0 and 0.171.0 (bash .ci/install-codex)"
)]
fn the_npm_launcher_of_each_release_names_its_native_binary() {
    let Some(releases) = installed() else { return };
    for (version, bin) in &releases {
        let script = codex_dir()
            .join(version)
            .join("node_modules/@openai/codex/bin/codex.js")
            .canonicalize()
            .unwrap();
        let spec = format!(
            "version = 1\nname = \"npm\"\n[target]\nplatform = \"linux\"\n[launcher]\npath = \"{}\"\n[network]\nmode = \"none\"\n",
            script.display()
        );
        let out = Sealc::new()
            .file("s.toml", spec)
            .args(["compile", "s.toml", "--out", "out"])
            .run();
        assert_eq!(out.code, 0, "{version}: {}", out.stderr);
        let bare = |t: &str| t.replace(['│', ' ', '\n'], "");
        let binary = bin.canonicalize().unwrap().display().to_string();
        assert!(
            bare(&out.stderr).contains(&bare(&format!("`{binary}`"))),
            "{version}: {}",
            out.stderr
        );
        assert!(
            out.stderr.contains("sealc::launcher::script"),
            "{}",
            out.stderr
        );
    }
}
