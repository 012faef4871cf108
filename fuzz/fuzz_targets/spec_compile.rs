//! Compiling any spec text on the in-memory host must not panic, nor must
//! rendering what it finds: as text for people (grouped, windowed) and as
//! JSON.
#![no_main]

use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    if let Ok(src) = std::str::from_utf8(data) {
        let diags = match sealc::compile("f.toml", src, &Vec::new(), &sealc::facts::FakeHost::new()) {
            Ok(c) => c.warnings,
            Err(d) => d,
        };
        let _ = sealc::diag::render(&diags, "f.toml", src);
        let linted = sealc::lint::lint(src);
        let _ = sealc::diag::render(&linted, "f.toml", src);
        let _ = sealc::lint::to_json(&linted, "f.toml", src);
    }
});
