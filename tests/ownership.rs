//! `sealc exec` started by root, for real: the agent's user writes the
//! write roots through idmapped mounts, so what it makes is their owner's
//! and nothing on disk changes hands, whatever the command did, however the
//! run ended (`kill -9` of sealc included) and however many runs share a
//! root; on a filesystem without idmapping the roots are chowned to that
//! user for the run and back after it. A `PATH` entry that user cannot
//! search is said before the run and makes a bare name not found (127),
//! not "permission denied" (126). Without bubblewrap (or not run by
//! root, when nothing is handed over) these tests are ignored, unless
//! `SEALC_REQUIRE_BWRAP=1` (set by `.ci/run`), under which they fail.

mod common;

use std::os::unix::fs::{MetadataExt, PermissionsExt};
use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};

use common::{bwrap_works, text};

/// The owner the test gives the write root (not root, not the agent).
const OWNER: (u32, u32) = (4242, 4343);
/// `nobody`, the default agent user.
const AGENT: (u32, u32) = (65534, 65534);

struct Lab {
    _tmp: tempfile::TempDir,
    t: PathBuf,
}

fn root_with_bwrap() -> bool {
    if !rustix::process::geteuid().is_root() {
        assert!(
            std::env::var_os("SEALC_REQUIRE_BWRAP").is_none_or(|v| v != "1"),
            "SEALC_REQUIRE_BWRAP=1 but the tests do not run as root"
        );
        common::not_run("only a root caller hands the write roots over");
    }
    bwrap_works()
}

fn owner(p: &Path) -> (u32, u32) {
    let m = std::fs::symlink_metadata(p).unwrap_or_else(|e| panic!("{}: {e}", p.display()));
    (m.uid(), m.gid())
}

fn chown(p: &Path, ids: (u32, u32)) {
    std::os::unix::fs::lchown(p, Some(ids.0), Some(ids.1)).unwrap();
}

impl Lab {
    /// A Linux seal writing `ws` (owned by `OWNER`), compiled with `path`
    /// as the `PATH` it passes and these `[limits]` lines.
    fn new(path: &str, limits: &str) -> Lab {
        Lab::new_with(path, limits, "")
    }

    /// As [`Lab::new`], with `extra` lines after `[env] pass` (`WS` in them
    /// stands for the write root).
    fn new_with(path: &str, limits: &str, extra: &str) -> Lab {
        // Outside /tmp, reachable by the agent's user.
        let tmp = tempfile::tempdir_in(env!("CARGO_TARGET_TMPDIR")).unwrap();
        let t = tmp.path().canonicalize().unwrap();
        std::fs::set_permissions(&t, PermissionsExt::from_mode(0o755)).unwrap();
        std::fs::create_dir(t.join("ws")).unwrap();
        std::fs::write(t.join("ws/old.txt"), "old\n").unwrap();
        chown(&t.join("ws"), OWNER);
        chown(&t.join("ws/old.txt"), OWNER);
        let spec = format!(
            "version = 1\nname = \"own\"\n[target]\nplatform = \"linux\"\n[filesystem]\nwrite = [\"{ws}\"]\n[network]\nmode = \"none\"\n[env]\npass = [\"PATH\"]\n{extra}\n[limits]\n{limits}\n",
            ws = t.join("ws").display(),
            extra = extra.replace("WS", &t.join("ws").display().to_string())
        );
        std::fs::write(t.join("spec.toml"), spec).unwrap();
        let out = Command::new(env!("CARGO_BIN_EXE_sealc"))
            .current_dir(&t)
            .env_clear()
            .env("PATH", path)
            .args(["compile", "spec.toml", "--out", "seal"])
            .output()
            .unwrap();
        assert!(out.status.success(), "{}", text(&out));
        Lab { _tmp: tmp, t }
    }

    fn run(&self, argv: &[&str]) -> Output {
        Command::new(env!("CARGO_BIN_EXE_sealc"))
            .current_dir(&self.t)
            .env_clear()
            .arg("exec")
            .arg(self.t.join("seal/seal.json"))
            .arg("--report")
            .arg(self.t.join("report.json"))
            .arg("--")
            .args(argv)
            .stdin(Stdio::null())
            .output()
            .unwrap()
    }

    fn sh(&self, script: &str) -> Output {
        self.run(&["/bin/sh", "-c", script])
    }

    /// Start `sealc exec [OPTS] SEAL -- /bin/sh -c SCRIPT` without waiting,
    /// stdout and stderr piped.
    fn start(&self, opts: &[&str], script: &str) -> std::process::Child {
        Command::new(env!("CARGO_BIN_EXE_sealc"))
            .current_dir(&self.t)
            .env_clear()
            .arg("exec")
            .args(opts)
            .arg(self.p("seal/seal.json"))
            .args(["--", "/bin/sh", "-c", script])
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap()
    }

    fn p(&self, rel: &str) -> PathBuf {
        self.t.join(rel)
    }

    fn report(&self) -> serde_json::Value {
        serde_json::from_slice(&std::fs::read(self.p("report.json")).unwrap()).unwrap()
    }
}

/// A Codex seal whose `CODEX_HOME` lies in the owner's write root: what
/// sealc makes there before the run (the directories, the fresh home, the
/// verified config) is the owner's, so the agent, writing as the owner, can
/// use it. Inside, the owner's files are the agent's own (the idmap maps
/// only the owner's uid to it); after the run the home is gone (kept for
/// review beside the report), the directory above it stays the owner's.
#[test]
#[cfg_attr(any(sealc_not_root, sealc_no_bwrap), ignore = "needs root, bubblewrap")]
fn what_sealc_makes_in_a_write_root_is_its_owners() {
    if !root_with_bwrap() {
        return;
    }
    let lab = Lab::new_with(
        "/usr/bin:/bin",
        "",
        "set = { CODEX_HOME = \"WS/home/.codex\" }\n[codex]\nworkspace = \"WS\"",
    );
    let out = lab.sh(
        "set -e; cd \"$CODEX_HOME\"; test -r config.toml; echo s > session; mkdir sessions; \
         for p in .. . config.toml session sessions; do test -O \"$p\" || { echo \"not mine: $p\"; exit 1; }; done",
    );
    assert_eq!(out.status.code(), Some(0), "{}", text(&out));
    assert_eq!(owner(&lab.p("ws/home")), OWNER);
    assert!(
        !lab.p("ws/home/.codex").exists(),
        "the home is removed after the run"
    );
    let report = lab.report();
    assert_eq!(report["codex_config"], "unchanged");
    let left: Vec<&str> = report["codex_home"]["entries"]
        .as_array()
        .unwrap()
        .iter()
        .map(|e| e["path"].as_str().unwrap())
        .collect();
    assert_eq!(left, ["config.toml", "session", "sessions"]);
}

/// Another user's file in the write root.
const OTHER: (u32, u32) = (1234, 1234);

#[test]
#[cfg_attr(any(sealc_not_root, sealc_no_bwrap), ignore = "needs root, bubblewrap")]
fn what_the_agent_makes_is_the_owners_and_nothing_changes_hands() {
    if !root_with_bwrap() {
        return;
    }
    let lab = Lab::new("/usr/bin:/bin", "");
    // Outside the write root: a file of the agent's user, which a link left
    // inside must not make the owner's.
    std::fs::write(lab.p("outside.txt"), "outside\n").unwrap();
    chown(&lab.p("outside.txt"), AGENT);
    // Inside: a file of another user, readable by all.
    std::fs::write(lab.p("ws/other.txt"), "other\n").unwrap();
    chown(&lab.p("ws/other.txt"), OTHER);
    let shadow = owner(Path::new("/etc/shadow"));
    let ws = lab.p("ws");
    for round in 0..2 {
        let out = lab.sh(&format!(
            "set -e; cd {ws}; test \"$(id -u)\" = 65534; test \"$(stat -c %u .)\" = 65534; \
             echo more >> old.txt; mkdir -p deep/er; echo {round} > deep/er/new.txt; \
             ln -sfn /etc/shadow shadow; ln -sfn {out} outside; \
             echo a > pair1; ln -f pair1 pair2; mkfifo fifo{round}; \
             if ln -f {out} hard 2>/dev/null; then exit 40; fi; \
             cat other.txt >/dev/null; if echo x >> other.txt; then exit 41; fi",
            ws = ws.display(),
            out = lab.p("outside.txt").display()
        ));
        assert_eq!(out.status.code(), Some(0), "round {round}: {}", text(&out));
        assert!(!text(&out).contains("hand back"), "{}", text(&out));
        assert!(!text(&out).contains("idmapped"), "{}", text(&out));
        // Everything the agent made or changed, links and fifos too, is the
        // owner's on disk; another user's file stays theirs, unchanged.
        for p in [
            "ws",
            "ws/old.txt",
            "ws/deep",
            "ws/deep/er",
            "ws/deep/er/new.txt",
            "ws/shadow",
            "ws/outside",
            "ws/pair1",
            "ws/pair2",
            &format!("ws/fifo{round}"),
        ] {
            assert_eq!(owner(&lab.p(p)), OWNER, "round {round}: {p}");
        }
        assert_eq!(owner(&lab.p("ws/other.txt")), OTHER);
        assert_eq!(
            std::fs::read_to_string(lab.p("ws/other.txt")).unwrap(),
            "other\n"
        );
        assert_eq!(
            std::fs::read_to_string(lab.p("ws/deep/er/new.txt")).unwrap(),
            format!("{round}\n")
        );
        // What a link points at outside is untouched.
        assert_eq!(owner(Path::new("/etc/shadow")), shadow);
        assert_eq!(owner(&lab.p("outside.txt")), AGENT);
        let report = lab.report();
        assert_eq!(report["write_roots"], "idmapped");
        assert!(report.get("hand_back_errors").is_none());
    }
}

#[test]
#[cfg_attr(any(sealc_not_root, sealc_no_bwrap), ignore = "needs root, bubblewrap")]
fn ownership_comes_back_when_the_command_fails_or_is_stopped() {
    if !root_with_bwrap() {
        return;
    }
    let lab = Lab::new("/usr/bin:/bin", "wall_seconds = 1");
    let ws = lab.p("ws").display().to_string();
    let out = lab.sh(&format!("echo x > {ws}/failed.txt; exit 3"));
    assert_eq!(out.status.code(), Some(3), "{}", text(&out));
    assert_eq!(owner(&lab.p("ws/failed.txt")), OWNER);
    assert_eq!(owner(&lab.p("ws")), OWNER);
    // Stopped at the wall clock, with a child that ignores SIGTERM.
    let out = lab.sh(&format!(
        "echo x > {ws}/stopped.txt; (trap '' TERM; sleep 30) & trap '' TERM; sleep 30"
    ));
    assert_eq!(out.status.code(), Some(124), "{}", text(&out));
    assert_eq!(owner(&lab.p("ws/stopped.txt")), OWNER);
    assert_eq!(owner(&lab.p("ws")), OWNER);
    // Nothing started: no such command.
    let out = lab.run(&["/nonexistent"]);
    assert_eq!(out.status.code(), Some(127), "{}", text(&out));
    assert_eq!(owner(&lab.p("ws")), OWNER);
}

/// A `security.capability` value (revision 2, effective) granting
/// `CAP_NET_RAW`.
fn cap_net_raw() -> Vec<u8> {
    let mut v = Vec::new();
    for word in [0x0200_0001u32, 1 << 13, 0, 0, 0] {
        v.extend_from_slice(&word.to_le_bytes());
    }
    v
}

fn has_caps(p: &Path) -> bool {
    let mut buf = [0u8; 64];
    rustix::fs::getxattr(p, "security.capability", &mut buf[..]).is_ok()
}

/// No set-id bit or file capability outlives a run. The agent may rewrite
/// any file of the owner's, and a write through a shared mapping keeps
/// them, so the owner's set-id files and files with capabilities lose them
/// before the run, each said. The filter stops the agent from setting a
/// bit, and the mount is `nosuid`; should both fail, what the run made or
/// changed loses them after it: here a racing host process sets them on the
/// agent's files during the run.
#[test]
#[cfg_attr(any(sealc_not_root, sealc_no_bwrap), ignore = "needs root, bubblewrap")]
fn no_set_id_bit_or_file_capability_outlives_a_run() {
    if !root_with_bwrap() {
        return;
    }
    let lab = Lab::new("/usr/bin:/bin", "");
    let before = lab.p("ws/before");
    std::fs::write(&before, "#!/bin/sh\n").unwrap();
    chown(&before, OWNER);
    std::fs::set_permissions(&before, PermissionsExt::from_mode(0o4755)).unwrap();
    let capped = lab.p("ws/capped");
    std::fs::write(&capped, "#!/bin/sh\n").unwrap();
    chown(&capped, OWNER);
    std::fs::set_permissions(&capped, PermissionsExt::from_mode(0o755)).unwrap();
    rustix::fs::setxattr(
        &capped,
        "security.capability",
        &cap_net_raw(),
        rustix::fs::XattrFlags::empty(),
    )
    .unwrap();
    assert!(has_caps(&capped));
    let ws = lab.p("ws").display().to_string();
    let child = lab.start(
        &[],
        &format!(
            "echo x > {ws}/suid; echo x > {ws}/sgid; echo x > {ws}/cap; \
             chmod 755 {ws}/suid {ws}/sgid {ws}/cap; \
             touch {ws}/made; while [ ! -e {ws}/go ]; do sleep 0.05; done"
        ),
    );
    wait_for(&lab.p("ws/made"));
    for (name, mode) in [("suid", 0o4755), ("sgid", 0o2755)] {
        std::fs::set_permissions(
            lab.p(&format!("ws/{name}")),
            PermissionsExt::from_mode(mode),
        )
        .unwrap();
    }
    rustix::fs::setxattr(
        lab.p("ws/cap"),
        "security.capability",
        &cap_net_raw(),
        rustix::fs::XattrFlags::empty(),
    )
    .unwrap();
    std::fs::write(lab.p("ws/go"), "").unwrap();
    let out = child.wait_with_output().unwrap();
    assert_eq!(out.status.code(), Some(0), "{}", text(&out));
    let said = text(&out);
    for what in [
        format!(
            "the setuid or setgid bit of {:?}",
            before.display().to_string()
        ),
        format!(
            "the file capabilities of {:?}",
            capped.display().to_string()
        ),
    ] {
        assert!(
            said.contains(&format!("sealc: warning: cleared {what} before the run")),
            "{said}"
        );
    }
    for name in ["suid", "sgid", "cap", "before", "capped"] {
        let p = lab.p(&format!("ws/{name}"));
        let m = std::fs::metadata(&p).unwrap();
        assert_eq!((m.uid(), m.gid()), OWNER, "{name}");
        assert_eq!(m.mode() & 0o7777, 0o755, "{name}");
        assert!(!has_caps(&p), "{name}");
    }
}

/// A file in a write root with a hard link outside the write roots, or a
/// filesystem mounted inside one, would reach beyond the root through an
/// idmapped mount: the roots are chowned instead, with a warning, and the
/// linked file (the owner's, several links) stays out of the agent's reach.
#[test]
#[cfg_attr(any(sealc_not_root, sealc_no_bwrap), ignore = "needs root, bubblewrap")]
fn a_link_out_or_a_mount_inside_makes_the_roots_chowned() {
    if !root_with_bwrap() {
        return;
    }
    let lab = Lab::new("/usr/bin:/bin", "");
    std::fs::write(lab.p("outside.txt"), "outside\n").unwrap();
    chown(&lab.p("outside.txt"), OWNER);
    std::fs::hard_link(lab.p("outside.txt"), lab.p("ws/linked")).unwrap();
    let ws = lab.p("ws").display().to_string();
    let out = lab.sh(&format!(
        "cd {ws}; echo new > new.txt || exit 40; if echo pwned >> linked; then exit 41; fi"
    ));
    assert_eq!(out.status.code(), Some(0), "{}", text(&out));
    assert!(
        text(&out).contains(&format!(
            "sealc: warning: the write roots cannot be idmapped here ({:?} has a hard link outside the write roots",
            format!("{ws}/linked")
        )),
        "{}",
        text(&out)
    );
    assert_eq!(lab.report()["write_roots"], "chowned");
    assert_eq!(
        std::fs::read_to_string(lab.p("outside.txt")).unwrap(),
        "outside\n"
    );
    assert_eq!(owner(&lab.p("ws/new.txt")), OWNER);
    std::fs::remove_file(lab.p("ws/linked")).unwrap();

    std::fs::create_dir(lab.p("ws/m")).unwrap();
    let mounted = Command::new("mount")
        .args(["-t", "tmpfs", "-o", "mode=755", "sealc-test"])
        .arg(lab.p("ws/m"))
        .status()
        .unwrap();
    assert!(mounted.success());
    let _unmount = Unmount(lab.p("ws/m"));
    let out = lab.sh("true");
    assert_eq!(out.status.code(), Some(0), "{}", text(&out));
    assert!(
        text(&out).contains(&format!("(`{ws}/m` is mounted inside write root `{ws}`)")),
        "{}",
        text(&out)
    );
    assert_eq!(lab.report()["write_roots"], "chowned");
    assert_eq!(owner(&lab.p("ws")), OWNER);
}

/// Unmounts its path (lazily) when dropped, also when a test fails.
struct Unmount(PathBuf);

impl Drop for Unmount {
    fn drop(&mut self) {
        let _ = Command::new("umount").arg("-l").arg(&self.0).status();
    }
}

/// The pid and real uid of each host process whose argv is exactly `argv`.
fn procs_running(argv: &[&str]) -> Vec<(u32, u32)> {
    let want: Vec<u8> = argv
        .iter()
        .flat_map(|a| [a.as_bytes(), b"\0"].concat())
        .collect();
    let mut out = Vec::new();
    for e in std::fs::read_dir("/proc").unwrap().flatten() {
        let Ok(pid) = e.file_name().to_string_lossy().parse::<u32>() else {
            continue;
        };
        if std::fs::read(e.path().join("cmdline")).ok().as_deref() != Some(&want[..]) {
            continue;
        }
        let status = std::fs::read_to_string(e.path().join("status")).unwrap_or_default();
        if let Some(uid) = status
            .lines()
            .find_map(|l| l.strip_prefix("Uid:"))
            .and_then(|l| l.split_whitespace().next())
            .and_then(|u| u.parse().ok())
        {
            out.push((pid, uid));
        }
    }
    out
}

/// Can a host process running as `nobody` list `/proc/PID/root`?
fn nobody_reaches(pid: u32) -> bool {
    use std::os::unix::process::CommandExt;
    Command::new("ls")
        .arg(format!("/proc/{pid}/root/"))
        .uid(AGENT.0)
        .gid(AGENT.1)
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .status()
        .unwrap()
        .success()
}

/// With idmapped roots and no `--user`, the agent runs on the host as a uid
/// of the run's own (from sealc's range, one per run at a time), seen
/// inside as `nobody`: a host process running as `nobody` cannot reach
/// the sandbox through `/proc`. Named with `--user nobody`, it can (the
/// warning about a shared user in docs/guarantees.md).
#[test]
#[cfg_attr(any(sealc_not_root, sealc_no_bwrap), ignore = "needs root, bubblewrap")]
fn the_agent_runs_as_a_uid_no_host_process_shares() {
    if !root_with_bwrap() {
        return;
    }
    let lab = Lab::new("/usr/bin:/bin", "");
    let ws = lab.p("ws").display().to_string();
    for (user, marker) in [(None, "30.25"), (Some("nobody"), "30.5")] {
        let report = format!("report-{marker}.json");
        let mut opts = vec!["--report", &report];
        if let Some(u) = user {
            opts.extend(["--user", u]);
        }
        let mut child = lab.start(
            &opts,
            &format!(
                "test \"$(id -u)\" = 65534 || exit 40; touch {ws}/up{marker}; exec sleep {marker}"
            ),
        );
        wait_for(&lab.p(&format!("ws/up{marker}")));
        let mut found = Vec::new();
        for _ in 0..100 {
            found = procs_running(&["sleep", marker]);
            if !found.is_empty() {
                break;
            }
            std::thread::sleep(std::time::Duration::from_millis(50));
        }
        assert_eq!(found.len(), 1, "{found:?}");
        let (pid, uid) = found[0];
        let reached = nobody_reaches(pid);
        child.kill().unwrap();
        child.wait().unwrap();
        match user {
            None => {
                assert!((0x7FF0_0000..0x7FF0_0400).contains(&uid), "{uid}");
                assert!(!reached, "a host nobody reached the sandbox");
            }
            Some(_) => {
                assert_eq!(uid, AGENT.0);
                assert!(reached, "the shared user's reach is not shown");
            }
        }
    }
    // Two runs at once: two uids, each said in its report.
    let runs: Vec<_> = (0..2)
        .map(|i| {
            lab.start(
                &["--report", &format!("report{i}.json")],
                &format!(
                    "touch {ws}/at{i}; while [ ! -e {ws}/at0 ] || [ ! -e {ws}/at1 ]; do sleep 0.05; done"
                ),
            )
        })
        .collect::<Vec<_>>();
    for r in runs {
        let out = r.wait_with_output().unwrap();
        assert_eq!(out.status.code(), Some(0), "{}", text(&out));
    }
    let users: Vec<String> = (0..2)
        .map(|i| {
            let r: serde_json::Value =
                serde_json::from_slice(&std::fs::read(lab.p(&format!("report{i}.json"))).unwrap())
                    .unwrap();
            r["user"].as_str().unwrap().to_string()
        })
        .collect();
    assert_ne!(users[0], users[1]);
}

/// What a run's agent leaves must not choose the weaker chowned hand-over
/// for the next run: a tree deeper than the walks go stops the next run
/// before anything starts (exit 122), and nothing changes hands.
#[test]
#[cfg_attr(any(sealc_not_root, sealc_no_bwrap), ignore = "needs root, bubblewrap")]
fn a_tree_too_deep_to_walk_stops_the_next_run_and_chooses_nothing() {
    if !root_with_bwrap() {
        return;
    }
    let lab = Lab::new("/usr/bin:/bin", "");
    let ws = lab.p("ws").display().to_string();
    let out = lab.sh(&format!(
        "cd {ws} && i=0 && while [ $i -lt 520 ]; do mkdir d && cd d || exit 40; i=$((i+1)); done"
    ));
    assert_eq!(out.status.code(), Some(0), "{}", text(&out));
    let out = lab.sh("echo ran > /dev/null");
    let said = text(&out);
    assert_eq!(out.status.code(), Some(122), "{said}");
    assert!(
        said.contains("a directory deeper than 512 levels (or a link put in place of one) is in it, so nothing was started"),
        "{said}"
    );
    assert!(!said.contains("by chown"), "{said}");
    assert_eq!(owner(&lab.p("ws")), OWNER);
    assert_eq!(owner(&lab.p("ws/d")), OWNER);
}

/// When the run's own uid cannot reach a write root (a directory above it
/// lets `nobody`'s group through, not others), idmapped roots are never
/// paired with the shared `nobody`: they are chowned, with a warning.
#[test]
#[cfg_attr(any(sealc_not_root, sealc_no_bwrap), ignore = "needs root, bubblewrap")]
fn without_a_uid_of_its_own_the_roots_are_chowned_not_idmapped_for_nobody() {
    if !root_with_bwrap() {
        return;
    }
    let lab = Lab::new("/usr/bin:/bin", "");
    std::os::unix::fs::chown(&lab.t, Some(0), Some(AGENT.1)).unwrap();
    std::fs::set_permissions(&lab.t, PermissionsExt::from_mode(0o710)).unwrap();
    let ws = lab.p("ws").display().to_string();
    let out = lab.sh(&format!("echo new > {ws}/new.txt"));
    let said = text(&out);
    assert_eq!(out.status.code(), Some(0), "{said}");
    assert!(
        said.contains(
            "sealc: warning: the write roots cannot be idmapped here (the agent's user (2146435"
        ),
        "{said}"
    );
    let report = lab.report();
    assert_eq!(report["write_roots"], "chowned");
    assert_eq!(report["user"], "65534:65534");
    assert_eq!(owner(&lab.p("ws/new.txt")), OWNER);
    // A uid of sealc's range is not for `--user`.
    let out = Command::new(env!("CARGO_BIN_EXE_sealc"))
        .current_dir(&lab.t)
        .env_clear()
        .args(["exec", "--user", "2146435072"])
        .arg(lab.p("seal/seal.json"))
        .args(["--", "/bin/true"])
        .stdin(Stdio::null())
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(125), "{}", text(&out));
    assert!(
        text(&out).contains("is in sealc's range of run uids"),
        "{}",
        text(&out)
    );
}

/// A uid of the run's own is one of sealc's range that neither
/// `/etc/passwd` nor `/etc/group` names, and held: while it is, the next
/// allocation gets another.
#[test]
#[cfg_attr(any(sealc_not_root, sealc_no_bwrap), ignore = "needs root, bubblewrap")]
fn a_run_uid_is_never_one_a_user_or_group_names_and_never_shared() {
    if !root_with_bwrap() {
        return;
    }
    use sealc::exec::user::{allocate, DYNAMIC_BASE};
    let passwd = format!("a:x:{}:1::/:/bin/sh\n", DYNAMIC_BASE);
    let group = format!("g:x:{}:\n", DYNAMIC_BASE + 1);
    let first = allocate(&passwd, &group).unwrap();
    let second = allocate(&passwd, &group).unwrap();
    for d in [&first, &second] {
        assert!(d.ids.uid >= DYNAMIC_BASE + 2, "{:?}", d.ids);
        assert_eq!(d.ids.uid, d.ids.gid);
    }
    assert_ne!(first.ids, second.ids);
}

/// Wait (up to 20 s) for `p` to appear.
fn wait_for(p: &Path) {
    for _ in 0..400 {
        if p.exists() {
            return;
        }
        std::thread::sleep(std::time::Duration::from_millis(50));
    }
    panic!("{} never appeared", p.display());
}

/// Does the host's mount table name `p`?
fn host_mounts(p: &Path) -> bool {
    let table = std::fs::read_to_string("/proc/self/mountinfo").unwrap();
    let p = p.display().to_string();
    table
        .lines()
        .any(|l| l.split(' ').nth(4).is_some_and(|m| m == p))
}

/// `sealc exec` killed with `SIGKILL` mid-run: the sandbox dies with it
/// (`--die-with-parent`), and since nothing changed hands nothing is left
/// to the agent's user; the idmapped mount was never in the host's mount
/// table. The next run starts clean.
#[test]
#[cfg_attr(any(sealc_not_root, sealc_no_bwrap), ignore = "needs root, bubblewrap")]
fn sealc_killed_mid_run_leaves_every_owner_as_it_was() {
    if !root_with_bwrap() {
        return;
    }
    let lab = Lab::new("/usr/bin:/bin", "");
    let ws = lab.p("ws").display().to_string();
    let mut child = lab.start(&[], &format!("mkdir {ws}/d; echo x > {ws}/d/k; sleep 60"));
    wait_for(&lab.p("ws/d/k"));
    assert!(!host_mounts(&lab.p("ws")), "the host sees the run's mount");
    child.kill().unwrap();
    child.wait().unwrap();
    for p in ["ws", "ws/old.txt", "ws/d", "ws/d/k"] {
        assert_eq!(owner(&lab.p(p)), OWNER, "{p}");
    }
    assert!(!host_mounts(&lab.p("ws")));
    let out = lab.sh(&format!("echo again > {ws}/d/k"));
    assert_eq!(out.status.code(), Some(0), "{}", text(&out));
    assert!(!text(&out).contains("warning"), "{}", text(&out));
    assert_eq!(owner(&lab.p("ws/d/k")), OWNER);
}

/// Two runs over one write root at once: each writes, neither changes who
/// owns anything under the other.
#[test]
#[cfg_attr(any(sealc_not_root, sealc_no_bwrap), ignore = "needs root, bubblewrap")]
fn two_runs_over_one_root_at_once_leave_it_the_owners() {
    if !root_with_bwrap() {
        return;
    }
    let lab = Lab::new("/usr/bin:/bin", "");
    let ws = lab.p("ws").display().to_string();
    let runs: Vec<_> = (0..2)
        .map(|i| {
            lab.start(
                &[],
                &format!(
                    "set -e; touch {ws}/started{i}; \
                     while [ ! -e {ws}/started0 ] || [ ! -e {ws}/started1 ]; do sleep 0.05; done; \
                     echo {i} > {ws}/run{i}; echo {i} >> {ws}/old.txt; test -w {ws}/old.txt"
                ),
            )
        })
        .collect();
    for r in runs {
        let out = r.wait_with_output().unwrap();
        assert_eq!(out.status.code(), Some(0), "{}", text(&out));
    }
    for p in ["ws", "ws/old.txt", "ws/run0", "ws/run1", "ws/started0"] {
        assert_eq!(owner(&lab.p(p)), OWNER, "{p}");
    }
}

/// On a filesystem that cannot be idmapped (`ramfs`), the roots are chowned
/// to the agent's user for the run, with a warning, and handed back after
/// it: the agent's objects go to the owner, a setuid or setgid bit cleared
/// first; links and files with another hard link stay the agent's.
#[test]
#[cfg_attr(any(sealc_not_root, sealc_no_bwrap), ignore = "needs root, bubblewrap")]
fn a_root_that_cannot_be_idmapped_is_handed_over_and_back() {
    if !root_with_bwrap() {
        return;
    }
    let lab = Lab::new("/usr/bin:/bin", "");
    let ws = lab.p("ws");
    let mounted = Command::new("mount")
        .args(["-t", "ramfs", "-o", "mode=755", "sealc-test"])
        .arg(&ws)
        .status()
        .unwrap();
    assert!(mounted.success());
    let _unmount = Unmount(ws.clone());
    chown(&ws, OWNER);
    std::fs::write(lab.p("ws/old.txt"), "old\n").unwrap();
    chown(&lab.p("ws/old.txt"), OWNER);
    // Set-id files as if the agent had made them (the filter stops it).
    for (name, mode) in [("suid", 0o4755), ("sgid", 0o2755)] {
        let p = lab.p(&format!("ws/{name}"));
        std::fs::write(&p, "#!/bin/sh\n").unwrap();
        chown(&p, AGENT);
        std::fs::set_permissions(&p, PermissionsExt::from_mode(mode)).unwrap();
    }
    let out = lab.sh(&format!(
        "set -e; cd {ws}; test \"$(id -u)\" = 65534; echo more >> old.txt; \
         mkdir -p deep; echo 1 > deep/new.txt; ln -sfn /etc/shadow shadow; \
         echo a > pair1; ln -f pair1 pair2",
        ws = ws.display()
    ));
    assert_eq!(out.status.code(), Some(0), "{}", text(&out));
    assert!(
        text(&out).contains("sealc: warning: the write roots cannot be idmapped here"),
        "{}",
        text(&out)
    );
    assert_eq!(lab.report()["write_roots"], "chowned");
    assert!(lab.report().get("hand_back_errors").is_none());
    for p in ["ws", "ws/old.txt", "ws/deep", "ws/deep/new.txt"] {
        assert_eq!(owner(&lab.p(p)), OWNER, "{p}");
    }
    for p in ["ws/shadow", "ws/pair1", "ws/pair2"] {
        assert_eq!(owner(&lab.p(p)), AGENT, "{p}");
    }
    for name in ["suid", "sgid"] {
        let m = std::fs::metadata(lab.p(&format!("ws/{name}"))).unwrap();
        assert_eq!((m.uid(), m.gid()), OWNER, "{name}");
        assert_eq!(m.mode() & 0o7777, 0o755, "{name}");
    }
}

#[test]
#[cfg_attr(any(sealc_not_root, sealc_no_bwrap), ignore = "needs root, bubblewrap")]
fn a_path_entry_the_agent_cannot_search_is_said_and_its_commands_are_not_found() {
    if !root_with_bwrap() {
        return;
    }
    // A PATH directory under a 0700 directory, as `/root/.cargo/bin`.
    let private = tempfile::tempdir_in(env!("CARGO_TARGET_TMPDIR")).unwrap();
    let bin = private.path().join("bin");
    std::fs::create_dir(&bin).unwrap();
    std::fs::write(bin.join("tool"), "#!/bin/sh\necho tool\n").unwrap();
    std::fs::set_permissions(bin.join("tool"), PermissionsExt::from_mode(0o755)).unwrap();
    std::fs::set_permissions(private.path(), PermissionsExt::from_mode(0o700)).unwrap();
    // A searchable one with a file that is not executable.
    let open = tempfile::tempdir_in(env!("CARGO_TARGET_TMPDIR")).unwrap();
    std::fs::set_permissions(open.path(), PermissionsExt::from_mode(0o755)).unwrap();
    std::fs::write(open.path().join("plain"), "not a program\n").unwrap();
    std::fs::set_permissions(open.path().join("plain"), PermissionsExt::from_mode(0o644)).unwrap();
    let path = format!("{}:{}:/usr/bin:/bin", bin.display(), open.path().display());
    let lab = Lab::new(&path, "");
    let warning = format!(
        "sealc: warning: PATH entry `{}` cannot be searched by the agent's user (65534:65534): commands there will not run",
        bin.display()
    );
    for cmd in ["tool", "nosuchcmd"] {
        let out = lab.run(&[cmd]);
        let all = text(&out);
        assert_eq!(out.status.code(), Some(127), "{cmd}: {all}");
        assert!(all.contains(&warning), "{cmd}: {all}");
        assert!(
            all.contains(&format!(
                "`{cmd}`: not found in `PATH`, and the command's user cannot search `{}` there",
                bin.display()
            )),
            "{cmd}: {all}"
        );
        assert_eq!(lab.report()["outcome"]["phase"], "command_not_found");
    }
    // Found, but not executable: 126 still.
    let out = lab.run(&["plain"]);
    assert_eq!(out.status.code(), Some(126), "{}", text(&out));
    // A command further down PATH runs, warning and all.
    let out = lab.run(&["true"]);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out));
    assert!(text(&out).contains(&warning), "{}", text(&out));
}

/// A write root the agent's user owns before the run (a `sealc exec` that
/// chowned it, killed between hand-over and hand-back, left it so) is said:
/// this run cannot know its owner, and it stays the agent's.
#[test]
#[cfg_attr(any(sealc_not_root, sealc_no_bwrap), ignore = "needs root, bubblewrap")]
fn a_root_left_with_the_agent_by_an_earlier_run_is_said() {
    if !root_with_bwrap() {
        return;
    }
    let lab = Lab::new("/usr/bin:/bin", "");
    chown(&lab.p("ws"), AGENT);
    let out = lab.sh("true");
    assert_eq!(out.status.code(), Some(0), "{}", text(&out));
    let said = String::from_utf8_lossy(&out.stderr);
    assert!(
        said.contains("is owned by the agent's user (65534:65534) already"),
        "{said}"
    );
    assert_eq!(owner(&lab.p("ws")), AGENT);
    // Put back, the next run says nothing and hands it back.
    chown(&lab.p("ws"), OWNER);
    let out = lab.sh("true");
    assert!(
        !String::from_utf8_lossy(&out.stderr).contains("already"),
        "{}",
        text(&out)
    );
    assert_eq!(owner(&lab.p("ws")), OWNER);
}

/// The walks of a root-started run are bounded: a write root holding more
/// entries than `--walk-limit` (default 1,000,000: what an earlier run
/// could leave, millions of empty files, would otherwise hold up every
/// start) stops the run before anything starts (exit 122), naming the
/// bound, and nothing changes hands.
#[test]
#[cfg_attr(any(sealc_not_root, sealc_no_bwrap), ignore = "needs root, bubblewrap")]
fn the_walks_of_a_write_root_are_bounded() {
    if !root_with_bwrap() {
        return;
    }
    let lab = Lab::new("/usr/bin:/bin", "");
    let ws = lab.p("ws").display().to_string();
    let out = lab.sh(&format!(
        "cd {ws} && mkdir many && cd many && i=0 && while [ $i -lt 60 ]; do : > f$i; i=$((i+1)); done"
    ));
    assert_eq!(out.status.code(), Some(0), "{}", text(&out));
    let out = lab
        .start(&["--walk-limit", "50"], "echo RAN")
        .wait_with_output()
        .unwrap();
    let said = text(&out);
    assert_eq!(out.status.code(), Some(122), "{said}");
    assert!(said.contains("more than 50 entries"), "{said}");
    assert!(
        !String::from_utf8_lossy(&out.stdout).contains("RAN"),
        "{said}"
    );
    assert!(!said.contains("by chown"), "{said}");
    assert_eq!(owner(&lab.p("ws/many/f0")), OWNER);
    // Within the bound it runs.
    let out = lab
        .start(&["--walk-limit", "100"], "echo RAN")
        .wait_with_output()
        .unwrap();
    assert_eq!(out.status.code(), Some(0), "{}", text(&out));
}

/// A run refused before its sandbox could start leaves nothing it made:
/// a write root absent when compiled (made by `sealc exec` for the run) is
/// taken away again when the walk bound stops the run, so neither a later
/// run nor a recompile meets a directory no run used.
#[test]
#[cfg_attr(any(sealc_not_root, sealc_no_bwrap), ignore = "needs root, bubblewrap")]
fn a_refused_run_takes_away_the_write_roots_it_made() {
    if !root_with_bwrap() {
        return;
    }
    let tmp = tempfile::tempdir_in(env!("CARGO_TARGET_TMPDIR")).unwrap();
    let t = tmp.path().canonicalize().unwrap();
    std::fs::set_permissions(&t, PermissionsExt::from_mode(0o755)).unwrap();
    std::fs::create_dir(t.join("ws")).unwrap();
    for i in 0..60 {
        std::fs::write(t.join(format!("ws/f{i}")), "").unwrap();
    }
    chown(&t.join("ws"), OWNER);
    let spec = format!(
        "version = 1\nname = \"made\"\n[target]\nplatform = \"linux\"\n[filesystem]\nwrite = [\"{ws}\", \"{made}\"]\n[network]\nmode = \"none\"\n",
        ws = t.join("ws").display(),
        made = t.join("out/run1").display(),
    );
    std::fs::write(t.join("spec.toml"), spec).unwrap();
    let out = Command::new(env!("CARGO_BIN_EXE_sealc"))
        .current_dir(&t)
        .env_clear()
        .args(["compile", "spec.toml", "--out", "seal"])
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", text(&out));
    assert!(!t.join("out").exists());
    let lab = Lab { _tmp: tmp, t };
    let out = lab
        .start(&["--walk-limit", "50"], "echo RAN")
        .wait_with_output()
        .unwrap();
    let said = text(&out);
    assert_eq!(out.status.code(), Some(122), "{said}");
    assert!(said.contains("more than 50"), "{said}");
    assert!(
        !lab.p("out").exists(),
        "a refused run left the write root it made:\n{said}"
    );
    // Within the bound it runs, and the root made for it stays.
    let out = lab
        .start(&["--walk-limit", "1000"], "echo RAN")
        .wait_with_output()
        .unwrap();
    assert_eq!(out.status.code(), Some(0), "{}", text(&out));
    assert!(lab.p("out/run1").is_dir(), "{}", text(&out));
}
