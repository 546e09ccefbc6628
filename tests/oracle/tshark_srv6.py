#!/usr/bin/env python3
"""tshark oracle for dcirouter's SRH / FANN / IS-IS SRv6 output.

Usage: tshark_srv6.py <pcap>

Runs tshark (UDP checksum checking switched on; ICMPv6 and IS-IS checksums are
checked by default) over the pcap and prints, per frame, a block:

    frame <n>
    protocols <frame.protocols>
    bad <text>            one per malformed-packet marker, per expert item of
                          severity warning or error, per checksum status "Bad"
    field <name> <value>  selected dissected fields, one line per occurrence
    end

Exit status 3 with a MISSING line if tshark is not installed.
"""

import json
import shutil
import subprocess
import sys

FIELDS = {
    "ipv6.routing.type",
    "ipv6.routing.segleft",
    "ipv6.routing.srh.last_entry",
    "ipv6.routing.srh.flags",
    "ipv6.routing.srh.tag",
    "ipv6.routing.srh.addr",
    "ipv6.routing.len",
    "ipv6.routing.nxt",
    "ipv6.plen",
    "icmpv6.type",
    "icmpv6.code",
    "icmpv6.checksum",
    "icmpv6.checksum.status",
    "udp.checksum.status",
    "udp.dstport",
    "udp.length",
    "isis.lsp.checksum.status",
    "isis.lsp.srv6_cap.flags",
    "isis.lsp.srv6_cap.flags.o",
    "isis.lsp.srv6_locator.metric",
    "isis.lsp.srv6_locator.locator_size",
    "isis.lsp.srv6_locator.locator",
    "isis.lsp.srv6_end_sid.endpoint_function",
    "isis.lsp.srv6_end_sid.sid",
    "isis.lsp.srv6_end_sid.subsubclvs_length",
}

# Wireshark expert severities (epan/proto.h PI_*).
SEV_WARN = 0x00600000
SEV_ERROR = 0x00800000
SEV_NAMES = {"warning", "error", "warn"}


def as_list(v):
    return v if isinstance(v, list) else [v]


def walk(node, out, bad):
    if isinstance(node, dict):
        for k, v in node.items():
            if k == "_ws.malformed" or k.startswith("_ws.malformed"):
                bad.append("malformed %s" % json.dumps(v)[:200])
            if k == "_ws.expert" or k.endswith("_ws.expert"):
                for e in as_list(v):
                    if isinstance(e, dict):
                        sev = e.get("_ws.expert.severity")
                        msg = e.get("_ws.expert.message", "")
                        for s in as_list(sev):
                            try:
                                sv = int(str(s), 0)
                            except ValueError:
                                sv = SEV_ERROR if str(s).lower() in SEV_NAMES else 0
                            if sv >= SEV_WARN:
                                bad.append("expert %s %s" % (s, msg))
            if k.endswith("checksum.status") or k.endswith("checksum_status"):
                for s in as_list(v):
                    if str(s) in ("0", "Bad"):
                        bad.append("checksum %s=%s" % (k, s))
            if k in FIELDS:
                for s in as_list(v):
                    if not isinstance(s, (dict, list)):
                        out.append("field %s %s" % (k, s))
            walk(v, out, bad)
    elif isinstance(node, list):
        for v in node:
            walk(v, out, bad)


def main():
    if len(sys.argv) != 2:
        print(__doc__)
        sys.exit(2)
    if shutil.which("tshark") is None:
        print("MISSING tshark (apt-get install tshark)")
        sys.exit(3)
    cmd = [
        "tshark", "-r", sys.argv[1], "-T", "json", "--no-duplicate-keys",
        "-o", "udp.check_checksum:TRUE",
    ]
    r = subprocess.run(cmd, capture_output=True, text=True)
    if r.returncode != 0:
        print("tshark failed: %s" % r.stderr.strip())
        sys.exit(4)
    frames = json.loads(r.stdout)
    lines = []
    for i, f in enumerate(frames):
        layers = f.get("_source", {}).get("layers", {})
        lines.append("frame %d" % (i + 1))
        protos = layers.get("frame", {}).get("frame.protocols", "")
        lines.append("protocols %s" % protos)
        out, bad = [], []
        walk(layers, out, bad)
        lines.extend("bad %s" % b for b in bad)
        lines.extend(out)
        lines.append("end")
    print("\n".join(lines))


if __name__ == "__main__":
    main()
