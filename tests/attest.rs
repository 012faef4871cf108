//! Run attestations, end to end: a reviewer signs the seal, the harness
//! runs it under `--allowed-signers` with `--attest` and `--sign-key`
//! (bubblewrap, for real), and a grader on a "second host" (another temp
//! tree sharing nothing but the envelope, the record with its artifacts,
//! the outputs and the public keys) checks it with `sealc verify-run`.
//! Every way the attestation must not hold is refused.
//!
//! Keys are made by the real `ssh-keygen`. Without it, or without
//! bubblewrap, these tests are ignored, saying so.

mod common;
use common::{text, Verdict};

use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};

const SPEC: &str = r#"version = 1
name = "attested"
[target]
platform = "linux"
[filesystem]
write = ["@/ws"]
"#;

struct Lab {
    _tmp: tempfile::TempDir,
    t: PathBuf,
}

impl Lab {
    fn new() -> Lab {
        let tmp = tempfile::tempdir_in(env!("CARGO_TARGET_TMPDIR")).unwrap();
        let t = tmp.path().canonicalize().unwrap();
        Lab { _tmp: tmp, t }
    }

    fn p(&self, p: &str) -> PathBuf {
        self.t.join(p)
    }

    fn run(&self, program: &str, args: &[&str]) -> Output {
        Command::new(program)
            .current_dir(&self.t)
            .env_clear()
            .env("HOME", &self.t)
            .env("PATH", "/usr/bin:/bin")
            .args(args)
            .stdin(Stdio::null())
            .output()
            .unwrap()
    }

    fn sealc(&self, args: &[&str]) -> Output {
        self.run(env!("CARGO_BIN_EXE_sealc"), args)
    }

    /// `sealc ARGS` as `user` (root's own with `None`), as the harness runs it.
    fn sealc_as(&self, user: Option<&str>, args: &[&str]) -> Output {
        let argv: Vec<&str> = std::iter::once(env!("CARGO_BIN_EXE_sealc"))
            .chain(args.iter().copied())
            .collect();
        common::as_user(user, &argv)
            .current_dir(&self.t)
            .env_clear()
            .env("HOME", &self.t)
            .env("PATH", "/usr/bin:/bin")
            .stdin(Stdio::null())
            .output()
            .unwrap()
    }

    fn key(&self, who: &str) -> String {
        let o = self.run(
            "ssh-keygen",
            &["-q", "-t", "ed25519", "-N", "", "-C", who, "-f", who],
        );
        assert!(o.status.success(), "ssh-keygen: {}", text(&o));
        let public = std::fs::read_to_string(self.p(&format!("{who}.pub"))).unwrap();
        public
            .split_whitespace()
            .take(2)
            .collect::<Vec<_>>()
            .join(" ")
    }
}

fn copy(from: &Path, to: &Path) {
    std::fs::create_dir_all(to.parent().unwrap()).unwrap();
    std::fs::copy(from, to).unwrap();
}

/// The harness's host: a signed seal run with an attestation. Returns the
/// lab, the seal's binding and the runner's public key line.
fn attested_run(script: &str) -> (Lab, String, String) {
    attested_run_with(script, &[])
}

fn attested_run_with(script: &str, extra: &[&str]) -> (Lab, String, String) {
    attested_run_as(None, script, extra)
}

/// As [`attested_run_with`]; with `user`, the harness (its key, its write
/// root, its output directory) is that unprivileged user's, and it runs
/// `sealc exec` itself. The reviewer (root here) signs the seal.
fn attested_run_as(user: Option<&str>, script: &str, extra: &[&str]) -> (Lab, String, String) {
    attested_run_of(SPEC, user, script, extra)
}

/// As [`attested_run_as`], for the seal of `spec` (`@` is the lab).
fn attested_run_of(
    spec: &str,
    user: Option<&str>,
    script: &str,
    extra: &[&str],
) -> (Lab, String, String) {
    let lab = Lab::new();
    if user.is_some() {
        use std::os::unix::fs::PermissionsExt;
        std::fs::set_permissions(&lab.t, std::fs::Permissions::from_mode(0o755)).unwrap();
    }
    std::fs::create_dir(lab.p("ws")).unwrap();
    std::fs::create_dir(lab.p("out")).unwrap();
    std::fs::write(
        lab.p("spec.toml"),
        spec.replace('@', &lab.t.display().to_string()),
    )
    .unwrap();
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
    let reviewer = lab.key("reviewer");
    let runner = lab.key("runner");
    std::fs::write(
        lab.p("reviewers"),
        format!("reviewer@example.com namespaces=\"sealc-seal\" {reviewer}\n"),
    )
    .unwrap();
    let o = lab.sealc(&["sign", "seal/seal.json", "--key", "reviewer"]);
    assert_eq!(o.status.code(), Some(0), "sign: {}", text(&o));
    if let Some(u) = user {
        let (uid, gid) = common::ids(u);
        for f in ["ws", "out", "runner", "runner.pub"] {
            std::os::unix::fs::chown(lab.p(f), Some(uid), Some(gid)).unwrap();
        }
    }
    let sealc = env!("CARGO_BIN_EXE_sealc");
    let argv: Vec<&str> = std::iter::once(sealc)
        .chain([
            "exec",
            "seal/seal.json",
            "--allowed-signers",
            "reviewers",
            "--attest",
            "out/att.json",
            "--sign-key",
            "runner",
            "--stdout",
            "out/stdout.txt",
            "--stderr",
            "out/stderr.txt",
        ])
        .chain(extra.iter().copied())
        .chain(["--", "/bin/sh", "-c", script])
        .collect();
    let o = common::as_user(user, &argv)
        .current_dir(&lab.t)
        .env_clear()
        .env("HOME", &lab.t)
        .env("PATH", "/usr/bin:/bin")
        .stdin(Stdio::null())
        .output()
        .unwrap();
    assert!(
        lab.p("out/att.json").exists(),
        "no attestation: {}",
        text(&o)
    );
    let record: serde_json::Value =
        serde_json::from_slice(&std::fs::read(lab.p("seal/seal.json")).unwrap()).unwrap();
    let binding = record["binding"].as_str().unwrap().to_string();
    (lab, binding, runner)
}

/// The grader's host: only the envelope, the record and its artifacts,
/// the outputs, and the runner's public key in an allowed_signers file.
fn second_host(lab: &Lab, runner_line: &str) -> Lab {
    let g = Lab::new();
    for f in [
        "out/att.json",
        "out/stdout.txt",
        "out/stderr.txt",
        "seal/seal.json",
    ] {
        copy(&lab.p(f), &g.p(f));
    }
    for e in std::fs::read_dir(lab.p("seal")).unwrap().flatten() {
        if e.file_type().unwrap().is_dir() {
            for f in std::fs::read_dir(e.path()).unwrap().flatten() {
                copy(
                    &f.path(),
                    &g.p(&format!(
                        "seal/{}/{}",
                        e.file_name().to_string_lossy(),
                        f.file_name().to_string_lossy()
                    )),
                );
            }
        } else {
            copy(
                &e.path(),
                &g.p(&format!("seal/{}", e.file_name().to_string_lossy())),
            );
        }
    }
    std::fs::write(g.p("runners"), format!("{runner_line}\n")).unwrap();
    g
}

fn verify_run(g: &Lab, extra: &[&str]) -> Output {
    let mut args = vec!["verify-run", "out/att.json", "--allowed-signers", "runners"];
    args.extend_from_slice(extra);
    g.sealc(&args)
}

#[test]
#[cfg_attr(
    any(sealc_no_tool = "ssh-keygen", sealc_no_bwrap),
    ignore = "needs ssh-keygen (OpenSSH) on PATH and bubblewrap"
)]
fn a_grader_elsewhere_tells_these_outputs_came_from_that_seal() {
    if !common::bwrap_works() {
        return;
    }
    let (lab, binding, runner) = attested_run("echo the answer; echo a warning >&2");
    assert_eq!(
        std::fs::read_to_string(lab.p("out/stdout.txt")).unwrap(),
        "the answer\n"
    );
    let g = second_host(
        &lab,
        &format!("ci@example.com namespaces=\"sealc-run\" {runner}"),
    );
    drop(lab);
    let all = [
        "--expect",
        &binding,
        "--subject",
        "out/stdout.txt",
        "--subject",
        "out/stderr.txt",
        "--record",
        "seal/seal.json",
    ];
    let o = verify_run(&g, &all);
    assert_eq!(o.status.code(), Some(0), "verify-run: {}", text(&o));
    let t = text(&o);
    for needle in [
        "ok          signature",
        "signed by ci@example.com",
        "ok          subject stdout.txt",
        "ok          subject stderr.txt",
        "is the attested record",
        "verified: the attestation holds",
    ] {
        assert!(t.contains(needle), "`{needle}` missing:\n{t}");
    }

    let mut v = Verdict::default();
    let mut refused = |what: &str, g: &Lab, args: &[&str], needle: &str| {
        let o = verify_run(g, args);
        v.check(
            o.status.code() == Some(1) && text(&o).contains(needle),
            || format!("{what}: wanted exit 1 with `{needle}`:\n{}", text(&o)),
        );
    };
    // Another seal expected.
    let other = format!("sha256:{}", "0".repeat(64));
    refused(
        "another binding",
        &g,
        &["--expect", &other],
        "not the expected",
    );
    // A changed subject, and the two subjects swapped.
    let out = std::fs::read(g.p("out/stdout.txt")).unwrap();
    let err = std::fs::read(g.p("out/stderr.txt")).unwrap();
    let mut changed = out.clone();
    changed[0] ^= 0x20;
    std::fs::write(g.p("out/stdout.txt"), &changed).unwrap();
    refused("a changed subject", &g, &all, "the run produced sha256:");
    std::fs::write(g.p("out/stdout.txt"), &err).unwrap();
    std::fs::write(g.p("out/stderr.txt"), &out).unwrap();
    refused("swapped subjects", &g, &all, "the run produced sha256:");
    std::fs::write(g.p("out/stdout.txt"), &out).unwrap();
    std::fs::write(g.p("out/stderr.txt"), &err).unwrap();
    // A subject the statement does not name.
    std::fs::write(g.p("extra.txt"), b"x").unwrap();
    refused(
        "an unnamed subject",
        &g,
        &["--subject", "extra.txt"],
        "names no subject",
    );
    // Single-byte changes of the envelope, spread over it.
    let env = std::fs::read(g.p("out/att.json")).unwrap();
    for i in (0..env.len()).step_by(env.len() / 16 + 1) {
        let mut e = env.clone();
        e[i] ^= 0x01;
        std::fs::write(g.p("out/att.json"), &e).unwrap();
        refused(&format!("envelope byte {i} changed"), &g, &[], "drift");
    }
    std::fs::write(g.p("out/att.json"), &env).unwrap();
    // A key trusted for seals only, and an unknown key.
    std::fs::write(
        g.p("runners"),
        format!("ci@example.com namespaces=\"sealc-seal\" {runner}\n"),
    )
    .unwrap();
    refused(
        "a key for seals only",
        &g,
        &[],
        "not trusted for run attestations",
    );
    std::fs::write(g.p("runners"), "").unwrap();
    refused("an unknown key", &g, &[], "do not list");
    std::fs::write(g.p("runners"), format!("ci@example.com {runner}\n")).unwrap();
    // A changed record: not the attested one.
    let rec = std::fs::read(g.p("seal/seal.json")).unwrap();
    let mut r = rec.clone();
    let at = r.len() / 2;
    r[at] ^= 0x01;
    std::fs::write(g.p("seal/seal.json"), &r).unwrap();
    refused(
        "another record",
        &g,
        &["--record", "seal/seal.json"],
        "the run was under a record of",
    );
    std::fs::write(g.p("seal/seal.json"), &rec).unwrap();
    // A changed artifact: the record is the attested one but does not verify.
    let mut art = std::fs::read(g.p("seal/env.json")).unwrap();
    art.push(b'\n');
    std::fs::write(g.p("seal/env.json"), &art).unwrap();
    refused(
        "a drifted artifact",
        &g,
        &["--record", "seal/seal.json"],
        "does not verify here",
    );
    v.done();
}

#[test]
#[cfg_attr(
    any(sealc_no_tool = "ssh-keygen", sealc_no_bwrap),
    ignore = "needs ssh-keygen (OpenSSH) on PATH and bubblewrap"
)]
fn a_failed_run_is_attested_too_and_a_bad_key_starts_nothing() {
    if !common::bwrap_works() {
        return;
    }
    let (lab, binding, runner) = attested_run("echo partial; exit 3");
    let g = second_host(&lab, &format!("ci@example.com {runner}"));
    let o = verify_run(&g, &["--expect", &binding, "--subject", "out/stdout.txt"]);
    assert_eq!(o.status.code(), Some(0), "verify-run: {}", text(&o));
    assert!(text(&o).contains("exit 3"), "{}", text(&o));
    // A key that cannot sign is refused before anything starts: no run,
    // no attestation.
    std::fs::write(lab.p("notakey"), "not a key\n").unwrap();
    let o = lab.sealc(&[
        "exec",
        "seal/seal.json",
        "--attest",
        "none.json",
        "--sign-key",
        "notakey",
        "--",
        "/bin/sh",
        "-c",
        &format!("touch {}/ws/ran", lab.t.display()),
    ]);
    assert_eq!(o.status.code(), Some(125), "{}", text(&o));
    assert!(!lab.p("ws/ran").exists() && !lab.p("none.json").exists());
    // An attestation inside the seal's write root is refused before the run.
    let o = lab.sealc(&[
        "exec",
        "seal/seal.json",
        "--attest",
        "ws/att.json",
        "--",
        "/bin/sh",
        "-c",
        &format!("touch {}/ws/ran", lab.t.display()),
    ]);
    assert_eq!(o.status.code(), Some(125), "{}", text(&o));
    assert!(text(&o).contains("inside the write root"), "{}", text(&o));
    assert!(!lab.p("ws/ran").exists() && !lab.p("ws/att.json").exists());
}

/// securesystemslib's DSSE verifier (the reference implementation, from
/// PyPI, in `target/sslib-venv`): the envelope verifies with the runner's
/// ed25519 public key under the envelope's keyid, the payload is an in-toto
/// Statement v1 naming the kept output, and a changed payload is refused.
const SSLIB_CHECK: &str = r#"
import base64, hashlib, json, sys
from securesystemslib.dsse import Envelope
from securesystemslib.signer import SSlibKey
env = Envelope.from_dict(json.load(open(sys.argv[1])))
blob = base64.b64decode(sys.argv[2])
# docs/signing.md's keyid: the key's fingerprint, as `ssh-keygen -l` prints it.
keyid = "SHA256:" + base64.b64encode(hashlib.sha256(blob).digest()).decode().rstrip("=")
assert keyid == sys.argv[3], (keyid, sys.argv[3])
key = SSlibKey(keyid, "ed25519", "ed25519", {"public": blob[-32:].hex()})
env.verify([key], 1)
s = json.loads(env.payload)
assert s["_type"] == "https://in-toto.io/Statement/v1", s["_type"]
print(s["predicate"]["binding"], " ".join(x["name"] + "=" + x["digest"]["sha256"] for x in s["subject"]))
"#;

#[test]
#[cfg_attr(
    any(sealc_no_tool = "ssh-keygen", sealc_no_bwrap, sealc_no_sslib),
    ignore = "needs ssh-keygen, bubblewrap and securesystemslib in target/sslib-venv (.ci/run installs it)"
)]
fn the_reference_dsse_verifier_checks_the_envelope() {
    if !common::bwrap_works() {
        return;
    }
    let python = Path::new(env!("CARGO_MANIFEST_DIR")).join("target/sslib-venv/bin/python");
    if !python.exists() {
        common::not_run("securesystemslib is not installed in target/sslib-venv");
    }
    let (lab, binding, runner) = attested_run("echo the answer");
    let blob = runner.split_whitespace().nth(1).unwrap().to_string();
    let env: serde_json::Value =
        serde_json::from_slice(&std::fs::read(lab.p("out/att.json")).unwrap()).unwrap();
    let keyid = env["signatures"][0]["keyid"].as_str().unwrap().to_string();
    std::fs::write(lab.p("check.py"), SSLIB_CHECK).unwrap();
    let check = |file: &str| {
        Command::new(&python)
            .current_dir(&lab.t)
            .env_clear()
            .env("HOME", &lab.t)
            .args(["check.py", file, &blob, &keyid])
            .output()
            .unwrap()
    };
    let o = check("out/att.json");
    assert!(o.status.success(), "securesystemslib: {}", text(&o));
    let digest = {
        use sha2::Digest;
        let d = sha2::Sha256::digest(std::fs::read(lab.p("out/stdout.txt")).unwrap());
        d.iter().map(|b| format!("{b:02x}")).collect::<String>()
    };
    assert_eq!(
        String::from_utf8_lossy(&o.stdout).trim(),
        format!("{binding} stdout.txt={digest} stderr.txt=e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855"),
        "{}",
        text(&o)
    );
    // Another payload under the same signature: refused there too.
    let mut forged = env.clone();
    let statement = String::from_utf8(base64_decode(forged["payload"].as_str().unwrap()))
        .unwrap()
        .replace(&digest, &"0".repeat(64));
    forged["payload"] = serde_json::Value::String(base64_encode(statement.as_bytes()));
    std::fs::write(lab.p("forged.json"), serde_json::to_vec(&forged).unwrap()).unwrap();
    let o = check("forged.json");
    assert!(
        !o.status.success(),
        "securesystemslib took a forged payload: {}",
        text(&o)
    );
}

fn base64_decode(s: &str) -> Vec<u8> {
    let o = Command::new("base64")
        .arg("-d")
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .spawn()
        .and_then(|mut c| {
            use std::io::Write;
            c.stdin.take().unwrap().write_all(s.as_bytes())?;
            c.wait_with_output()
        })
        .unwrap();
    o.stdout
}

fn base64_encode(b: &[u8]) -> String {
    let o = Command::new("base64")
        .arg("-w0")
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .spawn()
        .and_then(|mut c| {
            use std::io::Write;
            c.stdin.take().unwrap().write_all(b)?;
            c.wait_with_output()
        })
        .unwrap();
    String::from_utf8(o.stdout).unwrap()
}

#[test]
#[cfg_attr(
    any(sealc_no_tool = "ssh-keygen", sealc_no_bwrap),
    ignore = "needs ssh-keygen (OpenSSH) on PATH and bubblewrap"
)]
fn a_file_the_run_produced_is_a_subject_and_a_planted_link_is_not_vouched_for() {
    if !common::bwrap_works() {
        return;
    }
    let (lab, binding, runner) = attested_run_with(
        "echo 42 > \"$PWD/ws/result.txt\" 2>/dev/null || echo 42 > ws/result.txt",
        &["--subject", "ws/result.txt"],
    );
    assert_eq!(
        std::fs::read_to_string(lab.p("ws/result.txt")).unwrap(),
        "42\n"
    );
    let g = second_host(&lab, &format!("ci@example.com {runner}"));
    copy(&lab.p("ws/result.txt"), &g.p("result.txt"));
    let o = verify_run(&g, &["--expect", &binding, "--subject", "result.txt"]);
    assert_eq!(o.status.code(), Some(0), "verify-run: {}", text(&o));
    assert!(
        text(&o).contains("ok          subject result.txt"),
        "{}",
        text(&o)
    );
    // The agent leaves a link where the harness expects its output: the
    // attestation does not vouch for what it points to.
    std::fs::remove_file(lab.p("out/att.json")).unwrap();
    let o = lab.sealc(&[
        "exec",
        "seal/seal.json",
        "--attest",
        "out/att.json",
        "--subject",
        "ws/result.txt",
        "--",
        "/bin/sh",
        "-c",
        &format!(
            "cd {0}/ws && rm result.txt && ln -s /etc/passwd result.txt",
            lab.t.display()
        ),
    ]);
    assert_ne!(o.status.code(), Some(0), "{}", text(&o));
    assert!(
        text(&o).contains("cannot write the attestation"),
        "{}",
        text(&o)
    );
    assert!(!lab.p("out/att.json").exists(), "{}", text(&o));
}

#[test]
#[cfg_attr(
    any(
        sealc_no_tool = "ssh-keygen",
        sealc_no_bwrap,
        sealc_not_root,
        sealc_cannot_become = "sealc-test"
    ),
    ignore = "needs ssh-keygen, bubblewrap, root, setpriv and the user sealc-test"
)]
fn an_unprivileged_harness_attests_its_run_and_runs_only_the_signed_seal() {
    if !common::ready_as_root_with(&[common::USER]) {
        return;
    }
    let (lab, binding, runner) = attested_run_as(Some(common::USER), "echo the answer", &[]);
    // Its own files, written as it: the attestation and the kept output.
    let (uid, _) = common::ids(common::USER);
    for f in ["out/att.json", "out/stdout.txt"] {
        use std::os::unix::fs::MetadataExt;
        let m = std::fs::symlink_metadata(lab.p(f)).unwrap();
        assert!(m.is_file() && m.uid() == uid, "{f}: uid {}", m.uid());
    }
    let g = second_host(&lab, &format!("ci@example.com {runner}"));
    let o = verify_run(
        &g,
        &[
            "--expect",
            &binding,
            "--subject",
            "out/stdout.txt",
            "--record",
            "seal/seal.json",
        ],
    );
    assert_eq!(o.status.code(), Some(0), "verify-run: {}", text(&o));
    let env: serde_json::Value =
        serde_json::from_slice(&std::fs::read(lab.p("out/att.json")).unwrap()).unwrap();
    let payload = String::from_utf8(base64_decode(env["payload"].as_str().unwrap())).unwrap();
    assert!(
        payload.contains("\"reviewer@example.com\""),
        "the report names no signer: {payload}"
    );
    // A seal its reviewer did not sign: nothing starts for it either.
    std::fs::write(lab.p("seal/seal.json.sig"), b"").unwrap();
    let argv = [
        env!("CARGO_BIN_EXE_sealc"),
        "exec",
        "seal/seal.json",
        "--allowed-signers",
        "reviewers",
        "--",
        "/bin/sh",
        "-c",
        "touch ws/ran",
    ];
    let o = common::as_user(Some(common::USER), &argv)
        .current_dir(&lab.t)
        .env_clear()
        .env("PATH", "/usr/bin:/bin")
        .stdin(Stdio::null())
        .output()
        .unwrap();
    assert_eq!(o.status.code(), Some(125), "{}", text(&o));
    assert!(
        text(&o).contains("is not signed by a trusted key"),
        "{}",
        text(&o)
    );
    assert!(!lab.p("ws/ran").exists());
}

/// The payload of an envelope: the statement.
fn statement(envelope: &Path) -> serde_json::Value {
    let e: serde_json::Value = serde_json::from_slice(&std::fs::read(envelope).unwrap()).unwrap();
    serde_json::from_slice(&base64_decode(e["payload"].as_str().unwrap())).unwrap()
}

#[test]
#[cfg_attr(
    any(sealc_no_tool = "ssh-keygen", sealc_no_bwrap),
    ignore = "needs ssh-keygen (OpenSSH) on PATH and bubblewrap"
)]
fn the_seals_outputs_are_attested_only_when_this_run_wrote_them() {
    if !common::bwrap_works() {
        return;
    }
    outputs_attested("", None);
    // Started by root, the Landlock mode hands the write roots over with
    // `chown` (which moves every change time) and back after the run.
    if rustix::process::geteuid().is_root() {
        outputs_attested("isolation = \"landlock\"\n", None);
    }
}

#[test]
#[cfg_attr(
    any(
        sealc_no_tool = "ssh-keygen",
        sealc_no_bwrap,
        sealc_not_root,
        sealc_cannot_become = "sealc-test"
    ),
    ignore = "needs ssh-keygen, bubblewrap, root, setpriv and the user sealc-test"
)]
fn an_unprivileged_harness_attests_only_the_outputs_its_run_wrote() {
    if !common::ready_as_root_with(&[common::USER]) {
        return;
    }
    outputs_attested("", Some(common::USER));
}

/// Two reps of one seal with outputs, the second attested, run by `user`
/// (root with `None`); `exec` adds to the seal's `[exec]`.
fn outputs_attested(exec: &str, user: Option<&str>) {
    let spec = SPEC.replace(
        "write = [\"@/ws\"]",
        &format!("write = [\"@/ws\"]\n[exec]\n{exec}outputs = [\"@/ws/answer.md\", \"@/ws/stale.md\", \"@/ws/missing.md\", \"@/ws/nodir/none.md\", \"@/ws/linked.md\", \"@/ws/sub/deep.md\"]"),
    );
    // The first rep leaves every output; the second (attested) writes
    // its answer anew, leaves `stale.md` as it was, removes nothing else
    // but plants a link in one output's place and one on another's way.
    let (lab, binding, runner) = attested_run_of(
        &spec,
        user,
        "cd ws && echo first > answer.md && echo old > stale.md && echo x > linked.md && mkdir sub && echo deep > sub/deep.md",
        &[],
    );
    let first = statement(&lab.p("out/att.json"));
    let names = |st: &serde_json::Value| -> Vec<String> {
        let mut n: Vec<String> = st["subject"]
            .as_array()
            .unwrap()
            .iter()
            .map(|s| s["name"].as_str().unwrap().to_string())
            .collect();
        n.sort();
        n
    };
    assert_eq!(
        names(&first),
        [
            "answer.md",
            "deep.md",
            "linked.md",
            "stale.md",
            "stderr.txt",
            "stdout.txt"
        ],
        "{first:#}"
    );
    // `sealc show` tells the reviewer which outputs a run vouches for.
    let o = lab.sealc(&["show", "seal/seal.json"]);
    assert!(
        text(&o).contains("attested when written (`exec.outputs`)"),
        "{}",
        text(&o)
    );
    if user.is_some() {
        // A harness's tree others may pass through but not list (as a
        // `mktemp -d` parent is): outputs are reached by name.
        use std::os::unix::fs::PermissionsExt;
        std::fs::set_permissions(&lab.t, std::fs::Permissions::from_mode(0o711)).unwrap();
    }
    let script = "cd ws && echo second > answer.md && rm linked.md && ln -s /etc/passwd linked.md && rm -r sub && ln -s /etc sub";
    let o = lab.sealc_as(
        user,
        &[
            "exec",
            "seal/seal.json",
            "--attest",
            "out/att2.json",
            "--sign-key",
            "runner",
            "--",
            "/bin/sh",
            "-c",
            script,
        ],
    );
    assert_eq!(o.status.code(), Some(0), "{}", text(&o));
    let second = statement(&lab.p("out/att2.json"));
    assert_eq!(names(&second), ["answer.md"], "{second:#}");
    let outputs = &second["predicate"]["report"]["outputs"];
    // An unprivileged caller's run names no user it ran the agent as.
    let ran_as = &second["predicate"]["report"]["user"];
    assert_eq!(user.is_some(), ran_as.is_null(), "{second:#}");
    if !exec.is_empty() {
        let handed = &second["predicate"]["report"]["write_roots"];
        assert_eq!(handed, "chowned", "{second:#}");
    }
    let at = |f: &str| &outputs[format!("{}/ws/{f}", lab.t.display())];
    assert_eq!(at("answer.md")["state"], "written", "{outputs:#}");
    assert_eq!(at("answer.md")["bytes"], 7, "{outputs:#}");
    let digest = format!(
        "sha256:{}",
        second["subject"][0]["digest"]["sha256"].as_str().unwrap()
    );
    assert_eq!(at("answer.md")["sha256"], digest.as_str(), "{outputs:#}");
    assert_eq!(at("stale.md")["state"], "unchanged", "{outputs:#}");
    for f in ["missing.md", "nodir/none.md"] {
        assert_eq!(at(f)["state"], "absent", "{f}: {outputs:#}");
    }
    for f in ["linked.md", "sub/deep.md"] {
        assert_eq!(at(f)["state"], "refused", "{f}: {outputs:#}");
    }
    // A grader elsewhere checks the answer against the attestation.
    let g = second_host(&lab, &format!("ci@example.com {runner}"));
    copy(&lab.p("out/att2.json"), &g.p("out/att.json"));
    copy(&lab.p("ws/answer.md"), &g.p("answer.md"));
    let o = verify_run(&g, &["--expect", &binding, "--subject", "answer.md"]);
    assert_eq!(o.status.code(), Some(0), "verify-run: {}", text(&o));
    // The earlier run's file is no subject of this one.
    copy(&lab.p("ws/stale.md"), &g.p("stale.md"));
    let o = verify_run(&g, &["--expect", &binding, "--subject", "stale.md"]);
    assert_eq!(o.status.code(), Some(1), "verify-run: {}", text(&o));
    // Two subjects of one file name: refused before anything starts.
    let o = lab.sealc_as(
        user,
        &[
            "exec",
            "seal/seal.json",
            "--attest",
            "out/att3.json",
            "--stdout",
            "out/answer.md",
            "--",
            "/bin/sh",
            "-c",
            "touch ws/ran",
        ],
    );
    assert_eq!(o.status.code(), Some(125), "{}", text(&o));
    assert!(
        text(&o).contains("would name two subjects `answer.md`"),
        "{}",
        text(&o)
    );
    assert!(!lab.p("ws/ran").exists() && !lab.p("out/att3.json").exists());
}
