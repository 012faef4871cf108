//! The documentation: README.md, ARCHITECTURE.md and the book in `docs/`
//! (mdBook, `docs/book.toml`; CI builds it with `mdbook build docs`).
//!
//! mdBook checks no link, so this does: every relative link in those files
//! leads to a file that exists, every `#anchor` into a markdown file to one
//! of its headings (GitHub's slug rules, which mdBook's agree with on these
//! files), and a chapter's links stay inside the book. `docs/SUMMARY.md`
//! lists every chapter once. Every command synopsis names only flags its
//! command has, and `docs/exit-codes.md` lists the codes each command's
//! `--help` does.
//!
//! The commands in `sh` blocks run as written, each block in a scratch
//! checkout of its own (holding this repository's `specs/` and `tests/`)
//! with a scratch `HOME`: `sealc ...` and `cargo run -- ...` as the built
//! sealc, for real; `sealc exec` with `--dry-run` added (it verifies the
//! record, checks the host and says what it would run, and starts nothing)
//! and `--expect sha256:...` given the binding the block's own commands
//! printed. `cd` and `mkdir` are followed; other programs (`cargo install`,
//! `cargo test`, `npm`, `taplo`, `chmod`, `mdbook`) are not run. A renamed
//! flag, a moved file or a command that no longer works fails here.

mod common;

use std::collections::{BTreeMap, BTreeSet, HashMap};
use std::path::{Component, Path, PathBuf};
use std::process::Command;

fn root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

fn sealc() -> &'static str {
    env!("CARGO_BIN_EXE_sealc")
}

fn read(rel: &Path) -> String {
    std::fs::read_to_string(root().join(rel)).unwrap_or_else(|e| panic!("{}: {e}", rel.display()))
}

/// The documents checked, relative to the repository's root: the README,
/// ARCHITECTURE.md and every markdown file of the book.
fn documents() -> Vec<PathBuf> {
    let mut docs = vec![PathBuf::from("README.md"), PathBuf::from("ARCHITECTURE.md")];
    docs.extend(chapters().into_iter().map(|c| Path::new("docs").join(c)));
    docs
}

/// Every markdown file in `docs/`, by file name, SUMMARY.md included.
fn chapters() -> Vec<String> {
    let mut names: Vec<String> = std::fs::read_dir(root().join("docs"))
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .filter(|n| n.ends_with(".md"))
        .collect();
    names.sort();
    names
}

// ---- reading markdown ----

/// A fenced code block: its info string (`sh`, `toml`, or empty), its text,
/// and the line its fence opens on (1-based).
struct Fence {
    lang: String,
    body: String,
    line: usize,
}

/// A document with its fenced code blocks blanked out (lines kept, so line
/// numbers hold), and the blocks.
struct Scanned {
    prose: String,
    fences: Vec<Fence>,
}

fn scan(text: &str) -> Scanned {
    let mut prose = String::new();
    let mut fences = Vec::new();
    // (fence character, fence length, info string, line, body)
    let mut open: Option<(char, usize, String, usize, String)> = None;
    for (i, line) in text.lines().enumerate() {
        let t = line.trim_start();
        let indent = line.len() - t.len();
        let run = |c: char| t.chars().take_while(|&x| x == c).count();
        if let Some((c, n, _, _, body)) = open.as_mut() {
            let k = run(*c);
            if indent <= 3 && k >= *n && t[k..].trim().is_empty() {
                let (_, _, lang, line, body) = open.take().unwrap();
                fences.push(Fence { lang, body, line });
            } else {
                body.push_str(line);
                body.push('\n');
            }
            prose.push('\n');
            continue;
        }
        let fence = ['`', '~']
            .into_iter()
            .map(|c| (c, run(c)))
            .find(|&(_, k)| k >= 3);
        match fence {
            Some((c, k)) if indent <= 3 => {
                open = Some((c, k, t[k..].trim().to_string(), i + 1, String::new()));
                prose.push('\n');
            }
            _ => {
                prose.push_str(line);
                prose.push('\n');
            }
        }
    }
    assert!(open.is_none(), "a fenced code block is never closed");
    Scanned { prose, fences }
}

/// The text with every inline code span blanked (newlines kept): a link
/// written inside backticks is not a link. A span never crosses a blank
/// line.
fn without_code_spans(s: &str) -> String {
    s.split("\n\n")
        .map(paragraph_without_code_spans)
        .collect::<Vec<_>>()
        .join("\n\n")
}

fn paragraph_without_code_spans(s: &str) -> String {
    let b = s.as_bytes();
    let mut out = b.to_vec();
    let run_at = |i: usize| b[i..].iter().take_while(|&&c| c == b'`').count();
    let mut i = 0;
    while i < b.len() {
        if b[i] != b'`' {
            i += 1;
            continue;
        }
        let n = run_at(i);
        // The closing run has exactly the opening run's length.
        let mut j = i + n;
        let mut close = None;
        while j < b.len() {
            if b[j] == b'`' {
                let m = run_at(j);
                if m == n {
                    close = Some(j);
                    break;
                }
                j += m;
            } else {
                j += 1;
            }
        }
        match close {
            Some(j) => {
                for c in &mut out[i..j + n] {
                    if *c != b'\n' {
                        *c = b' ';
                    }
                }
                i = j + n;
            }
            None => i += n,
        }
    }
    String::from_utf8(out).unwrap()
}

/// Every link target in the prose (code spans already blanked), with its
/// line: inline links and images `[text](target "title")` and reference
/// definitions `[name]: target`.
fn links(prose: &str) -> Vec<(usize, String)> {
    let mut found = Vec::new();
    for (n, line) in prose.lines().enumerate() {
        let t = line.trim_start();
        if t.starts_with('[') {
            if let Some(end) = t.find("]:") {
                if !t[..end].contains("](") {
                    let target = t[end + 2..].split_whitespace().next().unwrap_or("");
                    found.push((n + 1, target.trim_matches(['<', '>']).to_string()));
                    continue;
                }
            }
        }
        let mut rest = line;
        while let Some(at) = rest.find("](") {
            let after = &rest[at + 2..];
            let mut depth = 0usize;
            let mut end = after.len();
            for (k, c) in after.char_indices() {
                match c {
                    '(' => depth += 1,
                    ')' if depth == 0 => {
                        end = k;
                        break;
                    }
                    ')' => depth -= 1,
                    _ => {}
                }
            }
            let inner = after[..end].trim();
            let target = inner.split_whitespace().next().unwrap_or("");
            found.push((n + 1, target.trim_matches(['<', '>']).to_string()));
            rest = &after[end.min(after.len())..];
        }
    }
    found
}

/// A heading's anchor, as GitHub and mdBook make it: the rendered text
/// (a link's text, a code span's content), lowercased; letters, digits,
/// `-` and `_` kept, each space a `-`, everything else dropped.
fn slug(heading: &str) -> String {
    let mut text = String::new();
    let mut rest = heading;
    // A link in a heading contributes its text only.
    while let Some(open) = rest.find('[') {
        match rest[open..].find("](") {
            Some(mid) => {
                let after = &rest[open + mid + 2..];
                let close = after.find(')').unwrap_or(after.len());
                text.push_str(&rest[..open]);
                text.push_str(&rest[open + 1..open + mid]);
                rest = &after[(close + 1).min(after.len())..];
            }
            None => break,
        }
    }
    text.push_str(rest);
    text.chars()
        .flat_map(char::to_lowercase)
        .filter_map(|c| match c {
            ' ' => Some('-'),
            c if c.is_alphanumeric() || c == '-' || c == '_' => Some(c),
            _ => None,
        })
        .collect()
}

/// Every anchor a markdown document has: one per ATX heading, a repeated
/// one numbered (`x`, `x-1`, `x-2`).
fn anchors(text: &str) -> BTreeSet<String> {
    let mut seen: HashMap<String, usize> = HashMap::new();
    let mut out = BTreeSet::new();
    for line in scan(text).prose.lines() {
        let t = line.trim_start();
        if line.len() - t.len() > 3 {
            continue;
        }
        let level = t.chars().take_while(|&c| c == '#').count();
        if level == 0 || level > 6 || !(t.len() == level || t[level..].starts_with(' ')) {
            continue;
        }
        let mut heading = t[level..].trim();
        // An optional closing sequence of `#`s.
        let closed = heading.trim_end_matches('#');
        if closed.is_empty() || closed.ends_with(' ') {
            heading = closed.trim_end();
        }
        let base = slug(heading);
        let n = seen.entry(base.clone()).or_insert(0);
        out.insert(if *n == 0 {
            base.clone()
        } else {
            format!("{base}-{n}")
        });
        *n += 1;
    }
    out
}

/// `base/rel` with `.` and `..` taken out; `None` when it leaves the
/// repository.
fn join(base: &Path, rel: &str) -> Option<PathBuf> {
    let mut out = Vec::new();
    for c in base.join(rel).components() {
        match c {
            Component::CurDir => {}
            Component::ParentDir => {
                out.pop()?;
            }
            Component::Normal(p) => out.push(p.to_owned()),
            _ => return None,
        }
    }
    Some(out.iter().collect())
}

// ---- links ----

#[test]
fn every_relative_link_and_anchor_resolves() {
    let mut bad = Vec::new();
    let mut checked = 0;
    let mut anchor_cache: BTreeMap<PathBuf, BTreeSet<String>> = BTreeMap::new();
    for doc in documents() {
        let text = read(&doc);
        for (line, target) in links(&without_code_spans(&scan(&text).prose)) {
            let at = format!("{}:{line}: `{target}`", doc.display());
            if target.is_empty() {
                bad.push(format!("{at}: an empty link"));
                continue;
            }
            if target.contains("://") || target.starts_with("mailto:") {
                continue;
            }
            checked += 1;
            let (path, anchor) = match target.split_once('#') {
                Some((p, a)) => (p, Some(a)),
                None => (target.as_str(), None),
            };
            let dest = if path.is_empty() {
                Some(doc.clone())
            } else {
                join(doc.parent().unwrap(), path)
            };
            let Some(dest) = dest else {
                bad.push(format!("{at}: leads outside the repository"));
                continue;
            };
            if !root().join(&dest).exists() {
                bad.push(format!("{at}: {} does not exist", dest.display()));
                continue;
            }
            // The book renders only what is in it: a chapter's link out of
            // docs/ would be a dead link on the built pages.
            if doc.starts_with("docs") && !dest.starts_with("docs") {
                bad.push(format!(
                    "{at}: a chapter links to {}, outside the book (name the path in backticks instead)",
                    dest.display()
                ));
            }
            let Some(anchor) = anchor else { continue };
            if dest.extension().is_none_or(|e| e != "md") {
                bad.push(format!("{at}: an anchor into a file that is not markdown"));
                continue;
            }
            let have = anchor_cache
                .entry(dest.clone())
                .or_insert_with(|| anchors(&read(&dest)));
            if !have.contains(anchor) {
                bad.push(format!(
                    "{at}: {} has no heading `#{anchor}` (it has: {})",
                    dest.display(),
                    have.iter().cloned().collect::<Vec<_>>().join(", ")
                ));
            }
        }
    }
    assert!(bad.is_empty(), "broken links:\n{}", bad.join("\n"));
    assert!(
        checked > 50,
        "only {checked} relative links found: is the reader broken?"
    );
}

#[test]
fn slugs_follow_githubs_rules() {
    assert_eq!(slug("Linux and `sealc exec`"), "linux-and-sealc-exec");
    assert_eq!(
        slug("The network modes, and what enforces what"),
        "the-network-modes-and-what-enforces-what"
    );
    assert_eq!(
        slug("What Codex adds to its tools' environment"),
        "what-codex-adds-to-its-tools-environment"
    );
    assert_eq!(
        slug("Enforcement, as probed (`tests/codex_sandbox.rs`)"),
        "enforcement-as-probed-testscodex_sandboxrs"
    );
    assert_eq!(slug("`sealc::spec::toml`"), "sealcspectoml");
    assert_eq!(
        slug("No host information in `/sys`"),
        "no-host-information-in-sys"
    );
    let a = anchors("# a\n## `lint`\n```\n# not a heading\n```\n## lint\n### x ##\n");
    assert_eq!(
        a,
        ["a", "lint", "lint-1", "x"]
            .map(String::from)
            .into_iter()
            .collect()
    );
}

// ---- the book ----

#[test]
fn the_summary_lists_every_chapter_once() {
    let summary = PathBuf::from("docs/SUMMARY.md");
    let text = read(&summary);
    let mut listed = BTreeSet::new();
    let mut bad = Vec::new();
    for (line, target) in links(&without_code_spans(&scan(&text).prose)) {
        if target.contains('#') || !target.ends_with(".md") || target.contains('/') {
            bad.push(format!(
                "SUMMARY.md:{line}: `{target}` is not a chapter file beside it"
            ));
        }
        if !listed.insert(target.clone()) {
            bad.push(format!("SUMMARY.md:{line}: `{target}` is listed twice"));
        }
    }
    let chapters: BTreeSet<String> = chapters()
        .into_iter()
        .filter(|c| c != "SUMMARY.md")
        .collect();
    for c in chapters.difference(&listed) {
        bad.push(format!("docs/{c} is not in docs/SUMMARY.md"));
    }
    for c in listed.difference(&chapters) {
        bad.push(format!("docs/SUMMARY.md lists {c}, which is not in docs/"));
    }
    assert!(bad.is_empty(), "{}", bad.join("\n"));
}

/// The book's source is docs/ itself (tests read and generate chapters at
/// those paths), its output goes outside it, and a chapter the summary
/// names must exist rather than be made empty.
#[test]
fn the_book_is_built_from_docs_into_target() {
    let text = read(Path::new("docs/book.toml"));
    let book: toml::Table = toml::from_str(&text).unwrap();
    assert_eq!(book["book"]["src"].as_str(), Some("."), "[book] src");
    let out = book["build"]["build-dir"]
        .as_str()
        .expect("[build] build-dir");
    let out = join(Path::new("docs"), out).expect("build-dir inside the repository");
    assert!(
        !out.starts_with("docs"),
        "the book is built into its own source directory: {}",
        out.display()
    );
    assert!(
        out.starts_with("target"),
        "build-dir outside target/: {}",
        out.display()
    );
    assert_eq!(book["build"]["create-missing"].as_bool(), Some(false));
}

// ---- the command line as documented ----

/// `sealc help CMD` (or `sealc --help` for no command), once per command.
fn help(cache: &mut HashMap<String, String>, cmd: &str) -> String {
    cache
        .entry(cmd.to_string())
        .or_insert_with(|| {
            let args: Vec<&str> = if cmd.is_empty() {
                vec!["--help"]
            } else {
                vec!["help", cmd]
            };
            let out = Command::new(sealc()).args(args).output().unwrap();
            assert!(out.status.success(), "sealc help {cmd} failed");
            String::from_utf8(out.stdout).unwrap()
        })
        .clone()
}

/// The flags a synopsis line names: `--long` and `-X`.
fn flags(line: &str) -> Vec<String> {
    let b = line.as_bytes();
    let mut out = Vec::new();
    for i in 0..b.len() {
        if b[i] != b'-' || (i > 0 && !b" [(/|".contains(&b[i - 1])) {
            continue;
        }
        if b.get(i + 1) == Some(&b'-') {
            let n = b[i + 2..]
                .iter()
                .take_while(|c| c.is_ascii_alphanumeric() || **c == b'-')
                .count();
            if n > 0 {
                out.push(line[i..i + 2 + n].to_string());
            }
        } else if b.get(i + 1).is_some_and(u8::is_ascii_alphabetic)
            && b.get(i + 2).is_none_or(|c| !c.is_ascii_alphanumeric())
        {
            out.push(line[i..i + 2].to_string());
        }
    }
    out
}

fn names_flag(help: &str, flag: &str) -> bool {
    help.match_indices(flag).any(|(i, _)| {
        let before = help[..i].chars().next_back();
        let after = help[i + flag.len()..].chars().next();
        before.is_none_or(|c| !c.is_ascii_alphanumeric() && c != '-')
            && after.is_none_or(|c| !c.is_ascii_alphanumeric() && c != '-')
    })
}

/// Each synopsis line (`sealc CMD ...` in a plain code block) names a
/// command sealc has and only flags that command takes.
#[test]
fn every_synopsis_names_real_flags() {
    let mut cache = HashMap::new();
    let mut bad = Vec::new();
    let mut lines = 0;
    for doc in documents() {
        for fence in scan(&read(&doc)).fences {
            if !(fence.lang.is_empty() || fence.lang == "text") {
                continue;
            }
            for (k, line) in fence.body.lines().enumerate() {
                let at = format!("{}:{}", doc.display(), fence.line + 1 + k);
                let cmd = if let Some(rest) = line.strip_prefix("sealc ") {
                    rest.split_whitespace().next().unwrap_or("").to_string()
                } else if line.starts_with("(every command also takes") {
                    String::new()
                } else {
                    continue;
                };
                lines += 1;
                if !cmd.is_empty() && !names_flag(&help(&mut cache, ""), &cmd) {
                    bad.push(format!("{at}: sealc has no command `{cmd}`"));
                    continue;
                }
                let text = help(&mut cache, &cmd);
                for flag in flags(line) {
                    if !names_flag(&text, &flag) {
                        bad.push(format!("{at}: `sealc {cmd}` has no flag `{flag}`"));
                    }
                }
            }
        }
    }
    assert!(bad.is_empty(), "{}", bad.join("\n"));
    assert!(lines >= 12, "only {lines} synopsis lines found");
}

/// `docs/commands.md` is each command's `--help`, generated from the clap
/// definitions (`SEALC_BLESS=1 cargo test --test docs` writes it again).
#[test]
fn the_command_reference_is_the_help_of_each_command() {
    let mut cache = HashMap::new();
    let top = help(&mut cache, "");
    let commands: Vec<String> = top
        .split("\nCommands:\n")
        .nth(1)
        .unwrap()
        .lines()
        .take_while(|l| l.starts_with("  "))
        .filter_map(|l| l.split_whitespace().next())
        .filter(|c| *c != "help")
        .map(String::from)
        .collect();
    let mut page = String::from(
        "# Command reference\n\n\
         Each command's `--help`, as sealc prints it: generated from the command\n\
         line's own definitions, and checked fresh by `tests/docs.rs`\n\
         (`SEALC_BLESS=1 cargo test --test docs` writes it again). What each flag\n\
         is for, with examples: [Using it](using-it.md).\n",
    );
    for cmd in std::iter::once(String::new()).chain(commands) {
        let title = if cmd.is_empty() {
            "sealc".to_string()
        } else {
            format!("sealc {cmd}")
        };
        page.push_str(&format!(
            "\n## `{title}`\n\n```console\n{}```\n",
            help(&mut cache, &cmd)
        ));
    }
    let failures: Vec<String> =
        common::check_golden(&root().join("docs/commands.md"), page.as_bytes())
            .into_iter()
            .collect();
    common::assert_goldens(failures);
}

/// The codes a command's `--help` lists under "Exit codes:" (`N`, the
/// command's own, left out).
fn help_codes(help: &str) -> BTreeSet<u32> {
    let mut codes = BTreeSet::new();
    let Some(start) = help.find("\nExit codes:\n") else {
        return codes;
    };
    for line in help[start + 13..].lines() {
        if !line.starts_with(' ') {
            break;
        }
        for piece in line.split("  ").map(str::trim) {
            if !piece.is_empty() && piece.bytes().all(|c| c.is_ascii_digit()) {
                codes.insert(piece.parse().unwrap());
            }
        }
    }
    codes
}

/// `docs/exit-codes.md` has a table per command, and each lists exactly the
/// codes that command's `--help` does.
#[test]
fn the_exit_code_tables_agree_with_help() {
    let mut cache = HashMap::new();
    let text = read(Path::new("docs/exit-codes.md"));
    let mut tables: BTreeMap<String, BTreeSet<u32>> = BTreeMap::new();
    let mut current = None;
    for line in text.lines() {
        if let Some(h) = line.strip_prefix("## `sealc ") {
            let cmd = h.trim_end_matches('`').to_string();
            tables.insert(cmd.clone(), BTreeSet::new());
            current = Some(cmd);
        } else if line.starts_with("## ") {
            current = None;
        } else if let (Some(cmd), Some(cell)) = (&current, line.strip_prefix("| `")) {
            if let Some(code) = cell.split('`').next().and_then(|c| c.parse().ok()) {
                tables.get_mut(cmd).unwrap().insert(code);
            }
        }
    }
    let top = help(&mut cache, "");
    let commands: Vec<String> = top
        .split("\nCommands:\n")
        .nth(1)
        .unwrap()
        .lines()
        .take_while(|l| l.starts_with("  "))
        .filter_map(|l| l.split_whitespace().next())
        .filter(|c| *c != "help")
        .map(String::from)
        .collect();
    assert!(commands.len() >= 10, "{commands:?}");
    let mut bad = Vec::new();
    for cmd in &commands {
        let want = help_codes(&help(&mut cache, cmd));
        match tables.get(cmd) {
            None => bad.push(format!("docs/exit-codes.md has no table for `sealc {cmd}`")),
            Some(have) if *have != want => bad.push(format!(
                "docs/exit-codes.md, `sealc {cmd}`: {have:?}; its --help: {want:?}"
            )),
            Some(_) => {}
        }
    }
    for cmd in tables.keys().filter(|c| !commands.contains(c)) {
        bad.push(format!(
            "docs/exit-codes.md has a table for `sealc {cmd}`, which does not exist"
        ));
    }
    assert!(bad.is_empty(), "{}", bad.join("\n"));
}

/// The README's set-up on a fresh machine is exactly two commands: the main
/// job on a shipped example spec, and the tests (CI, `.ci/run`, runs both).
#[test]
fn the_readme_sets_up_in_two_commands() {
    let text = read(Path::new("README.md"));
    let start = text
        .find("\n## Set up (a fresh machine with a Rust toolchain)\n")
        .expect("the README's set-up section");
    let section = &text[start + 1..];
    let section = &section[..section[3..].find("\n## ").map_or(section.len(), |e| e + 3)];
    let commands: Vec<String> = scan(section)
        .fences
        .into_iter()
        .filter(|f| f.lang == "sh")
        .map(|f| f.body.trim().to_string())
        .collect();
    assert_eq!(
        commands,
        [
            r#"cargo run -- compile specs/probe-rep.toml --var home="$PWD/tests/fixtures/demo-home" --var run=/tmp/sealc-demo/run --var checkout="$PWD" --var proxy_port=8080"#,
            "cargo test",
        ]
    );
}

// ---- running the documented commands ----

/// A token of a shell line: a word as written (quotes kept, expanded
/// later), or an operator.
#[derive(Debug, Clone, PartialEq)]
enum Tok {
    Word(String),
    Op(&'static str),
}

/// Split one logical line (continuations joined) into words and operators;
/// a comment ends it.
fn lex(line: &str) -> Vec<Tok> {
    let chars: Vec<char> = line.chars().collect();
    let mut toks = Vec::new();
    let mut word = String::new();
    let mut in_word = false;
    let mut i = 0;
    let flush = |word: &mut String, in_word: &mut bool, toks: &mut Vec<Tok>| {
        if *in_word {
            toks.push(Tok::Word(std::mem::take(word)));
            *in_word = false;
        }
    };
    while i < chars.len() {
        let c = chars[i];
        match c {
            ' ' | '\t' => {
                flush(&mut word, &mut in_word, &mut toks);
                i += 1;
            }
            '#' if !in_word => break,
            '\'' => {
                let end = chars[i + 1..]
                    .iter()
                    .position(|&x| x == '\'')
                    .expect("an unclosed single quote");
                word.extend(&chars[i..i + end + 2]);
                in_word = true;
                i += end + 2;
            }
            '"' => {
                let mut j = i + 1;
                while chars[j] != '"' {
                    if chars[j] == '\\' {
                        j += 1;
                    } else if chars[j] == '$' && chars.get(j + 1) == Some(&'(') {
                        j = close_paren(&chars, j + 1);
                    }
                    j += 1;
                }
                word.extend(&chars[i..=j]);
                in_word = true;
                i = j + 1;
            }
            '\\' => {
                word.extend(&chars[i..(i + 2).min(chars.len())]);
                in_word = true;
                i += 2;
            }
            '$' if chars.get(i + 1) == Some(&'(') => {
                let j = close_paren(&chars, i + 1);
                word.extend(&chars[i..=j]);
                in_word = true;
                i = j + 1;
            }
            '&' | '|' | ';' | '(' | ')' | '>' => {
                // `2>` and `1>`: the descriptor belongs to the operator.
                if c == '>' && in_word && (word == "1" || word == "2") {
                    word.clear();
                    in_word = false;
                }
                flush(&mut word, &mut in_word, &mut toks);
                let two: String = chars[i..(i + 2).min(chars.len())].iter().collect();
                let op = match (c, two.as_str()) {
                    (_, "&&") => "&&",
                    (_, "||") => "||",
                    ('|', _) => "|",
                    (';', _) => ";",
                    ('(', _) => "(",
                    (')', _) => ")",
                    ('>', _) => ">",
                    _ => panic!("`{line}`: a background `&` is not a documented command"),
                };
                toks.push(Tok::Op(op));
                i += op.len();
                // `>&1`: a redirection to a descriptor, not a file.
                if op == ">" && chars.get(i) == Some(&'&') {
                    toks.pop();
                    i += 2;
                }
            }
            _ => {
                word.push(c);
                in_word = true;
                i += 1;
            }
        }
    }
    flush(&mut word, &mut in_word, &mut toks);
    toks
}

/// The index of the `)` that closes the `(` at `open`.
fn close_paren(chars: &[char], open: usize) -> usize {
    let mut depth = 0;
    for (k, &c) in chars.iter().enumerate().skip(open) {
        match c {
            '(' => depth += 1,
            ')' => {
                depth -= 1;
                if depth == 0 {
                    return k;
                }
            }
            _ => {}
        }
    }
    panic!("an unclosed `$(`");
}

/// `a/{x,y}/b` as `a/x/b` and `a/y/b` (unquoted braces only; `${` is a
/// variable).
fn brace_expand(raw: &str) -> Vec<String> {
    let chars: Vec<char> = raw.chars().collect();
    let mut quote = None;
    for (i, &c) in chars.iter().enumerate() {
        match (quote, c) {
            (None, '\'' | '"') => quote = Some(c),
            (Some(q), c) if c == q => quote = None,
            (None, '{') if i == 0 || chars[i - 1] != '$' => {
                let Some(end) = chars[i..].iter().position(|&x| x == '}') else {
                    break;
                };
                let inner: String = chars[i + 1..i + end].iter().collect();
                if !inner.contains(',') {
                    break;
                }
                let head: String = chars[..i].iter().collect();
                let tail: String = chars[i + end + 1..].iter().collect();
                return inner
                    .split(',')
                    .flat_map(|alt| brace_expand(&format!("{head}{alt}{tail}")))
                    .collect();
            }
            _ => {}
        }
    }
    vec![raw.to_string()]
}

/// One `sh` block's shell: its working directory, `HOME`, variables, and the
/// last binding its commands printed.
#[derive(Clone)]
struct Shell {
    at: String,
    scratch: PathBuf,
    cwd: PathBuf,
    oldpwd: PathBuf,
    home: PathBuf,
    vars: BTreeMap<String, String>,
    binding: Option<String>,
    ran: Vec<String>,
    made: usize,
}

impl Shell {
    fn new(at: String, scratch: &Path) -> Shell {
        let checkout = scratch.join("checkout");
        let home = scratch.join("home");
        std::fs::create_dir_all(&checkout).unwrap();
        std::fs::create_dir_all(&home).unwrap();
        for d in ["specs", "tests"] {
            std::os::unix::fs::symlink(root().join(d), checkout.join(d)).unwrap();
        }
        Shell {
            at,
            scratch: scratch.to_path_buf(),
            cwd: checkout.clone(),
            oldpwd: checkout,
            home,
            vars: BTreeMap::new(),
            binding: None,
            ran: Vec::new(),
            made: 0,
        }
    }

    /// A stand-in for the Codex launcher: this repository's demo launcher,
    /// reached through a symlink.
    fn codex() -> String {
        root()
            .join("tests/fixtures/demo-home/.local/bin/codex")
            .display()
            .to_string()
    }

    fn var(&self, name: &str) -> String {
        match name {
            "PWD" => self.cwd.display().to_string(),
            "OLDPWD" => self.oldpwd.display().to_string(),
            "HOME" => self.home.display().to_string(),
            _ => self.vars.get(name).cloned().unwrap_or_else(|| {
                panic!(
                    "{}: `${name}` is not set in this block (tests/docs.rs knows PWD, OLDPWD, HOME and the block's own assignments)",
                    self.at
                )
            }),
        }
    }

    /// `$(...)`: the few command substitutions the docs use.
    fn substitute(&mut self, inner: &str) -> String {
        let inner = inner.trim();
        if inner == "mktemp -d" {
            self.made += 1;
            let dir = self.scratch.join(format!("mktemp-{}", self.made));
            std::fs::create_dir_all(&dir).unwrap();
            dir.display().to_string()
        } else if inner == "command -v codex"
            || (inner.starts_with("ls ") && inner.ends_with("/bin/codex"))
        {
            Shell::codex()
        } else {
            panic!(
                "{}: tests/docs.rs does not know what `$({inner})` gives; teach it",
                self.at
            )
        }
    }

    /// A word as the shell gives it to a program: quotes removed, `~`,
    /// variables and command substitutions expanded.
    fn expand_one(&mut self, raw: &str) -> String {
        let chars: Vec<char> = raw.chars().collect();
        let mut out = String::new();
        let mut i = 0;
        let mut dq = false;
        if chars.first() == Some(&'~') && chars.get(1).is_none_or(|&c| c == '/') {
            out.push_str(&self.home.display().to_string());
            i = 1;
        }
        while i < chars.len() {
            let c = chars[i];
            match c {
                '\'' if !dq => {
                    let end = chars[i + 1..].iter().position(|&x| x == '\'').unwrap();
                    out.extend(&chars[i + 1..i + 1 + end]);
                    i += end + 2;
                }
                '"' => {
                    dq = !dq;
                    i += 1;
                }
                '\\' => {
                    let next = chars.get(i + 1).copied().unwrap_or('\\');
                    if dq && !matches!(next, '"' | '\\' | '$' | '`') {
                        out.push('\\');
                    }
                    out.push(next);
                    i += 2;
                }
                '$' if chars.get(i + 1) == Some(&'(') => {
                    let j = close_paren(&chars, i + 1);
                    let inner: String = chars[i + 2..j].iter().collect();
                    let value = self.substitute(&inner);
                    out.push_str(&value);
                    i = j + 1;
                }
                '$' if chars.get(i + 1) == Some(&'{') => {
                    let end = chars[i..].iter().position(|&x| x == '}').unwrap();
                    let name: String = chars[i + 2..i + end].iter().collect();
                    out.push_str(&self.var(&name));
                    i += end + 1;
                }
                '$' if chars
                    .get(i + 1)
                    .is_some_and(|c| c.is_ascii_alphabetic() || *c == '_') =>
                {
                    let n = chars[i + 1..]
                        .iter()
                        .take_while(|c| c.is_ascii_alphanumeric() || **c == '_')
                        .count();
                    let name: String = chars[i + 1..i + 1 + n].iter().collect();
                    out.push_str(&self.var(&name));
                    i += n + 1;
                }
                _ => {
                    out.push(c);
                    i += 1;
                }
            }
        }
        out
    }

    fn expand(&mut self, raw: &str) -> Vec<String> {
        brace_expand(raw)
            .iter()
            .map(|w| self.expand_one(w))
            .collect()
    }

    fn path(&self, p: &str) -> PathBuf {
        self.cwd.join(p)
    }

    /// Run a `sh` block, line by line.
    fn block(&mut self, body: &str) -> Vec<String> {
        let mut failures = Vec::new();
        for line in body.replace("\\\n", " ").lines() {
            let toks = lex(line);
            let mut saved: Vec<Shell> = Vec::new();
            let mut cmd: Vec<String> = Vec::new();
            let mut redirect = None;
            let mut expect_redirect = false;
            let mut finish =
                |sh: &mut Shell, cmd: &mut Vec<String>, redirect: &mut Option<String>| {
                    if !cmd.is_empty() {
                        if let Err(e) = sh.simple(std::mem::take(cmd), redirect.take(), line) {
                            failures.push(e);
                        }
                    }
                };
            for tok in toks {
                match tok {
                    Tok::Word(w) if expect_redirect => {
                        redirect = Some(w);
                        expect_redirect = false;
                    }
                    Tok::Word(w) => cmd.push(w),
                    Tok::Op(">") => expect_redirect = true,
                    Tok::Op("(") => saved.push(self.clone()),
                    Tok::Op(")") => {
                        finish(self, &mut cmd, &mut redirect);
                        // A subshell's `cd` and variables end with it.
                        let outer = saved
                            .pop()
                            .unwrap_or_else(|| panic!("{}: `{line}`: `)` without `(`", self.at));
                        let ran = std::mem::take(&mut self.ran);
                        *self = outer;
                        self.ran = ran;
                    }
                    Tok::Op(_) => finish(self, &mut cmd, &mut redirect),
                }
            }
            finish(self, &mut cmd, &mut redirect);
        }
        failures
    }

    /// One simple command: assignments, then a program and its arguments.
    fn simple(
        &mut self,
        words: Vec<String>,
        redirect: Option<String>,
        line: &str,
    ) -> Result<(), String> {
        let mut env = Vec::new();
        let mut rest = words.as_slice();
        while let Some(w) = rest.first() {
            let Some((name, value)) = w.split_once('=') else {
                break;
            };
            if name.is_empty() || !name.chars().all(|c| c.is_ascii_alphanumeric() || c == '_') {
                break;
            }
            let value = self.expand_one(value);
            env.push((name.to_string(), value));
            rest = &rest[1..];
        }
        if rest.is_empty() {
            self.vars.extend(env);
            return Ok(());
        }
        let mut argv = Vec::new();
        for w in rest {
            argv.extend(self.expand(w));
        }
        match (argv[0].as_str(), argv.get(1).map(String::as_str)) {
            ("sealc", _) => self.sealc(argv[1..].to_vec(), env, redirect, line),
            ("cargo", Some("run")) => {
                let dashes = argv
                    .iter()
                    .position(|a| a == "--")
                    .ok_or_else(|| format!("{}: `{line}`: `cargo run` without `--`", self.at))?;
                self.sealc(argv[dashes + 1..].to_vec(), env, redirect, line)
            }
            ("cd", _) => {
                let to = argv.get(1).map_or(self.home.clone(), |d| self.path(d));
                self.oldpwd = std::mem::replace(&mut self.cwd, to);
                Ok(())
            }
            ("ssh-keygen" | "awk", _) => self.tool(argv, redirect, line),
            ("mkdir", _) => {
                for d in argv[1..].iter().filter(|a| !a.starts_with('-')) {
                    std::fs::create_dir_all(self.path(d)).unwrap();
                }
                Ok(())
            }
            _ => Ok(()),
        }
    }

    /// A real tool the docs use beside sealc (OpenSSH's `ssh-keygen`,
    /// `awk`), run in the block's directory with its `HOME`; `< FILE` is
    /// its stdin, `> FILE` its stdout.
    fn tool(
        &mut self,
        argv: Vec<String>,
        redirect: Option<String>,
        line: &str,
    ) -> Result<(), String> {
        let at = format!("{}: `{}`", self.at, line.trim());
        let mut args = Vec::new();
        let mut stdin = None;
        let mut it = argv[1..].iter();
        while let Some(a) = it.next() {
            match a.strip_prefix('<') {
                Some("") => stdin = it.next().cloned(),
                Some(file) => stdin = Some(file.to_string()),
                None => args.push(a.clone()),
            }
        }
        let mut cmd = Command::new(&argv[0]);
        cmd.args(&args)
            .current_dir(&self.cwd)
            .env("HOME", &self.home);
        match stdin {
            Some(f) => cmd
                .stdin(std::fs::File::open(self.path(&f)).map_err(|e| format!("{at}: {f}: {e}"))?),
            None => cmd.stdin(std::process::Stdio::null()),
        };
        let out = cmd.output().map_err(|e| format!("{at}: {e}"))?;
        self.ran.push(argv.join(" "));
        if !out.status.success() {
            return Err(format!(
                "{at}: failed\nexit {:?}\nstdout:\n{}\nstderr:\n{}",
                out.status.code(),
                String::from_utf8_lossy(&out.stdout),
                String::from_utf8_lossy(&out.stderr)
            ));
        }
        if let Some(file) = redirect {
            let file = self.expand_one(&file);
            std::fs::write(self.path(&file), &out.stdout).unwrap();
        }
        Ok(())
    }

    fn sealc(
        &mut self,
        mut args: Vec<String>,
        env: Vec<(String, String)>,
        redirect: Option<String>,
        line: &str,
    ) -> Result<(), String> {
        let at = format!("{}: `{}`", self.at, line.trim());
        let sub = args.first().cloned().unwrap_or_default();
        if sub == "exec" {
            args.insert(1, "--dry-run".to_string());
        }
        for a in args.iter_mut() {
            if a == "sha256:..." {
                *a = self
                    .binding
                    .clone()
                    .ok_or_else(|| format!("{at}: no command before it printed a binding"))?;
            }
        }
        let out = Command::new(sealc())
            .args(&args)
            .current_dir(&self.cwd)
            .env("HOME", &self.home)
            .env_remove("CODEX_HOME")
            .env_remove("SEALC_CODEX_DIR")
            .envs(env)
            .output()
            .unwrap();
        let stdout = String::from_utf8_lossy(&out.stdout).into_owned();
        let stderr = String::from_utf8_lossy(&out.stderr).into_owned();
        self.ran.push(format!("sealc {}", args.join(" ")));
        let code = out.status.code();
        let said = format!(
            "sealc {}\nexit {code:?}\nstdout:\n{stdout}\nstderr:\n{stderr}",
            args.join(" ")
        );
        if stderr.contains("For more information, try '--help'") {
            return Err(format!("{at}: sealc refused the command line\n{said}"));
        }
        let ok = match sub.as_str() {
            // 3: ambiguous or undetermined, still an answer.
            "explain" => matches!(code, Some(0 | 3)),
            // Without bubblewrap, a Linux seal cannot be planned (122).
            "exec" if !Path::new("/usr/bin/bwrap").exists() => matches!(code, Some(0 | 122)),
            _ => code == Some(0),
        };
        if !ok {
            return Err(format!("{at}: failed\n{said}"));
        }
        for text in [&stdout, &stderr] {
            if let Some(i) = text.rfind("binding sha256:") {
                let b = &text[i + 8..];
                let hex = b[7..].chars().take_while(char::is_ascii_hexdigit).count();
                if hex == 64 {
                    self.binding = Some(b[..7 + 64].to_string());
                }
            }
        }
        if let Some(file) = redirect {
            let file = self.expand_one(&file);
            std::fs::write(self.path(&file), &out.stdout).unwrap();
        }
        Ok(())
    }
}

#[test]
fn the_documented_commands_run_as_written() {
    let tmp = PathBuf::from(env!("CARGO_TARGET_TMPDIR"));
    std::fs::create_dir_all(&tmp).unwrap();
    let mut blocks = Vec::new();
    for doc in documents() {
        for fence in scan(&read(&doc)).fences {
            if fence.lang == "sh" {
                blocks.push((format!("{}:{}", doc.display(), fence.line), fence.body));
            }
        }
    }
    let results: Vec<(Vec<String>, Vec<String>)> = std::thread::scope(|s| {
        let handles: Vec<_> = blocks
            .iter()
            .map(|(at, body)| {
                let tmp = &tmp;
                s.spawn(move || {
                    let scratch = tempfile::Builder::new()
                        .prefix("docs-")
                        .tempdir_in(tmp)
                        .unwrap();
                    let mut sh = Shell::new(at.clone(), scratch.path());
                    let failures = sh.block(body);
                    (failures, sh.ran)
                })
            })
            .collect();
        handles.into_iter().map(|h| h.join().unwrap()).collect()
    });
    let failures: Vec<String> = results.iter().flat_map(|(f, _)| f.clone()).collect();
    let ran: Vec<&String> = results.iter().flat_map(|(_, r)| r).collect();
    assert!(failures.is_empty(), "{}", failures.join("\n\n"));
    for needed in [
        "compile",
        "verify",
        "sign",
        "show",
        "lint",
        "explain",
        "exec",
        "init",
        "schema",
        "man",
        "completions",
    ] {
        assert!(
            ran.iter()
                .any(|r| r.starts_with(&format!("sealc {needed} "))),
            "no documented `sealc {needed}` ran; ran:\n{}",
            ran.iter()
                .map(|r| r.as_str())
                .collect::<Vec<_>>()
                .join("\n")
        );
    }
}

/// The shell reader itself, on the forms the docs use.
#[test]
fn the_shell_reader_reads_the_forms_the_docs_use() {
    assert_eq!(
        lex(r#"OPENAI_API_KEY=... sealc exec "$OLDPWD/s.json" -- sh -c "a; b $HOME" # note"#),
        [
            "OPENAI_API_KEY=...",
            "sealc",
            "exec",
            "\"$OLDPWD/s.json\"",
            "--",
            "sh",
            "-c",
            "\"a; b $HOME\"",
        ]
        .map(|w| Tok::Word(w.to_string()))
    );
    assert_eq!(
        lex("(cd fuzz && cargo x) > f 2>&1"),
        [
            Tok::Op("("),
            Tok::Word("cd".into()),
            Tok::Word("fuzz".into()),
            Tok::Op("&&"),
            Tok::Word("cargo".into()),
            Tok::Word("x".into()),
            Tok::Op(")"),
            Tok::Op(">"),
            Tok::Word("f".into()),
        ]
    );
    assert_eq!(
        brace_expand(r#""$run"/{ws,home}"#),
        [r#""$run"/ws"#, r#""$run"/home"#]
    );
    assert_eq!(brace_expand("${x}/a"), ["${x}/a"]);
    assert_eq!(
        flags("sealc exec RECORD [--expect sha256:B] -D K=V --quiet/-q -- CMD"),
        ["--expect", "-D", "--quiet", "-q"]
    );
}
