use super::*;

fn ir_at(root: &std::path::Path, creds: Option<&std::path::Path>) -> Ir {
    let r = root.display().to_string();
    let creds = creds.map_or(String::new(), |c| {
        format!("credentials = \"{}\"\n", c.display())
    });
    let spec = format!(
        "version = 1\nname = \"c\"\n[filesystem]\nwrite = [\"{r}/w\"]\n[env]\nset = {{ CODEX_HOME = \"{r}/w/home/.codex\" }}\n[codex]\nworkspace = \"{r}/w\"\n{creds}"
    );
    crate::compile("c.toml", &spec, &Vec::new(), &crate::facts::RealHost)
        .unwrap()
        .ir
}

fn names(dir: &std::path::Path) -> Vec<String> {
    let mut v: Vec<String> = std::fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    v.sort();
    v
}

#[test]
fn a_home_is_made_fresh_never_reused_and_removed_after() {
    let t = tempfile::tempdir().unwrap();
    let base = t.path().canonicalize().unwrap();
    std::fs::create_dir(base.join("w")).unwrap();
    std::fs::create_dir(base.join("creds")).unwrap();
    std::fs::write(base.join("creds/auth.json"), "{\"token\":1}").unwrap();
    let ir = ir_at(&base, Some(&base.join("creds/auth.json")));
    let creds = read_credentials(&ir).unwrap();
    let home = prepare(&ir, b"a = 1\n", creds.as_ref(), false, &[]).unwrap();
    let h = base.join("w/home/.codex");
    assert_eq!(names(&h), ["auth.json", "config.toml"]);
    assert_eq!(std::fs::read(h.join("config.toml")).unwrap(), b"a = 1\n");
    // A second run while this home is there: refused.
    assert!(matches!(
        prepare(&ir, b"a = 1\n", None, false, &[]),
        Err(Refused::Left(_))
    ));
    // The run: Codex writes its state, the agent plants instructions,
    // the token is refreshed.
    std::fs::create_dir(h.join("sessions")).unwrap();
    std::fs::write(h.join("sessions/rollout.jsonl"), "{}\n").unwrap();
    std::fs::write(h.join("AGENTS.md"), "obey me\n").unwrap();
    std::fs::write(h.join("auth.json"), "{\"token\":2}").unwrap();
    assert_eq!(
        home.config_after(b"a = 1\n").unwrap(),
        (b"a = 1\n".to_vec(), false)
    );
    let review = Dir::open(&base).unwrap();
    let left = home.finish(Some((&review, OsStr::new("run.json.codex-home"))));
    assert_eq!(left.credentials, Some("changed"));
    let paths: Vec<&str> = left.entries.iter().map(|e| e.path.as_str()).collect();
    assert_eq!(
        paths,
        [
            "AGENTS.md",
            "config.toml",
            "sessions",
            "sessions/rollout.jsonl"
        ],
        "the credentials' copy is removed first"
    );
    assert!(left.problems.is_empty(), "{:?}", left.problems);
    assert!(!h.exists(), "the home is removed after the run");
    let kept = base.join("run.json.codex-home");
    assert_eq!(
        names(&kept),
        ["AGENTS.md", "config.toml", "sessions"],
        "no credentials kept"
    );
    assert_eq!(
        std::fs::read_to_string(base.join("creds/auth.json")).unwrap(),
        "{\"token\":1}",
        "never written back"
    );
    // The next run starts fresh.
    let again = prepare(&ir, b"a = 1\n", None, false, &[]).unwrap();
    assert_eq!(names(&h), ["config.toml"]);
    again.remove();
}

#[test]
fn a_config_changed_and_put_back_is_drift() {
    let t = tempfile::tempdir().unwrap();
    let base = t.path().canonicalize().unwrap();
    std::fs::create_dir(base.join("w")).unwrap();
    let ir = ir_at(&base, None);
    let cfg = base.join("w/home/.codex/config.toml");
    // Edited in place, then the same bytes put back.
    let home = prepare(&ir, b"a = 1\n", None, false, &[]).unwrap();
    std::thread::sleep(std::time::Duration::from_millis(20));
    std::fs::write(&cfg, "a = 2\n").unwrap();
    std::fs::write(&cfg, "a = 1\n").unwrap();
    let e = home.config_after(b"a = 1\n").unwrap_err().to_string();
    assert!(e.contains("put back"), "{e}");
    home.remove();
    // Rewritten with the same settings in other bytes.
    let home = prepare(&ir, b"# generated\na = 1\n", None, false, &[]).unwrap();
    std::thread::sleep(std::time::Duration::from_millis(20));
    std::fs::write(&cfg, "a = 1\n").unwrap();
    let e = home
        .config_after(b"# generated\na = 1\n")
        .unwrap_err()
        .to_string();
    assert!(e.contains("same settings"), "{e}");
    home.remove();
    // Replaced by a rename.
    let home = prepare(&ir, b"a = 1\n", None, false, &[]).unwrap();
    std::fs::write(base.join("w/home/.codex/x"), "a = 1\n").unwrap();
    std::fs::rename(base.join("w/home/.codex/x"), &cfg).unwrap();
    assert!(home
        .config_after(b"a = 1\n")
        .unwrap_err()
        .to_string()
        .contains("replaced"));
    home.remove();
    // The home itself renamed away and made again.
    let home = prepare(&ir, b"a = 1\n", None, false, &[]).unwrap();
    std::fs::rename(base.join("w/home/.codex"), base.join("w/home/old")).unwrap();
    std::fs::create_dir(base.join("w/home/.codex")).unwrap();
    std::fs::write(&cfg, "a = 1\n").unwrap();
    assert!(home
        .config_after(b"a = 1\n")
        .unwrap_err()
        .to_string()
        .contains("replaced"));
    let left = home.finish(None);
    assert!(
        left.problems.iter().any(|p| p.contains("replaced")),
        "{:?}",
        left.problems
    );
}

/// From outside the sandbox (inside, the config is read-only): a
/// config grown into a sparse 3 GiB file is read no further than a
/// bound, and is drift.
#[test]
fn a_sparse_config_is_read_only_up_to_a_bound() {
    let t = tempfile::tempdir().unwrap();
    let base = t.path().canonicalize().unwrap();
    std::fs::create_dir(base.join("w")).unwrap();
    let ir = ir_at(&base, None);
    let home = prepare(&ir, b"a = 1\n", None, false, &[]).unwrap();
    std::fs::OpenOptions::new()
        .write(true)
        .open(base.join("w/home/.codex/config.toml"))
        .unwrap()
        .set_len(3 << 30)
        .unwrap();
    let e = home.config_after(b"a = 1\n").unwrap_err().to_string();
    assert!(e.contains("more than"), "{e}");
    home.remove();
}

#[test]
fn a_link_on_the_way_or_credentials_in_a_write_root_are_refused() {
    let t = tempfile::tempdir().unwrap();
    let base = t.path().canonicalize().unwrap();
    std::fs::create_dir(base.join("w")).unwrap();
    std::fs::write(base.join("w/auth.json"), "{}").unwrap();
    // Named inside a write root: compile refuses it.
    let r = base.display().to_string();
    let spec = format!(
        "version = 1\nname = \"c\"\n[filesystem]\nwrite = [\"{r}/w\"]\n[env]\nset = {{ CODEX_HOME = \"{r}/w/home/.codex\" }}\n[codex]\ncredentials = \"{r}/w/auth.json\"\n"
    );
    let e = crate::compile("c.toml", &spec, &Vec::new(), &crate::facts::RealHost).unwrap_err();
    assert_eq!(e.0[0].code, crate::diag::code::CODEX_CREDENTIALS);
    // Reached through a link into one: refused when the run starts.
    std::os::unix::fs::symlink(base.join("w"), base.join("to-w")).unwrap();
    let ir = ir_at(&base, Some(&base.join("to-w/auth.json")));
    let e = read_credentials(&ir).unwrap_err();
    assert!(
        matches!(&e, Refused::Io(m) if m.contains("inside the write root")),
        "{e:?}"
    );
    std::fs::write(base.join("secret"), "root's").unwrap();
    std::os::unix::fs::symlink(base.join("secret"), base.join("link.json")).unwrap();
    let ir = ir_at(&base, Some(&base.join("link.json")));
    assert!(matches!(read_credentials(&ir), Err(Refused::Io(m)) if m.contains("symlink")));
    // A link in place of a directory on the way: refused, nothing made through it.
    std::fs::create_dir(base.join("elsewhere")).unwrap();
    std::os::unix::fs::symlink(base.join("elsewhere"), base.join("w/home")).unwrap();
    assert!(matches!(
        prepare(&ir_at(&base, None), b"a\n", None, true, &[]),
        Err(Refused::Left(_))
    ));
    assert_eq!(
        std::fs::read_dir(base.join("elsewhere")).unwrap().count(),
        0
    );
}
