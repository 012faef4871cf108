//! Issue 22: the caller's terminal is out of reach of the command's output.
//! `sealc exec` runs for real under bubblewrap, started by root and by the
//! unprivileged `sealc-test` (through `setpriv`), with its stdout and stderr
//! on real pseudo-terminals (raw, so the bytes read on the master side are
//! the bytes written): the command's escape sequences (OSC 52 clipboard,
//! OSC 0 title, cursor moves, erases, DSR/DA queries, reverse index, 8-bit
//! and UTF-8-encoded C1 CSI, BEL), one split over two writes, reach the
//! terminal as text and colours only, and the report counts what was
//! dropped. With `--raw-terminal` and to a pipe every byte passes.
//!
//! Without bubblewrap, setpriv, the `sealc-test` user or root, these tests
//! are ignored, unless `SEALC_REQUIRE_BWRAP=1`, under which they fail.

mod common;
use common::{text, Caller, Verdict, CALLERS};

use std::fs::File;
use std::io::Read;
use std::os::fd::{AsRawFd, FromRawFd};
use std::os::unix::fs::PermissionsExt;
use std::path::PathBuf;
use std::process::{Command, ExitStatus, Stdio};
use std::time::{Duration, Instant};

const SEALC: &str = env!("CARGO_BIN_EXE_sealc");
const USER: &str = "sealc-test";
const DEADLINE: Duration = Duration::from_secs(60);

/// What the command writes on stdout, then (after a pause, so the relay
/// reads it apart) `PART2`; the same on stderr. `PART1` ends inside an
/// OSC 52 that `PART2` ends.
const PART1: &[u8] = b"START \x1b]0;PWNED-TITLE\x07\x1b[A\x1b[2J\x1b[6n\x1b[c\x1bM\x9b2J\xc2\x9b6n\x07\x1b[1;31mred\x1b[0m\n\ttab\r\n\x1b]52;c;cHdu";
const PART2: &[u8] = b"bmVk\x07 after \x1b[32mgreen\n";
/// What a filtered terminal shows: text, `\n`, `\t`, `\r` and SGR, then the
/// reset sealc adds because the last SGR left a colour set.
const SHOWN: &[u8] = b"START \x1b[1;31mred\x1b[0m\n\ttab\r\n after \x1b[32mgreen\n\x1b[0m";
const RESET: usize = 4;

fn payload() -> Vec<u8> {
    [PART1, PART2].concat()
}

fn required() -> bool {
    std::env::var_os("SEALC_REQUIRE_BWRAP").is_some_and(|v| v == "1")
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

/// Why these tests cannot run here, if they cannot.
fn missing() -> Option<String> {
    if !rustix::process::getuid().is_root() {
        return Some(
            "this test process is not root (it runs sealc as root and as `sealc-test`)".into(),
        );
    }
    if !common::bwrap_sandboxes() {
        return Some("bubblewrap is missing or cannot make namespaces".into());
    }
    if !runs("setpriv", &["--version"]) {
        return Some("setpriv (util-linux) is missing".into());
    }
    if !runs("id", &["-u", USER]) {
        return Some(format!(
            "the user `{USER}` does not exist (.ci/run creates it)"
        ));
    }
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
        return Some(format!(
            "`{USER}` cannot run {SEALC} or reach {tmpdir}: make every parent directory of the checkout traversable (chmod o+x)"
        ));
    }
    None
}

/// Can the tests run? Fails, saying why, when not (`common::not_run`; under
/// `SEALC_REQUIRE_BWRAP=1`, saying so).
fn ready() -> bool {
    match missing() {
        None => true,
        Some(why) => {
            assert!(!required(), "SEALC_REQUIRE_BWRAP=1, but {why}");
            common::not_run(&why)
        }
    }
}

/// A small Linux seal (one write root, no network) and the payload files.
struct Lab {
    _tmp: tempfile::TempDir,
    t: PathBuf,
}

fn chmod(p: &std::path::Path, mode: u32) {
    std::fs::set_permissions(p, std::fs::Permissions::from_mode(mode)).unwrap();
}

impl Lab {
    fn new() -> Lab {
        let tmp = tempfile::tempdir_in(env!("CARGO_TARGET_TMPDIR")).unwrap();
        let t = tmp.path().canonicalize().unwrap();
        chmod(&t, 0o755);
        std::fs::create_dir(t.join("ws")).unwrap();
        // The report's directory: each caller writes its report there.
        std::fs::create_dir(t.join("out")).unwrap();
        chmod(&t.join("out"), 0o777);
        std::fs::write(t.join("part1"), PART1).unwrap();
        std::fs::write(t.join("part2"), PART2).unwrap();
        let spec = format!(
            "version = 1\nname = \"terminal\"\n[target]\nplatform = \"linux\"\n[filesystem]\nwrite = [\"{ws}\"]\n[network]\nmode = \"none\"\n[env]\npass = [\"PATH\"]\n",
            ws = t.join("ws").display()
        );
        std::fs::write(t.join("spec.toml"), spec).unwrap();
        let out = Command::new(SEALC)
            .current_dir(&t)
            .env_clear()
            .env("PATH", "/usr/bin:/bin")
            .args(["compile", "spec.toml", "--out", "seal"])
            .output()
            .unwrap();
        assert!(out.status.success(), "compile failed:\n{}", text(&out));
        Lab { _tmp: tmp, t }
    }

    fn report(&self, who: Caller) -> PathBuf {
        self.t.join(format!("out/report-{who:?}.json"))
    }

    /// `sealc exec` as `who`, with `flags`, of the script that writes the
    /// payload in two parts on stdout, then on stderr.
    fn exec(&self, who: Caller, flags: &[&str]) -> Command {
        let t = self.t.display();
        let script = format!(
            "cat {t}/part1; sleep 0.3; cat {t}/part2; cat {t}/part1 >&2; sleep 0.3; cat {t}/part2 >&2"
        );
        self.exec_argv(who, flags, &["/bin/sh", "-c", &script])
    }

    /// `sealc exec` as `who`, with `flags`, of `command`.
    fn exec_argv(&self, who: Caller, flags: &[&str], command: &[&str]) -> Command {
        let mut argv: Vec<String> = Vec::new();
        if who == Caller::User {
            argv.extend(
                [
                    "/usr/bin/setpriv",
                    "--reuid=sealc-test",
                    "--regid=sealc-test",
                    "--init-groups",
                    "--",
                ]
                .map(String::from),
            );
        }
        argv.push(SEALC.into());
        let _ = std::fs::remove_file(self.report(who));
        let mut c = Command::new(&argv[0]);
        c.args(&argv[1..])
            .current_dir(&self.t)
            .env_clear()
            .env("PATH", "/usr/bin:/bin")
            .arg("exec")
            .arg(self.t.join("seal/seal.json"))
            .arg("--report")
            .arg(self.report(who))
            .args(flags)
            .arg("--")
            .args(command)
            .stdin(Stdio::null());
        c
    }

    fn read_report(&self, who: Caller) -> serde_json::Value {
        let bytes = std::fs::read(self.report(who))
            .unwrap_or_else(|e| panic!("no report from the {who:?} caller: {e}"));
        serde_json::from_slice(&bytes).unwrap()
    }
}

/// A pseudo-terminal pair, its slave raw (no `\n` to `\r\n`: what the
/// master reads is what was written).
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
        let mut t: libc::termios = std::mem::zeroed();
        assert_eq!(libc::tcgetattr(s, &mut t), 0);
        libc::cfmakeraw(&mut t);
        assert_eq!(libc::tcsetattr(s, libc::TCSANOW, &t), 0);
        Pty {
            master,
            slave: File::from_raw_fd(s),
        }
    }
}

/// Everything the master side can read, until nothing more comes for `quiet`.
#[allow(unsafe_code)]
fn drain(f: &File, quiet: Duration) -> Vec<u8> {
    let fd = f.as_raw_fd();
    // SAFETY: fcntl and poll on a descriptor open for the whole call.
    unsafe {
        let flags = libc::fcntl(fd, libc::F_GETFL);
        libc::fcntl(fd, libc::F_SETFL, flags | libc::O_NONBLOCK);
    }
    let mut got = Vec::new();
    let mut buf = [0u8; 4096];
    let mut f = f;
    loop {
        let mut p = libc::pollfd {
            fd,
            events: libc::POLLIN,
            revents: 0,
        };
        // SAFETY: one pollfd, valid for the call.
        let n = unsafe { libc::poll(&mut p, 1, quiet.as_millis() as i32) };
        if n <= 0 {
            break;
        }
        match f.read(&mut buf) {
            Ok(0) => break,
            Ok(n) => got.extend_from_slice(&buf[..n]),
            Err(e) if e.kind() == std::io::ErrorKind::WouldBlock => continue,
            Err(_) => break,
        }
    }
    got
}

fn wait_within(child: &mut std::process::Child, limit: Duration) -> (ExitStatus, bool) {
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

/// The stream without sealc's own lines (a warning before the run, such as
/// the idmap fallback's): what the command's relay wrote.
fn without_sealc_lines(b: &[u8]) -> Vec<u8> {
    b.split_inclusive(|&c| c == b'\n')
        .filter(|l| !l.starts_with(b"sealc: "))
        .flatten()
        .copied()
        .collect()
}

fn shown(b: &[u8]) -> String {
    format!("{:?}", String::from_utf8_lossy(b))
}

/// Run `cmd` with stdout and stderr on two pseudo-terminals; what each showed.
fn on_terminals(mut cmd: Command) -> (ExitStatus, bool, Vec<u8>, Vec<u8>) {
    let (out, err) = (open_pty(), open_pty());
    cmd.stdout(out.slave.try_clone().unwrap())
        .stderr(err.slave.try_clone().unwrap());
    let mut child = cmd.spawn().unwrap();
    let (status, late) = wait_within(&mut child, DEADLINE);
    drop(cmd);
    let quiet = Duration::from_millis(300);
    (
        status,
        late,
        drain(&out.master, quiet),
        drain(&err.master, quiet),
    )
}

/// The terminal shows text and colours only: no title, clipboard, cursor
/// move, erase, query or C1 control, also when one is split over two reads;
/// a colour left set is reset; the report counts what was dropped.
#[test]
#[cfg_attr(
    any(sealc_no_bwrap, sealc_cannot_become = "sealc-test"),
    ignore = "needs root, bubblewrap, setpriv and the user sealc-test"
)]
fn the_callers_terminal_gets_text_and_colours_only() {
    if !ready() {
        return;
    }
    let mut v = Verdict::default();
    let lab = Lab::new();
    let dropped = (payload().len() - (SHOWN.len() - RESET)) as u64;
    for who in CALLERS {
        let (status, late, out, err) = on_terminals(lab.exec(who, &[]));
        let err = without_sealc_lines(&err);
        let what = || {
            format!(
                "[{who:?}] exit {:?}{}\n--- stdout's terminal showed\n{}\n--- stderr's\n{}",
                status.code(),
                if late { " (killed)" } else { "" },
                shown(&out),
                shown(&err)
            )
        };
        v.check(status.success() && !late, || {
            format!("{} did not succeed", what())
        });
        v.check(out == SHOWN, || {
            format!("stdout: want {}\n{}", shown(SHOWN), what())
        });
        v.check(err == SHOWN, || {
            format!("stderr: want {}\n{}", shown(SHOWN), what())
        });
        let r = lab.read_report(who);
        for s in ["stdout", "stderr"] {
            v.check(r[s]["terminal"] == "filtered", || {
                format!("[{who:?}] the report's {s}: {}", r[s])
            });
            v.check(r[s]["controls_dropped"] == dropped, || {
                format!(
                    "[{who:?}] the report's {s}: {}, want {dropped} dropped",
                    r[s]
                )
            });
            v.check(r[s]["bytes"] == payload().len() as u64, || {
                format!(
                    "[{who:?}] the report's {s}: {}, want {} bytes",
                    r[s],
                    payload().len()
                )
            });
        }
    }
    v.done();
}

/// `--raw-terminal`: the terminal gets every byte, escapes included.
#[test]
#[cfg_attr(
    any(sealc_no_bwrap, sealc_cannot_become = "sealc-test"),
    ignore = "needs root, bubblewrap, setpriv and the user sealc-test"
)]
fn raw_terminal_passes_every_byte() {
    if !ready() {
        return;
    }
    let mut v = Verdict::default();
    let lab = Lab::new();
    for who in CALLERS {
        let (status, late, out, err) = on_terminals(lab.exec(who, &["--raw-terminal"]));
        let err = without_sealc_lines(&err);
        v.check(status.success() && !late, || {
            format!("[{who:?}] exit {:?}, late {late}", status.code())
        });
        v.check(out == payload(), || {
            format!("[{who:?}] stdout {}", shown(&out))
        });
        v.check(err == payload(), || {
            format!("[{who:?}] stderr {}", shown(&err))
        });
        let r = lab.read_report(who);
        for s in ["stdout", "stderr"] {
            v.check(
                r[s]["terminal"] == "raw" && r[s].get("controls_dropped").is_none(),
                || format!("[{who:?}] the report's {s}: {}", r[s]),
            );
        }
    }
    v.done();
}

/// A pipe gets the command's bytes exactly as it wrote them, escape bytes
/// included, and the report names no terminal.
#[test]
#[cfg_attr(
    any(sealc_no_bwrap, sealc_cannot_become = "sealc-test"),
    ignore = "needs root, bubblewrap, setpriv and the user sealc-test"
)]
fn a_pipe_gets_every_byte() {
    if !ready() {
        return;
    }
    let mut v = Verdict::default();
    let lab = Lab::new();
    for who in CALLERS {
        let mut cmd = lab.exec(who, &[]);
        cmd.stdout(Stdio::piped()).stderr(Stdio::piped());
        let mut child = cmd.spawn().unwrap();
        let mut o = child.stdout.take().unwrap();
        let mut e = child.stderr.take().unwrap();
        let eh = std::thread::spawn(move || {
            let mut b = Vec::new();
            let _ = e.read_to_end(&mut b);
            b
        });
        let mut out = Vec::new();
        let _ = o.read_to_end(&mut out);
        let err = without_sealc_lines(&eh.join().unwrap());
        let (status, late) = wait_within(&mut child, DEADLINE);
        v.check(status.success() && !late, || {
            format!("[{who:?}] exit {:?}, late {late}", status.code())
        });
        v.check(out == payload(), || {
            format!("[{who:?}] stdout {}", shown(&out))
        });
        v.check(err == payload(), || {
            format!("[{who:?}] stderr {}", shown(&err))
        });
        let r = lab.read_report(who);
        for s in ["stdout", "stderr"] {
            v.check(
                r[s].get("terminal").is_none()
                    && r[s].get("controls_dropped").is_none()
                    && r[s]["bytes"] == payload().len() as u64,
                || format!("[{who:?}] the report's {s}: {}", r[s]),
            );
        }
    }
    v.done();
}

/// A name the agent chose, in a line sealc itself prints on a terminal, is
/// escaped: here a set-id file in a write root, whose bit sealc clears
/// before an idmapped run started by root and says so, and a command that
/// is not in the sandbox, whose lookup failure comes from inside.
#[test]
#[cfg_attr(
    any(sealc_no_bwrap, sealc_cannot_become = "sealc-test"),
    ignore = "needs root, bubblewrap, setpriv and the user sealc-test"
)]
fn sealcs_own_lines_show_names_escaped() {
    if !ready() {
        return;
    }
    let lab = Lab::new();
    let name = "\x1b]0;PWNED\x07\x1b[2J\u{9b}A";
    let file = lab.t.join("ws").join(name);
    std::fs::write(&file, "#!/bin/sh\n").unwrap();
    chmod(&file, 0o4755);
    let (status, late, _, err) = on_terminals(lab.exec_argv(Caller::Root, &[], &[name]));
    let said = String::from_utf8_lossy(&err).into_owned();
    let what = || format!("exit {:?} (late {late}), stderr {said:?}", status.code());
    assert_eq!(status.code(), Some(127), "{}", what());
    assert!(
        !said.chars().any(|c| c.is_control() && c != '\n'),
        "a control character reached the terminal: {}",
        what()
    );
    let escaped = r"\u{1b}]0;PWNED\u{7}\u{1b}[2J\u{9b}A";
    for start in [
        "sealc: command not found in the sandbox: ",
        "error: command lookup failed: ",
    ] {
        assert!(
            said.lines()
                .any(|l| l.starts_with(start) && l.contains(escaped)),
            "{start}...: {}",
            what()
        );
    }
    // Idmapped (where the kernel and filesystem allow it): the bit is
    // cleared first, and said.
    let idmapped = lab.read_report(Caller::Root)["write_roots"] == "idmapped";
    if idmapped {
        assert!(
            said.lines()
                .any(|l| l.starts_with("sealc: warning: cleared ") && l.contains(escaped)),
            "{}",
            what()
        );
    } else {
        // Idmapping is there wherever CI runs (tests/ownership.rs needs it
        // too): a host without it skips only this part, and says so.
        assert!(
            !required(),
            "SEALC_REQUIRE_BWRAP=1, but the write roots were not idmapped: {}",
            what()
        );
        eprintln!("the write roots were not idmapped here: the cleared bit is not said");
    }
}
