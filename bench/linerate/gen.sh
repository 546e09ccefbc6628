#!/usr/bin/env bash
# Line-rate benchmark, generator side: run Pktgen-DPDK once per case with
# bench/linerate/linerate.lua and collect the rows in one markdown table.
#
# On the router (device under test), first:
#   LINERATE_IN_PCI=0000:5e:00.0 LINERATE_OUT_PCI=0000:5e:00.1 \
#   LINERATE_GEN_MAC=<MAC of the generator's RX port> LINERATE_CORES=2,3,4,5 \
#     target/release/dcir-benchgen --linerate /tmp/linerate 4096
#   target/release/dcirouter -l 0 -- run --config /tmp/linerate/linerate-router-fwd.toml --ctl-socket /run/dcir.sock
# (or -queue / -cong: the shaped queue, the congestion-aware port) and copy /tmp/linerate/*.pcap to the generator.
#
# Environment (generator):
#   PKTGEN          pktgen binary (default: pktgen on PATH)
#   PKTGEN_EAL      EAL arguments (required), e.g. "-l 0-8 -n 4 -a 0000:af:00.0 -a 0000:af:00.1"
#   PKTGEN_MAP      core-to-port matrix (default "[1-2:3-6].0, [7:8].1":
#                   4 TX cores on port 0; 64 B line rate on 100G needs several)
#   LINERATE_DIR    directory of the pcaps (default /tmp/linerate)
#   LINERATE_CASES  cases (default: roce4-64 roce6-64 roce4-1k roce6-1k udp4-64 udp6-64)
#   LINERATE_LABEL  the router configuration under test, for the title and the
#                   file name (fwd, queue, cong; default none)
#   LINERATE_RESULTS  output table (default bench/linerate-results[-LABEL].md)
#   and linerate.lua's own: LINERATE_SECONDS, LINERATE_STEPS, LINERATE_LOSS,
#   LINERATE_TX_PORT, LINERATE_RX_PORT.
set -euo pipefail
ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
PKTGEN=${PKTGEN:-pktgen}
MAP=${PKTGEN_MAP:-"[1-2:3-6].0, [7:8].1"}
DIR=${LINERATE_DIR:-/tmp/linerate}
CASES=${LINERATE_CASES:-"roce4-64 roce6-64 roce4-1k roce6-1k udp4-64 udp6-64"}
LABEL=${LINERATE_LABEL:-}
RESULTS=${LINERATE_RESULTS:-$ROOT/bench/linerate-results${LABEL:+-$LABEL}.md}
TX=${LINERATE_TX_PORT:-0}

die() { echo "linerate: $*" >&2; exit 1; }
[ -n "${PKTGEN_EAL:-}" ] || die "PKTGEN_EAL is not set (EAL arguments naming the generator's two ports)"
command -v "$PKTGEN" >/dev/null || die "$PKTGEN not found (build Pktgen-DPDK against the system DPDK, or set PKTGEN)"
for c in $CASES; do [ -f "$DIR/$c.pcap" ] || die "$DIR/$c.pcap missing (dcir-benchgen --linerate on the router writes it)"; done

rows=$(mktemp)
trap 'rm -f "$rows"' EXIT
for c in $CASES; do
    echo "linerate: case $c" >&2
    # shellcheck disable=SC2086
    LINERATE_CASE=$c LINERATE_OUT=$rows "$PKTGEN" $PKTGEN_EAL -- -P -m "$MAP" -s "$TX:$DIR/$c.pcap" -f "$ROOT/bench/linerate/linerate.lua" \
        || die "pktgen failed on case $c"
done
{
    echo "# dcirouter line rate (Pktgen-DPDK, RFC 2544 throughput)${LABEL:+: linerate-router-$LABEL.toml}"
    echo
    echo "- $(date -u '+%Y-%m-%d %H:%M UTC'), generator $(uname -n), pktgen map \"$MAP\", ${LINERATE_SECONDS:-10} s trials, loss tolerated ${LINERATE_LOSS:-0}"
    echo "- frame = bytes per packet without FCS; offered / forwarded at 100 % = what the generator sent / got back with the link full; zero loss = RFC 2544 s.26.1 throughput (binary search, confirmed)"
    echo
    echo "| case | frame bytes | offered Mpps at 100 % | forwarded Mpps at 100 % | zero-loss rate % | zero-loss Mpps |"
    echo "|---|---:|---:|---:|---:|---:|"
    cat "$rows"
} > "$RESULTS"
cat "$RESULTS"
