-- oetp.lua: Wireshark dissector for the openENOC Ethernet Transport Protocol
-- v1 (oETP), raw Ethernet with EtherType 0x88B5.
--
-- Install: copy to ~/.local/lib/wireshark/plugins/ (Wireshark 4.0 or later),
-- or load once with:  wireshark -X lua_script:oetp.lua  /  tshark -X lua_script:oetp.lua
-- Use tshark -2 (two passes) to see "Response in" on request frames.
--
-- Frames follow the oETP v1 engine specification: Magic 0x0E, Cmd, then
-- little-endian four-byte parameters at frame offset 16 + 4(i-1). A frame is
-- valid at its exact logical length or, for a PDU shorter than 46 bytes,
-- padded to 60 bytes; the frame ceiling is 8192 bytes (without FCS).
-- EndOfData (0xE0D0E0D0, octets D0 E0 D0 E0) is read at its fixed position
-- after the rounded Data array; it is never searched for.
--
-- Written for Lua 5.2 (Wireshark 4.0) through 5.4: no 5.3 operators.

-- Wireshark 4.0 (Lua 5.2) provides bit and bit32; a build with neither
-- gets this arithmetic stand-in for the one use, band(octet, 1).
local bit = bit or bit32 or {
    band = function(a, b)
        local r, m = 0, 1
        while a > 0 and b > 0 do
            if a % 2 == 1 and b % 2 == 1 then r = r + m end
            a, b, m = math.floor(a / 2), math.floor(b / 2), m * 2
        end
        return r
    end,
}

local MAGIC = 0x0E
local EOD = 0xE0D0E0D0
local ETH_HDR = 14        -- untagged Ethernet header
local FRAME_MAX = 8192    -- frame ceiling without FCS
local PDU_MAX = FRAME_MAX - ETH_HDR
local MIN_PAYLOAD = 46    -- Ethernet minimum payload a MAC pads to (60-byte frame)
local MAX_FRAGMENT = 8160 -- common DMA fragment ceiling

local RMEM_READ_REQ, RMEM_READ_RSP = 0x10, 0x11
local RMEM_WRITE_REQ, RMEM_WRITE_RSP = 0x20, 0x21
local DMA_READ_REQ, DMA_READ_RSP = 0x30, 0x31
local DMA_WRITE_REQ, DMA_WRITE_RSP = 0x40, 0x41
local ERROR_RSP = 0xFF

local cmd_names = {
    [RMEM_READ_REQ] = "RMEM_READ_REQ", [RMEM_READ_RSP] = "RMEM_READ_RSP",
    [RMEM_WRITE_REQ] = "RMEM_WRITE_REQ", [RMEM_WRITE_RSP] = "RMEM_WRITE_RSP",
    [DMA_READ_REQ] = "DMA_READ_REQ", [DMA_READ_RSP] = "DMA_READ_RSP",
    [DMA_WRITE_REQ] = "DMA_WRITE_REQ", [DMA_WRITE_RSP] = "DMA_WRITE_RSP",
    [ERROR_RSP] = "ERROR_RSP",
}

local is_request = {
    [RMEM_READ_REQ] = true, [RMEM_WRITE_REQ] = true,
    [DMA_READ_REQ] = true, [DMA_WRITE_REQ] = true,
}

-- Parameter names in order, and the fixed PDU length (nil: depends on a
-- length). DMA Data arrays and EndOfData are handled separately.
local layouts = {
    [RMEM_READ_REQ] = { params = { "rid", "addr" }, pdu = 10 },
    [RMEM_READ_RSP] = { params = { "rid", "data" }, pdu = 10 },
    [RMEM_WRITE_REQ] = { params = { "rid", "addr", "bit_enable", "data" }, pdu = 18 },
    [RMEM_WRITE_RSP] = { params = { "rid" }, pdu = 6 },
    [DMA_READ_REQ] = { params = { "rid", "addr", "length" }, pdu = 14 },
    [DMA_READ_RSP] = { params = { "rid" } },
    [DMA_WRITE_REQ] = { params = { "rid", "addr", "length" } },
    [DMA_WRITE_RSP] = { params = { "rid" }, pdu = 6 },
    [ERROR_RSP] = { params = { "rid", "error_code" }, pdu = 10 },
}

local param_names = {
    rid = "Request ID", addr = "Address", length = "Length",
    bit_enable = "BitEnable", data = "Data", error_code = "Error Code",
}

-- ERROR_RSP wire causes 1..7.
local cause_names = {
    [1] = "invalid request, access or range",
    [2] = "length or EndOfData error",
    [3] = "overflow",
    [4] = "read SLVERR",
    [5] = "read DECERR",
    [6] = "write SLVERR",
    [7] = "write DECERR",
}

-- CSR error_code the initiator records for a received ERROR_RSP: 8 + cause
-- for causes 1..7, LOCAL_INVALID for any other value.
local csr_names = {
    [1] = "LOCAL_INVALID",
    [9] = "REMOTE_INVALID",
    [10] = "REMOTE_AXIS",
    [11] = "REMOTE_OVERFLOW",
    [12] = "REMOTE_AXI_RD_SLVERR",
    [13] = "REMOTE_AXI_RD_DECERR",
    [14] = "REMOTE_AXI_WR_SLVERR",
    [15] = "REMOTE_AXI_WR_DECERR",
}

local oetp = Proto("oetp", "openENOC Ethernet Transport Protocol")

local hf = {
    magic = ProtoField.uint8("oetp.magic", "Magic", base.HEX),
    cmd = ProtoField.uint8("oetp.cmd", "Cmd", base.HEX, cmd_names),
    rid = ProtoField.uint32("oetp.rid", "Request ID", base.HEX_DEC),
    addr = ProtoField.uint32("oetp.addr", "Address", base.HEX),
    length = ProtoField.uint32("oetp.length", "Length", base.DEC),
    bit_enable = ProtoField.uint32("oetp.bit_enable", "BitEnable", base.HEX),
    data = ProtoField.uint32("oetp.data", "Data", base.HEX),
    data_words = ProtoField.bytes("oetp.data_words", "Data words"),
    payload = ProtoField.bytes("oetp.payload", "Payload"),
    word_padding = ProtoField.bytes("oetp.word_padding", "Word padding"),
    eod = ProtoField.uint32("oetp.eod", "EndOfData", base.HEX),
    eod_ok = ProtoField.bool("oetp.eod_ok", "EndOfData good"),
    error_code = ProtoField.uint32("oetp.error_code", "Error Code", base.DEC, cause_names),
    error_csr = ProtoField.uint8("oetp.error_csr", "Initiator CSR error_code", base.DEC, csr_names),
    expected_length = ProtoField.uint32("oetp.expected_length", "Expected length", base.DEC),
    eth_padding = ProtoField.bytes("oetp.eth_padding", "Ethernet padding"),
    trailing = ProtoField.bytes("oetp.trailing", "Trailing bytes"),
    undecoded = ProtoField.bytes("oetp.undecoded", "Undecoded parameters"),
    group = ProtoField.bool("oetp.group", "Group destination (I/G bit)"),
    request_in = ProtoField.framenum("oetp.request_in", "Request in", base.NONE, frametype.REQUEST),
    response_in = ProtoField.framenum("oetp.response_in", "Response in", base.NONE, frametype.RESPONSE),
    time = ProtoField.relative_time("oetp.time", "Response time"),
}

local ef = {
    reserved_cmd = ProtoExpert.new("oetp.reserved_cmd", "Reserved Cmd",
        expert.group.MALFORMED, expert.severity.ERROR),
    short = ProtoExpert.new("oetp.short", "Too short for a Request ID",
        expert.group.MALFORMED, expert.severity.ERROR),
    too_long = ProtoExpert.new("oetp.too_long", "Frame exceeds the 8192-byte ceiling",
        expert.group.MALFORMED, expert.severity.ERROR),
    bad_length = ProtoExpert.new("oetp.bad_length", "Wrong frame length for the command",
        expert.group.MALFORMED, expert.severity.ERROR),
    bad_eod = ProtoExpert.new("oetp.bad_eod", "EndOfData missing or wrong at its fixed position",
        expert.group.MALFORMED, expert.severity.ERROR),
    unknown_length = ProtoExpert.new("oetp.unknown_length", "DMA_READ_RSP without a matching DMA_READ_REQ",
        expert.group.SEQUENCE, expert.severity.NOTE),
    duplicate = ProtoExpert.new("oetp.duplicate_response", "Duplicate response",
        expert.group.SEQUENCE, expert.severity.WARN),
    error_rsp = ProtoExpert.new("oetp.error_rsp", "Request failed (ERROR_RSP)",
        expert.group.RESPONSE_CODE, expert.severity.NOTE),
    bad_cause = ProtoExpert.new("oetp.bad_error_code", "Error Code outside 1..7",
        expert.group.PROTOCOL, expert.severity.WARN),
    group_dst = ProtoExpert.new("oetp.group_not_write", "Group destination on a command other than a write request",
        expert.group.PROTOCOL, expert.severity.WARN),
    group_src = ProtoExpert.new("oetp.group_source", "Group source MAC",
        expert.group.PROTOCOL, expert.severity.WARN),
    bad_dma_length = ProtoExpert.new("oetp.bad_dma_length", "DMA Length zero or above 8160",
        expert.group.PROTOCOL, expert.severity.WARN),
    unaligned = ProtoExpert.new("oetp.unaligned", "RMEM Address not word aligned",
        expert.group.PROTOCOL, expert.severity.WARN),
}

-- register gives proto the fields and the expert infos of two tables
-- keyed by name.
local function register(proto, field_table, expert_table)
    local fields, experts = {}, {}
    for _, v in pairs(field_table) do fields[#fields + 1] = v end
    for _, v in pairs(expert_table) do experts[#experts + 1] = v end
    proto.fields = fields
    proto.experts = experts
end

register(oetp, hf, ef)

local f_eth_dst = Field.new("eth.dst")
local f_eth_src = Field.new("eth.src")

-- Request/response pairing. requests maps "src/dst/rid" of each request to
-- its record; a later request with the same key (Request ID wrap or reset)
-- replaces it. frames holds what the first pass learnt about each frame
-- number, so later passes (pinfo.visited) only read it.
local requests, frames = {}, {}

function oetp.init()
    requests, frames = {}, {}
end

local function plural(n, word)
    if n == 1 then return "1 " .. word end
    return string.format("%d %ss", n, word)
end

local function hex32(v)
    return string.format("0x%08x", v)
end

local function ceil4(n)
    return math.floor((n + 3) / 4)
end

-- I/G bit (bit 0 of the first octet) of the innermost Ethernet address in
-- field, or nil when no tree is being built and the field is unavailable.
local function ig_bit(field)
    local all = { field() }
    local fi = all[#all]
    if fi and fi.range and fi.range:len() == 6 then
        return bit.band(fi.range:range(0, 1):uint(), 1) ~= 0
    end
    return nil
end

-- Time between two frames as an NSTime, from their times relative to the
-- first frame: small numbers, so exact to the nanosecond.
local function delta_time(from, to)
    local d = to - from
    local neg = d < 0
    if neg then d = -d end
    local secs = math.floor(d)
    local nsecs = math.floor((d - secs) * 1e9 + 0.5)
    if nsecs >= 1e9 then
        secs, nsecs = secs + 1, nsecs - 1e9
    end
    if neg then
        return NSTime.new(-secs, -nsecs)
    end
    return NSTime.new(secs, nsecs)
end

-- Offsets in messages: PDU offset (from Magic) and frame offset.
local function at(off)
    return string.format("frame offset %d, PDU offset %d", off + ETH_HDR, off)
end

-- Add a bytes field with its length after the value.
local function add_bytes(tree, field, range, note)
    local it = tree:add(field, range)
    it:append_text(string.format(" (%s%s)", plural(range:len(), "byte"), note or ""))
    return it
end

-- Dissect a rounded Data array of n meaningful bytes at PDU offset off and
-- EndOfData at its fixed position after it. plen is the PDU length on the
-- wire (padding included), caplen the part of it that was captured.
-- Returns the logical PDU end and whether EndOfData is good (nil when it
-- lies beyond the captured bytes).
local function dissect_data(tvb, tree, off, n, plen, caplen)
    local avail = math.min(plen, caplen)
    local words = ceil4(n)
    local dlen = 4 * words
    local have = math.max(0, math.min(dlen, avail - off))
    local label = string.format("Data: %s (%s)", plural(words, "word"), plural(dlen, "byte"))
    if have < dlen then
        label = label .. string.format(", %d present", have)
    end
    local dtree = tree:add(hf.data_words, tvb(math.min(off, avail), have))
    dtree:set_text(label)
    local pl = math.min(n, have)
    if pl > 0 then
        add_bytes(dtree, hf.payload, tvb(off, pl), pl < n and string.format(" of %d", n) or nil)
    end
    if have > n then
        add_bytes(dtree, hf.word_padding, tvb(off + n, have - n), ", ignored on receive")
    end

    local eo = off + dlen
    if eo + 4 <= avail then
        local r = tvb(eo, 4)
        local v = r:le_uint()
        local ok = v == EOD
        local it = tree:add_le(hf.eod, r)
        it:append_text(ok and " [good]" or " [bad]")
        it:add(hf.eod_ok, r, ok):set_generated()
        if not ok then
            it:add_proto_expert_info(ef.bad_eod, string.format(
                "EndOfData wrong at its fixed position (%s): %s, expected 0xe0d0e0d0", at(eo), hex32(v)))
        end
        return eo + 4, ok
    end
    if eo + 4 <= plen then
        -- Present on the wire, cut off by the capture's snapshot length.
        tree:add(tvb(avail, 0), string.format("EndOfData: not captured (%s)", at(eo)))
        return eo + 4, nil
    end
    local it = tree:add(hf.eod_ok, tvb(avail, 0), false)
    it:set_text(string.format("EndOfData: missing, the frame ends before %s", at(eo)))
    it:set_generated()
    it:add_proto_expert_info(ef.bad_eod, string.format(
        "EndOfData missing: the frame ends before its fixed position (%s)", at(eo)))
    return eo + 4, false
end

-- The reliable transport (docs/reliable.md): EtherType 0x88B5 with the
-- Discriminator 0xE1 where v1 has Magic 0x0E, a 20-byte transport header,
-- the unchanged v1 PDU (dissected by the v1 dissector above), and a CRC32C
-- trailer over the frame from the destination MAC through the body.
local REL_DISC = 0xE1
local REL_HDR = 20
local REL_TRAILER = 4
local REL_SYN_LEN = 8

local F_DATA, F_ACK, F_NAK, F_SYN, F_RST, F_RSP = 0x01, 0x02, 0x04, 0x08, 0x10, 0x20

local oetpr = Proto("oetpr", "oETP reliable transport")

local rf = {
    disc = ProtoField.uint8("oetpr.disc", "Discriminator", base.HEX),
    version = ProtoField.uint8("oetpr.version", "Version", base.DEC),
    flags = ProtoField.uint8("oetpr.flags", "Flags", base.HEX),
    f_data = ProtoField.bool("oetpr.flags.data", "DATA (a v1 PDU follows)", 8, nil, F_DATA),
    f_ack = ProtoField.bool("oetpr.flags.ack", "ACK (APSN and Credits valid)", 8, nil, F_ACK),
    f_nak = ProtoField.bool("oetpr.flags.nak", "NAK (resend from APSN)", 8, nil, F_NAK),
    f_syn = ProtoField.bool("oetpr.flags.syn", "SYN (open a session)", 8, nil, F_SYN),
    f_rst = ProtoField.bool("oetpr.flags.rst", "RST (no such session)", 8, nil, F_RST),
    f_rsp = ProtoField.bool("oetpr.flags.rsp", "RSP (from the responder side)", 8, nil, F_RSP),
    f_reserved = ProtoField.uint8("oetpr.flags.reserved", "Reserved", base.HEX, nil, 0xC0),
    reserved = ProtoField.uint8("oetpr.reserved", "Reserved octet", base.HEX),
    length = ProtoField.uint16("oetpr.length", "Length", base.DEC),
    session = ProtoField.uint32("oetpr.session", "Session", base.HEX),
    psn = ProtoField.uint32("oetpr.psn", "PSN", base.DEC),
    apsn = ProtoField.uint32("oetpr.apsn", "APSN", base.DEC),
    credits = ProtoField.uint16("oetpr.credits", "Credits", base.DEC),
    syn_depth = ProtoField.uint16("oetpr.syn.depth", "Depth", base.DEC),
    syn_cc = ProtoField.uint8("oetpr.syn.congestion", "Congestion control", base.DEC, { [1] = "AIMD" }),
    syn_max_frame = ProtoField.uint16("oetpr.syn.max_frame", "MaxFrame", base.DEC),
    crc = ProtoField.uint32("oetpr.crc", "CRC32C", base.HEX),
    crc_ok = ProtoField.bool("oetpr.crc_ok", "CRC32C good"),
    padding = ProtoField.bytes("oetpr.padding", "Ethernet padding"),
    trailing = ProtoField.bytes("oetpr.trailing", "Trailing bytes"),
}

local rex = {
    bad_crc = ProtoExpert.new("oetpr.bad_crc", "CRC32C mismatch: the receiver drops the frame silently",
        expert.group.CHECKSUM, expert.severity.ERROR),
    bad_version = ProtoExpert.new("oetpr.bad_version", "Unknown transport version",
        expert.group.MALFORMED, expert.severity.ERROR),
    bad_flags = ProtoExpert.new("oetpr.bad_flags", "Reserved or invalid flags",
        expert.group.MALFORMED, expert.severity.ERROR),
    bad_length = ProtoExpert.new("oetpr.bad_length", "Wrong frame length for the body",
        expert.group.MALFORMED, expert.severity.ERROR),
    too_long = ProtoExpert.new("oetpr.too_long", "Frame exceeds the 8192-byte ceiling",
        expert.group.MALFORMED, expert.severity.ERROR),
    nak = ProtoExpert.new("oetpr.nak", "NAK: a gap, resend from APSN",
        expert.group.SEQUENCE, expert.severity.NOTE),
    rst = ProtoExpert.new("oetpr.rst", "RST: the responder has no such session",
        expert.group.SEQUENCE, expert.severity.WARN),
}

register(oetpr, rf, rex)

-- CRC32C (Castagnoli, reflected polynomial 0x82F63B78) with bit32 (Lua
-- 5.2) or LuaBitOp's bit; without either the CRC is shown unverified.
local b32 = bit32 or (bit and bit.bxor and bit)
local crc_table

local function u32(x)
    if x < 0 then return x + 4294967296 end
    return x
end

local function crc_update(crc, bytes)
    if not crc_table then
        crc_table = {}
        for i = 0, 255 do
            local c = i
            for _ = 1, 8 do
                if b32.band(c, 1) ~= 0 then
                    c = b32.bxor(b32.rshift(c, 1), 0x82F63B78)
                else
                    c = b32.rshift(c, 1)
                end
            end
            crc_table[i] = c
        end
    end
    for i = 0, bytes:len() - 1 do
        crc = b32.bxor(b32.rshift(crc, 8), crc_table[b32.band(b32.bxor(crc, bytes:get_index(i)), 0xFF)])
    end
    return crc
end

-- The CRC32C of the Ethernet header (from the eth fields of this frame)
-- and tvb(0, n); nil when it cannot be computed.
local function frame_crc(tvb, n)
    if not b32 then return nil end
    local dst, src = { f_eth_dst() }, { f_eth_src() }
    dst, src = dst[#dst], src[#src]
    if not (dst and src and dst.range and src.range) then return nil end
    local crc = 0xFFFFFFFF
    crc = crc_update(crc, dst.range:bytes())
    crc = crc_update(crc, src.range:bytes())
    crc = crc_update(crc, ByteArray.new("88 b5"))
    crc = crc_update(crc, tvb(0, n):bytes())
    return u32(b32.bxor(crc, 0xFFFFFFFF))
end

local function flag_names(f)
    local names, out = { "DATA", "ACK", "NAK", "SYN", "RST", "RSP", "0x40", "0x80" }, {}
    local m = 1
    for i = 1, 8 do
        if math.floor(f / m) % 2 == 1 then out[#out + 1] = names[i] end
        m = m * 2
    end
    if #out == 0 then return "0" end
    return table.concat(out, "|")
end

local function valid_flags(f)
    if f >= 0x40 then return false end
    local has = function(m) return math.floor(f / m) % 2 == 1 end
    if has(F_SYN) then return f == F_SYN or f == F_SYN + F_ACK + F_RSP end
    if has(F_RST) then return f == F_RST + F_RSP end
    if has(F_NAK) then return f == F_ACK + F_NAK + F_RSP end
    if has(F_DATA) then return not has(F_RSP) or has(F_ACK) end
    return has(F_ACK)
end

local function dissect_reliable(tvb, pinfo, root)
    local plen = tvb:reported_len()
    local caplen = tvb:len()
    local avail = math.min(plen, caplen)
    pinfo.cols.protocol = "oETP-R"
    local tree = root:add(oetpr, tvb(0, math.min(avail, REL_HDR)))
    tree:add(rf.disc, tvb(0, 1))
    if avail < REL_HDR + REL_TRAILER then
        tree:add_proto_expert_info(rex.bad_length, string.format(
            "Runt: %d bytes after the EtherType, a header and trailer need %d", plen, REL_HDR + REL_TRAILER))
        pinfo.cols.info = "oETP-R [runt]"
        return plen
    end
    local version = tvb(1, 1):uint()
    local vi = tree:add(rf.version, tvb(1, 1))
    if version ~= 1 then
        vi:add_proto_expert_info(rex.bad_version, string.format("Version %d: only 1 is assigned; dropped", version))
        pinfo.cols.info = string.format("oETP-R version %d [bad version]", version)
        return plen
    end
    local flags = tvb(2, 1):uint()
    local ft = tree:add(rf.flags, tvb(2, 1))
    ft:append_text(" (" .. flag_names(flags) .. ")")
    for _, k in ipairs({ "f_data", "f_ack", "f_nak", "f_syn", "f_rst", "f_rsp", "f_reserved" }) do
        ft:add(rf[k], tvb(2, 1))
    end
    local ri = tree:add(rf.reserved, tvb(3, 1))
    local length = tvb(4, 2):le_uint()
    tree:add_le(rf.length, tvb(4, 2))
    local session = tvb(6, 4):le_uint()
    tree:add_le(rf.session, tvb(6, 4))
    local psn = tvb(10, 4):le_uint()
    tree:add_le(rf.psn, tvb(10, 4))
    local apsn = tvb(14, 4):le_uint()
    tree:add_le(rf.apsn, tvb(14, 4))
    local credits = tvb(18, 2):le_uint()
    tree:add_le(rf.credits, tvb(18, 2))
    local has = function(m) return math.floor(flags / m) % 2 == 1 end

    local info = { "oETP-R", flag_names(flags), string.format("Session=0x%08x", session) }
    if has(F_DATA) or has(F_SYN) or has(F_RST) then info[#info + 1] = string.format("PSN=%u", psn) end
    if has(F_ACK) then
        info[#info + 1] = string.format("APSN=%u", apsn)
        if has(F_RSP) then info[#info + 1] = string.format("Credits=%u", credits) end
    end
    local problems = {}
    if tvb(3, 1):uint() ~= 0 or not valid_flags(flags) then
        ft:add_proto_expert_info(rex.bad_flags, "Reserved or invalid flag combination: dropped")
        problems[#problems + 1] = "bad flags"
    end
    if has(F_NAK) then tree:add_proto_expert_info(rex.nak, string.format("NAK: resend from PSN %u", apsn)) end
    if has(F_RST) then tree:add_proto_expert_info(rex.rst, string.format("RST for session 0x%08x", session)) end
    if plen + ETH_HDR > FRAME_MAX then
        tree:add_proto_expert_info(rex.too_long, string.format("Frame of %d bytes exceeds the %d-byte ceiling", plen + ETH_HDR, FRAME_MAX))
        problems[#problems + 1] = "too long"
    end

    local want = REL_HDR + length + REL_TRAILER
    local padded = want + ETH_HDR < 60 and plen + ETH_HDR == 60
    local body_ok = (has(F_DATA) and length >= 6) or (has(F_SYN) and length == REL_SYN_LEN)
        or (not has(F_DATA) and not has(F_SYN) and length == 0)
    if not body_ok then
        tree:add_proto_expert_info(rex.bad_length, string.format(
            "Length %d does not suit the flags: DATA carries a v1 PDU of 6 bytes or more, SYN 8 bytes, other frames none",
            length))
    elseif plen ~= want and not padded then
        tree:add_proto_expert_info(rex.bad_length, string.format(
            "Wrong length: %d bytes after the EtherType, Length %d needs %d%s", plen, length, want,
            want + ETH_HDR < 60 and " (or 46, padded to a 60-byte frame)" or ""))
    end
    if (plen ~= want and not padded) or not body_ok then
        problems[#problems + 1] = "bad length"
        if #problems > 0 then
            for _, p in ipairs(problems) do info[#info + 1] = "[" .. p .. "]" end
        end
        pinfo.cols.info = table.concat(info, " ")
        return plen
    end
    if REL_HDR + length + REL_TRAILER > avail then
        pinfo.cols.info = table.concat(info, " ") .. " [not captured]"
        return plen
    end

    local cr = tvb(REL_HDR + length, REL_TRAILER)
    local got = cr:le_uint()
    local calc = frame_crc(tvb, REL_HDR + length)
    local ci = root:add_le(rf.crc, cr)
    if calc == nil then
        ci:append_text(" [unverified]")
    elseif calc == got then
        ci:append_text(" [good]")
        ci:add(rf.crc_ok, cr, true):set_generated()
    else
        ci:append_text(string.format(" [bad, computed 0x%08x]", calc))
        ci:add(rf.crc_ok, cr, false):set_generated()
        ci:add_proto_expert_info(rex.bad_crc, string.format(
            "CRC32C 0x%08x, computed 0x%08x: the receiver drops this frame silently and counts it", got, calc))
        problems[#problems + 1] = "bad CRC"
    end
    if padded and avail > want then
        root:add(rf.padding, tvb(want, avail - want)):append_text(", to a 60-byte frame, ignored")
    end

    local suffix = {}
    for _, p in ipairs(problems) do suffix[#suffix + 1] = "[" .. p .. "]" end
    if has(F_SYN) and length == REL_SYN_LEN then
        local st = tree:add(tvb(REL_HDR, REL_SYN_LEN), "SYN parameters")
        st:add_le(rf.syn_depth, tvb(REL_HDR, 2))
        st:add(rf.syn_cc, tvb(REL_HDR + 2, 1))
        st:add_le(rf.syn_max_frame, tvb(REL_HDR + 4, 2))
        info[#info + 1] = string.format("Depth=%u", tvb(REL_HDR, 2):le_uint())
    end
    local head = table.concat(info, " ")
    if has(F_DATA) then
        -- The unchanged v1 PDU.
        oetp.dissector(tvb(REL_HDR, length):tvb(), pinfo, root)
        pinfo.cols.protocol = "oETP-R"
        local inner = tostring(pinfo.cols.info)
        pinfo.cols.info = head .. " | " .. inner .. (#suffix > 0 and (" " .. table.concat(suffix, " ")) or "")
    else
        pinfo.cols.info = head .. (#suffix > 0 and (" " .. table.concat(suffix, " ")) or "")
    end
    return plen
end

function oetp.dissector(tvb, pinfo, root)
    local plen = tvb:reported_len()
    local caplen = tvb:len()
    -- Not oETP unless Magic matches: return 0 so the Ethertype dissector
    -- hands the frame to the data dissector, without an oETP tree.
    if caplen >= 1 and tvb(0, 1):uint() == REL_DISC then
        return dissect_reliable(tvb, pinfo, root)
    end
    if plen < 2 or caplen < 1 or tvb(0, 1):uint() ~= MAGIC then
        return 0
    end
    local avail = math.min(plen, caplen)

    pinfo.cols.protocol = "oETP"
    local tree = root:add(oetp, tvb())
    tree:add(hf.magic, tvb(0, 1))
    if caplen < 2 then
        return plen
    end

    local cmd = tvb(1, 1):uint()
    local cmd_item = tree:add(hf.cmd, tvb(1, 1))
    local name = cmd_names[cmd]
    local info = { name or string.format("Reserved Cmd 0x%02x", cmd) }
    local problems = {}

    local group = ig_bit(f_eth_dst)
    if group ~= nil then
        local g = tree:add(hf.group, group)
        g:set_generated()
        if not group then
            g:set_text("Destination: unicast (I/G bit 0)")
        elseif cmd == RMEM_WRITE_REQ or cmd == DMA_WRITE_REQ then
            g:set_text("Destination: group (I/G bit 1), no response expected")
            info[#info + 1] = "[group]"
        else
            g:set_text("Destination: group (I/G bit 1)")
            info[#info + 1] = "[group]"
            if name then
                g:add_proto_expert_info(ef.group_dst, is_request[cmd]
                    and "Group-addressed read request: receivers discard it without a response"
                    or "Response sent to a group address: responses go to the unicast initiator")
            end
        end
    end
    if ig_bit(f_eth_src) then
        tree:add_proto_expert_info(ef.group_src, "Source MAC has its group bit set: oETP sources are unicast")
    end

    if plen > PDU_MAX then
        tree:add_proto_expert_info(ef.too_long, string.format(
            "Frame of %d bytes exceeds the %d-byte ceiling", plen + ETH_HDR, FRAME_MAX))
        problems[#problems + 1] = "too long"
    end

    if not name then
        tree:append_text(string.format(", Reserved Cmd 0x%02x", cmd))
        cmd_item:append_text(" (reserved)")
        cmd_item:add_proto_expert_info(ef.reserved_cmd, string.format(
            "Reserved Cmd 0x%02x: not one of the nine assigned codes; the frame is discarded", cmd))
        if avail > 2 then
            add_bytes(tree, hf.undecoded, tvb(2, avail - 2))
        end
        pinfo.cols.info = table.concat(info, " ")
        return plen
    end
    tree:append_text(", " .. name)

    if plen < 6 then
        tree:add_proto_expert_info(ef.short, string.format(
            "%s with a %d-byte PDU is too short for a Request ID (6 bytes needed); the frame is discarded",
            name, plen))
        if avail > 2 then
            add_bytes(tree, hf.trailing, tvb(2, avail - 2))
        end
        info[#info + 1] = "[too short]"
        pinfo.cols.info = table.concat(info, " ")
        return plen
    end

    -- Fixed parameters, as far as they are present.
    local layout = layouts[cmd]
    local v, missing = {}, {}
    for i, p in ipairs(layout.params) do
        local off = 2 + 4 * (i - 1)
        if off + 4 <= avail then
            local r = tvb(off, 4)
            v[p] = r:le_uint()
            local it = tree:add_le(hf[p], r)
            if p == "error_code" then
                local cause = v[p]
                local csr = 1
                if cause_names[cause] then
                    csr = 8 + cause
                else
                    it:set_text(string.format("Error Code: %u (invalid: not a cause 1..7)", cause))
                    it:add_proto_expert_info(ef.bad_cause, string.format(
                        "Error Code %u is outside 1..7: the initiator records LOCAL_INVALID (1)", cause))
                end
                tree:add(hf.error_csr, r, csr):set_generated()
            end
        elseif off + 4 <= plen then
            missing[#missing + 1] = param_names[p] .. " (not captured)"
        else
            missing[#missing + 1] = param_names[p]
        end
    end
    tree:append_text(string.format(", Request ID %u", v.rid))
    info[#info + 1] = string.format("RID=%u", v.rid)
    if v.addr then info[#info + 1] = "Addr=" .. hex32(v.addr) end
    if v.length then info[#info + 1] = string.format("Len=%u", v.length) end
    if v.bit_enable then info[#info + 1] = "BitEnable=" .. hex32(v.bit_enable) end
    if v.data then info[#info + 1] = "Data=" .. hex32(v.data) end
    if v.error_code then
        local cause = v.error_code
        info[#info + 1] = string.format("Cause=%u (%s)", cause, cause_names[cause] or "invalid")
        tree:add_proto_expert_info(ef.error_rsp, cause_names[cause]
            and string.format("Request %u failed: cause %u, %s (initiator records %s)",
                v.rid, cause, cause_names[cause], csr_names[8 + cause])
            or string.format("Request %u failed: invalid Error Code %u (initiator records LOCAL_INVALID)",
                v.rid, cause))
    end

    if v.addr and (cmd == RMEM_READ_REQ or cmd == RMEM_WRITE_REQ) and v.addr % 4 ~= 0 then
        tree:add_proto_expert_info(ef.unaligned, string.format(
            "RMEM Address %s is not word aligned: the responder rejects it", hex32(v.addr)))
    end
    if v.length and (v.length == 0 or v.length > MAX_FRAGMENT) then
        tree:add_proto_expert_info(ef.bad_dma_length, string.format(
            "Length %u: DMA lengths are 1..%d bytes; the responder rejects it", v.length, MAX_FRAGMENT))
    end

    -- Request/response pairing: by Request ID, the MAC pair (request
    -- src/dst = response dst/src) and the response command. The first pass
    -- records; later passes only read.
    local rec = frames[pinfo.number]
    if not pinfo.visited then
        rec = rec or {}
        frames[pinfo.number] = rec
        local src, dst = tostring(pinfo.dl_src), tostring(pinfo.dl_dst)
        if is_request[cmd] then
            requests[src .. "/" .. dst .. "/" .. v.rid] = {
                frame = pinfo.number, cmd = cmd, length = v.length, ts = pinfo.rel_ts,
            }
        else
            local req = requests[dst .. "/" .. src .. "/" .. v.rid]
            if req and req.frame < pinfo.number and (cmd == ERROR_RSP or cmd == req.cmd + 1) then
                rec.request_in = req.frame
                rec.time = delta_time(req.ts, pinfo.rel_ts)
                if cmd == DMA_READ_RSP then
                    rec.expected = req.length
                end
                local rrec = frames[req.frame]
                if rrec.response_in then
                    rec.duplicate_of = rrec.response_in
                else
                    rrec.response_in = pinfo.number
                end
            end
        end
    end
    rec = rec or {}

    -- Logical PDU length, Data and EndOfData.
    local pdu = layout.pdu
    local eod_ok
    if cmd == DMA_WRITE_REQ then
        if v.length then
            pdu, eod_ok = dissect_data(tvb, tree, 14, v.length, plen, caplen)
        else
            tree:add_proto_expert_info(ef.bad_length, string.format(
                "Wrong length for DMA_WRITE_REQ: a %d-byte PDU (frame %d) is truncated, missing %s",
                plen, plen + ETH_HDR, table.concat(missing, ", ")))
            problems[#problems + 1] = "bad length"
        end
    elseif cmd == DMA_READ_RSP then
        if rec.expected then
            tree:add(hf.expected_length, rec.expected):set_generated():append_text(
                string.format(" (Length of the DMA_READ_REQ in frame %u)", rec.request_in))
            info[#info + 1] = string.format("Len=%u", rec.expected)
            pdu, eod_ok = dissect_data(tvb, tree, 6, rec.expected, plen, caplen)
        else
            if avail > 6 then
                tree:add(hf.data_words, tvb(6, avail - 6)):set_text(string.format(
                    "Data words: %s, unknown expected length (EndOfData not checked)", plural(avail - 6, "byte")))
            end
            tree:add_proto_expert_info(ef.unknown_length,
                "No matching DMA_READ_REQ in this capture: expected length unknown, length and EndOfData not checked")
            info[#info + 1] = "Len=?"
        end
    end
    if eod_ok == false then
        problems[#problems + 1] = "bad EndOfData"
    end

    if pdu then
        local padded = pdu < MIN_PAYLOAD and plen == MIN_PAYLOAD
        if plen == pdu or padded then
            if padded and avail > pdu then
                add_bytes(tree, hf.eth_padding, tvb(pdu, avail - pdu), ", to a 60-byte frame, ignored")
            end
        else
            local expected = string.format("%d (frame %d)", pdu, pdu + ETH_HDR)
            if pdu < MIN_PAYLOAD then
                expected = expected .. " or 46 (frame 60, padded)"
            end
            local why = plen < pdu and "truncated" or "trailing bytes"
            if #missing > 0 then
                why = why .. ", missing " .. table.concat(missing, ", ")
            end
            tree:add_proto_expert_info(ef.bad_length, string.format(
                "Wrong length for %s: PDU %d bytes (frame %d), expected %s: %s",
                name, plen, plen + ETH_HDR, expected, why))
            if avail > pdu then
                add_bytes(tree, hf.trailing, tvb(pdu, avail - pdu), ", not Ethernet padding to 60 bytes")
            end
            problems[#problems + 1] = "bad length"
        end
    end

    if rec.response_in then
        tree:add(hf.response_in, rec.response_in):set_generated()
    end
    if rec.request_in then
        tree:add(hf.request_in, rec.request_in):set_generated()
        tree:add(hf.time, rec.time):set_generated()
        if rec.duplicate_of then
            tree:add_proto_expert_info(ef.duplicate, string.format(
                "Request in frame %u was already answered in frame %u; the initiator discards this reply",
                rec.request_in, rec.duplicate_of))
        end
    end

    for _, p in ipairs(problems) do
        info[#info + 1] = "[" .. p .. "]"
    end
    pinfo.cols.info = table.concat(info, " ")
    return plen
end

DissectorTable.get("ethertype"):add(0x88B5, oetp)
