//! The TOML document `codex/config.toml` is written from: keys and values
//! borrowed from the IR, built in any order and kept sorted, then written
//! in the `toml` crate's own layout with `toml_writer`, the encoder that
//! crate writes every key and string with.
//!
//! The layout is `toml::to_string`'s: in each table its values first, then
//! its tables, each in key order; a table's header only where it holds a
//! value or nothing at all (a table of tables is implied by theirs); a
//! blank line before every header but a first. The tests hold the two to
//! the same bytes on generated documents.

use std::borrow::Cow;
use std::collections::BTreeMap;

use toml_writer::TomlWrite as _;

/// A value of the document.
#[derive(Debug, Clone)]
pub enum Item<'a> {
    Bool(bool),
    Str(Cow<'a, str>),
    /// An inline array of strings.
    Strs(Vec<Cow<'a, str>>),
    Table(Doc<'a>),
}

impl<'a> From<&'a str> for Item<'a> {
    fn from(s: &'a str) -> Self {
        Item::Str(Cow::Borrowed(s))
    }
}

impl From<String> for Item<'_> {
    fn from(s: String) -> Self {
        Item::Str(Cow::Owned(s))
    }
}

impl From<bool> for Item<'_> {
    fn from(b: bool) -> Self {
        Item::Bool(b)
    }
}

/// A table: keys in sorted order.
#[derive(Debug, Clone, Default)]
pub struct Doc<'a>(BTreeMap<Cow<'a, str>, Item<'a>>);

impl<'a> Doc<'a> {
    pub fn new() -> Self {
        Doc(BTreeMap::new())
    }

    /// Set `key` to `item` (replacing what it held).
    pub fn set(&mut self, key: impl Into<Cow<'a, str>>, item: impl Into<Item<'a>>) -> &mut Self {
        self.0.insert(key.into(), item.into());
        self
    }

    /// The table at `key`, made empty if `key` holds none (or holds a value).
    pub fn table(&mut self, key: impl Into<Cow<'a, str>>) -> &mut Doc<'a> {
        let item = self
            .0
            .entry(key.into())
            .or_insert_with(|| Item::Table(Doc::new()));
        if !matches!(item, Item::Table(_)) {
            *item = Item::Table(Doc::new());
        }
        match item {
            Item::Table(t) => t,
            _ => unreachable!("the item was made a table above"),
        }
    }

    pub fn is_empty(&self) -> bool {
        self.0.is_empty()
    }

    /// The document's text, appended to `out`.
    pub fn write_to(&self, out: &mut String) {
        let start = out.len();
        let mut path = String::new();
        self.write_table(&mut path, start, out);
    }

    /// This table at `path` (its encoded dotted key; empty for the root).
    fn write_table(&self, path: &mut String, start: usize, out: &mut String) {
        let is_table = |i: &Item<'_>| matches!(i, Item::Table(_));
        let has_values = self.0.values().any(|i| !is_table(i));
        if !path.is_empty() && (has_values || self.0.is_empty()) {
            if out.len() != start {
                out.push('\n');
            }
            w(out.open_table_header());
            out.push_str(path);
            w(out.close_table_header());
            w(out.newline());
        }
        for (key, item) in &self.0 {
            if !is_table(item) {
                w(key_value(out, key, item));
            }
        }
        for (key, item) in &self.0 {
            let Item::Table(t) = item else { continue };
            let len = path.len();
            if !path.is_empty() {
                w(path.key_sep());
            }
            w(path.key(key.as_ref()));
            t.write_table(path, start, out);
            path.truncate(len);
        }
    }
}

/// `key = value` and its line's end.
fn key_value(out: &mut String, key: &str, item: &Item<'_>) -> std::fmt::Result {
    out.key(key)?;
    out.space()?;
    out.keyval_sep()?;
    out.space()?;
    match item {
        Item::Bool(b) => out.value(*b)?,
        Item::Str(s) => out.value(s.as_ref())?,
        Item::Strs(list) => {
            out.open_array()?;
            for (i, s) in list.iter().enumerate() {
                if i > 0 {
                    out.val_sep()?;
                    out.space()?;
                }
                out.value(s.as_ref())?;
            }
            out.close_array()?;
        }
        Item::Table(_) => {}
    }
    out.newline()
}

/// Writing into a `String` cannot fail (`fmt::Write for String` never
/// errs, and `toml_writer` only passes its errors on).
fn w(r: std::fmt::Result) {
    debug_assert!(r.is_ok(), "writing into a String failed");
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;
    use toml::{Table, Value};

    fn to_table(d: &Doc<'_>) -> Table {
        d.0.iter()
            .map(|(k, v)| {
                let v = match v {
                    Item::Bool(b) => Value::Boolean(*b),
                    Item::Str(s) => Value::String(s.to_string()),
                    Item::Strs(l) => {
                        Value::Array(l.iter().map(|s| Value::String(s.to_string())).collect())
                    }
                    Item::Table(t) => Value::Table(to_table(t)),
                };
                (k.to_string(), v)
            })
            .collect()
    }

    fn text() -> impl Strategy<Value = String> {
        // Bare-key characters, the ones that force quoting or escapes, and
        // characters beyond ASCII.
        proptest::string::string_regex("[a-z_\\-.0-9 \"'\\\\/\\n\\t\\u{1}\\u{7f}é€😀]{0,12}")
            .expect("a valid regex")
    }

    fn doc() -> impl Strategy<Value = Doc<'static>> {
        let leaf = prop_oneof![
            any::<bool>().prop_map(Item::Bool),
            text().prop_map(|s| Item::Str(Cow::Owned(s))),
            proptest::collection::vec(text().prop_map(Cow::Owned), 0..4).prop_map(Item::Strs),
        ];
        let item = leaf.prop_recursive(3, 40, 6, |inner| {
            proptest::collection::btree_map(text().prop_map(Cow::Owned), inner, 0..6)
                .prop_map(|m| Item::Table(Doc(m)))
        });
        proptest::collection::btree_map(text().prop_map(Cow::Owned), item, 0..8).prop_map(Doc)
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(512))]

        /// The writer writes what `toml::to_string` writes for the same
        /// table, byte for byte, and the text reads back as that table.
        #[test]
        fn writes_what_the_toml_crate_writes(d in doc()) {
            let mut out = String::new();
            d.write_to(&mut out);
            let table = to_table(&d);
            let theirs = toml::to_string(&table).expect("serializes");
            prop_assert_eq!(&out, &theirs);
            let back: Table = toml::from_str(&out).expect("reads back");
            prop_assert_eq!(back, table);
        }
    }

    #[test]
    fn a_table_of_tables_has_no_header_and_an_empty_one_has_one() {
        let mut d = Doc::new();
        d.set("a", true);
        d.table("skills").table("bundled").set("enabled", false);
        d.table("empty");
        let mut out = String::new();
        d.write_to(&mut out);
        assert_eq!(
            out,
            "a = true\n\n[empty]\n\n[skills.bundled]\nenabled = false\n"
        );
    }
}
