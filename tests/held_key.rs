//! A key sealc holds (`[codex.provider] hold_key = true`), end to end with
//! the real Codex under bubblewrap: Codex is given no key, sends plain HTTP
//! to the API's host and port through sealc's own proxy, and the proxy adds
//! the key and speaks TLS to the API. The API here is the Codex tests'
//! stand-in model behind a TLS front of this test's (a certificate authority
//! of its own, given to sealc as `SSL_CERT_FILE`; the API's name reached
//! through `--resolve`). The stand-in records what reached it.
//!
//! What must hold: every request the model received carries the key; no
//! tool Codex runs finds it (its environment, every `/proc/*/environ` it can
//! read, every file under the Codex home and the run); a tool that uses the
//! route for a path outside the base URL's is refused; the report names the
//! held key on each request it was added to, and holds no key; the config
//! gives Codex an `http://` base URL and no `env_key`.

mod codex_support;
mod common;

use std::path::PathBuf;
use std::sync::Arc;

use codex_support::*;
use common::*;

const VERSION: &str = "0.171.0";
/// The key; tools search for it by `KEY_PATTERN`, which does not match itself.
const KEY: &str = "sk-held-8421x";
const KEY_PATTERN: &str = "sk-held-[0-9]{4}x";
const NAME: &str = "api.sealc.test";

/// A certificate authority (PEM) and a TLS acceptor for `NAME` it signed.
fn pki() -> (String, tokio_rustls::TlsAcceptor) {
    let ca_key = rcgen::KeyPair::generate().unwrap();
    let mut ca = rcgen::CertificateParams::new(Vec::<String>::new()).unwrap();
    ca.is_ca = rcgen::IsCa::Ca(rcgen::BasicConstraints::Unconstrained);
    let ca_cert = ca.self_signed(&ca_key).unwrap();
    let issuer = rcgen::Issuer::new(ca, ca_key);
    let key = rcgen::KeyPair::generate().unwrap();
    let leaf = rcgen::CertificateParams::new(vec![NAME.to_string()])
        .unwrap()
        .signed_by(&key, &issuer)
        .unwrap();
    #[allow(deprecated)]
    let provider = Arc::new(rustls::crypto::ring::default_provider());
    let config = rustls::ServerConfig::builder_with_provider(provider)
        .with_safe_default_protocol_versions()
        .unwrap()
        .with_no_client_auth()
        .with_single_cert(
            vec![leaf.der().clone()],
            rustls::pki_types::PrivateKeyDer::Pkcs8(key.serialize_der().into()),
        )
        .unwrap();
    (
        ca_cert.pem(),
        tokio_rustls::TlsAcceptor::from(Arc::new(config)),
    )
}

/// A TLS front on `l` that ends TLS and relays each connection to the
/// stand-in's plain port `to`.
fn tls_front(l: std::net::TcpListener, acceptor: tokio_rustls::TlsAcceptor, to: u16) {
    l.set_nonblocking(true).unwrap();
    std::thread::spawn(move || {
        let rt = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .unwrap();
        rt.block_on(async move {
            let l = tokio::net::TcpListener::from_std(l).unwrap();
            loop {
                let Ok((c, _)) = l.accept().await else { return };
                let acceptor = acceptor.clone();
                tokio::spawn(async move {
                    let Ok(mut tls) = acceptor.accept(c).await else {
                        return;
                    };
                    let Ok(mut plain) = tokio::net::TcpStream::connect(("127.0.0.1", to)).await
                    else {
                        return;
                    };
                    let _ = tokio::io::copy_bidirectional(&mut tls, &mut plain).await;
                });
            }
        });
    });
}

#[test]
#[cfg_attr(
    any(sealc_no_bwrap, sealc_no_codex = "0.171.0"),
    ignore = "needs bubblewrap and Codex 0.171.0 (bash .ci/install-codex)"
)]
fn codex_uses_a_key_that_no_tool_it_runs_can_find() {
    if !bwrap_works() {
        return;
    }
    let Some(releases) = releases(&[VERSION]) else {
        return;
    };
    held_run(&releases[0].1, None);
}

/// The same, `sealc` started by an unprivileged caller (the proxy, and so
/// the key, in a process of that user's own).
#[test]
#[cfg_attr(
    any(
        sealc_no_bwrap,
        sealc_not_root,
        sealc_cannot_become = "sealc-test",
        sealc_no_codex = "0.171.0"
    ),
    ignore = "needs bubblewrap, root, setpriv, the user sealc-test and Codex 0.171.0"
)]
fn an_unprivileged_caller_holds_the_key_too() {
    if !ready_as_root_with(&[USER]) {
        return;
    }
    let Some(releases) = releases(&[VERSION]) else {
        return;
    };
    held_run(&releases[0].1, Some(USER));
}

/// sealc as `who` (root when `None`), as an operator runs it in the lab.
fn caller(t: &std::path::Path, who: Option<&str>) -> std::process::Command {
    match who {
        None => operator_sealc(t),
        Some(u) => {
            let mut c = as_user(Some(u), &[env!("CARGO_BIN_EXE_sealc")]);
            c.env("HOME", t.join("op"));
            c
        }
    }
}

fn held_run(bin: &std::path::Path, who: Option<&str>) {
    let tmp = tempfile::tempdir_in(env!("CARGO_TARGET_TMPDIR")).unwrap();
    let t: PathBuf = tmp.path().canonicalize().unwrap();
    // Started by root, the agent runs as `nobody`: it must reach the lab.
    std::fs::set_permissions(&t, std::os::unix::fs::PermissionsExt::from_mode(0o755)).unwrap();
    for d in ["op", "run/home", "run/ws", "run/tmp"] {
        std::fs::create_dir_all(t.join(d)).unwrap();
    }
    let (ca_pem, acceptor) = pki();
    std::fs::write(t.join("op/ca.pem"), ca_pem).unwrap();
    if let Some(u) = who {
        let (uid, gid) = ids(u);
        let chown = std::process::Command::new("chown")
            .arg("-R")
            .arg(format!("{uid}:{gid}"))
            .arg(&t)
            .status()
            .unwrap();
        assert!(chown.success());
    }
    // The front's port first: the tools' script names it.
    let front = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let port = front.local_addr().unwrap().port();

    // The tools: the env; every environment they can read, and every file
    // of the Codex home and the run, searched for the key by a pattern that
    // is not the key (and for its variable's name); the route used for a
    // path outside `/v1` (bash's /dev/tcp to the proxy in `HTTP_PROXY`).
    let script = vec![
        "env".to_string(),
        // (Each environment read is said too: Codex's, the tool's parent,
        // must be among them, or the search proves nothing.)
        format!("echo parent=$PPID; for p in /proc/[0-9]*; do e=$(tr '\\0' '\\n' < $p/environ 2>/dev/null) || continue; echo \"readable ${{p#/proc/}}\"; echo \"$e\" | grep -qE '{KEY_PATTERN}|OPENAI_API_KEY' && echo \"key-in ${{p#/proc/}}\"; done; echo scanned"),
        format!(
            "grep -rlE '{KEY_PATTERN}' \"$CODEX_HOME\" {} 2>/dev/null; echo searched",
            t.join("run").display()
        ),
        format!(
            "exec 3<>/dev/tcp/127.0.0.1/${{HTTP_PROXY##*:}}; printf 'GET http://{NAME}:{port}/admin HTTP/1.1\\r\\nHost: x\\r\\n\\r\\n' >&3; head -c 300 <&3; echo; echo asked"
        ),
        // The same, climbing out of `/v1` with a dot segment.
        format!(
            "exec 3<>/dev/tcp/127.0.0.1/${{HTTP_PROXY##*:}}; printf 'GET http://{NAME}:{port}/v1/../admin HTTP/1.1\\r\\nHost: x\\r\\n\\r\\n' >&3; head -c 300 <&3; echo; echo asked"
        ),
    ];
    let standin = StandIn::start(script);
    tls_front(front, acceptor, standin.port);

    let out = caller(&t, who)
        .current_dir(&t)
        .arg("compile")
        .arg(root().join("tests/codex/held-key.toml"))
        .args(["--out", "seal", "--force"])
        .arg(format!("--var=run={}", t.join("run").display()))
        .arg(format!("--var=codex={}", bin.display()))
        .arg(format!("--var=api_port={port}"))
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "compile: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    let config = std::fs::read_to_string(t.join("seal/codex/config.toml")).unwrap();
    assert!(
        config.contains(&format!("base_url = \"http://{NAME}:{port}/v1\"")),
        "{config}"
    );
    assert!(!config.contains("env_key"), "{config}");
    let env_json = std::fs::read_to_string(t.join("seal/env.json")).unwrap();
    assert!(env_json.contains("\"held_keys\""), "{env_json}");

    let out = caller(&t, who)
        .current_dir(t.join("run/ws"))
        .env("OPENAI_API_KEY", KEY)
        .env("SSL_CERT_FILE", t.join("op/ca.pem"))
        .arg("exec")
        .arg(t.join("seal/seal.json"))
        .arg(format!("--resolve={NAME}=127.0.0.1"))
        .arg("--report")
        .arg(t.join("run.json"))
        .args([
            "--",
            "codex",
            "exec",
            "--skip-git-repo-check",
            "do the task",
        ])
        .output()
        .unwrap();
    let (stdout, stderr) = (
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr),
    );
    assert_eq!(out.status.code(), Some(0), "{who:?}: {stdout}\n{stderr}");
    assert!(stdout.contains(FINAL), "{stdout}\n{stderr}");
    assert!(
        !stdout.contains(KEY) && !stderr.contains(KEY),
        "{stdout}\n{stderr}"
    );

    // Every request reached the model with the key, which Codex never had.
    let requests = standin.requests();
    assert_eq!(requests.len(), 6, "{requests:#?}");
    for r in &requests {
        assert!(r.target.ends_with("/v1/responses"), "{}", r.target);
        assert_eq!(
            r.header("authorization"),
            Some(format!("Bearer {KEY}").as_str())
        );
    }
    let outputs = requests.last().unwrap().tool_outputs();
    assert_eq!(outputs.len(), 5, "{outputs:#?}");
    let output = |i: usize| outputs[i].1.as_str();
    // 1. Not in the tools' environment.
    assert!(output(0).contains("CODEX_HOME="), "{}", output(0));
    assert!(!output(0).contains("OPENAI_API_KEY"), "{}", output(0));
    // 2. Not in any environment a tool can read: not even Codex's.
    assert!(output(1).contains("scanned"), "{}", output(1));
    assert!(!output(1).contains("key-in"), "{}", output(1));
    let parent = output(1)
        .lines()
        .find_map(|l| l.strip_prefix("parent="))
        .unwrap_or_else(|| panic!("{}", output(1)));
    assert!(
        output(1).contains(&format!("readable {parent}\n")),
        "Codex's environment was not read: {}",
        output(1)
    );
    // 3. Not in any file of the Codex home or the run.
    assert!(output(2).contains("searched"), "{}", output(2));
    let found: Vec<&str> = output(2)
        .lines()
        .skip_while(|l| !l.starts_with("Output:"))
        .skip(1)
        .filter(|l| l.starts_with('/'))
        .collect();
    assert_eq!(found, Vec::<&str>::new(), "{}", output(2));
    // 4. The route serves the base URL's path alone.
    assert!(output(3).contains("asked"), "{}", output(3));
    assert!(output(3).contains("403"), "{}", output(3));
    assert!(
        output(3).contains("only paths under `/v1`"),
        "{}",
        output(3)
    );
    assert!(output(4).contains("asked"), "{}", output(4));
    assert!(output(4).contains("403"), "{}", output(4));

    // The report names the held key where it was added, and holds no key.
    let text = std::fs::read_to_string(t.join("run.json")).unwrap();
    assert!(!text.contains(KEY), "the key is in the report");
    let report: serde_json::Value = serde_json::from_str(&text).unwrap();
    let net = report["network"].as_array().unwrap();
    let held = net
        .iter()
        .filter(|e| e["held_key"] == "OPENAI_API_KEY")
        .count();
    assert_eq!(held, requests.len(), "{net:#?}");
    let refused = net
        .iter()
        .filter(|e| e["decision"] == "refused" && e["held_key"].is_null())
        .count();
    assert_eq!(refused, 2, "{net:#?}");
}
