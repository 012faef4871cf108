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
//! A compile's heap is also backed by transparent huge pages, where the
//! host gives them to memory that asks (`madvise`): 10,000 roots touch 25
//! MB of heap, which is 6,000 small pages, each a page fault and a TLB
//! entry (in a VM a TLB miss walks two levels of tables); as 2 MiB pages
//! they are about a dozen. Measured whole process (docs/performance.md),
//! medians against small pages: 10,000 roots 0.80 to 0.95 of the time,
//! 1,000 roots 0.92, the shipped probe spec 0.93 to 0.97, for 2 MB more
//! peak RSS on a small spec and 6 MB on 10,000 roots. Where the kernel
//! must compact memory to find a huge page, a fault may wait for it (none
//! did here: `compact_stall` stayed 0 over 100 runs).
//!
//! Elsewhere (the static build's dlmalloc, macOS) this does nothing.

/// How much the heap grows by past what an allocation needs.
#[cfg(all(target_os = "linux", target_env = "gnu"))]
const TOP_PAD: libc::c_int = 4 << 20;

/// Keep freed memory for reuse for the rest of this process (glibc only).
pub fn tune_for_a_short_command() {
    #[cfg(all(target_os = "linux", target_env = "gnu"))]
    {
        // The largest threshold glibc accepts on 64-bit hosts (32 MiB):
        // allocations below it come from the heap, and are reused.
        const MMAP_THRESHOLD: libc::c_int = 32 << 20;
        const TRIM_THRESHOLD: libc::c_int = 128 << 20;
        // The heap grows 4 MiB at a time, not a page at a time.
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

/// Before a compile of a spec `spec_len` bytes long: grow the heap now by
/// room for the compile, and ask the kernel to back that room with huge
/// pages (glibc only; `glibc.malloc.hugetlb=1` does the same for a whole
/// process, but only when set before it starts). The advice changes how
/// memory is backed, never what it holds: where the kernel has no huge
/// page to give, or refuses, or THP is off, pages are small, as before.
pub fn expect_a_compile_of(spec_len: usize) {
    #[cfg(all(target_os = "linux", target_env = "gnu"))]
    huge_heap(spec_len.saturating_mul(128).clamp(32 << 20, 256 << 20));
    #[cfg(not(all(target_os = "linux", target_env = "gnu")))]
    let _ = spec_len;
}

#[cfg(all(target_os = "linux", target_env = "gnu"))]
#[allow(unsafe_code)]
fn huge_heap(room: usize) {
    const HUGE: usize = 2 << 20;
    // Below the mmap threshold set above, so it comes from the heap.
    const PROBE: usize = 16 << 20;
    let Ok(pad) = libc::c_int::try_from(room) else {
        return;
    };
    // Under a limit on data or address space the room would count against
    // it untouched (and leave no room for a thread's stack): small pages.
    let limited = |r| rustix::process::getrlimit(r).current.is_some();
    if limited(rustix::process::Resource::Data) || limited(rustix::process::Resource::As) {
        return;
    }
    // SAFETY: as in `tune_for_a_short_command`: two integers; the heap
    // grows by `room` past what the next allocation that grows it needs.
    if unsafe { libc::mallopt(libc::M_TOP_PAD, pad) } == 0 {
        return;
    }
    // SAFETY: sbrk(0) only reads the current program break.
    let before = unsafe { libc::sbrk(0) } as usize;
    // SAFETY: malloc of a size; the result is checked for null, never
    // read or written, and freed once, below. Freed, it joins the heap's
    // top (the trim threshold is above it), so the room stays reserved:
    // the heap now ends about PROBE + room past where it was.
    let probe = unsafe { libc::malloc(PROBE) };
    // SAFETY: sbrk(0) only reads the current program break.
    let end = unsafe { libc::sbrk(0) } as usize;
    // From here the heap grows as before, 4 MiB past what an allocation
    // needs: where the room was not given (an RLIMIT_DATA or RLIMIT_AS
    // below it), what fits in the limit is still allocated.
    // SAFETY: as above.
    let _ = unsafe { libc::mallopt(libc::M_TOP_PAD, TOP_PAD) };
    if probe.is_null() {
        return;
    }
    let start = probe as usize;
    // SAFETY: `probe` came from malloc above and is freed once.
    unsafe { libc::free(probe) };
    // The probe came from the heap only if the heap grew to hold it (where
    // the kernel refuses to grow it, glibc maps the probe elsewhere).
    let (first, last) = (start.next_multiple_of(HUGE), end / HUGE * HUGE);
    if end <= before || start >= end || end - start < PROBE || last <= first {
        return;
    }
    // SAFETY: [first, last) lies in the heap's mapping, past every live
    // allocation (it was the probe's and the top's); MADV_HUGEPAGE sets a
    // flag on the mapping and touches no byte. Its error is ignored: the
    // pages are then small, as without it.
    let _ = unsafe {
        libc::madvise(
            first as *mut libc::c_void,
            last - first,
            libc::MADV_HUGEPAGE,
        )
    };
}
