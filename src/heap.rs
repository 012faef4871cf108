//! How a short command's memory is allocated: glibc's malloc, tuned for a
//! process that allocates a big compile's worth and then ends.
//!
//! By default glibc gives each allocation of 128 KiB or more its own
//! mapping and unmaps it when freed, and returns the top of its heap to
//! the kernel past 128 KiB free: every big list a compile builds, frees and
//! builds again (a 10,000-root profile's sections one after the other) is
//! fresh pages, each zeroed by a page fault. Tuned, freed memory stays in the
//! heap for the next allocation: 10,000 roots take 4,700 page faults instead
//! of 5,300 (`perf stat`; docs/performance.md). The process is short, so what it keeps is
//! returned at its exit. `sealc exec` does not call this: its proxy lives as
//! long as the run, and keeps glibc's defaults.
//!
//! Elsewhere (the static build's dlmalloc, macOS) this does nothing.

/// Keep freed memory for reuse for the rest of this process (glibc only).
pub fn tune_for_a_short_command() {
    #[cfg(all(target_os = "linux", target_env = "gnu"))]
    {
        // The largest threshold glibc accepts on 64-bit hosts (32 MiB):
        // allocations below it come from the heap, and are reused.
        const MMAP_THRESHOLD: libc::c_int = 32 << 20;
        const TRIM_THRESHOLD: libc::c_int = 128 << 20;
        // The heap grows 4 MiB at a time, not a page at a time.
        const TOP_PAD: libc::c_int = 4 << 20;
        for (param, value) in [
            (libc::M_MMAP_THRESHOLD, MMAP_THRESHOLD),
            (libc::M_TRIM_THRESHOLD, TRIM_THRESHOLD),
            (libc::M_TOP_PAD, TOP_PAD),
        ] {
            // SAFETY: mallopt takes two integers and changes only how
            // glibc's malloc chooses where later allocations come from,
            // under the main arena's lock. glibc marks it unsafe while
            // malloc initializes itself (`MT-Unsafe init`); by the time a
            // command runs, Rust's start-up has allocated (the arguments),
            // so that is done. A value it refuses (it returns 0) leaves the
            // default, which is correct, only slower.
            #[allow(unsafe_code)]
            let _ = unsafe { libc::mallopt(param, value) };
        }
    }
}
