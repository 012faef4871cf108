include!("/tmp/benchhead.rs");
use std::time::Instant;
fn main() {
    let flags = probe_flags();
    let host = probe_host();
    let src = PROBE_REP;
    let n: u32 = std::env::args().nth(1).and_then(|a| a.parse().ok()).unwrap_or(3000);
    let t = Instant::now(); for _ in 0..n { black_box(sealc::compile(PROBE_REP_FILE, src, &flags, &host).unwrap()); } println!("compile {:?}", t.elapsed()/n);
    if std::env::args().nth(2).is_some() { return; }
    let spec = sealc::spec::parse(src).unwrap();
    let t = Instant::now(); for _ in 0..n { black_box(sealc::spec::parse(src).unwrap()); } println!("parse {:?}", t.elapsed()/n);
    let t = Instant::now(); for _ in 0..n { black_box(sealc::facts::gather(&spec, src, &flags, &host).unwrap()); } println!("gather {:?}", t.elapsed()/n);
    let (facts, _) = sealc::facts::gather(&spec, src, &flags, &host).unwrap();
    let t = Instant::now(); for _ in 0..n { black_box(sealc::ir::lower(&spec, src, &facts).unwrap()); } println!("lower {:?}", t.elapsed()/n);
    let (ir, _) = sealc::ir::lower(&spec, src, &facts).unwrap();
    let t = Instant::now(); for _ in 0..n { black_box(sealc::backend::seatbelt::render(&ir)); } println!("seatbelt {:?}", t.elapsed()/n);
    let t = Instant::now(); for _ in 0..n { black_box(sealc::backend::env::render(&ir)); } println!("env {:?}", t.elapsed()/n);
    let t = Instant::now(); for _ in 0..n { black_box(sealc::backend::codex::render(&ir)); } println!("codex {:?}", t.elapsed()/n);
    let files = sealc::backend::render_all(&ir);
    let t = Instant::now(); for _ in 0..n { let r = sealc::record::Record::new("p", src, &facts, &files, vec![]); black_box(r.to_canonical()); } println!("record {:?}", t.elapsed()/n);
    let t = Instant::now(); for _ in 0..n { black_box(sealc::compile_with_facts("p", src, facts.clone()).unwrap()); } println!("compile_with_facts {:?}", t.elapsed()/n);
    let t = Instant::now(); for _ in 0..n { black_box(sealc::backend::render_all(&ir)); } println!("render_all {:?}", t.elapsed()/n);
    println!("sb bytes {}", files["seal.sb"].len());
}
#[allow(dead_code)]
fn more() {}
