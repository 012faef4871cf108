use super::*;
use std::os::unix::fs::{symlink, PermissionsExt};

#[test]
fn a_write_replaces_a_planted_link_and_leaves_no_temp_file() {
    let t = tempfile::tempdir().unwrap();
    let base = t.path().canonicalize().unwrap();
    let victim = base.join("victim");
    std::fs::write(&victim, "root's").unwrap();
    symlink(&victim, base.join("run.json")).unwrap();
    let target = Target::open(&base.join("run.json")).unwrap();
    target.write(b"{}\n", 0o644).unwrap();
    assert_eq!(std::fs::read(&victim).unwrap(), b"root's");
    let m = std::fs::symlink_metadata(base.join("run.json")).unwrap();
    assert!(m.is_file());
    assert_eq!(m.permissions().mode() & 0o777, 0o644);
    assert_eq!(std::fs::read(base.join("run.json")).unwrap(), b"{}\n");
    let names: Vec<_> = std::fs::read_dir(&base)
        .unwrap()
        .map(|e| e.unwrap().file_name())
        .collect();
    assert_eq!(names.len(), 2, "{names:?}");
}

#[test]
fn temp_names_are_random_and_never_reused() {
    let a = random_hex().unwrap();
    let b = random_hex().unwrap();
    assert_eq!(a.len(), 32);
    assert_ne!(a, b);
}

#[test]
fn a_link_swapped_in_on_the_way_is_refused() {
    let t = tempfile::tempdir().unwrap();
    let base = t.path().canonicalize().unwrap();
    std::fs::create_dir(base.join("d")).unwrap();
    let dir = Dir::open(&base.join("d")).unwrap();
    // The directory the descriptor names, whatever its path means now.
    std::fs::rename(base.join("d"), base.join("moved")).unwrap();
    std::fs::create_dir(base.join("elsewhere")).unwrap();
    symlink(base.join("elsewhere"), base.join("d")).unwrap();
    dir.write(OsStr::new("f"), b"x", 0o600).unwrap();
    assert!(base.join("moved/f").exists());
    assert!(!base.join("elsewhere/f").exists());
    // Made anew below a link: refused, nothing made through it.
    let e = Dir::walk(&base.join("d/new"), true, 0o755).unwrap_err();
    assert!(e.to_string().contains("link"), "{e}");
    assert!(!base.join("elsewhere/new").exists());
}

#[test]
fn create_all_makes_what_is_missing_and_says_what_others_can_change() {
    let t = tempfile::tempdir().unwrap();
    let base = t.path().canonicalize().unwrap();
    std::fs::create_dir(base.join("open")).unwrap();
    std::fs::set_permissions(base.join("open"), std::fs::Permissions::from_mode(0o777)).unwrap();
    let dir = Dir::create_all(&base.join("open/a/b"), 0o755).unwrap();
    assert!(base.join("open/a/b").is_dir());
    assert_eq!(dir.path(), base.join("open/a/b"));
    assert_eq!(dir.warnings().len(), 1, "{:?}", dir.warnings());
    assert!(dir.warnings()[0].contains("/open`"), "{:?}", dir.warnings());
    std::fs::set_permissions(base.join("open"), std::fs::Permissions::from_mode(0o1777)).unwrap();
    assert!(Dir::open(&base.join("open/a"))
        .unwrap()
        .warnings()
        .is_empty());
}

#[test]
fn reads_are_bounded_and_never_through_a_link() {
    let t = tempfile::tempdir().unwrap();
    let base = t.path().canonicalize().unwrap();
    let dir = Dir::open(&base).unwrap();
    let f = std::fs::File::create(base.join("sparse")).unwrap();
    f.set_len(3 << 30).unwrap(); // 3 GiB of nothing
    assert!(dir.read(OsStr::new("sparse"), 1 << 20).is_err());
    std::fs::write(base.join("small"), "abc").unwrap();
    assert_eq!(dir.read(OsStr::new("small"), 3).unwrap().unwrap(), b"abc");
    assert!(dir.read(OsStr::new("small"), 2).is_err());
    symlink(base.join("small"), base.join("link")).unwrap();
    assert!(dir.read(OsStr::new("link"), 10).is_err());
    assert!(dir.read(OsStr::new("none"), 10).unwrap().is_none());
    assert!(dir.read(OsStr::new("../x"), 10).is_err());
}

#[test]
fn a_walk_is_bounded_and_a_tree_is_emptied_without_following_links() {
    let t = tempfile::tempdir().unwrap();
    let base = t.path().canonicalize().unwrap();
    std::fs::create_dir_all(base.join("top/a/b")).unwrap();
    std::fs::write(base.join("top/a/b/f"), "x").unwrap();
    std::fs::write(base.join("outside"), "keep").unwrap();
    symlink(base.join("outside"), base.join("top/a/link")).unwrap();
    symlink(&base, base.join("top/up")).unwrap();
    let top = Dir::open(&base.join("top")).unwrap();
    let mut paths = Vec::new();
    let n = walk(
        top.fd(),
        Bounds {
            entries: 100,
            depth: 10,
        },
        &mut |e| {
            paths.push(e.path.to_string());
            Ok(true)
        },
        &mut |_| Ok(()),
    )
    .unwrap();
    assert_eq!(
        n,
        Walked {
            entries: 5,
            truncated: false
        }
    );
    assert_eq!(paths, ["a", "a/b", "a/b/f", "a/link", "up"]);
    let few = Bounds {
        entries: 3,
        depth: 10,
    };
    let w = walk(top.fd(), few, &mut |_| Ok(true), &mut |_| Ok(())).unwrap();
    assert_eq!(
        w,
        Walked {
            entries: 3,
            truncated: true
        }
    );
    let shallow = Bounds {
        entries: 100,
        depth: 2,
    };
    let mut met = Vec::new();
    let w = walk(
        top.fd(),
        shallow,
        &mut |e| {
            met.push(e.path.to_string());
            Ok(true)
        },
        &mut |_| Ok(()),
    )
    .unwrap();
    assert!(w.truncated);
    assert_eq!(met, ["a", "a/b", "a/link", "up"], "a/b is met, not entered");
    // Removed at any depth, nothing followed.
    let mut deep = base.join("top/a/b");
    for _ in 0..200 {
        deep.push("d");
    }
    std::fs::create_dir_all(&deep).unwrap();
    std::fs::write(deep.join("f"), "x").unwrap();
    let n = remove_tree(Dir::open(&base).unwrap().fd(), OsStr::new("top"), 1000).unwrap();
    assert_eq!(n, 207);
    assert!(!base.join("top").exists());
    assert_eq!(
        std::fs::read_to_string(base.join("outside")).unwrap(),
        "keep"
    );
    assert!(base.exists());
    // More entries than the bound: it stops, saying so.
    std::fs::create_dir_all(base.join("many")).unwrap();
    for i in 0..20 {
        std::fs::write(base.join(format!("many/f{i}")), "").unwrap();
    }
    let e = remove_tree(Dir::open(&base).unwrap().fd(), OsStr::new("many"), 10).unwrap_err();
    assert!(e.to_string().contains("more than 10 entries"), "{e}");
}

#[test]
fn unique_directories_have_the_mode_asked_for() {
    let t = tempfile::tempdir().unwrap();
    let dir = Dir::open(t.path()).unwrap();
    let (d, name) = dir.make_unique("sealc-bridge-1-", 0o700).unwrap();
    assert!(name.starts_with("sealc-bridge-1-") && name.len() == 15 + 32);
    let m = std::fs::metadata(d.path()).unwrap();
    assert_eq!(m.permissions().mode() & 0o7777, 0o700);
    let ids = d.ancestry().unwrap();
    assert_eq!(ids[0], d.id().unwrap());
    assert_eq!(ids[1], dir.id().unwrap());
}

#[test]
fn compare_below_tells_same_from_different_at_any_size_and_follows_no_link() {
    let t = tempfile::tempdir().unwrap();
    let base = t.path().canonicalize().unwrap();
    std::fs::create_dir(base.join("sub")).unwrap();
    let big: Vec<u8> = (0..200_000u32).map(|i| (i % 251) as u8).collect();
    let mut late = big.clone();
    *late.last_mut().unwrap() ^= 1;
    std::fs::write(base.join("sub/small"), b"abc").unwrap();
    std::fs::write(base.join("sub/big"), &big).unwrap();
    symlink(base.join("sub/small"), base.join("sub/link")).unwrap();
    let dir = Dir::open(&base).unwrap();
    let cmp = |name: &str, bytes: &[u8]| dir.compare_below(name, bytes, 1 << 20);
    assert_eq!(cmp("sub/small", b"abc").unwrap(), Some(None));
    assert_eq!(
        cmp("sub/small", b"abd").unwrap(),
        Some(Some(b"abc".to_vec()))
    );
    assert_eq!(
        cmp("sub/small", b"ab").unwrap(),
        Some(Some(b"abc".to_vec()))
    );
    assert_eq!(cmp("sub/big", &big).unwrap(), Some(None));
    // Differing in the last byte only, past the first 64 KiB block.
    assert_eq!(cmp("sub/big", &late).unwrap(), Some(Some(big.clone())));
    assert_eq!(cmp("sub/absent", b"abc").unwrap(), None);
    assert_eq!(cmp("nope/small", b"abc").unwrap(), None);
    let looped = cmp("sub/link", b"abc").unwrap_err();
    assert_eq!(looped.raw_os_error(), Some(libc::ELOOP), "{looped}");
}
