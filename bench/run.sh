#!/usr/bin/env bash
# make bench: dcirouter vs dpdk-testpmd io forwarding, one core, same input.
#
# For every case (RoCEv2 and plain UDP, IPv4 and IPv6, 64 B and 1 KiB
# payload) both programs read the same pcap through net_pcap with
# infinite_rx=1 (packets replayed from memory forever) and send into
# net_null (no-rx=1, so the sink produces no traffic of its own), with the
# forwarding loop pinned to the same core:
#   dcirouter: one worker on core $BENCH_CORE, the LPM/neighbour pipeline;
#   testpmd:   --forward-mode=io on lcore $BENCH_CORE (no packet access at all);
#   l3fwd:     DPDK's own LPM forwarding example (examples/l3fwd from Debian's
#              dpdk-doc, built here against the system DPDK) with the same
#              routes, on lcore $BENCH_CORE: a second reference, the cost of
#              an LPM forwarder written by the DPDK authors.
# Cases run interleaved for $BENCH_ROUNDS rounds (the order of the two programs
# alternates) so the ratio is measured under the same machine load; the table
# shows medians over the rounds.
#
# Environment:
#   BENCH_SECONDS  seconds per measurement, whole number (default 6)
#   BENCH_ROUNDS   rounds (default 2)
#   BENCH_CASES    space-separated subset of: roce4-64 roce6-64 roce4-1k roce6-1k udp4-64 udp6-64
#   BENCH_CORE     the forwarding core (default 1); BENCH_MAIN_CORE the EAL main lcore (default 0)
#   BENCH_PACKETS  distinct packets per input pcap (default 1024)
#   BENCH_HUGE     auto (default: reserve 2 MB hugepages if possible, else --no-huge) | 0 | 1
#   BENCH_NO_BUILD=1  skip `cargo build --release -p control`
#   BENCH_STRICT=1    exit 1 when the IPv6 goal (ratio >= 0.8) is missed
#   BENCH_OUT      work directory for pcaps, configs and logs (default bench/out)
#   BENCH_WIRE=0      skip the wire-format micro-benchmark (bench/wire-results.md)
#   BENCH_MAIN=0      skip the forwarding table above (bench/results.md)
#   BENCH_SRV6=0      skip the SRv6 / END.E / END.C suite on DPDK (bench/srv6.sh, bench/srv6-results.md)
#   BENCH_SRV6_MICRO=0 skip the SRv6 micro-benchmark (bench/srv6-micro-results.md)
#   BENCH_NOTIFY=0    skip the event-to-notification latency benchmark (bench/notify-results.md)
#   BENCH_HANDOFF=0   skip the shaped-port hand-off benchmark (bench/handoff-results.md)
#   BENCH_CONGESTION_ROUTER=0   skip the congestion-aware port in the router (bench/congestion-router-results.md)
#   BENCH_URPF=0      skip source validation (uRPF off / loose / strict) in the router (bench/urpf-results.md)
#   BENCH_ECMP=0      skip ECMP against one next hop in the router (bench/ecmp-results.md)
#   BENCH_LPM=0       skip the FIB lookup micro-benchmark against DPDK's rte_fib / rte_fib6 (bench/lpm-results.md)
#   BENCH_NUD=0       skip the neighbour unreachability detection cost on the control thread (bench/nud-results.md)
#   BENCH_L3FWD=0     skip the l3fwd reference (default: on when dpdk-doc's examples can be built)
set -euo pipefail

ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
SECS=${BENCH_SECONDS:-6}
ROUNDS=${BENCH_ROUNDS:-2}
CASES=${BENCH_CASES:-"roce4-64 roce6-64 roce4-1k roce6-1k udp4-64 udp6-64"}
CORE=${BENCH_CORE:-1}
MAIN=${BENCH_MAIN_CORE:-0}
PACKETS=${BENCH_PACKETS:-1024}
HUGE=${BENCH_HUGE:-auto}
OUT=${BENCH_OUT:-$ROOT/bench/out}
RESULTS=$ROOT/bench/results.md
TARGET=${CARGO_TARGET_DIR:-$ROOT/target}
GOAL=0.8

die() { echo "bench: $*" >&2; exit 1; }

command -v dpdk-testpmd >/dev/null || die "dpdk-testpmd not found (apt-get install dpdk)"
if [ "$CORE" = "$MAIN" ]; then die "BENCH_CORE and BENCH_MAIN_CORE must differ"; fi
case $SECS in ''|*[!0-9]*) die "BENCH_SECONDS must be a whole number" ;; esac

if [ "${BENCH_NO_BUILD:-0}" != 1 ]; then
    echo "bench: cargo build --release -p control" >&2
    (cd "$ROOT" && cargo build --release -p control --bins) >&2 || die "cargo build failed"
fi
DCIR=$TARGET/release/dcirouter
GEN=$TARGET/release/dcir-benchgen
[ -x "$DCIR" ] || die "$DCIR missing: run cargo build --release -p control"
[ -x "$GEN" ] || die "$GEN missing: run cargo build --release -p control"

mkdir -p "$OUT/logs"
rm -f "$OUT"/logs/*.log
BENCH_CORE=$CORE "$GEN" "$OUT" "$PACKETS" >"$OUT/logs/gen.log" || die "dcir-benchgen failed (see $OUT/logs/gen.log)"

# ---------------------------------------------------------------- memory
# Each process preallocates 256 MB (-m 256); they run one at a time.
NEED_PAGES=160
ORIG_PAGES=""
restore_hugepages() {
    if [ -n "$ORIG_PAGES" ]; then
        echo "$ORIG_PAGES" >/proc/sys/vm/nr_hugepages 2>/dev/null || true
    fi
}
trap restore_hugepages EXIT
hp_free() { awk '/^HugePages_Free:/ {print $2}' /proc/meminfo; }
hp_size_kb() { awk '/^Hugepagesize:/ {print $2}' /proc/meminfo; }

use_huge=0
if [ "$HUGE" != 0 ] && [ "$(hp_size_kb)" = 2048 ]; then
    free_pages=$(hp_free)
    if [ "${free_pages:-0}" -lt "$NEED_PAGES" ] && [ -w /proc/sys/vm/nr_hugepages ]; then
        cur=$(cat /proc/sys/vm/nr_hugepages)
        if echo $((cur + NEED_PAGES - free_pages)) >/proc/sys/vm/nr_hugepages 2>/dev/null; then
            ORIG_PAGES=$cur
        fi
        free_pages=$(hp_free)
    fi
    if [ "${free_pages:-0}" -ge "$NEED_PAGES" ]; then
        use_huge=1
    fi
fi
if [ "$HUGE" = 1 ] && [ "$use_huge" = 0 ]; then die "BENCH_HUGE=1 but $NEED_PAGES free 2 MB hugepages are not available"; fi
# --in-memory: no hugetlbfs mount or runtime files needed (memfd); --no-shconf for --no-huge.
if [ "$use_huge" = 1 ]; then
    MEM_ARGS=(--in-memory -m 256)
    MEM_DESC="2 MB hugepages (--in-memory -m 256)"
else
    MEM_ARGS=(--no-huge --no-shconf -m 1024)
    MEM_DESC="no hugepages (--no-huge -m 1024)"
fi
EAL_COMMON=(--no-pci "${MEM_ARGS[@]}" --log-level lib.eal:error)

# ----------------------------------------------------------------- runs
# run_dcir CASE ROUND -> prints "Mpps drops rx tx" (or "FAIL")
run_dcir() {
    local c=$1 r=$2 log=$OUT/logs/dcirouter-$1-r$2.log
    # The worker pins itself to $CORE, which must be in the main thread's
    # CPU set: EAL lcore 0 runs on ($MAIN,$CORE); the worker leaves it to $MAIN.
    timeout -s INT $((SECS + 30)) "$DCIR" "${EAL_COMMON[@]}" --lcores "0@($MAIN,$CORE)" --file-prefix "dcb$$-$c-$r" \
        -- run --config "$OUT/router-$c.toml" --duration "$SECS" >"$log" 2>&1 || true
    awk '/^ran [0-9.]+ s: rx [0-9]+ tx [0-9]+ drops [0-9]+/ {
            printf "%.4f %d %d %d\n", $7 / $2 / 1e6, $9, $5, $7; ok = 1 }
         END { if (!ok) print "FAIL" }' "$log"
}

# run_testpmd CASE ROUND -> prints "Mpps" (or "FAIL")
run_testpmd() {
    local c=$1 r=$2 log=$OUT/logs/testpmd-$1-r$2.log
    local pcap=$OUT/$c.pcap
    # Mean of the per-period Tx-pps of port 1 (the null sink), i.e. what io
    # forwarding sent; testpmd measures each period itself (clock_gettime),
    # the first display of each port is 0 by construction and skipped.
    # Line-buffered so the log shows when forwarding has started (start-up
    # time varies a lot on a loaded machine); then measure for $SECS seconds.
    timeout -s INT $((SECS + 60)) stdbuf -oL dpdk-testpmd "${EAL_COMMON[@]}" -l "$MAIN,$CORE" --main-lcore "$MAIN" --file-prefix "tpb$$-$c-$r" \
        --vdev "net_pcap0,rx_pcap=$pcap,infinite_rx=1" --vdev "net_null0,no-rx=1" \
        -- --forward-mode=io --auto-start --nb-cores=1 --stats-period 1 --total-num-mbufs=16384 --burst=32 \
        >"$log" 2>&1 </dev/null &
    local pid=$! i
    for i in $(seq 1 400); do
        grep -q 'Port statistics' "$log" 2>/dev/null && break
        kill -0 "$pid" 2>/dev/null || break
        sleep 0.1
    done
    sleep "$(awk -v s="$SECS" 'BEGIN { print s + 0.5 }')"
    kill -INT "$pid" 2>/dev/null || true
    wait "$pid" || true
    awk '/NIC statistics for port/ { port = $(NF-1) }
         /Tx-pps:/ { if (port == 1 && $2 + 0 > 0) { sum += $2; n++ } }
         /Accumulated forward statistics/ { acc = 1 }
         acc && /TX-packets:/ { total = $2; acc = 0 }
         END { if (n > 0) printf "%.4f %d %d\n", sum / n / 1e6, n, total; else print "FAIL" }' "$log"
}

# ---------------------------------------------------------------- l3fwd
# DPDK's examples/l3fwd (LPM lookup, --parse-ptype because net_pcap reports
# no packet types) as shipped in Debian's dpdk-doc, built against the system
# DPDK. One change for virtual devices: l3fwd asks for RX checksum offload,
# which net_pcap does not offer, so the request is removed (l3fwd then does
# not check IPv4 checksums at all; it never decrements the IPv6 Hop Limit).
# Its LPM cannot hold /0 routes: a default route becomes two /1 routes.
L3FWD=""
L3FWD_WHY=""
build_l3fwd() {
    local ex=/usr/share/dpdk/examples
    if [ ! -f "$ex/l3fwd/main.c" ] && [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null; then
        echo "bench: apt-get install dpdk-doc (DPDK's examples, for the l3fwd reference)" >&2
        DEBIAN_FRONTEND=noninteractive apt-get install -y -q dpdk-doc >"$OUT/logs/apt-dpdk-doc.log" 2>&1 || true
    fi
    if [ ! -f "$ex/l3fwd/main.c" ] || [ ! -d "$ex/common" ]; then
        L3FWD_WHY="DPDK's examples (package dpdk-doc) are not installed"; return
    fi
    local src=$OUT/l3fwd-src
    rm -rf "$src" && mkdir -p "$src" && cp -r "$ex/l3fwd" "$ex/common" "$src/"
    if ! grep -q '\.offloads = RTE_ETH_RX_OFFLOAD_CHECKSUM,' "$src/l3fwd/main.c"; then
        L3FWD_WHY="examples/l3fwd/main.c is not the 22.11 one this script patches"; return
    fi
    sed -i 's/\.offloads = RTE_ETH_RX_OFFLOAD_CHECKSUM,/.offloads = 0,/' "$src/l3fwd/main.c"
    if ! make -C "$src/l3fwd" -j2 >"$OUT/logs/l3fwd-build.log" 2>&1; then
        L3FWD_WHY="building examples/l3fwd failed (see $OUT/logs/l3fwd-build.log)"; return
    fi
    L3FWD=$src/l3fwd/build/l3fwd
}

# l3fwd_rules CASE: the router's routes as l3fwd rule files, all to port 1.
l3fwd_rules() {
    awk -F'"' -v v4="$OUT/l3fwd-$1.v4" -v v6="$OUT/l3fwd-$1.v6" '
        BEGIN { printf "" >v4; printf "" >v6 }
        /^prefix = / { p = $2; f = (p ~ /:/) ? v6 : v4
            if (p == "0.0.0.0/0") { print "R0.0.0.0/1 1" >f; print "R128.0.0.0/1 1" >f }
            else if (p == "::/0") { print "R::/1 1" >f; print "R8000::/1 1" >f }
            else print "R" p " 1" >f }' "$OUT/router-$1.toml"
}

# run_l3fwd CASE ROUND -> prints "Mpps" (or "FAIL"): port 1's opackets
# (ethdev telemetry) over $SECS seconds once forwarding runs.
run_l3fwd() {
    local c=$1 r=$2 log=$OUT/logs/l3fwd-$1-r$2.log prefix="l3b$$-$1-$2"
    l3fwd_rules "$c"
    # The main lcore forwards: l3fwd opens a TX queue per lcore and net_pcap has one.
    timeout -s INT $((SECS + 60)) "$L3FWD" "${EAL_COMMON[@]}" -l "$CORE" --file-prefix "$prefix" \
        --vdev "net_pcap0,rx_pcap=$OUT/$c.pcap,infinite_rx=1" --vdev "net_null0,no-rx=1" \
        -- -p 0x3 --config "(0,0,$CORE),(1,0,$CORE)" --lookup=lpm --parse-ptype \
        --rule_ipv4="$OUT/l3fwd-$c.v4" --rule_ipv6="$OUT/l3fwd-$c.v6" >"$log" 2>&1 </dev/null &
    local pid=$! i sock=/var/run/dpdk/$prefix/dpdk_telemetry.v2
    for i in $(seq 1 400); do
        grep -q 'entering main loop' "$log" 2>/dev/null && [ -S "$sock" ] && break
        kill -0 "$pid" 2>/dev/null || break
        sleep 0.1
    done
    python3 - "$sock" "$SECS" <<'PY' 2>>"$log" || echo FAIL
import json, socket, sys, time
def opackets():
    s = socket.socket(socket.AF_UNIX, socket.SOCK_SEQPACKET)
    s.settimeout(5)
    s.connect(sys.argv[1])
    s.recv(4096)
    s.send(b"/ethdev/stats,1")
    v = json.loads(s.recv(1 << 16))["/ethdev/stats"]["opackets"]
    s.close()
    return v, time.monotonic()
time.sleep(0.5)
a, t0 = opackets()
time.sleep(float(sys.argv[2]))
b, t1 = opackets()
if b <= a:
    sys.exit(1)
print("%.4f" % ((b - a) / (t1 - t0) / 1e6))
PY
    kill -INT "$pid" 2>/dev/null || true
    wait "$pid" || true
}

# med VALUE...: median of the values that are not FAIL (FAIL when none), 2 decimals.
med() { printf '%s\n' "$@" | { grep -v FAIL || true; } | sort -g | awk '{ a[NR] = $1 } END { if (NR == 0) print "FAIL"; else if (NR % 2) print a[(NR + 1) / 2]; else printf "%.2f\n", (a[NR / 2] + a[NR / 2 + 1]) / 2 }'; }
median() { tr ' ' '\n' | { grep -v '^$' || true; } | sort -g | awk '{ a[NR] = $1 } END { if (NR == 0) { print "nan"; exit } if (NR % 2) print a[(NR + 1) / 2]; else printf "%.4f\n", (a[NR / 2] + a[NR / 2 + 1]) / 2 }'; }

declare -A D T R L RL DROPS
for c in $CASES; do
    [ -f "$OUT/$c.pcap" ] || die "unknown case $c"
    D[$c]=""; T[$c]=""; R[$c]=""; L[$c]=""; RL[$c]=""; DROPS[$c]=0
done
if [ "${BENCH_MAIN:-1}" != 0 ]; then
    if [ "${BENCH_L3FWD:-1}" != 0 ]; then
        build_l3fwd
    else
        L3FWD_WHY="BENCH_L3FWD=0"
    fi
    if [ -z "$L3FWD" ]; then echo "bench: no l3fwd reference: $L3FWD_WHY" >&2; fi
fi

cpu=$(awk -F': *' '/^model name/ { print $2; exit }' /proc/cpuinfo)
failed=0
# run_failed PROG CASE ROUND: say so, show the end of its log, fail the run.
run_failed() {
    echo "bench: $1 failed on $2 round $3; log: $OUT/logs/$1-$2-r$3.log" >&2
    tail -5 "$OUT/logs/$1-$2-r$3.log" >&2 || true
    failed=1
}
if [ "${BENCH_MAIN:-1}" != 0 ]; then
ncases=$(echo $CASES | wc -w)
nprogs=2; if [ -n "$L3FWD" ]; then nprogs=3; fi
echo "bench: $ncases cases x $ROUNDS rounds x $nprogs programs x ${SECS}s on core $CORE; $MEM_DESC" >&2
for r in $(seq 1 "$ROUNDS"); do
    for c in $CASES; do
        order="testpmd dcir"
        if [ $((r % 2)) = 0 ]; then order="dcir testpmd"; fi
        if [ -n "$L3FWD" ]; then order+=" l3fwd"; fi
        for prog in $order; do
            if [ "$prog" = dcir ]; then
                read -r mpps drops rx tx <<<"$(run_dcir "$c" "$r")"
                if [ "$mpps" = FAIL ]; then
                    run_failed dcirouter "$c" "$r"
                    continue
                fi
                D[$c]+=" $mpps"
                DROPS[$c]=$(( ${DROPS[$c]} + drops ))
                if [ "$drops" != 0 ] || [ "$rx" != "$tx" ]; then
                    echo "bench: dcirouter $c round $r: rx $rx tx $tx drops $drops" >&2
                    sed -n '/^drops (total/,/^mempool/p' "$OUT/logs/dcirouter-$c-r$r.log" >&2
                fi
                dm=$mpps
            elif [ "$prog" = l3fwd ]; then
                mpps=$(run_l3fwd "$c" "$r")
                if [ "$mpps" = FAIL ] || [ -z "$mpps" ]; then
                    run_failed l3fwd "$c" "$r"
                    continue
                fi
                L[$c]+=" $mpps"
                lm=$mpps
            else
                read -r mpps _ <<<"$(run_testpmd "$c" "$r")"
                if [ "$mpps" = FAIL ]; then
                    run_failed testpmd "$c" "$r"
                    continue
                fi
                T[$c]+=" $mpps"
                tm=$mpps
            fi
        done
        printf 'bench: round %d %-9s dcirouter %8s Mpps  testpmd io %8s Mpps  l3fwd %8s Mpps\n' "$r" "$c" "${dm:-?}" "${tm:-?}" "${lm:--}" >&2
        if [ -n "${dm:-}" ] && [ -n "${tm:-}" ]; then
            R[$c]+=" $(awk -v a="$dm" -v b="$tm" 'BEGIN { printf "%.4f", a / b }')"
        fi
        if [ -n "${dm:-}" ] && [ -n "${lm:-}" ]; then
            RL[$c]+=" $(awk -v a="$dm" -v b="$lm" 'BEGIN { printf "%.4f", a / b }')"
        fi
        unset dm tm lm
    done
done

# ---------------------------------------------------------------- report
{
    echo "# dcirouter benchmark"
    echo
    echo "- date: $(date -u '+%Y-%m-%d %H:%M:%S UTC')"
    echo "- CPU: ${cpu:-unknown} ($(nproc) CPUs online), kernel $(uname -r)"
    echo "- DPDK: $(pkg-config --modversion libdpdk 2>/dev/null || echo '?'); dcirouter $(cd "$ROOT" && git describe --always --dirty 2>/dev/null || echo '?')"
    echo "- setup: net_pcap infinite_rx=1 ($PACKETS distinct packets) -> net_null no-rx=1, forwarding on core $CORE, burst 32, 16383/16384 mbufs; $MEM_DESC"
    echo "- ${SECS} s per measurement, $ROUNDS interleaved rounds, medians shown; ratio = median over rounds of dcirouter/testpmd in the same round"
    if [ -n "$L3FWD" ]; then
        echo "- l3fwd: DPDK 22.11 examples/l3fwd (Debian dpdk-doc) built here, --lookup=lpm --parse-ptype, the same routes (/0 as two /1), RX checksum offload request removed; it checks no IPv4 checksum and does not decrement the IPv6 Hop Limit; rate from ethdev telemetry over ${SECS} s; vs l3fwd = median of dcirouter/l3fwd per round"
    else
        echo "- l3fwd: not measured ($L3FWD_WHY)"
    fi
    echo "- load average at end: $(cut -d' ' -f1-3 /proc/loadavg)"
    echo
    echo "| case | dcirouter Mpps | ns/pkt | testpmd io Mpps | testpmd ns/pkt | ratio | l3fwd Mpps | l3fwd ns/pkt | vs l3fwd |"
    echo "|---|---:|---:|---:|---:|---:|---:|---:|---:|"
    for c in $CASES; do
        dmed=$(echo "${D[$c]}" | median)
        tmed=$(echo "${T[$c]}" | median)
        rmed=$(echo "${R[$c]}" | median)
        lmed=$(echo "${L[$c]}" | median)
        rlmed=$(echo "${RL[$c]}" | median)
        awk -v c="$c" -v d="$dmed" -v t="$tmed" -v r="$rmed" -v l="$lmed" -v rl="$rlmed" -v dr="${DROPS[$c]}" 'BEGIN {
            note = (dr > 0) ? sprintf(" (drops %d)", dr) : ""
            if (d == "nan") printf "| %s | n/a | n/a |", c; else printf "| %s%s | %.2f | %.1f |", c, note, d, 1000 / d
            if (t == "nan") printf " n/a | n/a |"; else printf " %.2f | %.1f |", t, 1000 / t
            if (r == "nan") printf " n/a |"; else printf " %.2f |", r
            if (l == "nan") printf " n/a | n/a |"; else printf " %.2f | %.1f |", l, 1000 / l
            if (rl == "nan") printf " n/a |\n"; else printf " %.2f |\n", rl }'
    done
    echo
    goal_cases=""
    for c in $CASES; do case $c in *6-*) goal_cases+=" $c" ;; esac; done
    if [ -n "$goal_cases" ]; then
        worst=""
        for c in $goal_cases; do
            rm_=$(echo "${R[$c]}" | median)
            [ "$rm_" = nan ] && continue
            if [ -z "$worst" ] || awk -v a="$rm_" -v b="$worst" 'BEGIN { exit !(a < b) }'; then worst=$rm_; fi
        done
        if [ -n "$worst" ]; then
            verdict=$(awk -v w="$worst" -v g="$GOAL" 'BEGIN { print (w >= g) ? "met" : "NOT met" }')
            echo "Goal: IPv6 LPM forwarding >= $GOAL of testpmd io forwarding: lowest IPv6 ratio $worst -> $verdict"
        fi
    fi
} | tee "$RESULTS.tmp"
mv "$RESULTS.tmp" "$RESULTS"
echo "bench: table written to $RESULTS; logs in $OUT/logs" >&2
fi

# ---------------------------------------------------------------- SRv6 suite
# SRv6 End / H.Encaps / End.DT6, End.MT replication, END.E, END.C on DPDK
# (issues 5 and 6), each against plain IPv6 forwarding of the same frame
# length and testpmd io in the same round: bench/srv6.sh, bench/srv6-results.md.
# The same behaviours on plain buffers first (no DPDK, about 30 s):
# dataplane/examples/srv6_bench.rs -> bench/srv6-micro-results.md, which the
# SRv6 report then includes.
if [ "${BENCH_SRV6_MICRO:-1}" != 0 ]; then
    echo "bench: cargo run --release -p dataplane --example srv6_bench" >&2
    (cd "$ROOT" && cargo run --release -p dataplane --example srv6_bench) >&2 \
        || { echo "bench: srv6_bench failed" >&2; failed=1; }
fi
if [ "${BENCH_SRV6:-1}" != 0 ]; then
    # shellcheck source=bench/srv6.sh
    source "$ROOT/bench/srv6.sh"
fi

# ---------------------------------------------------------------- shaped port, hand-off
# A shaped port (rate_mbps 400000, never the limit) fed without end from
# net_pcap infinite_rx: one worker polling the input and owning the port's
# queue, against two workers where the input's worker hands every packet to
# the owner over the lock-free ring (overload: the excess is dropped as
# handoff-full by the handing worker). Mpps leaving the shaped port, medians
# of interleaved rounds: bench/handoff-results.md. About 4 x ROUNDS x SECS.
run_handoff() {
    local w=$1 r=$2 cfg=$OUT/router-handoff-$1.toml log=$OUT/logs/dcirouter-handoff-$1-r$2.log
    timeout -s INT $((SECS + 30)) "$DCIR" "${EAL_COMMON[@]}" --lcores "0@($MAIN,$CORE)" --file-prefix "dcbh$$-$w-$r" \
        -- run --config "$cfg" --duration "$SECS" >"$log" 2>&1 || true
    awk '/^out / { tx = $5 } /^ran [0-9.]+ s:/ { s = $2; ok = 1 }
         END { if (ok && s > 0) printf "%.2f\n", tx / s / 1e6; else print "FAIL" }' "$log"
}
if [ "${BENCH_HANDOFF:-1}" != 0 ]; then
    base=$OUT/router-udp4-64.toml
    if [ ! -f "$base" ]; then
        echo "bench: $base missing; hand-off benchmark skipped" >&2
        failed=1
    else
        # One worker (on CORE) owns everything; two workers (MAIN, CORE):
        # the first polls the input, the second the output port and owns
        # its queue. net_pcap gets one TX queue (to /dev/null) per worker.
        sed -e 's|^name = "out"$|name = "out"\nrate_mbps = 400000|' "$base" >"$OUT/router-handoff-1.toml"
        sed -e "s|^worker_cores = \[$CORE\]$|worker_cores = [$MAIN, $CORE]|" \
            -e 's|infinite_rx=1"$|infinite_rx=1,tx_pcap=/dev/null,tx_pcap=/dev/null"|' \
            "$OUT/router-handoff-1.toml" >"$OUT/router-handoff-2.toml"
        grep -q "rate_mbps = 400000" "$OUT/router-handoff-1.toml" && grep -q "worker_cores = \[$MAIN, $CORE\]" "$OUT/router-handoff-2.toml" \
            || { echo "bench: hand-off configurations not derived from $base" >&2; failed=1; }
        h1=(); h2=()
        for r in $(seq 1 "$ROUNDS"); do
            h1+=("$(run_handoff 1 "$r")"); h2+=("$(run_handoff 2 "$r")")
            echo "bench: hand-off round $r: one worker ${h1[-1]} Mpps, two workers ${h2[-1]} Mpps" >&2
        done
        {
            echo "# Shaped port fed by another worker"
            echo
            echo "\`make bench\` (bench/run.sh, BENCH_HANDOFF) on $(date -u '+%Y-%m-%d %H:%M UTC'), $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | sed 's/^ //'); $MEM_DESC."
            echo "The udp4-64 input (net_pcap infinite_rx, $PACKETS distinct 64 B frames) forwarded to a port shaped to 400 Gb/s (never the limit) on net_null;"
            echo "**one worker** polls the input and owns the shaped port's queue; with **two workers** the input's worker hands every packet to the owner"
            echo "over the lock-free ring, which under this endless input is overload: the excess is dropped as handoff-full by the handing worker."
            echo "Mpps leaving the shaped port, median of $ROUNDS interleaved rounds of $SECS s; the runs' logs are in $OUT/logs."
            echo
            echo "| workers | Mpps out | rounds |"
            echo "|---:|---:|---|"
            echo "| 1 | $(med "${h1[@]}") | ${h1[*]} |"
            echo "| 2 | $(med "${h2[@]}") | ${h2[*]} |"
        } >"$ROOT/bench/handoff-results.md"
        cat "$ROOT/bench/handoff-results.md"
    fi
fi

# ---------------------------------------------------------------- congestion-aware port in the router
# The congestion-aware node in the real router (issue 4): one worker, the
# roce4-64 / roce6-64 inputs (net_pcap infinite_rx, PACKETS distinct frames,
# each its own flow, round robin) into net_null, three ways: plain
# forwarding (the unshaped port of the main table), the port shaped to
# 400 Gb/s (never the limit: the egress queue and shaper only), and the same
# with [port.congestion] (flow learning and per-flow accounting, monitoring,
# CE marking). K_min is 1 KiB so that nearly every packet is CE-marked, as
# in congestion_bench; K_max (1 MiB) is never reached: no CNPs. Medians of
# interleaved rounds: bench/congestion-router-results.md. About
# 6 x ROUNDS x SECS. BENCH_CONGESTION_ROUTER=0 skips it.
run_variant() {
    local v=$1 r=$2 cfg=$OUT/router-$1.toml log=$OUT/logs/dcirouter-$1-r$2.log
    timeout -s INT $((SECS + 30)) "$DCIR" "${EAL_COMMON[@]}" --lcores "0@($MAIN,$CORE)" --file-prefix "dcbv$$-$v-$r" \
        -- run --config "$cfg" --duration "$SECS" >"$log" 2>&1 || true
    # Mpps leaving "out", and the share of them CE-marked.
    awk '/^out / { tx = $5 } /^  ecn-ce-marked / { ce = $2 } /^ran [0-9.]+ s:/ { s = $2; ok = 1 }
         END { if (ok && s > 0 && tx > 0) printf "%.2f %.0f\n", tx / s / 1e6, 100 * ce / tx; else print "FAIL 0" }' "$log"
}
if [ "${BENCH_CONGESTION_ROUTER:-1}" != 0 ]; then
    rows=()
    for c in roce4-64 roce6-64; do
        base=$OUT/router-$c.toml
        if [ ! -f "$base" ]; then
            echo "bench: $base missing; congestion-aware router benchmark skipped for $c" >&2
            failed=1
            continue
        fi
        cp "$base" "$OUT/router-$c-fwd.toml"
        sed -e 's|^name = "out"$|name = "out"\nrate_mbps = 400000|' "$base" >"$OUT/router-$c-queue.toml"
        awk '/^\[\[route\]\]/ && !done { print "[port.congestion]\nrtt_est_us = 1\nk_base_bytes = 1048576\nk_min_bytes = 1024\nflows = 4096\n"; done = 1 } { print }' \
            "$OUT/router-$c-queue.toml" >"$OUT/router-$c-cong.toml"
        grep -q "rate_mbps = 400000" "$OUT/router-$c-queue.toml" && grep -q "^\[port.congestion\]" "$OUT/router-$c-cong.toml" \
            || { echo "bench: congestion-aware configurations not derived from $base" >&2; failed=1; continue; }
        f=(); q=(); g=(); ce=()
        for r in $(seq 1 "$ROUNDS"); do
            read -r a _ <<<"$(run_variant "$c-fwd" "$r")"
            read -r b _ <<<"$(run_variant "$c-queue" "$r")"
            read -r d m <<<"$(run_variant "$c-cong" "$r")"
            f+=("$a"); q+=("$b"); g+=("$d"); ce+=("$m")
            echo "bench: congestion-aware router $c round $r: forwarding $a, shaped queue $b, congestion-aware $d Mpps ($m % CE-marked)" >&2
        done
        learned=$(awk '/^  flows-learned / { print $2 }' "$OUT/logs/dcirouter-$c-cong-r1.log")
        rows+=("$c|${f[*]}|${q[*]}|${g[*]}|${ce[*]}|${learned:-?}")
    done
    ns() { awk -v m="$1" 'BEGIN { if (m + 0 > 0) printf "%.1f", 1000 / m; else print "-" }'; }
    ratio() { awk -v a="$1" -v b="$2" 'BEGIN { if (a + 0 > 0 && b + 0 > 0) printf "%.2f", b / a; else print "-" }'; }
    {
        echo "# Congestion-aware port in the router"
        echo
        echo "\`make bench\` (bench/run.sh, BENCH_CONGESTION_ROUTER) on $(date -u '+%Y-%m-%d %H:%M UTC'), $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | sed 's/^ //'); $MEM_DESC; dcirouter $(cd "$ROOT" && git describe --always --dirty 2>/dev/null || echo '?')."
        echo "One worker; input net_pcap infinite_rx ($PACKETS distinct 64 B-payload RoCEv2 frames, each its own flow, sent round robin) into net_null."
        echo "**forwarding**: the unshaped output port (as in results.md); **shaped queue**: the output port shaped to 400 Gb/s, never the limit"
        echo "(egress queue and shaper, no congestion stage); **congestion-aware**: the same with \`[port.congestion]\` (flow learning and per-flow"
        echo "queue accounting, monitoring, CE marking; K_min 1 KiB so that nearly every packet is marked, K_max 1 MiB never reached, so no CNP)."
        echo "Mpps leaving the port, median of $ROUNDS interleaved rounds of $SECS s (all rounds listed); ns/packet = 1000 / Mpps; the ratios are"
        echo "the congestion-aware cost per packet over the forwarding and over the shaped-queue cost."
        echo
        echo "| input | forwarding Mpps (ns/pkt) | shaped queue Mpps (ns/pkt) | congestion-aware Mpps (ns/pkt) | vs forwarding | vs shaped queue | CE-marked | flows learned | rounds (fwd / queue / cong) |"
        echo "|---|---:|---:|---:|---:|---:|---:|---:|---|"
        for row in "${rows[@]}"; do
            IFS='|' read -r c fs qs gs ces learned <<<"$row"
            read -ra fa <<<"$fs"; read -ra qa <<<"$qs"; read -ra ga <<<"$gs"; read -ra cea <<<"$ces"
            mf=$(med "${fa[@]}"); mq=$(med "${qa[@]}"); mg=$(med "${ga[@]}")
            echo "| $c | $mf ($(ns "$mf")) | $mq ($(ns "$mq")) | $mg ($(ns "$mg")) | $(ratio "$mg" "$mf") | $(ratio "$mg" "$mq") | $(med "${cea[@]}") % | $learned | $fs / $qs / $gs |"
        done
    } >"$ROOT/bench/congestion-router-results.md"
    cat "$ROOT/bench/congestion-router-results.md"
fi

# ---------------------------------------------------------------- source validation (uRPF)
# BCP 38 on the input port: the roce4-64 / roce6-64 inputs (every source on
# the input port's subnet, so every packet passes) forwarded with urpf off,
# "loose" and "strict" on the input port. The burst fast path looks the
# sources up in a batch of their own. Medians of interleaved rounds:
# bench/urpf-results.md. About 6 x ROUNDS x SECS. BENCH_URPF=0 skips it.
if [ "${BENCH_URPF:-1}" != 0 ]; then
    rows=()
    for c in roce4-64 roce6-64; do
        base=$OUT/router-$c.toml
        if [ ! -f "$base" ]; then
            echo "bench: $base missing; uRPF benchmark skipped for $c" >&2
            failed=1
            continue
        fi
        cp "$base" "$OUT/router-$c-urpf-off.toml"
        for m in loose strict; do
            awk -v m="$m" '{ print } /^name = "in"$/ { print "urpf = \"" m "\"" }' "$base" >"$OUT/router-$c-urpf-$m.toml"
        done
        grep -q 'urpf = "loose"' "$OUT/router-$c-urpf-loose.toml" && grep -q 'urpf = "strict"' "$OUT/router-$c-urpf-strict.toml" \
            || { echo "bench: uRPF configurations not derived from $base" >&2; failed=1; continue; }
        o=(); l=(); s=()
        for r in $(seq 1 "$ROUNDS"); do
            read -r a _ <<<"$(run_variant "$c-urpf-off" "$r")"
            read -r b _ <<<"$(run_variant "$c-urpf-loose" "$r")"
            read -r d _ <<<"$(run_variant "$c-urpf-strict" "$r")"
            o+=("$a"); l+=("$b"); s+=("$d")
            echo "bench: uRPF $c round $r: off $a, loose $b, strict $d Mpps" >&2
        done
        failedrpf=$(awk '/^  urpf-failed / { print $2 }' "$OUT/logs/dcirouter-$c-urpf-strict-r1.log" 2>/dev/null || true)
        for v in "${o[*]}" "${l[*]}" "${s[*]}"; do
            if ! grep -qv FAIL <<<"$(tr ' ' '\n' <<<"$v")"; then
                echo "bench: uRPF $c: a variant failed every round" >&2
                failed=1
            fi
        done
        rows+=("$c|${o[*]}|${l[*]}|${s[*]}|${failedrpf:-0}")
    done
    ratio() { awk -v a="$1" -v b="$2" 'BEGIN { if (a + 0 > 0 && b + 0 > 0) printf "%.2f", a / b; else print "-" }'; }
    {
        echo "# Source validation (uRPF) in the router"
        echo
        echo "\`make bench\` (bench/run.sh, BENCH_URPF) on $(date -u '+%Y-%m-%d %H:%M UTC'), $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | sed 's/^ //'); $MEM_DESC; dcirouter $(cd "$ROOT" && git describe --always --dirty 2>/dev/null || echo '?')."
        echo "One worker; input net_pcap infinite_rx ($PACKETS distinct 64 B-payload RoCEv2 frames, every source on the input port's subnet) into net_null;"
        echo "\`urpf\` off, \"loose\" and \"strict\" on the input port. Mpps leaving the output port, median of $ROUNDS interleaved rounds of $SECS s"
        echo "(all rounds listed); the ratio is strict over off (throughput kept)."
        echo
        echo "| input | off Mpps | loose Mpps | strict Mpps | strict / off | urpf-failed | rounds (off / loose / strict) |"
        echo "|---|---:|---:|---:|---:|---:|---|"
        for row in "${rows[@]}"; do
            IFS='|' read -r c os ls ss nf <<<"$row"
            read -ra oa <<<"$os"; read -ra la <<<"$ls"; read -ra sa <<<"$ss"
            mo=$(med "${oa[@]}"); ml=$(med "${la[@]}"); ms=$(med "${sa[@]}")
            echo "| $c | $mo | $ml | $ms | $(ratio "$ms" "$mo") | $nf | $os / $ls / $ss |"
        done
    } >"$ROOT/bench/urpf-results.md"
    cat "$ROOT/bench/urpf-results.md"
fi

# ---------------------------------------------------------------- ECMP
# Every route of the roce4-64 / roce6-64 configurations over two next hops
# (the two gateways, weights 1:1) against the same routes with one next
# hop: the cost of the per-flow hash on the burst fast path. Medians of
# interleaved rounds: bench/ecmp-results.md. About 4 x ROUNDS x SECS.
# BENCH_ECMP=0 skips it.
if [ "${BENCH_ECMP:-1}" != 0 ]; then
    rows=()
    for c in roce4-64 roce6-64; do
        base=$OUT/router-$c.toml
        if [ ! -f "$base" ]; then
            echo "bench: $base missing; ECMP benchmark skipped for $c" >&2
            failed=1
            continue
        fi
        cp "$base" "$OUT/router-$c-single.toml"
        sed -e 's|^via = "10\.0\.2\.[23]"$|nexthop = [{ via = "10.0.2.2" }, { via = "10.0.2.3" }]|' \
            -e 's|^via = "2001:db8:2::[23]"$|nexthop = [{ via = "2001:db8:2::2" }, { via = "2001:db8:2::3" }]|' "$base" >"$OUT/router-$c-ecmp.toml"
        if grep -q '^via = ' "$OUT/router-$c-ecmp.toml" || ! grep -q '^nexthop = ' "$OUT/router-$c-ecmp.toml"; then
            echo "bench: ECMP configuration not derived from $base" >&2
            failed=1
            continue
        fi
        o=(); e=()
        for r in $(seq 1 "$ROUNDS"); do
            read -r a _ <<<"$(run_variant "$c-single" "$r")"
            read -r b _ <<<"$(run_variant "$c-ecmp" "$r")"
            o+=("$a"); e+=("$b")
            echo "bench: ECMP $c round $r: one next hop $a, two next hops $b Mpps" >&2
        done
        for v in "${o[*]}" "${e[*]}"; do
            if ! grep -qv FAIL <<<"$(tr ' ' '\n' <<<"$v")"; then
                echo "bench: ECMP $c: a variant failed every round" >&2
                failed=1
            fi
        done
        rows+=("$c|${o[*]}|${e[*]}")
    done
    ratio() { awk -v a="$1" -v b="$2" 'BEGIN { if (a + 0 > 0 && b + 0 > 0) printf "%.2f", a / b; else print "-" }'; }
    nsd() { awk -v a="$1" -v b="$2" 'BEGIN { if (a + 0 > 0 && b + 0 > 0) printf "%.1f", 1000 / a - 1000 / b; else print "-" }'; }
    {
        echo "# ECMP in the router"
        echo
        echo "\`make bench\` (bench/run.sh, BENCH_ECMP) on $(date -u '+%Y-%m-%d %H:%M UTC'), $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | sed 's/^ //'); $MEM_DESC; dcirouter $(cd "$ROOT" && git describe --always --dirty 2>/dev/null || echo '?')."
        echo "One worker; input net_pcap infinite_rx ($PACKETS distinct 64 B-payload RoCEv2 frames, each its own flow) into net_null;"
        echo "every route with one next hop, then every route over both gateways (\`nexthop\`, weights 1:1). Mpps leaving the output port,"
        echo "median of $ROUNDS interleaved rounds of $SECS s (all rounds listed); the ratio is ECMP over one next hop, the last column the ns a packet ECMP adds."
        echo
        echo "| input | one next hop Mpps | ECMP Mpps | ECMP / one | ns added | rounds (one / ECMP) |"
        echo "|---|---:|---:|---:|---:|---|"
        for row in "${rows[@]}"; do
            IFS='|' read -r c os es <<<"$row"
            read -ra oa <<<"$os"; read -ra ea <<<"$es"
            mo=$(med "${oa[@]}"); me=$(med "${ea[@]}")
            echo "| $c | $mo | $me | $(ratio "$me" "$mo") | $(nsd "$me" "$mo") | $os / $es |"
        done
    } >"$ROOT/bench/ecmp-results.md"
    cat "$ROOT/bench/ecmp-results.md"
fi

# ---------------------------------------------------------------- wire formats
# Wire-format micro-benchmark (issue 3), pure Rust, no DPDK: ICRC GB/s from
# 64 B to 4 KiB, the incremental ICRC update against full recomputation, and
# the parse cost per packet. Writes bench/wire-results.md (its own goals are
# reported there, not in results.md). BENCH_WIRE=0 skips it.
if [ "${BENCH_WIRE:-1}" != 0 ]; then
    echo "bench: cargo run --release -p dataplane --example wire_bench" >&2
    (cd "$ROOT" && cargo run --release -p dataplane --example wire_bench) \
        || { echo "bench: wire_bench failed" >&2; failed=1; }
fi

# ---------------------------------------------------------------- NUD
# Neighbour unreachability detection: what one 50 ms step of the control
# thread costs at 1k, 100k and 1M learned neighbours, pure Rust on virtual
# time. Writes bench/nud-results.md. A few seconds. BENCH_NUD=0 skips it.
if [ "${BENCH_NUD:-1}" != 0 ]; then
    echo "bench: cargo run --release -p dataplane --example nud_bench" >&2
    (cd "$ROOT" && cargo run --release -p dataplane --example nud_bench) \
        || { echo "bench: nud_bench failed" >&2; failed=1; }
fi

# ---------------------------------------------------------------- FIB lookup
# The packet path's FIB lookup against DPDK's rte_fib (DIR-24-8) and rte_fib6
# (trie), scalar and AVX-512, on this benchmark's routes and destinations
# (issue 2: "rte_fib/rte_lpm or a well-kept crate: measure"). Writes
# bench/lpm-results.md. About 5 s. BENCH_LPM=0 skips it.
if [ "${BENCH_LPM:-1}" != 0 ]; then
    echo "bench: cargo run --release -p dataplane --features dpdk --example lpm_bench" >&2
    (cd "$ROOT" && cargo run --release -p dataplane --features dpdk --example lpm_bench) \
        || { echo "bench: lpm_bench failed" >&2; failed=1; }
fi

# ---------------------------------------------------------------- congestion-aware node
# Congestion-aware node benchmark (issue 4), pure Rust, no DPDK: per-packet
# cost of the congestion-aware egress path against plain forwarding with 1k,
# 100k and 1M flows, and the CNP reaction time (hdrhistogram). Writes
# bench/congestion-results.md (its goal is reported there, not in
# results.md). About 20 s. BENCH_CONGESTION=0 skips it.
if [ "${BENCH_CONGESTION:-1}" != 0 ]; then
    echo "bench: cargo run --release -p dataplane --example congestion_bench" >&2
    (cd "$ROOT" && cargo run --release -p dataplane --example congestion_bench) \
        || { echo "bench: congestion_bench failed" >&2; failed=1; }
fi

# ---------------------------------------------------------------- notifications
# Event-to-notification latency (issue 6), no DPDK: queue crossing -> Long-haul
# CNP, queue crossing -> FANN, link down -> FANN, END.C notification -> PFC,
# in a harness mirroring the worker and control threads. Writes
# bench/notify-results.md. About 15 s. BENCH_NOTIFY=0 skips it.
if [ "${BENCH_NOTIFY:-1}" != 0 ]; then
    echo "bench: cargo run --release -p control --example notify_bench" >&2
    (cd "$ROOT" && cargo run --release -p control --example notify_bench) \
        || { echo "bench: notify_bench failed" >&2; failed=1; }
fi

if [ "$failed" = 1 ]; then exit 1; fi
if [ "${BENCH_STRICT:-0}" = 1 ] && grep -q 'NOT met' "$RESULTS"; then exit 1; fi
exit 0
