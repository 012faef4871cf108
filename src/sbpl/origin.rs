//! Where a rule of a sealc profile comes from: the comment above it, which
//! names the spec entry (`; filesystem.write "${ws}" (as written)`), read
//! back for `sealc explain`.

/// The comment directly above line `line` (from 1) of `text`: a line that
/// starts with a single `;`, without it.
pub fn comment_above(text: &str, line: usize) -> Option<String> {
    let above = text.lines().nth(line.checked_sub(2)?)?.trim_start();
    let comment = above.strip_prefix(';')?;
    if comment.starts_with(';') {
        return None; // `;;`: a section heading, not the rule's comment
    }
    Some(comment.trim().to_string())
}

/// The spec entry a comment (or the rule itself) names: `section.key
/// "value"` or `section.key = "value"`, as written in the spec; the base's
/// own rules name `target.base`.
pub fn spec_entry(comment: Option<&str>, rule: &str) -> Option<String> {
    match rule {
        "(allow default)" => return Some("target.base = \"allow-default\"".into()),
        "(deny default)" => return Some("target.base = \"deny-default\"".into()),
        _ => {}
    }
    let c = comment?;
    if c.starts_with("deny-default base") {
        return Some("target.base = \"deny-default\"".into());
    }
    let (key, rest) = c.split_once(' ')?;
    let (section, name) = key.split_once('.')?;
    let word = |s: &str| !s.is_empty() && s.bytes().all(|b| b.is_ascii_lowercase() || b == b'_');
    if !word(section) || !word(name) {
        return None;
    }
    let (eq, rest) = match rest.strip_prefix("= ") {
        Some(r) => (" =", r),
        None => ("", rest),
    };
    let value = rest.strip_prefix('"')?;
    let end = value.find('"')?;
    Some(format!("{key}{eq} \"{}\"", &value[..end]))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn entries_of_comments() {
        let e = |c: &str| spec_entry(Some(c), "(deny file-read* (subpath \"/x\"))");
        assert_eq!(
            e("filesystem.write \"${ws}\" (as written)").as_deref(),
            Some("filesystem.write \"${ws}\"")
        );
        assert_eq!(
            e("network.mode = \"none\": no IP traffic in or out, no unix sockets").as_deref(),
            Some("network.mode = \"none\"")
        );
        assert_eq!(
            e("network.proxy \"127.0.0.1:8080\": outbound TCP").as_deref(),
            Some("network.proxy \"127.0.0.1:8080\"")
        );
        assert_eq!(
            e("deny-default base: signals within this sandbox only").as_deref(),
            Some("target.base = \"deny-default\"")
        );
        assert_eq!(e("writes are an allow-list: every path is denied"), None);
        assert_eq!(
            spec_entry(None, "(allow default)").as_deref(),
            Some("target.base = \"allow-default\"")
        );
    }

    #[test]
    fn the_comment_is_the_line_above() {
        let text = ";; heading\n(version 1)\n; filesystem.write \"/w\" (as written)\n(allow file-write* (subpath \"/w\"))\n";
        assert_eq!(
            comment_above(text, 4).as_deref(),
            Some("filesystem.write \"/w\" (as written)")
        );
        assert_eq!(comment_above(text, 2), None);
        assert_eq!(comment_above(text, 3), None);
        assert_eq!(comment_above(text, 1), None);
        assert_eq!(comment_above(text, 0), None);
    }
}
