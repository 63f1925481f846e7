-- Wireshark dissector for the rdma-session adapter's RoCEv2 extensions
-- (docs/specs/rdma-session.rst): the packets of IBTA's manufacturer-
-- specific opcode range the adapter sends.
--
--   0xc0 PAUSE             BTH + AETH (RNR syndrome: the longest wait)
--   0xc1 RESUME            BTH + AETH (0x1f)
--   0xc2 DC_CONNECT        BTH + DCETH (key, DCI QPN, connection number)
--   0xc3 DC_CONNECT_REPLY  BTH + AETH + DCRETH (context QPN, connection)
--   0xc4 DC_DISCONNECT     BTH + DCETH
--   0xc5 BUNDLE_HELLO      BTH + version, largest bundle, nonce, padding
--   0xc6 BUNDLE_HELLO_REPLY BTH + version, largest bundle, nonce, HELLO
--                          length
--   0xc7 BUNDLE            BTH + count + count x (length, whole frame);
--                          no ICRC of its own
--
-- Wireshark's InfiniBand dissector decodes their BTH and shows the rest as
-- vendor data; this postdissector names the packet, decodes the headers
-- after the BTH (filter fields rdmasession.*), puts the name in the Info
-- column and flags a packet whose length does not fit its opcode.  Each
-- packet in a BUNDLE goes to Wireshark's Ethernet dissector as a frame of
-- its own, so filters and fields (infiniband.bth.opcode, ip.src, ...)
-- see every packet inside; a display filter still selects whole frames
-- (count the packets with -T fields: one value per packet).  A bundle
-- that the receiving adapter would drop is flagged: lengths past its end
-- or not filling it, a count below 2 (rdmasession.bad_length), a packet
-- in it that is not a RoCEv2 frame or is a BUNDLE, HELLO or REPLY
-- (rdmasession.bad_bundle).
--
-- Use: tshark -X lua_script:scripts/wireshark/rdma-session.lua -r FILE
-- or copy it into ~/.local/lib/wireshark/plugins/
-- (scripts/wireshark/install.sh).

local p = Proto("rdmasession", "rdma-session RoCEv2 extension")

local names = {
    [0xc0] = "PAUSE",
    [0xc1] = "RESUME",
    [0xc2] = "DC_CONNECT",
    [0xc3] = "DC_CONNECT_REPLY",
    [0xc4] = "DC_DISCONNECT",
    [0xc5] = "BUNDLE_HELLO",
    [0xc6] = "BUNDLE_HELLO_REPLY",
    [0xc7] = "BUNDLE",
}

-- Header bytes after the BTH, ICRC excluded.
local ext_len = {
    [0xc0] = 4, [0xc1] = 4, [0xc2] = 16, [0xc3] = 12, [0xc4] = 16,
    [0xc5] = 12, [0xc6] = 16,   -- a HELLO: at least, with its padding
}

local syndromes = {
    [0] = "ACK", [1] = "RNR NAK", [3] = "NAK",
}

local f = p.fields
f.opcode = ProtoField.uint8("rdmasession.opcode", "Opcode", base.HEX, names)
f.op = ProtoField.string("rdmasession.op", "Operation")
f.syndrome = ProtoField.uint8("rdmasession.aeth.syndrome", "AETH syndrome",
                              base.HEX)
f.kind = ProtoField.string("rdmasession.aeth.kind", "AETH kind")
f.rnr_timer = ProtoField.uint8("rdmasession.aeth.rnr_timer",
                               "RNR timer code", base.DEC, nil, 0x1f)
f.msn = ProtoField.uint24("rdmasession.aeth.msn", "MSN")
f.dc_key = ProtoField.uint64("rdmasession.dc.key", "DC access key", base.HEX)
f.dci_qpn = ProtoField.uint32("rdmasession.dc.dci_qpn", "DCI QPN", base.HEX)
f.conn = ProtoField.uint32("rdmasession.dc.connection", "Connection number")
f.ctx_qpn = ProtoField.uint32("rdmasession.dc.context_qpn", "Context QPN",
                              base.HEX)
f.b_version = ProtoField.uint16("rdmasession.bundle.version", "Version")
f.b_max = ProtoField.uint32("rdmasession.bundle.max", "Largest bundle accepted")
f.b_nonce = ProtoField.uint32("rdmasession.bundle.nonce", "Nonce", base.HEX)
f.b_hello_len = ProtoField.uint32("rdmasession.bundle.hello_len",
                                  "HELLO length received")
f.b_count = ProtoField.uint16("rdmasession.bundle.count", "Packets")
f.b_len = ProtoField.uint16("rdmasession.bundle.len", "Packet length")
f.b_op = ProtoField.uint8("rdmasession.bundle.opcode", "Packet BTH opcode",
                          base.HEX)
f.b_psn = ProtoField.uint24("rdmasession.bundle.psn", "Packet PSN")

local e_len = ProtoExpert.new("rdmasession.bad_length", "Length does not fit the opcode",
                              expert.group.MALFORMED, expert.severity.ERROR)
local e_qpn = ProtoExpert.new("rdmasession.bad_qpn", "QPN above 2^24 - 1",
                              expert.group.PROTOCOL, expert.severity.WARN)
local e_bundle = ProtoExpert.new("rdmasession.bad_bundle",
                                 "Packet in a bundle is not a RoCEv2 frame it may carry",
                                 expert.group.MALFORMED, expert.severity.ERROR)
p.experts = { e_len, e_qpn, e_bundle }

-- Each packet in a bundle goes to Wireshark's Ethernet dissector, so the
-- standard dissectors (IP, UDP, InfiniBand) decode it as if it had come
-- alone: infiniband.bth.* once per packet.
local eth = Dissector.get("eth_withoutfcs")

local bth_opcode = Field.new("infiniband.bth.opcode")
local udp_length = Field.new("udp.length")

local function aeth(tree, tvb, off)
    local syn = tvb(off, 1):uint()
    local kind = syndromes[bit.rshift(syn, 5)] or "reserved"
    tree:add(f.syndrome, tvb(off, 1))
    tree:add(f.kind, tvb(off, 1), kind)
    if kind == "RNR NAK" then
        tree:add(f.rnr_timer, tvb(off, 1))
    end
    tree:add(f.msn, tvb(off + 1, 3))
    return kind
end

local function qpn(tree, field, tvb, off)
    local it = tree:add(field, tvb(off, 4))
    if tvb(off, 1):uint() ~= 0 then
        it:add_proto_expert_info(e_qpn)
    end
end

-- The BTH offset, opcode and UDP payload length of the RoCEv2 frame that
-- fills tvb (a packet in a bundle), or nil if it is not one.
local function roce(tvb)
    local n = tvb:len()
    if n < 14 + 20 + 8 + 12 then
        return nil
    end
    local udp
    local etype = tvb(12, 2):uint()
    if etype == 0x0800 and tvb(23, 1):uint() == 17 then
        udp = 14 + bit.band(tvb(14, 1):uint(), 0x0f) * 4
    elseif etype == 0x86dd and n >= 14 + 40 + 8 + 12 and
            tvb(20, 1):uint() == 17 then
        udp = 14 + 40
    else
        return nil
    end
    if udp + 8 + 12 > n or tvb(udp + 2, 2):uint() ~= 4791 then
        return nil
    end
    return udp + 8, tvb(udp + 8, 1):uint(), tvb(udp + 4, 2):uint() - 8
end

local decode

-- The packets in a bundle: each length, then the packet as a frame of
-- its own (checked to fit: Wireshark's dissectors decode it, and this
-- one its extension headers).  Returns the count and an error, if any:
-- a length past the bundle's end, lengths that do not fill it exactly, a
-- count below 2, a packet that is not a RoCEv2 frame or is itself a
-- BUNDLE, HELLO or REPLY.
local function bundle(t, tvb, pinfo, off, avail)
    if avail < 4 then
        return 0, "no count"
    end
    local count = tvb(off, 2):uint()
    t:add(f.b_count, tvb(off, 2))
    local pos, last = off + 4, off + avail
    for k = 1, count do
        if pos + 2 > last then
            return count, string.format("%d packets, the bundle ends after %d",
                                        count, k - 1)
        end
        local len = tvb(pos, 2):uint()
        local sub = t:add(f.b_len, tvb(pos, 2))
        if len < 58 or pos + 2 + len > last then
            sub:add_proto_expert_info(e_len, string.format(
                "packet %d: %d bytes, %d left in the bundle", k, len,
                last - pos - 2))
            return count, string.format("packet %d does not fit", k)
        end
        local inner = tvb(pos + 2, len):tvb()
        local bth, op = roce(inner)
        if bth then
            if bth + 12 <= len then
                sub:add(f.b_op, inner(bth, 1))
                sub:add(f.b_psn, inner(bth + 9, 3))
            end
        end
        if eth then
            eth:call(inner, pinfo, sub)
        end
        if not bth or op == 0xc5 or op == 0xc6 or op == 0xc7 then
            sub:add_proto_expert_info(e_bundle, string.format(
                "packet %d: %s", k, bth and names[op] or "not RoCEv2"))
        elseif names[op] then
            local _, _, ulen = roce(inner)
            decode(sub, inner, pinfo, bth, math.min(len, bth + ulen) -
                   bth - 12)
        end
        pos = pos + 2 + len
    end
    if pos ~= last then
        return count, string.format("%d bytes after packet %d", last - pos,
                                    count)
    end
    if count < 2 then
        return count, string.format("a count of %d", count)
    end
    return count, nil
end

-- The extension packet whose BTH is at bth of tvb, avail bytes after the
-- BTH in its UDP datagram: its tree item and fields; returns the text for
-- the Info column.
decode = function(tree, tvb, pinfo, bth, avail)
    local op = tvb(bth, 1):uint()
    local name = names[op]
    local ext = bth + 12
    local t = tree:add(p, tvb(bth, math.max(0, math.min(tvb:len() - bth,
                                                         12 + avail))))
    t:add(f.opcode, tvb(bth, 1))
    t:add(f.op, tvb(bth, 1), name)
    local info = name
    if op == 0xc7 then
        -- No ICRC: the packets fill the UDP datagram.
        local count, err = bundle(t, tvb, pinfo, ext, avail)
        if err then
            t:add_proto_expert_info(e_len, "the packet lengths do not fill "
                                    .. "the bundle: " .. err)
        end
        info = string.format("%s %d packets, %d bytes", name, count,
                             tvb:len())
    elseif op == 0xc5 and avail >= 16 then
        t:add(f.b_version, tvb(ext, 2))
        t:add(f.b_max, tvb(ext + 4, 4))
        t:add(f.b_nonce, tvb(ext + 8, 4))
        info = string.format("%s v%d takes %d nonce 0x%08x, %d bytes",
                             name, tvb(ext, 2):uint(),
                             tvb(ext + 4, 4):uint(),
                             tvb(ext + 8, 4):uint(), tvb:len())
    elseif op == 0xc5 or avail ~= ext_len[op] + 4 then
        t:add_proto_expert_info(e_len, string.format(
            "%d bytes after the BTH, %d expected (headers and ICRC)",
            avail, ext_len[op] + 4))
    elseif op == 0xc0 or op == 0xc1 then
        local kind = aeth(t, tvb, ext)
        if kind == "RNR NAK" then
            kind = string.format("RNR NAK, timer %d",
                                 bit.band(tvb(ext, 1):uint(), 0x1f))
        end
        info = string.format("%s PSN %d (%s)", name,
                             tvb(bth + 9, 3):uint(), kind)
    elseif op == 0xc6 then
        t:add(f.b_version, tvb(ext, 2))
        t:add(f.b_max, tvb(ext + 4, 4))
        t:add(f.b_nonce, tvb(ext + 8, 4))
        t:add(f.b_hello_len, tvb(ext + 12, 4))
        info = string.format("%s v%d takes %d nonce 0x%08x HELLO %d",
                             name, tvb(ext, 2):uint(),
                             tvb(ext + 4, 4):uint(),
                             tvb(ext + 8, 4):uint(),
                             tvb(ext + 12, 4):uint())
    elseif op == 0xc2 or op == 0xc4 then
        t:add(f.dc_key, tvb(ext, 8))
        qpn(t, f.dci_qpn, tvb, ext + 8)
        t:add(f.conn, tvb(ext + 12, 4))
        info = string.format("%s QP 0x%06x key 0x%s DCI 0x%06x conn %d",
                             name, tvb(bth + 5, 3):uint(),
                             tvb(ext, 8):bytes():tohex():lower(),
                             tvb(ext + 8, 4):uint(),
                             tvb(ext + 12, 4):uint())
    else
        local kind = aeth(t, tvb, ext)
        qpn(t, f.ctx_qpn, tvb, ext + 4)
        t:add(f.conn, tvb(ext + 8, 4))
        info = string.format("%s DCI 0x%06x %s context 0x%06x conn %d",
                             name, tvb(bth + 5, 3):uint(), kind,
                             tvb(ext + 4, 4):uint(),
                             tvb(ext + 8, 4):uint())
    end
    return info
end

function p.dissector(tvb, pinfo, tree)
    -- (read before a bundle's packets add their own BTHs to the tree)
    local ops = { bth_opcode() }
    local lens = { udp_length() }
    for i, fi in ipairs(ops) do
        local op = fi.value
        if names[op] then
            -- The BTH's first byte is its opcode; the UDP datagram ends
            -- with the ICRC.
            local bth = fi.offset
            local avail = tvb:len() - bth - 12
            if lens[i] then
                avail = math.min(avail, lens[i].value - 8 - 12)
            end
            local info = decode(tree, tvb, pinfo, bth, avail)
            -- (the packets of a bundle wrote their own protocol and info)
            pinfo.cols.protocol:clear_fence()
            pinfo.cols.info:clear_fence()
            pinfo.cols.protocol = "RoCE rdma-session"
            pinfo.cols.info = info
        end
    end
end

register_postdissector(p, true)
