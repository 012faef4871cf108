//! The regex subset seatbelt compiles (AppleMatch): characters, `.`,
//! `[...]`/`[^...]`, `^`, `$`, `*`, `+`, `?`, `|` and groups. Matching is a
//! search, without implicit anchors. Anything else (intervals `{m,n}`,
//! `(?:...)`, POSIX classes, back-references) is refused, so the evaluator
//! reports the answer as undetermined instead of guessing.

#[derive(Clone, Debug, PartialEq, Eq)]
enum Re {
    Char(char),
    Any,
    Class {
        negated: bool,
        ranges: Vec<(char, char)>,
    },
    Start,
    End,
    Concat(Vec<Re>),
    Alt(Vec<Re>),
    Star(Box<Re>),
    Plus(Box<Re>),
    Opt(Box<Re>),
}

/// A compiled pattern.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Regex(Re);

impl Regex {
    /// Compile; `Err` names the construct seatbelt's subset does not have.
    pub fn new(pattern: &str) -> Result<Regex, String> {
        let chars: Vec<char> = pattern.chars().collect();
        let mut p = Parser { s: &chars, i: 0 };
        let re = p.alt()?;
        if p.i != chars.len() {
            return Err(format!("unbalanced `)` at {}", p.i));
        }
        Ok(Regex(re))
    }

    /// Does the pattern match anywhere in `text`?
    pub fn is_match(&self, text: &str) -> bool {
        let s: Vec<char> = text.chars().collect();
        (0..=s.len()).any(|start| m(&self.0, &s, start, &mut |_| true))
    }
}

struct Parser<'a> {
    s: &'a [char],
    i: usize,
}

impl Parser<'_> {
    fn peek(&self) -> Option<char> {
        self.s.get(self.i).copied()
    }

    fn alt(&mut self) -> Result<Re, String> {
        let mut branches = vec![self.concat()?];
        while self.peek() == Some('|') {
            self.i += 1;
            branches.push(self.concat()?);
        }
        Ok(if branches.len() == 1 {
            branches.remove(0)
        } else {
            Re::Alt(branches)
        })
    }

    fn concat(&mut self) -> Result<Re, String> {
        let mut items = Vec::new();
        while let Some(c) = self.peek() {
            if c == '|' || c == ')' {
                break;
            }
            let atom = self.atom()?;
            let atom = match self.peek() {
                Some('*') => {
                    self.i += 1;
                    Re::Star(Box::new(atom))
                }
                Some('+') => {
                    self.i += 1;
                    Re::Plus(Box::new(atom))
                }
                Some('?') => {
                    self.i += 1;
                    Re::Opt(Box::new(atom))
                }
                Some('{') => return Err("interval `{m,n}`".into()),
                _ => atom,
            };
            items.push(atom);
        }
        Ok(Re::Concat(items))
    }

    fn atom(&mut self) -> Result<Re, String> {
        let c = self.peek().ok_or("unexpected end")?;
        self.i += 1;
        Ok(match c {
            '.' => Re::Any,
            '^' => Re::Start,
            '$' => Re::End,
            '(' => {
                if self.peek() == Some('?') {
                    return Err("group `(?...)`".into());
                }
                let inner = self.alt()?;
                if self.peek() != Some(')') {
                    return Err("unclosed `(`".into());
                }
                self.i += 1;
                inner
            }
            '[' => self.class()?,
            '\\' => {
                let e = self.peek().ok_or("trailing backslash")?;
                self.i += 1;
                if e.is_ascii_digit() {
                    return Err("back-reference".into());
                }
                Re::Char(e)
            }
            '*' | '+' | '?' => return Err(format!("`{c}` with nothing to repeat")),
            '{' => return Err("interval `{m,n}`".into()),
            c => Re::Char(c),
        })
    }

    fn class(&mut self) -> Result<Re, String> {
        let negated = self.peek() == Some('^');
        if negated {
            self.i += 1;
        }
        let mut ranges = Vec::new();
        let mut first = true;
        loop {
            let c = self.peek().ok_or("unclosed `[`")?;
            self.i += 1;
            if c == ']' && !first {
                break;
            }
            if c == '[' && self.peek() == Some(':') {
                return Err("POSIX class `[[:...:]]`".into());
            }
            first = false;
            let lo = c;
            if self.peek() == Some('-') && self.s.get(self.i + 1).is_some_and(|n| *n != ']') {
                let hi = self.s[self.i + 1];
                self.i += 2;
                ranges.push((lo, hi));
            } else {
                ranges.push((lo, lo));
            }
        }
        Ok(Re::Class { negated, ranges })
    }
}

/// Match `re` at position `i`, calling `k` with each end position.
fn m(re: &Re, s: &[char], i: usize, k: &mut dyn FnMut(usize) -> bool) -> bool {
    match re {
        Re::Char(c) => s.get(i) == Some(c) && k(i + 1),
        Re::Any => i < s.len() && k(i + 1),
        Re::Class { negated, ranges } => {
            s.get(i)
                .is_some_and(|c| ranges.iter().any(|(lo, hi)| lo <= c && c <= hi) != *negated)
                && k(i + 1)
        }
        Re::Start => i == 0 && k(i),
        Re::End => i == s.len() && k(i),
        Re::Concat(items) => concat(items, s, i, k),
        Re::Alt(branches) => branches.iter().any(|b| m(b, s, i, k)),
        Re::Opt(r) => m(r, s, i, k) || k(i),
        Re::Star(r) => star(r, s, i, k),
        Re::Plus(r) => m(r, s, i, &mut |j| star(r, s, j, k)),
    }
}

fn concat(items: &[Re], s: &[char], i: usize, k: &mut dyn FnMut(usize) -> bool) -> bool {
    match items.split_first() {
        None => k(i),
        Some((first, rest)) => m(first, s, i, &mut |j| concat(rest, s, j, k)),
    }
}

fn star(r: &Re, s: &[char], i: usize, k: &mut dyn FnMut(usize) -> bool) -> bool {
    // Greedy; an iteration must consume input, so empty loops end.
    m(r, s, i, &mut |j| j > i && star(r, s, j, k)) || k(i)
}

#[cfg(test)]
mod tests {
    use super::Regex;

    fn yes(p: &str, t: &str) -> bool {
        Regex::new(p).unwrap().is_match(t)
    }

    #[test]
    fn unanchored_search() {
        assert!(yes("apple", "com.apple.x"));
        assert!(yes(
            r"\.apple-extension-service$",
            "/x/y.apple-extension-service"
        ));
        assert!(!yes(
            r"\.apple-extension-service$",
            "/x/y.apple-extension-service/z"
        ));
        assert!(yes("^/private/tmp/[^/]+$", "/private/tmp/abc"));
        assert!(!yes("^/private/tmp/[^/]+$", "/private/tmp/a/b"));
        assert!(yes("^/a(b|c)+d?$", "/abcbc"));
        assert!(yes("^/x/.*\\.sb$", "/x/y/z.sb"));
        assert!(yes("[a-c]", "zzb"));
    }

    #[test]
    fn unsupported_constructs_are_refused() {
        for p in ["a{2}", "(?:a)", "[[:alpha:]]", "(a)\\1", "*a", "(a"] {
            assert!(Regex::new(p).is_err(), "{p}");
        }
    }
}
