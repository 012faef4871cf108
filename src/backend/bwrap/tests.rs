#[test]
fn the_direct_form_is_canonical() {
    let src = "version = 1\nname = \"b\"\n[target]\nplatform = \"linux\"\n[filesystem]\ndeny_read = [\"/d\", \"/gone\"]\n[network]\nmode = \"proxy\"\nproxy = \"127.0.0.1:1\"\n";
    let host = crate::facts::FakeHost::new().dir("/d");
    let c = crate::compile("b.toml", src, &Vec::new(), &host).unwrap();
    let bytes = &c.files[crate::backend::BWRAP];
    let v: serde_json::Value = serde_json::from_slice(bytes).unwrap();
    assert_eq!(
        v["absent"],
        serde_json::json!(["filesystem.deny_read /gone"])
    );
    assert_eq!(
        crate::canonical::canonical_json(&v).as_bytes(),
        bytes.as_slice()
    );
}
