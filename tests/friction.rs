//! A new user's first hour with `sealc compile`: the flags and spec
//! spellings people reach for first get a value or a diagnostic that says
//! exactly what to write, and nothing secret is recorded without a word.

mod common;

use common::*;

/// A Linux seal that denies the checkout, which a `--var` gives.
const CHECKOUT: &str = r#"version = 1
name = "friction"
[target]
platform = "linux"
[vars]
checkout = { required = true }
port = { default = "8080" }
[filesystem]
deny_read = ["${checkout}"]
[network]
mode = "proxy"
proxy = "127.0.0.1:${port}"
"#;

/// Stderr with miette's wrapped help lines joined again.
fn flat(s: &str) -> String {
    s.split('\n').map(str::trim).collect::<Vec<_>>().join(" ")
}

fn recorded_var(out: &Out, name: &str) -> String {
    let record = std::fs::read_to_string(out.path("out/seal.json")).unwrap();
    let v: serde_json::Value = serde_json::from_str(&record).unwrap();
    v["facts"]["vars"][name].as_str().unwrap().to_string()
}

/// Compile `CHECKOUT` in a fresh directory holding `co/`; that directory's
/// realpath and what the run left.
fn compile_checkout(flags: &[&str]) -> (std::path::PathBuf, Out) {
    let dir = tempfile::tempdir().unwrap();
    let here = std::fs::canonicalize(dir.path()).unwrap();
    std::fs::create_dir(here.join("co")).unwrap();
    let mut args: Vec<String> = ["compile", "s.toml", "--out", "out"]
        .map(String::from)
        .to_vec();
    for f in flags {
        args.push("--var".into());
        args.push(f.replace("$HERE", &here.display().to_string()));
    }
    let out = Sealc::new()
        .in_dir(dir)
        .file("s.toml", CHECKOUT)
        .args(args)
        .run();
    (here, out)
}

#[test]
fn a_var_path_with_a_trailing_slash_is_recorded_without_it() {
    let (here, out) = compile_checkout(&["checkout=$HERE/co/"]);
    assert_eq!(out.code, 0, "{}", out.stderr);
    assert_eq!(
        recorded_var(&out, "checkout"),
        format!("{}/co", here.display())
    );
}

#[test]
fn a_relative_var_path_is_resolved_against_the_current_directory() {
    for (given, want) in [(".", ""), ("co/", "/co"), ("./co/../co", "/co")] {
        let (here, out) = compile_checkout(&[&format!("checkout={given}")]);
        assert_eq!(out.code, 0, "{given}: {}", out.stderr);
        assert_eq!(
            recorded_var(&out, "checkout"),
            format!("{}{want}", here.display()),
            "{given}"
        );
        // The record holds the absolute path: verify reads nothing more.
        let v = Sealc::new()
            .in_dir(out.dir)
            .args(["verify", "out/seal.json"])
            .run();
        assert_eq!(v.code, 0, "{given}: {}", v.stdout);
    }
}

#[test]
fn a_var_path_that_stays_unusable_is_the_flags_problem() {
    let (_, out) = compile_checkout(&["checkout=/a/../b"]);
    assert_eq!(out.code, 2);
    assert!(out.stderr.contains("sealc::var::flag"), "{}", out.stderr);
    assert!(
        out.stderr
            .contains("`--var checkout=/a/../b` is not a usable path: it has a `..` segment"),
        "{}",
        out.stderr
    );
    assert!(
        out.stderr.contains("help: write `--var checkout=/b`"),
        "{}",
        out.stderr
    );
    assert!(
        !out.stderr.contains("sealc::var::missing"),
        "{}",
        out.stderr
    );
    assert!(
        !out.stderr.contains("filesystem.deny_read"),
        "{}",
        out.stderr
    );

    let (_, out) = compile_checkout(&["checkout=~/src"]);
    assert_eq!(out.code, 2);
    assert!(
        out.stderr
            .contains("`--var checkout=~/src` starts with `~`"),
        "{}",
        out.stderr
    );
    assert!(
        out.stderr.contains("`--var checkout=$HOME/src`"),
        "{}",
        out.stderr
    );
}

#[test]
fn a_var_flag_without_a_value_names_its_own_var() {
    let (_, out) = compile_checkout(&["checkout"]);
    assert_eq!(out.code, 2);
    assert!(
        out.stderr
            .contains("`--var checkout` is not of the form NAME=VALUE"),
        "{}",
        out.stderr
    );
    assert!(
        out.stderr.contains("help: write `--var checkout=VALUE`"),
        "{}",
        out.stderr
    );
    assert!(!out.stderr.contains("run="), "{}", out.stderr);
}

#[test]
fn a_var_that_is_no_path_is_kept_as_given() {
    let (_, out) = compile_checkout(&["checkout=$HERE/co", "port=8081"]);
    assert_eq!(out.code, 0, "{}", out.stderr);
    assert_eq!(recorded_var(&out, "port"), "8081");
}

#[test]
fn an_unknown_var_in_another_case_suggests_the_declared_one() {
    let spec = r#"version = 1
name = "friction"
[vars]
home = { default = "/home/me" }
[filesystem]
deny_read = ["${HOME}/.ssh"]
[network]
mode = "none"
"#;
    let out = Sealc::new()
        .file("s.toml", spec)
        .args(["compile", "s.toml", "--out", "out"])
        .run();
    assert_eq!(out.code, 2);
    assert!(
        out.stderr.contains("`${HOME}` names no declared var"),
        "{}",
        out.stderr
    );
    assert!(
        out.stderr.contains("help: did you mean `${home}`?"),
        "{}",
        out.stderr
    );
}

#[test]
fn a_proxy_written_as_a_url_gets_the_address_it_means() {
    let spec = |proxy: &str| {
        format!(
            "version = 1\nname = \"friction\"\n[vars]\nport = {{ default = \"8080\" }}\n[network]\nmode = \"proxy\"\nproxy = \"{proxy}\"\n"
        )
    };
    for (written, meant) in [
        ("http://127.0.0.1:8080", "127.0.0.1:8080"),
        ("http://localhost:${port}/", "localhost:${port}"),
    ] {
        let out = Sealc::new()
            .file("s.toml", spec(written))
            .args(["compile", "s.toml", "--out", "out"])
            .run();
        assert_eq!(out.code, 2, "{written}");
        assert!(
            out.stderr.contains("sealc::network::proxy"),
            "{}",
            out.stderr
        );
        assert!(
            out.stderr
                .contains(&format!("proxy `{written}` is a URL, not a `host:port`")),
            "{}",
            out.stderr
        );
        assert!(
            out.stderr
                .contains(&format!("did you mean `proxy = \"{meant}\"`?")),
            "{}",
            out.stderr
        );
        assert!(!out.stderr.contains("not loopback"), "{}", out.stderr);
        // What it suggests compiles, and becomes the URL that was written.
        let out = Sealc::new()
            .file("s.toml", spec(meant))
            .args(["compile", "s.toml", "--out", "out"])
            .run();
        assert_eq!(out.code, 0, "{}", out.stderr);
        let env = std::fs::read_to_string(out.path("out/env.json")).unwrap();
        let url = written.trim_end_matches('/').replace("${port}", "8080");
        assert!(
            env.contains(&format!("\"HTTPS_PROXY\": \"{url}\"")),
            "{env}"
        );
    }
    let out = Sealc::new()
        .file("s.toml", spec("socks5://127.0.0.1:1080"))
        .args(["compile", "s.toml", "--out", "out"])
        .run();
    assert_eq!(out.code, 2);
    assert!(
        flat(&out.stderr).contains("so it must be an HTTP proxy"),
        "{}",
        out.stderr
    );
}

#[test]
fn a_conflict_names_the_path_as_written_not_its_macos_alias() {
    let spec = "version = 1\nname = \"friction\"\n[filesystem]\nwrite = [\"/tmp/x\"]\ndeny_read = [\"/tmp/x\"]\n[network]\nmode = \"none\"\n";
    for platform in ["macos", "linux"] {
        let out = Sealc::new()
            .file("s.toml", spec)
            .args(["compile", "s.toml", "--out", "out", "--platform", platform])
            .run();
        assert_eq!(out.code, 2, "{platform}");
        assert!(
            out.stderr.contains(
                "`/tmp/x` is listed in both `filesystem.write` and `filesystem.deny_read`"
            ),
            "{platform}: {}",
            out.stderr
        );
        assert!(
            !out.stderr.contains("/private"),
            "{platform}: {}",
            out.stderr
        );
    }
}

#[test]
fn a_value_of_the_wrong_type_shows_the_shape_it_takes() {
    for (written, path, shape) in [
        (
            "[exec]\ntimeout = 1800\n",
            "`exec.timeout` must be a table, found an integer",
            "write it like `timeout = { bin = \"/usr/bin/timeout\", seconds = 240 }`",
        ),
        (
            "[filesystem]\ndeny_read = \"/x\"\n",
            "`filesystem.deny_read` must be an array of strings, found a string",
            "write it like `deny_read = [\"${home}/.ssh\"]`",
        ),
        (
            "[network]\nports = [\"443\"]\n",
            "`network.ports[0]` must be an integer or a `${var}`, found a string",
            "write it like `ports = [443]`",
        ),
        (
            "[vars]\nrun = \"/r\"\n",
            "`vars.run` must be a table, found a string",
            "write it like `run = { required = true, help = \"the run directory\" }`",
        ),
    ] {
        let out = Sealc::new()
            .file(
                "s.toml",
                format!("version = 1\nname = \"friction\"\n{written}"),
            )
            .args(["compile", "s.toml", "--out", "out"])
            .run();
        assert_eq!(out.code, 2, "{written}");
        let err = flat(&out.stderr);
        assert!(err.contains(path), "{}", out.stderr);
        assert!(err.contains(&format!("help: {shape}")), "{}", out.stderr);
    }
}

const SECRET_PASS: &str = r#"version = 1
name = "friction"
[target]
platform = "linux"
[vars]
unused = { default = "/x" }
[network]
mode = "none"
[env]
pass = ["PATH", "GITHUB_TOKEN"]
"#;

#[test]
fn compile_warns_about_a_secret_it_records() {
    let out = Sealc::new()
        .file("s.toml", SECRET_PASS)
        .env("GITHUB_TOKEN", "ghp_friction")
        .args(["compile", "s.toml", "--out", "out"])
        .run();
    assert_eq!(out.code, 0, "{}", out.stderr);
    let err = flat(&out.stderr);
    assert!(err.contains("sealc::lint::secret_pass"), "{}", out.stderr);
    assert!(
        err.contains("`GITHUB_TOKEN` looks like a secret, and `pass` records its value"),
        "{}",
        out.stderr
    );
    assert!(
        err.contains("list `GITHUB_TOKEN` under `env.secret` instead"),
        "{}",
        out.stderr
    );
    assert_eq!(
        err.matches("sealc::lint::secret_pass").count(),
        1,
        "{}",
        out.stderr
    );
    // Every other warning lint has for the spec is reported too.
    assert!(err.contains("sealc::lint::unused_var"), "{}", out.stderr);
    // The value was recorded, as the warning says, and never printed.
    let env = std::fs::read_to_string(out.path("out/env.json")).unwrap();
    assert!(env.contains("ghp_friction"));
    assert!(!out.stderr.contains("ghp_friction") && !out.stdout.contains("ghp_friction"));
}

#[test]
fn an_unset_secret_looking_pass_is_never_advised_to_be_set() {
    let out = Sealc::new()
        .file("s.toml", SECRET_PASS)
        .args(["compile", "s.toml", "--out", "out"])
        .run();
    assert_eq!(out.code, 0, "{}", out.stderr);
    let err = flat(&out.stderr);
    assert!(
        err.contains("list `GITHUB_TOKEN` under `env.secret` instead"),
        "{}",
        out.stderr
    );
    assert!(
        !err.contains("`GITHUB_TOKEN` before compiling"),
        "{}",
        out.stderr
    );
    assert!(!err.contains("set `GITHUB_TOKEN`"), "{}", out.stderr);
    // One finding for the entry, not two.
    assert!(
        !err.contains("env var `GITHUB_TOKEN` is not set"),
        "{}",
        out.stderr
    );
    assert!(err.contains("env var `PATH` is not set"), "{}", out.stderr);
}

#[test]
fn an_unset_pass_that_looks_secret_gets_the_secret_advice_from_the_facts_too() {
    let spec = sealc::spec::parse(SECRET_PASS).unwrap();
    let (_, warnings) = sealc::facts::gather(
        &spec,
        SECRET_PASS,
        &Vec::new(),
        &sealc::facts::FakeHost::new(),
    )
    .unwrap();
    let absent: Vec<_> = warnings
        .0
        .iter()
        .filter(|d| d.code == "sealc::env::absent")
        .collect();
    assert_eq!(absent.len(), 2, "{warnings:#?}");
    let token = absent
        .iter()
        .find(|d| d.message.contains("GITHUB_TOKEN"))
        .unwrap();
    let help = token.help.as_deref().unwrap();
    assert!(help.contains("list it under `env.secret`"), "{help}");
    assert!(!help.contains("before compiling"), "{help}");
    let path = absent
        .iter()
        .find(|d| d.message.contains("`PATH`"))
        .unwrap();
    assert!(path
        .help
        .as_deref()
        .unwrap()
        .contains("set `PATH` before compiling"));
}

/// A harness points one spec at the stand-in it picks: `${var}` in
/// `network.hosts` is substituted (and recorded), a value that is no host
/// is refused at its entry, and lint, which reads no host, accepts it.
#[test]
fn a_network_host_may_come_from_a_var() {
    const SPEC: &str = r#"#:schema ../schemas/seal-spec.schema.json
version = 1
name = "stand-in"
[target]
platform = "linux"
[vars]
api = { default = "api.openai.com" }
[network]
mode = "allowlist"
hosts = ["${api}", "*.oaiusercontent.com"]
ports = [443]
"#;
    let compile = |var: &[&str]| {
        let mut args = vec!["compile", "s.toml", "--out", "out"];
        args.extend(var);
        Sealc::new().file("s.toml", SPEC).args(args).run()
    };
    let hosts = |out: &Out| -> Vec<String> {
        let env = std::fs::read_to_string(out.path("out/env.json")).unwrap();
        let v: serde_json::Value = serde_json::from_str(&env).unwrap();
        let text = v.to_string();
        ["api.openai.com", "127.0.0.1", "stand-in.test"]
            .into_iter()
            .filter(|h| text.contains(&format!("\"{h}\"")))
            .map(String::from)
            .collect()
    };
    let out = compile(&[]);
    assert_eq!(out.code, 0, "{}", out.stderr);
    assert_eq!(hosts(&out), ["api.openai.com"]);
    let out = compile(&["--var", "api=stand-in.test"]);
    assert_eq!(out.code, 0, "{}", out.stderr);
    assert_eq!(hosts(&out), ["stand-in.test"]);
    let out = compile(&["--var", "api=127.0.0.1"]);
    assert_eq!(out.code, 0, "{}", out.stderr);
    assert_eq!(hosts(&out), ["127.0.0.1"]);
    let out = compile(&["--var", "api=not a host"]);
    assert_eq!(out.code, 2, "{}", out.stderr);
    assert!(
        out.stderr.contains("`not a host` cannot be allowed"),
        "{}",
        out.stderr
    );
    // Lint reads no host: a required var in a host is taken as written,
    // and counts as used.
    let required = SPEC.replace("default = \"api.openai.com\"", "required = true");
    for spec in [SPEC, required.as_str()] {
        let lint = Sealc::new()
            .file("s.toml", spec)
            .args(["lint", "s.toml"])
            .run();
        assert_eq!(lint.code, 0, "{}", lint.stderr);
        assert!(!lint.stderr.contains("unused"), "{}", lint.stderr);
    }
}

/// A harness points one spec at a stand-in on a port it picks: a port of
/// `network.ports` may be one `${var}`, substituted and recorded as a
/// number; a value that is no port is refused at its entry; a string with
/// no var is a type error; lint, which knows no value, accepts it and
/// counts the var as used.
#[test]
fn a_network_port_may_come_from_a_var() {
    const SPEC: &str = r#"#:schema ../schemas/seal-spec.schema.json
version = 1
name = "stand-in"
[target]
platform = "linux"
[vars]
port = { default = "443" }
[network]
mode = "allowlist"
hosts = ["api.openai.com"]
ports = ["${port}", 8443]
"#;
    let compile = |spec: &str, var: &[&str]| {
        let mut args = vec!["compile", "s.toml", "--out", "out"];
        args.extend(var);
        Sealc::new().file("s.toml", spec).args(args).run()
    };
    let ports = |out: &Out| -> serde_json::Value {
        let env = std::fs::read_to_string(out.path("out/env.json")).unwrap();
        let v: serde_json::Value = serde_json::from_str(&env).unwrap();
        fn find(v: &serde_json::Value) -> Option<serde_json::Value> {
            match v {
                serde_json::Value::Object(m) => m
                    .get("ports")
                    .cloned()
                    .or_else(|| m.values().find_map(find)),
                serde_json::Value::Array(a) => a.iter().find_map(find),
                _ => None,
            }
        }
        find(&v).expect("env.json records the ports")
    };
    let out = compile(SPEC, &[]);
    assert_eq!(out.code, 0, "{}", out.stderr);
    assert_eq!(ports(&out), serde_json::json!([443, 8443]));
    let out = compile(SPEC, &["--var", "port=40123"]);
    assert_eq!(out.code, 0, "{}", out.stderr);
    assert_eq!(ports(&out), serde_json::json!([8443, 40123]));
    for bad in ["0", "65536", "http", "0443", " 80"] {
        let out = compile(SPEC, &["--var", &format!("port={bad}")]);
        assert_eq!(out.code, 2, "{bad}: {}", out.stderr);
        assert!(
            out.stderr
                .contains(&format!("port `{bad}` is outside 1-65535")),
            "{bad}: {}",
            out.stderr
        );
        assert!(
            out.stderr.contains("ports = [\"${port}\""),
            "{}",
            out.stderr
        );
    }
    // A string that is not one var alone is no port, as the schema says.
    for written in ["\"443\"", "\"80${port}\"", "\"${port}0\"", "\"${1port}\""] {
        let out = compile(&SPEC.replace("\"${port}\"", written), &[]);
        assert_eq!(out.code, 2, "{written}: {}", out.stderr);
        assert!(
            out.stderr.contains("an integer or a `${var}`"),
            "{written}: {}",
            out.stderr
        );
    }
    let required = SPEC.replace("default = \"443\"", "required = true");
    for spec in [SPEC, required.as_str()] {
        let lint = Sealc::new()
            .file("s.toml", spec)
            .args(["lint", "s.toml"])
            .run();
        assert_eq!(lint.code, 0, "{}", lint.stderr);
        assert!(!lint.stderr.contains("unused"), "{}", lint.stderr);
    }
}

/// npm installs Codex as a `#!/usr/bin/env node` script that starts a
/// native binary of another package: a seal whose launcher is the script
/// pins neither `node` nor that binary, and compile says so, naming the
/// binary to point `launcher.path` at (npm's layout, as in the pinned
/// Codex releases). Pointed at the binary, nothing is said.
#[test]
fn a_script_launcher_is_named_with_what_it_runs() {
    if std::env::consts::ARCH != "x86_64" && std::env::consts::ARCH != "aarch64" {
        common::not_run("npm's Codex ships native binaries for x86_64 and aarch64 only");
    }
    let triple = if std::env::consts::ARCH == "x86_64" {
        ("codex-linux-x64", "x86_64-unknown-linux-musl")
    } else {
        ("codex-linux-arm64", "aarch64-unknown-linux-musl")
    };
    let vendor = format!("npm/node_modules/@openai/{}/vendor/{}", triple.0, triple.1);
    let spec = |launcher: &str| {
        format!(
            "version = 1\nname = \"npm\"\n[target]\nplatform = \"linux\"\n[vars]\nlab = {{ required = true }}\n[launcher]\npath = \"${{lab}}/{launcher}\"\n[network]\nmode = \"none\"\n"
        )
    };
    let run = |launcher: &str| {
        let dir = tempfile::tempdir().unwrap();
        let lab = dir.path().canonicalize().unwrap().display().to_string();
        Sealc::new()
            .in_dir(dir)
            .file(
                "npm/node_modules/@openai/codex/bin/codex.js",
                "#!/usr/bin/env node\n// Unified entry point for the Codex CLI.\n",
            )
            .file(&format!("{vendor}/bin/codex"), b"\x7fELF native".to_vec())
            .file("s.toml", spec(launcher))
            .args(["compile", "s.toml", "--out", "out", "--var"])
            .args([format!("lab={lab}")])
            .run()
    };
    let out = run("npm/node_modules/@openai/codex/bin/codex.js");
    assert_eq!(out.code, 0, "{}", out.stderr);
    // miette wraps long lines anywhere: compared without the wrapping.
    let bare = |t: &str| t.replace(['│', ' ', '\n'], "");
    let err = bare(&out.stderr);
    for said in [
        "sealc::launcher::script",
        "isascriptrunby`/usr/bin/envnode`",
        &format!("{vendor}/bin/codex`"),
        &format!("{vendor}/codex-path`"),
    ] {
        assert!(err.contains(said), "{said}: {}", out.stderr);
    }
    let out = run(&format!("{vendor}/bin/codex"));
    assert_eq!(out.code, 0, "{}", out.stderr);
    assert!(!out.stderr.contains("launcher::script"), "{}", out.stderr);
}

/// npm's native Codex inside a hidden root: its package directory (with
/// the bundled tools beside the binary) is shown read-only with it, an
/// `allow_read` root the artifacts attribute to the launcher, and compile
/// says so; a spec that shows the package itself gets no second root, and
/// one that denies the package by name keeps it hidden, with a warning.
#[test]
fn npm_codex_in_a_hidden_root_is_shown_with_its_package() {
    let vendor = "home/lib/node_modules/@openai/codex-linux-x64/vendor/x86_64-unknown-linux-musl";
    let compile = |extra: &str| {
        let dir = tempfile::tempdir().unwrap();
        let lab = dir.path().canonicalize().unwrap().display().to_string();
        let spec = format!(
            "version = 1\nname = \"npm\"\n[target]\nplatform = \"linux\"\n[vars]\nlab = {{ required = true }}\n[launcher]\npath = \"${{lab}}/{vendor}/bin/codex\"\n[filesystem]\ndeny_read = [\"${{lab}}/home\"]\n{extra}[network]\nmode = \"none\"\n"
        );
        let out = Sealc::new()
            .in_dir(dir)
            .file(&format!("{vendor}/bin/codex"), b"\x7fELF native".to_vec())
            .file(&format!("{vendor}/codex-path/rg"), b"\x7fELF rg".to_vec())
            .file("s.toml", spec)
            .args(["compile", "s.toml", "--out", "out", "--var"])
            .args([format!("lab={lab}")])
            .run();
        (out, lab)
    };
    let bare = |t: &str| t.replace(['│', ' ', '\n'], "");
    let (out, lab) = compile("");
    assert_eq!(out.code, 0, "{}", out.stderr);
    let err = bare(&out.stderr);
    for said in [
        "sealc::launcher::package".to_string(),
        format!("`{lab}/{vendor}/bin/codex`isnpm'snativeCodexinside`{lab}/home`"),
        format!("itspackage`{lab}/{vendor}`isshownread-onlywithit"),
    ] {
        assert!(err.contains(&bare(&said)), "{said}: {}", out.stderr);
    }
    let read = |o: &common::Out| std::fs::read_to_string(o.path("out/seal.bwrap.json")).unwrap();
    let plan: serde_json::Value = serde_json::from_str(&read(&out)).unwrap();
    let steps = plan["steps"].as_array().unwrap();
    let package = steps
        .iter()
        .find(|s| s["spec"] == format!("launcher.path: its npm package \"{lab}/{vendor}\""))
        .unwrap_or_else(|| panic!("no step for the package: {plan:#}"));
    assert_eq!(package["args"][0], "--ro-bind", "{package:#}");

    // Shown by the spec already: no root of the launcher's.
    let (out, _) = compile(&format!("allow_read = [\"${{lab}}/{vendor}\"]\n"));
    assert_eq!(out.code, 0, "{}", out.stderr);
    assert!(!out.stderr.contains("launcher::package"), "{}", out.stderr);
    assert!(!read(&out).contains("its npm package"));

    // Denied by name: the spec's word stands, said as a warning.
    let (out, _) = compile(&format!("metadata_only = [\"${{lab}}/{vendor}\"]\n"));
    assert_eq!(out.code, 0, "{}", out.stderr);
    let err = bare(&out.stderr);
    assert!(err.contains("hidesitspackagebyname"), "{}", out.stderr);
    assert!(!read(&out).contains("its npm package"));

    // A package whose realpath no profile can hold (a `"` in it, through a
    // link): nothing binds it, and compile says the tools stay hidden.
    let dir = tempfile::tempdir().unwrap();
    let lab = dir.path().canonicalize().unwrap();
    let odd = lab.join("odd\"dir");
    std::fs::create_dir_all(odd.join("bin")).unwrap();
    std::fs::write(odd.join("bin/codex"), b"\x7fELF native").unwrap();
    std::fs::create_dir_all(lab.join("home/npm/vendor")).unwrap();
    std::os::unix::fs::symlink(&odd, lab.join("home/npm/vendor/t")).unwrap();
    let l = lab.display();
    let spec = format!(
        "version = 1\nname = \"npm\"\n[target]\nplatform = \"linux\"\n[launcher]\npath = \"{l}/home/npm/vendor/t/bin/codex\"\n[filesystem]\ndeny_read = [\"{l}/home\"]\n"
    );
    let out = Sealc::new()
        .in_dir(dir)
        .file("s.toml", spec)
        .args(["compile", "s.toml", "--out", "out"])
        .run();
    assert_eq!(out.code, 0, "{}", out.stderr);
    let err = bare(&out.stderr);
    assert!(err.contains("sealc::launcher::package"), "{}", out.stderr);
    assert!(err.contains("itsbundledtoolsstayhidden"), "{}", out.stderr);
    assert!(!read(&out).contains("its npm package"));
}
