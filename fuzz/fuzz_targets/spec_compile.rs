//! Compiling any spec text on the in-memory host must not panic.
#![no_main]

use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    if let Ok(src) = std::str::from_utf8(data) {
        let _ = sealc::compile("f.toml", src, &Vec::new(), &sealc::facts::FakeHost::new());
        let _ = sealc::lint::lint(src);
    }
});
