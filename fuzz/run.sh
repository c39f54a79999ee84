#!/usr/bin/env bash
# `make fuzz`: run every cargo fuzz target of fuzz/ for FUZZ_SECONDS (default 60) each and
# print what each did (seconds, executions, corpus, crashes). Installs what it needs: a
# nightly toolchain (rustup) and cargo-fuzz (crates.io). Each target starts from the corpus
# `seed` writes from tests/corpus/ plus whatever earlier runs left in fuzz/corpus/.
# Exits 1 when a target crashed; the input is in fuzz/artifacts/<target>/ (reproduce with
# `cargo +nightly fuzz run --fuzz-dir fuzz <target> <file>`).
#
#   FUZZ_SECONDS=300 make fuzz               longer
#   FUZZ_TARGETS="frame record" make fuzz    some targets only
set -euo pipefail

root=$(cd "$(dirname "$0")/.." && pwd)
cd "$root"
seconds=${FUZZ_SECONDS:-60}
all_targets="frame remoting_header record message_bodies json_body"
targets=${FUZZ_TARGETS:-$all_targets}

if ! rustup toolchain list | grep -q '^nightly'; then
    echo "installing the nightly toolchain (cargo fuzz needs -Zsanitizer)"
    rustup toolchain install nightly --profile minimal
fi
if ! cargo +nightly fuzz --version >/dev/null 2>&1; then
    echo "installing cargo-fuzz from crates.io"
    cargo +nightly install cargo-fuzz --locked
fi

echo "---- seeding fuzz/corpus from tests/corpus"
cargo +nightly run --quiet --release --manifest-path fuzz/Cargo.toml -p rmq-fuzz-seed -- \
    "$root" "$root/fuzz/corpus"

echo "---- building the targets (release, debug assertions and overflow checks on, ASan)"
cargo +nightly fuzz build --fuzz-dir fuzz --debug-assertions

logs=$(mktemp -d)
trap 'rm -rf "$logs"' EXIT
summary=()
failed=0
for t in $targets; do
    echo "---- fuzz $t for ${seconds}s"
    mkdir -p "fuzz/corpus/$t"
    before=$(find "fuzz/corpus/$t" -type f | wc -l)
    status=0
    cargo +nightly fuzz run --fuzz-dir fuzz --debug-assertions "$t" -- \
        -max_total_time="$seconds" -timeout=10 -rss_limit_mb=2048 -print_final_stats=1 \
        >"$logs/$t.log" 2>&1 || status=$?
    execs=$(grep -o 'stat::number_of_executed_units: *[0-9]*' "$logs/$t.log" |
        grep -o '[0-9]*$' | tail -1)
    after=$(find "fuzz/corpus/$t" -type f | wc -l)
    if [ "$status" -eq 0 ]; then
        result="no crash"
    else
        failed=1
        artifact=$(grep -o 'Test unit written to [^ ]*' "$logs/$t.log" | tail -1 |
            sed 's/Test unit written to //')
        result="CRASH (exit $status) ${artifact:-see log below}"
        echo "---- $t failed; what it said:"
        grep -A3 -m1 -E 'panicked at|ERROR: (AddressSanitizer|libFuzzer)' "$logs/$t.log" || true
        grep -E '^(SUMMARY|artifact_prefix|MS:)' "$logs/$t.log" || true
    fi
    summary+=("$(printf '%-16s %6ss %12s execs   corpus %5s -> %-5s  %s' \
        "$t" "$seconds" "${execs:-?}" "$before" "$after" "$result")")
done

echo
echo "==== cargo fuzz: ${seconds}s per target"
printf '%s\n' "${summary[@]}"
exit "$failed"
