//! Every profile sealc emits is fully decidable and unambiguous, and means
//! what the IR says: random specs are compiled, the profile is parsed back,
//! and the evaluator's verdicts for sampled paths and endpoints are compared
//! with the intent of each root.

use std::collections::BTreeMap;

use proptest::prelude::*;
use sealc::facts::FakeHost;
use sealc::sbpl::eval::{Action, Model, Target, Verdict};

const POOL: &[&str] = &[
    "/Users/agent",
    "/Users/agent/src",
    "/Users/agent/src/pub",
    "/Users/agent/src/pub/x",
    "/tmp/run",
    "/tmp/run/ws",
    "/tmp/run/ws/.h",
    "/opt/a",
    "/opt/a/b",
    "/opt/a/b/c",
    "/srv",
    "/srv/d",
];

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Role {
    Deny,
    Allow,
    Meta,
    Write,
}

fn within(p: &str, root: &str) -> bool {
    p == root || (p.starts_with(root) && p.as_bytes().get(root.len()) == Some(&b'/'))
}

/// The deepest root containing `p`, among those whose role passes `keep`.
fn deepest(roles: &BTreeMap<&str, Role>, p: &str, keep: impl Fn(Role) -> bool) -> Option<Role> {
    roles
        .iter()
        .filter(|(r, role)| keep(**role) && within(p, r))
        .max_by_key(|(r, _)| r.len())
        .map(|(_, role)| *role)
}

fn spellings(p: &str) -> Vec<String> {
    let mut v = vec![p.to_string()];
    if p.starts_with("/tmp/") || p == "/tmp" {
        v.push(format!("/private{p}"));
    }
    v
}

fn decided(m: &Model, op: &str, t: &Target) -> Result<Action, TestCaseError> {
    match m.query(op, t) {
        Verdict::Decided(d) => Ok(d.action),
        v => Err(TestCaseError::fail(format!("{op} {t:?}: {v:?}"))),
    }
}

fn expect(ok: bool) -> Action {
    if ok {
        Action::Allow
    } else {
        Action::Deny
    }
}

/// The roles drawn for the pool, and a spec that gives them.
fn random_spec(
    roles: &[u8],
    deny_default: bool,
    mode: &str,
    platform: &str,
) -> (BTreeMap<&'static str, Role>, String) {
    let mut map: BTreeMap<&str, Role> = BTreeMap::new();
    for (p, r) in POOL.iter().zip(roles) {
        let role = match r {
            1 => Role::Deny,
            2 => Role::Allow,
            3 => Role::Meta,
            4 => Role::Write,
            _ => continue,
        };
        map.insert(p, role);
    }
    let list = |role: Role| -> String {
        let v: Vec<String> = map
            .iter()
            .filter(|(_, r)| **r == role)
            .map(|(p, _)| format!("{p:?}"))
            .collect();
        format!("[{}]", v.join(", "))
    };
    let proxy = if mode == "proxy" {
        "proxy = \"127.0.0.1:3128\"\n"
    } else {
        ""
    };
    let src = format!(
        "version = 1\nname = \"prove\"\n[target]\nplatform = \"{platform}\"\nbase = \"{}\"\n[filesystem]\ndeny_read = {}\nallow_read = {}\nmetadata_only = {}\nwrite = {}\nwrite_devices = [\"/dev/null\"]\n[network]\nmode = \"{mode}\"\n{proxy}",
        if deny_default { "deny-default" } else { "allow-default" },
        list(Role::Deny), list(Role::Allow), list(Role::Meta), list(Role::Write),
    );
    (map, src)
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 48, failure_persistence: None, .. ProptestConfig::default() })]

    #[test]
    fn emitted_profiles_mean_what_the_spec_says(
        roles in prop::collection::vec(0u8..6, POOL.len()),
        deny_default in any::<bool>(),
        mode in prop::sample::select(vec!["none", "proxy", "open"]),
    ) {
        let (map, src) = random_spec(&roles, deny_default, mode, "macos");
        let c = match sealc::compile("p.toml", &src, &Vec::new(), &FakeHost::new()) {
            Ok(c) => c,
            Err(d) => return Err(TestCaseError::fail(format!("{src}\n{d:?}"))),
        };
        let text = String::from_utf8(c.files["seal.sb"].clone()).unwrap();
        let arena = sealc::sbpl::parse::Arena::new();
        let profile = sealc::sbpl::parse::parse(&text, &arena).unwrap();
        prop_assert_eq!(sealc::sbpl::parse::print(&profile), text.clone(), "round trip");
        let m = Model::new(&profile, &BTreeMap::new());

        // Proper ancestors of re-allowed roots are stat-able.
        let reallowed: Vec<&str> = map.iter().filter(|(_, r)| **r != Role::Deny).map(|(p, _)| *p).collect();
        for base in POOL {
            for p in [base.to_string(), format!("{base}/f")] {
                let read = match deepest(&map, &p, |_| true) {
                    Some(Role::Deny | Role::Meta) => false,
                    Some(Role::Allow | Role::Write) => true,
                    None => !deny_default,
                };
                let meta_rule = match deepest(&map, &p, |_| true) {
                    Some(Role::Deny) => false,
                    Some(_) => true,
                    None => !deny_default,
                };
                let is_ancestor = reallowed.iter().any(|r| within(r, &p) && *r != p);
                let write = deepest(&map, &p, |r| r != Role::Allow) == Some(Role::Write);
                // Under a denied root with no write root between (issue 11, item 6:
                // a write root inside a denied root links its own files).
                let denied = matches!(deepest(&map, &p, |r| r != Role::Allow), Some(Role::Deny | Role::Meta));
                for sp in spellings(&p) {
                    let t = Target::Path(sp.clone());
                    prop_assert_eq!(decided(&m, "file-read-data", &t)?, expect(read), "read {} in\n{}", sp, src);
                    prop_assert_eq!(decided(&m, "file-read-metadata", &t)?, expect(meta_rule || is_ancestor), "stat {} in\n{}", sp, src);
                    prop_assert_eq!(decided(&m, "file-write-data", &t)?, expect(write), "write {} in\n{}", sp, src);
                    prop_assert_eq!(decided(&m, "file-write-create", &t)?, expect(write), "create {} in\n{}", sp, src);
                    if denied {
                        prop_assert_eq!(decided(&m, "file-link", &t)?, Action::Deny, "link {} in\n{}", sp, src);
                        prop_assert_eq!(decided(&m, "file-clone", &t)?, Action::Deny, "clone {} in\n{}", sp, src);
                    }
                    // Issue 11, item 6: files of a write root can be linked
                    // and cloned within it, wherever it lies; the root itself
                    // is a fixed name.
                    if write {
                        let own_root = map.get(p.as_str()) == Some(&Role::Write);
                        prop_assert_eq!(decided(&m, "file-link", &t)?, expect(!own_root), "link {} in\n{}", sp, src);
                        prop_assert_eq!(decided(&m, "file-clone", &t)?, Action::Allow, "clone {} in\n{}", sp, src);
                        let holds_denied = map.iter().any(|(r, role)| matches!(role, Role::Deny | Role::Meta) && within(r, &p) && **r != p);
                        prop_assert_eq!(decided(&m, "file-write-unlink", &t)?, expect(!own_root && !holds_denied), "unlink {} in\n{}", sp, src);
                    }
                }
            }
        }
        // Writes outside every write root, and to devices.
        prop_assert_eq!(decided(&m, "file-write-data", &Target::Path("/etc/passwd".into()))?, Action::Deny);
        prop_assert_eq!(decided(&m, "file-write-data", &Target::Path("/dev/null".into()))?, Action::Allow);
        prop_assert_eq!(decided(&m, "file-write-data", &Target::Path("/dev/disk0".into()))?, Action::Deny);
        // Network per mode.
        let net = |host: &str, port| decided(&m, "network-outbound", &Target::Remote { host: host.into(), port });
        // Issue 11, item 1: `open` is open under either base.
        let open = mode == "open";
        prop_assert_eq!(net("127.0.0.1", 3128)?, expect(open || mode == "proxy"));
        prop_assert_eq!(net("::1", 3128)?, expect(open || mode == "proxy"));
        prop_assert_eq!(net("127.0.0.1", 22)?, expect(open));
        prop_assert_eq!(net("93.184.216.34", 443)?, expect(open));
    }
}

// What bubblewrap shows: a denied or metadata-only directory is an empty
// stand-in (its own stat works), and the directories on the way to a deeper
// mount can be stat-ed.
proptest! {
    #![proptest_config(ProptestConfig { cases: 48, failure_persistence: None, .. ProptestConfig::default() })]

    #[test]
    fn linux_seals_mean_what_the_spec_says(
        roles in prop::collection::vec(0u8..6, POOL.len()),
        deny_default in any::<bool>(),
        mode in prop::sample::select(vec!["none", "proxy", "open"]),
    ) {
        use sealc::mounts::{Access, Model};
        let (map, src) = random_spec(&roles, deny_default, mode, "linux");
        let host = POOL.iter().fold(FakeHost::new(), |h, p| h.dir(p));
        let c = match sealc::compile("p.toml", &src, &Vec::new(), &host) {
            Ok(c) => c,
            Err(d) => return Err(TestCaseError::fail(format!("{src}\n{d:?}"))),
        };
        let m = Model::from_artifact(&c.files["seal.bwrap.json"]).map_err(TestCaseError::fail)?;
        let reallowed: Vec<&str> = map.iter().filter(|(_, r)| **r != Role::Deny).map(|(p, _)| *p).collect();
        // Issue 11, item 5: a denied root inside a hidden one, with nothing
        // re-allowed between, is not mounted.
        let mounted: Vec<&str> = map
            .iter()
            .filter(|(r, role)| {
                let enclosing = map.iter().filter(|(o, _)| *o != *r && within(r, o)).max_by_key(|(o, _)| o.len());
                !(**role == Role::Deny && enclosing.is_some_and(|(_, e)| matches!(e, Role::Deny | Role::Meta)))
            })
            .map(|(p, _)| *p)
            .collect();
        for base in POOL {
            for p in [base.to_string(), format!("{base}/f")] {
                let deepest_root = map.iter().filter(|(r, _)| within(&p, r)).max_by_key(|(r, _)| r.len());
                let read = match deepest_root.map(|(_, r)| *r) {
                    Some(Role::Deny | Role::Meta) => false,
                    Some(Role::Allow | Role::Write) => true,
                    None => !deny_default,
                };
                let exact = deepest_root.is_some_and(|(r, _)| **r == p && mounted.contains(r));
                let on_the_way = mounted.iter().any(|r| within(r, &p) && *r != p);
                let is_ancestor = reallowed.iter().any(|r| within(r, &p) && *r != p);
                let meta = match deepest_root.map(|(_, r)| *r) {
                    Some(Role::Deny | Role::Meta) => exact || on_the_way,
                    Some(Role::Allow | Role::Write) => true,
                    None => !deny_default || on_the_way,
                };
                let write = deepest(&map, &p, |r| r != Role::Allow) == Some(Role::Write);
                let a = |x: Access| m.path(x, &p).allowed;
                prop_assert_eq!(a(Access::ReadData), read, "read {} in\n{}", p, src);
                prop_assert_eq!(a(Access::ReadMetadata), meta, "stat {} (ancestor {}) in\n{}", p, is_ancestor, src);
                prop_assert_eq!(a(Access::Write), write, "write {} in\n{}", p, src);
            }
        }
        prop_assert!(!m.path(Access::Write, "/etc/passwd").allowed);
        prop_assert!(m.path(Access::Write, "/dev/null").allowed);
        prop_assert!(!m.path(Access::Write, "/dev/sda").allowed);
        // /dev/shm is the sandbox's own, not the host's.
        prop_assert!(m.path(Access::Write, "/dev/shm/x").allowed);
        let open = mode == "open";
        prop_assert_eq!(m.connect("127.0.0.1", 3128).allowed, open || mode == "proxy");
        prop_assert_eq!(m.connect("127.0.0.1", 22).allowed, open);
        prop_assert_eq!(m.connect("93.184.216.34", 443).allowed, open);
    }
}
