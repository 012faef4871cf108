use super::*;
use crate::facts::FakeHost;

/// Compile a Linux spec over `host` and read its `seal.bwrap.json` back.
fn model(filesystem: &str, base: &str, host: &FakeHost) -> Model {
    let src = format!(
        "version = 1\nname = \"m\"\n[target]\nplatform = \"linux\"\nbase = \"{base}\"\n[filesystem]\n{filesystem}\n[network]\nmode = \"none\"\n"
    );
    let c = crate::compile("m.toml", &src, &Vec::new(), host).unwrap();
    Model::from_artifact(&c.files[crate::backend::BWRAP]).unwrap()
}

fn lab() -> FakeHost {
    FakeHost::new()
        .dir("/t/w/a/d")
        .dir("/t/w/n")
        .dir("/t/v")
        .dir("/t/ro")
        .file("/t/w/f", b"f")
        .file("/t/w/g", b"g")
        .file("/t/v/f", b"f")
}

fn lab_model() -> Model {
    model(
        "deny_read = [\"/t/w/a/d\"]\nwrite = [\"/t/w\", \"/t/v\", \"/t/w/g\", \"/t/w/n\"]",
        "allow-default",
        &lab(),
    )
}

#[track_caller]
fn check(a: Answer, allowed: bool, why: &str) {
    assert_eq!(a.allowed, allowed, "{}", a.why);
    assert!(a.why.contains(why), "{why:?} not in {:?}", a.why);
}

#[test]
fn names_in_a_write_root() {
    let m = lab_model();
    check(m.name(Op::Unlink, "/t/w/f"), true, "--bind /t/w /t/w");
    check(m.name(Op::Remove, "/t/w/f"), true, "not a mount point");
    check(m.name(Op::Create, "/t/w/new"), true, "--bind /t/w /t/w");
    check(m.name(Op::Create, "/t/w/f/x"), true, "writable"); // a file: not the model's to know
    check(m.name(Op::Link, "/t/w/f"), true, "within it");
    check(
        m.moved(Move::Rename, "/t/w/f", "/t/w/f2"),
        true,
        "one writable mount",
    );
    check(
        m.moved(Move::Link, "/t/w/f", "/t/w/a/h"),
        true,
        "one writable mount",
    );
    // Mount points: the write root itself, a nested root, a stand-in.
    check(m.name(Op::Rmdir, "/t/w"), false, "EROFS");
    check(m.name(Op::Rmdir, "/t/w/n"), false, "EBUSY");
    check(m.name(Op::Rmdir, "/t/w/a/d"), false, "EBUSY");
    check(m.moved(Move::Rename, "/t/w/n", "/t/w/n2"), false, "EBUSY");
    check(m.moved(Move::Rename, "/t/w", "/t/w2"), false, "EROFS");
    // A directory with a mount inside: renamed (the mount moves with
    // it), never removed.
    check(
        m.moved(Move::Rename, "/t/w/a", "/t/w/a2"),
        true,
        "one writable mount",
    );
    check(m.name(Op::Remove, "/t/w/a"), true, "renamed within");
    check(m.name(Op::Rmdir, "/t/w/a"), false, "ENOTEMPTY");
    check(m.moved(Move::Rename, "/t/w/a", "/t/w/a/q"), false, "EINVAL");
    // Across mounts, both writable: never.
    check(m.moved(Move::Rename, "/t/w/f", "/t/v/f2"), false, "EXDEV");
    check(m.moved(Move::Link, "/t/w/f", "/t/v/h"), false, "EXDEV");
    check(m.moved(Move::Rename, "/t/w/f", "/t/w/n/f"), false, "EXDEV");
    check(m.moved(Move::Rename, "/t/w/f", "/t/ro/f"), false, "EXDEV");
    check(m.moved(Move::Link, "/t/w/f", "/t/ro/h"), false, "EROFS");
    // A new name where bubblewrap put something.
    check(m.name(Op::Create, "/t/w/n"), false, "EEXIST");
    check(m.name(Op::Create, "/t/w/a"), false, "EEXIST");
}

#[test]
fn a_hidden_directory_is_empty_and_read_only() {
    let m = lab_model();
    check(
        m.name(Op::Create, "/t/w/a/d/x"),
        false,
        "--remount-ro /t/w/a/d",
    );
    check(m.name(Op::Unlink, "/t/w/a/d/s"), false, "EROFS");
    check(m.name(Op::Link, "/t/w/a/d/s"), false, "ENOENT");
    check(
        m.moved(Move::Rename, "/t/w/a/d/s", "/t/w/s"),
        false,
        "EXDEV",
    );
    check(m.moved(Move::Link, "/t/w/a/d/s", "/t/w/s"), false, "ENOENT");
    check(
        m.moved(Move::Rename, "/t/w/f", "/t/w/a/d/f"),
        false,
        "EXDEV",
    );
}

/// Issue 11, item 4: a write root that is a file is a mount point.
#[test]
fn a_write_root_that_is_a_file_cannot_be_unlinked_renamed_or_linked() {
    let m = lab_model();
    check(
        m.path(Access::Write, "/t/w/g"),
        true,
        "--bind /t/w/g /t/w/g",
    );
    for op in [Op::Unlink, Op::Remove] {
        check(m.name(op, "/t/w/g"), false, "EBUSY");
    }
    check(m.moved(Move::Rename, "/t/w/g", "/t/w/g2"), false, "EBUSY");
    check(m.name(Op::Link, "/t/w/g"), false, "EXDEV");
    check(m.moved(Move::Link, "/t/w/g", "/t/w/h"), false, "EXDEV");
    // The same through an `[[assert]]`: allow is false, deny proved.
    let spec = |verdict: &str| {
        format!(
            "version = 1\nname = \"m\"\n[target]\nplatform = \"linux\"\n[filesystem]\nwrite = [\"/t/w\", \"/t/w/g\"]\n[network]\nmode = \"none\"\n[[assert]]\n{verdict} = \"file-write-unlink\"\npaths = [\"/t/w/g\"]\n"
        )
    };
    let err = crate::compile("m.toml", &spec("allow"), &Vec::new(), &lab()).unwrap_err();
    let text = format!("{err:?}");
    assert!(text.contains("EBUSY"), "{text}");
    crate::compile("m.toml", &spec("deny"), &Vec::new(), &lab()).unwrap();
}

#[test]
fn the_read_only_host_the_root_and_the_devices() {
    let m = lab_model();
    check(
        m.name(Op::Create, "/t/ro/x"),
        false,
        "`--ro-bind / /`: read-only (EROFS)",
    );
    check(m.name(Op::Unlink, "/etc/passwd"), false, "EROFS");
    check(m.name(Op::Create, "/dev/shm/x"), true, "--tmpfs /dev/shm");
    check(m.name(Op::Remove, "/dev/shm"), false, "--dev /dev");
    check(m.name(Op::Remove, "/"), false, "EBUSY");
    check(m.name(Op::Create, "/dev/x"), false, "--dev /dev");
    let d = model("write = [\"/t/w\"]", "deny-default", &lab());
    check(d.name(Op::Create, "/x"), false, "--remount-ro /");
    check(d.name(Op::Create, "/t/x"), false, "the sandbox's own root");
    check(d.name(Op::Create, "/home/x"), false, "ENOENT");
    check(d.moved(Move::Rename, "/t/w/f", "/t/f"), false, "EXDEV");
    check(d.name(Op::Create, "/t/w/x"), true, "--bind /t/w /t/w");
}

/// Issue 11, item 2, on Linux: a denied `/dev/null` is a stand-in too.
#[test]
fn a_denied_device_is_a_stand_in() {
    let host = lab().file("/dev/null", b"");
    let m = model("deny_read = [\"/dev/null\"]", "deny-default", &host);
    check(
        m.path(Access::ReadData, "/dev/null"),
        false,
        "--ro-bind /dev/null /dev/null",
    );
    check(
        m.path(Access::ReadMetadata, "/dev/null"),
        true,
        "--ro-bind /dev/null /dev/null",
    );
}

/// Issue 11, item 5: a denied root inside a hidden one, with nothing
/// re-allowed between, gets no mount point of its own, so a listing of
/// the stand-in does not show its name; names on the way to a
/// re-allowed root still show (bubblewrap makes them).
#[test]
fn only_what_changes_the_view_is_mounted() {
    let host = lab().dir("/t/h/op/.ssh").dir("/t/h/pub/x");
    let m = model(
        "deny_read = [\"/t/h\", \"/t/h/op\", \"/t/h/op/.ssh\", \"/t/h/pub/x\"]\nallow_read = [\"/t/h/pub\"]",
        "allow-default",
        &host,
    );
    assert_eq!(m.shown("/t/h"), BTreeSet::from(["pub".to_string()]));
    check(
        m.path(Access::ReadMetadata, "/t/h/op"),
        false,
        "--tmpfs /t/h",
    );
    check(m.path(Access::ReadMetadata, "/t/h"), true, "--tmpfs /t/h");
    // Re-denied below a re-allowed root: mounted again.
    check(
        m.path(Access::ReadData, "/t/h/pub/x/f"),
        false,
        "--tmpfs /t/h/pub/x",
    );
    assert!(m.shown("/t/h/pub").contains("x"));
    // A metadata-only root inside a denied one changes the view: stat.
    let m = model(
        "deny_read = [\"/t/h\"]\nmetadata_only = [\"/t/h/op\"]",
        "allow-default",
        &host,
    );
    check(
        m.path(Access::ReadMetadata, "/t/h/op"),
        true,
        "--tmpfs /t/h/op",
    );
    assert_eq!(m.shown("/t/h"), BTreeSet::from(["op".to_string()]));
}

/// Issue 11, item 3: a root written through a symlink is reached by
/// both spellings, also when the link lies in a hidden directory (it is
/// made again there) or outside the deny-default base.
#[test]
fn a_root_written_through_a_link_is_reached_by_both_spellings() {
    let host = lab()
        .dir("/t/top/real")
        .dir("/t/top/other")
        .link("/t/top/ws", "real");
    let both = ["/t/top/ws/f", "/t/top/real/f"];
    for (fs, base) in [
        (
            "deny_read = [\"/t/top\"]\nwrite = [\"/t/top/ws\"]",
            "allow-default",
        ),
        ("write = [\"/t/top/ws\"]", "allow-default"),
        ("write = [\"/t/top/ws\"]", "deny-default"),
    ] {
        let m = model(fs, base, &host);
        for p in both {
            check(
                m.path(Access::Write, p),
                true,
                "--bind /t/top/real /t/top/real",
            );
            check(
                m.path(Access::ReadData, p),
                true,
                "--bind /t/top/real /t/top/real",
            );
            check(
                m.name(Op::Create, p),
                true,
                "--bind /t/top/real /t/top/real",
            );
            check(
                m.name(Op::Unlink, p),
                true,
                "--bind /t/top/real /t/top/real",
            );
        }
        check(
            m.moved(Move::Rename, "/t/top/ws/f", "/t/top/real/g"),
            true,
            "one writable mount",
        );
        assert_eq!(
            m.resolve("/t/top/ws/a/b", true),
            "/t/top/real/a/b",
            "{fs} {base}"
        );
        // The link itself is a name in a read-only place, as on the host.
        check(m.name(Op::Unlink, "/t/top/ws"), false, "EROFS");
    }
    // Made again only where the host's entry would not show.
    let hidden = model(
        "deny_read = [\"/t/top\"]\nwrite = [\"/t/top/ws\"]",
        "allow-default",
        &host,
    );
    check(
        hidden.path(Access::ReadMetadata, "/t/top/ws"),
        true,
        "--symlink /t/top/real /t/top/ws",
    );
    check(
        hidden.path(Access::ReadMetadata, "/t/top/other"),
        false,
        "--tmpfs /t/top",
    );
    let shown = model("write = [\"/t/top/ws\"]", "allow-default", &host);
    check(
        shown.path(Access::ReadMetadata, "/t/top/ws"),
        true,
        "--ro-bind / /",
    );
}

/// Issue 22, item 2: the sandbox's own /sys shows only what programs
/// need of the host's, under either base, and a root under /sys still
/// means what it says.
#[test]
fn sys_is_the_sandboxs_own() {
    let host = lab()
        .dir("/sys/class/net")
        .dir("/sys/devices/system/cpu/cpu0");
    for base in ["allow-default", "deny-default"] {
        let m = model("write = [\"/t/w\"]", base, &host);
        for p in ["/sys/class/net", "/sys/fs/cgroup/x", "/sys/firmware"] {
            check(m.path(Access::ReadData, p), false, "--tmpfs /sys");
            check(m.path(Access::ReadMetadata, p), false, "--tmpfs /sys");
        }
        check(
            m.path(Access::ReadData, "/sys/devices/system/cpu/online"),
            true,
            "--ro-bind-try /sys/devices/system/cpu /sys/devices/system/cpu",
        );
        check(
            m.path(Access::Write, "/sys/kernel/mm/transparent_hugepage/enabled"),
            false,
            "--ro-bind-try /sys/kernel/mm/transparent_hugepage",
        );
        check(m.name(Op::Create, "/sys/x"), false, "EROFS");
        assert_eq!(
            m.shown("/sys"),
            BTreeSet::from(["devices".to_string(), "kernel".to_string()])
        );
    }
    let m = model(
        "allow_read = [\"/sys/class/net\"]\ndeny_read = [\"/sys/devices/system/cpu/cpu0\"]",
        "allow-default",
        &host,
    );
    check(
        m.path(Access::ReadData, "/sys/class/net/lo"),
        true,
        "--ro-bind /sys/class/net /sys/class/net",
    );
    check(
        m.path(Access::ReadData, "/sys/devices/system/cpu/cpu0/online"),
        false,
        "--tmpfs /sys/devices/system/cpu/cpu0",
    );
    let m = model("deny_read = [\"/sys\"]", "allow-default", &host.dir("/sys"));
    check(
        m.path(Access::ReadData, "/sys/devices/system/cpu/online"),
        false,
        "--tmpfs /sys",
    );
}

#[test]
fn operation_names() {
    assert_eq!(
        question_of("file-write-unlink"),
        Some(Question::Name(Op::Remove))
    );
    assert_eq!(question_of("file-unlink"), Some(Question::Name(Op::Remove)));
    assert_eq!(
        question_of("file-write-create"),
        Some(Question::Name(Op::Create))
    );
    assert_eq!(question_of("mkdir"), Some(Question::Name(Op::Create)));
    assert_eq!(question_of("file-link"), Some(Question::Name(Op::Link)));
    assert_eq!(question_of("rename"), Some(Question::Move(Move::Rename)));
    assert_eq!(
        question_of("file-write-data"),
        Some(Question::Path(Access::Write))
    );
    assert_eq!(question_of("process-exec"), None);
    let m = lab_model();
    assert_eq!(
        m.ask("file-link", "/t/w/f", Some("/t/v/h")),
        Some(m.moved(Move::Link, "/t/w/f", "/t/v/h"))
    );
    assert_eq!(m.ask("rename", "/t/w/f", None), None);
    assert_eq!(m.ask("unlink", "/t/w/f", Some("/t/w/x")), None);
    assert_eq!(
        m.ask("file-write-unlink", "/t/w/g", None),
        Some(m.name(Op::Remove, "/t/w/g"))
    );
}
