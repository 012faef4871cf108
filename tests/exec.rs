//! `sealc exec` enforcing for real: the probe spec compiled with
//! `--platform linux`, run under bubblewrap, against an attack battery.
//!
//! Every attempt runs inside the seal through `sealc exec`, on a private
//! layout in a temp directory (never `$HOME`): a checkout and a home that are
//! denied, another run's temp directory, a metadata-only dispatch directory,
//! a host proxy and a second loopback service that is not the proxy.
//!
//! Without bubblewrap these tests say so and pass, unless
//! `SEALC_REQUIRE_BWRAP=1` (set by `.ci/run`), under which they fail.

mod common;

use std::io::{Read, Write};
use std::net::TcpListener;
use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};
use std::time::{Duration, Instant};

use common::root;

const SECRET: &str = "SKILL-SECRET-7f3a";
const OTHER_RUN: &str = "OTHER-RUN-TEMP-91c2";
const DISPATCH: &str = "DISPATCH-TASK-4be1";
const PARENT: &str = "PARENT-SECRET-a0d5";
const API_KEY: &str = "sk-test-5e9b";

/// Is bubblewrap here and able to make namespaces? Fails instead of skipping
/// under `SEALC_REQUIRE_BWRAP=1`.
fn bwrap_works() -> bool {
    let ok = Command::new("bwrap")
        .args([
            "--ro-bind",
            "/",
            "/",
            "--unshare-pid",
            "--unshare-net",
            "true",
        ])
        .stderr(Stdio::null())
        .status()
        .is_ok_and(|s| s.success());
    if !ok {
        assert!(
            std::env::var_os("SEALC_REQUIRE_BWRAP").is_none_or(|v| v != "1"),
            "SEALC_REQUIRE_BWRAP=1 but bubblewrap is missing or cannot make namespaces"
        );
        eprintln!("skipped: bubblewrap is missing or cannot make namespaces here");
    }
    ok
}

/// A service on a loopback port that answers every connection with `reply`.
fn serve(reply: &'static str) -> u16 {
    let l = TcpListener::bind("127.0.0.1:0").unwrap();
    let port = l.local_addr().unwrap().port();
    std::thread::spawn(move || {
        for mut c in l.incoming().flatten() {
            let _ = c.write_all(reply.as_bytes());
        }
    });
    port
}

/// The layout of one sealed run, compiled.
struct Lab {
    _tmp: tempfile::TempDir,
    t: PathBuf,
    record: PathBuf,
    proxy: u16,
    other: u16,
}

impl Lab {
    fn new() -> Lab {
        Lab::with_spec(&std::fs::read_to_string(root().join("specs/probe-rep.toml")).unwrap())
    }

    fn with_spec(spec: &str) -> Lab {
        // Outside /tmp (which the probe also denies), so each denial is
        // tested on its own.
        let tmp = tempfile::tempdir_in(env!("CARGO_TARGET_TMPDIR")).unwrap();
        let t = tmp.path().canonicalize().unwrap();
        // Started by root, the agent runs as `nobody`: it must reach the lab.
        std::fs::set_permissions(&t, std::os::unix::fs::PermissionsExt::from_mode(0o755)).unwrap();
        let w = |p: &str, s: &str| {
            let p = t.join(p);
            std::fs::create_dir_all(p.parent().unwrap()).unwrap();
            std::fs::write(p, s).unwrap();
        };
        w("checkout/skills/premortem/SKILL.md", SECRET);
        w("home/.codex/auth.json", SECRET);
        w(
            "home/.local/lib/codex/bin/codex.js",
            "#!/bin/sh\necho codex\n",
        );
        std::fs::create_dir_all(t.join("home/.local/bin")).unwrap();
        std::os::unix::fs::symlink("../lib/codex/bin/codex.js", t.join("home/.local/bin/codex"))
            .unwrap();
        w("tmp/other-run/notes.txt", OTHER_RUN);
        w("run/dispatch/task.md", DISPATCH);
        w("run/ws/task.md", "the task: write notes.md\n");
        for d in ["run/home", "run/tmp"] {
            std::fs::create_dir_all(t.join(d)).unwrap();
        }
        std::fs::write(t.join("spec.toml"), spec).unwrap();
        let proxy = serve("PROXY-OK\n");
        std::fs::create_dir_all(t.join("sock")).unwrap();
        let unix = std::os::unix::net::UnixListener::bind(t.join("sock/agent.sock")).unwrap();
        std::thread::spawn(move || {
            for mut c in unix.incoming().flatten() {
                let _ = c.write_all(b"UNIX-SERVICE\n");
            }
        });
        let other = serve("NOT-THE-PROXY\n");
        let out = Command::new(env!("CARGO_BIN_EXE_sealc"))
            .current_dir(&t)
            .env_clear()
            .env("HOME", t.join("home"))
            .env("TMPDIR", t.join("tmp"))
            .env("PATH", "/usr/bin:/bin")
            .env("LANG", "C.UTF-8")
            .env("TERM", "dumb")
            .args([
                "compile",
                "spec.toml",
                "--platform",
                "linux",
                "--out",
                "seal",
            ])
            .arg(format!("--var=run={}", t.join("run").display()))
            .arg(format!("--var=checkout={}", t.join("checkout").display()))
            .arg(format!("--var=proxy_port={proxy}"))
            .output()
            .unwrap();
        assert!(
            out.status.success(),
            "compile failed:\n{}",
            String::from_utf8_lossy(&out.stderr)
        );
        Lab {
            record: t.join("seal/seal.json"),
            t,
            _tmp: tmp,
            proxy,
            other,
        }
    }

    /// The probe spec with its timeout cut to one second.
    fn with_timeout_of_one_second() -> Lab {
        let spec = std::fs::read_to_string(root().join("specs/probe-rep.toml")).unwrap();
        Lab::with_spec(&spec.replace("seconds = 240", "seconds = 1"))
    }

    fn path(&self, p: &str) -> String {
        self.t.join(p).display().to_string()
    }

    /// `sealc exec` with the harness's environment: the secret, a parent
    /// secret that must not cross, and `HOME` of the operator.
    fn exec_cmd(&self, argv: &[&str]) -> Command {
        let mut c = Command::new(env!("CARGO_BIN_EXE_sealc"));
        c.current_dir(self.t.join("run/ws"))
            .env_clear()
            .env("HOME", self.t.join("home"))
            .env("PATH", "/usr/bin:/bin")
            .env("OPENAI_API_KEY", API_KEY)
            .env("PARENT_TOKEN", PARENT)
            .arg("exec")
            .arg(&self.record)
            .arg("--")
            .args(argv);
        c
    }

    /// Run a shell script inside the seal, with the lab's paths in its env.
    fn sh(&self, script: &str) -> Output {
        let script = format!(
            "T={t}; CO={t}/checkout; WS={t}/run/ws; RUN={t}/run; TMPROOT={t}/tmp; PROXY={p}; OTHER={o}\n{script}",
            t = self.t.display(),
            p = self.proxy,
            o = self.other,
        );
        self.exec_cmd(&["/bin/bash", "-c", &script])
            .output()
            .unwrap()
    }
}

fn text(o: &Output) -> String {
    format!(
        "exit {:?}\n--- stdout\n{}--- stderr\n{}",
        o.status.code(),
        String::from_utf8_lossy(&o.stdout),
        String::from_utf8_lossy(&o.stderr)
    )
}

/// One attack: a script that prints what it got; it is blocked when the
/// marker never shows and the script's own check says so.
struct Attack {
    name: &'static str,
    script: &'static str,
    marker: &'static str,
}

const ATTACKS: &[Attack] = &[
    Attack {
        name: "read a denied file directly",
        script: "cat $CO/skills/premortem/SKILL.md",
        marker: SECRET,
    },
    Attack {
        name: "read a denied file through a symlink placed in a write root",
        script: "ln -s $CO/skills/premortem/SKILL.md $WS/link && cat $WS/link; ln -s $CO $WS/co && cat $WS/co/skills/premortem/SKILL.md",
        marker: SECRET,
    },
    Attack {
        name: "read a denied file through /proc/self/root and /proc/1/root",
        script: "cat /proc/self/root$CO/skills/premortem/SKILL.md; cat /proc/1/root$CO/skills/premortem/SKILL.md; cat /proc/$$/root$CO/skills/premortem/SKILL.md",
        marker: SECRET,
    },
    Attack {
        name: "hard-link a denied file into a write root",
        script: "ln $CO/skills/premortem/SKILL.md $WS/hard && cat $WS/hard",
        marker: SECRET,
    },
    Attack {
        name: "rename the denied directory (and its parent) into reach",
        script: "mv $CO/skills $WS/skills2; cat $WS/skills2/premortem/SKILL.md; mv $CO $WS/co2; cat $WS/co2/skills/premortem/SKILL.md; cat $CO/skills/premortem/SKILL.md",
        marker: SECRET,
    },
    Attack {
        name: "list and read another run's temp directory",
        script: "ls -la $TMPROOT $TMPROOT/other-run; cat $TMPROOT/other-run/notes.txt; ls /tmp",
        marker: OTHER_RUN,
    },
    Attack {
        name: "read a metadata-only file",
        script: "cat $RUN/dispatch/task.md; ls $RUN/dispatch",
        marker: DISPATCH,
    },
    Attack {
        name: "read the operator's real Codex auth under the denied home",
        script: "cat $T/home/.codex/auth.json; cat ~/.codex/auth.json",
        marker: SECRET,
    },
    Attack {
        name: "read a parent secret from the environment",
        script: "env; cat /proc/self/environ /proc/1/environ | tr '\\0' '\\n'",
        marker: PARENT,
    },
    Attack {
        name: "connect to a host service's unix socket",
        script: "python3 -c \"import socket; s=socket.socket(socket.AF_UNIX); s.connect('$T/sock/agent.sock'); print(s.recv(64))\"",
        marker: "UNIX-SERVICE",
    },
    Attack {
        name: "keep the capabilities of a root caller",
        script: "grep -E '^Cap(Inh|Prm|Eff|Amb):' /proc/self/status | grep -v '0000000000000000$' && echo HAS-''CAPS",
        marker: "HAS-CAPS",
    },
    Attack {
        name: "unmount the stand-in over a denied directory",
        script: "umount -l $CO; umount -l /proc; mount -o remount,rw,bind /; cat $CO/skills/premortem/SKILL.md",
        marker: SECRET,
    },
    Attack {
        name: "unmount /proc and read the host's processes' environment",
        script: "umount -l /proc; cat /proc/[0-9]*/environ | tr '\\0' '\\n'",
        marker: PARENT,
    },
    Attack {
        name: "swap the proxy bridge's socket for a host unix socket",
        script: "for d in /tmp/sealc-bridge-*; do rm -f $d/proxy.sock; ln -s $T/sock/agent.sock $d/proxy.sock; done; exec 3<>/dev/tcp/127.0.0.1/$PROXY && head -c 64 <&3",
        marker: "UNIX-SERVICE",
    },
    Attack {
        name: "open a vsock to the hypervisor",
        script: "python3 -c \"import socket; socket.socket(socket.AF_VSOCK, socket.SOCK_STREAM); print('VSOCK-' + 'MADE')\"",
        marker: "VSOCK-MADE",
    },
    Attack {
        name: "join another network namespace",
        script: "umount -l /proc; for p in /proc/[0-9]*; do nsenter -t ${p#/proc/} -n bash -c \"exec 3<>/dev/tcp/127.0.0.1/$OTHER && head -c 64 <&3\" 2>/dev/null; done",
        marker: "NOT-THE-PROXY",
    },
    Attack {
        name: "connect to a loopback port that is not the proxy",
        script: "exec 3<>/dev/tcp/127.0.0.1/$OTHER && head -c 64 <&3",
        marker: "NOT-THE-PROXY",
    },
];

#[test]
fn the_attack_battery_is_blocked_and_the_work_still_works() {
    if !bwrap_works() {
        return;
    }
    let lab = Lab::new();
    let mut report = Vec::new();
    let mut leaks = Vec::new();
    for a in ATTACKS {
        let out = lab.sh(&format!("echo SANDBOX-UP; {}", a.script));
        let all = text(&out);
        assert!(
            String::from_utf8_lossy(&out.stdout).starts_with("SANDBOX-UP"),
            "the sandbox did not start for `{}`:\n{all}",
            a.name
        );
        let leaked = all.contains(a.marker);
        report.push(format!(
            "{:<8} {}",
            if leaked { "LEAKED" } else { "blocked" },
            a.name
        ));
        if leaked {
            leaks.push(format!("{}:\n{all}", a.name));
        }
    }

    // Writes outside the write roots: each must fail, and nothing may appear.
    let out = lab.sh(
        "echo SANDBOX-UP; mount -o remount,rw,bind / 2>/dev/null; mount -o remount,rw /etc 2>/dev/null; echo private > /dev/shm/zz-sealc-private; for f in $T/outside /etc/sealc-pwned /tmp/sealc-pwned $RUN/dispatch/x $CO/x $HOME/../x; do \
           if (echo pwned > $f) 2>/dev/null; then echo \"WROTE $f\"; fi; done; \
         mkdir /usr/sealc-pwned 2>/dev/null && echo WROTE-usr; true",
    );
    assert!(
        String::from_utf8_lossy(&out.stdout).starts_with("SANDBOX-UP"),
        "{}",
        text(&out)
    );
    let wrote = String::from_utf8_lossy(&out.stdout).contains("WROTE");
    report.push(format!(
        "{:<8} write outside the write roots and into /etc",
        if wrote { "LEAKED" } else { "blocked" }
    ));
    if wrote {
        leaks.push(format!("writes:\n{}", text(&out)));
    }
    for p in ["outside", "run/dispatch/x", "checkout/x"] {
        assert!(!lab.t.join(p).exists(), "{p} was written on the host");
    }
    assert!(!Path::new("/etc/sealc-pwned").exists());
    assert!(
        !Path::new("/dev/shm/zz-sealc-private").exists(),
        "the sandbox wrote the host's /dev/shm"
    );

    // The checkout and its secret are still where they were on the host.
    assert_eq!(
        std::fs::read_to_string(lab.t.join("checkout/skills/premortem/SKILL.md")).unwrap(),
        SECRET
    );
    assert!(
        leaks.is_empty(),
        "{}\n\n{}",
        report.join("\n"),
        leaks.join("\n\n")
    );

    // The allowed work: read the task, write the workspace, stat the
    // metadata-only directory, reach the proxy, see the secret it was given.
    let out = lab.sh(
        "set -e; cat $WS/task.md; echo notes > $WS/notes.md; echo t > $TMPDIR/t; echo h > $HOME/h; \
         stat -c %F $RUN/dispatch; \
         python3 -c 'import multiprocessing as m; m.Lock(); print(\"pool\", m.Pool(2).map(abs, [-1, -2]))'; \
         exec 3<>/dev/tcp/127.0.0.1/$PROXY; head -c 9 <&3; echo key=$OPENAI_API_KEY",
    );
    let all = text(&out);
    assert_eq!(out.status.code(), Some(0), "{all}");
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(stdout.contains("the task: write notes.md"), "{all}");
    assert!(stdout.contains("directory"), "{all}");
    assert!(stdout.contains("PROXY-OK"), "{all}");
    assert!(stdout.contains("pool [1, 2]"), "{all}");
    assert!(stdout.contains(&format!("key={API_KEY}")), "{all}");
    assert_eq!(
        std::fs::read_to_string(lab.t.join("run/ws/notes.md")).unwrap(),
        "notes\n"
    );
    assert!(lab.t.join("run/tmp/t").exists() && lab.t.join("run/home/h").exists());
    report.push("works    read the task, write the workspace, reach the proxy".into());
    eprintln!("attack battery:\n{}", report.join("\n"));
}

#[test]
fn the_child_gets_exactly_the_env_allowlist() {
    if !bwrap_works() {
        return;
    }
    let lab = Lab::new();
    let out = lab.exec_cmd(&["/usr/bin/env", "-0"]).output().unwrap();
    assert_eq!(out.status.code(), Some(0), "{}", text(&out));
    let mut got: Vec<String> = out
        .stdout
        .split(|&b| b == 0)
        .filter(|v| !v.is_empty())
        .map(|v| String::from_utf8_lossy(v).into_owned())
        .collect();
    got.sort();
    let env: serde_json::Value =
        serde_json::from_slice(&std::fs::read(lab.t.join("seal/env.json")).unwrap()).unwrap();
    let mut want: Vec<String> = env["env"]
        .as_object()
        .unwrap()
        .iter()
        .map(|(k, v)| format!("{k}={}", v.as_str().unwrap()))
        .collect();
    want.push(format!("OPENAI_API_KEY={API_KEY}"));
    want.sort();
    assert_eq!(got, want);
}

#[test]
fn a_missing_secret_refuses_to_start_naming_it() {
    if !bwrap_works() {
        return;
    }
    let lab = Lab::new();
    let marker = lab.path("run/ws/started");
    let out = lab
        .exec_cmd(&["/usr/bin/touch", &marker])
        .env_remove("OPENAI_API_KEY")
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2), "{}", text(&out));
    assert!(text(&out).contains("`OPENAI_API_KEY`"));
    assert!(!Path::new(&marker).exists(), "the command started");
}

#[test]
fn a_tampered_seal_does_not_start() {
    if !bwrap_works() {
        return;
    }
    let lab = Lab::new();
    let marker = lab.path("run/ws/started");
    let seal = lab.t.join("seal/seal.bwrap.json");
    let env = lab.t.join("seal/env.json");
    let codex = lab.t.join("seal/codex/config.toml");
    for (file, from, to) in [
        // A hidden directory bound from the host instead.
        (&seal, "\"--tmpfs\"", "\"--bind-try\""),
        // The network namespace dropped.
        (&seal, "\"--unshare-net\"", "\"--unshare-ipc\""),
        // The proxy bypassed for every host.
        (&env, "\"NO_PROXY\": \"\"", "\"NO_PROXY\": \"*\""),
        // Codex's approvals loosened.
        (&codex, "never", "on-request"),
    ] {
        let original = std::fs::read_to_string(file).unwrap();
        let tampered = original.replacen(from, to, 1);
        assert_ne!(tampered, original, "{from} not in {}", file.display());
        std::fs::write(file, tampered).unwrap();
        let out = lab.exec_cmd(&["/usr/bin/touch", &marker]).output().unwrap();
        assert_eq!(out.status.code(), Some(1), "{}", text(&out));
        assert!(text(&out).contains("nothing was started"), "{}", text(&out));
        assert!(!Path::new(&marker).exists(), "the command started");
        std::fs::write(file, original).unwrap();
    }
    // A forged record (its spec changed) does not start either.
    let record = std::fs::read_to_string(&lab.record).unwrap();
    std::fs::write(&lab.record, record.replacen("deny_read", "allow_read", 1)).unwrap();
    let out = lab.exec_cmd(&["/usr/bin/touch", &marker]).output().unwrap();
    assert_eq!(out.status.code(), Some(1), "{}", text(&out));
    assert!(!Path::new(&marker).exists(), "the command started");
}

#[test]
fn a_host_that_drifted_since_compiling_does_not_start() {
    if !bwrap_works() {
        return;
    }
    // A write root swapped for a symlink into the denied checkout.
    let lab = Lab::new();
    let marker = lab.path("run/home/started");
    std::fs::remove_dir_all(lab.t.join("run/ws")).unwrap();
    std::os::unix::fs::symlink(lab.t.join("checkout"), lab.t.join("run/ws")).unwrap();
    let mut cmd = lab.exec_cmd(&["/usr/bin/touch", &marker]);
    let out = cmd.current_dir(&lab.t).output().unwrap();
    let all = text(&out);
    assert_eq!(out.status.code(), Some(1), "{all}");
    assert!(all.contains("run/ws"), "{all}");
    assert!(all.contains("nothing was started"), "{all}");
    assert!(!Path::new(&marker).exists(), "the command started");

    // A denied root that was absent when compiled, and exists now.
    let lab = Lab::new();
    let marker = lab.path("run/ws/started");
    std::fs::create_dir_all(lab.t.join("home/.agents")).unwrap();
    let out = lab.exec_cmd(&["/usr/bin/touch", &marker]).output().unwrap();
    let all = text(&out);
    assert_eq!(out.status.code(), Some(1), "{all}");
    assert!(all.contains(".agents"), "{all}");
    assert!(!Path::new(&marker).exists(), "the command started");
}

#[test]
fn descriptors_the_caller_left_open_do_not_cross() {
    if !bwrap_works() {
        return;
    }
    let lab = Lab::new();
    let inner = "cat <&7; echo pwned > /proc/self/fd/8/pwn; ls /proc/self/fd";
    let outer = format!(
        "exec 7<{co}/skills/premortem/SKILL.md 8<{t}; exec {sealc} exec {rec} -- /bin/bash -c '{inner}'",
        co = lab.path("checkout"),
        t = lab.t.display(),
        sealc = env!("CARGO_BIN_EXE_sealc"),
        rec = lab.record.display(),
    );
    let out = Command::new("/bin/bash")
        .current_dir(lab.t.join("run/ws"))
        .env_clear()
        .env("PATH", "/usr/bin:/bin")
        .env("OPENAI_API_KEY", API_KEY)
        .args(["-c", &outer])
        .output()
        .unwrap();
    let all = text(&out);
    assert!(!all.contains(SECRET), "{all}");
    assert!(
        !lab.t.join("pwn").exists(),
        "wrote through an inherited descriptor"
    );
    assert!(all.contains("Bad file descriptor"), "{all}");
}

#[test]
fn bridge_directories_are_cleaned_up_even_after_a_killed_run() {
    if !bwrap_works() {
        return;
    }
    let lab = Lab::new();
    let bridges = lab.t.join("bridges");
    // What a `sealc exec` killed by SIGKILL leaves: its directory and socket
    // (pid 999999999 is above any pid_max, so never alive).
    let stale = bridges.join("sealc-bridge-999999999-0");
    std::fs::create_dir_all(&stale).unwrap();
    std::fs::write(stale.join("proxy.sock"), "").unwrap();
    let out = lab
        .exec_cmd(&["/bin/true"])
        .env("TMPDIR", &bridges)
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(0), "{}", text(&out));
    let left: Vec<_> = std::fs::read_dir(&bridges)
        .unwrap()
        .flatten()
        .map(|e| e.path())
        .collect();
    assert!(left.is_empty(), "left behind: {left:?}");
}

#[test]
fn the_exit_status_passes_through() {
    if !bwrap_works() {
        return;
    }
    let lab = Lab::new();
    for code in [0, 3, 42] {
        let out = lab.sh(&format!("exit {code}"));
        assert_eq!(out.status.code(), Some(code), "{}", text(&out));
    }
    let out = lab.sh("kill -TERM $$");
    assert_eq!(out.status.code(), Some(128 + 15), "{}", text(&out));
}

fn send(child: &std::process::Child, sig: rustix::process::Signal) {
    rustix::process::kill_process(rustix::process::Pid::from_child(child), sig).unwrap();
}

/// The processes whose `argv[0]` is `marker` (set with `exec -a`).
fn survivors(marker: &str) -> Vec<String> {
    let mut found = Vec::new();
    for e in std::fs::read_dir("/proc").unwrap().flatten() {
        if let Ok(mut f) = std::fs::File::open(e.path().join("cmdline")) {
            let mut s = Vec::new();
            let _ = f.read_to_end(&mut s);
            let s = String::from_utf8_lossy(&s).replace('\0', " ");
            if s.starts_with(&format!("{marker} ")) {
                found.push(format!("{}: {s}", e.file_name().to_string_lossy()));
            }
        }
    }
    found
}

fn wait_gone(marker: &str) -> Vec<String> {
    let end = Instant::now() + Duration::from_secs(5);
    loop {
        let s = survivors(marker);
        if s.is_empty() || Instant::now() > end {
            return s;
        }
        std::thread::sleep(Duration::from_millis(50));
    }
}

#[test]
fn a_signal_to_sealc_reaches_the_sandbox_and_nothing_survives() {
    if !bwrap_works() {
        return;
    }
    let lab = Lab::new();
    let marker = "zz-sleeper-3b7e";
    let got = lab.path("run/ws/got-term");
    let mut child = lab
        .exec_cmd(&[
            "/bin/bash",
            "-c",
            &format!(
                "trap 'echo handled > {got}; exit 9' TERM; \
                 (exec -a {marker} sleep 300) & (exec -a {marker} sleep 300) & wait"
            ),
        ])
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let end = Instant::now() + Duration::from_secs(10);
    while survivors(marker).len() < 2 {
        assert!(Instant::now() < end, "the sleepers never started");
        std::thread::sleep(Duration::from_millis(50));
    }
    send(&child, rustix::process::Signal::TERM);
    let status = child.wait().unwrap();
    // The command's own handler ran and chose its exit status.
    assert_eq!(status.code(), Some(9));
    assert_eq!(std::fs::read_to_string(&got).unwrap(), "handled\n");
    assert_eq!(wait_gone(marker), Vec::<String>::new());
}

/// A command that ignores the signal is killed after the grace period, with
/// everything it started, also when another signal arrives in the grace period.
#[test]
fn a_command_that_ignores_sigterm_still_dies_at_the_timeout() {
    if !bwrap_works() {
        return;
    }
    let lab = Lab::with_timeout_of_one_second();
    let marker = "zz-stubborn-51aa";
    let started = Instant::now();
    let mut child = lab
        .exec_cmd(&[
            "/bin/bash",
            "-c",
            &format!(
                "trap '' TERM INT; (trap '' TERM INT; exec -a {marker} sleep 300) & wait; wait"
            ),
        ])
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    // A signal inside the grace period does not cancel the kill.
    std::thread::sleep(Duration::from_millis(1500));
    send(&child, rustix::process::Signal::INT);
    let status = child.wait().unwrap();
    assert_eq!(status.code(), Some(124));
    assert!(started.elapsed() < Duration::from_secs(20));
    assert_eq!(wait_gone(marker), Vec::<String>::new());
}

#[test]
fn the_recorded_timeout_stops_the_sandbox() {
    if !bwrap_works() {
        return;
    }
    let lab = Lab::with_timeout_of_one_second();
    let marker = "zz-timeout-8d21";
    let started = Instant::now();
    let out = lab
        .exec_cmd(&["/bin/bash", "-c", &format!("exec -a {marker} sleep 300")])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(124), "{}", text(&out));
    assert!(started.elapsed() < Duration::from_secs(60));
    assert_eq!(wait_gone(marker), Vec::<String>::new());
}

#[test]
fn dry_run_shows_the_plan_without_secret_values() {
    if !bwrap_works() {
        return;
    }
    let lab = Lab::new();
    let out = Command::new(env!("CARGO_BIN_EXE_sealc"))
        .env_clear()
        .env("OPENAI_API_KEY", API_KEY)
        .args(["exec", "--dry-run"])
        .arg(&lab.record)
        .args(["--", "codex", "exec", "hi"])
        .output()
        .unwrap();
    let all = text(&out);
    assert_eq!(out.status.code(), Some(0), "{all}");
    assert!(!all.contains(API_KEY), "{all}");
    let plan: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    let argv: Vec<&str> = plan["argv"]
        .as_array()
        .unwrap()
        .iter()
        .map(|v| v.as_str().unwrap())
        .collect();
    assert_eq!(argv[0], "/usr/bin/bwrap");
    assert_eq!(&argv[argv.len() - 3..], ["codex", "exec", "hi"]);
    assert!(argv.contains(&"--unshare-net"));
    assert!(argv.contains(&"__init") && argv.contains(&"--listen"));
    assert!(argv.contains(&"<fd:env>"), "the env travels down a pipe");
    assert_eq!(plan["secrets"], serde_json::json!(["OPENAI_API_KEY"]));
    // The layers are said: seccomp, Landlock (with this kernel's ABI), and
    // who the agent runs as (root caller: an unprivileged user).
    assert!(plan["layers"]["seccomp"]
        .as_array()
        .unwrap()
        .iter()
        .any(|r| r == "ptrace"));
    assert!(plan["layers"]["landlock"]["abi"].as_i64().is_some());
    if rustix::process::geteuid().is_root() {
        assert_eq!(plan["user"], "65534:65534");
    }
}

const DENY_DEFAULT: &str = r#"
version = 1
name = "deny-default-linux"
[target]
platform = "linux"
base = "deny-default"
[vars]
lab = { required = true }
[filesystem]
allow_read    = ["${lab}/src"]
deny_read     = ["${lab}/src/.git"]
write         = ["${lab}/out"]
write_devices = ["/dev/null"]
[network]
mode = "none"
[env]
pass = ["PATH"]
"#;

#[test]
fn deny_default_shows_only_the_system_base_and_the_allowed_roots() {
    if !bwrap_works() {
        return;
    }
    let tmp = tempfile::tempdir_in(env!("CARGO_TARGET_TMPDIR")).unwrap();
    let t = tmp.path().canonicalize().unwrap();
    std::fs::create_dir_all(t.join("src/.git")).unwrap();
    std::fs::create_dir_all(t.join("out")).unwrap();
    std::fs::write(t.join("src/main.c"), "int main;\n").unwrap();
    std::fs::write(t.join("src/.git/config"), SECRET).unwrap();
    std::fs::write(t.join("elsewhere.txt"), OTHER_RUN).unwrap();
    std::fs::write(t.join("spec.toml"), DENY_DEFAULT).unwrap();
    let port = serve("NOT-THE-PROXY\n");
    let sealc = || {
        let mut c = Command::new(env!("CARGO_BIN_EXE_sealc"));
        c.current_dir(&t).env_clear().env("PATH", "/usr/bin:/bin");
        c
    };
    let out = sealc()
        .args(["compile", "spec.toml", "--out", "seal"])
        .arg(format!("--var=lab={}", t.display()))
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", text(&out));
    let script = format!(
        "echo SANDBOX-UP; cat {t}/src/main.c; cat /etc/os-release >/dev/null && echo etc-ok; \
         echo built > {t}/out/a.out && echo out-ok; \
         cat {t}/src/.git/config; cat {t}/elsewhere.txt; ls {t}; \
         for f in /x /etc/x {t}/src/x /usr/x; do (echo x > $f) 2>/dev/null && echo WROTE $f; done; \
         exec 3<>/dev/tcp/127.0.0.1/{port} && head -c 64 <&3; true",
        t = t.display()
    );
    let out = sealc()
        .arg("exec")
        .arg(t.join("seal/seal.json"))
        .args(["--", "/bin/bash", "-c", &script])
        .output()
        .unwrap();
    let all = text(&out);
    assert_eq!(out.status.code(), Some(0), "{all}");
    let stdout = String::from_utf8_lossy(&out.stdout);
    for want in ["SANDBOX-UP", "int main;", "etc-ok", "out-ok"] {
        assert!(stdout.contains(want), "missing {want}:\n{all}");
    }
    for leak in [SECRET, OTHER_RUN, "WROTE", "NOT-THE-PROXY"] {
        assert!(!all.contains(leak), "leaked {leak}:\n{all}");
    }
    assert_eq!(
        std::fs::read_to_string(t.join("out/a.out")).unwrap(),
        "built\n"
    );
}

/// The mount model that proves `[[assert]]`s on Linux agrees with what
/// bubblewrap really builds: random specs over a real tree, every path probed
/// inside the sandbox (stat, read, append, create) and compared with the
/// model's answer.
mod model_matches_bubblewrap {
    use super::*;
    use proptest::prelude::*;
    use sealc::mounts::{Access, Model};

    const POOL: &[&str] = &["a", "a/b", "a/b/c", "d", "d/e"];

    fn probe_script(t: &Path) -> String {
        let mut s = String::from("echo SANDBOX-UP\n");
        for p in POOL {
            let d = t.join(p);
            let d = d.display();
            s.push_str(&format!(
                "stat {d} >/dev/null 2>&1 && echo 'stat {p}'\n\
                 grep -q MARK {d}/f 2>/dev/null && echo 'read {p}/f'\n\
                 stat {d}/f >/dev/null 2>&1 && echo 'stat {p}/f'\n\
                 (echo >> {d}/f) 2>/dev/null && echo 'write {p}/f'\n\
                 (: > {d}/new) 2>/dev/null && echo 'write {p}'\n"
            ));
        }
        s
    }

    proptest! {
        #![proptest_config(ProptestConfig { cases: 16, failure_persistence: None, .. ProptestConfig::default() })]

        #[test]
        fn for_random_specs(
            roles in prop::collection::vec(0u8..5, POOL.len()),
            deny_default in any::<bool>(),
        ) {
            if !bwrap_works() {
                return Ok(());
            }
            let tmp = tempfile::tempdir_in(env!("CARGO_TARGET_TMPDIR")).unwrap();
            let t = tmp.path().canonicalize().unwrap();
            for p in POOL {
                std::fs::create_dir_all(t.join(p)).unwrap();
                std::fs::write(t.join(p).join("f"), format!("MARK {p}\n")).unwrap();
            }
            let mut lists: [Vec<String>; 4] = Default::default();
            for (p, r) in POOL.iter().zip(&roles) {
                if *r > 0 {
                    lists[usize::from(*r - 1)].push(format!("{:?}", t.join(p).display().to_string()));
                }
            }
            let src = format!(
                "version = 1\nname = \"m\"\n[target]\nplatform = \"linux\"\nbase = \"{}\"\n[filesystem]\ndeny_read = [{}]\nallow_read = [{}]\nmetadata_only = [{}]\nwrite = [{}]\n[network]\nmode = \"none\"\n",
                if deny_default { "deny-default" } else { "allow-default" },
                lists[0].join(", "), lists[1].join(", "), lists[2].join(", "), lists[3].join(", "),
            );
            let c = sealc::compile("m.toml", &src, &Vec::new(), &sealc::facts::RealHost)
                .map_err(|d| TestCaseError::fail(format!("{src}\n{d:?}")))?;
            for (name, bytes) in &c.files {
                let p = t.join("seal").join(name);
                std::fs::create_dir_all(p.parent().unwrap()).unwrap();
                std::fs::write(p, bytes).unwrap();
            }
            let out = Command::new(env!("CARGO_BIN_EXE_sealc"))
                .current_dir("/")
                .env_clear()
                .env("PATH", "/usr/bin:/bin")
                .arg("exec")
                .arg(t.join("seal/seal.json"))
                .args(["--", "/bin/bash", "-c", &probe_script(&t)])
                .output()
                .unwrap();
            let stdout = String::from_utf8_lossy(&out.stdout).into_owned();
            prop_assert!(stdout.starts_with("SANDBOX-UP"), "{}\n{}", src, text(&out));
            let seen: Vec<&str> = stdout.lines().skip(1).collect();
            let model = Model::from_artifact(&c.files["seal.bwrap.json"]).unwrap();
            let mut want = Vec::new();
            for p in POOL {
                let d = t.join(p).display().to_string();
                let f = format!("{d}/f");
                for (line, access, path) in [
                    (format!("stat {p}"), Access::ReadMetadata, &d),
                    (format!("read {p}/f"), Access::ReadData, &f),
                    (format!("stat {p}/f"), Access::ReadMetadata, &f),
                    (format!("write {p}/f"), Access::Write, &f),
                    (format!("write {p}"), Access::Write, &d),
                ] {
                    if model.path(access, path).allowed {
                        want.push(line);
                    }
                }
            }
            prop_assert_eq!(seen, want, "{}", src);
        }
    }
}

#[test]
fn confine_refuses_new_unix_sockets_and_io_uring_but_not_the_rest() {
    let script = r#"
import socket, errno, ctypes, os
def try_(name, f):
    try:
        f(); print(name + ": made")
    except PermissionError: print(name + ": refused")
try_("unix", lambda: socket.socket(socket.AF_UNIX))
a, b = socket.socketpair(); a.send(b"x"); print("pair:", b.recv(1).decode())
try_("inet", lambda: socket.socket(socket.AF_INET))
try_("inet6", lambda: socket.socket(socket.AF_INET6))
try_("vsock", lambda: socket.socket(socket.AF_VSOCK, socket.SOCK_STREAM))
try_("packet", lambda: socket.socket(socket.AF_PACKET, socket.SOCK_RAW))
libc = ctypes.CDLL(None, use_errno=True)
def sys(name, nr, *args):
    r = libc.syscall(nr, *args)
    print(name + ":", "refused" if r == -1 and ctypes.get_errno() == errno.EPERM else "made")
sys("io_uring", 425, 1, ctypes.create_string_buffer(120))
sys("keyctl", 250, 0, -3, 0)
sys("unshare", 272, 0x10000000)
"#;
    for (offline, unix) in [(true, "refused"), (false, "made")] {
        let mut cmd = Command::new(env!("CARGO_BIN_EXE_sealc"));
        cmd.env_clear().arg("__confine");
        if offline {
            cmd.arg("--offline");
        }
        let out = cmd
            .args(["--", "/usr/bin/python3", "-c", script])
            .output()
            .unwrap();
        let all = text(&out);
        assert_eq!(out.status.code(), Some(0), "{all}");
        assert_eq!(
            String::from_utf8_lossy(&out.stdout),
            format!(
                "unix: {unix}\npair: x\ninet: made\ninet6: made\nvsock: refused\npacket: refused\n\
                 io_uring: refused\nkeyctl: refused\nunshare: refused\n"
            ),
            "{all}"
        );
    }
}
