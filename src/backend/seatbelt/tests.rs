use super::*;

#[test]
fn literals_are_escaped() {
    assert_eq!(lit("/a\"b\\c\n"), "\"/a\\\"b\\\\c\\x0a\"");
}

#[test]
fn ancestors_of_a_path() {
    fn a(p: &str) -> Vec<&str> {
        ancestors(p).collect()
    }
    assert_eq!(a("/a/b/c"), ["/", "/a", "/a/b"]);
    assert!(a("/").is_empty());
    assert_eq!(a("/a"), ["/"]);
}
