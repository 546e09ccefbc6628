# bench/srv6.sh: the SRv6 / END.E / END.C suite of `make bench` (issues 5
# and 6) on real DPDK. Sourced by bench/run.sh after its own table: it uses
# run.sh's EAL arguments ($EAL_COMMON), $OUT, $CORE, $MAIN, and writes
# bench/srv6-results.md. Run it alone with
#   BENCH_MAIN=0 BENCH_WIRE=0 BENCH_CONGESTION=0 BENCH_NOTIFY=0 bash bench/run.sh
#
# Cases (pcaps and configurations from dcir-benchgen, see
# control/src/bin/dcir-benchgen.rs):
#   srv6-end       SRv6 packet (SRH, SL = 1) to the local End SID; forwarded to the next SID
#   srv6-hencaps   IPv6 RoCEv2 to 2001:db8:b::/48, steered into an [[srv6.policy]]: H.Encaps (2 SIDs)
#   srv6-dt6       encapsulated RoCEv2 (SRH, SL = 0) to the End.DT6 SID: decapsulated and routed
#   endmt-N-S      End.MT SID, one End.MT TLV with N receivers (1, 4, 11; 16 = 11 in the TLV + 5 provisioned
#                  on the SID), inner RoCEv2 with S = 1 KiB / 4 KiB payload: N RC packets out per packet in
#   end-e          SRv6-encapsulated ICMPv6 Long-haul CNP (Rate Reduce) to the END.E SID: decapsulated, routed
#   end-c          the same with a Pause CNP to the END.C SID: consumed, a PFC PAUSE frame out of "out"
# Every case runs in the same round as
#   base           plain IPv6 UDP forwarding by dcirouter (same configuration, same frame length)
#   testpmd io     dpdk-testpmd --forward-mode=io on the case's own pcap (--mbuf-size 10240)
# The three programs' order rotates with the round. Rates: dcirouter's exit
# line (rx, tx packets over the run time); testpmd's per-period Tx-pps.
#
# Environment: BENCH_SRV6=0 skips; BENCH_SRV6_SECONDS (default 4),
# BENCH_SRV6_ROUNDS (default $ROUNDS), BENCH_SRV6_CASES (subset).

SRV6_SECS=${BENCH_SRV6_SECONDS:-4}
SRV6_ROUNDS=${BENCH_SRV6_ROUNDS:-$ROUNDS}
SRV6_CASES=${BENCH_SRV6_CASES:-"srv6-end srv6-hencaps srv6-dt6 endmt-1-1k endmt-4-1k endmt-11-1k endmt-16-1k endmt-1-4k endmt-4-4k endmt-11-4k endmt-16-4k end-e end-c"}
SRV6_RESULTS=$ROOT/bench/srv6-results.md

# srv6_dcir NAME ROUND -> "rx_mpps tx_mpps drops rx_per_cpu_us" or FAIL
# (rx_per_cpu_us: packets received per microsecond of the worker thread's
# own CPU time, i.e. Mpps while it runs; "nan" if the binary does not say)
srv6_dcir() {
    local c=$1 r=$2 log=$OUT/logs/dcirouter-$1-r$2.log
    timeout -s INT $((SRV6_SECS + 30)) "$DCIR" "${EAL_COMMON[@]}" --lcores "0@($MAIN,$CORE)" --file-prefix "dcs$$-$c-$r" \
        -- run --config "$OUT/router-$c.toml" --duration "$SRV6_SECS" >"$log" 2>&1 || true
    awk '/^ran [0-9.]+ s: rx [0-9]+ tx [0-9]+ drops [0-9]+/ {
            cpu = ($10 == "worker-cpu" && $11 > 0) ? sprintf("%.4f", $5 / $11 / 1e6) : "nan"
            printf "%.4f %.4f %d %s\n", $5 / $2 / 1e6, $7 / $2 / 1e6, $9, cpu; ok = 1 }
         END { if (!ok) print "FAIL" }' "$log"
}

# srv6_testpmd NAME ROUND -> "mpps" or FAIL
srv6_testpmd() {
    local c=$1 r=$2 log=$OUT/logs/testpmd-$1-r$2.log
    timeout -s INT $((SRV6_SECS + 60)) stdbuf -oL dpdk-testpmd "${EAL_COMMON[@]}" -l "$MAIN,$CORE" --main-lcore "$MAIN" --file-prefix "tps$$-$c-$r" \
        --vdev "net_pcap0,rx_pcap=$OUT/$c.pcap,infinite_rx=1" --vdev "net_null0,no-rx=1" \
        -- --forward-mode=io --auto-start --nb-cores=1 --stats-period 1 --total-num-mbufs=16384 --mbuf-size=10240 --max-pkt-len=9018 --burst=32 \
        >"$log" 2>&1 </dev/null &
    local pid=$! i
    for i in $(seq 1 400); do
        grep -q 'Port statistics' "$log" 2>/dev/null && break
        kill -0 "$pid" 2>/dev/null || break
        sleep 0.1
    done
    sleep "$(awk -v s="$SRV6_SECS" 'BEGIN { print s + 0.5 }')"
    kill -INT "$pid" 2>/dev/null || true
    wait "$pid" || true
    awk '/NIC statistics for port/ { port = $(NF-1) }
         /Tx-pps:/ { if (port == 1 && $2 + 0 > 0) { sum += $2; n++ } }
         END { if (n > 0) printf "%.4f\n", sum / n / 1e6; else print "FAIL" }' "$log"
}

srv6_frame_len() { awk -v c="$1" '$1 == c ":" { print $5; exit }' "$OUT/logs/gen.log"; }

declare -A S_IN S_OUT S_BASE S_TP S_RB S_RT S_DROPS S_CPU
for c in $SRV6_CASES; do
    [ -f "$OUT/$c.pcap" ] && [ -f "$OUT/base-$c.pcap" ] || die "unknown SRv6 case $c"
    S_IN[$c]=""; S_OUT[$c]=""; S_BASE[$c]=""; S_TP[$c]=""; S_RB[$c]=""; S_RT[$c]=""; S_DROPS[$c]=0; S_CPU[$c]=""
done
nsc=$(echo $SRV6_CASES | wc -w)
echo "bench: SRv6 suite: $nsc cases x $SRV6_ROUNDS rounds x 3 runs (case, plain-IPv6 baseline, testpmd io) x ${SRV6_SECS}s" >&2
for r in $(seq 1 "$SRV6_ROUNDS"); do
    for c in $SRV6_CASES; do
        case $((r % 3)) in
            1) order="case base testpmd" ;;
            2) order="base testpmd case" ;;
            *) order="testpmd case base" ;;
        esac
        unset in_ out_ base_ tp_
        for prog in $order; do
            case $prog in
                case)
                    read -r a b d u <<<"$(srv6_dcir "$c" "$r")"
                    if [ "$a" = FAIL ]; then
                        echo "bench: dcirouter failed on $c round $r; log: $OUT/logs/dcirouter-$c-r$r.log" >&2
                        tail -5 "$OUT/logs/dcirouter-$c-r$r.log" >&2 || true
                        failed=1; continue
                    fi
                    in_=$a; out_=$b
                    S_IN[$c]+=" $a"; S_OUT[$c]+=" $b"; S_CPU[$c]+=" ${u:-nan}"
                    if [ "$d" != 0 ]; then
                        S_DROPS[$c]=$(( ${S_DROPS[$c]} + d ))
                        echo "bench: dcirouter $c round $r: $d drops" >&2
                        sed -n '/^drops (total/,/^mempool/p' "$OUT/logs/dcirouter-$c-r$r.log" >&2
                    fi ;;
                base)
                    read -r a b d _ <<<"$(srv6_dcir "base-$c" "$r")"
                    if [ "$a" = FAIL ]; then
                        echo "bench: dcirouter failed on base-$c round $r" >&2; failed=1; continue
                    fi
                    base_=$b; S_BASE[$c]+=" $b" ;;
                testpmd)
                    read -r a <<<"$(srv6_testpmd "$c" "$r")"
                    if [ "$a" = FAIL ]; then
                        echo "bench: testpmd failed on $c round $r; log: $OUT/logs/testpmd-$c-r$r.log" >&2
                        tail -5 "$OUT/logs/testpmd-$c-r$r.log" >&2 || true
                        failed=1; continue
                    fi
                    tp_=$a; S_TP[$c]+=" $a" ;;
            esac
        done
        printf 'bench: round %d %-12s in %8s Mpps out %8s Mpps  base %8s Mpps  testpmd io %8s Mpps\n' "$r" "$c" "${in_:-?}" "${out_:-?}" "${base_:-?}" "${tp_:-?}" >&2
        if [ -n "${in_:-}" ] && [ -n "${base_:-}" ]; then S_RB[$c]+=" $(awk -v a="$in_" -v b="$base_" 'BEGIN { printf "%.4f", a / b }')"; fi
        if [ -n "${in_:-}" ] && [ -n "${tp_:-}" ]; then S_RT[$c]+=" $(awk -v a="$in_" -v b="$tp_" 'BEGIN { printf "%.4f", a / b }')"; fi
    done
done

# ---------------------------------------------------------------- report
smed() { echo "$1" | median; }
{
    echo "# dcirouter SRv6 / END.E / END.C benchmark (real DPDK)"
    echo
    echo "- date: $(date -u '+%Y-%m-%d %H:%M:%S UTC')"
    echo "- CPU: ${cpu:-unknown} ($(nproc) CPUs online, shared with other jobs), kernel $(uname -r)"
    echo "- DPDK: $(pkg-config --modversion libdpdk 2>/dev/null || echo '?'); dcirouter $(cd "$ROOT" && git describe --always --dirty 2>/dev/null || echo '?')"
    echo "- setup: net_pcap infinite_rx=1 ($PACKETS distinct packets) -> net_null no-rx=1, one worker on core $CORE, burst 32, 16383 mbufs of 10240 B (port MTU 9000; every case and baseline uses the same configuration), $MEM_DESC"
    echo "- ${SRV6_SECS} s per measurement, $SRV6_ROUNDS interleaved rounds (order of the three programs rotates), medians shown; ratios are medians of the per-round ratios"
    echo "- **in** = packets received per second (what the worker sustains), **out** = packets sent per second (End.MT: replicas; END.C: PFC frames)"
    echo "- **base** = plain IPv6 UDP forwarding by the same binary and configuration, frames of the same length; **testpmd io** = dpdk-testpmd io forwarding of the case's own pcap"
    echo "- load average at end: $(cut -d' ' -f1-3 /proc/loadavg)"
    echo
    echo "| case | frame B | in Mpps | ns/pkt in | out Mpps | base Mpps | in/base | testpmd io Mpps | in/testpmd |"
    echo "|---|---:|---:|---:|---:|---:|---:|---:|---:|"
    for c in $SRV6_CASES; do
        awk -v c="$c" -v len="$(srv6_frame_len "$c")" -v i="$(smed "${S_IN[$c]}")" -v o="$(smed "${S_OUT[$c]}")" -v b="$(smed "${S_BASE[$c]}")" \
            -v t="$(smed "${S_TP[$c]}")" -v rb="$(smed "${S_RB[$c]}")" -v rt="$(smed "${S_RT[$c]}")" -v dr="${S_DROPS[$c]}" '
            function f(x, fmt) { return (x == "nan" || x == "") ? "n/a" : sprintf(fmt, x) }
            BEGIN {
                note = (dr > 0) ? sprintf(" (drops %d)", dr) : ""
                printf "| %s%s | %s | %s | %s | %s | %s | %s | %s | %s |\n", c, note, len, f(i, "%.2f"), (i == "nan") ? "n/a" : sprintf("%.1f", 1000 / i),
                    f(o, "%.2f"), f(b, "%.2f"), f(rb, "%.2f"), f(t, "%.2f"), f(rt, "%.2f") }'
    done
    echo
    # End.MT: cost per replica.
    have_mt=0
    for c in $SRV6_CASES; do case $c in endmt-*) have_mt=1 ;; esac; done
    if [ "$have_mt" = 1 ]; then
        echo "## End.MT: cost per replica"
        echo
        echo "ns/pkt in = 1e3 / in Mpps (the whole cost of one received packet and its N copies); **ns/replica** = ns/pkt in / N;"
        echo "**marginal ns/replica** = (ns/pkt in at N = 16 - at N = 1) / 15, the cost of one more copy without the receive side."
        echo "Each copy is a chain (net_null sends chained mbufs): a private 60-octet header segment (Ethernet, IPv6 with the receiver's DA, UDP, BTH with its DestQPN),"
        echo "an indirect mbuf over the received payload (shared, refcounted, never copied) and a private 4-octet ICRC segment; ICRC and UDP checksum updated incrementally."
        echo
        echo "| payload | N | in Mpps | replicas Mpps | ns/pkt in | ns/replica | marginal ns/replica |"
        echo "|---|---:|---:|---:|---:|---:|---:|"
        declare -A MT_NS
        for s in 1k 4k; do
            for n in 1 4 11 16; do
                c=endmt-$n-$s
                case " $SRV6_CASES " in *" $c "*) ;; *) continue ;; esac
                i=$(smed "${S_IN[$c]}"); o=$(smed "${S_OUT[$c]}")
                [ "$i" = nan ] && continue
                MT_NS[$c]=$(awk -v i="$i" 'BEGIN { printf "%.2f", 1000 / i }')
            done
            marg=n/a
            if [ -n "${MT_NS[endmt-1-$s]:-}" ] && [ -n "${MT_NS[endmt-16-$s]:-}" ]; then
                marg=$(awk -v a="${MT_NS[endmt-1-$s]}" -v b="${MT_NS[endmt-16-$s]}" 'BEGIN { printf "%.1f", (b - a) / 15 }')
                MT_NS[marg-$s]=$marg
            fi
            for n in 1 4 11 16; do
                c=endmt-$n-$s
                [ -n "${MT_NS[$c]:-}" ] || continue
                awk -v s="$s" -v n="$n" -v i="$(smed "${S_IN[$c]}")" -v o="$(smed "${S_OUT[$c]}")" -v ns="${MT_NS[$c]}" -v m="$marg" 'BEGIN {
                    printf "| %s | %d | %.3f | %.2f | %.1f | %.1f | %s |\n", s, n, i, o, ns, ns / n, m }'
            done
        done
        echo
        for n in 1 4 11 16; do
            if [ -n "${MT_NS[endmt-$n-1k]:-}" ] && [ -n "${MT_NS[endmt-$n-4k]:-}" ]; then
                awk -v n="$n" -v a="${MT_NS[endmt-$n-1k]}" -v b="${MT_NS[endmt-$n-4k]}" 'BEGIN {
                    printf "- N = %d: ns/replica 4 KiB / 1 KiB = %.2f\n", n, b / a }'
            fi
        done
        if [ -n "${MT_NS[marg-1k]:-}" ] && [ -n "${MT_NS[marg-4k]:-}" ]; then
            r=$(awk -v a="${MT_NS[marg-1k]}" -v b="${MT_NS[marg-4k]}" 'BEGIN { if (a > 0) printf "%.2f", b / a; else print "nan" }')
            v=$(awk -v r="$r" 'BEGIN { print (r != "nan" && r <= 1.2) ? "met" : "NOT met" }')
            echo "- marginal ns/replica 4 KiB / 1 KiB = $r"
            echo
            echo "On wall-clock rates (medians over rounds, table above): marginal ns/replica 4 KiB / 1 KiB = $r ($v for <= 1.2)"
        fi
        echo
        # The same on the worker's own CPU time, per round: on this shared
        # machine the wall-clock rates above also count the time the OS gave
        # other threads (the control thread floats over both cores) and
        # rounds scatter by +-30 %; the cost of a copy is CPU time.
        if [ -n "${S_CPU[endmt-1-1k]:-}" ] && [ -n "${S_CPU[endmt-16-1k]:-}" ] && [ -n "${S_CPU[endmt-1-4k]:-}" ] && [ -n "${S_CPU[endmt-16-4k]:-}" ]; then
            echo
            echo "### Per worker CPU time"
            echo
            echo "Rates per second of the worker thread's own CPU time (CLOCK_THREAD_CPUTIME_ID over its poll loop, printed by dcirouter at exit),"
            echo "marginal ns/replica computed within each round (N = 16 and N = 1 of the same round), ratio = 4 KiB / 1 KiB per round; medians over rounds."
            echo
            echo "| round | 1k N=1 ns/pkt | 1k N=16 ns/pkt | 1k marginal ns/replica | 4k N=1 ns/pkt | 4k N=16 ns/pkt | 4k marginal ns/replica | 4 KiB / 1 KiB |"
            echo "|---:|---:|---:|---:|---:|---:|---:|---:|"
            cpu_rows=$(awk -v a="${S_CPU[endmt-1-1k]}" -v b="${S_CPU[endmt-16-1k]}" -v c="${S_CPU[endmt-1-4k]}" -v d="${S_CPU[endmt-16-4k]}" 'BEGIN {
                n = split(a, A, " "); split(b, B, " "); split(c, C, " "); split(d, D, " ")
                for (i = 1; i <= n; i++) {
                    if (A[i] == "nan" || B[i] == "nan" || C[i] == "nan" || D[i] == "nan" || A[i] <= 0 || B[i] <= 0 || C[i] <= 0 || D[i] <= 0) continue
                    a1 = 1000 / A[i]; a16 = 1000 / B[i]; c1 = 1000 / C[i]; c16 = 1000 / D[i]
                    m1 = (a16 - a1) / 15; m4 = (c16 - c1) / 15
                    printf "%d %.1f %.1f %.1f %.1f %.1f %.1f %.3f\n", i, a1, a16, m1, c1, c16, m4, (m1 > 0) ? m4 / m1 : 0
                }}')
            echo "$cpu_rows" | awk 'NF == 8 { printf "| %d | %.1f | %.1f | %.1f | %.1f | %.1f | %.1f | %.2f |\n", $1, $2, $3, $4, $5, $6, $7, $8 }'
            rc=$(echo "$cpu_rows" | awk 'NF == 8 { print $8 }' | tr '\n' ' ' | median)
            vc=$(awk -v r="$rc" 'BEGIN { print (r != "nan" && r <= 1.2) ? "met" : "NOT met" }')
            echo
            echo "Goal (issue 5) on the worker's CPU time: median per-round marginal ns/replica 4 KiB / 1 KiB = $rc (<= 1.2) -> $vc"
        fi
        echo
        echo "N = 16 receivers does not fit one End.MT TLV (one-octet TLV Length: at most 11 receivers of 20 octets after the 22 fixed octets):"
        echo "the N = 16 cases carry 11 in the TLV and the SID has 5 more provisioned by configuration."
    fi
    micro=$ROOT/bench/srv6-micro-results.md
    if [ -f "$micro" ]; then
        echo
        echo "## Without DPDK: the same behaviours on plain buffers"
        echo
        echo "(dataplane/examples/srv6_bench.rs, also in bench/srv6-micro-results.md; run just before this suite)"
        echo
        sed -e '1d' -e 's/^## /### /' "$micro"
    fi
} | tee "$SRV6_RESULTS.tmp"
mv "$SRV6_RESULTS.tmp" "$SRV6_RESULTS"
echo "bench: SRv6 table written to $SRV6_RESULTS" >&2
