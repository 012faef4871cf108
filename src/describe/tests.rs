use super::*;

fn item(path: &str) -> PathItem {
    PathItem {
        written: path.to_string(),
        path: path.to_string(),
        realpath: None,
        notes: Vec::new(),
    }
}

fn policy() -> Policy {
    let group = |paths: Vec<PathItem>| Group {
        meaning: String::new(),
        paths,
    };
    Policy {
        seal: "s".into(),
        description: None,
        platform: "macos".into(),
        base: "allow-default".into(),
        isolation: None,
        proc: None,
        filesystem: Filesystem {
            base_reads: String::new(),
            system_base: Vec::new(),
            can_read: group(Vec::new()),
            cannot_read: group(vec![item("/home")]),
            stat_only: group(Vec::new()),
            can_write: group(vec![item("/work")]),
            devices: group(vec![item("/dev/null")]),
            read_only: group(Vec::new()),
            launcher: Vec::new(),
        },
        network: Network {
            mode: "none".into(),
            meaning: String::new(),
            proxy: None,
            hosts: Vec::new(),
            ports: Vec::new(),
            allow_ranges: Vec::new(),
        },
        env: Env {
            passed: vec!["PATH".into()],
            passed_unset: Vec::new(),
            set: vec!["HOME".into()],
            proxy_vars: Vec::new(),
            secrets: Vec::new(),
            values: BTreeMap::from([
                ("PATH".to_string(), "/bin".to_string()),
                ("HOME".to_string(), "/work".to_string()),
            ]),
        },
        limits: BTreeMap::from([("wall_seconds".to_string(), 60)]),
        reset: Vec::new(),
        outputs: Vec::new(),
        ipc: BTreeMap::new(),
        codex: Codex {
            sealed: false,
            versions: vec!["0.171.0".into()],
            sandbox: "off".into(),
            config: None,
            model: None,
            reasoning_effort: None,
            workspace: None,
            workspace_trusted: false,
            provider: None,
            credentials: None,
        },
    }
}

#[test]
fn a_policy_differs_from_itself_in_nothing() {
    assert!(diff(&policy(), &policy()).is_empty());
}

#[test]
fn a_write_root_inside_a_hidden_one_allows_more() {
    let old = policy();
    let mut new = policy();
    new.filesystem.can_write.paths.push(item("/home/x/out"));
    let d = diff(&old, &new);
    assert_eq!(d.len(), 1, "{d:?}");
    assert_eq!(d[0].effect, Effect::More);
    assert_eq!(d[0].subject, "/home/x/out");
    assert!(d[0].text.contains("writable (was hidden"), "{}", d[0].text);
}

#[test]
fn a_protected_path_allows_less_and_its_removal_more() {
    let old = policy();
    let mut new = policy();
    new.filesystem
        .read_only
        .paths
        .push(item("/work/.git/hooks"));
    let d = diff(&old, &new);
    assert_eq!(d.len(), 1, "{d:?}");
    assert_eq!(d[0].effect, Effect::Less);
    assert_eq!(d[0].subject, "/work/.git/hooks");
    assert!(
        d[0].text
            .contains("read-only inside a write root (was writable; newly listed)"),
        "{}",
        d[0].text
    );
    let back = diff(&new, &old);
    assert_eq!(back.len(), 1, "{back:?}");
    assert_eq!(back[0].effect, Effect::More);
    assert!(
        back[0].text.contains("writable (was read-only"),
        "{}",
        back[0].text
    );
}

#[test]
fn a_write_root_inside_another_changes_nothing() {
    let old = policy();
    let mut new = policy();
    new.filesystem.can_write.paths.push(item("/work/sub"));
    assert!(diff(&old, &new).is_empty());
}

#[test]
fn widening_comes_first_and_values_never_show() {
    let old = policy();
    let mut new = policy();
    new.limits.insert("wall_seconds".into(), 30);
    new.network.mode = "allowlist".into();
    new.network.hosts.push("example.com".into());
    new.env.values.insert("HOME".into(), "/secret-ish".into());
    let d = diff(&old, &new);
    let effects: Vec<Effect> = d.iter().map(|c| c.effect).collect();
    assert_eq!(
        effects,
        [Effect::More, Effect::More, Effect::Less, Effect::Changed],
        "{d:?}"
    );
    assert!(d.iter().all(|c| !c.text.contains("/secret-ish")));
    let json = serde_json::to_string(&new).unwrap();
    assert!(!json.contains("/secret-ish") && !json.contains("\"/bin\""));
}

#[test]
fn an_env_name_moving_lists_is_a_change() {
    let old = policy();
    let mut new = policy();
    new.env.passed.clear();
    new.env.set.push("PATH".into());
    let d = diff(&old, &new);
    assert_eq!(d.len(), 1);
    assert_eq!(d[0].effect, Effect::Changed);
    assert!(d[0].text.starts_with("`PATH` is set (was passed"));
}

/// Issue 26: a seal's `/proc` changing is told, and which way: the host's
/// shows more than a fresh one, which shows more than none.
#[test]
fn a_changed_proc_is_told_more_or_less() {
    use crate::spec::ProcMode;
    let with = |m: ProcMode| Policy {
        platform: "linux".into(),
        proc: Some(proc_words(m).to_string()),
        ..policy()
    };
    let effect = |a: ProcMode, b: ProcMode| {
        let mut out = Vec::new();
        super::diff::diff_seal(&with(a), &with(b), &mut out);
        out.into_iter()
            .find(|c| c.subject == "proc")
            .map(|c| c.effect)
    };
    assert_eq!(
        effect(ProcMode::Fresh, ProcMode::Host),
        Some(super::diff::Effect::More)
    );
    assert_eq!(
        effect(ProcMode::None, ProcMode::Fresh),
        Some(super::diff::Effect::More)
    );
    assert_eq!(
        effect(ProcMode::Host, ProcMode::None),
        Some(super::diff::Effect::Less)
    );
    assert_eq!(effect(ProcMode::Fresh, ProcMode::Fresh), None);
}

/// Issue 26: a seal moving to the Landlock mode keeps less (it is told as
/// `more` for the agent), and back as `less`.
#[test]
fn a_changed_isolation_is_told_more_or_less() {
    use crate::spec::Isolation;
    let with = |i: Isolation| Policy {
        platform: "linux".into(),
        isolation: Some(isolation_words(i).to_string()),
        ..policy()
    };
    let effect = |a: Isolation, b: Isolation| {
        let mut out = Vec::new();
        super::diff::diff_seal(&with(a), &with(b), &mut out);
        out.into_iter()
            .find(|c| c.subject == "isolation")
            .map(|c| c.effect)
    };
    assert_eq!(
        effect(Isolation::Namespaces, Isolation::Landlock),
        Some(super::diff::Effect::More)
    );
    assert_eq!(
        effect(Isolation::Landlock, Isolation::Namespaces),
        Some(super::diff::Effect::Less)
    );
    assert_eq!(effect(Isolation::Landlock, Isolation::Landlock), None);
}

#[test]
fn credentials_given_to_codex_allow_more_and_taken_away_less() {
    let old = policy();
    let mut new = policy();
    new.codex.credentials = Some("/op/.codex/auth.json".into());
    let d = diff(&old, &new);
    assert_eq!(d.len(), 1, "{d:?}");
    assert_eq!(d[0].effect, Effect::More);
    assert_eq!(d[0].subject, "credentials");
    assert!(
        d[0].text.contains("its tools can read them"),
        "{}",
        d[0].text
    );
    let back = diff(&new, &old);
    assert_eq!(back[0].effect, Effect::Less);
    let mut moved = new.clone();
    moved.codex.credentials = Some("/op2/auth.json".into());
    assert_eq!(diff(&new, &moved)[0].effect, Effect::Changed);
}
