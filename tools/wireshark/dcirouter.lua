-- dcirouter.lua: Wireshark / tshark dissectors for the message formats of the
-- four drafts dcirouter implements, which Wireshark does not know yet:
--
--   * Long-haul CNP, draft-tian-ccwg-long-haul-cnp-00 s.6: the ICMPv6 message
--     (s.6.1) and the RoCEv2 CNP with the E bit (s.6.2), with the RFC 4884
--     extension objects of s.6.1.1 (Timestamp, Device Identifier, Path
--     Identifier);
--   * FANN, draft-hzh-fantel-wan-tunnel-03 s.5: the ICMPv6 message and the
--     UDP variant, with the metadata stack the bitmap describes;
--   * the End.MT TLV of the SRv6 SRH, draft-li-spring-rdma-multicast-over-srv6
--     s.7.2 (edge node, receivers and their QPNs).
--
-- Everything else (IPv6, SRH segments, BTH, PFC, IS-IS) Wireshark decodes
-- itself. The drafts leave their code points to IANA; the defaults here are
-- dcirouter's ([wire] in its configuration) and each is a preference
-- (Edit > Preferences > Protocols > LHCNP / FANN / SRv6 End.MT).
--
-- Use:  wireshark -X lua_script:dcirouter.lua FILE.pcap
--       tshark -X lua_script:dcirouter.lua -r FILE.pcap -Y lhcnp -V
-- or copy this file into ~/.local/lib/wireshark/plugins/.
-- Display filters: lhcnp, lhcnp.action == 2, fann.event_type == 2,
-- srv6_endmt.receiver == 2001:db8::10, ...
--
-- Works with the Lua 5.2 of Wireshark 3.x/4.0 and the Lua 5.3/5.4 of later
-- releases.

local band, rshift
if bit32 then
    band, rshift = bit32.band, bit32.rshift
else
    band = load("return function(a, b) return a & b end")()
    rshift = load("return function(a, b) return a >> b end")()
end

-- ------------------------------------------------------------ helpers

-- 16-bit one's-complement sum of a TvbRange's octets (odd length padded).
local function ones_sum(acc, r)
    local n = r:len()
    local i = 0
    while i + 1 < n do
        acc = acc + r:range(i, 2):uint()
        i = i + 2
    end
    if i < n then
        acc = acc + r:range(i, 1):uint() * 256
    end
    return acc
end

local function fold(acc)
    while acc > 0xffff do
        acc = band(acc, 0xffff) + rshift(acc, 16)
    end
    return acc
end

local checksum_status = { [0] = "Unverified", [1] = "Good", [2] = "Bad" }

-- Fields of the enclosing IPv6 header (innermost so far), for the ICMPv6
-- pseudo-header (RFC 8200 s.8.1: with an SRH, the final destination is
-- Segment List[0]).
local f_ip6_src = Field.new("ipv6.src")
local f_ip6_dst = Field.new("ipv6.dst")
local f_srh_addr = Field.new("ipv6.routing.srh.addr")

local function last(...)
    local t = { ... }
    return t[#t]
end

-- ICMPv6 checksum of `tvb` (the whole message) under its IPv6 header:
-- returns 1 (good), 2 (bad) or 0 (the addresses are not at hand).
local function icmpv6_checksum_status(tvb)
    local src, dst = last(f_ip6_src()), last(f_ip6_dst())
    if not src or not dst then
        return 0
    end
    -- An SRH after that header: the pseudo-header uses Segment List[0].
    for _, a in ipairs({ f_srh_addr() }) do
        if a.offset > dst.offset then
            dst = a
            break
        end
    end
    local acc = ones_sum(0, src.range) + ones_sum(0, dst.range)
    local len = tvb:len()
    acc = acc + rshift(len, 16) + band(len, 0xffff) + 58
    acc = ones_sum(acc, tvb:range(0, len))
    return (fold(acc) == 0xffff) and 1 or 2
end

-- Type, Code and Checksum of an ICMPv6 message `tvb` into `t`, with the
-- checksum verdict (`f`: the protocol's type / code / checksum /
-- checksum_status fields; `bad`: its bad-checksum expert).
local function icmpv6_header(tvb, t, f, bad)
    t:add(f.type, tvb(0, 1))
    t:add(f.code, tvb(1, 1))
    local ck = t:add(f.checksum, tvb(2, 2))
    local st = icmpv6_checksum_status(tvb)
    t:add(f.checksum_status, tvb(2, 2), st):set_generated()
    if st == 2 then
        ck:add_proto_expert_info(bad, "ICMPv6 checksum does not verify")
    end
end

-- ------------------------------------------------------------ Long-haul CNP

local lhcnp = Proto("lhcnp", "Long-haul CNP (draft-tian-ccwg-long-haul-cnp)")

local actions = { [0] = "Notify", [1] = "Pause", [2] = "Rate Reduce", [3] = "Resume" }
local metric_types = {
    [0] = "Unspecified (opaque context)",
    [1] = "Queue depth (KB)",
    [2] = "Queue growth rate (KB/ms)",
    [3] = "ECN marking rate (%)",
    [4] = "RTT-based metric (us)",
    [254] = "Experimental",
    [255] = "Experimental",
}
local ctypes = {
    [0] = "Reserved",
    [1] = "Timestamp",
    [2] = "Device Identifier",
    [3] = "Path Identifier",
    -- Experimental (s.10.3: 254-255), dcirouter's: the flow a CNP is about
    -- when the source QP is unknown (destination 16 octets, IPv4-mapped for
    -- IPv4, then DestQP 4 octets).
    [254] = "Flow (dcirouter, experimental)",
}

local lf = {
    format = ProtoField.string("lhcnp.format", "Format"),
    type = ProtoField.uint8("lhcnp.type", "Type", base.DEC),
    code = ProtoField.uint8("lhcnp.code", "Code", base.DEC, { [0] = "Flow-level" }),
    checksum = ProtoField.uint16("lhcnp.checksum", "Checksum", base.HEX),
    checksum_status = ProtoField.uint8("lhcnp.checksum.status", "Checksum status", base.DEC, checksum_status),
    level = ProtoField.uint8("lhcnp.level", "Congestion Level", base.DEC),
    flags = ProtoField.uint8("lhcnp.flags", "Action Flags", base.HEX),
    action = ProtoField.uint8("lhcnp.action", "Action", base.DEC, actions, 0xc0),
    flags_reserved = ProtoField.uint8("lhcnp.flags.reserved", "Reserved", base.HEX, nil, 0x3f),
    parameter = ProtoField.uint16("lhcnp.parameter", "Parameter", base.DEC),
    source_qp = ProtoField.uint32("lhcnp.source_qp", "Source QP", base.HEX),
    metric_type = ProtoField.uint8("lhcnp.metric_type", "Congestion Metric Type", base.DEC, metric_types),
    metric_value = ProtoField.uint24("lhcnp.metric_value", "Congestion Metric Value", base.DEC),
    ext_version = ProtoField.uint8("lhcnp.ext.version", "Extension version", base.DEC, nil, 0xf0),
    ext_checksum = ProtoField.uint16("lhcnp.ext.checksum", "Extension checksum", base.HEX),
    ext_checksum_status = ProtoField.uint8("lhcnp.ext.checksum.status", "Extension checksum status", base.DEC, checksum_status),
    obj_length = ProtoField.uint16("lhcnp.obj.length", "Length", base.DEC),
    obj_class = ProtoField.uint8("lhcnp.obj.class", "Class-Num", base.DEC),
    obj_ctype = ProtoField.uint8("lhcnp.obj.ctype", "C-Type", base.DEC, ctypes),
    obj_timestamp = ProtoField.uint64("lhcnp.obj.timestamp", "Timestamp (NTP)", base.HEX),
    obj_device = ProtoField.string("lhcnp.obj.device_id", "Device Identifier", base.UNICODE),
    obj_path = ProtoField.bytes("lhcnp.obj.path_id", "Path Identifier"),
    obj_data = ProtoField.bytes("lhcnp.obj.data", "Data"),
    obj_ctype_raw = ProtoField.uint8("lhcnp.obj.ctype_other", "C-Type (another class)", base.DEC),
    obj_flow_dst = ProtoField.ipv6("lhcnp.obj.flow_dst", "Flow destination"),
    obj_flow_dst4 = ProtoField.ipv4("lhcnp.obj.flow_dst4", "Flow destination (IPv4)"),
    obj_flow_qp = ProtoField.uint32("lhcnp.obj.flow_dest_qp", "Flow DestQP", base.HEX),
}
lhcnp.fields = lf

local le = {
    short = ProtoExpert.new("lhcnp.short", "Long-haul CNP shorter than its 12-octet body", expert.group.MALFORMED, expert.severity.ERROR),
    bad_checksum = ProtoExpert.new("lhcnp.bad_checksum", "Bad checksum", expert.group.CHECKSUM, expert.severity.ERROR),
    bad_param = ProtoExpert.new("lhcnp.bad_parameter", "Parameter out of range for the action (s.6.1)", expert.group.PROTOCOL, expert.severity.WARN),
    bad_ext = ProtoExpert.new("lhcnp.bad_extension", "Malformed extension structure (s.6.1.1, RFC 4884)", expert.group.MALFORMED, expert.severity.ERROR),
}
lhcnp.experts = { le.short, le.bad_checksum, le.bad_param, le.bad_ext }

lhcnp.prefs.icmpv6_type = Pref.uint("ICMPv6 type", 200, "ICMPv6 type of the Long-haul CNP (IANA TBD1; dcirouter [wire] icmpv6_lhcnp_type)")
lhcnp.prefs.ext_class = Pref.uint("Extension Class-Num", 247, "Class-Num of the Long-haul CNP extension objects (IANA TBD2; dcirouter [wire] lhcnp_ext_class_num)")

local function ntp_text(r)
    local secs = r:range(0, 4):uint()
    local frac = r:range(4, 4):uint()
    local unix = secs - 2208988800
    if unix < 0 then
        return string.format("NTP %u.%08x", secs, frac)
    end
    return os.date("!%Y-%m-%d %H:%M:%S", unix) .. string.format(".%06d UTC", math.floor(frac / 4294967296 * 1e6))
end

-- The extension structure in `r` (to the end of the message).
local function dissect_ext(r, tree, pinfo)
    local n = r:len()
    if n < 4 then
        tree:add_proto_expert_info(le.bad_ext, "extension structure shorter than its 4-octet header")
        return 0
    end
    local et = tree:add(r, "Extension structure (RFC 4884)")
    et:add(lf.ext_version, r:range(0, 1))
    local ck = et:add(lf.ext_checksum, r:range(2, 2))
    local none = r:range(2, 2):uint() == 0
    local ok = none or fold(ones_sum(0, r)) == 0xffff
    et:add(lf.ext_checksum_status, r:range(2, 2), none and 0 or (ok and 1 or 2)):set_generated()
    if not ok then
        ck:add_proto_expert_info(le.bad_checksum, "extension checksum does not verify")
    end
    if rshift(r:range(0, 1):uint(), 4) ~= 2 then
        et:add_proto_expert_info(le.bad_ext, "extension version is not 2")
    end
    local o, objs = 4, 0
    while o < n do
        if n - o < 4 then
            et:add_proto_expert_info(le.bad_ext, "trailing octets shorter than an object header")
            break
        end
        local len = r:range(o, 2):uint()
        local padded = len + (4 - len % 4) % 4
        if len < 4 or o + padded > n then
            et:add_proto_expert_info(le.bad_ext, string.format("object length %d at offset %d does not fit", len, o))
            break
        end
        local cls, ct = r:range(o + 2, 1):uint(), r:range(o + 3, 1):uint()
        local ours = cls == lhcnp.prefs.ext_class
        local ot = et:add(r:range(o, padded), string.format("Object: %s (class %d, length %d)", (ours and ctypes[ct]) or ("C-Type " .. ct), cls, len))
        ot:add(lf.obj_length, r:range(o, 2))
        ot:add(lf.obj_class, r:range(o + 2, 1))
        if ours then
            ot:add(lf.obj_ctype, r:range(o + 3, 1))
        else
            ot:add(lf.obj_ctype_raw, r:range(o + 3, 1))
        end
        if ours and ct == 1 and len - 4 ~= 8 then
            ot:add_proto_expert_info(le.bad_ext, "Timestamp object is not 8 octets")
        end
        local d = len - 4
        if d > 0 then
            local dr = r:range(o + 4, d)
            if cls == lhcnp.prefs.ext_class and ct == 1 and d == 8 then
                ot:add(lf.obj_timestamp, dr):append_text(" (" .. ntp_text(dr) .. ")")
            elseif cls == lhcnp.prefs.ext_class and ct == 2 then
                ot:add(lf.obj_device, dr, dr:string(ENC_UTF_8))
            elseif cls == lhcnp.prefs.ext_class and ct == 3 then
                ot:add(lf.obj_path, dr)
            elseif cls == lhcnp.prefs.ext_class and ct == 254 and d == 20 then
                ot:add(lf.obj_flow_dst, dr:range(0, 16))
                if dr:range(0, 8):uint64() == UInt64(0) and dr:range(8, 4):uint() == 0xffff then
                    ot:add(lf.obj_flow_dst4, dr:range(12, 4))
                end
                ot:add(lf.obj_flow_qp, dr:range(16, 4))
            else
                ot:add(lf.obj_data, dr)
            end
        end
        o = o + padded
        objs = objs + 1
    end
    if n == 4 then
        et:add_proto_expert_info(le.bad_ext, "extension header without objects (s.6.1.1: MUST be omitted)")
    end
    et:append_text(string.format(", %d object(s)", objs))
    return objs
end

-- The 12-octet body and what follows it (`r`, to the end of the message).
local function dissect_lhcnp_body(r, tree, pinfo)
    if r:len() < 12 then
        tree:add_proto_expert_info(le.short)
        return nil
    end
    tree:add(lf.level, r:range(0, 1))
    local ft = tree:add(lf.flags, r:range(1, 1))
    ft:add(lf.action, r:range(1, 1))
    ft:add(lf.flags_reserved, r:range(1, 1))
    local action = rshift(r:range(1, 1):uint(), 6)
    local param = r:range(2, 2):uint()
    local pi = tree:add(lf.parameter, r:range(2, 2))
    if action == 1 then
        pi:append_text(" us")
    elseif action == 2 or action == 3 then
        pi:append_text(" %")
    end
    if (action == 0 and param ~= 0) or ((action == 2 or action == 3) and param > 100) then
        pi:add_proto_expert_info(le.bad_param)
    end
    tree:add(lf.source_qp, r:range(4, 4))
    tree:add(lf.metric_type, r:range(8, 1))
    tree:add(lf.metric_value, r:range(9, 3))
    if r:len() > 12 then
        dissect_ext(r:range(12), tree, pinfo)
    end
    local what = actions[action]
    if action == 1 then
        what = string.format("Pause %d us", param)
    elseif action == 2 then
        what = string.format("Rate Reduce %d%%", param)
    elseif action == 3 then
        what = string.format("Resume %d%%", param)
    end
    return string.format("%s, level %d, source QP 0x%x", what, r:range(0, 1):uint(), r:range(4, 4):uint())
end

local function dissect_lhcnp_icmpv6(tvb, pinfo, tree)
    local t = tree:add(lhcnp, tvb())
    t:add(lf.format, "ICMPv6 (s.6.1)"):set_generated()
    icmpv6_header(tvb, t, lf, le.bad_checksum)
    local info = dissect_lhcnp_body(tvb:range(4), t, pinfo)
    pinfo.cols.protocol = "LHCNP"
    pinfo.cols.info = "Long-haul CNP (ICMPv6): " .. (info or "truncated")
    return tvb:len()
end

-- RoCEv2 (UDP 4791): Wireshark's InfiniBand dissector decodes the BTH and
-- is left alone; afterwards (a postdissector, below) a CNP (opcode 0x81)
-- with the E bit gets its Long-haul CNP body decoded from the InfiniBand
-- protocol item's octets (BTH .. ICRC).
local f_infiniband = Field.new("infiniband")

local function dissect_lhcnp_roce(fi, pinfo, tree)
    local tvb = fi.range:tvb()
    if tvb:len() < 12 or tvb(0, 1):uint() ~= 0x81 or band(tvb(4, 1):uint(), 0x20) == 0 then
        return
    end
    -- Body and extensions between the BTH and the 4-octet ICRC.
    local n = tvb:len() - 12 - 4
    local t = tree:add(lhcnp, tvb(12, math.max(n, 0)))
    t:add(lf.format, "RoCEv2 CNP with E bit (s.6.2)"):set_generated()
    local info = n > 0 and dissect_lhcnp_body(tvb:range(12, n), t, pinfo) or nil
    if not info then
        t:add_proto_expert_info(le.short)
    end
    pinfo.cols.protocol = "LHCNP"
    pinfo.cols.info = string.format("Long-haul CNP (RoCEv2, E=1) DestQP 0x%x: %s", tvb(5, 3):uint(), info or "truncated")
end

-- ------------------------------------------------------------ FANN

local fann = Proto("fann", "FANN (draft-hzh-fantel-wan-tunnel)")

local event_types = {
    [1] = "Link failure",
    [2] = "Congestion",
    [3] = "Performance degradation",
    [4] = "Microburst",
    [5] = "Signal degradation / link errors",
    [6] = "Queue buildup",
    [7] = "Recovery",
}
local congestion_subtypes = { [1] = "mild (> 50%)", [2] = "moderate (> 70%)", [3] = "severe (> 90%)" }

-- Metadata items by bitmap bit (bit 0 = most significant): name, octets.
local items = {
    [0] = { "ingress_port", "Ingress Port ID", 4 },
    [1] = { "egress_port", "Egress Port ID", 4 },
    [2] = { "ingress_ts", "Ingress Timestamp", 8 },
    [3] = { "egress_ts", "Egress Timestamp", 8 },
    [4] = { "tx_util", "Egress TX Link Utilization", 4 },
    [5] = { "loss", "Packet Loss", 4 },
    [6] = { "latency", "Latency / Delay (us)", 4 },
    [7] = { "jitter", "Jitter (us)", 4 },
    [8] = { "queue", "Queue Occupancy (bytes)", 4 },
    [9] = { "buffer", "Buffer Occupancy", 4 },
    [10] = { "signal", "Signal Degradation / Link Errors", 4 },
    [11] = { "link_down", "Hard Failure / Link Down", 4 },
    [12] = { "microburst", "Microburst Detected", 4 },
    [13] = { "flow", "Flow ID", 37 },
    [14] = { "path_id", "Path ID", 16 },
}

local ff = {
    type = ProtoField.uint8("fann.type", "Type", base.DEC),
    code = ProtoField.uint8("fann.code", "Code", base.DEC, { [0] = "Event notification", [1] = "Recovery notification" }),
    checksum = ProtoField.uint16("fann.checksum", "Checksum", base.HEX),
    checksum_status = ProtoField.uint8("fann.checksum.status", "Checksum status", base.DEC, checksum_status),
    version = ProtoField.uint8("fann.version", "Version", base.DEC),
    reserved = ProtoField.uint8("fann.reserved", "Reserved", base.HEX),
    hop_limit = ProtoField.uint8("fann.hop_limit", "Hop Limit", base.DEC),
    event_type = ProtoField.uint8("fann.event_type", "Event Type", base.HEX, event_types),
    event_subtype = ProtoField.uint8("fann.event_subtype", "Event Sub-Type", base.HEX),
    event_id = ProtoField.uint32("fann.event_id", "Event Identifier", base.HEX),
    timestamp = ProtoField.uint64("fann.timestamp", "Timestamp (us since the Unix epoch)", base.DEC),
    origin = ProtoField.ipv6("fann.origin", "Originating Node"),
    bitmap = ProtoField.uint32("fann.bitmap", "Bitmap", base.HEX),
    flow_src = ProtoField.ipv6("fann.flow.src", "Flow source"),
    flow_dst = ProtoField.ipv6("fann.flow.dst", "Flow destination"),
    flow_sport = ProtoField.uint16("fann.flow.sport", "Flow source port", base.DEC),
    flow_dport = ProtoField.uint16("fann.flow.dport", "Flow destination port", base.DEC),
    flow_proto = ProtoField.uint8("fann.flow.proto", "Flow protocol", base.DEC),
    path_id = ProtoField.ipv6("fann.path_id", "Path ID"),
}
for b = 0, 12 do
    local it = items[b]
    if it[3] == 8 then
        ff[it[1]] = ProtoField.uint64("fann." .. it[1], it[2], base.DEC)
    else
        ff[it[1]] = ProtoField.uint32("fann." .. it[1], it[2], base.DEC)
    end
end
fann.fields = ff

local fe = {
    short = ProtoExpert.new("fann.short", "FANN message shorter than its fixed fields", expert.group.MALFORMED, expert.severity.ERROR),
    length = ProtoExpert.new("fann.length", "Message length differs from what the bitmap implies (s.6)", expert.group.MALFORMED, expert.severity.ERROR),
    reserved_bit = ProtoExpert.new("fann.reserved_bit", "Reserved bitmap bit set: the stack cannot be sized", expert.group.PROTOCOL, expert.severity.WARN),
    version = ProtoExpert.new("fann.version.unknown", "Unknown FANN version", expert.group.PROTOCOL, expert.severity.WARN),
    bad_checksum = ProtoExpert.new("fann.bad_checksum", "Bad checksum", expert.group.CHECKSUM, expert.severity.ERROR),
}
fann.experts = { fe.short, fe.length, fe.reserved_bit, fe.version, fe.bad_checksum }

fann.prefs.icmpv6_type = Pref.uint("ICMPv6 type", 201, "ICMPv6 type of FANN (IANA TBD; dcirouter [wire] icmpv6_fann_type)")
fann.prefs.udp_port = Pref.uint("UDP port", 49790, "UDP port of the FANN UDP variant (dcirouter [wire] fann_udp_port)")

local function us_text(v)
    local s = v / 1000000
    if s < 1 or s > 4102444800 then
        return tostring(v)
    end
    return os.date("!%Y-%m-%d %H:%M:%S", math.floor(s)) .. string.format(".%06d UTC", v % 1000000)
end

-- The FANN fields from Version on (`r`, exactly the message).
local function dissect_fann_message(r, tree, pinfo)
    local n = r:len()
    if n < 37 then
        tree:add_proto_expert_info(fe.short)
        return nil
    end
    local vi = tree:add(ff.version, r:range(0, 1))
    if r:range(0, 1):uint() ~= 1 then
        vi:add_proto_expert_info(fe.version)
    end
    tree:add(ff.reserved, r:range(1, 1))
    tree:add(ff.hop_limit, r:range(2, 1))
    local et = r:range(3, 1):uint()
    local st = r:range(4, 1):uint()
    tree:add(ff.event_type, r:range(3, 1))
    local sti = tree:add(ff.event_subtype, r:range(4, 1))
    if et == 2 and congestion_subtypes[st] then
        sti:append_text(" (" .. congestion_subtypes[st] .. ")")
    elseif et == 7 and event_types[st] then
        sti:append_text(" (cleared: " .. event_types[st] .. ")")
    end
    tree:add(ff.event_id, r:range(5, 4))
    local ts = r:range(9, 8):uint64()
    tree:add(ff.timestamp, r:range(9, 8)):append_text(" (" .. us_text(tonumber(tostring(ts))) .. ")")
    tree:add(ff.origin, r:range(17, 16))
    local bm = r:range(33, 4):uint()
    local bt = tree:add(ff.bitmap, r:range(33, 4))
    if band(bm, 0x1ffff) ~= 0 then
        bt:add_proto_expert_info(fe.reserved_bit)
    end
    do
        local need = 37
        for b = 0, 14 do
            if band(bm, rshift(0x80000000, b)) ~= 0 then
                need = need + items[b][3]
            end
        end
        if need > n then
            tree:add_proto_expert_info(fe.length, string.format("the bitmap implies %d octets from Version on, the message has %d", need, n))
        end
        local mt = n > 37 and tree:add(r:range(37), "Metadata stack") or nil
        local o = 37
        for b = 0, mt and 14 or -1 do
            if band(bm, rshift(0x80000000, b)) ~= 0 then
                local it = items[b]
                if o + it[3] > n then
                    break
                end
                local ir = r:range(o, it[3])
                if b == 13 then
                    local t = mt:add(ir, "Flow ID")
                    t:add(ff.flow_src, ir:range(0, 16))
                    t:add(ff.flow_dst, ir:range(16, 16))
                    t:add(ff.flow_sport, ir:range(32, 2))
                    t:add(ff.flow_dport, ir:range(34, 2))
                    t:add(ff.flow_proto, ir:range(36, 1))
                elseif b == 14 then
                    mt:add(ff.path_id, ir)
                else
                    mt:add(ff[it[1]], ir)
                end
                o = o + it[3]
            end
        end
    end
    local what = event_types[et] or string.format("event type %d", et)
    return string.format("%s (sub-type %d) from %s, event 0x%08x", what, st, tostring(r:range(17, 16):ipv6()), r:range(5, 4):uint())
end

local function dissect_fann_icmpv6(tvb, pinfo, tree)
    local t = tree:add(fann, tvb())
    icmpv6_header(tvb, t, ff, fe.bad_checksum)
    local info = tvb:len() > 4 and dissect_fann_message(tvb:range(4), t, pinfo) or nil
    if not info then
        t:add_proto_expert_info(fe.short)
    end
    pinfo.cols.protocol = "FANN"
    pinfo.cols.info = (tvb(1, 1):uint() == 1 and "FANN recovery: " or "FANN event: ") .. (info or "truncated")
    return tvb:len()
end

function fann.dissector(tvb, pinfo, tree)
    -- The UDP variant: the fields from Version on are the UDP payload.
    local t = tree:add(fann, tvb())
    local info = dissect_fann_message(tvb:range(0), t, pinfo)
    pinfo.cols.protocol = "FANN"
    pinfo.cols.info = "FANN (UDP): " .. (info or "truncated")
    return tvb:len()
end

-- ICMPv6: the two draft types here, every other type to Wireshark's ICMPv6.
-- When that dissector finds a message malformed, Wireshark marks the packet
-- as usual and `call` then raises a Lua error, which is dropped here.
local icmpv6_orig
local icmpv6_wrap = Proto("dcir_icmpv6", "ICMPv6 (with Long-haul CNP and FANN types)")

function icmpv6_wrap.dissector(tvb, pinfo, tree)
    if tvb:len() >= 4 then
        local ty = tvb(0, 1):uint()
        if ty == lhcnp.prefs.icmpv6_type then
            return dissect_lhcnp_icmpv6(tvb, pinfo, tree)
        elseif ty == fann.prefs.icmpv6_type then
            return dissect_fann_icmpv6(tvb, pinfo, tree)
        end
    end
    if not icmpv6_orig then
        return 0
    end
    local ok, done = pcall(function() return icmpv6_orig:call(tvb, pinfo, tree) end)
    return ok and done or tvb:len()
end

-- ------------------------------------------------------------ End.MT TLV

local endmt = Proto("srv6_endmt", "SRv6 End.MT TLV (draft-li-spring-rdma-multicast-over-srv6)")
local mf = {
    type = ProtoField.uint8("srv6_endmt.type", "Type", base.DEC),
    length = ProtoField.uint8("srv6_endmt.length", "Length", base.DEC),
    edge = ProtoField.ipv6("srv6_endmt.edge", "Edge Node Address"),
    num = ProtoField.uint8("srv6_endmt.num", "Num Receivers", base.DEC),
    receiver = ProtoField.ipv6("srv6_endmt.receiver", "Receiver Address"),
    qpn = ProtoField.uint24("srv6_endmt.qpn", "Receiver QPN", base.HEX),
}
endmt.fields = mf
local me = {
    length = ProtoExpert.new("srv6_endmt.bad_length", "Length is not 22 + 20 x Num Receivers (s.7.2)", expert.group.MALFORMED, expert.severity.ERROR),
}
endmt.experts = { me.length }
endmt.prefs.tlv_type = Pref.uint("SRH TLV type", 124, "SRH TLV type of End.MT (IANA pending; dcirouter [wire] srh_tlv_end_mt)")

-- Every SRH of the frame (Ethernet, 802.1Q/802.1ad tags, IPv6 with its
-- extension headers, IPv6-in-IPv6): call f(offset of the SRH).
local function each_srh(tvb, f)
    local n = tvb:len()
    if n < 14 then
        return
    end
    local o, et = 12, tvb(12, 2):uint()
    while (et == 0x8100 or et == 0x88a8) and o + 6 <= n do
        o = o + 4
        et = tvb(o, 2):uint()
    end
    o = o + 2
    if et ~= 0x86dd then
        return
    end
    local guard = 0
    while o + 40 <= n and band(tvb(o, 1):uint(), 0xf0) == 0x60 and guard < 8 do
        guard = guard + 1
        local nh = tvb(o + 6, 1):uint()
        o = o + 40
        local hops = 0
        while (nh == 0 or nh == 43 or nh == 60) and o + 8 <= n and hops < 16 do
            hops = hops + 1
            local len = (tvb(o + 1, 1):uint() + 1) * 8
            if nh == 43 and tvb(o + 2, 1):uint() == 4 and o + len <= n then
                f(o, len)
            end
            nh = tvb(o, 1):uint()
            o = o + len
        end
        if nh ~= 41 then
            return
        end
    end
end

-- After every other dissector: Long-haul CNPs in RoCEv2 CNPs, End.MT TLVs
-- in SRHs (`tvb` is the whole frame).
local post = Proto("dcirouter_post", "dcirouter draft messages (postdissector)")

function post.dissector(tvb, pinfo, tree)
    for _, fi in ipairs({ f_infiniband() }) do
        dissect_lhcnp_roce(fi, pinfo, tree)
    end
    each_srh(tvb, function(srh, len)
        local last_entry = tvb(srh + 4, 1):uint()
        local o = srh + 8 + (last_entry + 1) * 16
        local stop = srh + len
        while o < stop do
            local ty = tvb(o, 1):uint()
            if ty == 0 then
                o = o + 1
            else
                if o + 2 > stop then
                    return
                end
                local l = tvb(o + 1, 1):uint()
                if o + 2 + l > stop then
                    return
                end
                if ty == endmt.prefs.tlv_type then
                    local t = tree:add(endmt, tvb(o, 2 + l))
                    t:add(mf.type, tvb(o, 1))
                    local li = t:add(mf.length, tvb(o + 1, 1))
                    if l >= 22 then
                        t:add(mf.edge, tvb(o + 4, 16))
                        local num = tvb(o + 20, 1):uint()
                        t:add(mf.num, tvb(o + 20, 1))
                        if l ~= 22 + 20 * num then
                            li:add_proto_expert_info(me.length)
                        end
                        local r = o + 24
                        for i = 1, num do
                            if r + 20 > o + 2 + l then
                                break
                            end
                            local rt = t:add(tvb(r, 20), string.format("Receiver %d: %s QPN 0x%06x", i, tostring(tvb(r, 16):ipv6()), tvb(r + 16, 3):uint()))
                            rt:add(mf.receiver, tvb(r, 16))
                            rt:add(mf.qpn, tvb(r + 16, 3))
                            r = r + 20
                        end
                        t:append_text(string.format(": edge %s, %d receiver(s)", tostring(tvb(o + 4, 16):ipv6()), num))
                    else
                        li:add_proto_expert_info(me.length)
                    end
                end
                o = o + 2 + l
            end
        end
    end)
end

-- ------------------------------------------------------------ registration

local udp_table = DissectorTable.get("udp.port")
local ip_table = DissectorTable.get("ip.proto")
local fann_port_registered

local function register()
    if not icmpv6_orig then
        icmpv6_orig = ip_table:get_dissector(58)
        ip_table:add(58, icmpv6_wrap)
    end
    if fann_port_registered ~= fann.prefs.udp_port then
        if fann_port_registered then
            udp_table:remove(fann_port_registered, fann)
        end
        udp_table:add(fann.prefs.udp_port, fann)
        fann_port_registered = fann.prefs.udp_port
    end
end

fann.prefs_changed = register
register()
register_postdissector(post)
