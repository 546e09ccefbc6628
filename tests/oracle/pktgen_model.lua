-- A model of Pktgen-DPDK's Lua API and of a device under test, to run
-- bench/linerate/linerate.lua without NICs (tests/linerate.rs):
--
--   lua5.4 tests/oracle/pktgen_model.lua SCRIPT LINE_PPS CAPACITY_PPS FRAME_BYTES [LOST_PER_TRIAL]
--
-- Virtual time advances only in pktgen.delay. While the TX port runs at r %
-- it sends r/100 * LINE_PPS; the device forwards up to CAPACITY_PPS of it to
-- the RX port and loses LOST_PER_TRIAL packets more per trial (a device
-- that always loses a few). What the script does is checked as it goes
-- (pcap replay on before the first start, no start while running, stats
-- read only when stopped) and printed at the end as "model: ..." lines.

local script, line_pps, cap_pps, frame, lost_per_trial = arg[1], tonumber(arg[2]), tonumber(arg[3]), tonumber(arg[4]), tonumber(arg[5] or "0")
assert(script and line_pps and cap_pps and frame, "usage: pktgen_model.lua SCRIPT LINE_PPS CAPACITY_PPS FRAME_BYTES [LOST]")

local ports = {}
local function port(p)
    local n = tonumber(p)
    assert(n ~= nil, "port must be a number string, got " .. tostring(p))
    ports[n] = ports[n] or { rate = 100, count = -1, pcap = false, running = false, opackets = 0, ipackets = 0, obytes = 0, carry_tx = 0, carry_rx = 0 }
    return ports[n]
end

local tx_port, rx_port = 0, 1
local now_ms, trials, quit, starts_without_pcap = 0, 0, false, 0

pktgen = {}

function pktgen.set(p, what, value)
    local s = port(p)
    if what == "rate" then
        assert(value >= 0 and value <= 100, "rate out of range: " .. tostring(value))
        s.rate = value
    elseif what == "count" then
        s.count = value
    else
        error("model: unknown setting " .. tostring(what))
    end
end

function pktgen.pcap(p, onoff)
    port(p).pcap = (onoff == "on" or onoff == "enable")
end

function pktgen.clr()
    for _, s in pairs(ports) do
        s.opackets, s.ipackets, s.obytes, s.carry_tx, s.carry_rx = 0, 0, 0, 0, 0
    end
end

function pktgen.start(p)
    local s = port(p)
    assert(not s.running, "start while running")
    assert(s.count == 0, "the sender must run continuously (count 0)")
    if not s.pcap then
        starts_without_pcap = starts_without_pcap + 1
    end
    s.running = true
    trials = trials + 1
    port(rx_port).lost = lost_per_trial
end

function pktgen.stop(p)
    port(p).running = false
end

function pktgen.delay(ms)
    local dt = ms / 1000
    local s = port(tx_port)
    if s.running then
        local offered = s.rate / 100 * line_pps
        local tx = offered * dt + s.carry_tx
        local sent = math.floor(tx)
        s.carry_tx = tx - sent
        s.opackets = s.opackets + sent
        s.obytes = s.obytes + sent * frame
        local r = port(rx_port)
        local fwd = math.min(offered, cap_pps) * dt + s.carry_rx
        local got = math.min(math.floor(fwd), sent)
        s.carry_rx = fwd - got
        local lose = math.min(r.lost or 0, got)
        r.lost = (r.lost or 0) - lose
        r.ipackets = r.ipackets + got - lose
    end
    now_ms = now_ms + ms
end

function pktgen.portStats(p, kind)
    assert(kind == "port", "model: only 'port' statistics")
    local s = port(p)
    assert(not port(tx_port).running, "statistics read while the sender runs")
    return { [tonumber(p)] = { opackets = s.opackets, ipackets = s.ipackets, obytes = s.obytes } }
end

function pktgen.quit()
    quit = true
end

port(tx_port)
port(rx_port)
dofile(script)
print(string.format("model: trials %d, virtual seconds %.1f, quit %s, starts without pcap %d, running %s",
    trials, now_ms / 1000, tostring(quit), starts_without_pcap, tostring(port(tx_port).running)))
