//! OpenSSH's `allowed_signers` file (ssh-keygen(1), "ALLOWED SIGNERS"):
//! who may sign a seal, for which namespaces, and when.
//!
//! Each line is `PRINCIPALS [OPTIONS] KEYTYPE BASE64 [COMMENT]`; `#` starts
//! a comment line. `PRINCIPALS` is a comma-separated list of patterns
//! (`*`, `?`, quoted or not); the options are `namespaces="LIST"`,
//! `valid-after="TIME"`, `valid-before="TIME"` and `cert-authority`.
//!
//! Read to fail closed: a line sealc cannot read exactly as OpenSSH does
//! trusts no one, and is reported (a certificate authority, since sealc
//! verifies plain keys only; a time without a trailing `Z`, which OpenSSH
//! reads in the host's own time zone and which would therefore mean another
//! instant on a reviewer's machine). Nothing here reads the host or the
//! clock: the caller gives the file's text and the time.

use ssh_key::PublicKey;

/// One trusted key, as a line of the file says it.
#[derive(Clone, Debug)]
pub struct Signer {
    /// The line it came from (1-based).
    pub line: usize,
    /// Principal patterns.
    pub principals: Vec<String>,
    /// Namespace patterns (`None`: every namespace).
    pub namespaces: Option<Vec<String>>,
    /// Seconds since the epoch (UTC).
    pub valid_after: Option<i64>,
    pub valid_before: Option<i64>,
    pub key: PublicKey,
}

/// The file read: the keys it trusts, and the lines it does not (each with
/// its number and why).
#[derive(Clone, Debug, Default)]
pub struct Signers {
    pub signers: Vec<Signer>,
    pub skipped: Vec<(usize, String)>,
}

/// Read an `allowed_signers` file's text. Never fails: an unreadable line
/// is skipped and said in [`Signers::skipped`].
pub fn parse(text: &str) -> Signers {
    let mut out = Signers::default();
    for (i, raw) in text.lines().enumerate() {
        let line = raw.trim();
        if line.is_empty() || line.starts_with('#') {
            continue;
        }
        match parse_line(line) {
            Ok(Some(mut s)) => {
                s.line = i + 1;
                out.signers.push(s);
            }
            Ok(None) => {}
            Err(why) => out.skipped.push((i + 1, why)),
        }
    }
    out
}

/// One field: up to the next space outside double quotes (quotes kept).
fn field(s: &str) -> (&str, &str) {
    let mut quoted = false;
    for (i, c) in s.char_indices() {
        match c {
            '"' => quoted = !quoted,
            ' ' | '\t' if !quoted => return (&s[..i], s[i..].trim_start()),
            _ => {}
        }
    }
    (s, "")
}

fn unquote(s: &str) -> &str {
    s.strip_prefix('"')
        .and_then(|s| s.strip_suffix('"'))
        .unwrap_or(s)
}

fn list(s: &str) -> Vec<String> {
    unquote(s)
        .split(',')
        .map(str::trim)
        .filter(|p| !p.is_empty())
        .map(String::from)
        .collect()
}

/// Does the field start a key (`ssh-ed25519`, `ecdsa-sha2-nistp256`,
/// `sk-ssh-ed25519@openssh.com`, ...)?
fn is_key_type(s: &str) -> bool {
    s.starts_with("ssh-") || s.starts_with("ecdsa-") || s.starts_with("sk-")
}

fn parse_line(line: &str) -> Result<Option<Signer>, String> {
    let (principals, rest) = field(line);
    let principals = list(principals);
    if principals.is_empty() {
        return Err("no principal".into());
    }
    let (mut next, mut rest) = field(rest);
    let (mut namespaces, mut valid_after, mut valid_before) = (None, None, None);
    if !is_key_type(next) {
        for opt in split_options(next) {
            let (name, value) = match opt.split_once('=') {
                Some((n, v)) => (n.to_ascii_lowercase(), Some(unquote(v))),
                None => (opt.to_ascii_lowercase(), None),
            };
            match (name.as_str(), value) {
                ("cert-authority", None) => {
                    return Err("a certificate authority: sealc verifies plain keys only".into())
                }
                ("namespaces", Some(v)) => namespaces = Some(list(v)),
                ("valid-after", Some(v)) => valid_after = Some(time(v)?),
                ("valid-before", Some(v)) => valid_before = Some(time(v)?),
                _ => return Err(format!("an option sealc does not know: `{opt}`")),
            }
        }
        (next, rest) = field(rest);
    }
    let (blob, _comment) = field(rest);
    if !is_key_type(next) || blob.is_empty() {
        return Err("no key (`KEYTYPE BASE64`) where one belongs".into());
    }
    let key = PublicKey::from_openssh(&format!("{next} {blob}"))
        .map_err(|e| format!("its key cannot be read: {e}"))?;
    Ok(Some(Signer {
        line: 0,
        principals,
        namespaces,
        valid_after,
        valid_before,
        key,
    }))
}

/// The options field, split at commas outside double quotes.
fn split_options(s: &str) -> Vec<&str> {
    let mut out = Vec::new();
    let (mut quoted, mut start) = (false, 0);
    for (i, c) in s.char_indices() {
        match c {
            '"' => quoted = !quoted,
            ',' if !quoted => {
                out.push(&s[start..i]);
                start = i + 1;
            }
            _ => {}
        }
    }
    out.push(&s[start..]);
    out.retain(|o| !o.is_empty());
    out
}

/// `YYYYMMDD[HHMM[SS]]Z` as seconds since the epoch. A time without the
/// `Z` is refused: OpenSSH reads it in the host's own time zone.
fn time(v: &str) -> Result<i64, String> {
    let Some(digits) = v.strip_suffix('Z').or_else(|| v.strip_suffix('z')) else {
        return Err(format!(
            "the time `{v}` has no trailing `Z`: OpenSSH reads it in the host's time zone, so it would mean another instant elsewhere; write it in UTC with a `Z`"
        ));
    };
    if !digits.bytes().all(|b| b.is_ascii_digit()) || ![8, 12, 14].contains(&digits.len()) {
        return Err(format!("the time `{v}` is not `YYYYMMDD[HHMM[SS]]Z`"));
    }
    let n = |a: usize, b: usize| {
        digits
            .get(a..b)
            .and_then(|s| s.parse::<i64>().ok())
            .unwrap_or(0)
    };
    let (y, mo, d) = (n(0, 4), n(4, 6), n(6, 8));
    let (h, mi, sec) = (n(8, 10), n(10, 12), n(12, 14));
    if !(1..=12).contains(&mo) || !(1..=31).contains(&d) || h > 23 || mi > 59 || sec > 59 {
        return Err(format!("the time `{v}` is not a valid date and time"));
    }
    Ok(days_from_civil(y, mo, d) * 86_400 + h * 3600 + mi * 60 + sec)
}

/// Days since 1970-01-01 of a proleptic Gregorian date (Howard Hinnant's
/// `days_from_civil`).
fn days_from_civil(y: i64, m: i64, d: i64) -> i64 {
    let y = if m <= 2 { y - 1 } else { y };
    let era = y.div_euclid(400);
    let yoe = y - era * 400;
    let mp = (m + 9) % 12;
    let doy = (153 * mp + 2) / 5 + d - 1;
    let doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
    era * 146_097 + doe - 719_468
}

/// OpenSSH's pattern match: `*` any run, `?` one character.
pub fn glob(pattern: &str, s: &str) -> bool {
    let (p, t): (Vec<char>, Vec<char>) = (pattern.chars().collect(), s.chars().collect());
    let (mut pi, mut ti) = (0, 0);
    let (mut star, mut mark) = (None, 0);
    while ti < t.len() {
        if pi < p.len() && (p[pi] == '?' || p[pi] == t[ti]) {
            pi += 1;
            ti += 1;
        } else if pi < p.len() && p[pi] == '*' {
            star = Some(pi);
            mark = ti;
            pi += 1;
        } else if let Some(sp) = star {
            pi = sp + 1;
            mark += 1;
            ti = mark;
        } else {
            return false;
        }
    }
    p[pi..].iter().all(|&c| c == '*')
}

/// A pattern list as OpenSSH matches it: a `!pattern` that matches refuses
/// outright; otherwise any plain pattern that matches.
pub fn matches_list(patterns: &[String], s: &str) -> bool {
    let mut hit = false;
    for p in patterns {
        match p.strip_prefix('!') {
            Some(neg) if glob(neg, s) => return false,
            Some(_) => {}
            None => hit |= glob(p, s),
        }
    }
    hit
}

impl Signer {
    /// Why this line does not let its key sign for `namespace` at `now`
    /// (seconds since the epoch), if it does not.
    pub fn refuses(&self, namespace: &str, now: i64) -> Option<String> {
        if let Some(ns) = &self.namespaces {
            if !matches_list(ns, namespace) {
                return Some(format!(
                    "line {} lets its key sign for `{}` only, not `{namespace}`",
                    self.line,
                    ns.join(",")
                ));
            }
        }
        if let Some(after) = self.valid_after.filter(|&a| now < a) {
            return Some(format!(
                "line {} trusts its key only from {} on",
                self.line,
                utc(after)
            ));
        }
        if let Some(before) = self.valid_before.filter(|&b| now >= b) {
            return Some(format!(
                "line {} trusted its key only until {} (expired)",
                self.line,
                utc(before)
            ));
        }
        None
    }
}

/// Seconds since the epoch as `YYYY-MM-DDTHH:MM:SSZ`.
pub fn utc(secs: i64) -> String {
    let (days, rem) = (secs.div_euclid(86_400), secs.rem_euclid(86_400));
    // Hinnant's `civil_from_days`.
    let z = days + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z - era * 146_097;
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let d = doy - (153 * mp + 2) / 5 + 1;
    let m = if mp < 10 { mp + 3 } else { mp - 9 };
    let y = yoe + era * 400 + i64::from(m <= 2);
    format!(
        "{y:04}-{m:02}-{d:02}T{:02}:{:02}:{:02}Z",
        rem / 3600,
        rem % 3600 / 60,
        rem % 60
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    const KEY: &str =
        "ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIJREesPodJ+bQOtL+qW2EbuLg0H5xzsAQz2JkOpWuDb3";

    #[test]
    fn reads_options_and_keys() {
        let text = format!(
            "# reviewers\n\n\"alice@example.com,bob@*\" namespaces=\"sealc-seal,git\",valid-after=\"20260101Z\",valid-before=\"202701011200Z\" {KEY} alice\ncarol {KEY}\n"
        );
        let s = parse(&text);
        assert!(s.skipped.is_empty(), "{:?}", s.skipped);
        assert_eq!(s.signers.len(), 2);
        let a = &s.signers[0];
        assert_eq!(a.line, 3);
        assert_eq!(a.principals, ["alice@example.com", "bob@*"]);
        assert_eq!(
            a.namespaces.as_deref(),
            Some(&["sealc-seal".to_string(), "git".into()][..])
        );
        assert_eq!(
            a.valid_after.map(utc).as_deref(),
            Some("2026-01-01T00:00:00Z")
        );
        assert_eq!(
            a.valid_before.map(utc).as_deref(),
            Some("2027-01-01T12:00:00Z")
        );
        assert_eq!(s.signers[1].principals, ["carol"]);
        assert!(s.signers[1].namespaces.is_none());
    }

    #[test]
    fn refuses_what_it_cannot_read_as_openssh_does() {
        let text = format!(
            "ca cert-authority {KEY}\nlocal valid-before=\"20270101\" {KEY}\nodd frobnicate {KEY}\nnokey\nbad ssh-ed25519 AAAA\n"
        );
        let s = parse(&text);
        assert!(s.signers.is_empty());
        let lines: Vec<usize> = s.skipped.iter().map(|(l, _)| *l).collect();
        assert_eq!(lines, [1, 2, 3, 4, 5]);
        assert!(
            s.skipped[1].1.contains("no trailing `Z`"),
            "{}",
            s.skipped[1].1
        );
    }

    #[test]
    fn windows_and_namespaces() {
        let s = &parse(&format!(
            "a namespaces=\"sealc-*,!sealc-run\",valid-after=\"20260101Z\",valid-before=\"20270101Z\" {KEY}"
        ))
        .signers[0];
        let mid = 1_780_000_000; // 2026-05-28
        assert_eq!(s.refuses("sealc-seal", mid), None);
        assert!(s.refuses("sealc-run", mid).is_some());
        assert!(s.refuses("git", mid).is_some());
        assert!(s
            .refuses("sealc-seal", 1_700_000_000)
            .unwrap()
            .contains("only from"));
        assert!(s
            .refuses("sealc-seal", 1_900_000_000)
            .unwrap()
            .contains("expired"));
    }

    #[test]
    fn glob_matches_as_openssh() {
        assert!(glob("*", ""));
        assert!(glob("a*c", "abbbc"));
        assert!(glob("a?c", "abc"));
        assert!(!glob("a?c", "ac"));
        assert!(!glob("sealc-seal", "sealc-seals"));
        assert_eq!(utc(0), "1970-01-01T00:00:00Z");
        assert_eq!(time("20000229Z"), Ok(951_782_400));
    }

    proptest::proptest! {
        /// Any text: read without a panic, in time linear in it, and every
        /// line either trusted or named as skipped.
        #[test]
        fn any_text_is_read_without_panic(text in "[ -~\t\n\",=!*?a-zA-Z0-9+/]{0,400}") {
            let s = parse(&text);
            let lines = text.lines().filter(|l| {
                let l = l.trim();
                !l.is_empty() && !l.starts_with('#')
            }).count();
            proptest::prop_assert_eq!(s.signers.len() + s.skipped.len(), lines);
            for l in &s.signers {
                let _ = l.refuses("sealc-seal", 0);
            }
        }

        #[test]
        fn glob_never_panics(p in "[a-c*?!]{0,12}", t in "[a-c]{0,12}") {
            let _ = glob(&p, &t);
            let _ = matches_list(&[p], &t);
        }
    }
}
