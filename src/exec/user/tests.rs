use super::*;

const PASSWD: &str =
    "root:x:0:0::/root:/bin/sh\nnobody:x:65534:65534::/:/x\nagent:x:999:995::/:/x\n";

#[test]
fn a_problem_names_the_agents_path_escaped() {
    let mut w = Walk::new(Ids { uid: 1, gid: 1 }, Op::Back { agent: 2 }, 0);
    let path = "/w/\u{1b}]52;c;eA==\u{7}\u{1b}[2J\u{9b}A\nsealc: fake";
    w.fail(path, rustix::io::Errno::PERM).unwrap();
    w.fail(path, rustix::io::Errno::LOOP).unwrap();
    assert_eq!(w.problems.len(), 2);
    for p in &w.problems {
        assert!(!p.chars().any(char::is_control), "{p:?}");
        assert!(
            p.contains(r"\u{1b}]52;c;eA==\u{7}\u{1b}[2J\u{9b}A\nsealc"),
            "{p}"
        );
    }
}

#[test]
fn users_by_name_uid_or_both_never_root() {
    assert_eq!(
        parse_user("agent", PASSWD).unwrap(),
        Ids { uid: 999, gid: 995 }
    );
    assert_eq!(
        parse_user("999", PASSWD).unwrap(),
        Ids { uid: 999, gid: 995 }
    );
    assert_eq!(parse_user("5:6", PASSWD).unwrap(), Ids { uid: 5, gid: 6 });
    assert_eq!(parse_user("nobody", "").unwrap(), NOBODY);
    assert!(parse_user("root", PASSWD)
        .unwrap_err()
        .to_string()
        .contains("root"));
    assert!(parse_user("0:5", PASSWD).is_err());
    assert!(parse_user("2146435072", PASSWD)
        .unwrap_err()
        .to_string()
        .contains("range of run uids"));
    assert!(parse_user("ghost", PASSWD)
        .unwrap_err()
        .to_string()
        .contains("`ghost`"));
}
