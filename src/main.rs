#![forbid(unsafe_code)]

/// A compile is thousands of small allocations. On glibc hosts (and macOS)
/// sealc allocates with mimalloc (2.x): the in-process compile of the probe
/// spec takes 0.68 of its time with glibc's malloc, 10,000 roots whole
/// process 0.90, the probe spec's whole process the same (its arena on
/// transparent huge pages costs start-up what its allocation saves);
/// docs/performance.md. `benches/compile.rs` declares the same allocator.
#[cfg(not(target_env = "musl"))]
#[global_allocator]
static ALLOCATOR: mimalloc::MiMalloc = mimalloc::MiMalloc;

/// musl's own allocator is slow for compile's many small allocations
/// (measured in benches/peers.sh); the static build uses dlmalloc, the
/// allocator glibc's malloc descends from.
#[cfg(target_env = "musl")]
#[global_allocator]
static ALLOCATOR: dlmalloc::GlobalDlmalloc = dlmalloc::GlobalDlmalloc;

fn main() {
    std::process::exit(sealc::cli::main());
}
