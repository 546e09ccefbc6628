"""UDP sequence traffic for the net_tap test.
send DST_IP:PORT ... --count N --rate PPS [--flows F]
                         sends "seq N dst" datagrams round-robin over the
                         destinations; datagram N from the (N mod F)-th of F
                         sockets per destination (F source ports: F flows)
recv PORT --seconds S    prints one line per datagram received; stops 2 s after
                         the last one, or after S seconds
"""
import socket, sys, time

def send(dsts, count, rate, flows=1):
    socks = {}
    for d in dsts:
        host, port = d.rsplit(":", 1)
        fam = socket.AF_INET6 if ":" in host else socket.AF_INET
        socks[d] = ([socket.socket(fam, socket.SOCK_DGRAM) for _ in range(flows)], (host.strip("[]"), int(port)))
    gap = 1.0 / rate
    t0 = time.monotonic()
    for i in range(count):
        for d, (ss, addr) in socks.items():
            ss[i % flows].sendto(f"seq {i} {addr[0]}".encode(), addr)
        delay = t0 + (i + 1) * gap - time.monotonic()
        if delay > 0:
            time.sleep(delay)
    # Keep the sockets open until the kernel has handed everything on.
    time.sleep(1.0)

def recv(port, seconds):
    s4 = socket.socket(socket.AF_INET6, socket.SOCK_DGRAM)
    s4.setsockopt(socket.IPPROTO_IPV6, socket.IPV6_V6ONLY, 0)
    s4.bind(("::", port))
    s4.settimeout(0.2)
    end = time.monotonic() + seconds
    last = None
    while time.monotonic() < end:
        # Stop after 2 s without traffic once traffic has started.
        if last is not None and time.monotonic() - last > 2.0:
            break
        try:
            data, _ = s4.recvfrom(2048)
            last = time.monotonic()
            print(data.decode(), flush=True)
        except socket.timeout:
            pass

if __name__ == "__main__":
    if sys.argv[1] == "send":
        args = sys.argv[2:]
        count = int(args[args.index("--count") + 1]); rate = float(args[args.index("--rate") + 1])
        flows = int(args[args.index("--flows") + 1]) if "--flows" in args else 1
        send([a for a in args if ":" in a and not a.startswith("--")], count, rate, flows)
    else:
        recv(int(sys.argv[2]), float(sys.argv[4]))
