//! Signed seals against OpenSSH itself: a signature `sealc sign` makes
//! verifies with `ssh-keygen -Y verify`, one `ssh-keygen -Y sign` makes
//! verifies with `sealc verify --allowed-signers`, and every way a
//! signature must not hold is refused, by `sealc verify` (exit 1) and by
//! `sealc exec --allowed-signers` (nothing starts, exit 125).
//!
//! Keys are made by the real `ssh-keygen` in each test's own directory
//! (`HOME` there too). Without `ssh-keygen` on `PATH` these tests are
//! ignored, saying so; the exec test also needs bubblewrap.

mod common;
use common::{text, Verdict};

use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};

/// A directory with a compiled Linux seal (`seal/seal.json`) and two
/// reviewers' keys, `alice` (trusted) and `mallory` (not).
struct Lab {
    _tmp: tempfile::TempDir,
    t: PathBuf,
}

const SPEC: &str = r#"version = 1
name = "signed"
[target]
platform = "linux"
[filesystem]
write = ["@/ws"]
"#;

impl Lab {
    fn new() -> Lab {
        let tmp = tempfile::tempdir_in(env!("CARGO_TARGET_TMPDIR")).unwrap();
        let t = tmp.path().canonicalize().unwrap();
        std::fs::create_dir(t.join("ws")).unwrap();
        std::fs::write(
            t.join("spec.toml"),
            SPEC.replace('@', &t.display().to_string()),
        )
        .unwrap();
        let lab = Lab { _tmp: tmp, t };
        let o = lab.sealc(&[
            "compile",
            "spec.toml",
            "--platform",
            "linux",
            "--out",
            "seal",
            "-q",
        ]);
        assert_eq!(o.status.code(), Some(0), "compile: {}", text(&o));
        for who in ["alice", "mallory"] {
            let o = lab.keygen(&["-q", "-t", "ed25519", "-N", "", "-C", who, "-f", who]);
            assert!(o.status.success(), "ssh-keygen: {}", text(&o));
        }
        lab.allow("");
        lab
    }

    fn p(&self, p: &str) -> PathBuf {
        self.t.join(p)
    }

    fn sealc(&self, args: &[&str]) -> Output {
        Command::new(env!("CARGO_BIN_EXE_sealc"))
            .current_dir(&self.t)
            .env_clear()
            .env("HOME", &self.t)
            .env("PATH", "/usr/bin:/bin")
            .args(args)
            .output()
            .unwrap()
    }

    fn keygen(&self, args: &[&str]) -> Output {
        self.keygen_in(args, None)
    }

    fn keygen_in(&self, args: &[&str], stdin: Option<&Path>) -> Output {
        let mut c = Command::new("ssh-keygen");
        c.current_dir(&self.t)
            .env_clear()
            .env("HOME", &self.t)
            .env("PATH", "/usr/bin:/bin")
            .args(args);
        match stdin {
            Some(p) => c.stdin(std::fs::File::open(p).unwrap()),
            None => c.stdin(Stdio::null()),
        };
        c.output().unwrap()
    }

    /// `allowed_signers`: alice's key, with `opts` as the line's options.
    fn allow(&self, opts: &str) {
        let public = std::fs::read_to_string(self.p("alice.pub")).unwrap();
        let key: Vec<&str> = public.split_whitespace().take(2).collect();
        std::fs::write(
            self.p("allowed"),
            format!("alice@example.com {opts} {}\n", key.join(" ")),
        )
        .unwrap();
    }

    fn verify(&self) -> Output {
        self.sealc(&["verify", "seal/seal.json", "--allowed-signers", "allowed"])
    }

    /// `ssh-keygen -Y verify` of the record's signature for `principal`
    /// in `namespace`, against `allowed`.
    fn ssh_verify(&self, principal: &str, namespace: &str) -> Output {
        self.keygen_in(
            &[
                "-Y",
                "verify",
                "-f",
                "allowed",
                "-I",
                principal,
                "-n",
                namespace,
                "-s",
                "seal/seal.json.sig",
            ],
            Some(&self.p("seal/seal.json")),
        )
    }

    /// A real `ssh-agent` listening on `sock`, once the socket is there.
    fn agent(&self, sock: &Path) -> std::process::Child {
        let agent = Command::new("ssh-agent")
            .args(["-D", "-a"])
            .arg(sock)
            .env_clear()
            .env("HOME", &self.t)
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .expect("ssh-agent");
        for _ in 0..200 {
            if sock.exists() {
                break;
            }
            std::thread::sleep(std::time::Duration::from_millis(10));
        }
        agent
    }

    /// `program` run in the lab with the agent at `sock`.
    fn with_agent(&self, sock: &Path, program: &str, args: &[&str]) -> Output {
        Command::new(program)
            .current_dir(&self.t)
            .env_clear()
            .env("HOME", &self.t)
            .env("PATH", "/usr/bin:/bin")
            .env("SSH_AUTH_SOCK", sock)
            .args(args)
            .stdin(Stdio::null())
            .output()
            .unwrap()
    }

    /// `ssh-keygen -Y sign` of the record, in `namespace`, by `who`.
    fn ssh_sign(&self, who: &str, namespace: &str) {
        let _ = std::fs::remove_file(self.p("seal/seal.json.sig"));
        let o = self.keygen(&[
            "-Y",
            "sign",
            "-q",
            "-f",
            who,
            "-n",
            namespace,
            "seal/seal.json",
        ]);
        assert!(o.status.success(), "ssh-keygen -Y sign: {}", text(&o));
    }
}

/// The signature line of `sealc verify`'s report.
fn signature_line(o: &Output) -> String {
    String::from_utf8_lossy(&o.stdout)
        .lines()
        .find(|l| l.contains(" signature "))
        .unwrap_or_default()
        .to_string()
}

#[test]
#[cfg_attr(
    sealc_no_tool = "ssh-keygen",
    ignore = "needs ssh-keygen (OpenSSH) on PATH"
)]
fn a_seal_signed_by_sealc_verifies_with_ssh_keygen_and_the_other_way() {
    let lab = Lab::new();
    let o = lab.sealc(&["sign", "seal/seal.json", "--key", "alice"]);
    assert_eq!(o.status.code(), Some(0), "sign: {}", text(&o));
    assert!(
        text(&o).contains("signed seal `signed` (binding sha256:"),
        "{}",
        text(&o)
    );
    let sig = std::fs::read_to_string(lab.p("seal/seal.json.sig")).unwrap();
    assert!(sig.starts_with("-----BEGIN SSH SIGNATURE-----\n"), "{sig}");
    let check = |principal: &str, namespace: &str| lab.ssh_verify(principal, namespace);
    let o = check("alice@example.com", "sealc-seal");
    assert!(o.status.success(), "ssh-keygen -Y verify: {}", text(&o));
    assert!(
        text(&o).contains("Good \"sealc-seal\" signature for alice@example.com"),
        "{}",
        text(&o)
    );
    // OpenSSH holds it to its namespace and principal too.
    assert!(!check("alice@example.com", "git").status.success());
    assert!(!check("mallory@example.com", "sealc-seal").status.success());
    // sealc's own check of its own signature.
    let o = lab.verify();
    assert_eq!(o.status.code(), Some(0), "verify: {}", text(&o));
    assert!(signature_line(&o).starts_with("ok "), "{}", text(&o));
    assert!(signature_line(&o).contains("signed by alice@example.com (line 1, ED25519 SHA256:"));

    // The other way: OpenSSH signs, sealc verifies.
    lab.ssh_sign("alice", "sealc-seal");
    let o = lab.verify();
    assert_eq!(o.status.code(), Some(0), "verify: {}", text(&o));
    assert!(
        signature_line(&o).contains("signed by alice@example.com"),
        "{}",
        text(&o)
    );
}

#[test]
#[cfg_attr(
    sealc_no_tool = "ssh-keygen",
    ignore = "needs ssh-keygen (OpenSSH) on PATH"
)]
fn every_way_a_signature_must_not_hold_is_refused() {
    let lab = Lab::new();
    let mut v = Verdict::default();
    let mut expect_refused = |what: &str, lab: &Lab, needle: &str| {
        let o = lab.verify();
        let line = signature_line(&o);
        v.check(
            o.status.code() == Some(1) && line.starts_with("drift ") && line.contains(needle),
            || format!("{what}: wanted drift with `{needle}`:\n{}", text(&o)),
        );
    };
    expect_refused("no signature", &lab, "cannot be read");
    // A fifo planted at the signature's name holds nothing up.
    let o = Command::new("mkfifo")
        .arg(lab.p("seal/seal.json.sig"))
        .output()
        .unwrap();
    assert!(o.status.success(), "mkfifo: {}", text(&o));
    expect_refused("a fifo for a signature", &lab, "not a regular file");
    std::fs::remove_file(lab.p("seal/seal.json.sig")).unwrap();
    lab.ssh_sign("mallory", "sealc-seal");
    expect_refused("an unknown key", &lab, "do not list");
    lab.ssh_sign("alice", "git");
    expect_refused("another namespace", &lab, "namespace `git`");
    lab.ssh_sign("alice", "sealc-seal");
    lab.allow("namespaces=\"git\"");
    expect_refused("a line for another namespace", &lab, "for `git` only");
    lab.allow("valid-before=\"20200101Z\"");
    expect_refused("an expired line", &lab, "expired");
    lab.allow("valid-after=\"29990101Z\"");
    expect_refused(
        "a line not yet valid",
        &lab,
        "only from 2999-01-01T00:00:00Z",
    );
    lab.allow("cert-authority");
    expect_refused("a certificate authority", &lab, "plain keys only");
    lab.allow("");

    // Single-byte changes of the signed record, spread over it: each is
    // refused by the signature (besides the record's own drift).
    let record = std::fs::read(lab.p("seal/seal.json")).unwrap();
    for i in (0..record.len()).step_by(record.len() / 12 + 1) {
        let mut changed = record.clone();
        changed[i] ^= 0x01;
        std::fs::write(lab.p("seal/seal.json"), &changed).unwrap();
        expect_refused(&format!("byte {i} changed"), &lab, "does not match");
    }
    std::fs::write(lab.p("seal/seal.json"), &record).unwrap();
    // A signature of another record by the trusted key, swapped in.
    std::fs::write(lab.p("other.json"), b"{}\n").unwrap();
    let o = lab.keygen(&[
        "-Y",
        "sign",
        "-q",
        "-f",
        "alice",
        "-n",
        "sealc-seal",
        "other.json",
    ]);
    assert!(o.status.success(), "{}", text(&o));
    std::fs::copy(lab.p("other.json.sig"), lab.p("seal/seal.json.sig")).unwrap();
    expect_refused("another record's signature", &lab, "does not match");
    lab.ssh_sign("alice", "sealc-seal");
    let o = lab.verify();
    v.check(o.status.code() == Some(0), || {
        format!("restored: {}", text(&o))
    });

    // Bad input: exit 2, nothing written.
    let o = lab.sealc(&["verify", "seal/seal.json", "--allowed-signers", "nowhere"]);
    v.check(o.status.code() == Some(2), || {
        format!("no allowed signers: {}", text(&o))
    });
    std::fs::set_permissions(lab.p("mallory"), std::fs::Permissions::from_mode(0o644)).unwrap();
    let o = lab.sealc(&[
        "sign",
        "seal/seal.json",
        "--key",
        "mallory",
        "--signature",
        "m.sig",
    ]);
    v.check(
        o.status.code() == Some(2)
            && text(&o).contains("lets others read it")
            && !lab.p("m.sig").exists(),
        || format!("an unprotected key: {}", text(&o)),
    );
    let o = lab.keygen(&["-q", "-t", "ed25519", "-N", "secret words", "-f", "locked"]);
    assert!(o.status.success(), "{}", text(&o));
    let o = lab.sealc(&[
        "sign",
        "seal/seal.json",
        "--key",
        "locked",
        "--signature",
        "l.sig",
    ]);
    v.check(
        o.status.code() == Some(2) && text(&o).contains("passphrase") && !lab.p("l.sig").exists(),
        || format!("an encrypted key: {}", text(&o)),
    );
    let o = lab.sealc(&[
        "sign",
        "seal/seal.json",
        "--key",
        "alice.pub",
        "--signature",
        "p.sig",
    ]);
    v.check(
        o.status.code() == Some(2) && !lab.p("p.sig").exists(),
        || format!("a public key: {}", text(&o)),
    );
    // The signature never replaces the record it signs.
    let o = lab.sealc(&[
        "sign",
        "seal/seal.json",
        "--key",
        "alice",
        "--signature",
        "seal/seal.json",
    ]);
    v.check(
        o.status.code() == Some(2) && std::fs::read(lab.p("seal/seal.json")).unwrap() == record,
        || format!("the record overwritten by its signature: {}", text(&o)),
    );
    // A record that does not verify is not signed.
    let mut changed = record.clone();
    let at = record.len() / 2;
    changed[at] ^= 0x01;
    std::fs::write(lab.p("seal/seal.json"), &changed).unwrap();
    let o = lab.sealc(&[
        "sign",
        "seal/seal.json",
        "--key",
        "alice",
        "--signature",
        "d.sig",
    ]);
    v.check(
        o.status.code() != Some(0) && !lab.p("d.sig").exists(),
        || format!("a drifted record was signed: {}", text(&o)),
    );
    v.done();
}

#[test]
#[cfg_attr(
    sealc_no_tool = "ssh-keygen",
    ignore = "needs ssh-keygen, ssh-agent and ssh-add (OpenSSH) on PATH"
)]
fn a_key_in_the_running_ssh_agent_signs() {
    let lab = Lab::new();
    let sock = lab.p("agent.sock");
    let mut agent = lab.agent(&sock);
    let with_agent = |args: &[&str], program: &str| lab.with_agent(&sock, program, args);
    let o = with_agent(&["-q", "alice"], "ssh-add");
    let added = o.status.success();
    let sealc = env!("CARGO_BIN_EXE_sealc");
    let signed = with_agent(&["sign", "seal/seal.json", "--key", "alice.pub"], sealc);
    let refused = with_agent(
        &[
            "sign",
            "seal/seal.json",
            "--key",
            "mallory.pub",
            "--signature",
            "m.sig",
        ],
        sealc,
    );
    let _ = agent.kill();
    let _ = agent.wait();
    assert!(added, "ssh-add: {}", text(&o));
    assert_eq!(
        signed.status.code(),
        Some(0),
        "sign through the agent: {}",
        text(&signed)
    );
    let o = lab.ssh_verify("alice@example.com", "sealc-seal");
    assert!(o.status.success(), "ssh-keygen -Y verify: {}", text(&o));
    let o = lab.verify();
    assert_eq!(o.status.code(), Some(0), "verify: {}", text(&o));
    assert!(
        refused.status.code() == Some(2)
            && text(&refused).contains("does not hold the key")
            && !lab.p("m.sig").exists(),
        "a key the agent does not hold: {}",
        text(&refused)
    );
}

#[test]
#[cfg_attr(
    any(sealc_no_tool = "ssh-keygen", sealc_no_bwrap),
    ignore = "needs ssh-keygen (OpenSSH) on PATH and bubblewrap"
)]
fn exec_runs_only_a_seal_a_trusted_key_signed() {
    if !common::bwrap_works() {
        return;
    }
    let lab = Lab::new();
    let run = |lab: &Lab, marker: &str| {
        let report = lab.p(&format!("{marker}.json"));
        let o = lab.sealc(&[
            "exec",
            "seal/seal.json",
            "--allowed-signers",
            "allowed",
            "--report",
            report.to_str().unwrap(),
            "--",
            "/bin/sh",
            "-c",
            &format!("echo ran > {}/ws/{marker}", lab.t.display()),
        ]);
        let report: serde_json::Value =
            serde_json::from_slice(&std::fs::read(&report).unwrap()).unwrap();
        (o, report, lab.p(&format!("ws/{marker}")).exists())
    };
    let mut v = Verdict::default();
    let (o, report, ran) = run(&lab, "unsigned");
    v.check(o.status.code() == Some(125) && !ran, || {
        format!("unsigned: {}", text(&o))
    });
    v.check(report["outcome"]["phase"] == "verify", || {
        format!("unsigned report: {report}")
    });
    lab.ssh_sign("mallory", "sealc-seal");
    let (o, _, ran) = run(&lab, "mallory");
    v.check(
        o.status.code() == Some(125) && !ran && text(&o).contains("is not signed by a trusted key"),
        || format!("signed by mallory: {}", text(&o)),
    );
    let o = lab.sealc(&["sign", "seal/seal.json", "--key", "alice"]);
    assert_eq!(o.status.code(), Some(0), "{}", text(&o));
    let (o, report, ran) = run(&lab, "alice");
    v.check(o.status.code() == Some(0) && ran, || {
        format!("signed by alice: {}", text(&o))
    });
    v.check(
        report["signed_by"]["principals"] == serde_json::json!(["alice@example.com"])
            && report["signed_by"]["key"]
                .as_str()
                .is_some_and(|k| k.starts_with("ED25519 SHA256:")),
        || format!("the report names no signer: {report}"),
    );
    // The trusted key's line expired: nothing starts.
    lab.allow("valid-before=\"20200101Z\"");
    let (o, _, ran) = run(&lab, "expired");
    v.check(
        o.status.code() == Some(125) && !ran && text(&o).contains("expired"),
        || format!("an expired signer: {}", text(&o)),
    );
    v.done();
}

/// RSA and ECDSA keys, both ways with OpenSSH's own tools: an ECDSA key
/// (P-256, P-384) signs a seal `ssh-keygen -Y verify` accepts; a seal
/// `ssh-keygen -Y sign` signed with RSA or ECDSA verifies with sealc, its
/// key named as `ssh-keygen -l` names it; an RSA key signs through the
/// ssh-agent (as `rsa-sha2-512`), and an RSA key file is refused with the
/// way that works.
#[test]
#[cfg_attr(
    sealc_no_tool = "ssh-keygen",
    ignore = "needs ssh-keygen, ssh-agent and ssh-add (OpenSSH) on PATH"
)]
fn rsa_and_ecdsa_keys_sign_and_verify_both_ways() {
    let lab = Lab::new();
    let kinds: [(&str, &[&str], &str); 3] = [
        ("p256", &["-t", "ecdsa", "-b", "256"], "ECDSA SHA256:"),
        ("p384", &["-t", "ecdsa", "-b", "384"], "ECDSA SHA256:"),
        ("rsa", &["-t", "rsa", "-b", "3072"], "RSA SHA256:"),
    ];
    let ssh_verify = |who: &str| lab.ssh_verify(&format!("{who}@example.com"), "sealc-seal");
    for (who, args, shown) in kinds {
        let mut a = vec!["-q", "-N", "", "-C", who, "-f", who];
        a.extend_from_slice(args);
        let o = lab.keygen(&a);
        assert!(o.status.success(), "ssh-keygen: {}", text(&o));
        let public = std::fs::read_to_string(lab.p(&format!("{who}.pub"))).unwrap();
        let key: Vec<&str> = public.split_whitespace().take(2).collect();
        std::fs::write(
            lab.p("allowed"),
            format!("{who}@example.com {}\n", key.join(" ")),
        )
        .unwrap();

        // OpenSSH signs, sealc verifies.
        lab.ssh_sign(who, "sealc-seal");
        let o = lab.verify();
        assert_eq!(o.status.code(), Some(0), "{who}: {}", text(&o));
        let line = signature_line(&o);
        assert!(
            line.starts_with("ok ")
                && line.contains(&format!("signed by {who}@example.com (line 1, {shown}")),
            "{who}: {line}"
        );

        // sealc signs, OpenSSH verifies: a file key, or RSA's refusal.
        let _ = std::fs::remove_file(lab.p("seal/seal.json.sig"));
        let o = lab.sealc(&["sign", "seal/seal.json", "--key", who]);
        if who == "rsa" {
            assert_eq!(o.status.code(), Some(2), "{}", text(&o));
            assert!(
                text(&o).contains("through the ssh-agent only"),
                "{}",
                text(&o)
            );
            assert!(!lab.p("seal/seal.json.sig").exists());
            continue;
        }
        assert_eq!(o.status.code(), Some(0), "{who}: {}", text(&o));
        let o = ssh_verify(who);
        assert!(
            o.status.success(),
            "{who}: ssh-keygen -Y verify: {}",
            text(&o)
        );
    }

    // RSA through the agent: SHA-512, accepted by OpenSSH and by sealc.
    let sock = lab.p("agent.sock");
    let mut agent = lab.agent(&sock);
    let with_agent = |args: &[&str], program: &str| lab.with_agent(&sock, program, args);
    let added = with_agent(&["-q", "rsa"], "ssh-add");
    let signed = with_agent(
        &["sign", "seal/seal.json", "--key", "rsa.pub"],
        env!("CARGO_BIN_EXE_sealc"),
    );
    let _ = agent.kill();
    let _ = agent.wait();
    assert!(added.status.success(), "ssh-add: {}", text(&added));
    assert_eq!(signed.status.code(), Some(0), "{}", text(&signed));
    let sig = std::fs::read_to_string(lab.p("seal/seal.json.sig")).unwrap();
    let o = ssh_verify("rsa");
    assert!(
        o.status.success(),
        "ssh-keygen -Y verify: {}\n{sig}",
        text(&o)
    );
    let o = lab.verify();
    assert_eq!(o.status.code(), Some(0), "{}", text(&o));
    assert!(signature_line(&o).contains("RSA SHA256:"), "{}", text(&o));
}
