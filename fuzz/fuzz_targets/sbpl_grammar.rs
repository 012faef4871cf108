//! The shipped SBPL reader and the grammar (`grammar/sbpl.pest`, through
//! pest) give the same answer on any text: both refuse it, or both build
//! the same tree.
#![no_main]

// pest_derive without its `std` feature names `alloc::`.
extern crate alloc;

#[path = "../../tests/support/sbpl_oracle.rs"]
mod oracle;

use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let Ok(src) = std::str::from_utf8(data) else {
        return;
    };
    // The oracle recurses without a limit; the reader refuses past its own.
    if src.bytes().filter(|b| matches!(b, b'(' | b'\'' | b'`' | b',')).count() > 200 {
        return;
    }
    let (a, b) = (sealc::sbpl::parse::Arena::new(), sealc::sbpl::parse::Arena::new());
    match (sealc::sbpl::parse::parse(src, &a), oracle::parse(src, &b)) {
        (Ok(a), Ok(b)) => assert_eq!(a, b, "different trees for {src:?}"),
        (Err(_), Err(_)) => {}
        (a, b) => panic!("{src:?}: the reader says {a:?}, the grammar {b:?}"),
    }
});
