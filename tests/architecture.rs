//! ARCHITECTURE.md's invariants about which module may do what, checked on
//! the source itself: arrows point downstream only, the pure stages do no IO,
//! and only the CLI prints (the runtime relays the command's own output
//! through descriptors; that is not sealc printing).

use std::path::{Path, PathBuf};

fn sources(dir: &Path, out: &mut Vec<PathBuf>) {
    for e in std::fs::read_dir(dir).unwrap() {
        let p = e.unwrap().path();
        if p.is_dir() {
            sources(&p, out);
        } else if p.extension().is_some_and(|x| x == "rs") {
            out.push(p);
        }
    }
}

/// Every source file, as (path relative to the crate, text).
fn all() -> Vec<(String, String)> {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let mut files = Vec::new();
    sources(&root.join("src"), &mut files);
    files.sort();
    files
        .into_iter()
        .map(|p| {
            let rel = p.strip_prefix(root).unwrap().display().to_string();
            (rel, std::fs::read_to_string(&p).unwrap())
        })
        .collect()
}

fn offenders(pred: impl Fn(&str) -> bool, needles: &[&str]) -> Vec<String> {
    let mut bad = Vec::new();
    for (path, text) in all() {
        if !pred(&path) {
            continue;
        }
        for (i, line) in text.lines().enumerate() {
            let code = line.split("//").next().unwrap_or("");
            if needles.iter().any(|n| code.contains(n)) {
                bad.push(format!("{path}:{}: {}", i + 1, line.trim()));
            }
        }
    }
    bad
}

#[test]
fn the_files_are_where_the_architecture_says() {
    let paths: Vec<String> = all().into_iter().map(|(p, _)| p).collect();
    assert!(
        !paths.iter().any(|p| p == "src/cli.rs"),
        "the CLI is one file per command under src/cli/"
    );
    for cmd in [
        "compile", "verify", "exec", "lint", "explain", "schema", "inside", "show", "diff",
    ] {
        let want = format!("src/cli/{cmd}.rs");
        assert!(paths.contains(&want), "{want} is missing");
    }
    assert!(paths.contains(&"src/prove.rs".to_string()));
    // The run's pipeline is the library's, its stages in one room; the
    // command only parses, calls and prints.
    for f in ["mod", "stages", "handed", "codex", "help"] {
        let want = format!("src/run/{f}.rs");
        assert!(paths.contains(&want), "{want} is missing");
    }
    let exec = all()
        .into_iter()
        .find(|(p, _)| p == "src/cli/exec.rs")
        .map_or(0, |(_, t)| t.lines().count());
    assert!(
        exec < 200,
        "src/cli/exec.rs is {exec} lines: the run belongs in src/run"
    );
}

#[test]
fn no_module_below_the_cli_names_it() {
    let bad = offenders(
        |p| !p.starts_with("src/cli/") && p != "src/main.rs",
        &["crate::cli"],
    );
    assert!(bad.is_empty(), "upstream arrows:\n{}", bad.join("\n"));
}

#[test]
fn only_the_cli_prints() {
    let bad = offenders(
        |p| !p.starts_with("src/cli/"),
        &["println!", "print!(", "eprint", "dbg!("],
    );
    assert!(
        bad.is_empty(),
        "printing outside src/cli/:\n{}",
        bad.join("\n")
    );
}

/// Why a run did not start travels as a typed `run::Refusal` (its phase,
/// exit status, message and help), which the report records as it is: no
/// module below the CLI writes an `error:` line, and nothing reads one
/// back out of what was printed.
#[test]
fn refusals_are_typed_not_read_back_from_stderr() {
    let written = offenders(|p| !p.starts_with("src/cli/"), &["\"error: "]);
    assert!(
        written.is_empty(),
        "an `error:` line written below the CLI:\n{}",
        written.join("\n")
    );
    let read_back = offenders(|_| true, &["strip_prefix(\"error", "find(\"error:"]);
    assert!(
        read_back.is_empty(),
        "an `error:` line read back:\n{}",
        read_back.join("\n")
    );
}

/// The run's mechanisms (`src/exec/`, `src/absent.rs`, `src/run/`) fail
/// with `failure::Failure`, which keeps the OS's or the library's error as
/// its cause: no error of theirs is a bare string.
#[test]
fn the_runtime_fails_with_typed_errors() {
    let bad = offenders(
        |p| p.starts_with("src/exec") || p.starts_with("src/run/") || p == "src/absent.rs",
        &[", String>", ", String> {"],
    );
    assert!(
        bad.is_empty(),
        "a runtime error as a bare string:\n{}",
        bad.join("\n")
    );
}

/// Exit codes are listed once (`src/exit.rs`): no command writes its own
/// "Exit codes:" section by hand.
#[test]
fn every_exit_code_table_is_made_from_src_exit_rs() {
    let by_hand = offenders(|p| p != "src/exit.rs", &["Exit codes:"]);
    assert!(
        by_hand.is_empty(),
        "an exit code section written by hand:\n{}",
        by_hand.join("\n")
    );
}

/// Each document sealc writes has one schema tag, spelt once: the module
/// that defines the document's type (no second module can drift from it).
#[test]
fn each_schema_tag_is_spelt_in_one_file() {
    let mut found: std::collections::BTreeMap<String, Vec<String>> = Default::default();
    for (path, text) in all() {
        for line in text.lines() {
            let code = line.split("//").next().unwrap_or("");
            let mut rest = code;
            while let Some(at) = rest.find("\"sealc.") {
                let tag: String = rest[at + 1..].chars().take_while(|c| *c != '"').collect();
                rest = &rest[at + 1 + tag.len()..];
                if tag.contains("/v") {
                    let files = found.entry(tag).or_default();
                    if !files.contains(&path) {
                        files.push(path.clone());
                    }
                }
            }
        }
    }
    assert!(
        found.contains_key("sealc.run/v1"),
        "no run report tag: {found:?}"
    );
    let twice: Vec<String> = found
        .iter()
        .filter(|(_, files)| files.len() > 1)
        .map(|(tag, files)| format!("{tag}: {}", files.join(", ")))
        .collect();
    assert!(
        twice.is_empty(),
        "a schema tag spelt in more than one file:\n{}",
        twice.join("\n")
    );
}

#[test]
fn the_pure_stages_read_nothing_from_the_host() {
    let pure = |p: &str| {
        [
            "src/ir/",
            "src/backend/",
            "src/spec/",
            "src/sbpl/",
            "src/record.rs",
            "src/prove.rs",
            "src/diag/",
            "src/mounts.rs",
            "src/platform.rs",
            "src/query.rs",
            "src/lint.rs",
            "src/describe.rs",
            "src/ops.rs",
            "src/exec/terminal.rs",
            "src/paths.rs",
            "src/known.rs",
            "src/canonical.rs",
            "src/refusals.rs",
            "src/exit.rs",
            "src/limit.rs",
        ]
        .iter()
        .any(|m| p.starts_with(m))
    };
    let bad = offenders(
        pure,
        &[
            "std::fs",
            "std::env",
            "std::process",
            "std::net",
            "SystemTime",
            "Instant::now",
            "HashMap",
            "HashSet",
        ],
    );
    assert!(
        bad.is_empty(),
        "IO, a clock or an unordered map in a pure stage:\n{}",
        bad.join("\n")
    );
}

/// The module a source file is (`src/ir/mod.rs` is `ir`, `src/facts/host.rs`
/// is `facts::host`).
fn module_of(path: &str) -> String {
    let m = path
        .trim_start_matches("src/")
        .trim_end_matches(".rs")
        .trim_end_matches("/mod");
    m.replace('/', "::")
}

/// Every module a file names (`crate::a::b::c` is `a::b` when that is a
/// file, else `a`; `super::x` is the sibling `x`, `super::super::x` the
/// parent's sibling), self excluded.
fn imports(module: &str, text: &str, files: &std::collections::BTreeSet<String>) -> Vec<String> {
    let mut out = Vec::new();
    for line in text.lines() {
        let code = line.split("//").next().unwrap_or("");
        let mut at = 0;
        while at < code.len() {
            let rest = &code[at..];
            let (skip, base) = if rest.starts_with("crate::") {
                ("crate::".len(), Some(String::new()))
            } else if rest.starts_with("super::")
                && !code[..at].ends_with("super::")
                && !code[..at].ends_with("self::")
            {
                // `super::` once or more: each goes one module up.
                let mut ups = 0;
                let mut r = rest;
                while let Some(after) = r.strip_prefix("super::") {
                    ups += 1;
                    r = after;
                }
                let mut parts: Vec<&str> = module.split("::").collect();
                for _ in 0..ups {
                    parts.pop();
                }
                (rest.len() - r.len(), Some(parts.join("::")))
            } else {
                (rest.chars().next().map_or(1, char::len_utf8), None)
            };
            at += skip;
            let Some(base) = base else { continue };
            let path: String = code[at..]
                .chars()
                .take_while(|c| c.is_ascii_lowercase() || *c == '_' || *c == ':')
                .collect();
            let mut parts: Vec<&str> = path.split("::").filter(|p| !p.is_empty()).collect();
            if !base.is_empty() {
                parts.insert(0, &base);
            }
            while !parts.is_empty() {
                let cand = parts.join("::");
                if files.contains(&cand) {
                    if cand != module {
                        out.push(cand);
                    }
                    break;
                }
                parts.pop();
            }
        }
    }
    out
}

/// ARCHITECTURE.md: arrows point downstream only, and no two modules import
/// each other, directly or round a longer circle. A circle is reported with
/// the files on it.
#[test]
fn no_module_imports_another_that_imports_it() {
    use std::collections::{BTreeMap, BTreeSet};
    let files = all();
    let names: BTreeSet<String> = files.iter().map(|(p, _)| module_of(p)).collect();
    // Both levels: the top-level modules (`ir`, `backend`, ...) and each file.
    let mut top: BTreeMap<String, BTreeSet<String>> = BTreeMap::new();
    let mut file: BTreeMap<String, BTreeSet<String>> = BTreeMap::new();
    for (path, text) in &files {
        let m = module_of(path);
        let head = m.split("::").next().unwrap_or("").to_string();
        for to in imports(&m, text, &names) {
            let to_head = to.split("::").next().unwrap_or("").to_string();
            if to_head != head {
                top.entry(head.clone()).or_default().insert(to_head);
            }
            file.entry(m.clone()).or_default().insert(to);
        }
    }
    for (level, graph) in [("module", &top), ("file", &file)] {
        // Depth-first search for a back edge, keeping the path walked.
        fn visit(
            at: &str,
            graph: &BTreeMap<String, BTreeSet<String>>,
            state: &mut BTreeMap<String, u8>,
            path: &mut Vec<String>,
        ) -> Option<Vec<String>> {
            state.insert(at.to_string(), 1);
            path.push(at.to_string());
            for to in graph.get(at).into_iter().flatten() {
                match state.get(to.as_str()).copied().unwrap_or(0) {
                    0 => {
                        if let Some(c) = visit(to, graph, state, path) {
                            return Some(c);
                        }
                    }
                    1 => {
                        let from = path.iter().position(|p| p == to).unwrap_or(0);
                        let mut circle = path[from..].to_vec();
                        circle.push(to.clone());
                        return Some(circle);
                    }
                    _ => {}
                }
            }
            path.pop();
            state.insert(at.to_string(), 2);
            None
        }
        let mut state = BTreeMap::new();
        for start in graph.keys() {
            if state.get(start.as_str()).copied().unwrap_or(0) == 0 {
                let circle = visit(start, graph, &mut state, &mut Vec::new());
                assert!(
                    circle.is_none(),
                    "a circle of {level}s: {}",
                    circle.unwrap_or_default().join(" -> ")
                );
            }
        }
    }
    // Not vacuous: the pipeline's arrows are seen.
    assert!(
        top.get("ir").is_some_and(|t| t.contains("facts")),
        "{top:?}"
    );
    assert!(
        top.get("backend").is_some_and(|t| t.contains("ir")),
        "{top:?}"
    );
}

/// No source file is over 800 lines: each is one part a reader can hold.
#[test]
fn no_source_file_is_over_800_lines() {
    let long: Vec<String> = all()
        .into_iter()
        .filter(|(_, text)| text.lines().count() > 800)
        .map(|(path, text)| format!("{path}: {} lines", text.lines().count()))
        .collect();
    assert!(long.is_empty(), "over 800 lines:\n{}", long.join("\n"));
}
