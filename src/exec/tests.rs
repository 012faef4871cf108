use super::*;
use crate::spec::Platform;

const SPEC: &str = "version = 1\nname = \"p\"\n[filesystem]\ndeny_read = [\"/d\"]\nwrite = [\"/w\"]\n[network]\nmode = \"proxy\"\nproxy = \"127.0.0.1:3128\"\n[env]\nset = { A = \"1\" }\nsecret = [\"K\"]\n[exec]\ntimeout = { bin = \"/usr/bin/timeout\", seconds = 9 }\n";

fn ir(platform: Platform) -> Ir {
    let host = crate::facts::FakeHost::new().dir("/d").dir("/w");
    crate::compile_for("p.toml", SPEC, &Vec::new(), Some(platform), &host)
        .unwrap()
        .ir
}

fn rt() -> Runtime<'static> {
    Runtime {
        exe: Path::new("/opt/sealc"),
        bridge_dir: Path::new("/tmp/b"),
        profile: b"(version 1)",
        user: None,
        inside: None,
        has_proc_entry: &|p| p != "/proc/kcore",
        cwd: None,
    }
}

fn strs(v: &[OsString]) -> Vec<String> {
    v.iter().map(|a| a.to_string_lossy().into_owned()).collect()
}

/// Issue 22: a limit is blamed only where it fired.
#[test]
fn a_signal_names_a_limit_only_where_the_limit_sent_it() {
    use report::Outcome as O;
    let plan_for = |p: Platform| {
        let mut plan = plan(&ir(p), &["cmd".into()], &|_| Some("k".into()), &rt()).unwrap();
        plan.limits.cpu_seconds = Some(2);
        plan.limits.file_size_mib = Some(8);
        plan
    };
    let (linux, macos) = (plan_for(Platform::Linux), plan_for(Platform::Macos));
    let (xcpu, xfsz, kill) = (libc::SIGXCPU, libc::SIGXFSZ, libc::SIGKILL);
    let signaled = |signal| O::Signaled { signal };
    for (plan, sig, own, want) in [
        // The soft limit's SIGXCPU, the hard limit's SIGKILL.
        (&linux, xcpu, Some(2.004), O::CpuLimit),
        (&linux, kill, Some(3.001), O::CpuLimit),
        // Sent, or caused by a lower limit of its own: not the seal's.
        (&linux, xcpu, Some(0.0), signaled(xcpu)),
        (&linux, xcpu, Some(1.99), signaled(xcpu)),
        (&linux, xcpu, None, signaled(xcpu)),
        (&linux, kill, Some(2.5), signaled(kill)),
        // Only the kernel sends SIGXFSZ inside the Linux sandbox.
        (&linux, xfsz, Some(0.0), O::FileSizeLimit),
        (&macos, xfsz, Some(0.0), signaled(xfsz)),
        // macOS reads rusage: 50 ms of tolerance.
        (&macos, xcpu, Some(1.96), O::CpuLimit),
        (&macos, xcpu, Some(0.3), signaled(xcpu)),
    ] {
        assert_eq!(
            classify_signal(plan, sig, own),
            want,
            "{sig} {own:?} bubblewrap={}",
            plan.mechanism.has_init()
        );
    }
    let mut unlimited = linux.clone();
    unlimited.limits = Default::default();
    assert_eq!(classify_signal(&unlimited, xfsz, None), signaled(xfsz));
    assert_eq!(classify_signal(&unlimited, xcpu, Some(9.0)), signaled(xcpu));
    assert_eq!(
        signaled_line("24 cpu_ns 2004000000"),
        Some((24, Some(2.004)))
    );
    assert_eq!(signaled_line("9"), Some((9, None)));
    assert_eq!(signaled_line("9 cpu_ns x"), Some((9, None)));
    assert_eq!(signaled_line("x"), None);
}

#[test]
fn secrets_cross_in_the_environment_never_in_argv() {
    for p in [Platform::Macos, Platform::Linux] {
        let plan = plan(&ir(p), &["cmd".into()], &|_| Some("s3cret".into()), &rt()).unwrap();
        assert!(!strs(&plan.args).iter().any(|a| a.contains("s3cret")));
        assert!(plan.env.contains(&("K".into(), "s3cret".into())));
        assert!(plan.env.contains(&("A".into(), "1".into())));
        assert_eq!(plan.timeout, Some(Duration::from_secs(9)));
    }
}

#[test]
fn macos_runs_the_verified_profile_bytes() {
    let plan = plan(
        &ir(Platform::Macos),
        &["cmd".into()],
        &|_| Some("v".into()),
        &rt(),
    )
    .unwrap();
    assert_eq!(plan.program, "/usr/bin/sandbox-exec");
    assert_eq!(
        strs(&plan.args),
        [
            "-p",
            "(version 1)",
            "/usr/bin/timeout",
            "--foreground",
            "9",
            "cmd"
        ]
    );
}

#[test]
fn linux_binds_roots_and_sealc_through_descriptors_and_runs_its_init() {
    let plan = plan(
        &ir(Platform::Linux),
        &["cmd".into()],
        &|_| Some("v".into()),
        &rt(),
    )
    .unwrap();
    let a = strs(&plan.args);
    // The write root is bound through a descriptor, never by path.
    let w = a.iter().position(|x| x == "<fd:/w>").unwrap();
    assert_eq!(a[w - 1], "--bind-fd");
    assert!(!a.windows(3).any(|x| x == ["--bind", "/w", "/w"]), "{a:?}");
    // sealc's own binary and the bridge, in the fresh /dev, before it turns read-only.
    let exe = a.iter().position(|x| x == "<fd:sealc>").unwrap();
    let dev_ro = a
        .windows(2)
        .position(|x| x == ["--remount-ro", "/dev"])
        .unwrap();
    assert!(exe < dev_ro && a[exe + 1] == bwrap::INIT_PATH, "{a:?}");
    assert!(a.contains(&"<fd:bridge>".to_string()));
    // /proc entries this kernel lacks are left out, and said so.
    assert!(!a.contains(&"/proc/kcore".to_string()));
    assert!(plan.skipped.iter().any(|s| s.ends_with("/proc/kcore")));
    assert!(a.contains(&"/proc/keys".to_string()));
    // bubblewrap reports the built sandbox on a pipe.
    assert_eq!(a[..2], ["--info-fd", "<fd:info>"]);
    let sep = a.iter().position(|x| x == "--").unwrap();
    assert_eq!(
        &a[sep..sep + 11],
        [
            "--",
            bwrap::INIT_PATH,
            "__init",
            "--env-fd",
            "<fd:env>",
            "--status-fd",
            "<fd:status>",
            "--listen",
            "127.0.0.1:3128",
            "--socket",
            "/dev/.sealc-bridge/proxy.sock",
        ]
    );
    let tail = &a[sep + 11..];
    assert_eq!(
        &tail[..9],
        [
            "--",
            bwrap::INIT_PATH,
            "__confine",
            "--env-fd",
            "<fd:env>",
            "--status-fd",
            "<fd:status>",
            "--offline",
            "--tcp-port"
        ]
    );
    assert_eq!(tail[9], "3128");
    assert!(tail.windows(2).any(|x| x == ["--write", "/w"]));
    assert_eq!(tail[tail.len() - 2..], ["--", "cmd"]);
    // Each descriptor slot names its placeholder.
    for slot in &plan.fds {
        assert!(a[slot.at].starts_with("<fd:"), "{:?}", slot);
    }
    assert!(plan.mechanism.has_init());
    assert_eq!(
        plan.bridge.unwrap().upstream.as_deref(),
        Some("127.0.0.1:3128")
    );
}

#[test]
fn the_launcher_runs_by_its_name() {
    let host = crate::facts::FakeHost::new()
        .dir("/d")
        .dir("/w")
        .file("/opt/codex/bin/codex", b"#!/bin/sh\n");
    let spec = format!("{SPEC}[launcher]\npath = \"/opt/codex/bin/codex\"\n");
    let with = crate::compile_for("p.toml", &spec, &Vec::new(), Some(Platform::Linux), &host)
        .unwrap()
        .ir;
    let run = |cmd: &[&str]| {
        let c: Vec<OsString> = cmd.iter().map(OsString::from).collect();
        strs(&resolve_launcher(&with, &c))
    };
    assert_eq!(
        run(&["codex", "exec", "hi"]),
        ["/opt/codex/bin/codex", "exec", "hi"]
    );
    assert_eq!(run(&["./codex", "exec"]), ["./codex", "exec"]);
    assert_eq!(run(&["/usr/bin/codex"]), ["/usr/bin/codex"]);
    assert_eq!(run(&["ls", "codex"]), ["ls", "codex"]);
    assert!(run(&[]).is_empty());
    // Without a launcher, nothing changes.
    assert_eq!(
        strs(&resolve_launcher(&ir(Platform::Linux), &["codex".into()])),
        ["codex"]
    );
}

#[test]
fn refusals_name_what_is_wrong() {
    let i = ir(Platform::Linux);
    let e = plan(&i, &["cmd".into()], &|_| None, &rt()).unwrap_err();
    assert!(e.message.contains("`K`"), "{}", e.message);
    let e = plan(&i, &[], &|_| Some("v".into()), &rt()).unwrap_err();
    assert_eq!(e.code, crate::diag::code::EXEC_COMMAND);
    // No `env` runs in between any more, so `=` in a name is fine.
    assert!(plan(&i, &["A=1".into()], &|_| Some("v".into()), &rt()).is_ok());
}

#[test]
fn the_relay_filters_for_a_terminal_only_and_the_cap_counts_what_was_read() {
    let input: &[u8] = b"\x1b]52;c;AAAA\x07\x1b[31mred\x1b[2J\x9b6n\n";
    let run = |d: stdio::Delivery, cap: Option<u64>| {
        let mut to = Vec::new();
        let over = std::cell::Cell::new(0);
        let s = relay(input, &mut to, cap, &|| over.set(over.get() + 1), d);
        (to, s, over.get())
    };
    // Not a terminal, or `--raw-terminal`: byte for byte.
    for d in [stdio::Delivery::Bytes, stdio::Delivery::Raw] {
        let (to, s, over) = run(d, None);
        assert_eq!(to, input);
        assert_eq!(
            (s.bytes, s.controls_dropped, over),
            (input.len() as u64, 0, 0)
        );
        assert_eq!(s.terminal, d.as_report());
    }
    // A terminal: text and colours, then a reset of the colour left set.
    let (to, s, _) = run(stdio::Delivery::Filtered, None);
    assert_eq!(to, b"\x1b[31mred\n\x1b[0m");
    assert_eq!(s.bytes, input.len() as u64);
    assert_eq!(s.controls_dropped, input.len() as u64 - 9);
    assert_eq!(s.terminal, Some("filtered"));
    // The cap counts bytes read from the command, filtered or not.
    let (to, s, over) = run(stdio::Delivery::Filtered, Some(20));
    assert_eq!((s.bytes, s.truncated, over), (20, true, 1));
    assert_eq!(to, b"\x1b[31mred\x1b[0m");
}

#[test]
fn a_root_is_opened_exactly_or_not_at_all() {
    let t = tempfile::tempdir().unwrap();
    let real = t.path().canonicalize().unwrap();
    std::fs::create_dir(real.join("d")).unwrap();
    std::os::unix::fs::symlink(real.join("d"), real.join("l")).unwrap();
    let s = |p: &str| real.join(p).display().to_string();
    assert!(open_exact(&s("d"), PathKind::Dir).is_ok());
    assert!(
        open_exact(&s("l"), PathKind::Dir).is_err(),
        "a link is not followed"
    );
    assert!(open_exact(&s("l/x"), PathKind::Dir).is_err());
    assert!(
        open_exact(&s("d"), PathKind::File).is_err(),
        "the kind is checked"
    );
}

/// Issue 26: the sandbox counts as built only once sealc's init said so on
/// the status pipe; whatever bubblewrap exits with before that is no
/// outcome of the command's.
#[test]
fn a_sandbox_is_built_only_when_the_init_says_so() {
    use report::Outcome as O;
    use std::os::unix::process::ExitStatusExt;
    let plan = plan(
        &ir(Platform::Linux),
        &["cmd".into()],
        &|_| Some("k".into()),
        &rt(),
    )
    .unwrap();
    let exit = |code: i32| ExitStatus::from_raw(code << 8);
    let info = r#"{ "child-pid": 7 }"#;
    let not_built = |o: O| {
        matches!(
            o,
            O::CouldNotStart {
                phase: report::Phase::SandboxStart,
                ..
            }
        )
    };
    // bubblewrap's child failed to mount after reporting itself: exit 1,
    // the status pipe empty.
    assert!(not_built(classify(&plan, exit(1), None, info, "", 0.0)));
    // Before any namespace: no child reported either.
    assert!(not_built(classify(&plan, exit(1), None, "", "", 0.0)));
    // A line that is not the init's first, whatever it says.
    assert!(not_built(classify(
        &plan,
        exit(0),
        None,
        info,
        "exited 0\n",
        0.0
    )));
    assert!(not_built(classify(
        &plan,
        exit(0),
        None,
        info,
        "x\ninit\nexited 0\n",
        0.0
    )));
    // Built: the command's own end.
    assert_eq!(
        classify(&plan, exit(1), None, info, "init\nexited 3\n", 0.0),
        O::Exited { code: 3 }
    );
    // The init's own set-up failed.
    assert!(not_built(classify(
        &plan,
        exit(122),
        None,
        info,
        "init\nstart-failed sandbox cannot listen\nexited 122\n",
        0.0
    )));
}
