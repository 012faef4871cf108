//! `sealc exec` enforcing for real: the probe spec compiled with
//! `--platform linux`, run under bubblewrap, against an attack battery.
//!
//! Every attempt runs inside the seal through `sealc exec`, on a private
//! layout in a temp directory (never `$HOME`): a checkout and a home that are
//! denied, another run's temp directory, a metadata-only dispatch directory,
//! a host proxy and a second loopback service that is not the proxy.
//!
//! Without bubblewrap these tests are ignored, unless
//! `SEALC_REQUIRE_BWRAP=1` (set by `.ci/run`), under which they fail.

mod common;

use std::io::{Read, Write};
use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};
use std::time::{Duration, Instant};

use common::{bwrap_works, root, serve, text};

const SECRET: &str = "SKILL-SECRET-7f3a";
const OTHER_RUN: &str = "OTHER-RUN-TEMP-91c2";
const DISPATCH: &str = "DISPATCH-TASK-4be1";
const PARENT: &str = "PARENT-SECRET-a0d5";
const API_KEY: &str = "sk-test-5e9b";

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
#[cfg_attr(sealc_no_bwrap, ignore = "needs bubblewrap that can make namespaces")]
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
#[cfg_attr(sealc_no_bwrap, ignore = "needs bubblewrap that can make namespaces")]
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
#[cfg_attr(sealc_no_bwrap, ignore = "needs bubblewrap that can make namespaces")]
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
    assert_eq!(out.status.code(), Some(125), "{}", text(&out));
    assert!(text(&out).contains("`OPENAI_API_KEY`"));
    assert!(!Path::new(&marker).exists(), "the command started");
}

#[test]
#[cfg_attr(sealc_no_bwrap, ignore = "needs bubblewrap that can make namespaces")]
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
        assert_eq!(out.status.code(), Some(125), "{}", text(&out));
        assert!(text(&out).contains("nothing was started"), "{}", text(&out));
        assert!(!Path::new(&marker).exists(), "the command started");
        std::fs::write(file, original).unwrap();
    }
    // A forged record (its spec changed) does not start either.
    let record = std::fs::read_to_string(&lab.record).unwrap();
    std::fs::write(&lab.record, record.replacen("deny_read", "allow_read", 1)).unwrap();
    let out = lab.exec_cmd(&["/usr/bin/touch", &marker]).output().unwrap();
    assert_eq!(out.status.code(), Some(125), "{}", text(&out));
    assert!(!Path::new(&marker).exists(), "the command started");
}

#[test]
#[cfg_attr(sealc_no_bwrap, ignore = "needs bubblewrap that can make namespaces")]
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
    assert_eq!(out.status.code(), Some(125), "{all}");
    assert!(all.contains("run/ws"), "{all}");
    assert!(all.contains("nothing was started"), "{all}");
    assert!(!Path::new(&marker).exists(), "the command started");

    // A denied root that was absent when compiled, and exists now.
    let lab = Lab::new();
    let marker = lab.path("run/ws/started");
    std::fs::create_dir_all(lab.t.join("home/.agents")).unwrap();
    let out = lab.exec_cmd(&["/usr/bin/touch", &marker]).output().unwrap();
    let all = text(&out);
    assert_eq!(out.status.code(), Some(125), "{all}");
    assert!(all.contains(".agents"), "{all}");
    assert!(!Path::new(&marker).exists(), "the command started");
}

#[test]
#[cfg_attr(sealc_no_bwrap, ignore = "needs bubblewrap that can make namespaces")]
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
#[cfg_attr(sealc_no_bwrap, ignore = "needs bubblewrap that can make namespaces")]
fn bridge_directories_are_cleaned_up_even_after_a_killed_run() {
    if !bwrap_works() {
        return;
    }
    use std::os::unix::fs::PermissionsExt;
    let lab = Lab::new();
    // Root's bridges are made in `/run/sealc/bridge` (root's alone), anyone
    // else's in `$XDG_RUNTIME_DIR` when it is theirs alone, else `/tmp`;
    // never in `$TMPDIR`, which may lie in a write root.
    let root = rustix::process::geteuid().is_root();
    let runtime = lab.t.join("runtime");
    std::fs::create_dir(&runtime).unwrap();
    std::fs::set_permissions(&runtime, std::fs::Permissions::from_mode(0o700)).unwrap();
    let bridges = if root {
        PathBuf::from("/run/sealc/bridge")
    } else {
        runtime.clone()
    };
    // What a `sealc exec` killed by SIGKILL leaves: its directory and socket
    // (pid 999999999 is above any pid_max, so never alive).
    let stale = bridges.join(format!("sealc-bridge-999999999-{}", std::process::id()));
    std::fs::create_dir_all(&stale).unwrap();
    std::fs::write(stale.join("proxy.sock"), "").unwrap();
    let tmpdir = lab.t.join("tmpdir");
    std::fs::create_dir(&tmpdir).unwrap();
    let out = lab
        .exec_cmd(&["/bin/true"])
        .env("TMPDIR", &tmpdir)
        .env("XDG_RUNTIME_DIR", &runtime)
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(0), "{}", text(&out));
    assert!(!stale.exists(), "the stale bridge was left behind");
    let left: Vec<_> = [bridges.as_path(), tmpdir.as_path()]
        .iter()
        .flat_map(|d| std::fs::read_dir(d).unwrap().flatten())
        .map(|e| e.path())
        .filter(|p| p.to_string_lossy().contains("sealc-bridge-999999999"))
        .collect();
    assert!(left.is_empty(), "left behind: {left:?}");
    assert_eq!(
        std::fs::read_dir(&tmpdir).unwrap().count(),
        0,
        "nothing in TMPDIR"
    );
}

#[test]
#[cfg_attr(sealc_no_bwrap, ignore = "needs bubblewrap that can make namespaces")]
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
#[cfg_attr(sealc_no_bwrap, ignore = "needs bubblewrap that can make namespaces")]
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
#[cfg_attr(sealc_no_bwrap, ignore = "needs bubblewrap that can make namespaces")]
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
#[cfg_attr(sealc_no_bwrap, ignore = "needs bubblewrap that can make namespaces")]
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
#[cfg_attr(sealc_no_bwrap, ignore = "needs bubblewrap that can make namespaces")]
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
    // `codex` is the launcher's file name: the recorded launcher runs.
    let launcher = lab.t.join("home/.local/bin/codex").display().to_string();
    assert_eq!(&argv[argv.len() - 3..], [launcher.as_str(), "exec", "hi"]);
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
    assert_eq!(plan["secrets_unset"], serde_json::json!([]));
    // Without the secret a dry run still shows the plan, and says it is
    // unset (a run would refuse).
    let out = Command::new(env!("CARGO_BIN_EXE_sealc"))
        .env_clear()
        .args(["exec", "--dry-run"])
        .arg(&lab.record)
        .args(["--", "codex", "exec", "hi"])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(0), "{}", text(&out));
    let unset: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(
        unset["secrets_unset"],
        serde_json::json!(["OPENAI_API_KEY"])
    );
    assert_eq!(unset["argv"], plan["argv"]);
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
#[cfg_attr(sealc_no_bwrap, ignore = "needs bubblewrap that can make namespaces")]
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

/// Issue 11, item 7: a write root absent when compiled (also one inside a
/// hidden directory) is made when the seal starts: the command writes in
/// it, the host keeps what it wrote, and the next run starts as well.
#[test]
#[cfg_attr(sealc_no_bwrap, ignore = "needs bubblewrap that can make namespaces")]
fn an_absent_write_root_is_made_when_the_seal_starts() {
    if !bwrap_works() {
        return;
    }
    let tmp = tempfile::tempdir_in(env!("CARGO_TARGET_TMPDIR")).unwrap();
    let t = tmp.path().canonicalize().unwrap();
    std::fs::set_permissions(&t, std::os::unix::fs::PermissionsExt::from_mode(0o755)).unwrap();
    std::fs::create_dir_all(t.join("hidden")).unwrap();
    std::fs::write(t.join("hidden/secret"), SECRET).unwrap();
    let spec = format!(
        "version = 1\nname = \"absent\"\n[target]\nplatform = \"linux\"\n[filesystem]\ndeny_read = [\"{t}/hidden\"]\nwrite = [\"{t}/new/ws\", \"{t}/hidden/run/ws\"]\n[network]\nmode = \"none\"\n",
        t = t.display()
    );
    std::fs::write(t.join("spec.toml"), spec).unwrap();
    let sealc = || {
        let mut c = Command::new(env!("CARGO_BIN_EXE_sealc"));
        c.current_dir(&t).env_clear().env("PATH", "/usr/bin:/bin");
        c
    };
    let out = sealc()
        .args(["compile", "spec.toml", "--out", "seal"])
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", text(&out));
    // miette wraps long lines (a long checkout path): read them joined.
    let said = String::from_utf8_lossy(&out.stderr)
        .lines()
        .map(|l| l.trim().trim_start_matches('│').trim())
        .collect::<Vec<_>>()
        .join(" ");
    for w in ["new/ws", "hidden/run/ws"] {
        assert!(
            said.contains(&format!(
                "write root `{}/{w}` does not exist here",
                t.display()
            )),
            "{said}"
        );
    }
    assert!(!t.join("new").exists(), "compile made something");
    let script = format!(
        "echo one > {t}/new/ws/f && echo two > {t}/hidden/run/ws/g && mkdir {t}/new/ws/d && cat {t}/new/ws/f {t}/hidden/run/ws/g; cat {t}/hidden/secret",
        t = t.display()
    );
    for run in 0..2 {
        let out = sealc()
            .arg("exec")
            .arg(t.join("seal/seal.json"))
            .args(["--", "/bin/sh", "-c", &script])
            .output()
            .unwrap();
        let all = text(&out);
        assert!(!all.contains(SECRET), "run {run}: leaked\n{all}");
        assert_eq!(
            String::from_utf8_lossy(&out.stdout),
            "one\ntwo\n",
            "run {run}: {all}"
        );
        std::fs::remove_dir(t.join("new/ws/d")).unwrap();
    }
    assert_eq!(
        std::fs::read_to_string(t.join("new/ws/f")).unwrap(),
        "one\n"
    );
    assert_eq!(
        std::fs::read_to_string(t.join("hidden/run/ws/g")).unwrap(),
        "two\n"
    );
}

/// The mount model that proves `[[assert]]`s on Linux agrees with what
/// bubblewrap really builds: random specs over a real tree, every path probed
/// inside the sandbox and compared with the model's answer. The probes read
/// (stat, read), write (append, create), and change names: unlink, rmdir,
/// mkdir, rename within a directory and across directories, hard links. A
/// probe that changed something undoes it at once, so every probe sees the
/// same tree, and the tree is checked to be whole afterwards.
mod model_matches_bubblewrap {
    use super::*;
    use proptest::prelude::*;
    use sealc::mounts::{Access, Answer, Model};

    /// The directories of the random tree; each holds a file `f`, a
    /// symlink `l -> f` and an empty directory `n`.
    const DIRS: &[&str] = &["a", "a/b", "a/b/c", "d", "d/e"];
    /// Files that may be roots of their own.
    const FILES: &[&str] = &["a/g", "d/e/g"];
    /// A directory reached through a symlink (`d/s -> ../a/b`): a root
    /// written that way is reached by both spellings (issue 11, item 3).
    const LINKED: (&str, &str) = ("d/s", "../a/b");
    /// What a random spec gives a role: the directories, the two files, an
    /// empty directory, the link.
    const ROLED: &[&str] = &[
        "a", "a/b", "a/b/c", "d", "d/e", "a/g", "d/e/g", "d/n", "d/s",
    ];
    /// The spec's lists, by role (role 0: no root).
    const LISTS: [&str; 4] = ["deny_read", "allow_read", "metadata_only", "write"];
    /// Paths a random spec may protect (those inside a write root, holding
    /// none): directories, files, an empty directory, and absent paths
    /// (their stand-ins are made for the run), one below a link.
    const PROTECTABLE: &[&str] = &[
        "a/b", "a/b/c", "d/e", "a/g", "d/e/g", "a/n", "a/zz", "a/b/zz/q", "d/e/n/zz", "d/s/c",
    ];
    /// Names a random spec may protect below every write root.
    const NAMES: &[&str] = &["", "", "f", "n", "zz", "c/zz", "b/c"];

    /// Runs the probes inside the sandbox: `argv[1]` is the tree, `argv[2]`
    /// the probes as JSON `[op, path, to]` (paths relative to the tree).
    /// Prints `i ok` or `i ERRNO` per probe, `UNDO i ERRNO` when undoing a
    /// change failed.
    const RUNNER: &str = r#"
import errno, json, os, sys
base, probes = sys.argv[1], json.loads(sys.argv[2])
at = lambda r: r if r.startswith("/") else base + "/" + r if r else base
name = lambda e: errno.errorcode.get(e.errno, str(e.errno))
print("SANDBOX-UP")
for i, (op, a, b) in enumerate(probes):
    p, q, undo, shown = at(a), at(b) if b is not None else None, None, ""
    try:
        if op == "stat":
            os.lstat(p)
        elif op == "list":
            shown = " " + json.dumps(sorted(os.listdir(p)), separators=(",", ":"))
        elif op == "read":
            with open(p, "rb") as f:
                if b"MARK" not in f.read():
                    raise OSError(errno.ENODATA, "not the host's data")
        elif op == "append":
            with open(p, "ab") as f:
                f.write(b"\n")
        elif op == "create":
            os.close(os.open(p, os.O_WRONLY | os.O_CREAT | os.O_EXCL))
            undo = lambda: os.unlink(p)
        elif op == "unlink":
            try:
                saved = ("l", os.readlink(p)) if os.path.islink(p) else ("f", open(p, "rb").read())
            except OSError:
                saved = None
            os.unlink(p)
            def undo():
                if saved is None:
                    raise OSError(errno.EIO, "unlinked what could not be read")
                if saved[0] == "l":
                    os.symlink(saved[1], p)
                else:
                    with open(p, "xb") as f:
                        f.write(saved[1])
        elif op == "rmdir":
            os.rmdir(p)
            undo = lambda: os.mkdir(p)
        elif op == "mkdir":
            os.mkdir(p)
            undo = lambda: os.rmdir(p)
        elif op == "rename":
            os.rename(p, q)
            undo = lambda: os.rename(q, p)
        elif op == "link":
            os.link(p, q, follow_symlinks=False)
            undo = lambda: os.unlink(q)
        else:
            raise SystemExit("unknown probe " + op)
        print(i, "ok" + shown)
    except OSError as e:
        print(i, name(e))
    if undo is not None:
        try:
            undo()
        except OSError as e:
            print("UNDO", i, name(e))
"#;

    /// One probe: an operation on a path of the tree, or from it to a new
    /// name (paths relative to the tree, `""` the tree itself; or absolute,
    /// the sandbox's own `/sys`).
    struct Probe {
        op: &'static str,
        path: String,
        to: Option<String>,
    }

    fn join(dir: &str, name: &str) -> String {
        if dir.is_empty() {
            name.to_string()
        } else {
            format!("{dir}/{name}")
        }
    }

    fn dir_of(p: &str) -> &str {
        p.rsplit_once('/').map_or("", |(d, _)| d)
    }

    /// Every probe, the same for every spec: reads first, then writes and
    /// name changes, each undone when it worked.
    fn probes() -> Vec<Probe> {
        let mut v = Vec::new();
        let mut push = |op, path: String, to: Option<String>| v.push(Probe { op, path, to });
        // Listings: the tree, every directory, every empty one.
        for d in std::iter::once("").chain(DIRS.iter().copied()) {
            push("list", d.to_string(), None);
        }
        for d in DIRS {
            push("list", join(d, "n"), None);
        }
        // Through the link: the spelling as written.
        let s = LINKED.0;
        push("list", s.to_string(), None);
        push("stat", s.to_string(), None);
        for x in ["f", "n"] {
            push("stat", join(s, x), None);
        }
        push("read", join(s, "f"), None);
        push("append", join(s, "f"), None);
        push("create", join(s, "newl"), None);
        push("mkdir", join(s, "ml"), None);
        for d in DIRS {
            push("stat", d.to_string(), None);
            push("stat", join(d, "n"), None);
            push("stat", join(d, "f"), None);
            push("read", join(d, "f"), None);
        }
        for g in FILES {
            push("stat", g.to_string(), None);
            push("read", g.to_string(), None);
        }
        for p in DIRS
            .iter()
            .map(|d| join(d, "f"))
            .chain(FILES.iter().map(|g| g.to_string()))
        {
            push("append", p, None);
        }
        // Destinations: the tree itself, each directory, each empty one.
        let dests: Vec<String> = std::iter::once(String::new())
            .chain(DIRS.iter().map(|d| d.to_string()))
            .collect();
        let empty = DIRS.iter().map(|d| join(d, "n"));
        for (i, d) in dests.iter().cloned().chain(empty).enumerate() {
            let d = d.as_str();
            push("create", join(d, &format!("new{i}")), None);
            push("mkdir", join(d, &format!("m{i}")), None);
        }
        // Names of every kind: directory, file, symlink, empty directory.
        let mut names: Vec<(String, bool)> = Vec::new();
        for d in DIRS {
            names.push((d.to_string(), false));
            names.push((join(d, "f"), true));
            names.push((join(d, "l"), true));
            names.push((join(d, "n"), false));
        }
        names.extend(FILES.iter().map(|g| (g.to_string(), true)));
        names.push((LINKED.0.to_string(), true));
        names.push((join(LINKED.0, "f"), true));
        names.push((join(LINKED.0, "n"), false));
        // The sandbox's own /sys (issue 22, item 2), where the host has
        // every entry it binds back (each is `--ro-bind-try`; the model
        // takes them to be there).
        if sealc::backend::bwrap::SYS_SHOWN
            .iter()
            .all(|(p, _)| Path::new(p).is_dir())
        {
            for d in [
                "/sys",
                "/sys/devices",
                "/sys/devices/system",
                "/sys/devices/system/cpu",
            ] {
                push("list", d.to_string(), None);
            }
            for p in [
                "/sys/class/net",
                "/sys/fs/cgroup",
                "/sys/firmware",
                "/sys/block",
                "/sys/devices/virtual/dmi",
                "/sys/devices/system/cpu/online",
                "/sys/kernel/mm/transparent_hugepage/enabled",
            ] {
                push("stat", p.to_string(), None);
            }
            push("create", "/sys/new".to_string(), None);
            push("mkdir", "/sys/m".to_string(), None);
        }
        for (k, (x, file)) in names.iter().enumerate() {
            let here = dir_of(x);
            if *file {
                push("unlink", x.clone(), None);
            } else if x.ends_with("/n") {
                push("rmdir", x.clone(), None);
            }
            push("rename", x.clone(), Some(format!("{x}.r{k}")));
            for d in dests.iter().filter(|d| d.as_str() != here) {
                push("rename", x.clone(), Some(join(d, &format!("r{k}"))));
            }
            if *file {
                push("link", x.clone(), Some(format!("{x}.h{k}")));
                for d in dests.iter().filter(|d| d.as_str() != here) {
                    push("link", x.clone(), Some(join(d, &format!("h{k}"))));
                }
            }
        }
        v
    }

    /// What the model says of a probe, under each operation name that asks
    /// it (the names `sealc explain` and `[[assert]]` take).
    fn expected(m: &Model, t: &str, p: &Probe) -> Vec<(&'static str, Option<Answer>)> {
        let at = |r: &str| {
            if r.is_empty() {
                t.to_string()
            } else if r.starts_with('/') {
                r.to_string()
            } else {
                format!("{t}/{r}")
            }
        };
        let path = at(&p.path);
        let to = p.to.as_deref().map(at);
        let to = to.as_deref();
        let same_dir =
            p.to.as_deref()
                .is_some_and(|to| dir_of(to) == dir_of(&p.path));
        let names: &[&'static str] = match (p.op, same_dir) {
            ("stat", _) => &["file-read-metadata"],
            ("read", _) => &["file-read-data"],
            // A listing works wherever the directory is there; it shows
            // the host's entries only where its data can be read (the
            // names are checked below).
            ("list", _) => &[],
            ("append", _) => &["file-write-data"],
            ("create", _) => &["file-write-create"],
            ("mkdir", _) => &["mkdir", "file-write-create"],
            ("unlink", _) => &["unlink", "file-write-unlink"],
            ("rmdir", _) => &["rmdir", "file-write-unlink"],
            // Within one directory, a rename is the name going away, and a
            // hard link is the file linked within its own mount.
            ("rename", true) => &["rename", "file-write-unlink"],
            ("rename", false) => &["rename"],
            ("link", true) => &["link", "file-link"],
            ("link", false) => &["link"],
            (other, _) => panic!("no model for probe {other}"),
        };
        let mut v: Vec<_> = names
            .iter()
            .map(|&name| {
                let takes_to = matches!(name, "rename" | "link");
                (name, m.ask(name, &path, if takes_to { to } else { None }))
            })
            .collect();
        if p.op == "list" {
            // Listing follows a final symlink.
            v.push((
                "file-read-metadata of what it leads to",
                Some(m.path(Access::ReadMetadata, &m.resolve(&path, true))),
            ));
        }
        if p.op == "create" {
            // Creating a file in a directory is writing the directory.
            v.push((
                "file-write-data on its directory",
                Some(m.path(Access::Write, &at(dir_of(&p.path)))),
            ));
        }
        if p.op == "link" {
            v.push((
                "file-link with a destination",
                m.ask("file-link", &path, to),
            ));
        }
        v
    }

    /// Every entry under the tree (but the seal), with its kind.
    fn snapshot(t: &Path) -> Vec<String> {
        fn walk(t: &Path, dir: &Path, out: &mut Vec<String>) {
            let mut entries: Vec<_> = std::fs::read_dir(dir).unwrap().flatten().collect();
            entries.sort_by_key(|e| e.file_name());
            for e in entries {
                let p = e.path();
                let rel = p.strip_prefix(t).unwrap().display().to_string();
                if rel == "seal" {
                    continue;
                }
                let ty = e.file_type().unwrap();
                if ty.is_symlink() {
                    out.push(format!(
                        "{rel} -> {}",
                        std::fs::read_link(&p).unwrap().display()
                    ));
                } else if ty.is_dir() {
                    out.push(format!("{rel}/"));
                    walk(t, &p, out);
                } else {
                    out.push(rel);
                }
            }
        }
        let mut out = Vec::new();
        walk(t, t, &mut out);
        out
    }

    fn build_tree(t: &Path) {
        for d in DIRS {
            let d = t.join(d);
            std::fs::create_dir_all(d.join("n")).unwrap();
            std::fs::write(d.join("f"), format!("MARK {}\n", d.display())).unwrap();
            std::os::unix::fs::symlink("f", d.join("l")).unwrap();
        }
        std::os::unix::fs::symlink(LINKED.1, t.join(LINKED.0)).unwrap();
        for g in FILES {
            std::fs::write(t.join(g), format!("MARK {g}\n")).unwrap();
        }
    }

    proptest! {
        #![proptest_config(ProptestConfig { cases: 160, failure_persistence: None, .. ProptestConfig::default() })]

        #[test]
        #[cfg_attr(sealc_no_bwrap, ignore = "needs bubblewrap that can make namespaces")]
        fn for_random_specs(
            roles in prop::collection::vec(0u8..5, ROLED.len()),
            tree in prop::sample::select(vec![0u8, 0, 0, 4, 4, 1, 2, 3]),
            deny_default in any::<bool>(),
            protect in prop::collection::vec(prop::bool::weighted(0.2), PROTECTABLE.len()),
            name in prop::sample::select(NAMES.to_vec()),
        ) {
            if !bwrap_works() {
                return Ok(());
            }
            // The link and what it leads to are one root: the link keeps a
            // role only when its target has none, and a denied link stays
            // out of write roots (Linux refuses it there).
            let mut roles = roles;
            let at = |r: &str| ROLED.iter().position(|x| *x == r).unwrap();
            let link = at(LINKED.0);
            let in_write = tree == 4 || roles[at("d")] == 4;
            if roles[at("a/b")] > 0 || (matches!(roles[link], 1 | 3) && in_write) {
                roles[link] = 0;
            }
            let tmp = tempfile::tempdir_in(env!("CARGO_TARGET_TMPDIR")).unwrap();
            let t = tmp.path().canonicalize().unwrap();
            let ts = t.display().to_string();
            build_tree(&t);
            let mut lists: [Vec<String>; 4] = Default::default();
            for (p, r) in std::iter::once(&"").chain(ROLED).zip(std::iter::once(&tree).chain(&roles)) {
                if *r > 0 {
                    lists[usize::from(*r - 1)].push(format!("{:?}", join(&ts, p).trim_end_matches('/')));
                }
            }
            let mut src = format!(
                "version = 1\nname = \"m\"\n[target]\nplatform = \"linux\"\nbase = \"{}\"\n[filesystem]\n",
                if deny_default { "deny-default" } else { "allow-default" },
            );
            for (key, list) in LISTS.iter().zip(&lists) {
                src.push_str(&format!("{key} = [{}]\n", list.join(", ")));
            }
            // Protected: paths strictly inside a write root (by where they
            // lead) that hold none, and a name.
            let real = |p: &str| match p.strip_prefix(LINKED.0) {
                Some(rest) => format!("a/b{rest}"),
                None => p.to_string(),
            };
            let inside = |p: &str, w: &str| w.is_empty() && !p.is_empty() || p.starts_with(&format!("{w}/"));
            let writes: Vec<String> = std::iter::once(&"")
                .chain(ROLED)
                .zip(std::iter::once(&tree).chain(&roles))
                .filter(|(_, r)| **r == 4)
                .map(|(p, _)| real(p))
                .collect();
            let mut protected: Vec<String> = PROTECTABLE
                .iter()
                .zip(&protect)
                .filter(|(_, on)| **on)
                .map(|(p, _)| *p)
                .filter(|p| {
                    let r = real(p);
                    writes.iter().any(|w| inside(&r, w))
                        && !writes.iter().any(|w| *w == r || inside(w, &r))
                })
                .map(|p| format!("{:?}", join(&ts, p)))
                .collect();
            if !name.is_empty() {
                protected.push(format!("{name:?}"));
            }
            src.push_str(&format!("protect = [{}]\n", protected.join(", ")));
            src.push_str("[network]\nmode = \"none\"\n");
            let shown = src.replace(&ts, "$T");
            let c = match sealc::compile("m.toml", &src, &Vec::new(), &sealc::facts::RealHost) {
                Ok(c) => c,
                // The link and what it leads to in contradicting lists, or
                // a denied link inside a write root: refused, rightly.
                // A protected path below a link in a write root, or one
                // that holds a write root (a name): refused, rightly.
                Err(d) if d.0.iter().filter(|d| d.is_error()).all(|d| {
                    matches!(
                        d.code,
                        "sealc::root::conflict"
                            | "sealc::linux::denied-link-in-write-root"
                            | "sealc::protect::link"
                            | "sealc::protect::write-root"
                    )
                }) => return Ok(()),
                Err(d) => return Err(TestCaseError::fail(format!("{shown}\n{d:?}"))),
            };
            // The seal outside `$T`, which some specs make a write root
            // (`sealc exec` refuses a record inside its own write roots).
            let sd = tempfile::tempdir_in(env!("CARGO_TARGET_TMPDIR")).unwrap();
            for (name, bytes) in &c.files {
                let p = sd.path().join("seal").join(name);
                std::fs::create_dir_all(p.parent().unwrap()).unwrap();
                std::fs::write(p, bytes).unwrap();
            }
            let mut probes = probes();
            // Each stand-in: there, empty and read-only, a fixed name.
            let bwrap: serde_json::Value = serde_json::from_slice(&c.files["seal.bwrap.json"]).unwrap();
            let stand_ins: Vec<String> = bwrap["stand_ins"]
                .as_array()
                .into_iter()
                .flatten()
                .filter_map(|s| s.as_str()?.strip_prefix(&format!("{ts}/")).map(str::to_string))
                .collect();
            if std::env::var_os("MODEL_REPORT").is_some() {
                println!(
                    "PROTECTED {} PINS {} STAND-INS {}",
                    c.ir.protected().len(),
                    c.ir.pins.len(),
                    stand_ins.len()
                );
            }
            for si in &stand_ins {
                let mut push = |op, path: String, to: Option<String>| probes.push(Probe { op, path, to });
                push("stat", si.clone(), None);
                push("create", join(si, "x"), None);
                push("mkdir", join(si, "m"), None);
                push("mkdir", si.clone(), None);
                push("rmdir", si.clone(), None);
                push("rename", si.clone(), Some(format!("{si}.r")));
            }
            let json = serde_json::to_string(
                &probes.iter().map(|p| (p.op, &p.path, &p.to)).collect::<Vec<_>>(),
            )
            .unwrap();
            let before = snapshot(&t);
            // The host's entries, and the stand-ins `sealc exec` makes in it.
            let host_listing = |rel: &str| -> String {
                let mut names: Vec<String> = std::fs::read_dir(t.join(rel))
                    .unwrap()
                    .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
                    .collect();
                let here = std::fs::canonicalize(t.join(rel)).unwrap();
                names.extend(stand_ins.iter().filter_map(|si| {
                    let (dir, name) = si.rsplit_once('/').unwrap_or(("", si));
                    (t.join(dir) == here).then(|| name.to_string())
                }));
                names.sort();
                names.dedup();
                serde_json::to_string(&names).unwrap()
            };
            let listings: Vec<Option<String>> = probes
                .iter()
                .map(|p| (p.op == "list").then(|| host_listing(&p.path)))
                .collect();
            let out = Command::new(env!("CARGO_BIN_EXE_sealc"))
                .current_dir("/")
                .env_clear()
                .env("PATH", "/usr/bin:/bin")
                .arg("exec")
                .arg(sd.path().join("seal/seal.json"))
                .args(["--", "/usr/bin/python3", "-c", RUNNER, &ts, &json])
                .output()
                .unwrap();
            let stdout = String::from_utf8_lossy(&out.stdout).into_owned();
            prop_assert!(stdout.starts_with("SANDBOX-UP"), "{}\n{}", shown, text(&out));
            let seen: Vec<&str> = stdout.lines().skip(1).collect();
            prop_assert!(
                !stdout.contains("UNDO"),
                "a probe's change could not be undone (inside the sandbox)\n{}\n{}",
                shown,
                stdout
            );
            prop_assert_eq!(seen.len(), probes.len(), "{}\n{}", shown, text(&out));
            prop_assert_eq!(&snapshot(&t), &before, "the probes changed the tree\n{}", shown);
            // Issue 11, item 3: a root written through the link is reached
            // through it, wherever the link lies (a hidden `d` included).
            let role_of = |r: &str| roles[ROLED.iter().position(|x| *x == r).unwrap()];
            let answer_of = |op: &str, path: &str| {
                let i = probes.iter().position(|p| p.op == op && p.path == path).unwrap();
                seen[i].split(' ').nth(1).unwrap_or("").to_string()
            };
            let through = join(LINKED.0, "f");
            if matches!(role_of(LINKED.0), 2 | 4) {
                prop_assert_eq!(answer_of("read", &through), "ok", "read $T/{} in\n{}", through, shown);
            }
            // (Unless it is protected: then read-only, which the model
            // checks below.)
            let through_real = format!("{ts}/a/b/f");
            let protected_through = c.ir.protected().iter().any(|r| {
                r.real.as_deref().is_some_and(|x| {
                    through_real == x || through_real.starts_with(&format!("{x}/"))
                })
            });
            if role_of(LINKED.0) == 4 && !protected_through {
                prop_assert_eq!(answer_of("append", &through), "ok", "append $T/{} in\n{}", through, shown);
            }
            let model = Model::from_artifact(&c.files["seal.bwrap.json"]).unwrap();
            // The model knows a host symlink only as a root's spelling:
            // through the link, compare only when it is a root.
            let link_is_root = roles[ROLED.iter().position(|r| *r == LINKED.0).unwrap()] > 0;
            let through_link = |p: &Probe| {
                let under = |x: &str| x.starts_with(&format!("{}/", LINKED.0));
                under(&p.path)
                    || p.to.as_deref().is_some_and(under)
                    || (p.op == "list" && p.path == LINKED.0)
            };
            for (i, (p, line)) in probes.iter().zip(&seen).enumerate() {
                let answered = line.strip_prefix(&format!("{i} ")).ok_or_else(|| {
                    TestCaseError::fail(format!("probe {i} answered out of order: {line}"))
                })?;
                if !link_is_root && through_link(p) {
                    continue;
                }
                let (real, names) = answered.split_once(' ').unwrap_or((answered, ""));
                if let (Some(host), "ok") = (&listings[i], real) {
                    // The host's entries where its data reads; else the
                    // names bubblewrap made (issue 11, item 5: nothing but
                    // the way to a deeper mount).
                    let at = if p.path.is_empty() {
                        ts.clone()
                    } else if p.path.starts_with('/') {
                        p.path.clone()
                    } else {
                        format!("{ts}/{}", p.path)
                    };
                    let want = if model.path(Access::ReadData, &at).allowed {
                        host.clone()
                    } else {
                        serde_json::to_string(&model.shown(&at)).unwrap()
                    };
                    prop_assert_eq!(names, want.as_str(), "listing of $T/{}\n{}", p.path, shown);
                }
                for (name, answer) in expected(&model, &ts, p) {
                    let answer = answer.ok_or_else(|| {
                        TestCaseError::fail(format!("the model does not answer `{name}`"))
                    })?;
                    // Under a system call's own name, a refusal also names
                    // the kernel's error.
                    let syscall = matches!(name, "mkdir" | "unlink" | "rmdir" | "rename" | "link");
                    let agree = if answer.allowed {
                        real == "ok"
                    } else {
                        real != "ok" && (!syscall || answer.why.ends_with(&format!("({real})")))
                    };
                    prop_assert!(
                        agree,
                        "model and bubblewrap disagree\n{}probe {}: {} $T/{}{}\nmodel ({}): {}, {}\nreal: {}",
                        shown,
                        i,
                        p.op,
                        p.path,
                        p.to.as_deref().map(|to| format!(" -> $T/{to}")).unwrap_or_default(),
                        name,
                        if answer.allowed { "allow" } else { "deny" },
                        answer.why.replace(&ts, "$T"),
                        real,
                    );
                }
            }
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

/// A seal compiled into its own write root is one the agent could rewrite
/// for a later run: from inside, it compiles a laxer seal over the reviewed
/// one, whose write roots leave the record out, and the new record verifies
/// as well as the old. Compile warns; `sealc exec` refuses such a record,
/// pinned or not, so the agent never gets to write it. A record whose place
/// cannot be told (a pipe) runs only pinned.
#[test]
#[cfg_attr(sealc_no_bwrap, ignore = "needs bubblewrap that can make namespaces")]
fn a_seal_inside_its_own_write_root_never_runs() {
    if !bwrap_works() {
        return;
    }
    let tmp = tempfile::tempdir_in(env!("CARGO_TARGET_TMPDIR")).unwrap();
    let t = tmp.path().canonicalize().unwrap();
    std::fs::set_permissions(&t, std::os::unix::fs::PermissionsExt::from_mode(0o755)).unwrap();
    std::fs::create_dir_all(t.join("ws")).unwrap();
    std::fs::write(
        t.join("spec.toml"),
        format!(
            "version = 1\nname = \"self\"\n[target]\nplatform = \"linux\"\n[filesystem]\nwrite = [\"{ws}\"]\n[network]\nmode = \"none\"\n[env]\npass = [\"PATH\"]\n",
            ws = t.join("ws").display()
        ),
    )
    .unwrap();
    let sealc = |args: &[&str]| {
        Command::new(env!("CARGO_BIN_EXE_sealc"))
            .current_dir(&t)
            .env_clear()
            .env("PATH", "/usr/bin:/bin")
            .args(args)
            .output()
            .unwrap()
    };
    let out = sealc(&["compile", "spec.toml", "--out", "ws/seal"]);
    assert!(out.status.success(), "{}", text(&out));
    let said = String::from_utf8_lossy(&out.stderr);
    assert!(said.contains("sealc::out::in-write-root"), "{said}");
    let binding = String::from_utf8_lossy(&out.stdout)
        .lines()
        .last()
        .and_then(|l| l.split("binding ").nth(1))
        .unwrap()
        .to_string();
    // Refused unpinned and pinned: the agent never gets to write its seal.
    for pin in [vec![], vec!["--expect", binding.as_str()]] {
        let mut args = vec!["exec", "ws/seal/seal.json"];
        args.extend(pin);
        args.extend(["--", "/bin/echo", "STARTED"]);
        let out = sealc(&args);
        assert_eq!(out.status.code(), Some(125), "{}", text(&out));
        assert!(!String::from_utf8_lossy(&out.stdout).contains("STARTED"));
        assert!(
            String::from_utf8_lossy(&out.stderr).contains("is inside the write root"),
            "{}",
            text(&out)
        );
    }
    // The same record outside the write root runs; read from a pipe, where
    // its place cannot be told, only pinned.
    let out = sealc(&["compile", "spec.toml", "--out", "seal", "-q"]);
    assert!(out.status.success(), "{}", text(&out));
    let out = sealc(&["exec", "seal/seal.json", "--", "/bin/echo", "STARTED"]);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out));
    let piped = |pin: &str| {
        Command::new("/bin/sh")
            .current_dir(&t)
            .env_clear()
            .env("PATH", "/usr/bin:/bin")
            .arg("-c")
            .arg(format!(
                "cat seal/seal.json | {} exec /dev/stdin --artifacts seal {pin} -- /bin/echo STARTED",
                env!("CARGO_BIN_EXE_sealc")
            ))
            .output()
            .unwrap()
    };
    let out = piped("");
    assert_eq!(out.status.code(), Some(125), "{}", text(&out));
    assert!(!String::from_utf8_lossy(&out.stdout).contains("STARTED"));
    let out = piped(&format!("--expect {binding}"));
    assert_eq!(out.status.code(), Some(0), "{}", text(&out));
    assert!(String::from_utf8_lossy(&out.stdout).contains("STARTED"));
}

/// Run-time messages name what decided: a command the seal hides is not
/// just "No such file" (the root that hides it is named), and a working
/// directory inside a hidden root is said, not silently left.
#[test]
#[cfg_attr(sealc_no_bwrap, ignore = "needs bubblewrap that can make namespaces")]
fn a_hidden_command_and_a_hidden_working_directory_are_named() {
    if !bwrap_works() {
        return;
    }
    let lab = Lab::new();
    let tool = lab.t.join("checkout/skills/tool");
    std::fs::copy("/bin/true", &tool).unwrap();
    let out = lab
        .exec_cmd(&[tool.to_str().unwrap()])
        .stdin(Stdio::null())
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&out.stderr).replace('\n', " ");
    assert_eq!(out.status.code(), Some(127), "{err}");
    assert!(
        err.contains(&format!(
            "{} is on this host, but the seal hides it: filesystem.deny_read \"${{checkout}}\"",
            quoted(&tool),
        )),
        "{err}"
    );
    let out = lab
        .exec_cmd(&["/bin/pwd"])
        .current_dir(lab.t.join("checkout/skills"))
        .stdin(Stdio::null())
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&out.stderr).replace('\n', " ");
    assert_eq!(out.status.code(), Some(0), "{err}");
    assert!(
        err.contains(&format!(
            "the working directory {} is hidden by the seal (filesystem.deny_read \"${{checkout}}\")",
            quoted(&lab.t.join("checkout/skills")),
        )),
        "{err}"
    );
    // From a directory the seal shows, nothing is said.
    let out = lab
        .exec_cmd(&["/bin/pwd"])
        .stdin(Stdio::null())
        .output()
        .unwrap();
    assert!(!String::from_utf8_lossy(&out.stderr).contains("working directory"));
}

fn quoted(p: &Path) -> String {
    format!("`{}`", p.display())
}

/// In the Landlock mode the working directory is not replaced: the warning
/// says the command starts there but reads nothing in it, and it does.
#[test]
#[cfg_attr(sealc_no_bwrap, ignore = "needs bubblewrap that can make namespaces")]
fn a_hidden_working_directory_in_the_landlock_mode_is_named_and_unreadable() {
    if !bwrap_works() {
        return;
    }
    let lab = Lab::with_spec(
        r#"version = 1
name = "landlock-cwd"
[target]
platform = "linux"
[vars]
run = { required = true }
checkout = { required = true }
proxy_port = { required = true }
[filesystem]
deny_read = ["${checkout}"]
write = ["${run}/ws"]
[network]
mode = "none"
[env]
pass = ["PATH"]
set = { PORT = "${proxy_port}" }
[exec]
isolation = "landlock"
"#,
    );
    let out = lab
        .exec_cmd(&["/bin/sh", "-c", "pwd; cat SKILL.md"])
        .current_dir(lab.t.join("checkout/skills/premortem"))
        .stdin(Stdio::null())
        .output()
        .unwrap();
    let all = text(&out);
    let flat = all.replace('\n', " ");
    assert!(
        flat.contains("is hidden by the seal (filesystem.deny_read \"${checkout}\"): the command starts there but can read no file in it"),
        "{all}"
    );
    assert!(
        String::from_utf8_lossy(&out.stdout).contains("checkout/skills/premortem"),
        "{all}"
    );
    assert!(!all.contains(SECRET.trim()), "{all}");
    assert!(all.contains("Permission denied"), "{all}");
}
