//! Issue 10: the Linux seal holds against a hostile agent, started by root or
//! not. Every escape the issue lists (1–11), its partial leaks and the
//! termination cases, each tried for real inside `sealc exec` under
//! bubblewrap, once by a root caller (this process) and once by an
//! unprivileged one (the `sealc-test` user, through `setpriv`).
//!
//! Each attack asserts what a host observes: a marker that never shows on
//! stdout, stderr or in a host file, a host file left unchanged, an exit
//! status, a message. Small C helpers (`tests/attacks/*.c`) do what a shell
//! cannot (ptrace, datagram pairs, terminal ioctls, namespaces); they are
//! built with `gcc` when the battery starts.
//!
//! The lab is a private tree under `target/tmp`, reachable by `sealc-test`:
//! a denied directory and an `outside` directory that every user may write
//! on the host (so a refusal is the seal's doing, not the permissions'), two
//! write roots (owned by `sealc-test` for its runs), a loopback proxy.
//!
//! Without bubblewrap, gcc, setpriv, the `sealc-test` user or root, these
//! tests are ignored, unless `SEALC_REQUIRE_BWRAP=1` (set by
//! `.ci/run`), under which they fail.

mod common;
use common::{serve, text};

use std::ffi::{CString, OsStr};
use std::fs::File;
use std::io::Read;
use std::os::fd::{AsRawFd, FromRawFd};
use std::os::unix::fs::{FileTypeExt, MetadataExt, PermissionsExt};
use std::os::unix::net::UnixDatagram;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Output, Stdio};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, OnceLock};
use std::time::{Duration, Instant};

const SEALC: &str = env!("CARGO_BIN_EXE_sealc");
/// The unprivileged caller (`.ci/run` creates it).
const USER: &str = "sealc-test";
/// The content of the denied file.
const SECRET: &str = "ANSWERS-SECRET-c41d";
/// How long any one `sealc exec` may take before the test kills it.
const DEADLINE: Duration = Duration::from_secs(60);

// ---------------------------------------------------------------------------
// Prerequisites and helpers

fn required() -> bool {
    std::env::var_os("SEALC_REQUIRE_BWRAP").is_some_and(|v| v == "1")
}

/// What every attack needs: the helpers built, the unprivileged user's ids.
struct Env {
    helpers: PathBuf,
    uid: u32,
    gid: u32,
}

static ENV: OnceLock<Result<Env, String>> = OnceLock::new();

/// The environment; a missing prerequisite fails the test, saying why
/// (`common::not_run`; under `SEALC_REQUIRE_BWRAP=1`, saying so).
fn env() -> Option<&'static Env> {
    match ENV.get_or_init(prepare) {
        Ok(e) => Some(e),
        Err(why) => {
            assert!(
                !required(),
                "SEALC_REQUIRE_BWRAP=1, but the attack battery cannot run: {why}"
            );
            common::not_run(why)
        }
    }
}

fn runs(program: &str, args: &[&str]) -> bool {
    Command::new(program)
        .args(args)
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .status()
        .is_ok_and(|s| s.success())
}

fn id_of(flag: &str) -> Result<u32, String> {
    let out = Command::new("id")
        .args([flag, USER])
        .output()
        .map_err(|e| format!("cannot run `id`: {e}"))?;
    String::from_utf8_lossy(&out.stdout)
        .trim()
        .parse()
        .map_err(|_| format!("the user `{USER}` does not exist (.ci/run creates it)"))
}

fn prepare() -> Result<Env, String> {
    if !rustix::process::getuid().is_root() {
        return Err(
            "this test process is not root (the battery runs as root, and as `sealc-test` through setpriv)"
                .into(),
        );
    }
    let bwrap = [
        "--ro-bind",
        "/",
        "/",
        "--unshare-pid",
        "--unshare-net",
        "true",
    ];
    if !runs("bwrap", &bwrap) {
        return Err("bubblewrap is missing or cannot make namespaces".into());
    }
    if !runs("gcc", &["--version"]) {
        return Err("gcc is missing (it builds the attack helpers)".into());
    }
    if !runs("setpriv", &["--version"]) {
        return Err("setpriv (util-linux) is missing".into());
    }
    let uid = id_of("-u")?;
    let gid = id_of("-g")?;
    let mut as_user = vec![
        "--reuid=sealc-test",
        "--regid=sealc-test",
        "--init-groups",
        "--",
        "bwrap",
    ];
    as_user.extend(bwrap);
    if !runs("setpriv", &as_user) {
        return Err(format!("bubblewrap cannot make namespaces as `{USER}`"));
    }
    // The user must reach sealc and the labs: every parent of the checkout
    // traversable (not, say, a checkout under a 0700 home).
    let tmpdir = env!("CARGO_TARGET_TMPDIR");
    let reach = [
        "--reuid=sealc-test",
        "--regid=sealc-test",
        "--init-groups",
        "--",
        "/bin/sh",
        "-c",
        "\"$0\" --version && test -x \"$1\"",
        SEALC,
        tmpdir,
    ];
    if !runs("setpriv", &reach) {
        return Err(format!(
            "`{USER}` cannot run {SEALC} or reach {tmpdir}: make every parent directory of the checkout traversable (chmod o+x)"
        ));
    }
    // Built once per test run, into a directory every caller (and every
    // sandbox) can read.
    let helpers = PathBuf::from(env!("CARGO_TARGET_TMPDIR")).join("attack-helpers");
    std::fs::create_dir_all(&helpers).map_err(|e| e.to_string())?;
    std::fs::set_permissions(&helpers, std::fs::Permissions::from_mode(0o755))
        .map_err(|e| e.to_string())?;
    for name in ["ptrace", "sockets", "tty", "ns"] {
        let src = common::root().join(format!("tests/attacks/{name}.c"));
        let tmp = helpers.join(format!("{name}.{}", std::process::id()));
        let out = Command::new("gcc")
            .args(["-O1", "-Wall", "-o"])
            .arg(&tmp)
            .arg(&src)
            .output()
            .map_err(|e| format!("cannot run gcc: {e}"))?;
        if !out.status.success() {
            return Err(format!(
                "gcc failed on {}:\n{}",
                src.display(),
                String::from_utf8_lossy(&out.stderr)
            ));
        }
        std::fs::rename(&tmp, helpers.join(name)).map_err(|e| e.to_string())?;
    }
    Ok(Env { helpers, uid, gid })
}

/// Who starts `sealc exec`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Caller {
    /// This process: root.
    Root,
    /// `sealc-test`, through `setpriv`.
    User,
}

const CALLERS: [Caller; 2] = [Caller::Root, Caller::User];

impl Caller {
    fn name(self) -> &'static str {
        match self {
            Caller::Root => "root caller",
            Caller::User => "unprivileged caller",
        }
    }
}

/// Failures collected over every case of a test, reported at once (so one
/// run shows which attacks get through, not just the first).
#[derive(Default)]
struct Verdict(Vec<String>);

impl Verdict {
    fn check(&mut self, ok: bool, what: impl FnOnce() -> String) {
        if !ok {
            self.0.push(what());
        }
    }

    fn done(self) {
        assert!(self.0.is_empty(), "\n{}", self.0.join("\n\n"));
    }
}

fn stdout(o: &Output) -> String {
    String::from_utf8_lossy(&o.stdout).into_owned()
}

fn all(o: &Output) -> String {
    format!(
        "{}{}",
        String::from_utf8_lossy(&o.stdout),
        String::from_utf8_lossy(&o.stderr)
    )
}

/// Run to completion, killing the command after `limit`; stdin is null
/// unless given.
fn output_within(mut cmd: Command, stdin: Option<Stdio>, limit: Duration) -> Output {
    cmd.stdin(stdin.unwrap_or_else(Stdio::null))
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    let mut child = cmd.spawn().expect("spawn");
    let mut out = child.stdout.take().unwrap();
    let mut err = child.stderr.take().unwrap();
    let o = std::thread::spawn(move || {
        let mut v = Vec::new();
        let _ = out.read_to_end(&mut v);
        v
    });
    let e = std::thread::spawn(move || {
        let mut v = Vec::new();
        let _ = err.read_to_end(&mut v);
        v
    });
    let (status, late) = wait_within(&mut child, limit);
    let stdout = o.join().unwrap();
    let mut stderr = e.join().unwrap();
    if late {
        stderr
            .extend_from_slice(format!("\n[test: killed after {}s]\n", limit.as_secs()).as_bytes());
    }
    Output {
        status,
        stdout,
        stderr,
    }
}

/// Wait for `child` for at most `limit`, then `SIGKILL` it. Returns the
/// status and whether it had to be killed.
fn wait_within(child: &mut Child, limit: Duration) -> (std::process::ExitStatus, bool) {
    let end = Instant::now() + limit;
    loop {
        if let Some(s) = child.try_wait().unwrap() {
            return (s, false);
        }
        if Instant::now() > end {
            let _ = child.kill();
            return (child.wait().unwrap(), true);
        }
        std::thread::sleep(Duration::from_millis(20));
    }
}

fn chmod(p: &Path, mode: u32) {
    std::fs::set_permissions(p, std::fs::Permissions::from_mode(mode)).unwrap();
}

/// `chown -R` to the unprivileged user (symlinks themselves, not followed).
fn give_to_user(p: &Path, env: &Env) {
    std::os::unix::fs::lchown(p, Some(env.uid), Some(env.gid)).unwrap();
    if std::fs::symlink_metadata(p).unwrap().is_dir() {
        for e in std::fs::read_dir(p).unwrap().flatten() {
            give_to_user(&e.path(), env);
        }
    }
}

/// Every entry under `p` (not following symlinks), `p` included.
fn walk(p: &Path, out: &mut Vec<(PathBuf, std::fs::Metadata)>) {
    let Ok(m) = std::fs::symlink_metadata(p) else {
        return;
    };
    let dir = m.is_dir();
    out.push((p.to_path_buf(), m));
    if dir {
        if let Ok(rd) = std::fs::read_dir(p) {
            for e in rd.flatten() {
                walk(&e.path(), out);
            }
        }
    }
}

/// What a host sees of a tree: each path's kind, mode, owner, size, mtime
/// and (for files) content.
fn snapshot(p: &Path) -> Vec<String> {
    let mut v = Vec::new();
    walk(p, &mut v);
    let mut out: Vec<String> = v
        .iter()
        .map(|(path, m)| {
            let content = if m.is_file() {
                String::from_utf8_lossy(&std::fs::read(path).unwrap_or_default()).into_owned()
            } else if m.file_type().is_symlink() {
                std::fs::read_link(path)
                    .map(|t| t.display().to_string())
                    .unwrap_or_default()
            } else {
                String::new()
            };
            format!(
                "{} mode {:o} uid {} gid {} size {} mtime {}.{} {:?}",
                path.display(),
                m.mode(),
                m.uid(),
                m.gid(),
                m.len(),
                m.mtime(),
                m.mtime_nsec(),
                content
            )
        })
        .collect();
    out.sort();
    out
}

// ---------------------------------------------------------------------------
// The lab

/// The parts of the lab's spec an attack changes. Paths in the lists are
/// relative to the lab.
#[derive(Default)]
struct Shape<'a> {
    /// More `deny_read` roots.
    deny: &'a [&'a str],
    /// More `[env] set` entries (`NAME`, value; `${lab}` may be used).
    set: &'a [(&'a str, &'a str)],
    /// More lines in `[env]`.
    env: &'a str,
    /// More lines in `[exec]`.
    exec: &'a str,
    /// The timeout in seconds (default 30).
    timeout: Option<u64>,
}

impl Shape<'_> {
    /// The grading-cell shape in small: a denied directory, two write
    /// roots, proxy-only network, the env allowlist.
    fn spec(&self) -> String {
        let mut deny = vec!["\"${lab}/secret\"".to_string()];
        deny.extend(self.deny.iter().map(|d| format!("\"${{lab}}/{d}\"")));
        let mut set = vec![
            "HOME = \"${lab}/ws\"".to_string(),
            "TMPDIR = \"${lab}/tmp\"".to_string(),
        ];
        set.extend(self.set.iter().map(|(k, v)| format!("{k} = \"{v}\"")));
        format!(
            r#"version = 1
name = "attacks"

[target]
platform = "linux"

[vars]
lab = {{ required = true }}
proxy_port = {{ required = true }}

[filesystem]
deny_read = [{deny}]
write = ["${{lab}}/ws", "${{lab}}/tmp"]
write_devices = ["/dev/null"]

[network]
mode = "proxy"
proxy = "127.0.0.1:${{proxy_port}}"
hosts = ["example.com"]
ports = [443]

[env]
pass = ["PATH"]
set = {{ {set} }}
{env}

[exec]
timeout = {{ bin = "/usr/bin/timeout", seconds = {timeout} }}
{exec}
"#,
            deny = deny.join(", "),
            set = set.join(", "),
            env = self.env,
            exec = self.exec,
            timeout = self.timeout.unwrap_or(30),
        )
    }
}

/// One caller's private tree, and its compiled seal.
struct Lab {
    _tmp: tempfile::TempDir,
    t: PathBuf,
    who: Caller,
    env: &'static Env,
    proxy: u16,
}

impl Lab {
    /// The layout only, nothing compiled:
    ///
    /// | path | what | host mode |
    /// | --- | --- | --- |
    /// | `secret/answers.txt` | denied | 0777 / 0666 |
    /// | `ws`, `tmp` | write roots | the caller's |
    /// | `outside` | no root: read-only inside | 0777 |
    /// | `sock` | host sockets | 0755 |
    /// | `seal` | the compiled seal | root's |
    fn layout(who: Caller, env: &'static Env) -> Lab {
        let tmp = tempfile::tempdir_in(env!("CARGO_TARGET_TMPDIR")).unwrap();
        let t = tmp.path().canonicalize().unwrap();
        chmod(&t, 0o755);
        for d in ["secret", "ws", "tmp", "outside", "sock"] {
            std::fs::create_dir_all(t.join(d)).unwrap();
        }
        std::fs::write(t.join("secret/answers.txt"), SECRET).unwrap();
        std::fs::write(t.join("outside/existing"), "host file\n").unwrap();
        std::fs::create_dir(t.join("outside/emptydir")).unwrap();
        for d in ["secret", "outside", "outside/emptydir"] {
            chmod(&t.join(d), 0o777);
        }
        for f in ["secret/answers.txt", "outside/existing"] {
            chmod(&t.join(f), 0o666);
        }
        if who == Caller::User {
            give_to_user(&t.join("ws"), env);
            give_to_user(&t.join("tmp"), env);
        }
        Lab {
            _tmp: tmp,
            t,
            who,
            env,
            proxy: serve("PROXY-OK\n"),
        }
    }

    /// The layout, with `shape` compiled into `seal/` (which must work).
    fn new(who: Caller, shape: &Shape<'_>) -> Option<Lab> {
        let lab = Lab::layout(who, env()?);
        lab.compile_ok(&shape.spec());
        Some(lab)
    }

    fn path(&self, p: &str) -> PathBuf {
        self.t.join(p)
    }

    fn record(&self) -> PathBuf {
        self.t.join("seal/seal.json")
    }

    /// `sealc compile` of `spec` into `seal/`, by root (the harness), over
    /// what is there.
    fn compile(&self, spec: &str) -> Output {
        std::fs::write(self.t.join("spec.toml"), spec).unwrap();
        let mut c = Command::new(SEALC);
        c.current_dir(&self.t)
            .env_clear()
            .env("PATH", "/usr/bin:/bin")
            .args([
                "compile",
                "spec.toml",
                "--platform",
                "linux",
                "--force",
                "--out",
                "seal",
            ])
            .arg(format!("--var=lab={}", self.t.display()))
            .arg(format!("--var=proxy_port={}", self.proxy));
        output_within(c, None, DEADLINE)
    }

    fn compile_ok(&self, spec: &str) {
        let out = self.compile(spec);
        assert_eq!(
            out.status.code(),
            Some(0),
            "compile failed:\n{}",
            text(&out)
        );
    }

    /// The record's binding.
    fn binding(&self) -> String {
        let v: serde_json::Value =
            serde_json::from_slice(&std::fs::read(self.record()).unwrap()).unwrap();
        v["binding"].as_str().unwrap().to_string()
    }

    /// `sealc` as the caller: directly (root) or through `setpriv`, after
    /// `prefix` (a command that execs the rest, such as `prlimit ... --`).
    fn sealc(&self, prefix: &[&str]) -> Command {
        let mut argv = prefix.to_vec();
        if self.who == Caller::User {
            argv.extend([
                "/usr/bin/setpriv",
                "--reuid=sealc-test",
                "--regid=sealc-test",
                "--init-groups",
                "--",
            ]);
        }
        argv.push(SEALC);
        let mut c = Command::new(argv[0]);
        c.args(&argv[1..])
            .current_dir(&self.t)
            .env_clear()
            .env("PATH", "/usr/bin:/bin");
        c
    }

    /// `sealc exec RECORD [flags] -- argv`.
    fn exec(&self, flags: &[&str], argv: &[&str]) -> Command {
        self.exec_under(&[], flags, argv)
    }

    /// [`Lab::exec`] after `prefix`.
    fn exec_under(&self, prefix: &[&str], flags: &[&str], argv: &[&str]) -> Command {
        let mut c = self.sealc(prefix);
        c.arg("exec")
            .arg(self.record())
            .args(flags)
            .arg("--")
            .args(argv);
        c
    }

    /// The lab's paths as shell variables, before `script`.
    fn script(&self, script: &str) -> String {
        format!(
            "T={t}; WS={t}/ws; TMPD={t}/tmp; OUT={t}/outside; SECRETDIR={t}/secret; H={h}; PROXY={p}\n{script}",
            t = self.t.display(),
            h = self.env.helpers.display(),
            p = self.proxy,
        )
    }

    /// `bash -c script` under the seal, as the caller.
    fn sh_cmd(&self, flags: &[&str], script: &str) -> Command {
        self.exec(flags, &["/bin/bash", "-c", &self.script(script)])
    }

    /// [`Lab::sh_cmd`] after `prefix`.
    fn sh_under(&self, prefix: &[&str], script: &str) -> Command {
        self.exec_under(prefix, &[], &["/bin/bash", "-c", &self.script(script)])
    }

    fn sh(&self, script: &str) -> Output {
        output_within(self.sh_cmd(&[], script), None, DEADLINE)
    }

    /// Did a script that starts with `echo SANDBOX-UP` start?
    fn started(o: &Output) -> bool {
        stdout(o).starts_with("SANDBOX-UP")
    }

    fn label(&self, what: &str) -> String {
        format!("[{}] {what}", self.who.name())
    }
}

// ---------------------------------------------------------------------------
// 1. Root caller → host root

/// Started by root, the agent must not be kernel uid 0: no host-global
/// `/proc` entry (sysctls, sysrq, irq affinity) is writable, the masked ones
/// read nothing, and a file it makes in a write root is not root's on the
/// host. Every sysctl is written with the value it already has, so a write
/// that gets through changes nothing.
#[test]
#[cfg_attr(
    any(
        sealc_no_bwrap,
        sealc_cannot_become = "sealc-test",
        sealc_no_tool = "gcc"
    ),
    ignore = "needs root, bubblewrap, setpriv, gcc and the user sealc-test"
)]
fn escape_01_no_uid_0_and_no_host_global_proc_state() {
    let mut v = Verdict::default();
    let script = r#"echo SANDBOX-UP
grep '^Uid:' /proc/self/status
for f in /proc/sys/kernel/core_pattern /proc/sys/kernel/randomize_va_space \
         /proc/sys/fs/protected_symlinks /proc/sys/vm/swappiness \
         /proc/irq/default_smp_affinity /proc/irq/*/smp_affinity; do
  [ -e "$f" ] || continue
  val=$(cat "$f" 2>/dev/null) || continue
  (printf '%s\n' "$val" > "$f") 2>/dev/null && echo "WROTE $f"
done
# `h` only prints sysrq's help to the kernel log.
[ -e /proc/sysrq-trigger ] && (echo h > /proc/sysrq-trigger) 2>/dev/null && echo "WROTE /proc/sysrq-trigger"
for f in /proc/kcore /proc/keys /proc/timer_list /proc/sched_debug /proc/latency_stats /proc/timer_stats; do
  [ -e "$f" ] || continue
  n=$(head -c 4096 "$f" 2>/dev/null | wc -c)
  [ "$n" -gt 0 ] && echo "READ $f ($n bytes)"
done
echo mine > $WS/made-inside
stat -c 'MADE-BY %u' $WS/made-inside
true
"#;
    for who in CALLERS {
        let Some(lab) = Lab::new(who, &Shape::default()) else {
            return;
        };
        let out = lab.sh(script);
        let all = text(&out);
        v.check(Lab::started(&out), || {
            lab.label(&format!("the sandbox did not start:\n{all}"))
        });
        let so = stdout(&out);
        for line in so.lines() {
            v.check(
                !line.starts_with("WROTE") && !line.starts_with("READ"),
                || lab.label(&format!("host-global /proc: {line}")),
            );
        }
        let uid_line = so.lines().find(|l| l.starts_with("Uid:")).unwrap_or("");
        v.check(
            !uid_line.is_empty() && !uid_line.split_whitespace().skip(1).any(|u| u == "0"),
            || lab.label(&format!("the agent runs as kernel uid 0: `{uid_line}`")),
        );
        v.check(
            so.lines()
                .any(|l| l.starts_with("MADE-BY ") && l != "MADE-BY 0"),
            || lab.label(&format!("a file made in a write root is root's:\n{all}")),
        );
        // After the run it is handed back to the write root's owner.
        let ws_owner = std::fs::metadata(lab.path("ws")).map(|m| m.uid()).ok();
        match std::fs::metadata(lab.path("ws/made-inside")) {
            Ok(m) => v.check(Some(m.uid()) == ws_owner, || {
                lab.label("a file made in a write root is not handed back to the root's owner")
            }),
            Err(_) => {
                v.0.push(lab.label(&format!("made-inside was not written:\n{all}")))
            }
        }
    }

    // Root chooses the agent's user: `--user sealc-test`.
    let Some(lab) = Lab::new(Caller::Root, &Shape::default()) else {
        return;
    };
    let out = output_within(
        lab.sh_cmd(
            &["--user", USER],
            "echo SANDBOX-UP; grep '^Uid:' /proc/self/status; echo mine > $WS/made-inside; stat -c 'MADE-BY %u' $WS/made-inside",
        ),
        None,
        DEADLINE,
    );
    let uid = lab.env.uid.to_string();
    v.check(
        stdout(&out)
            .lines()
            .any(|l| l.starts_with("Uid:") && l.split_whitespace().skip(1).all(|u| u == uid)),
        || {
            format!(
                "`--user {USER}`: the agent is not uid {uid}:\n{}",
                text(&out)
            )
        },
    );
    v.check(
        stdout(&out).lines().any(|l| l == format!("MADE-BY {uid}")),
        || {
            format!(
                "`--user {USER}`: the file made inside is not {USER}'s:\n{}",
                text(&out)
            )
        },
    );
    let ws_owner = std::fs::metadata(lab.path("ws")).map(|m| m.uid()).ok();
    v.check(
        std::fs::metadata(lab.path("ws/made-inside")).is_ok_and(|m| Some(m.uid()) == ws_owner),
        || format!("`--user {USER}`: the file made inside is not handed back to the root's owner"),
    );
    v.done();
}

// ---------------------------------------------------------------------------
// 2. setuid-root binary planted on the host

/// No setuid or setgid file owned by root (user or group) and no device node
/// may appear in a write root on the host, however the agent tries:
/// `chmod 4755`, `2755`, `u+s,g+s`, `fchmod`, `open(O_CREAT, 06755)`,
/// `mknod`.
#[test]
#[cfg_attr(
    any(
        sealc_no_bwrap,
        sealc_cannot_become = "sealc-test",
        sealc_no_tool = "gcc"
    ),
    ignore = "needs root, bubblewrap, setpriv, gcc and the user sealc-test"
)]
fn escape_02_no_setuid_root_file_or_device_in_a_write_root() {
    let mut v = Verdict::default();
    let script = r#"echo SANDBOX-UP
cp /bin/bash $WS/suid-sh; chmod 4755 $WS/suid-sh
cp /bin/bash $WS/sgid-sh; chmod 2755 $WS/sgid-sh
cp /bin/bash $TMPD/both-sh; chmod 6755 $TMPD/both-sh
cp /bin/bash $WS/plus-sh; chmod u+s,g+s $WS/plus-sh
/usr/bin/python3 - "$WS" <<'PY'
import os, shutil, sys
ws = sys.argv[1]
fd = os.open(ws + "/py-sh", os.O_CREAT | os.O_WRONLY, 0o6755)
with open("/bin/bash", "rb") as f:
    os.write(fd, f.read())
try:
    os.fchmod(fd, 0o6755)
except OSError as e:
    print("fchmod:", e)
os.close(fd)
try:
    os.chmod(ws + "/py-sh", 0o4755, follow_symlinks=False)
except OSError as e:
    print("fchmodat:", e)
for name, kind, dev in [("null-dev", 0o20000, os.makedev(1, 3)), ("disk-dev", 0o60000, os.makedev(254, 0))]:
    try:
        os.mknod(ws + "/py-" + name, kind | 0o666, dev)
    except OSError as e:
        print("mknod:", e)
PY
mknod $WS/null-dev c 1 3
mknod $TMPD/disk-dev b 254 0
ls -l $WS $TMPD
true
"#;
    for who in CALLERS {
        let Some(lab) = Lab::new(who, &Shape::default()) else {
            return;
        };
        let out = lab.sh(script);
        v.check(Lab::started(&out), || {
            lab.label(&format!("the sandbox did not start:\n{}", text(&out)))
        });
        let mut entries = Vec::new();
        walk(&lab.path("ws"), &mut entries);
        walk(&lab.path("tmp"), &mut entries);
        for (p, m) in entries {
            let ft = m.file_type();
            v.check(!ft.is_char_device() && !ft.is_block_device(), || {
                lab.label(&format!("a device node on the host: {}", p.display()))
            });
            v.check(
                m.mode() & 0o6000 == 0 || (m.uid() != 0 && m.gid() != 0),
                || {
                    lab.label(&format!(
                        "a setuid/setgid root file on the host: {} mode {:o} uid {} gid {}",
                        p.display(),
                        m.mode(),
                        m.uid(),
                        m.gid()
                    ))
                },
            );
        }
    }
    v.done();
}

// ---------------------------------------------------------------------------
// 3. bubblewrap's pid 1 unfiltered and ptrace-able

/// Every process the agent can see is out of its reach: `PTRACE_SEIZE`,
/// `PTRACE_ATTACH`, `process_vm_readv`/`writev` and `pidfd_getfd` fail on
/// each, and pid 1 is not bubblewrap.
#[test]
#[cfg_attr(
    any(
        sealc_no_bwrap,
        sealc_cannot_become = "sealc-test",
        sealc_no_tool = "gcc"
    ),
    ignore = "needs root, bubblewrap, setpriv, gcc and the user sealc-test"
)]
fn escape_03_no_visible_process_can_be_traced_or_read() {
    let mut v = Verdict::default();
    for who in CALLERS {
        let Some(lab) = Lab::new(who, &Shape::default()) else {
            return;
        };
        let out = lab.sh("echo SANDBOX-UP; $H/ptrace");
        let all = text(&out);
        let so = stdout(&out);
        v.check(Lab::started(&out) && so.contains("DONE"), || {
            lab.label(&format!("the probe did not run:\n{all}"))
        });
        for line in so.lines().filter(|l| l.starts_with("ESCAPE")) {
            v.0.push(lab.label(line));
        }
        v.check(!so.lines().any(|l| l == "pid1 bwrap"), || {
            lab.label("pid 1 inside is bubblewrap")
        });
        if !v.0.is_empty() {
            v.0.push(lab.label(&format!("what the probe saw:\n{all}")));
        }
    }
    v.done();
}

// ---------------------------------------------------------------------------
// 4. Unix datagrams to host sockets

/// A host datagram socket (as `/dev/log` or a notify socket would be),
/// writable by everyone on the host, receives nothing from the sandbox:
/// not through a datagram or seqpacket socket pair (`sendto`, or `connect`
/// then `send`), not through a new datagram socket.
#[test]
#[cfg_attr(
    any(
        sealc_no_bwrap,
        sealc_cannot_become = "sealc-test",
        sealc_no_tool = "gcc"
    ),
    ignore = "needs root, bubblewrap, setpriv, gcc and the user sealc-test"
)]
fn escape_04_no_unix_datagram_reaches_a_host_socket() {
    let mut v = Verdict::default();
    let marker = "DGRAM-MARKER-e21b";
    for who in CALLERS {
        let Some(lab) = Lab::new(who, &Shape::default()) else {
            return;
        };
        let path = lab.path("sock/dgram.sock");
        let sock = UnixDatagram::bind(&path).unwrap();
        chmod(&path, 0o777);
        sock.set_read_timeout(Some(Duration::from_millis(50)))
            .unwrap();
        let got = Arc::new(Mutex::new(Vec::<String>::new()));
        let stop = Arc::new(AtomicBool::new(false));
        let receiver = {
            let (got, stop) = (got.clone(), stop.clone());
            std::thread::spawn(move || {
                let mut buf = [0u8; 1024];
                while !stop.load(Ordering::SeqCst) {
                    if let Ok(n) = sock.recv(&mut buf) {
                        got.lock()
                            .unwrap()
                            .push(String::from_utf8_lossy(&buf[..n]).into_owned());
                    }
                }
            })
        };
        let out = lab.sh(&format!(
            "echo SANDBOX-UP; $H/sockets dgram {} {marker}",
            path.display()
        ));
        std::thread::sleep(Duration::from_millis(200));
        stop.store(true, Ordering::SeqCst);
        receiver.join().unwrap();
        v.check(Lab::started(&out), || {
            lab.label(&format!("the sandbox did not start:\n{}", text(&out)))
        });
        let got = got.lock().unwrap();
        v.check(got.is_empty(), || {
            lab.label(&format!("the host socket received {got:?}\n{}", text(&out)))
        });
    }
    v.done();
}

// ---------------------------------------------------------------------------
// 5. A directory descriptor on stdio

/// A directory on descriptor 0, 1 or 2 is refused (exit 2, nothing starts):
/// through `/proc/self/fd/N/` it would read the denied directory, and
/// through `/proc/self/fd/N/..` write anywhere the caller may.
#[test]
#[cfg_attr(
    any(
        sealc_no_bwrap,
        sealc_cannot_become = "sealc-test",
        sealc_no_tool = "gcc"
    ),
    ignore = "needs root, bubblewrap, setpriv, gcc and the user sealc-test"
)]
fn escape_05_a_directory_on_stdio_is_refused() {
    let mut v = Verdict::default();
    for who in CALLERS {
        let Some(lab) = Lab::new(who, &Shape::default()) else {
            return;
        };
        for fd in 0..3 {
            let script = format!(
                "touch $WS/started-{fd}; cat /proc/$$/fd/{fd}/answers.txt >&{o}; ls /proc/$$/fd/{fd}/ >&{o}; \
                 echo pwned > /proc/$$/fd/{fd}/../outside/pwned-{fd}",
                o = if fd == 1 { 2 } else { 1 }
            );
            let dir = || Stdio::from(File::open(lab.path("secret")).unwrap());
            let mut cmd = lab.sh_cmd(&[], &script);
            let stdin = match fd {
                0 => Some(dir()),
                1 => {
                    cmd.stdout(dir());
                    None
                }
                _ => {
                    cmd.stderr(dir());
                    None
                }
            };
            // `output_within` pipes stdout and stderr; keep the directory.
            let out = run_with_stdio(cmd, stdin, fd);
            let all = text(&out);
            let what = format!("a directory on fd {fd}");
            v.check(out.status.code() == Some(125), || {
                lab.label(&format!("{what}: exit is not 125:\n{all}"))
            });
            v.check(!all.contains(SECRET), || {
                lab.label(&format!("{what}: the denied file was read:\n{all}"))
            });
            v.check(!lab.path(&format!("outside/pwned-{fd}")).exists(), || {
                lab.label(&format!("{what}: wrote outside the write roots"))
            });
            v.check(!lab.path(&format!("ws/started-{fd}")).exists(), || {
                lab.label(&format!("{what}: the command started"))
            });
        }
    }
    v.done();
}

/// Like [`output_within`], but descriptor `keep` (1 or 2) stays what the
/// command was given; the other one is captured.
fn run_with_stdio(mut cmd: Command, stdin: Option<Stdio>, keep: i32) -> Output {
    cmd.stdin(stdin.unwrap_or_else(Stdio::null));
    if keep != 1 {
        cmd.stdout(Stdio::piped());
    }
    if keep != 2 {
        cmd.stderr(Stdio::piped());
    }
    let mut child = cmd.spawn().expect("spawn");
    let read = |s: Option<Box<dyn Read + Send>>| {
        std::thread::spawn(move || {
            let mut v = Vec::new();
            if let Some(mut s) = s {
                let _ = s.read_to_end(&mut v);
            }
            v
        })
    };
    let o = read(
        child
            .stdout
            .take()
            .map(|s| Box::new(s) as Box<dyn Read + Send>),
    );
    let e = read(
        child
            .stderr
            .take()
            .map(|s| Box::new(s) as Box<dyn Read + Send>),
    );
    let (status, _) = wait_within(&mut child, DEADLINE);
    Output {
        status,
        stdout: o.join().unwrap(),
        stderr: e.join().unwrap(),
    }
}

// ---------------------------------------------------------------------------
// 6. The caller's terminal

/// A pseudo-terminal pair opened by the test; the slave is nobody's
/// controlling terminal.
struct Pty {
    master: File,
    slave: File,
}

#[allow(unsafe_code)]
fn open_pty() -> Pty {
    // SAFETY: plain libc calls on descriptors this function owns; every
    // return value is checked before it is used.
    unsafe {
        let m = libc::posix_openpt(libc::O_RDWR | libc::O_NOCTTY);
        assert!(m >= 0, "posix_openpt");
        let master = File::from_raw_fd(m);
        assert_eq!(libc::grantpt(m), 0, "grantpt");
        assert_eq!(libc::unlockpt(m), 0, "unlockpt");
        let mut name = [0 as libc::c_char; 128];
        assert_eq!(libc::ptsname_r(m, name.as_mut_ptr(), name.len()), 0);
        let s = libc::open(name.as_ptr(), libc::O_RDWR | libc::O_NOCTTY);
        assert!(s >= 0, "open the slave");
        Pty {
            master,
            slave: File::from_raw_fd(s),
        }
    }
}

/// The settings of a terminal a host program relies on.
#[derive(Debug, PartialEq, Eq)]
struct TtyState {
    iflag: u32,
    oflag: u32,
    cflag: u32,
    lflag: u32,
    cc: Vec<u8>,
    rows: u16,
    cols: u16,
}

#[allow(unsafe_code)]
fn tty_state(f: &File) -> TtyState {
    // SAFETY: `tcgetattr` and `TIOCGWINSZ` fill the structs given; the
    // descriptor is open for the whole call.
    unsafe {
        let mut t: libc::termios = std::mem::zeroed();
        assert_eq!(libc::tcgetattr(f.as_raw_fd(), &mut t), 0);
        let mut w: libc::winsize = std::mem::zeroed();
        assert_eq!(libc::ioctl(f.as_raw_fd(), libc::TIOCGWINSZ, &mut w), 0);
        TtyState {
            iflag: t.c_iflag,
            oflag: t.c_oflag,
            cflag: t.c_cflag,
            lflag: t.c_lflag,
            cc: t.c_cc.to_vec(),
            rows: w.ws_row,
            cols: w.ws_col,
        }
    }
}

#[allow(unsafe_code)]
fn set_winsize(f: &File, rows: u16, cols: u16) {
    let w = libc::winsize {
        ws_row: rows,
        ws_col: cols,
        ws_xpixel: 0,
        ws_ypixel: 0,
    };
    // SAFETY: `TIOCSWINSZ` reads the struct given.
    assert_eq!(
        unsafe { libc::ioctl(f.as_raw_fd(), libc::TIOCSWINSZ, &w) },
        0
    );
}

/// Raw and non-blocking, then everything that is waiting to be read.
#[allow(unsafe_code)]
fn drain(f: &File, make_raw: bool) -> String {
    let fd = f.as_raw_fd();
    // SAFETY: termios and fcntl calls on an open descriptor.
    unsafe {
        if make_raw {
            let mut t: libc::termios = std::mem::zeroed();
            if libc::tcgetattr(fd, &mut t) == 0 {
                libc::cfmakeraw(&mut t);
                libc::tcsetattr(fd, libc::TCSANOW, &t);
            }
        }
        let flags = libc::fcntl(fd, libc::F_GETFL);
        libc::fcntl(fd, libc::F_SETFL, flags | libc::O_NONBLOCK);
    }
    let mut got = Vec::new();
    let mut buf = [0u8; 4096];
    let mut f = f;
    while let Ok(n) = f.read(&mut buf) {
        if n == 0 {
            break;
        }
        got.extend_from_slice(&buf[..n]);
    }
    String::from_utf8_lossy(&got).into_owned()
}

/// The caller's terminal (a pty the test holds, nobody's controlling
/// terminal) on stdin, stdout and stderr: the agent cannot make it its
/// controlling terminal and push input into it (TIOCSCTTY + TIOCSTI, read by
/// the next host reader), nor change its settings (`stty -echo`,
/// `tcsetattr`) or its window size (`stty cols 7`, TIOCSWINSZ).
#[test]
#[cfg_attr(
    any(
        sealc_no_bwrap,
        sealc_cannot_become = "sealc-test",
        sealc_no_tool = "gcc"
    ),
    ignore = "needs root, bubblewrap, setpriv, gcc and the user sealc-test"
)]
fn escape_06_the_callers_terminal_is_out_of_reach() {
    let mut v = Verdict::default();
    let inject = "TIOCSTI-INJECTED-9a7c";
    for who in CALLERS {
        let Some(lab) = Lab::new(who, &Shape::default()) else {
            return;
        };
        let pty = open_pty();
        set_winsize(&pty.slave, 24, 80);
        let before = tty_state(&pty.slave);
        let mut cmd = lab.sh_cmd(
            &[],
            &format!(
                "echo SANDBOX-UP; $H/tty {inject}; stty -echo -icanon; stty cols 7 rows 3; echo TTY-DONE"
            ),
        );
        cmd.stdin(pty.slave.try_clone().unwrap())
            .stdout(pty.slave.try_clone().unwrap())
            .stderr(pty.slave.try_clone().unwrap());
        let mut child = cmd.spawn().unwrap();
        let (status, late) = wait_within(&mut child, DEADLINE);
        let after = tty_state(&pty.slave);
        let shown = drain(&pty.master, false);
        let input = drain(&pty.slave, true);
        let report = format!(
            "exit {:?}{}\n--- the terminal showed\n{shown}\n--- input waiting for the next reader\n{input:?}",
            status.code(),
            if late { " (killed: no exit)" } else { "" }
        );
        v.check(!late && shown.contains("TTY-DONE"), || {
            lab.label(&format!("the sandbox did not run to the end:\n{report}"))
        });
        v.check(!input.contains(inject) && !shown.contains(inject), || {
            lab.label(&format!(
                "input was injected into the caller's terminal:\n{report}"
            ))
        });
        v.check(before == after, || {
            lab.label(&format!(
                "the caller's terminal settings changed:\nbefore {before:?}\nafter  {after:?}\n{report}"
            ))
        });
    }
    v.done();
}

// ---------------------------------------------------------------------------
// 7. Start-up race

#[allow(unsafe_code)]
fn exchange(a: &Path, b: &Path) -> bool {
    let a = CString::new(a.as_os_str().as_encoded_bytes()).unwrap();
    let b = CString::new(b.as_os_str().as_encoded_bytes()).unwrap();
    // SAFETY: two NUL-terminated paths that live across the call.
    unsafe {
        libc::renameat2(
            libc::AT_FDCWD,
            a.as_ptr(),
            libc::AT_FDCWD,
            b.as_ptr(),
            libc::RENAME_EXCHANGE,
        ) == 0
    }
}

/// While `sealc exec` starts, again and again, a host thread swaps a write
/// root for a symlink to the denied directory and back (atomically, with
/// `RENAME_EXCHANGE`). No run may read the denied file through the write
/// root or write into the denied directory. 100 runs per caller: where the
/// race exists, 1 to 5 in 100 win it here, so 40 often miss it. The
/// swapping thread never yields: the faster it flips, the more often a
/// swap falls between the two lookups of one `mount` call.
#[test]
#[cfg_attr(
    any(
        sealc_no_bwrap,
        sealc_cannot_become = "sealc-test",
        sealc_no_tool = "gcc"
    ),
    ignore = "needs root, bubblewrap, setpriv, gcc and the user sealc-test"
)]
fn escape_07_swapping_a_write_root_during_start_up_redirects_nothing() {
    const RUNS: usize = 100;
    let mut v = Verdict::default();
    for who in CALLERS {
        let Some(lab) = Lab::new(who, &Shape::default()) else {
            return;
        };
        std::fs::write(lab.path("ws/probe.txt"), "WS-PROBE\n").unwrap();
        let swap = lab.path("ws-swap");
        std::os::unix::fs::symlink(lab.path("secret"), &swap).unwrap();
        let before = snapshot(&lab.path("secret"));
        let stop = Arc::new(AtomicBool::new(false));
        let racer = {
            let (ws, swap, stop) = (lab.path("ws"), swap.clone(), stop.clone());
            std::thread::spawn(move || {
                let (mut swaps, mut x) = (0u64, 0x9e37_79b9_u32);
                while !stop.load(Ordering::SeqCst) {
                    if exchange(&ws, &swap) {
                        assert!(exchange(&ws, &swap), "cannot swap the write root back");
                        swaps += 1;
                    }
                    // A random stay in the good state (0 to ~50 µs): runs
                    // then also get past the checks made before the mounts,
                    // so the swap lands on every step of start-up, the
                    // mounts included, instead of being caught up front.
                    x ^= x << 13;
                    x ^= x >> 17;
                    x ^= x << 5;
                    let until = Instant::now() + Duration::from_nanos(u64::from(x % 50_000));
                    while Instant::now() < until {
                        std::hint::spin_loop();
                    }
                }
                swaps
            })
        };
        let (mut started, mut leaks) = (0, Vec::new());
        for i in 0..RUNS {
            let out = lab.sh(&format!(
                "echo SANDBOX-UP; cat $WS/probe.txt; cat $WS/answers.txt; ls $WS; echo raced > $WS/raced-{i}"
            ));
            if Lab::started(&out) {
                started += 1;
            }
            if all(&out).contains(SECRET) {
                leaks.push(format!("run {i}:\n{}", text(&out)));
            }
        }
        stop.store(true, Ordering::SeqCst);
        let swaps = racer.join().unwrap();
        assert!(
            std::fs::symlink_metadata(lab.path("ws")).unwrap().is_dir(),
            "the write root was left swapped"
        );
        eprintln!(
            "{}: {started} of {RUNS} runs started, {swaps} swaps",
            lab.label("start-up race")
        );
        v.check(leaks.is_empty(), || {
            lab.label(&format!(
                "the denied file was read through a swapped write root in {} of {RUNS} runs:\n{}",
                leaks.len(),
                leaks.join("\n")
            ))
        });
        let after = snapshot(&lab.path("secret"));
        v.check(before == after, || {
            lab.label(&format!(
                "the denied directory was written:\nbefore {before:#?}\nafter {after:#?}"
            ))
        });
        v.check(started > 0, || {
            lab.label("no run started at all, so the race was never tried")
        });
    }
    v.done();
}

// ---------------------------------------------------------------------------
// 8. Cross-run move

/// `write = [ws]`, `deny_read = [ws/a/secret]`: run 1 renames `ws/a` to
/// `ws/a2` and leaves a decoy `ws/a/secret`. Run 2 must refuse (exit 1,
/// nothing starts), saying that a denied root moved, never advising to
/// compile again (which would expose it). A denied root that is a symlink
/// inside a write root is refused when compiling.
#[test]
#[cfg_attr(
    any(
        sealc_no_bwrap,
        sealc_cannot_become = "sealc-test",
        sealc_no_tool = "gcc"
    ),
    ignore = "needs root, bubblewrap, setpriv, gcc and the user sealc-test"
)]
fn escape_08_a_denied_root_moved_between_runs_is_refused() {
    let mut v = Verdict::default();
    for who in CALLERS {
        let Some(env) = env() else {
            return;
        };
        let lab = Lab::layout(who, env);
        std::fs::create_dir_all(lab.path("ws/a/secret")).unwrap();
        std::fs::write(lab.path("ws/a/secret/answers.txt"), SECRET).unwrap();
        if who == Caller::User {
            give_to_user(&lab.path("ws"), env);
        }
        lab.compile_ok(
            &Shape {
                deny: &["ws/a/secret"],
                ..Shape::default()
            }
            .spec(),
        );
        let run1 = lab.sh(
            "echo SANDBOX-UP; mv $WS/a $WS/a2 && mkdir -p $WS/a/secret && echo decoy > $WS/a/secret/answers.txt && echo MOVED",
        );
        let moved = lab.path("ws/a2/secret/answers.txt").exists();
        let run2 = lab.sh(
            "echo SANDBOX-UP; touch $WS/started; cat $WS/a2/secret/answers.txt; cat $WS/a/secret/answers.txt; true",
        );
        let all2 = text(&run2);
        v.check(!all2.contains(SECRET), || {
            lab.label(&format!("run 2 read the moved denied root:\n{all2}"))
        });
        if moved {
            let err = String::from_utf8_lossy(&run2.stderr);
            v.check(run2.status.code() == Some(125), || {
                lab.label(&format!(
                    "run 2 after the move is not refused (exit 125):\n{all2}"
                ))
            });
            v.check(err.contains("moved"), || {
                lab.label(&format!(
                    "run 2's refusal does not say the denied root moved:\n{all2}"
                ))
            });
            v.check(!err.contains("compile the seal again"), || {
                lab.label(&format!(
                    "run 2 advises compiling again, which would expose the moved root:\n{all2}"
                ))
            });
            v.check(!lab.path("ws/started").exists(), || {
                lab.label("run 2 started the command")
            });
        } else {
            // The rename itself was refused: nothing moved, nothing to refuse.
            eprintln!(
                "{}",
                lab.label(&format!(
                    "run 1 could not move the denied root:\n{}",
                    text(&run1)
                ))
            );
        }
    }

    // A denied root that is a symlink inside a write root: compile error.
    let Some(env) = env() else {
        return;
    };
    let lab = Lab::layout(Caller::Root, env);
    std::fs::create_dir_all(lab.path("ws/real")).unwrap();
    std::fs::write(lab.path("ws/real/answers.txt"), SECRET).unwrap();
    std::os::unix::fs::symlink(lab.path("ws/real"), lab.path("ws/link")).unwrap();
    let out = lab.compile(
        &Shape {
            deny: &["ws/link"],
            ..Shape::default()
        }
        .spec(),
    );
    v.check(out.status.code() == Some(2), || {
        format!(
            "a denied root that is a symlink inside a write root compiles:\n{}",
            text(&out)
        )
    });
    v.check(!lab.record().exists(), || {
        "a record was written for a denied symlink inside a write root".into()
    });
    v.done();
}

// ---------------------------------------------------------------------------
// 9. Loader variables reach the sandbox builder

/// `[env] set LD_PRELOAD` is a compile error unless
/// `[env] allow_loader_vars = true`; with it, a library that run 1 puts into
/// the write root is never loaded outside the sandbox in run 2 (its
/// constructor leaves a mark in `outside/`, which only a process outside the
/// sandbox can write).
#[test]
#[cfg_attr(
    any(
        sealc_no_bwrap,
        sealc_cannot_become = "sealc-test",
        sealc_no_tool = "gcc"
    ),
    ignore = "needs root, bubblewrap, setpriv, gcc and the user sealc-test"
)]
fn escape_09_loader_variables_never_reach_the_builder() {
    let mut v = Verdict::default();
    for who in CALLERS {
        let Some(env) = env() else {
            return;
        };
        let lab = Lab::layout(who, env);
        let mark = lab.path("outside/preload-mark");
        std::fs::create_dir_all(lab.path("build")).unwrap();
        chmod(&lab.path("build"), 0o755);
        let out = Command::new("gcc")
            .args(["-shared", "-fPIC", "-O1", "-o"])
            .arg(lab.path("build/preload.so"))
            .arg(format!("-DMARK=\"{}\"", mark.display()))
            .arg(common::root().join("tests/attacks/preload.c"))
            .output()
            .unwrap();
        assert!(out.status.success(), "gcc: {}", text(&out));
        let set: &[(&str, &str)] = &[("LD_PRELOAD", "${lab}/ws/evil.so")];
        let without = lab.compile(
            &Shape {
                set,
                ..Shape::default()
            }
            .spec(),
        );
        v.check(without.status.code() == Some(2), || {
            lab.label(&format!(
                "`[env] set LD_PRELOAD` compiles without `allow_loader_vars`:\n{}",
                text(&without)
            ))
        });
        let with = lab.compile(
            &Shape {
                set,
                env: "allow_loader_vars = true",
                ..Shape::default()
            }
            .spec(),
        );
        v.check(with.status.code() == Some(0), || {
            lab.label(&format!(
                "`allow_loader_vars = true` does not compile:\n{}",
                text(&with)
            ))
        });
        if !lab.record().exists() {
            continue;
        }
        // Whichever seal compiled (today: the one without the opt-in).
        let run1 = lab.sh("echo SANDBOX-UP; cp $T/build/preload.so $WS/evil.so && echo PLANTED");
        let run2 = lab.sh("echo SANDBOX-UP");
        v.check(stdout(&run1).contains("PLANTED"), || {
            lab.label(&format!(
                "run 1 could not plant the library:\n{}",
                text(&run1)
            ))
        });
        v.check(!mark.exists(), || {
            lab.label(&format!(
                "the planted LD_PRELOAD library ran outside the sandbox: {}\nrun 2:\n{}",
                std::fs::read_to_string(&mark).unwrap_or_default().trim(),
                text(&run2)
            ))
        });
    }
    v.done();
}

// ---------------------------------------------------------------------------
// 10. The sandbox builder inside a write root

/// A fake bubblewrap that leaves a mark in `outside/`, then runs the real one.
fn fake_bwrap(lab: &Lab) -> String {
    format!(
        "#!/bin/sh\necho \"ran as $(id -u)\" >> {}\nexec /usr/bin/bwrap \"$@\"\n",
        lab.path("outside/fake-bwrap-ran").display()
    )
}

/// `[exec] bwrap` inside a write root is a compile error; and a bubblewrap
/// whose content changed since compiling is drift (exit 1, nothing starts,
/// the replacement never runs).
#[test]
#[cfg_attr(
    any(
        sealc_no_bwrap,
        sealc_cannot_become = "sealc-test",
        sealc_no_tool = "gcc"
    ),
    ignore = "needs root, bubblewrap, setpriv, gcc and the user sealc-test"
)]
fn escape_10_a_replaced_builder_never_runs() {
    let mut v = Verdict::default();
    for who in CALLERS {
        let Some(env) = env() else {
            return;
        };

        // `[exec] bwrap` in a write root.
        let lab = Lab::layout(who, env);
        std::fs::copy("/usr/bin/bwrap", lab.path("ws/bwrap")).unwrap();
        chmod(&lab.path("ws/bwrap"), 0o755);
        if who == Caller::User {
            give_to_user(&lab.path("ws"), env);
        }
        let out = lab.compile(
            &Shape {
                exec: "bwrap = \"${lab}/ws/bwrap\"",
                ..Shape::default()
            }
            .spec(),
        );
        v.check(out.status.code() == Some(2), || {
            lab.label(&format!(
                "`[exec] bwrap` inside a write root compiles:\n{}",
                text(&out)
            ))
        });
        if lab.record().exists() {
            // What that allows: run 1 replaces it, run 2 runs the replacement.
            let fake = fake_bwrap(&lab);
            let run1 = lab.sh(&format!(
                "echo SANDBOX-UP; cat > $WS/bwrap.new <<'EOF'\n{fake}EOF\nchmod 755 $WS/bwrap.new && mv $WS/bwrap.new $WS/bwrap && echo REPLACED"
            ));
            let run2 = lab.sh("echo SANDBOX-UP");
            v.check(!lab.path("outside/fake-bwrap-ran").exists(), || {
                lab.label(&format!(
                    "the agent's replacement of `[exec] bwrap` ran outside the sandbox:\nrun 1:\n{}\nrun 2:\n{}",
                    text(&run1),
                    text(&run2)
                ))
            });
        }

        // `[exec] bwrap` outside the write roots, replaced after compiling.
        let lab = Lab::layout(who, env);
        std::fs::create_dir_all(lab.path("tools")).unwrap();
        chmod(&lab.path("tools"), 0o755);
        std::fs::copy("/usr/bin/bwrap", lab.path("tools/bwrap")).unwrap();
        chmod(&lab.path("tools/bwrap"), 0o755);
        lab.compile_ok(
            &Shape {
                exec: "bwrap = \"${lab}/tools/bwrap\"",
                ..Shape::default()
            }
            .spec(),
        );
        let before = lab.sh("echo SANDBOX-UP");
        v.check(Lab::started(&before), || {
            lab.label(&format!(
                "the seal with a copied bubblewrap does not run:\n{}",
                text(&before)
            ))
        });
        std::fs::write(lab.path("tools/bwrap"), fake_bwrap(&lab)).unwrap();
        let out = lab.sh("echo SANDBOX-UP; touch $WS/started");
        let all = text(&out);
        v.check(out.status.code() == Some(125), || {
            lab.label(&format!(
                "a replaced `[exec] bwrap` is not drift (exit 125):\n{all}"
            ))
        });
        v.check(!lab.path("outside/fake-bwrap-ran").exists(), || {
            lab.label(&format!("the replaced `[exec] bwrap` ran:\n{all}"))
        });
        v.check(!lab.path("ws/started").exists(), || {
            lab.label("the command started under a replaced `[exec] bwrap`")
        });
    }
    v.done();
}

// ---------------------------------------------------------------------------
// 11. Provenance

/// `sealc exec RECORD --expect sha256:<binding>` runs only the seal with
/// that binding: a consistent record recompiled from an edited spec is
/// refused (exit 1, nothing starts), the reviewed one runs. `sealc verify
/// --expect` passes or refuses the same records.
#[test]
#[cfg_attr(
    any(
        sealc_no_bwrap,
        sealc_cannot_become = "sealc-test",
        sealc_no_tool = "gcc"
    ),
    ignore = "needs root, bubblewrap, setpriv, gcc and the user sealc-test"
)]
fn escape_11_expect_pins_the_reviewed_seal() {
    let mut v = Verdict::default();
    for who in CALLERS {
        let Some(lab) = Lab::new(who, &Shape::default()) else {
            return;
        };
        let reviewed = lab.binding();
        let zeros = format!("sha256:{}", "0".repeat(64));
        let out = output_within(
            lab.sh_cmd(&["--expect", &zeros], "touch $WS/started-zeros"),
            None,
            DEADLINE,
        );
        v.check(out.status.code() == Some(125), || {
            lab.label(&format!(
                "`--expect` of another binding: exit is not 125:\n{}",
                text(&out)
            ))
        });
        v.check(!lab.path("ws/started-zeros").exists(), || {
            lab.label("`--expect` of another binding: the command started")
        });

        // The spec edited (the outside directory made writable) and
        // recompiled: a consistent record, not the reviewed one.
        let edited = Shape::default()
            .spec()
            .replace("\"${lab}/tmp\"]", "\"${lab}/tmp\", \"${lab}/outside\"]");
        lab.compile_ok(&edited);
        assert_ne!(lab.binding(), reviewed);
        let out = output_within(
            lab.sh_cmd(
                &["--expect", &reviewed],
                "touch $WS/started-edited; echo pwned > $OUT/pwned",
            ),
            None,
            DEADLINE,
        );
        v.check(out.status.code() == Some(125), || {
            lab.label(&format!(
                "`--expect` of the reviewed binding ran an edited seal (exit is not 125):\n{}",
                text(&out)
            ))
        });
        v.check(
            !lab.path("ws/started-edited").exists() && !lab.path("outside/pwned").exists(),
            || lab.label("`--expect` of the reviewed binding: the edited seal started"),
        );

        // `sealc verify --expect` pins it the same way.
        let verify = |expect: &str| {
            let mut c = lab.sealc(&[]);
            c.arg("verify").arg(lab.record()).args(["--expect", expect]);
            output_within(c, None, DEADLINE)
        };
        let out = verify(&reviewed);
        v.check(out.status.code() == Some(1), || {
            lab.label(&format!(
                "`verify --expect` of the reviewed binding passes an edited seal (exit is not 1):\n{}",
                text(&out)
            ))
        });
        let out = verify(&lab.binding());
        v.check(out.status.code() == Some(0), || {
            lab.label(&format!(
                "`verify --expect` of the record's own binding does not pass:\n{}",
                text(&out)
            ))
        });

        // The record's own binding runs.
        let own = lab.binding();
        let out = output_within(
            lab.sh_cmd(&["--expect", &own], "touch $WS/started-own"),
            None,
            DEADLINE,
        );
        v.check(
            out.status.code() == Some(0) && lab.path("ws/started-own").exists(),
            || {
                lab.label(&format!(
                    "`--expect` of the record's own binding does not run:\n{}",
                    text(&out)
                ))
            },
        );
    }
    v.done();
}

// ---------------------------------------------------------------------------
// 12. Denied data read through a hard link (issue 22, finding 3)

/// The grader's answer, written by the host into a denied file.
const ANSWER: &str = "GRADER-ANSWER-9b27";

/// Write `text` into the file at `p` in place, as a grader does: opened
/// `O_WRONLY|O_TRUNC` (the same inode, so every link of it reads it), not
/// replaced by a rename.
fn write_in_place(p: &Path, text: &str) {
    use std::io::Write;
    let mut f = std::fs::OpenOptions::new()
        .write(true)
        .truncate(true)
        .open(p)
        .unwrap();
    f.write_all(text.as_bytes()).unwrap();
}

/// Rendered diagnostics with the renderer's line wrapping undone.
fn flat(s: &str) -> String {
    s.lines()
        .map(|l| {
            let l = l.trim();
            l.strip_prefix('│').map_or(l, str::trim)
        })
        .collect::<Vec<_>>()
        .join(" ")
}

/// The help lines of a refusal say nothing of compiling again.
fn no_recompile(err: &str) -> bool {
    err.lines()
        .filter(|l| l.starts_with("help: "))
        .all(|l| !l.contains("compile again") && !l.contains("compile the seal again"))
}

/// Hiding a path does not hide an inode. A denied root inside a write root
/// that did not exist when compiled (the grader's folder, made later): run
/// 1 makes it, with an empty file hard-linked to `.peek` elsewhere in the
/// write root; the host writes the answer into that file in place; run 2
/// is refused as drift of its own kind (not "compile again"); a compile
/// then is refused, naming `.peek`; with `.peek` gone it compiles, and run
/// 3 reads the answer through no path. Then: a denied file that already
/// has a second link in a write root is refused at compile, and one linked
/// by a host process after compiling is refused at exec.
#[test]
#[cfg_attr(
    any(
        sealc_no_bwrap,
        sealc_cannot_become = "sealc-test",
        sealc_no_tool = "gcc"
    ),
    ignore = "needs root, bubblewrap, setpriv, gcc and the user sealc-test"
)]
fn escape_12_denied_data_is_not_read_through_a_hard_link() {
    let mut v = Verdict::default();
    let shape = Shape {
        deny: &["ws/grader"],
        ..Shape::default()
    };
    for who in CALLERS {
        let Some(env) = env() else {
            return;
        };
        let lab = Lab::layout(who, env);
        let out = lab.compile(&shape.spec());
        assert_eq!(out.status.code(), Some(0), "{}", text(&out));
        let said = flat(&String::from_utf8_lossy(&out.stderr));
        v.check(said.contains("not hidden while it is absent"), || {
            lab.label(&format!(
                "compile does not say the absent denied root is not hidden:\n{said}"
            ))
        });

        let run1 = lab.sh(
            "echo SANDBOX-UP; mkdir $WS/grader && : > $WS/grader/answer && ln $WS/grader/answer $WS/.peek && echo LINKED",
        );
        if !stdout(&run1).contains("LINKED") {
            v.check(false, || {
                lab.label(&format!(
                    "run 1 could not prepare the link:\n{}",
                    text(&run1)
                ))
            });
            continue;
        }
        // The grader, a host process, writes its answer in place.
        write_in_place(&lab.path("ws/grader/answer"), ANSWER);
        assert_eq!(
            std::fs::read_to_string(lab.path("ws/.peek")).unwrap(),
            ANSWER
        );

        let run2 = lab
            .sh("echo SANDBOX-UP; touch $WS/started; cat $WS/.peek; cat $WS/grader/answer; true");
        let all2 = text(&run2);
        let err2 = String::from_utf8_lossy(&run2.stderr).into_owned();
        v.check(!stdout(&run2).contains(ANSWER), || {
            lab.label(&format!("run 2 read the answer through the link:\n{all2}"))
        });
        v.check(
            run2.status.code() == Some(125) && !lab.path("ws/started").exists(),
            || {
                lab.label(&format!(
                    "run 2 is not refused (exit 125, nothing started):\n{all2}"
                ))
            },
        );
        v.check(
            err2.contains("was absent when compiled and exists now")
                && err2.contains("ws/.peek`"),
            || {
                lab.label(&format!(
                    "run 2's refusal does not say the denied root appeared, and where its link is:\n{all2}"
                ))
            },
        );
        v.check(no_recompile(&err2), || {
            lab.label(&format!(
                "run 2 advises compiling again, after which the link reads the answer:\n{all2}"
            ))
        });

        // The harness compiles again anyway: refused, naming the link.
        let before = lab.binding();
        let again = lab.compile(&shape.spec());
        let said = flat(&String::from_utf8_lossy(&again.stderr));
        let tight: String = said.chars().filter(|c| !c.is_whitespace()).collect();
        v.check(
            again.status.code() == Some(2)
                && said.contains("sealc::root::linked")
                && tight.contains("ws/.peek`"),
            || {
                lab.label(&format!(
                    "a compile over the linked denied root is not refused naming `.peek`:\n{}",
                    text(&again)
                ))
            },
        );
        v.check(lab.binding() == before, || {
            lab.label("the refused compile wrote a record")
        });

        // The link removed: it compiles, and run 3 reads the answer through
        // no path.
        std::fs::remove_file(lab.path("ws/.peek")).unwrap();
        let fixed = lab.compile(&shape.spec());
        v.check(fixed.status.code() == Some(0), || {
            lab.label(&format!(
                "with `.peek` gone the compile is still refused:\n{}",
                text(&fixed)
            ))
        });
        if fixed.status.code() != Some(0) {
            continue;
        }
        let run3 = lab.sh(
            "echo SANDBOX-UP; ls -la $WS $WS/grader; cat $WS/grader/answer $WS/.peek; grep -rs GRADER-ANSWER $WS $TMPD $OUT $T/seal; find $WS $TMPD -xdev -type f -links +1 -exec cat {} +; true",
        );
        let all3 = text(&run3);
        v.check(Lab::started(&run3) && run3.status.code() == Some(0), || {
            lab.label(&format!("run 3 did not run:\n{all3}"))
        });
        v.check(!all3.contains(ANSWER), || {
            lab.label(&format!("run 3 read the answer:\n{all3}"))
        });
    }

    // A denied file that already has a second link in a write root (and a
    // third outside it): the compile is refused, naming the one and
    // counting the other.
    let Some(e) = env() else {
        return;
    };
    let lab = Lab::layout(Caller::Root, e);
    std::fs::create_dir_all(lab.path("ws/grader")).unwrap();
    std::fs::create_dir_all(lab.path("ws/notes")).unwrap();
    std::fs::write(lab.path("ws/grader/answer"), ANSWER).unwrap();
    std::fs::hard_link(lab.path("ws/grader/answer"), lab.path("ws/notes/copy")).unwrap();
    std::fs::hard_link(lab.path("ws/grader/answer"), lab.path("outside/copy")).unwrap();
    let out = lab.compile(&shape.spec());
    let said = flat(&String::from_utf8_lossy(&out.stderr));
    // miette wraps a long path anywhere: compare without the spaces.
    let tight: String = said.chars().filter(|c| !c.is_whitespace()).collect();
    v.check(
        out.status.code() == Some(2)
            && said.contains("sealc::root::linked")
            && tight.contains("ws/grader/answer`isalso`")
            && tight.contains("ws/notes/copy`")
            && tight.contains("and1morelinkoutsidethewriteroots"),
        || {
            format!(
                "a denied file with a second link in a write root compiles, or is not named:\n{}",
                text(&out)
            )
        },
    );
    v.check(!lab.record().exists(), || {
        "a record was written for a denied file linked into a write root".into()
    });

    // Linked by a host process after compiling: refused at exec.
    for who in CALLERS {
        let Some(env) = env() else {
            return;
        };
        let lab = Lab::layout(who, env);
        std::fs::create_dir_all(lab.path("ws/grader")).unwrap();
        std::fs::write(lab.path("ws/grader/answer"), ANSWER).unwrap();
        if who == Caller::User {
            give_to_user(&lab.path("ws"), env);
        }
        lab.compile_ok(&shape.spec());
        std::fs::hard_link(lab.path("ws/grader/answer"), lab.path("ws/.peek")).unwrap();
        let run = lab.sh("echo SANDBOX-UP; touch $WS/started; cat $WS/.peek; true");
        let all = text(&run);
        let err = String::from_utf8_lossy(&run.stderr).into_owned();
        v.check(!stdout(&run).contains(ANSWER), || {
            lab.label(&format!(
                "a run read the answer through a link made after compiling:\n{all}"
            ))
        });
        v.check(
            run.status.code() == Some(125) && !lab.path("ws/started").exists(),
            || {
                lab.label(&format!(
                    "a link made after compiling is not refused at exec (exit 125, nothing started):\n{all}"
                ))
            },
        );
        v.check(
            err.contains("holds 1 file with another hard link") && err.contains("ws/.peek`"),
            || lab.label(&format!("the refusal does not name the link:\n{all}")),
        );
        v.check(no_recompile(&err), || {
            lab.label(&format!("the refusal advises compiling again:\n{all}"))
        });
    }
    v.done();
}

// ---------------------------------------------------------------------------
// Partial leaks

/// No new user or mount namespace (`unshare`, `clone`, `clone3`, util-linux
/// `unshare -U`), and no new mount API, in the sandbox or in any namespace
/// it could make.
#[test]
#[cfg_attr(
    any(
        sealc_no_bwrap,
        sealc_cannot_become = "sealc-test",
        sealc_no_tool = "gcc"
    ),
    ignore = "needs root, bubblewrap, setpriv, gcc and the user sealc-test"
)]
fn partial_no_new_namespaces_or_mount_api() {
    let mut v = Verdict::default();
    for who in CALLERS {
        let Some(lab) = Lab::new(who, &Shape::default()) else {
            return;
        };
        let out = lab.sh(
            "echo SANDBOX-UP; $H/ns; unshare -U true 2>/dev/null && echo 'ESCAPE unshare -U'; \
             unshare -Urm true 2>/dev/null && echo 'ESCAPE unshare -Urm'; true",
        );
        let all = text(&out);
        v.check(stdout(&out).contains("DONE"), || {
            lab.label(&format!("the probe did not run:\n{all}"))
        });
        let escapes: Vec<&str> = all.lines().filter(|l| l.starts_with("ESCAPE")).collect();
        v.check(escapes.is_empty(), || {
            lab.label(&format!("{}\n{all}", escapes.join("\n")))
        });
    }
    v.done();
}

/// Netlink is refused but for `NETLINK_ROUTE` (which the command may need):
/// no kernel uevents, audit, socket diagnostics, netfilter, ...
#[test]
#[cfg_attr(
    any(
        sealc_no_bwrap,
        sealc_cannot_become = "sealc-test",
        sealc_no_tool = "gcc"
    ),
    ignore = "needs root, bubblewrap, setpriv, gcc and the user sealc-test"
)]
fn partial_netlink_is_route_only() {
    let mut v = Verdict::default();
    for who in CALLERS {
        let Some(lab) = Lab::new(who, &Shape::default()) else {
            return;
        };
        let out = lab.sh("echo SANDBOX-UP; $H/sockets netlink");
        let so = stdout(&out);
        v.check(so.contains("made netlink route"), || {
            lab.label(&format!("NETLINK_ROUTE is refused:\n{}", text(&out)))
        });
        for line in so
            .lines()
            .filter(|l| l.starts_with("made netlink") && !l.starts_with("made netlink route"))
        {
            v.0.push(lab.label(line));
        }
    }
    v.done();
}

/// Writes outside the write roots fail whatever the call (create, append,
/// truncate, chmod, utimes, rename, link, symlink, mkdir, rmdir, unlink,
/// mkfifo, setxattr), on a host directory every user may write, on the
/// caller's cgroup limits, and also on
/// a mount the host makes there while the sandbox runs (which bubblewrap's
/// read-only binds never covered; only a second layer, such as Landlock,
/// does).
#[test]
#[cfg_attr(
    any(
        sealc_no_bwrap,
        sealc_cannot_become = "sealc-test",
        sealc_no_tool = "gcc"
    ),
    ignore = "needs root, bubblewrap, setpriv, gcc and the user sealc-test"
)]
fn partial_writes_outside_the_write_roots_fail() {
    let mut v = Verdict::default();
    let script = r#"echo SANDBOX-UP
w() { if eval "$2" 2>/dev/null; then echo "WROTE $1"; fi; }
w create "echo x > $OUT/new"
w append "echo x >> $OUT/existing"
w truncate "truncate -s 0 $OUT/existing"
w chmod "chmod 600 $OUT/existing"
w utimes "touch -d 2001-01-01 $OUT/existing"
w rename "mv $OUT/existing $OUT/renamed"
w link "ln $OUT/existing $OUT/hard"
w symlink "ln -s existing $OUT/sym"
w mkdir "mkdir $OUT/dir"
w rmdir "rmdir $OUT/emptydir"
w mkfifo "mkfifo $OUT/fifo"
w setxattr "/usr/bin/python3 -c 'import os,sys; os.setxattr(sys.argv[1], \"user.x\", b\"1\")' $OUT/existing"
w move-out "mv $OUT/existing $WS/"
w unlink "rm -f $OUT/existing"
w denied "echo x > $SECRETDIR/new"
w etc "echo x > /etc/sealc-attack"
# The caller's cgroup (v1 or v2) limits, each written with its own value.
while IFS=: read -r _ _ cg; do
  for d in /sys/fs/cgroup"$cg" /sys/fs/cgroup/*"$cg"; do
    for f in "$d"/pids.max "$d"/memory.limit_in_bytes "$d"/memory.max "$d"/cpu.shares "$d"/cpu.max; do
      [ -f "$f" ] || continue
      val=$(cat "$f" 2>/dev/null) || continue
      (printf '%s\n' "$val" > "$f") 2>/dev/null && echo "WROTE cgroup $f"
    done
  done
done < /proc/self/cgroup
true
"#;
    for who in CALLERS {
        let Some(lab) = Lab::new(who, &Shape::default()) else {
            return;
        };
        let before = snapshot(&lab.path("outside"));
        let secret = snapshot(&lab.path("secret"));
        let out = lab.sh(script);
        let all = text(&out);
        v.check(Lab::started(&out), || {
            lab.label(&format!("the sandbox did not start:\n{all}"))
        });
        for line in stdout(&out).lines().filter(|l| l.starts_with("WROTE")) {
            v.0.push(lab.label(line));
        }
        v.check(snapshot(&lab.path("outside")) == before, || {
            lab.label(&format!(
                "the outside directory changed on the host:\nbefore {before:#?}\nafter {:#?}",
                snapshot(&lab.path("outside"))
            ))
        });
        v.check(snapshot(&lab.path("secret")) == secret, || {
            lab.label("the denied directory changed on the host")
        });
        v.check(!Path::new("/etc/sealc-attack").exists(), || {
            lab.label("wrote /etc")
        });
        let _ = std::fs::remove_file("/etc/sealc-attack");

        host_mount_during_the_run(&lab, &mut v);
    }
    v.done();
}

/// Unmounts what the host mounted, even when the test fails.
struct Unmount(Vec<PathBuf>);

impl Drop for Unmount {
    fn drop(&mut self) {
        for p in self.0.iter().rev() {
            let _ = Command::new("umount").arg("-l").arg(p).status();
        }
    }
}

fn mount(args: &[&OsStr]) -> bool {
    Command::new("mount")
        .args(args)
        .stderr(Stdio::null())
        .status()
        .is_ok_and(|s| s.success())
}

/// The host mounts a tmpfs (writable by everyone) outside the write roots
/// while the sandbox runs, on a shared mount so it propagates: the agent
/// sees it and must still not write it.
fn host_mount_during_the_run(lab: &Lab, v: &mut Verdict) {
    let shared = lab.path("outside/shared");
    let sub = shared.join("sub");
    std::fs::create_dir_all(&sub).unwrap();
    chmod(&shared, 0o777);
    chmod(&sub, 0o777);
    let mut mounted = Unmount(Vec::new());
    // The lab's directory made a shared mount point, as `/` is on systemd
    // hosts, so a mount under it reaches the sandbox.
    if !mount(&[shared.as_os_str(), shared.as_os_str(), OsStr::new("--bind")]) {
        v.0.push(lab.label("cannot bind-mount the shared directory (mount failed)"));
        return;
    }
    mounted.0.push(shared.clone());
    assert!(mount(&[OsStr::new("--make-shared"), shared.as_os_str()]));
    let script = format!(
        "echo SANDBOX-UP; touch $WS/waiting; \
         for i in $(seq 200); do [ -e {sub}/ready ] && break; sleep 0.05; done; \
         [ -e {sub}/ready ] && echo SAW-HOST-MOUNT; \
         (echo x > {sub}/pwned) 2>/dev/null && echo 'WROTE host mount'; \
         mkdir {sub}/dir 2>/dev/null && echo 'WROTE host mount (mkdir)'; true",
        sub = sub.display()
    );
    let mut cmd = lab.sh_cmd(&[], &script);
    cmd.stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    let mut child = cmd.spawn().unwrap();
    let end = Instant::now() + Duration::from_secs(20);
    while !lab.path("ws/waiting").exists() && Instant::now() < end {
        if child.try_wait().unwrap().is_some() {
            break;
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    let opts = OsStr::new("mode=0777");
    if mount(&[
        OsStr::new("-t"),
        OsStr::new("tmpfs"),
        OsStr::new("-o"),
        opts,
        OsStr::new("sealc-attack"),
        sub.as_os_str(),
    ]) {
        mounted.0.push(sub.clone());
        std::fs::write(sub.join("ready"), "").unwrap();
    } else {
        v.0.push(lab.label("cannot mount a tmpfs on the host"));
    }
    let (status, _) = wait_within(&mut child, DEADLINE);
    let mut so = String::new();
    let _ = child.stdout.take().unwrap().read_to_string(&mut so);
    let mut se = String::new();
    let _ = child.stderr.take().unwrap().read_to_string(&mut se);
    let report = format!("exit {:?}\n--- stdout\n{so}--- stderr\n{se}", status.code());
    eprintln!(
        "{}: the sandbox {} the host's new mount",
        lab.label("host mount during the run"),
        if so.contains("SAW-HOST-MOUNT") {
            "saw"
        } else {
            "did not see"
        }
    );
    v.check(!so.contains("WROTE"), || {
        lab.label(&format!(
            "wrote a mount the host made during the run:\n{report}"
        ))
    });
    v.check(
        !sub.join("pwned").exists() && !sub.join("dir").exists(),
        || lab.label("a host mount made during the run was written"),
    );
    drop(mounted);
}

/// The caller's `RLIMIT_NPROC` holds inside (uid 0 is exempt from it, so a
/// root caller's agent ignored it): with a limit of 64 processes, the agent
/// cannot fork 200.
#[test]
#[cfg_attr(
    any(
        sealc_no_bwrap,
        sealc_cannot_become = "sealc-test",
        sealc_no_tool = "gcc"
    ),
    ignore = "needs root, bubblewrap, setpriv, gcc and the user sealc-test"
)]
fn partial_the_callers_process_limit_holds() {
    const LIMIT: usize = 64;
    let mut v = Verdict::default();
    let script = r#"echo SANDBOX-UP
/usr/bin/python3 - <<'PY'
import os, signal, time
kids = []
for i in range(200):
    try:
        pid = os.fork()
    except OSError:
        break
    if pid == 0:
        time.sleep(30)
        os._exit(0)
    kids.append(pid)
print("FORKED", len(kids))
for pid in kids:
    os.kill(pid, signal.SIGKILL)
    os.waitpid(pid, 0)
PY
"#;
    for who in CALLERS {
        let Some(lab) = Lab::new(who, &Shape::default()) else {
            return;
        };
        let nproc = format!("--nproc={LIMIT}:{LIMIT}");
        let out = output_within(
            lab.sh_under(&["/usr/bin/prlimit", &nproc, "--"], script),
            None,
            DEADLINE,
        );
        let forked = stdout(&out)
            .lines()
            .find_map(|l| l.strip_prefix("FORKED ")?.parse::<usize>().ok());
        v.check(forked.is_some_and(|n| n < LIMIT), || {
            lab.label(&format!(
                "RLIMIT_NPROC={LIMIT} did not hold inside:\n{}",
                text(&out)
            ))
        });
    }
    v.done();
}

// ---------------------------------------------------------------------------
// Termination

/// The processes whose `argv[0]` is `marker` (set with `exec -a`).
fn survivors(marker: &str) -> Vec<(i32, String)> {
    let mut found = Vec::new();
    for e in std::fs::read_dir("/proc").unwrap().flatten() {
        let Some(pid) = e.file_name().to_str().and_then(|n| n.parse::<i32>().ok()) else {
            continue;
        };
        if let Ok(s) = std::fs::read(e.path().join("cmdline")) {
            let s = String::from_utf8_lossy(&s).replace('\0', " ");
            if s.starts_with(&format!("{marker} ")) {
                found.push((pid, s));
            }
        }
    }
    found
}

fn wait_gone(marker: &str, limit: Duration) -> Vec<(i32, String)> {
    let end = Instant::now() + limit;
    loop {
        let s = survivors(marker);
        if s.is_empty() || Instant::now() > end {
            return s;
        }
        std::thread::sleep(Duration::from_millis(50));
    }
}

/// Kills whatever a termination test left behind (the processes it started,
/// found by their marker), so one failure does not leave stopped processes.
struct Reap(String);

impl Drop for Reap {
    fn drop(&mut self) {
        for (pid, _) in survivors(&self.0) {
            if let Some(p) = rustix::process::Pid::from_raw(pid) {
                let _ = rustix::process::kill_process(p, rustix::process::Signal::KILL);
            }
        }
    }
}

/// Inside: a stopped process, a process traced by its parent, and pid 1
/// left stopped by a bare attach (when ptrace is allowed at all); `trap`
/// sets what the shell does with `SIGTERM`.
fn stubborn_script(marker: &str, trap: &str) -> String {
    format!(
        "trap {trap} TERM
(exec -a {marker} $H/ptrace --selfstop) &
(exec -a {marker} $H/ptrace --traceme) &
$H/ptrace --stop 1
sleep 0.2
echo ready > $WS/ready
wait; wait"
    )
}

/// Start the stubborn sandbox and wait until it is in place.
fn start_stubborn(lab: &Lab, marker: &str, trap: &str) -> Result<Child, String> {
    let mut child = lab
        .sh_cmd(&[], &stubborn_script(marker, trap))
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let started = Instant::now();
    let end = started + Duration::from_secs(20);
    while !(lab.path("ws/ready").exists() && survivors(marker).len() >= 3) {
        let exited = child.try_wait().unwrap();
        if Instant::now() > end || exited.is_some() {
            let _ = child.kill();
            let _ = child.wait();
            // What ended the wait: sealc's own exit (and its status), or
            // the deadline on a loaded machine.
            return Err(format!(
                "the stubborn processes never started: {:?} (after {:?}; sealc {})",
                survivors(marker),
                started.elapsed(),
                match exited {
                    Some(s) => format!("exited: {s}"),
                    None => "still running".to_string(),
                }
            ));
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    Ok(child)
}

/// `SIGTERM` to `sealc exec` ends everything inside, even a stopped process,
/// a traced one, and a stopped pid 1.
#[test]
#[cfg_attr(
    any(
        sealc_no_bwrap,
        sealc_cannot_become = "sealc-test",
        sealc_no_tool = "gcc"
    ),
    ignore = "needs root, bubblewrap, setpriv, gcc and the user sealc-test"
)]
fn termination_sigterm_ends_everything_inside() {
    let mut v = Verdict::default();
    for who in CALLERS {
        let Some(lab) = Lab::new(who, &Shape::default()) else {
            return;
        };
        let marker = format!("zz-term-{}", if who == Caller::Root { "r" } else { "u" });
        let _reap = Reap(marker.clone());
        let mut child = match start_stubborn(&lab, &marker, "'exit 9'") {
            Ok(c) => c,
            Err(e) => {
                v.0.push(lab.label(&e));
                continue;
            }
        };
        rustix::process::kill_process(
            rustix::process::Pid::from_child(&child),
            rustix::process::Signal::TERM,
        )
        .unwrap();
        let (status, late) = wait_within(&mut child, Duration::from_secs(15));
        v.check(!late, || {
            lab.label("`sealc exec` did not end within 15 s of SIGTERM")
        });
        let left = wait_gone(&marker, Duration::from_secs(5));
        v.check(left.is_empty(), || {
            lab.label(&format!("survived SIGTERM ({status:?}): {left:?}"))
        });
    }
    v.done();
}

/// The recorded timeout ends everything inside, even when the command
/// ignores `SIGTERM` and pid 1 is stopped.
#[test]
#[cfg_attr(
    any(
        sealc_no_bwrap,
        sealc_cannot_become = "sealc-test",
        sealc_no_tool = "gcc"
    ),
    ignore = "needs root, bubblewrap, setpriv, gcc and the user sealc-test"
)]
fn termination_the_timeout_ends_everything_inside() {
    let mut v = Verdict::default();
    for who in CALLERS {
        let Some(lab) = Lab::new(
            who,
            &Shape {
                timeout: Some(3),
                ..Shape::default()
            },
        ) else {
            return;
        };
        let marker = format!("zz-timeout-{}", if who == Caller::Root { "r" } else { "u" });
        let _reap = Reap(marker.clone());
        let mut child = match start_stubborn(&lab, &marker, "''") {
            Ok(c) => c,
            Err(e) => {
                v.0.push(lab.label(&e));
                continue;
            }
        };
        let (status, late) = wait_within(&mut child, Duration::from_secs(20));
        v.check(!late && status.code() == Some(124), || {
            lab.label(&format!(
                "the timeout did not end the run with 124 within 20 s: {status:?}"
            ))
        });
        let left = wait_gone(&marker, Duration::from_secs(5));
        v.check(left.is_empty(), || {
            lab.label(&format!("survived the timeout: {left:?}"))
        });
    }
    v.done();
}

/// `sealc exec` killed by `SIGKILL` takes everything inside with it.
#[test]
#[cfg_attr(
    any(
        sealc_no_bwrap,
        sealc_cannot_become = "sealc-test",
        sealc_no_tool = "gcc"
    ),
    ignore = "needs root, bubblewrap, setpriv, gcc and the user sealc-test"
)]
fn termination_a_killed_sealc_leaves_nothing_inside() {
    let mut v = Verdict::default();
    for who in CALLERS {
        let Some(lab) = Lab::new(who, &Shape::default()) else {
            return;
        };
        let marker = format!("zz-killed-{}", if who == Caller::Root { "r" } else { "u" });
        let _reap = Reap(marker.clone());
        let mut child = match start_stubborn(&lab, &marker, "''") {
            Ok(c) => c,
            Err(e) => {
                v.0.push(lab.label(&e));
                continue;
            }
        };
        child.kill().unwrap();
        let _ = child.wait();
        let left = wait_gone(&marker, Duration::from_secs(10));
        v.check(left.is_empty(), || {
            lab.label(&format!("survived the death of sealc: {left:?}"))
        });
    }
    v.done();
}

// ---------------------------------------------------------------------------
// Review (wt-review): attacks found after the battery above was closed.

/// A host unix stream socket (as a docker or D-Bus socket would be),
/// connectable by every user: what it receives, collected until `stop`.
struct HostStream {
    got: Arc<Mutex<Vec<String>>>,
    stop: Arc<AtomicBool>,
    thread: Option<std::thread::JoinHandle<()>>,
}

impl HostStream {
    fn listen(path: &Path) -> HostStream {
        let l = std::os::unix::net::UnixListener::bind(path).unwrap();
        chmod(path, 0o777);
        l.set_nonblocking(true).unwrap();
        let got = Arc::new(Mutex::new(Vec::new()));
        let stop = Arc::new(AtomicBool::new(false));
        let thread = {
            let (got, stop) = (got.clone(), stop.clone());
            std::thread::spawn(move || {
                while !stop.load(Ordering::SeqCst) {
                    match l.accept() {
                        Ok((mut c, _)) => {
                            let _ = c.set_nonblocking(false);
                            let _ = c.set_read_timeout(Some(Duration::from_secs(2)));
                            let mut s = String::new();
                            let _ = c.read_to_string(&mut s);
                            got.lock().unwrap().push(s);
                        }
                        Err(_) => std::thread::sleep(Duration::from_millis(20)),
                    }
                }
            })
        };
        HostStream {
            got,
            stop,
            thread: Some(thread),
        }
    }

    fn stop(mut self) -> Vec<String> {
        std::thread::sleep(Duration::from_millis(200));
        self.stop.store(true, Ordering::SeqCst);
        if let Some(t) = self.thread.take() {
            t.join().unwrap();
        }
        let got = self.got.lock().unwrap().clone();
        got
    }
}

/// `[env] allow_loader_vars = true` promises that a loader variable reaches
/// only the command, never a program that builds the sandbox. But sealc's
/// own `__confine` (which applies Landlock and the command's seccomp filter)
/// is started by the init with the command's environment, so a library that
/// run 1 leaves in a write root is loaded by run 2's `__confine` *before* it
/// confines anything: its constructor makes a unix socket (refused to the
/// command in modes `none` and `proxy`) and connects to a host service.
#[test]
#[cfg_attr(
    any(
        sealc_no_bwrap,
        sealc_cannot_become = "sealc-test",
        sealc_no_tool = "gcc"
    ),
    ignore = "needs root, bubblewrap, setpriv, gcc and the user sealc-test"
)]
fn review_loader_variables_never_reach_sealcs_own_helpers() {
    let mut v = Verdict::default();
    for who in CALLERS {
        let Some(env) = env() else {
            return;
        };
        let lab = Lab::layout(who, env);
        let sock = lab.path("sock/host.sock");
        std::fs::create_dir_all(lab.path("build")).unwrap();
        chmod(&lab.path("build"), 0o755);
        let out = Command::new("gcc")
            .args(["-shared", "-fPIC", "-O1", "-Wall", "-o"])
            .arg(lab.path("build/reach.so"))
            .arg(format!("-DSOCK=\"{}\"", sock.display()))
            .arg(common::root().join("tests/attacks/unix_preload.c"))
            .output()
            .unwrap();
        assert!(out.status.success(), "gcc: {}", text(&out));
        chmod(&lab.path("build/reach.so"), 0o755);
        lab.compile_ok(
            &Shape {
                set: &[("LD_PRELOAD", "${lab}/ws/evil.so")],
                env: "allow_loader_vars = true",
                ..Shape::default()
            }
            .spec(),
        );
        let run1 = lab.sh("echo SANDBOX-UP; cp $T/build/reach.so $WS/evil.so && echo PLANTED");
        v.check(stdout(&run1).contains("PLANTED"), || {
            lab.label(&format!(
                "run 1 could not plant the library:\n{}",
                text(&run1)
            ))
        });
        let host = HostStream::listen(&sock);
        let run2 = lab.sh("echo SANDBOX-UP");
        let got = host.stop();
        v.check(Lab::started(&run2), || {
            lab.label(&format!("run 2 did not start:\n{}", text(&run2)))
        });
        v.check(got.is_empty(), || {
            lab.label(&format!(
                "a loader variable reached a process inside the namespaces but outside the seccomp filter and Landlock, which connected to a host unix socket: {got:?}\nrun 2:\n{}",
                text(&run2)
            ))
        });
    }
    v.done();
}

/// A socket on stdin crosses as it is: one the caller made in the host's
/// network namespace (a UDP socket, as inetd or a socket-activated service
/// hands over) lets the command send to any address from the host's
/// namespace, past the proxy-only network.
#[test]
#[cfg_attr(
    any(
        sealc_no_bwrap,
        sealc_cannot_become = "sealc-test",
        sealc_no_tool = "gcc"
    ),
    ignore = "needs root, bubblewrap, setpriv, gcc and the user sealc-test"
)]
fn review_a_socket_on_stdin_reaches_no_host_network() {
    let mut v = Verdict::default();
    let marker = "UDP-STDIN-MARKER-7a90";
    for who in CALLERS {
        let Some(lab) = Lab::new(who, &Shape::default()) else {
            return;
        };
        let rx = std::net::UdpSocket::bind("127.0.0.1:0").unwrap();
        rx.set_read_timeout(Some(Duration::from_millis(500)))
            .unwrap();
        let port = rx.local_addr().unwrap().port();
        let given = std::net::UdpSocket::bind("127.0.0.1:0").unwrap();
        let stdin = Stdio::from(std::os::fd::OwnedFd::from(given));
        let script = format!(
            "echo SANDBOX-UP; /usr/bin/python3 -c 'import socket; s = socket.socket(fileno=0); s.sendto(b\"{marker}\", (\"127.0.0.1\", {port})); print(\"SENT\")'"
        );
        let out = output_within(lab.sh_cmd(&[], &script), Some(stdin), DEADLINE);
        let mut buf = [0u8; 256];
        let got = rx
            .recv(&mut buf)
            .map(|n| String::from_utf8_lossy(&buf[..n]).into_owned())
            .unwrap_or_default();
        v.check(!got.contains(marker), || {
            lab.label(&format!(
                "the host received a datagram from the sandbox through the socket on stdin: {got:?}\n{}",
                text(&out)
            ))
        });
    }
    v.done();
}

/// Started by root, `sealc exec` hands the write roots over by walking them,
/// holding a descriptor for every directory still to visit. A run that
/// leaves 1100 sibling directories in a write root makes every later run
/// under the common `ulimit -n 1024` fail (`Too many open files`, exit 127).
#[test]
#[cfg_attr(
    any(
        sealc_no_bwrap,
        sealc_cannot_become = "sealc-test",
        sealc_no_tool = "gcc"
    ),
    ignore = "needs root, bubblewrap, setpriv, gcc and the user sealc-test"
)]
fn review_a_wide_tree_left_in_a_write_root_stops_no_later_run() {
    let mut v = Verdict::default();
    for who in CALLERS {
        let Some(lab) = Lab::new(who, &Shape::default()) else {
            return;
        };
        let run1 = lab.sh(
            "echo SANDBOX-UP; mkdir $WS/wide && cd $WS/wide && for i in $(seq 1 1100); do mkdir d$i; done; echo PLANTED",
        );
        v.check(stdout(&run1).contains("PLANTED"), || {
            lab.label(&format!("run 1 could not plant the tree:\n{}", text(&run1)))
        });
        let run2 = output_within(
            lab.sh_under(
                &["/usr/bin/prlimit", "--nofile=1024:1024", "--"],
                "echo SANDBOX-UP",
            ),
            None,
            DEADLINE,
        );
        v.check(Lab::started(&run2), || {
            lab.label(&format!(
                "a tree left by the last run stops the next one:\n{}",
                text(&run2)
            ))
        });
    }
    v.done();
}

/// `sealc exec ... > log 2>&1`: stdout and stderr share one file position.
/// Relayed by two threads, every byte of both must land in the file; the
/// agent decides what races, so a lossy relay would let it overwrite its own
/// transcript.
#[test]
#[cfg_attr(
    any(
        sealc_no_bwrap,
        sealc_cannot_become = "sealc-test",
        sealc_no_tool = "gcc"
    ),
    ignore = "needs root, bubblewrap, setpriv, gcc and the user sealc-test"
)]
fn review_stdout_and_stderr_into_one_file_keep_every_line() {
    let mut v = Verdict::default();
    for who in CALLERS {
        let Some(lab) = Lab::new(who, &Shape::default()) else {
            return;
        };
        let log = tempfile::NamedTempFile::new().unwrap();
        let file = log.reopen().unwrap();
        let mut cmd = lab.sh_cmd(
            &[],
            "for i in $(seq 1 2000); do echo out-$i; echo err-$i >&2; done",
        );
        cmd.stdin(Stdio::null())
            .stdout(file.try_clone().unwrap())
            .stderr(file);
        let status = cmd.status().unwrap();
        let got = std::fs::read_to_string(log.path()).unwrap();
        let lines = got
            .lines()
            .filter(|l| l.starts_with("out-") || l.starts_with("err-"))
            .count();
        v.check(status.success() && lines == 4000, || {
            lab.label(&format!(
                "{lines} of 4000 lines reached the shared file (exit {status})"
            ))
        });
    }
    v.done();
}

/// No call that takes a mode may set a setuid or setgid bit, even on a file
/// the agent owns: `open(O_CREAT, 04755)`, `mknod(S_IFREG|06755)`, `creat`,
/// and `openat2` (whose mode no filter can read).
#[test]
#[cfg_attr(
    any(
        sealc_no_bwrap,
        sealc_cannot_become = "sealc-test",
        sealc_no_tool = "gcc"
    ),
    ignore = "needs root, bubblewrap, setpriv, gcc and the user sealc-test"
)]
fn review_no_setuid_or_setgid_bit_by_any_call() {
    let mut v = Verdict::default();
    for who in CALLERS {
        let Some(lab) = Lab::new(who, &Shape::default()) else {
            return;
        };
        let out = lab.sh(
            "echo SANDBOX-UP; /usr/bin/python3 - <<PY\n\
import os, ctypes\n\
ws = os.environ.get('WS') or '$WS'\n\
for name, f in [('open', lambda p: os.close(os.open(p, os.O_CREAT | os.O_WRONLY, 0o4755))),\n\
                ('mknod', lambda p: os.mknod(p, 0o100000 | 0o6755)),\n\
                ('creat', lambda p: os.close(ctypes.CDLL(None, use_errno=True).creat(p.encode(), 0o2755)))]:\n\
    try:\n\
        f(ws + '/suid-' + name); print('made', name)\n\
    except OSError as e:\n\
        print('refused', name, e)\n\
PY",
        );
        v.check(Lab::started(&out), || lab.label(&text(&out)));
        for e in std::fs::read_dir(lab.path("ws")).unwrap().flatten() {
            use std::os::unix::fs::PermissionsExt;
            let mode = e.metadata().unwrap().permissions().mode();
            v.check(mode & 0o6000 == 0, || {
                lab.label(&format!(
                    "{} has mode {mode:o} on the host:\n{}",
                    e.path().display(),
                    text(&out)
                ))
            });
        }
    }
    v.done();
}

/// sealc runs inside as pid 1 and before the command is confined: a copy of
/// it inside a write root (which the agent could replace for the next run)
/// is refused, and nothing starts.
#[test]
#[cfg_attr(
    any(
        sealc_no_bwrap,
        sealc_cannot_become = "sealc-test",
        sealc_no_tool = "gcc"
    ),
    ignore = "needs root, bubblewrap, setpriv, gcc and the user sealc-test"
)]
fn review_sealc_inside_a_write_root_never_runs() {
    let mut v = Verdict::default();
    for who in CALLERS {
        let Some(lab) = Lab::new(who, &Shape::default()) else {
            return;
        };
        let copy = lab.path("ws/sealc");
        std::fs::copy(SEALC, &copy).unwrap();
        chmod(&copy, 0o755);
        let cmd = lab.exec(&[], &["/bin/echo", "SANDBOX-UP"]);
        let args: Vec<_> = cmd.get_args().map(|a| a.to_owned()).collect();
        let prog = cmd.get_program().to_owned();
        // The same command line, with sealc's path swapped for the copy.
        let args: Vec<_> = std::iter::once(prog)
            .chain(args)
            .map(|a| {
                if a == SEALC {
                    copy.clone().into_os_string()
                } else {
                    a
                }
            })
            .collect();
        let mut c = Command::new(&args[0]);
        c.args(&args[1..]);
        for (k, val) in cmd.get_envs() {
            match val {
                Some(val) => c.env(k, val),
                None => c.env_remove(k),
            };
        }
        if let Some(d) = cmd.get_current_dir() {
            c.current_dir(d);
        }
        let out = output_within(c, None, DEADLINE);
        v.check(
            out.status.code() == Some(125)
                && !Lab::started(&out)
                && all(&out).contains("write root"),
            || lab.label(&format!("a sealc inside a write root ran:\n{}", text(&out))),
        );
    }
    v.done();
}
