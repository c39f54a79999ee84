#!/bin/sh
# Run a benchmark with the page cache in the state of a broker that has been up for a while:
# full, so that each new CommitLog page is a page reclaimed from older data.
#
#   sudo benches/steady_state.sh cargo bench -p rmq-benches --bench store
#   sudo RMQ_BENCH_PAGE_CACHE_MIB=2048 benches/steady_state.sh target/release/deps/broker-<hash> --bench
#
# Why: on a freshly booted VM with most of its memory free, every new page-cache page is guest
# memory the hypervisor has not backed yet (or took back through free-page reporting), and the
# kernel's first write to it (zeroing the page on the mapping's fault) costs several times what
# it costs on a page reclaimed from the cache (see benches/RESULTS.md, "Cold and steady-state
# page cache"). A production broker meets that cost only until its page cache has filled the
# machine's memory; from then on it writes into reclaimed pages. This script reproduces that
# state in seconds instead of hours: it puts the command in a memory cgroup of
# RMQ_BENCH_PAGE_CACHE_MIB (default 1024) MiB and fills that cgroup with a clean scratch file
# first, so the command's new pages come from reclaiming the scratch file's (and then its own
# oldest) pages. Reclaim runs in the writing thread (cgroup reclaim is synchronous): its cost is
# part of the figures. Needs root (cgroup v1 or v2 with the memory controller).
set -eu

MIB=${RMQ_BENCH_PAGE_CACHE_MIB:-1024}
if [ "$#" -eq 0 ]; then
    echo "usage: $0 COMMAND [ARGS...]  (run as root; RMQ_BENCH_PAGE_CACHE_MIB sets the cgroup size)" >&2
    exit 2
fi
if [ "$(id -u)" -ne 0 ]; then
    echo "$0: needs root to create a memory cgroup (try: sudo $0 $*)" >&2
    exit 2
fi

name="rmq-steady-$$"
if [ -f /sys/fs/cgroup/cgroup.controllers ]; then
    grep -qw memory /sys/fs/cgroup/cgroup.controllers || {
        echo "$0: the cgroup v2 hierarchy has no memory controller" >&2
        exit 2
    }
    echo "+memory" > /sys/fs/cgroup/cgroup.subtree_control 2>/dev/null || true
    cg="/sys/fs/cgroup/$name"
    root_procs=/sys/fs/cgroup/cgroup.procs
    mkdir "$cg"
    echo $((MIB << 20)) > "$cg/memory.max"
elif [ -d /sys/fs/cgroup/memory ]; then
    cg="/sys/fs/cgroup/memory/$name"
    root_procs=/sys/fs/cgroup/memory/cgroup.procs
    mkdir "$cg"
    echo $((MIB << 20)) > "$cg/memory.limit_in_bytes"
else
    echo "$0: no memory cgroup hierarchy under /sys/fs/cgroup" >&2
    exit 2
fi

scratch="${TMPDIR:-/tmp}/rmq-steady-scratch-$$"
cleanup() {
    rm -f "$scratch"
    echo $$ > "$root_procs" 2>/dev/null || true
    rmdir "$cg" 2>/dev/null || true
}
trap cleanup EXIT INT TERM

echo $$ > "$cg/cgroup.procs"
echo "steady_state: filling a ${MIB} MiB memory cgroup with a clean scratch file" >&2
dd if=/dev/zero of="$scratch" bs=1M count="$MIB" status=none
sync
echo "steady_state: running $*" >&2
status=0
"$@" || status=$?
exit "$status"
