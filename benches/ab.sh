#!/bin/sh
# Run two builds of one criterion bench alternately, so that both meet the same machine state,
# and print each run's criterion median for every benchmark the filter selects.
#
#   cargo bench -p rmq-benches --no-run                # in each checkout, note the binaries
#   benches/ab.sh BASE_BIN NEW_BIN 'append_dispatch' 3  # 3 rounds of both builds
#
# Output: one line per run and benchmark, `round build benchmark median`, then the load
# average. Criterion's own reports go under $RMQ_BENCH_DIR/criterion-{base,new} (default
# /tmp/rmq-ab), one per build, so neither is compared with the other's last run.
set -eu

if [ "$#" -lt 3 ]; then
    echo "usage: $0 BASE_BIN NEW_BIN FILTER [ROUNDS]" >&2
    exit 2
fi
base=$1
new=$2
filter=$3
rounds=${4:-3}
export RMQ_BENCH_DIR="${RMQ_BENCH_DIR:-/tmp/rmq-ab}"
mkdir -p "$RMQ_BENCH_DIR"

run() {
    # criterion prints "name  time: [low median high]" (the name may be on the line before)
    CRITERION_HOME="$RMQ_BENCH_DIR/criterion-$3" "$2" --bench "$filter" 2>/dev/null | awk -v r="$1" -v b="$3" '
        /time:/ && !/change/ && prev != "change:" {
            line = $0
            sub(/^ */, "", line)
            if (line ~ /^time:/) { name = prev } else { name = $1 }
            split(line, parts, "[][]")
            split(parts[2], t, " ")
            printf "%s %s %s %s %s\n", r, b, name, t[3], t[4]
        }
        { prev = $1 }'
}

echo "# $(date -u '+%F %T') UTC, $(nproc) CPUs, filter '$filter', $rounds rounds"
i=1
while [ "$i" -le "$rounds" ]; do
    # Odd rounds run base first, even rounds new first, so that neither always meets the
    # machine the other left behind.
    if [ $((i % 2)) -eq 1 ]; then
        run "$i" "$base" base
        run "$i" "$new" new
    else
        run "$i" "$new" new
        run "$i" "$base" base
    fi
    echo "# load average after round $i: $(cut -d' ' -f1-3 /proc/loadavg)"
    i=$((i + 1))
done
