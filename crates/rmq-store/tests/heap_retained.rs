//! `retain_freed_heap` (issue 18): the broker's per-request frame buffers, freed and allocated
//! again, reuse the same memory instead of being given back to the kernel and faulted in anew.
//! Its own test binary, because the setting is process-wide.

/// Minor page faults of the calling thread so far (`/proc/thread-self/stat`, field 10).
fn minor_faults() -> u64 {
    let stat = std::fs::read_to_string("/proc/thread-self/stat").expect("procfs");
    // The command name (field 2) is in parentheses and may hold spaces: count after it.
    let after_comm = &stat[stat.rfind(')').expect("comm") + 2..];
    after_comm
        .split(' ')
        .nth(7)
        .and_then(|f| f.parse().ok())
        .expect("minflt")
}

/// Four 1 MiB frame buffers in use at once (a connection's worth of big sends), written
/// through, then all freed: what a broker does per burst of 1 MiB messages.
fn burst() {
    let bufs: Vec<Vec<u8>> = (0..4)
        .map(|i| {
            let mut b = Vec::with_capacity(1 << 20);
            b.resize(1 << 20, i);
            b
        })
        .collect();
    std::hint::black_box(&bufs);
}

#[test]
fn freed_frame_buffers_are_reused_without_page_faults() {
    assert!(
        rmq_store::retain_freed_heap(16 << 20),
        "glibc refused the allocator settings"
    );
    burst();
    let before = minor_faults();
    for _ in 0..8 {
        burst();
    }
    let faults = minor_faults() - before;
    // 8 bursts of 4 MiB are 8 192 pages; faulting them all in again would be thousands.
    assert!(
        faults < 256,
        "{faults} page faults for 8 bursts of 4 × 1 MiB freed and allocated again"
    );
}
