//! Property tests: order does not matter, compiles are reproducible, values
//! cross byte for byte, and no input makes the compiler panic or emit a
//! string literal that breaks out of its quotes.

mod common;

use std::collections::BTreeMap;

use proptest::prelude::*;
use sealc::facts::{FakeHost, VarFlags};

const POOL: &[&str] = &[
    "/Users/agent",
    "/Users/agent/.codex",
    "/Users/agent/src",
    "/Users/agent/src/pub",
    "/tmp",
    "/tmp/run",
    "/tmp/run/ws",
    "/tmp/run/ws/.secret",
    "/var/folders/x",
    "/etc/ssh",
    "/opt/a",
    "/opt/a/b",
    "/opt/a/b/c",
    "/private/tmp/other",
    "/srv",
    "/srv/data",
];

#[derive(Clone, Debug)]
struct Gen {
    base: &'static str,
    mode: &'static str,
    deny: Vec<&'static str>,
    allow: Vec<&'static str>,
    meta: Vec<&'static str>,
    write: Vec<&'static str>,
    /// Paths strictly inside a write root, holding none, and names.
    protect: Vec<&'static str>,
    set: BTreeMap<String, String>,
    pass: Vec<&'static str>,
    secret: Vec<&'static str>,
    hosts: Vec<&'static str>,
}

fn gen() -> impl Strategy<Value = Gen> {
    // Each pool path gets one role at most, so no list contradicts another.
    (
        prop::sample::select(vec!["allow-default", "deny-default"]),
        prop::sample::select(vec!["none", "proxy", "open"]),
        prop::collection::vec(0u8..6, POOL.len()),
        prop::collection::btree_map("[A-Z][A-Z0-9_]{0,6}", "[ -~]{0,12}", 0..4),
        prop::sample::subsequence(
            vec!["api.openai.com", "chatgpt.com", ".oaiusercontent.com"],
            0..3,
        ),
        prop::sample::subsequence(vec![".git/hooks", ".git/config", "zz", "b/zz"], 0..4),
    )
        .prop_map(|(base, mode, roles, set, hosts, names)| {
            let pick = |r: u8| -> Vec<&'static str> {
                POOL.iter()
                    .zip(&roles)
                    .filter(|(_, x)| **x == r)
                    .map(|(p, _)| *p)
                    .collect()
            };
            let set: BTreeMap<String, String> = set
                .into_iter()
                .filter(|(k, _)| {
                    !["PATH", "LANG", "OPENAI_API_KEY"].contains(&k.as_str())
                        && !k.ends_with("PROXY")
                        // A loader variable is refused without opting in.
                        && !sealc::ir::is_loader_var(k)
                })
                .collect();
            let write = pick(4);
            // Where a path leads on the demo host (its `/tmp` and `/var`).
            let real = |p: &str| {
                use sealc::facts::Host as _;
                let h = host();
                h.canonicalize(p).unwrap_or_else(|| {
                    for (l, to) in [("/tmp", "/private/tmp"), ("/var", "/private/var")] {
                        if let Some(rest) = p.strip_prefix(l) {
                            if rest.is_empty() || rest.starts_with('/') {
                                return format!("{to}{rest}");
                            }
                        }
                    }
                    p.to_string()
                })
            };
            let inside = |p: &str, w: &str| p != w && p.starts_with(&format!("{w}/"));
            let mut protect: Vec<&'static str> = pick(5)
                .into_iter()
                .filter(|p| {
                    let rp = real(p);
                    write.iter().any(|w| inside(p, w) && inside(&rp, &real(w)))
                        && !write.iter().any(|w| inside(w, p) || inside(&real(w), &rp))
                })
                .collect();
            protect.extend(names);
            Gen {
                base,
                mode,
                deny: pick(1),
                allow: pick(2),
                meta: pick(3),
                write,
                protect,
                set,
                pass: vec!["PATH", "LANG"],
                secret: vec!["OPENAI_API_KEY"],
                hosts,
            }
        })
}

fn q(s: &str) -> String {
    toml::Value::String(s.to_string()).to_string()
}

fn list(items: &[&str]) -> String {
    format!(
        "[{}]",
        items.iter().map(|s| q(s)).collect::<Vec<_>>().join(", ")
    )
}

/// Render the spec, sections and keys in the given order, arrays permuted.
fn render(g: &Gen, reversed: bool, perm: &[usize]) -> String {
    let shuffle = |v: &[&'static str]| -> Vec<&'static str> {
        let mut idx: Vec<usize> = (0..v.len()).collect();
        idx.sort_by_key(|i| perm.get(*i).copied().unwrap_or(*i));
        if reversed {
            idx.reverse();
        }
        idx.into_iter().map(|i| v[i]).collect()
    };
    let mut sections = [
        format!("[target]\nbase = {}\nplatform = \"macos\"\n", q(g.base)),
        {
            let mut keys = [
                format!("deny_read = {}", list(&shuffle(&g.deny))),
                format!("allow_read = {}", list(&shuffle(&g.allow))),
                format!("metadata_only = {}", list(&shuffle(&g.meta))),
                format!("write = {}", list(&shuffle(&g.write))),
                format!("protect = {}", list(&shuffle(&g.protect))),
                format!(
                    "write_devices = {}",
                    list(&shuffle(&["/dev/null", "/dev/tty"]))
                ),
            ];
            if reversed {
                keys.reverse();
            }
            format!("[filesystem]\n{}\n", keys.join("\n"))
        },
        {
            let mut keys = vec![
                format!("mode = {}", q(g.mode)),
                format!("hosts = {}", list(&shuffle(&g.hosts))),
            ];
            if g.mode == "proxy" {
                keys.push("proxy = \"127.0.0.1:${port}\"".into());
            }
            if reversed {
                keys.reverse();
            }
            format!("[network]\n{}\n", keys.join("\n"))
        },
        {
            let mut set: Vec<String> = g
                .set
                .iter()
                .map(|(k, v)| format!("{k} = {}", q(&v.replace("${", "$${"))))
                .collect();
            if reversed {
                set.reverse();
            }
            format!(
                "[env]\nsecret = {}\nset = {{ {} }}\npass = {}\n",
                list(&g.secret),
                set.join(", "),
                list(&shuffle(&g.pass))
            )
        },
        "[vars]\nport = { default = \"8080\" }\nunused = { default = \"x\" }\n".to_string(),
        "[codex]\nreasoning_effort = \"high\"\nmodel = \"gpt-5.5\"\n".to_string(),
    ];
    if reversed {
        sections.reverse();
    }
    format!("version = 1\nname = \"prop\"\n{}", sections.join("\n"))
}

fn host() -> FakeHost {
    common::demo_host()
        .env("PATH", "/usr/bin:/bin")
        .env("LANG", "C")
}

fn artifacts(src: &str) -> BTreeMap<String, Vec<u8>> {
    let c = sealc::compile("prop.toml", src, &VarFlags::new(), &host()).unwrap_or_else(|d| {
        panic!("{}\n{}", src, sealc::diag::render(&d, "prop.toml", src));
    });
    let mut files = c.files;
    files.remove("seal.json");
    files
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 64, failure_persistence: None, .. ProptestConfig::default() })]

    #[test]
    fn key_and_array_order_do_not_change_the_artifacts(g in gen(), perm in prop::collection::vec(0usize..32, 16)) {
        let a = artifacts(&render(&g, false, &[]));
        let b = artifacts(&render(&g, true, &perm));
        prop_assert_eq!(a, b);
        // And for Linux, where protected paths are mounts.
        let linux = |src: String| src.replace("platform = \"macos\"", "platform = \"linux\"");
        let a = artifacts(&linux(render(&g, false, &[])));
        let b = artifacts(&linux(render(&g, true, &perm)));
        prop_assert_eq!(a, b);
    }

    #[test]
    fn two_compiles_give_identical_records(g in gen()) {
        let src = render(&g, false, &[]);
        let one = sealc::compile("p.toml", &src, &VarFlags::new(), &host()).unwrap();
        let two = sealc::compile("p.toml", &src, &VarFlags::new(), &host()).unwrap();
        prop_assert_eq!(&one.files, &two.files);
        prop_assert_eq!(one.record.binding, two.record.binding);
    }

    #[test]
    fn set_values_cross_byte_for_byte(value in "[^\u{0}]{0,40}") {
        // `${` starts a reference; `$${` writes a literal `${`.
        let src = format!("version = 1\nname = \"v\"\n[env]\nset = {{ V = {} }}\n", q(&value.replace("${", "$${")));
        let c = sealc::compile("v.toml", &src, &VarFlags::new(), &FakeHost::new()).unwrap();
        let env: serde_json::Value = serde_json::from_slice(&c.files["env.json"]).unwrap();
        prop_assert_eq!(env["env"]["V"].as_str(), Some(value.as_str()));
        let want = format!("V={value}");
        prop_assert!(c.record.exec.argv_prefix.contains(&want));
        // env.json holds no argv: running one would be a weaker seal than `sealc exec`.
        prop_assert!(env.get("argv_prefix").is_none());
        let cfg: toml::Table = toml::from_str(std::str::from_utf8(&c.files["codex/config.toml"]).unwrap()).unwrap();
        prop_assert_eq!(cfg["shell_environment_policy"]["set"]["V"].as_str(), Some(value.as_str()));
    }

    #[test]
    fn no_path_breaks_out_of_a_profile_string(path in "/[ -~\u{80}-\u{10ffff}\n\t\r]{0,40}") {
        let src = format!("version = 1\nname = \"p\"\n[filesystem]\ndeny_read = [{}]\n", q(&path));
        match sealc::compile("p.toml", &src, &VarFlags::new(), &FakeHost::new()) {
            Ok(c) => {
                let sb = String::from_utf8(c.files["seal.sb"].clone()).unwrap();
                prop_assert!(sealc::ir::check_path(&path).is_ok());
                for line in sb.lines().filter(|l| !l.starts_with(';')) {
                    // Outside comments, quotes pair up and nothing is escaped.
                    prop_assert_eq!(line.matches('"').count() % 2, 0, "{}", line);
                    prop_assert!(!line.contains('\\'), "{}", line);
                }
                let rule = format!("(deny file-read* (subpath \"{path}\"))");
                prop_assert!(sb.contains(&rule));
            }
            Err(d) => {
                // Refused for the path, or (holding `${`) for a reference
                // that is malformed or names no var.
                let reference = path.contains("${")
                    && d.0.iter().all(|x| {
                        x.code == "sealc::spec::interpolation" || x.code == "sealc::var::undeclared"
                    });
                prop_assert!(sealc::ir::check_path(&path).is_err() || reference, "{:?}", d);
                prop_assert!(d.0.iter().all(|x| x.span.is_some()));
            }
        }
    }
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 256, failure_persistence: None, .. ProptestConfig::default() })]

    #[test]
    fn verify_never_accepts_or_panics_on_arbitrary_bytes(bytes in prop::collection::vec(any::<u8>(), 0..512)) {
        let none = |_: &str| None;
        let outcome = sealc::verify::verify(&bytes, &none);
        prop_assert_eq!(outcome.report.verdict(), sealc::verify::Verdict::Unusable);
    }
}

/// Files of the link property: in the write root `/w` (some in denied
/// roots, one in a root re-allowed inside one) and outside it (`/o`).
const LINKABLE: &[&str] = &[
    "/w/a",
    "/w/b/c",
    "/w/g/x",
    "/w/g/y/z",
    "/w/g/pub/p",
    "/w/h/q",
    "/o/r",
    "/o/s/t",
];

proptest! {
    #![proptest_config(ProptestConfig { cases: 128, failure_persistence: None, .. ProptestConfig::default() })]

    /// Issue 22, finding 3: a compile is refused for a hard link exactly
    /// when a file in a denied root inside the write root has a link that
    /// no denied root hides, and the refusal names every such link in the
    /// write root.
    #[test]
    fn a_compile_is_refused_exactly_when_a_denied_file_has_a_visible_link(
        groups in prop::collection::vec(0u8..4, LINKABLE.len()),
        deny_g in any::<bool>(),
        h_kind in 0u8..3,
        allow_pub in any::<bool>(),
        macos in any::<bool>(),
    ) {
        let allow_pub = allow_pub && deny_g;
        let mut host = FakeHost::new().dir("/w/g").dir("/w/h").dir("/o");
        let mut first: BTreeMap<u8, &str> = BTreeMap::new();
        for (p, g) in LINKABLE.iter().zip(&groups) {
            host = match first.get(g) {
                Some(f) => host.hard_link(f, p),
                None => {
                    first.insert(*g, p);
                    host.file(p, b"")
                }
            };
        }
        let mut deny = Vec::new();
        let mut meta = Vec::new();
        if deny_g {
            deny.push("/w/g");
        }
        match h_kind {
            1 => deny.push("/w/h"),
            2 => meta.push("/w/h"),
            _ => {}
        }
        let allow: Vec<&str> = if allow_pub { vec!["/w/g/pub"] } else { vec![] };
        let src = format!(
            "version = 1\nname = \"l\"\n[target]\nplatform = \"{}\"\n[filesystem]\nwrite = [\"/w\"]\ndeny_read = {}\nmetadata_only = {}\nallow_read = {}\n",
            if macos { "macos" } else { "linux" },
            list(&deny),
            list(&meta),
            list(&allow),
        );
        let within = |p: &str, r: &str| p.starts_with(&format!("{r}/"));
        let hidden = |p: &str| {
            deny.iter().chain(&meta).any(|d| within(p, d))
                && !(allow_pub && within(p, "/w/g/pub"))
        };
        let mut exposed_groups = Vec::new();
        for g in first.keys() {
            let members: Vec<&str> = LINKABLE
                .iter()
                .zip(&groups)
                .filter(|(_, x)| *x == g)
                .map(|(p, _)| *p)
                .collect();
            if members.iter().any(|p| hidden(p)) && members.iter().any(|p| !hidden(p)) {
                exposed_groups.push(members);
            }
        }
        let linked: Vec<String> = match sealc::compile("l.toml", &src, &VarFlags::new(), &host) {
            Ok(_) => Vec::new(),
            Err(d) => d.0.iter().filter(|d| d.code == "sealc::root::linked").map(|d| d.message.clone()).collect(),
        };
        prop_assert_eq!(!linked.is_empty(), !exposed_groups.is_empty(), "{}\n{:?}\n{:?}", src, groups, linked);
        let said = linked.join("\n");
        for members in &exposed_groups {
            for p in members.iter().filter(|p| !hidden(p) && within(p, "/w")) {
                let quoted = format!("`{p}`");
                prop_assert!(said.contains(&quoted), "{} not named:\n{}", p, said);
            }
            if members.iter().any(|p| within(p, "/o")) {
                prop_assert!(said.contains("outside the write roots"), "{}", said);
            }
        }
    }
}

/// What the path property once drew (`/${`): a path holding a reference
/// is refused for the reference, with its span.
#[test]
fn a_path_holding_a_reference_is_refused_for_it() {
    for (path, code) in [
        ("/${", "sealc::spec::interpolation"),
        ("/${nope}", "sealc::var::undeclared"),
    ] {
        let src = format!(
            "version = 1\nname = \"p\"\n[filesystem]\ndeny_read = [{}]\n",
            q(path)
        );
        let d = sealc::compile("p.toml", &src, &VarFlags::new(), &FakeHost::new()).unwrap_err();
        assert!(
            d.0.iter().any(|x| x.code == code && x.span.is_some()),
            "{path}: {d:?}"
        );
    }
}
