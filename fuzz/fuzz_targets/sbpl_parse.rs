//! The SBPL parser and evaluator must not panic on any input.
#![no_main]

use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    if let Ok(src) = std::str::from_utf8(data) {
        let arena = sealc::sbpl::parse::Arena::new();
        if let Ok(p) = sealc::sbpl::parse::parse(src, &arena) {
            let printed = sealc::sbpl::parse::print(&p);
            let arena = sealc::sbpl::parse::Arena::new();
            let again = sealc::sbpl::parse::parse(&printed, &arena).expect("printed text parses");
            assert_eq!(again.forms.len(), p.forms.len());
            let m = sealc::sbpl::eval::Model::new(&p, &Default::default());
            let _ = m.query("file-read-data", &sealc::sbpl::eval::Target::Path("/a/b".into()));
        }
    }
});
