"""Input pcaps for tests/pfc_rx.rs, built with scapy (an encoder
independent of dcirouter's): PAUSE (802.3 Annex 31B) and PFC (802.1Qbb)
frames from scapy.contrib.mac_control, and the data that crosses the
router to the port those frames pause.

  pfc_frames.py data OUT.pcap FILLER N KINDS
      FILLER frames to a MAC that is not the router's (dropped as
      l2-not-for-us: they only make the data arrive some RX bursts later),
      then N rounds of one packet of each kind in KINDS (comma-separated),
      each carrying the marker KIND-NNN (NNN = round) in its payload:
        H4  IPv4 UDP to 10.0.3.5, DSCP 26            (priority 3)
        N0  IPv4 UDP to 10.0.3.5, DSCP 0             (priority 0)
        H6  IPv6 UDP to 2001:db8:3::5, DSCP 26, ECT0 (priority 3)
        N5  IPv4 UDP to 10.0.3.5, DSCP 40            (priority 5)
        HV  from VLAN 100 with PCP 3, DSCP 0, to 10.0.4.5 (wan.200): the
            egress tag keeps PCP 3                   (priority 3)
        NV  untagged, DSCP 26, to 10.0.4.6 (wan.200): egress PCP 0
                                                     (priority 0)
  pfc_frames.py control OUT.pcap ITEM...
      One MAC Control (or filler) frame per ITEM, from the WAN neighbour
      02:00:00:00:02:02, in order:
        pfc:PRIO=QUANTA[/PRIO=QUANTA...]  PFC to 01:80:c2:00:00:01, the
                                          named priorities enabled
        pfc-bcast:PRIO=QUANTA             the same PFC to ff:ff:ff:ff:ff:ff
        pfc-lldp:PRIO=QUANTA              the same PFC to 01:80:c2:00:00:0e
        pfc-vlan:VID:PRIO=QUANTA          the same PFC in an 802.1Q tag
        pfc-short                         opcode 0x0101 and 8 octets of
                                          vector and times (10 in all)
        pause:QUANTA                      802.3x PAUSE to 01:80:c2:00:00:01
        pause-to:MAC:QUANTA               802.3x PAUSE to MAC
        gate                              opcode 0x0002 (EPON GATE)
        filler:COUNT                      COUNT frames to 02:00:00:00:99:99
Prints one line per frame written: its length and hex.
"""
import sys

from scapy.all import Dot1Q, Ether, IP, IPv6, Raw, UDP, raw, wrpcap
from scapy.contrib.mac_control import MACControlClassBasedFlowControl, MACControlGate, MACControlPause

HOST = "02:00:00:00:01:02"
R_DC = "02:dc:00:00:00:01"
GW = "02:00:00:00:02:02"
ELSEWHERE = "02:00:00:00:99:99"
PFC_DST = "01:80:c2:00:00:01"


def marker(kind, i):
    return Raw(f"{kind}-{i:03d}".encode() + bytes(range(48)))


def data(kind, i):
    l2 = Ether(src=HOST, dst=R_DC)
    udp = UDP(sport=1000 + i, dport=2000)
    if kind == "H4":
        return l2 / IP(src="10.0.1.2", dst="10.0.3.5", tos=26 << 2, ttl=64) / udp / marker(kind, i)
    if kind == "N0":
        return l2 / IP(src="10.0.1.2", dst="10.0.3.5", tos=0, ttl=64) / udp / marker(kind, i)
    if kind == "N5":
        return l2 / IP(src="10.0.1.2", dst="10.0.3.5", tos=40 << 2, ttl=64) / udp / marker(kind, i)
    if kind == "H6":
        return l2 / IPv6(src="2001:db8:1::2", dst="2001:db8:3::5", tc=26 << 2 | 2, hlim=64) / udp / marker(kind, i)
    if kind == "HV":
        return l2 / Dot1Q(vlan=100, prio=3) / IP(src="10.0.100.2", dst="10.0.4.5", tos=0, ttl=64) / udp / marker(kind, i)
    if kind == "NV":
        return l2 / IP(src="10.0.1.2", dst="10.0.4.6", tos=26 << 2, ttl=64) / udp / marker(kind, i)
    raise SystemExit(f"unknown kind {kind}")


def filler(src, n):
    return [Ether(src=src, dst=ELSEWHERE) / IP(src="10.0.9.9", dst="10.0.9.8") / UDP(sport=9, dport=9) / Raw(b"filler" + bytes(40)) for _ in range(n)]


def pfc_pdu(spec):
    """`3=65535/5=100` -> a PFC PDU with those priorities enabled."""
    f = {}
    for item in spec.split("/"):
        p, q = item.split("=")
        f[f"c{int(p)}_enabled"] = 1
        f[f"c{int(p)}_pause_time"] = int(q)
    return MACControlClassBasedFlowControl(**f)


def control(items):
    out = []
    for it in items:
        w = it.split(":")
        k = w[0]
        if k == "pfc":
            out.append(Ether(src=GW, dst=PFC_DST) / pfc_pdu(w[1]))
        elif k == "pfc-bcast":
            out.append(Ether(src=GW, dst="ff:ff:ff:ff:ff:ff") / pfc_pdu(w[1]))
        elif k == "pfc-lldp":
            out.append(Ether(src=GW, dst="01:80:c2:00:00:0e") / pfc_pdu(w[1]))
        elif k == "pfc-vlan":
            out.append(Ether(src=GW, dst=PFC_DST) / Dot1Q(vlan=int(w[1]), prio=7) / pfc_pdu(w[2]))
        elif k == "pfc-short":
            out.append(Ether(src=GW, dst=PFC_DST, type=0x8808) / Raw(bytes.fromhex("0101" "0008" "ffff" "ffff" "ffff")))
        elif k == "pause":
            out.append(Ether(src=GW, dst=PFC_DST) / MACControlPause(pause_time=int(w[1])))
        elif k == "pause-to":
            mac = ":".join(w[1:7])
            out.append(Ether(src=GW, dst=mac) / MACControlPause(pause_time=int(w[7])))
        elif k == "gate":
            out.append(Ether(src=GW, dst=PFC_DST) / MACControlGate())
        elif k == "filler":
            out.extend(filler(GW, int(w[1])))
        else:
            raise SystemExit(f"unknown item {it}")
    return out


def main():
    cmd, path = sys.argv[1], sys.argv[2]
    if cmd == "data":
        n_fill, n, kinds = int(sys.argv[3]), int(sys.argv[4]), sys.argv[5].split(",")
        frames = filler(HOST, n_fill) + [data(k, i) for i in range(n) for k in kinds]
    elif cmd == "control":
        frames = control(sys.argv[3:])
    else:
        raise SystemExit(f"unknown command {cmd}")
    frames = [Ether(raw(f)) for f in frames]
    wrpcap(path, frames)
    for f in frames:
        print(len(raw(f)), raw(f).hex())


if __name__ == "__main__":
    main()
