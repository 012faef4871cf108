use super::*;

#[test]
fn the_environment_round_trips_through_the_pipe_encoding() {
    let env = vec![
        ("A".to_string(), OsString::from("x=y z")),
        ("B".to_string(), OsString::from("")),
    ];
    let back = decode_env(&encode_env(&env));
    assert_eq!(
        back,
        vec![
            ("A".into(), OsString::from("x=y z")),
            ("B".into(), OsString::from(""))
        ]
    );
}

const ALL: [Refusals; 12] = {
    let mut all = [Refusals {
        offline: false,
        file_size: false,
        landlock: None,
    }; 12];
    let mut i = 0;
    while i < 12 {
        all[i] = Refusals {
            offline: i & 1 != 0,
            file_size: i & 2 != 0,
            landlock: match i / 4 {
                0 => None,
                1 => Some(crate::refusals::LandlockMode { shared_user: false }),
                _ => Some(crate::refusals::LandlockMode { shared_user: true }),
            },
        };
        i += 1;
    }
    all
};

#[test]
fn the_filters_build_for_this_machine() {
    for r in ALL {
        let f = filters(r).unwrap();
        assert_eq!(f.len(), 2);
        assert!(f.iter().all(|p| !p.is_empty()));
    }
}

/// The system calls an entry of the refused list names: what stands
/// outside its parentheses, split at commas and `and`.
fn names_of(entry: &str) -> Vec<String> {
    let mut outside = String::new();
    let mut depth = 0;
    for c in entry.chars() {
        match c {
            '(' => depth += 1,
            ')' => depth -= 1,
            _ if depth == 0 => outside.push(c),
            _ => {}
        }
    }
    outside
        .replace(" and ", ",")
        .split(',')
        .map(|n| n.trim().to_string())
        .filter(|n| !n.is_empty())
        .collect()
}

/// `bwrap::refused_for` (what `seal.bwrap.json` and `--dry-run` say the
/// filter refuses) names exactly the calls the rules cover, for every
/// seal: a rule the list does not name, or a name no rule covers, fails.
#[test]
fn the_refused_list_names_exactly_the_calls_the_filter_refuses() {
    use std::collections::BTreeSet;
    // Calls x86_64 has and other architectures do not.
    let x86_64_only = ["chmod", "open", "creat", "mknod", "chown", "lchown"];
    for r in ALL {
        let mut list = crate::backend::bwrap::refused_for(r.offline, r.file_size);
        if let Some(l) = r.landlock {
            // What `seal.landlock.json` lists besides.
            list.extend(crate::refusals::landlock_mode(r.offline, l.shared_user));
        }
        let mut listed = BTreeSet::new();
        for entry in &list {
            if entry.starts_with("x32 ") {
                continue; // numbers, not names: checked below
            }
            for n in names_of(entry) {
                assert!(
                    n.bytes()
                        .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'_'),
                    "`{entry}` names `{n}`, which is not a system call"
                );
                if cfg!(target_arch = "x86_64") || !x86_64_only.contains(&n.as_str()) {
                    listed.insert(n);
                }
            }
        }
        let named = named(r).unwrap();
        let mut covered: BTreeSet<String> = named.iter().map(|(n, _, _)| n.to_string()).collect();
        covered.extend(
            named_enosys(r)
                .unwrap()
                .iter()
                .map(|(n, _, _)| n.to_string()),
        );
        assert_eq!(listed, covered, "{r:?}: the list and the rules differ");
        // Every number the filter holds is a named call's (or x32's
        // own range, which the list says).
        let numbers: BTreeSet<i64> = named.iter().map(|(_, nr, _)| *nr).collect();
        for nr in rules(r).unwrap().keys() {
            let own = nr & !0x4000_0000;
            let x32_own =
                cfg!(target_arch = "x86_64") && nr & 0x4000_0000 != 0 && (512..=547).contains(&own);
            assert!(
                numbers.contains(&own) || x32_own,
                "{r:?}: a rule for call {nr} that no name covers"
            );
        }
        if cfg!(target_arch = "x86_64") {
            assert!(list.iter().any(|e| e.starts_with("x32 ")));
        }
    }
    // The conditional ones only when they apply.
    let names = |r: Refusals| -> BTreeSet<&str> {
        let mut v = named(r).unwrap();
        v.extend(named_enosys(r).unwrap());
        v.iter().map(|(n, _, _)| *n).collect()
    };
    let plain = names(Refusals::default());
    for n in [
        "socketpair",
        "setrlimit",
        "prlimit64",
        "timer_create",
        "mq_notify",
    ] {
        assert!(!plain.contains(n), "{n} is refused in every seal");
    }
    assert!(names(ALL[3]).is_superset(&BTreeSet::from([
        "socketpair",
        "setrlimit",
        "prlimit64",
        "timer_create",
        "mq_notify"
    ])));
}

/// A call named twice (`ioctl`, `clone`) keeps every rule of both, and a
/// call refused outright stays refused outright.
#[test]
fn rules_of_one_call_are_merged() {
    let named = named(Refusals::default()).unwrap();
    let rules = rules(Refusals::default()).unwrap();
    for call in [libc::SYS_ioctl, libc::SYS_clone] {
        let want: usize = named
            .iter()
            .filter(|(_, nr, _)| *nr == call)
            .map(|(_, _, r)| r.len())
            .sum();
        assert_eq!(rules[&call].len(), want);
        assert!(want > 2);
    }
    assert!(rules[&libc::SYS_fanotify_init].is_empty());
}

/// Each entry of the one table says what its own parts enforce: the calls
/// its text names are exactly the calls of its parts, an entry answered
/// `ENOSYS` says so, and every part's call has a number here (but the
/// x86_64-only ones elsewhere).
#[test]
fn each_refusal_entry_names_exactly_its_parts() {
    use crate::refusals::{Answer, TABLE};
    use std::collections::BTreeSet;
    for e in TABLE {
        if e.x32_own {
            assert!(e.parts.is_empty() && e.text.starts_with("x32 "), "{e:?}");
            continue;
        }
        let named: BTreeSet<String> = names_of(e.text).into_iter().collect();
        let parts: BTreeSet<String> = e.parts.iter().map(|p| p.call.to_string()).collect();
        assert_eq!(named, parts, "`{}` and its parts differ", e.text);
        let enosys = e.parts.iter().any(|p| p.answer == Answer::Enosys);
        assert_eq!(enosys, e.text.contains("ENOSYS"), "`{}`", e.text);
        for p in e.parts {
            let here =
                cfg!(target_arch = "x86_64") || !super::seccomp::X86_64_ONLY.contains(&p.call);
            assert_eq!(
                super::seccomp::number_of(p.call).is_some(),
                here,
                "`{}` in `{}`",
                p.call,
                e.text
            );
        }
    }
}
