#![forbid(unsafe_code)]

/// musl's own allocator is slow for compile's many small allocations
/// (measured in benches/peers.sh); the static build uses dlmalloc, the
/// allocator glibc's malloc descends from.
#[cfg(target_env = "musl")]
#[global_allocator]
static ALLOCATOR: dlmalloc::GlobalDlmalloc = dlmalloc::GlobalDlmalloc;

fn main() {
    std::process::exit(sealc::cli::main());
}
