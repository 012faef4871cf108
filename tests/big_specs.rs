//! Big and strange specs through the real binary: 10,000 and 100,000 roots,
//! one line of 100,000 characters, deep nesting. Each gives a result
//! (compiled, or refused with a spanned error), never a panic, and prints
//! a bounded number of short lines whatever the spec's size. How fast is
//! `benches/peers.sh`'s business, not a test's.

mod common;

use std::fmt::Write as _;

use common::*;

const HEAD: &str = "#:schema ../schemas/seal-spec.schema.json\nversion = 1\nname = \"big\"\n\n[target]\nplatform = \"macos\"\nbase = \"allow-default\"\n\n[filesystem]\n";

/// A spec denying `n` absent project directories, one per line (or all on
/// one line), and writing one directory (absent too).
fn many_roots(n: usize, one_line: bool) -> String {
    let mut s = String::from(HEAD);
    s.push_str("deny_read = [");
    for i in 0..n {
        if one_line {
            let _ = write!(s, "\"/Users/op/projects/p{i:06}\", ");
        } else {
            let _ = write!(s, "\n  \"/Users/op/projects/p{i:06}\",");
        }
    }
    s.push_str("\n]\nwrite = [\"/Users/op/run/ws\"]\n");
    s
}

/// No line of what was printed is longer than a terminal's few widths, and
/// there are few of them.
fn bounded(what: &str, text: &str, max_lines: usize) {
    let lines = text.lines().count();
    assert!(
        lines <= max_lines,
        "{what}: {lines} lines, more than {max_lines}:\n{}",
        text.lines().take(80).collect::<Vec<_>>().join("\n")
    );
    let widest = text.lines().map(|l| l.chars().count()).max().unwrap_or(0);
    assert!(widest <= 300, "{what}: a line of {widest} characters");
}

#[test]
fn ten_thousand_roots_compile_print_little_and_verify() {
    for one_line in [false, true] {
        let what = if one_line { "one line" } else { "one per line" };
        let out = Sealc::new()
            .file("big.toml", many_roots(10_000, one_line))
            .args(["compile", "big.toml"])
            .run();
        assert_eq!(out.code, 0, "{what}: {}", out.stderr);
        // Three absent roots in full, then one line that counts the rest.
        bounded(what, &out.stderr, 60);
        assert!(
            out.stderr
                .contains("9,998 more warnings like those above, not shown: "),
            "{what}: {}",
            out.stderr
        );
        assert!(out.stderr.contains("`--format json` lists every one"));
        assert_eq!(out.stderr.matches("does not exist here").count(), 3);
        bounded(what, &out.stdout, 10);
        let sb = std::fs::read_to_string(out.path("seal/seal.sb")).unwrap();
        assert!(sb.contains("/Users/op/projects/p009999"), "{what}");
        // The record verifies: bytes and record agree.
        let verified = Sealc::new()
            .in_dir(out.dir)
            .args(["verify", "seal/seal.json"])
            .run();
        assert_eq!(verified.code, 0, "{what}: {}", verified.stderr);
    }
}

#[test]
fn json_gives_every_finding_the_text_groups() {
    let out = Sealc::new()
        .file("big.toml", many_roots(10_000, false))
        .args(["compile", "big.toml", "--format", "json"])
        .run();
    assert_eq!(out.code, 0, "{}", out.stderr);
    assert_eq!(out.stderr, "", "JSON: nothing on stderr");
    let doc: serde_json::Value = serde_json::from_str(&out.stdout).unwrap();
    assert_eq!(doc["schema"], "sealc.compile/v1");
    assert_eq!(doc["exit"], 0);
    assert_eq!(doc["warnings"], 10_001);
    let diags = doc["diagnostics"].as_array().unwrap();
    assert_eq!(diags.len(), 10_001);
    // The last root, where it is: line 10,010 of the spec, column 3.
    let last = diags
        .iter()
        .find(|d| {
            d["message"]
                .as_str()
                .unwrap()
                .contains("/Users/op/projects/p009999")
        })
        .unwrap();
    assert_eq!(last["range"]["start"]["line"], 10_010);
    assert_eq!(last["range"]["start"]["column"], 3);
    assert_eq!(doc["files"].as_array().unwrap().len(), 4);
    assert!(doc["binding"].as_str().unwrap().starts_with("sha256:"));
    // Refused: the document still comes, with the exit and the span, and
    // nothing is written.
    let bad = Sealc::new()
        .file("bad.toml", format!("{HEAD}deny_read = [\"/x/\"]\n"))
        .args(["compile", "bad.toml", "--format", "json"])
        .run();
    assert_eq!(bad.code, 2, "{}", bad.stdout);
    assert_eq!(bad.stderr, "");
    let doc: serde_json::Value = serde_json::from_str(&bad.stdout).unwrap();
    assert_eq!(doc["exit"], 2);
    assert_eq!(doc["diagnostics"][0]["code"], "sealc::path::invalid");
    assert_eq!(doc["diagnostics"][0]["range"]["start"]["line"], 10);
    assert!(!bad.path("seal").exists(), "nothing written");
    // A finding that names every root (the platform differences) is cut
    // in the text, and whole in the JSON.
    let lint = Sealc::new()
        .file("big.toml", many_roots(10_000, false))
        .args(["lint", "big.toml", "--platform", "both"])
        .run();
    assert_eq!(lint.code, 0, "{}", lint.stderr);
    bounded("lint --platform both", &lint.stdout, 200);
    assert!(lint
        .stdout
        .contains("more characters: `--format json` gives it whole"));
    let json = Sealc::new()
        .file("big.toml", many_roots(10_000, false))
        .args(["lint", "big.toml", "--platform", "both", "--format", "json"])
        .run();
    let doc: serde_json::Value = serde_json::from_str(&json.stdout).unwrap();
    assert!(doc["diagnostics"]
        .as_array()
        .unwrap()
        .iter()
        .any(|d| d["message"]
            .as_str()
            .unwrap()
            .contains("/Users/op/projects/p009999")));
    // `lint --format json` too.
    let lint = Sealc::new()
        .file("big.toml", many_roots(10_000, true))
        .args(["lint", "big.toml", "--format", "json"])
        .run();
    assert_eq!(lint.code, 0, "{}", lint.stderr);
    serde_json::from_str::<serde_json::Value>(&lint.stdout).unwrap();
}

#[test]
fn a_hundred_thousand_roots_compile() {
    let out = Sealc::new()
        .file("big.toml", many_roots(100_000, false))
        .args(["compile", "big.toml", "-q"])
        .run();
    assert_eq!(out.code, 0, "{}", out.stderr);
    bounded("100,000 roots", &out.stderr, 60);
    assert!(
        out.stderr.contains("99,998 more warnings"),
        "{}",
        out.stderr
    );
    assert_eq!(out.stdout, "", "-q prints no listing");
}

#[test]
fn an_error_far_along_a_long_line_is_shown_as_a_window() {
    // 100,000 characters on one line, the bad root (a trailing `/`) at the
    // end of it.
    let mut line = String::from("deny_read = [");
    for i in 0..6_000 {
        let _ = write!(line, "\"/srv/p{i:05}/x\", ");
    }
    let col = line.chars().count() + 1;
    line.push_str("\"/srv/bad/\"]");
    assert!(line.len() > 100_000);
    let spec = format!("{HEAD}{line}\n");
    let out = Sealc::new()
        .file("long.toml", spec)
        .args(["compile", "long.toml"])
        .run();
    assert_eq!(out.code, 2, "{}", out.stderr);
    bounded("long line", &out.stderr, 30);
    assert!(
        out.stderr.contains(&format!("long.toml:10:{col}")),
        "the header names the real column {col}:\n{}",
        out.stderr
    );
    assert!(out.stderr.contains("…"), "the line is cut: {}", out.stderr);
    assert!(out.stderr.contains("\"/srv/bad/\""), "{}", out.stderr);
    // A long value as the label itself: shortened, still refused.
    let long_value = format!("/srv/{}/", "v".repeat(100_000));
    let spec = format!("{HEAD}deny_read = [\"{long_value}\"]\n");
    let out = Sealc::new()
        .file("value.toml", spec)
        .args(["compile", "value.toml"])
        .run();
    assert_eq!(out.code, 2, "{}", out.stderr);
    bounded("long value", &out.stderr, 30);
}

#[test]
fn control_characters_in_a_spec_are_shown_not_obeyed() {
    // A comment that would clear the screen and a bidi override near a
    // finding: the excerpt shows pictures of them, never the bytes.
    let spec =
        format!("{HEAD}# \u{1b}[2J\u{1b}[31mlooks fine\u{202e}\ndeny_read = [\"/srv/bad/\"]\n");
    let out = Sealc::new()
        .file("ctl.toml", spec)
        .args(["compile", "ctl.toml"])
        .run();
    assert_eq!(out.code, 2, "{}", out.stderr);
    assert!(!out.stderr.contains('\u{1b}'), "{:?}", out.stderr);
    assert!(!out.stderr.contains('\u{202e}'), "{:?}", out.stderr);
    assert!(out.stderr.contains("␛[2J"), "{}", out.stderr);
}

#[test]
fn deep_nesting_is_refused_not_a_crash() {
    for depth in [100, 10_000, 100_000] {
        let spec = format!(
            "{HEAD}deny_read = {}{}\n",
            "[".repeat(depth),
            "]".repeat(depth)
        );
        let out = Sealc::new()
            .file("deep.toml", spec)
            .args(["compile", "deep.toml"])
            .run();
        assert_eq!(out.code, 2, "depth {depth}: {}", out.stderr);
        bounded("deep", &out.stderr, 30);
        let tables = format!("{HEAD}x = {}{}\n", "{a=".repeat(depth), "}".repeat(depth));
        let out = Sealc::new()
            .file("deep.toml", tables)
            .args(["lint", "deep.toml"])
            .run();
        assert!(
            out.code == 1 || out.code == 2,
            "depth {depth}: exit {} {}",
            out.code,
            out.stderr
        );
    }
}

/// Under a limit on data (`ulimit -d`, 48 MiB, twice what 10,000 roots
/// take), a big compile still compiles, and to the same seal: what sealc
/// reserves for speed (a heap on huge pages, a second thread) gives way to
/// the limit rather than panicking or aborting.
#[test]
fn ten_thousand_roots_compile_the_same_under_a_data_limit() {
    use std::os::unix::process::CommandExt;
    let tmp = tempfile::tempdir_in(env!("CARGO_TARGET_TMPDIR")).unwrap();
    let t = tmp.path();
    std::fs::write(t.join("big.toml"), many_roots(10_000, false)).unwrap();
    let compile = |out: &str, limit: Option<u64>| {
        let mut c = std::process::Command::new(env!("CARGO_BIN_EXE_sealc"));
        c.current_dir(t)
            .args(["compile", "big.toml", "--out", out, "-q"])
            .stdin(std::process::Stdio::null());
        if let Some(bytes) = limit {
            // SAFETY: between fork and exec the closure makes one system
            // call (setrlimit) on a value made before the fork, and
            // allocates nothing.
            unsafe {
                c.pre_exec(move || {
                    let l = libc::rlimit {
                        rlim_cur: bytes,
                        rlim_max: bytes,
                    };
                    if libc::setrlimit(libc::RLIMIT_DATA, &l) == 0 {
                        Ok(())
                    } else {
                        Err(std::io::Error::last_os_error())
                    }
                });
            }
        }
        let o = c.output().unwrap();
        assert_eq!(
            o.status.code(),
            Some(0),
            "limit {limit:?}: {}",
            String::from_utf8_lossy(&o.stderr)
        );
        std::fs::read(t.join(out).join("seal.json")).unwrap()
    };
    let free = compile("free", None);
    let limited = compile("limited", Some(48 << 20));
    assert!(free == limited, "the record differs under the limit");
}
