//! Issue 22, findings 1 and 2: what sealc itself writes on the host holds
//! against the agent and against a local user racing it.
//!
//! - The run report is evidence: a `--report` inside a write root (by its
//!   path, through a link, or through a bind mount of the root) is refused
//!   before anything starts, so the agent can plant nothing at its name.
//! - A second unprivileged user (`sealc-rival`, made by `.ci/run`) watches
//!   `/proc` for a root `sealc exec --report` into a folder everyone may
//!   write and plants links at every name it can predict: root's sealc
//!   writes through none of them.
//! - Compile's staging, the proxy bridge's directory and its sweep do not
//!   trust a predictable name either.
//!
//! Run for real under bubblewrap, as root and as the unprivileged caller
//! `sealc-test`. Without bubblewrap, root, setpriv or the users these tests
//! are ignored, unless `SEALC_REQUIRE_BWRAP=1` (set by `.ci/run`), under
//! which they fail.

mod common;

use std::os::unix::fs::{MetadataExt, PermissionsExt};
use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};
use std::time::{Duration, Instant};

use common::{as_user, ids, text, Caller, Verdict, CALLERS, RIVAL, USER};

const SEALC: &str = env!("CARGO_BIN_EXE_sealc");
/// What the victim file holds; a write through a planted link changes it.
const VICTIM: &str = "ROOT-ONLY-7f3e\n";

fn chmod(p: &Path, mode: u32) {
    std::fs::set_permissions(p, std::fs::Permissions::from_mode(mode)).unwrap();
}

fn chown(p: &Path, user: &str) {
    let (u, g) = ids(user);
    std::os::unix::fs::lchown(p, Some(u), Some(g)).unwrap();
}

/// Run, killing it after a minute.
fn output(c: Command) -> Output {
    output_pid(c).0
}

/// [`output`], and the process's pid (setpriv `exec`s: the pid is sealc's).
fn output_pid(mut c: Command) -> (Output, u32) {
    c.stdout(Stdio::piped()).stderr(Stdio::piped());
    let child = c.spawn().unwrap();
    let pid = child.id();
    let done = std::sync::Arc::new(std::sync::atomic::AtomicBool::new(false));
    let d = done.clone();
    std::thread::spawn(move || {
        let end = Instant::now() + Duration::from_secs(60);
        while Instant::now() < end {
            if d.load(std::sync::atomic::Ordering::Relaxed) {
                return;
            }
            std::thread::sleep(Duration::from_millis(50));
        }
        let _ = Command::new("kill").args(["-9", &pid.to_string()]).status();
    });
    let o = child.wait_with_output().unwrap();
    done.store(true, std::sync::atomic::Ordering::Relaxed);
    (o, pid)
}

/// A private tree under `target/tmp`, reachable by every test user: a
/// write root `ws` (the caller's), a root-only `victim` file, and the
/// compiled seal `seal/` (a proxy seal, so a bridge is made).
struct Lab {
    _tmp: tempfile::TempDir,
    t: PathBuf,
    who: Caller,
}

impl Lab {
    fn new(who: Caller) -> Lab {
        let tmp = tempfile::tempdir_in(env!("CARGO_TARGET_TMPDIR")).unwrap();
        let t = tmp.path().canonicalize().unwrap();
        chmod(&t, 0o755);
        std::fs::create_dir(t.join("ws")).unwrap();
        if who == Caller::User {
            chown(&t.join("ws"), USER);
        }
        std::fs::write(t.join("victim"), VICTIM).unwrap();
        chmod(&t.join("victim"), 0o600);
        let port = common::serve("PROXY-OK\n");
        let spec = format!(
            "version = 1\nname = \"host-writes\"\n[target]\nplatform = \"linux\"\n[filesystem]\nwrite = [\"{ws}\"]\n[network]\nmode = \"proxy\"\nproxy = \"127.0.0.1:{port}\"\n[env]\npass = [\"PATH\"]\n",
            ws = t.join("ws").display()
        );
        std::fs::write(t.join("spec.toml"), spec).unwrap();
        let o = output({
            let mut c = Command::new(SEALC);
            c.current_dir(&t)
                .env_clear()
                .env("PATH", "/usr/bin:/bin")
                .args(["compile", "spec.toml", "--out", "seal"]);
            c
        });
        assert_eq!(o.status.code(), Some(0), "compile: {}", text(&o));
        Lab { _tmp: tmp, t, who }
    }

    fn path(&self, p: &str) -> PathBuf {
        self.t.join(p)
    }

    /// `sealc exec seal/seal.json [flags] -- sh -c script`, as the caller.
    fn exec(&self, flags: &[&str], script: &str) -> Command {
        let record = self.path("seal/seal.json").display().to_string();
        let mut argv = vec![SEALC, "exec", &record];
        argv.extend(flags);
        argv.extend(["--", "/bin/sh", "-c", script]);
        let mut c = as_user(self.who.user(), &argv);
        c.current_dir(&self.t);
        c
    }

    fn victim_untouched(&self) -> bool {
        let m = std::fs::symlink_metadata(self.path("victim")).unwrap();
        std::fs::read_to_string(self.path("victim")).unwrap() == VICTIM
            && m.uid() == 0
            && m.mode() & 0o777 == 0o600
    }
}

/// Finding 1: a report in the agent's reach is refused before the run (by
/// the path given, through a link to the write root, through a bind mount
/// of it), nothing runs and nothing is written there. On main the agent
/// planted links at the report's predictable temp name
/// (`.run.json.sealc-tmp-PID`, the PID read from `/proc/self/mountinfo`)
/// and sealc wrote through them after the run.
#[test]
#[cfg_attr(
    any(sealc_no_bwrap, sealc_cannot_become = "sealc-test"),
    ignore = "needs root, bubblewrap, setpriv and the user sealc-test"
)]
fn a_report_in_the_agents_reach_is_refused_before_anything_runs() {
    if !common::ready_as_root_with(&[USER]) {
        return;
    }
    let mut v = Verdict::default();
    for who in CALLERS {
        let lab = Lab::new(who);
        std::fs::create_dir(lab.path("outside")).unwrap();
        if who == Caller::User {
            chown(&lab.path("outside"), USER);
        }
        std::os::unix::fs::symlink(lab.path("ws"), lab.path("outside/to-ws")).unwrap();
        std::fs::create_dir(lab.path("alias")).unwrap();
        let mounted = Command::new("mount")
            .arg("--bind")
            .arg(lab.path("ws"))
            .arg(lab.path("alias"))
            .status()
            .is_ok_and(|s| s.success());
        // These tests run as root: a bind mount is always there to make.
        assert!(mounted, "cannot bind-mount the write root elsewhere");
        let reports = ["ws/run.json", "outside/to-ws/run.json", "alias/run.json"];
        // The agent's script: the attack of finding 1 (plant links at every
        // temp name it can predict), then a marker that it ran.
        let script = format!(
            "pid=$(sed -n 's/.*sealc-bridge-\\([0-9]*\\)-.*/\\1/p' /proc/self/mountinfo | head -1); \
             for n in $pid $(seq 1 50); do ln -s {victim} {ws}/.run.json.sealc-tmp-$n 2>/dev/null; done; \
             touch {ws}/RAN",
            victim = lab.path("victim").display(),
            ws = lab.path("ws").display()
        );
        for report in reports {
            let at = lab.path(report).display().to_string();
            let o = output(lab.exec(&["--report", &at], &script));
            let said = String::from_utf8_lossy(&o.stderr);
            v.check(o.status.code() == Some(125), || {
                format!(
                    "[{who:?}] --report {report}: exit {:?}, not 125\n{}",
                    o.status.code(),
                    text(&o)
                )
            });
            v.check(said.contains("inside the write root"), || {
                format!("[{who:?}] --report {report}: no reason given\n{said}")
            });
            v.check(!lab.path("ws/RAN").exists(), || {
                format!("[{who:?}] --report {report}: the command ran")
            });
            v.check(!lab.path("ws/run.json").exists(), || {
                format!("[{who:?}] --report {report}: a report was written into the write root")
            });
            v.check(lab.victim_untouched(), || {
                format!("[{who:?}] --report {report}: the victim file changed")
            });
        }
        let _ = Command::new("umount").arg(lab.path("alias")).status();
        // Outside every write root the report is written, whole.
        let at = lab.path("outside/run.json").display().to_string();
        let o = output(lab.exec(&["--report", &at], "echo hi"));
        v.check(o.status.code() == Some(0), || {
            format!("[{who:?}] outside: {}", text(&o))
        });
        let rep: serde_json::Value = serde_json::from_slice(
            &std::fs::read(lab.path("outside/run.json")).unwrap_or_default(),
        )
        .unwrap_or_default();
        v.check(rep["schema"] == "sealc.run/v1", || {
            format!("[{who:?}] outside: report {rep}")
        });
    }
    v.done();
}

/// The racer, run as `sealc-rival`: it watches `/proc` for a `sealc exec`
/// whose command line names `--report DIR/run.json` and plants links to
/// the victim at every name it can predict in DIR (the old temp names,
/// `.run.json.sealc-tmp-PID` and `.run.json.sealc-PID-N.tmp`, and the
/// report's own name), then keeps re-planting them until it is killed.
const RACER: &str = r#"
import os, sys, time
d, victim = sys.argv[1], sys.argv[2]
want = "--report\0" + d + "/run.json"
planted = set()
end = time.time() + 50
def plant(name):
    p = os.path.join(d, name)
    try:
        os.symlink(victim, p)
    except FileExistsError:
        try:
            if not os.path.islink(p):
                os.replace(p, p + ".gone")
                os.symlink(victim, p)
        except OSError:
            pass
    except OSError:
        pass
while time.time() < end:
    for pid in os.listdir("/proc"):
        if not pid.isdigit() or pid in planted:
            continue
        try:
            cmd = open("/proc/%s/cmdline" % pid, "rb").read().decode("utf-8", "replace")
        except OSError:
            continue
        if "exec\0" in cmd and want in cmd:
            planted.add(pid)
            for name in [".run.json.sealc-tmp-" + pid] + [".run.json.sealc-%s-%d.tmp" % (pid, n) for n in range(3)]:
                plant(name)
            print("planted", pid, flush=True)
    for pid in planted:
        plant(".run.json.sealc-tmp-" + pid)
    plant("run.json")
    time.sleep(0.002)
"#;

/// Finding 2: a local unprivileged user races a root `sealc exec --report`
/// into a folder every user may write (without and with the sticky bit, the
/// shape of a shared reports folder and of `/tmp`). Root's sealc writes
/// through none of the links it plants: the victim is unchanged, the report
/// is a regular file of root's, and the folder open to all is warned of.
#[test]
#[cfg_attr(
    any(sealc_no_bwrap, sealc_cannot_become = "sealc-rival"),
    ignore = "needs root, bubblewrap, setpriv and the user sealc-rival"
)]
fn a_local_user_racing_roots_run_redirects_no_write() {
    if !common::ready_as_root_with(&[RIVAL]) {
        return;
    }
    let mut v = Verdict::default();
    let lab = Lab::new(Caller::Root);
    let racer = lab.path("racer.py");
    std::fs::write(&racer, RACER).unwrap();
    chmod(&racer, 0o644);
    for (dir, mode) in [("reports", 0o777), ("sticky", 0o1777)] {
        let d = lab.path(dir);
        std::fs::create_dir(&d).unwrap();
        chmod(&d, mode);
        let mut rival = as_user(
            Some(RIVAL),
            &[
                "/usr/bin/python3",
                &racer.display().to_string(),
                &d.display().to_string(),
                &lab.path("victim").display().to_string(),
            ],
        );
        rival.stdout(Stdio::piped()).stderr(Stdio::null());
        let mut rival = rival.spawn().unwrap();
        // Give the racer a moment to start watching.
        std::thread::sleep(Duration::from_millis(300));
        let report = d.join("run.json").display().to_string();
        let o = output(lab.exec(&["--report", &report], "sleep 1; echo done"));
        let _ = rival.kill();
        let said = {
            let mut s = String::new();
            if let Some(mut out) = rival.stdout.take() {
                let _ = std::io::Read::read_to_string(&mut out, &mut s);
            }
            let _ = rival.wait();
            s
        };
        v.check(said.contains("planted"), || {
            format!("[{dir}] the racer never saw the run (its output: {said:?}); the test proves nothing")
        });
        v.check(lab.victim_untouched(), || {
            format!(
                "[{dir}] root's sealc wrote through a planted link: the victim now holds {:?}\n{}",
                std::fs::read_to_string(lab.path("victim")).unwrap_or_default(),
                text(&o)
            )
        });
        // The racer keeps re-planting `run.json` as a link: what sealc
        // wrote is whatever is a regular file at the end of its rename, or
        // the link the racer put back after it. Either way no write went
        // through a link; the report, where it is a file, is root's JSON.
        if let Ok(m) = std::fs::symlink_metadata(d.join("run.json")) {
            if m.is_file() {
                v.check(m.uid() == 0, || format!("[{dir}] the report is not root's"));
                let rep: serde_json::Value =
                    serde_json::from_slice(&std::fs::read(d.join("run.json")).unwrap())
                        .unwrap_or_default();
                v.check(rep["schema"] == "sealc.run/v1", || {
                    format!("[{dir}] report: {rep}")
                });
            }
        }
        v.check(o.status.code() == Some(0), || {
            format!("[{dir}] the run: {}", text(&o))
        });
        let warned = String::from_utf8_lossy(&o.stderr).contains("can be written by any user");
        v.check(warned == (mode == 0o777), || {
            format!("[{dir}] the warning of a folder open to all: {}", text(&o))
        });
    }
    v.done();
}

/// Compile's staging used `.NAME.sealc-tmp-PID`, opened with a call that
/// follows links: a user who knew the PID (here: the shell that `exec`s
/// sealc, so the PID is known before sealc starts) planted a link there and
/// root's compile wrote the record into the victim. Now every temp name is
/// random and made with `O_EXCL|O_NOFOLLOW`.
#[test]
#[cfg_attr(
    any(sealc_no_bwrap, sealc_cannot_become = "sealc-rival"),
    ignore = "needs root, bubblewrap, setpriv and the user sealc-rival"
)]
fn compile_writes_through_no_planted_link() {
    if !common::ready_as_root_with(&[RIVAL]) {
        return;
    }
    let lab = Lab::new(Caller::Root);
    let out = lab.path("shared-out");
    std::fs::create_dir(&out).unwrap();
    chmod(&out, 0o777);
    std::fs::create_dir(out.join("codex")).unwrap();
    chmod(&out.join("codex"), 0o777);
    let mut c = Command::new("/bin/sh");
    c.current_dir(&lab.t)
        .env_clear()
        .env("PATH", "/usr/bin:/bin")
        .args([
            "-c",
            &format!("read go; exec {SEALC} compile spec.toml --force --out shared-out"),
        ])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    let mut child = c.spawn().unwrap();
    let pid = child.id();
    for name in [
        "seal.json",
        "seal.bwrap.json",
        "env.json",
        "codex/config.toml",
    ] {
        let (dir, file) = match name.split_once('/') {
            Some((d, f)) => (out.join(d), f.to_string()),
            None => (out.clone(), name.to_string()),
        };
        for tmp in [
            format!(".{file}.sealc-tmp-{pid}"),
            format!(".{file}.sealc-{pid}-0.tmp"),
        ] {
            let o = as_user(
                Some(RIVAL),
                &[
                    "/bin/ln",
                    "-s",
                    &lab.path("victim").display().to_string(),
                    &dir.join(tmp).display().to_string(),
                ],
            )
            .output()
            .unwrap();
            assert!(o.status.success(), "{}", text(&o));
        }
    }
    use std::io::Write;
    child.stdin.take().unwrap().write_all(b"go\n").unwrap();
    let o = child.wait_with_output().unwrap();
    assert_eq!(o.status.code(), Some(0), "{}", text(&o));
    assert!(
        lab.victim_untouched(),
        "compile wrote through a planted link"
    );
    let rec = std::fs::read(out.join("seal.json")).unwrap();
    assert!(rec.starts_with(b"{"), "the record is there");
    assert!(
        String::from_utf8_lossy(&o.stderr).contains("can be written by any user"),
        "{}",
        text(&o)
    );
}

/// Started by root, sealc swept `/tmp/sealc-bridge-PID-N` directories of a
/// dead PID and removed what they held, whoever made them: a local user's
/// `proxy.sock` went. Root's bridges now live in `/run/sealc/bridge`, and an
/// unprivileged caller's sweep takes only its own.
#[test]
#[cfg_attr(
    any(
        sealc_no_bwrap,
        sealc_cannot_become = "sealc-test",
        sealc_cannot_become = "sealc-rival"
    ),
    ignore = "needs root, bubblewrap, setpriv and the users sealc-test and sealc-rival"
)]
fn the_bridge_sweep_leaves_other_users_directories_alone() {
    if !common::ready_as_root_with(&[USER, RIVAL]) {
        return;
    }
    let mut v = Verdict::default();
    for who in CALLERS {
        let lab = Lab::new(who);
        let planted = PathBuf::from(format!("/tmp/sealc-bridge-999999-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&planted);
        for argv in [
            vec!["/bin/mkdir", planted.to_str().unwrap()],
            vec![
                "/usr/bin/touch",
                &format!("{}/proxy.sock", planted.display()),
            ],
        ] {
            let o = as_user(Some(RIVAL), &argv).output().unwrap();
            assert!(o.status.success(), "{}", text(&o));
        }
        let (o, pid) = output_pid(lab.exec(&[], "echo hi"));
        v.check(o.status.code() == Some(0), || {
            format!("[{who:?}] {}", text(&o))
        });
        v.check(planted.join("proxy.sock").exists(), || {
            format!("[{who:?}] the other user's planted file was removed")
        });
        let _ = std::fs::remove_dir_all(&planted);
        // Nothing of this run's bridge is left behind.
        let mine = format!("sealc-bridge-{pid}-");
        let left: Vec<_> = ["/tmp", "/run/sealc/bridge"]
            .iter()
            .flat_map(|d| std::fs::read_dir(d).into_iter().flatten().flatten())
            .filter(|e| e.file_name().to_string_lossy().starts_with(&mine))
            .map(|e| e.path())
            .collect();
        v.check(left.is_empty(), || {
            format!("[{who:?}] bridges left: {left:?}")
        });
    }
    v.done();
}

/// A review's findings, each as it was reproduced: a link another user put
/// in a sticky folder is not followed (for `--report`, `--out` and the
/// directory of a seal read back); a folder of another user's is warned
/// of; an unprivileged caller whose report name another user holds in a
/// sticky folder is told before the run; a fifo or a link where an artifact
/// goes neither hangs `verify` nor shows what it leads to.
#[test]
#[cfg_attr(
    any(
        sealc_no_bwrap,
        sealc_cannot_become = "sealc-test",
        sealc_cannot_become = "sealc-rival"
    ),
    ignore = "needs root, bubblewrap, setpriv and the users sealc-test and sealc-rival"
)]
fn what_another_user_plants_in_a_shared_folder_is_neither_followed_nor_trusted() {
    if !common::ready_as_root_with(&[USER, RIVAL]) {
        return;
    }
    let mut v = Verdict::default();
    let lab = Lab::new(Caller::Root);
    let shared = lab.path("shared");
    std::fs::create_dir(&shared).unwrap();
    chmod(&shared, 0o1777);
    let precious = lab.path("precious");
    std::fs::create_dir(&precious).unwrap();
    chmod(&precious, 0o700);
    std::fs::write(precious.join("run.json"), "{\"precious\":1}").unwrap();
    std::fs::write(precious.join("seal.sb"), "keep").unwrap();
    let rival = |argv: &[&str]| {
        let o = as_user(Some(RIVAL), argv).output().unwrap();
        assert!(o.status.success(), "{}", text(&o));
    };
    let link = shared.join("reports");
    rival(&[
        "/bin/ln",
        "-s",
        precious.to_str().unwrap(),
        link.to_str().unwrap(),
    ]);
    // --report through it: refused before the run, nothing there changes.
    let report = link.join("run.json").display().to_string();
    let o = output(lab.exec(&["--report", &report], "touch $HOME/RAN"));
    v.check(o.status.code() == Some(125), || {
        format!("--report through a planted link: {}", text(&o))
    });
    v.check(text(&o).contains("sealc does not follow it"), || {
        format!("not said: {}", text(&o))
    });
    v.check(!lab.path("ws/RAN").exists(), || "the command ran".into());
    // --out through it: refused, nothing written or removed there.
    let out = shared.join("reports");
    let o = output({
        let mut c = Command::new(SEALC);
        c.current_dir(&lab.t)
            .env_clear()
            .args(["compile", "spec.toml", "--force", "--out"])
            .arg(&out);
        c
    });
    v.check(o.status.code() == Some(2), || {
        format!("--out through a planted link: {}", text(&o))
    });
    v.check(
        std::fs::read_to_string(precious.join("run.json")).unwrap() == "{\"precious\":1}"
            && std::fs::read_to_string(precious.join("seal.sb")).unwrap() == "keep"
            && !precious.join("seal.json").exists(),
        || {
            format!(
                "the folder behind the link changed: {:?}",
                std::fs::read_dir(&precious).unwrap().collect::<Vec<_>>()
            )
        },
    );
    // A folder of another user's: said.
    let theirs = lab.path("theirs");
    std::fs::create_dir(&theirs).unwrap();
    chown(&theirs, RIVAL);
    let o = output({
        let mut c = Command::new(SEALC);
        c.current_dir(&lab.t)
            .env_clear()
            .args(["compile", "spec.toml", "--out"])
            .arg(&theirs);
        c
    });
    v.check(
        o.status.code() == Some(0) && text(&o).contains("belongs to another user"),
        || format!("a folder of another user's is not said: {}", text(&o)),
    );
    // A fifo and a link where artifacts go: `verify` ends, and shows
    // nothing of what the link leads to.
    let seal = lab.path("seal");
    chmod(&seal, 0o1777);
    rival(&["/usr/bin/mkfifo", seal.join("seal.sb").to_str().unwrap()]);
    std::fs::remove_file(seal.join("env.json")).unwrap();
    rival(&[
        "/bin/ln",
        "-s",
        lab.path("victim").to_str().unwrap(),
        seal.join("env.json").to_str().unwrap(),
    ]);
    let o = output({
        let mut c = Command::new(SEALC);
        c.current_dir(&lab.t)
            .env_clear()
            .args(["verify", "seal/seal.json"]);
        c
    });
    v.check(o.status.code() == Some(1), || {
        format!("verify over a fifo and a link: {}", text(&o))
    });
    v.check(!text(&o).contains(VICTIM.trim()), || {
        format!("verify showed what the link leads to: {}", text(&o))
    });
    // Unprivileged: another user's file at the report's name in a sticky
    // folder is said before the run, which does not start.
    let user_lab = Lab::new(Caller::User);
    let sticky = user_lab.path("sticky");
    std::fs::create_dir(&sticky).unwrap();
    chmod(&sticky, 0o1777);
    rival(&[
        "/bin/sh",
        "-c",
        &format!("echo rival > {}/run.json", sticky.display()),
    ]);
    let report = sticky.join("run.json").display().to_string();
    let o = output(user_lab.exec(&["--report", &report], "touch $HOME/RAN"));
    v.check(o.status.code() == Some(125), || {
        format!("another user's report name: {}", text(&o))
    });
    v.check(!user_lab.path("ws/RAN").exists(), || {
        "the command ran before the report was refused".into()
    });
    v.done();
}

/// A review's finding: a write root absent when compiled (the shipped
/// specs have them: scratch directories), made by another user in a shared
/// folder before the first run, was used as if sealc had made it: started
/// by root, the agent then wrote as that user, who read the credentials
/// copied into the Codex home. Now that directory is refused and nothing
/// starts; a Codex home in a write root of another owner never gets root's
/// credentials.
#[test]
#[cfg_attr(
    any(sealc_no_bwrap, sealc_cannot_become = "sealc-rival"),
    ignore = "needs root, bubblewrap, setpriv and the user sealc-rival"
)]
fn a_write_root_another_user_made_first_is_refused() {
    if !common::ready_as_root_with(&[RIVAL]) {
        return;
    }
    let mut v = Verdict::default();
    let lab = Lab::new(Caller::Root);
    let shared = lab.path("shared");
    std::fs::create_dir(&shared).unwrap();
    chmod(&shared, 0o1777);
    std::fs::create_dir(lab.path("op")).unwrap();
    chmod(&lab.path("op"), 0o700);
    std::fs::write(lab.path("op/auth.json"), "{\"token\":\"ROOT-TOKEN\"}").unwrap();
    chmod(&lab.path("op/auth.json"), 0o600);
    let spec = format!(
        "version = 1\nname = \"squat\"\n[target]\nplatform = \"linux\"\n[filesystem]\nwrite = [\"{s}/ws\"]\n[network]\nmode = \"none\"\n[env]\nset = {{ CODEX_HOME = \"{s}/ws/home\" }}\n[codex]\nworkspace = \"{s}/ws\"\ncredentials = \"{op}\"\n",
        s = shared.display(),
        op = lab.path("op/auth.json").display()
    );
    std::fs::write(lab.path("squat.toml"), spec).unwrap();
    let o = output({
        let mut c = Command::new(SEALC);
        c.current_dir(&lab.t)
            .env_clear()
            .args(["compile", "squat.toml", "--out", "squat"]);
        c
    });
    assert_eq!(o.status.code(), Some(0), "{}", text(&o));
    // The rival makes the write root first, and reads what appears there.
    let ws = shared.join("ws");
    let o = as_user(
        Some(RIVAL),
        &["/bin/mkdir", "-m", "777", ws.to_str().unwrap()],
    )
    .output()
    .unwrap();
    assert!(o.status.success(), "{}", text(&o));
    let record = lab.path("squat/seal.json").display().to_string();
    let o = output({
        let mut c = as_user(
            None,
            &[
                SEALC,
                "exec",
                &record,
                "--",
                "/bin/sh",
                "-c",
                "touch $CODEX_HOME/../RAN",
            ],
        );
        c.current_dir(&lab.t);
        c
    });
    v.check(o.status.code() != Some(0), || {
        format!("a squatted write root ran: {}", text(&o))
    });
    v.check(text(&o).contains("made by another user"), || {
        format!("not said: {}", text(&o))
    });
    v.check(
        !ws.join("RAN").exists() && !ws.join("home").exists(),
        || "the command ran, or the Codex home was made, in the other user's directory".into(),
    );
    // Root's credentials into a home in a write root of another owner
    // (an existing root, as compiled): refused, since the owner could read
    // them.
    let theirs = lab.path("theirs");
    std::fs::create_dir(&theirs).unwrap();
    chown(&theirs, RIVAL);
    let spec = std::fs::read_to_string(lab.path("squat.toml"))
        .unwrap()
        .replace(
            &format!("{}/ws", shared.display()),
            &theirs.display().to_string(),
        );
    std::fs::write(lab.path("theirs.toml"), spec).unwrap();
    let o = output({
        let mut c = Command::new(SEALC);
        c.current_dir(&lab.t)
            .env_clear()
            .args(["compile", "theirs.toml", "--out", "theirs-seal"]);
        c
    });
    assert_eq!(o.status.code(), Some(0), "{}", text(&o));
    let record = lab.path("theirs-seal/seal.json").display().to_string();
    let o = output({
        let mut c = as_user(None, &[SEALC, "exec", &record, "--", "/bin/true"]);
        c.current_dir(&lab.t);
        c
    });
    v.check(
        o.status.code() == Some(125) && text(&o).contains("who could read the credentials"),
        || {
            format!(
                "root's credentials in another owner's write root: {}",
                text(&o)
            )
        },
    );
    v.check(!theirs.join("home").exists(), || {
        "the home was made there".into()
    });
    v.done();
}

/// A run refused before its sandbox started takes away the write roots it
/// made for the run, but through the descriptors it made them by: a local
/// user who owns a directory above a made root, and swaps it for a link
/// (to a root-owned folder holding an empty directory of the same name)
/// while root's sealc runs, gets nothing of theirs removed. Before, the
/// removal walked the path again and took the victim's directory.
#[test]
#[cfg_attr(
    any(sealc_no_bwrap, sealc_cannot_become = "sealc-rival"),
    ignore = "needs root, bubblewrap, setpriv and the user sealc-rival"
)]
fn a_link_swapped_above_a_made_root_does_not_steer_its_removal() {
    if !common::ready_as_root_with(&[RIVAL]) {
        return;
    }
    let tmp = tempfile::tempdir_in(env!("CARGO_TARGET_TMPDIR")).unwrap();
    let t = tmp.path().canonicalize().unwrap();
    chmod(&t, 0o755);
    // The rival's checkout, with a write root holding more entries than the
    // walk bound below: every run is refused after its roots are made.
    let alice = t.join("alice");
    std::fs::create_dir_all(alice.join("ws")).unwrap();
    for i in 0..60 {
        std::fs::write(alice.join(format!("ws/f{i}")), "").unwrap();
    }
    let victim = t.join("victim");
    let spec = format!(
        "version = 1\nname = \"made\"\n[target]\nplatform = \"linux\"\n[filesystem]\nwrite = [\"{a}/ws\", \"{a}/proj/out\"]\n[network]\nmode = \"none\"\n",
        a = alice.display()
    );
    std::fs::write(t.join("spec.toml"), spec).unwrap();
    std::fs::create_dir(alice.join("proj")).unwrap();
    let o = output({
        let mut c = Command::new(SEALC);
        c.current_dir(&t)
            .env_clear()
            .args(["compile", "spec.toml", "--out", "seal"]);
        c
    });
    assert_eq!(o.status.code(), Some(0), "{}", text(&o));
    let mut v = Verdict::default();
    let mut raced = 0;
    for _ in 0..20 {
        // A fresh round: the real folder back, the victim's empty `out`.
        let _ = std::fs::remove_file(alice.join("proj"));
        let _ = std::fs::remove_dir_all(alice.join("proj"));
        let _ = std::fs::remove_dir_all(alice.join("proj.old"));
        std::fs::create_dir(alice.join("proj")).unwrap();
        let _ = std::fs::remove_dir_all(&victim);
        std::fs::create_dir_all(victim.join("out")).unwrap();
        for p in [&alice, &alice.join("proj"), &alice.join("ws")] {
            chown(p, RIVAL);
        }
        let script = format!(
            "cd {a} && while [ ! -d proj/out ]; do :; done; mv proj proj.old && ln -s {v} proj && echo SWAPPED",
            a = alice.display(),
            v = victim.display()
        );
        let mut racer = as_user(Some(RIVAL), &["/bin/sh", "-c", &script])
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .spawn()
            .unwrap();
        std::thread::sleep(Duration::from_millis(20));
        let o = output({
            let mut c = Command::new(SEALC);
            c.current_dir(&t).env_clear().args([
                "exec",
                "--walk-limit",
                "50",
                "seal/seal.json",
                "--",
                "/bin/true",
            ]);
            c
        });
        v.check(o.status.code() != Some(0), || {
            format!("a run over the walk bound started: {}", text(&o))
        });
        std::thread::sleep(Duration::from_millis(50));
        let _ = racer.kill();
        let swapped = racer.wait_with_output().unwrap();
        if String::from_utf8_lossy(&swapped.stdout).contains("SWAPPED") {
            raced += 1;
            v.check(!alice.join("proj.old/out").exists(), || {
                "the directory sealc made (moved away by the rival) was left".into()
            });
        }
        v.check(victim.join("out").is_dir(), || {
            format!(
                "root's sealc removed the victim's directory through the rival's link:\n{}",
                text(&o)
            )
        });
    }
    v.check(raced > 0, || {
        "the rival never swapped the folder in time: the race was not run".into()
    });
    v.done();
}
