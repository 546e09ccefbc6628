-- dcirouter line-rate benchmark: a Pktgen-DPDK script (run on the traffic
-- generator, one case per pktgen run; bench/linerate/gen.sh drives it).
--
-- Topology (RFC 2544 s.6, two ports): generator port TX -> router port "in",
-- router port "out" -> generator port RX. Pktgen replays the case's pcap
-- (written by `dcir-benchgen --linerate`) on the TX port at a percentage of
-- its link speed; the router forwards every packet out of "out" to the
-- generator's RX port (static neighbour = that port's MAC).
--
-- Two measurements per case:
--   1. the forwarding rate at 100 % offered load (RFC 2889 "maximum
--      forwarding rate" style: what comes back while the link is full);
--   2. the throughput (RFC 2544 s.26.1): the highest offered rate with no
--      loss, found by a binary search over the offered percentage, then
--      confirmed by a trial of its own.
--
-- Settings (environment):
--   LINERATE_CASE      case name for the result row (default "case")
--   LINERATE_TX_PORT   pktgen port that sends (default 0)
--   LINERATE_RX_PORT   pktgen port that receives (default 1)
--   LINERATE_SECONDS   seconds per trial (default 10; RFC 2544 asks 60 for
--                      the confirmation)
--   LINERATE_STEPS     binary-search steps (default 8: 100 / 2^8 = 0.4 %)
--   LINERATE_LOSS      loss tolerated as a fraction of the offered packets
--                      (default 0, RFC 2544's zero loss)
--   LINERATE_OUT       file the markdown result row is appended to
--                      (default linerate-results.md)
--   LINERATE_QUIT      1 (default): quit pktgen at the end

local function env(name, default)
    local v = os.getenv(name)
    if v == nil or v == "" then
        return default
    end
    return v
end

local case = env("LINERATE_CASE", "case")
local tx = env("LINERATE_TX_PORT", "0")
local rx = env("LINERATE_RX_PORT", "1")
local seconds = tonumber(env("LINERATE_SECONDS", "10"))
local steps = tonumber(env("LINERATE_STEPS", "8"))
local loss_ok = tonumber(env("LINERATE_LOSS", "0"))
local out_path = env("LINERATE_OUT", "linerate-results.md")
-- Packets still in flight (router queues, NIC rings) when the sender stops.
local settle_ms = 500

local function counters(port, field)
    local s = pktgen.portStats(port, "port")[tonumber(port)]
    return s[field] or 0
end

-- One trial at `pct` % of the TX link: offered and received packets and
-- bytes, after the sender stopped and the path drained.
local function trial(pct)
    pktgen.stop(tx)
    pktgen.delay(settle_ms)
    pktgen.clr()
    pktgen.set(tx, "rate", pct)
    pktgen.set(tx, "count", 0)
    pktgen.start(tx)
    pktgen.delay(seconds * 1000)
    pktgen.stop(tx)
    pktgen.delay(settle_ms)
    local sent = counters(tx, "opackets")
    local got = counters(rx, "ipackets")
    local bytes = counters(tx, "obytes")
    local lost = sent - got
    if lost < 0 then
        lost = 0
    end
    local ok = sent > 0 and lost <= loss_ok * sent
    print(string.format("linerate %s: %.2f %% offered: sent %d, received %d, lost %d -> %s",
        case, pct, sent, got, lost, ok and "pass" or "loss"))
    return { pct = pct, sent = sent, got = got, bytes = bytes, ok = ok }
end

local function mpps(packets)
    return packets / seconds / 1e6
end

pktgen.pcap(tx, "on")

-- 1. Everything the link can carry.
local full = trial(100)
if full.sent == 0 then
    error("linerate " .. case .. ": the generator sent nothing at 100 % (pcap loaded with -s " .. tx .. ":FILE? link up?)")
end
local frame = full.bytes / full.sent

-- 2. RFC 2544 throughput: binary search between the last rate that passed
-- and the first that lost packets.
local best = nil
if full.ok then
    best = full
else
    local lo, hi = 0, 100
    for _ = 1, steps do
        local mid = (lo + hi) / 2
        local r = trial(mid)
        if r.ok then
            lo = mid
            best = r
        else
            hi = mid
        end
    end
    if best ~= nil then
        -- Confirm the rate found on a trial of its own.
        local c = trial(best.pct)
        if c.ok then
            best = c
        else
            best = nil
        end
    end
end

local row
if best ~= nil then
    row = string.format("| %s | %.0f | %.2f | %.2f | %.2f | %.2f |", case, frame, mpps(full.sent), mpps(full.got),
        best.pct, mpps(best.got))
else
    row = string.format("| %s | %.0f | %.2f | %.2f | (none) | - |", case, frame, mpps(full.sent), mpps(full.got))
end
print(row)
local f = assert(io.open(out_path, "a"))
f:write(row .. "\n")
f:close()

if env("LINERATE_QUIT", "1") == "1" then
    pktgen.quit()
end
