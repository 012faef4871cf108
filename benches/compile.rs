//! In-process compile benchmarks: the probe-rep spec end to end and by stage,
//! and generated specs with many filesystem roots.

use std::fmt::Write as _;
use std::hint::black_box;
use std::time::Duration;

use criterion::{criterion_group, criterion_main, BenchmarkId, Criterion, Throughput};
use sealc::facts::{FakeHost, VarFlags};

const PROBE_REP: &str = include_str!("../specs/probe-rep.toml");
const PROBE_REP_FILE: &str = "specs/probe-rep.toml";

fn probe_flags() -> VarFlags {
    [
        ("run", "/Users/agent/runs/r1"),
        ("checkout", "/Users/agent/src/skills"),
        ("proxy_port", "8080"),
    ]
    .into_iter()
    .map(|(k, v)| (k.to_string(), v.to_string()))
    .collect()
}

fn probe_host() -> FakeHost {
    FakeHost::new()
        .env("HOME", "/Users/agent")
        .env("PATH", "/usr/bin:/bin")
        .env("LANG", "en_US.UTF-8")
        .env("TERM", "xterm-256color")
        .env("TMPDIR", "/var/folders/xy/T")
        .link("/tmp", "private/tmp")
        .link("/var", "private/var")
        .link("/etc", "private/etc")
        .link(
            "/Users/agent/.local/bin/codex",
            "../lib/node_modules/@openai/codex/bin/codex.js",
        )
        .file(
            "/Users/agent/.local/lib/node_modules/@openai/codex/bin/codex.js",
            b"#!/usr/bin/env node\n",
        )
        .dir("/private/tmp")
        .dir("/private/var/folders/xy/T")
        .dir("/Users/agent/.codex")
        .dir("/Users/agent/src/skills")
        .dir("/Users/agent/runs/r1/ws")
        .dir("/Users/agent/runs/r1/home")
        .dir("/Users/agent/runs/r1/tmp")
}

/// A spec with `n` filesystem roots: half deny_read, a quarter write and a
/// quarter allow_read, each allow_read root inside a deny_read root.
fn many_roots_spec(n: usize) -> String {
    let deny = n / 2;
    let write = n / 4;
    let allow = n - deny - write;
    let list = |count: usize, f: &dyn Fn(usize) -> String| {
        let mut s = String::from("[\n");
        for i in 0..count {
            writeln!(s, "  \"{}\",", f(i)).unwrap();
        }
        s.push(']');
        s
    };
    format!(
        "version = 1\nname = \"many-roots\"\n\n[filesystem]\ndeny_read = {}\nallow_read = {}\nwrite = {}\n",
        list(deny, &|i| format!("/data/d{i}")),
        list(allow, &|i| format!("/data/d{i}/pub")),
        list(write, &|i| format!("/work/w{i}")),
    )
}

fn bench_probe_rep(c: &mut Criterion) {
    let flags = probe_flags();
    let host = probe_host();
    let compiled = sealc::compile(PROBE_REP_FILE, PROBE_REP, &flags, &host)
        .expect("probe-rep compiles on the fake host");

    c.bench_function("compile probe-rep", |b| {
        b.iter(|| {
            sealc::compile(
                black_box(PROBE_REP_FILE),
                black_box(PROBE_REP),
                black_box(&flags),
                black_box(&host),
            )
        })
    });

    // The same spec with its two `[[assert]]`s removed: the pipeline without
    // parsing the profile back to prove them.
    let no_asserts = PROBE_REP
        .split("\n[[assert]]")
        .next()
        .unwrap_or(PROBE_REP)
        .to_string();
    c.bench_function("compile probe-rep without proving asserts", |b| {
        b.iter(|| {
            sealc::compile(
                black_box(PROBE_REP_FILE),
                black_box(&no_asserts),
                black_box(&flags),
                black_box(&host),
            )
        })
    });

    c.bench_function("parse probe-rep", |b| {
        b.iter(|| sealc::spec::parse(black_box(PROBE_REP)))
    });

    c.bench_function("render seatbelt probe-rep", |b| {
        b.iter(|| sealc::backend::seatbelt::render(black_box(&compiled.ir)))
    });
}

fn bench_many_roots(c: &mut Criterion) {
    let flags: VarFlags = Vec::new();
    let host = FakeHost::new();
    let mut group = c.benchmark_group("compile N roots");
    for n in [1_000usize, 5_000, 10_000] {
        let src = many_roots_spec(n);
        sealc::compile("many-roots.toml", &src, &flags, &host)
            .unwrap_or_else(|e| panic!("many-roots ({n}) compiles: {e:?}"));
        group.throughput(Throughput::Elements(n as u64));
        group.sample_size(if n >= 10_000 { 10 } else { 20 });
        group.measurement_time(Duration::from_secs(match n {
            0..=1_000 => 5,
            1_001..=5_000 => 10,
            _ => 15,
        }));
        group.bench_with_input(BenchmarkId::from_parameter(n), &src, |b, src| {
            b.iter(|| {
                sealc::compile(
                    black_box("many-roots.toml"),
                    black_box(src),
                    black_box(&flags),
                    black_box(&host),
                )
            })
        });
    }
    group.finish();
}

fn bench_verify(c: &mut Criterion) {
    let compiled = sealc::compile(PROBE_REP_FILE, PROBE_REP, &probe_flags(), &probe_host())
        .expect("probe-rep compiles on the fake host");
    let files = compiled.files;
    let lookup = |n: &str| files.get(n).cloned();
    let outcome = sealc::verify::verify(&files["seal.json"], &lookup);
    assert_eq!(outcome.report.verdict(), sealc::verify::Verdict::Verified);
    c.bench_function("verify probe-rep record", |b| {
        b.iter(|| sealc::verify::verify(black_box(&files["seal.json"]), &lookup))
    });
}

fn bench_evaluator(c: &mut Criterion) {
    use sealc::sbpl::eval::{Model, Target};
    let compiled = sealc::compile(PROBE_REP_FILE, PROBE_REP, &probe_flags(), &probe_host())
        .expect("probe-rep compiles on the fake host");
    let text = String::from_utf8(compiled.files["seal.sb"].clone()).expect("utf-8 profile");
    let arena = sealc::sbpl::parse::Arena::new();
    let model = Model::new(
        &sealc::sbpl::parse::parse(&text, &arena).expect("profile parses"),
        &Default::default(),
    );
    // A mix of queries across the profile: denied, re-allowed, written, network.
    let queries: Vec<(&str, Target)> = vec![
        (
            "file-read-data",
            Target::Path("/Users/agent/src/skills/premortem/SKILL.md".into()),
        ),
        (
            "file-read-data",
            Target::Path("/Users/agent/runs/r1/ws/notes.md".into()),
        ),
        (
            "file-read-metadata",
            Target::Path("/Users/agent/runs".into()),
        ),
        (
            "file-write-data",
            Target::Path("/Users/agent/runs/r1/ws/a/b/c.txt".into()),
        ),
        ("file-write-data", Target::Path("/etc/passwd".into())),
        (
            "file-link",
            Target::Path("/Users/agent/.codex/auth.json".into()),
        ),
        (
            "file-read-data",
            Target::Path("/usr/lib/libSystem.B.dylib".into()),
        ),
        (
            "network-outbound",
            Target::Remote {
                host: "127.0.0.1".into(),
                port: 8080,
            },
        ),
    ];
    let mut group = c.benchmark_group("evaluator");
    group.throughput(Throughput::Elements(queries.len() as u64));
    group.bench_function("probe-rep queries", |b| {
        b.iter(|| {
            for (op, t) in &queries {
                black_box(model.query(black_box(op), black_box(t)));
            }
        })
    });
    group.finish();
    c.bench_function("parse probe-rep profile", |b| {
        b.iter(|| {
            let arena = sealc::sbpl::parse::Arena::with_capacity(text.len() * 3);
            sealc::sbpl::parse::parse(black_box(&text), &arena).map(|p| p.forms.len())
        })
    });
}

fn bench_linux(c: &mut Criterion) {
    let flags = probe_flags();
    let host = probe_host();
    let linux = Some(sealc::spec::Platform::Linux);
    let compiled = sealc::compile_for(PROBE_REP_FILE, PROBE_REP, &flags, linux, &host)
        .expect("probe-rep compiles for Linux on the fake host");
    c.bench_function("compile probe-rep --platform linux", |b| {
        b.iter(|| {
            sealc::compile_for(
                black_box(PROBE_REP_FILE),
                black_box(PROBE_REP),
                black_box(&flags),
                linux,
                black_box(&host),
            )
        })
    });
    c.bench_function("render bwrap probe-rep", |b| {
        b.iter(|| sealc::backend::bwrap::render(black_box(&compiled.ir)))
    });
    let bytes = &compiled.files[sealc::backend::BWRAP];
    c.bench_function("read seal.bwrap.json back and query a path", |b| {
        b.iter(|| {
            let m = sealc::mounts::Model::from_artifact(black_box(bytes)).unwrap();
            m.path(
                sealc::mounts::Access::ReadData,
                black_box("/Users/agent/src/skills/premortem/SKILL.md"),
            )
        })
    });
    let rt = sealc::exec::Runtime {
        exe: std::path::Path::new("/usr/local/bin/sealc"),
        bridge_dir: std::path::Path::new("/tmp/sealc-bridge"),
        profile: b"",
        user: None,
        inside: None,
        has_proc_entry: &|_| true,
        cwd: None,
    };
    let cmd = vec!["codex".into(), "exec".into()];
    c.bench_function("exec plan probe-rep linux", |b| {
        b.iter(|| {
            sealc::exec::plan(
                black_box(&compiled.ir),
                black_box(&cmd),
                &|_| Some("v".into()),
                &rt,
            )
        })
    });
}

criterion_group!(
    benches,
    bench_probe_rep,
    bench_linux,
    bench_many_roots,
    bench_verify,
    bench_evaluator
);
criterion_main!(benches);
