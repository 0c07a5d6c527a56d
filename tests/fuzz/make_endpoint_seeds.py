#!/usr/bin/env python3
"""Writes the crafted seeds of the endpoint fuzz targets (tests/fuzz/corpus/endpoint_*).

Packets are plaintext under the null packet protection of the fuzz targets
(tests/fuzz/null_packet_protection.h): header with the packet number in the
clear, frames, then a 16-byte all-zero tag. Connection IDs are taken from the
captured seeds (tests/fuzz/endpoint_seed_capture.cc), which use the targets'
fixed random seeds. Run from the repository root after the capture:
    python3 tests/fuzz/make_endpoint_seeds.py
"""
import os
import struct

from seed_encoding import varint

ROOT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "corpus")
TAG = bytes(16)
MARKER = b"QDGM"
ALT_PATH = b"QPTH"  # a datagram from another address of the peer
V1 = 0x00000001
V2 = 0x6B3343CF


def read(target, name):
    with open(os.path.join(ROOT, target, name), "rb") as f:
        return f.read()


def frames_padded(payload, pn_len):
    # The header protection sample needs 4 + 16 bytes after the packet number
    # field starts; pad with PADDING frames (zeros) when short.
    need = 4 + 16 - pn_len - len(TAG)
    if len(payload) < need:
        payload += bytes(need - len(payload))
    return payload


def short(dcid, pn, payload, key_phase=0, pn_len=2):
    first = 0x40 | (key_phase << 2) | (pn_len - 1)
    return bytes([first]) + dcid + pn.to_bytes(pn_len, "big") + frames_padded(payload, pn_len) + TAG


LONG_TYPES = {  # v1 codes; v2 rotates them (RFC 9369 §3.2)
    "initial": (0, 1), "0rtt": (1, 2), "handshake": (2, 3), "retry": (3, 0)}


def long(kind, version, dcid, scid, pn, payload, token=b"", pn_len=2, min_size=0):
    code = LONG_TYPES[kind][0 if version == V1 else 1]
    first = 0xC0 | (code << 4) | (pn_len - 1)
    payload = frames_padded(payload, pn_len)
    head = bytes([first]) + struct.pack(">I", version) + bytes([len(dcid)]) + dcid
    head += bytes([len(scid)]) + scid
    if kind == "initial":
        head += varint(len(token)) + token
    body_len = pn_len + len(payload) + len(TAG)
    if min_size:
        # Grow the payload with PADDING until the packet reaches min_size.
        while len(head) + len(varint(body_len)) + body_len < min_size:
            payload += b"\x00"
            body_len += 1
    return head + varint(body_len) + pn.to_bytes(pn_len, "big") + payload + TAG


def write(target, name, datagrams):
    d = os.path.join(ROOT, target)
    os.makedirs(d, exist_ok=True)
    with open(os.path.join(d, "crafted_" + name), "wb") as f:
        f.write(MARKER.join(datagrams))


def write_each(target, name, datagrams):
    # One seed per datagram as well: a frame that closes the connection
    # (rightly) must not hide the others from the fuzzer.
    write(target, name, datagrams)
    if len(datagrams) > 1:
        for i, datagram in enumerate(datagrams):
            write(target, f"{name}_{i}", [datagram])


# Frames (RFC 9000 §19).
PING = b"\x01"
def ack(largest, first_range=0, delay=0, ecn=None):
    f = (b"\x03" if ecn else b"\x02") + varint(largest) + varint(delay) + varint(0) + varint(first_range)
    if ecn:
        f += b"".join(varint(x) for x in ecn)
    return f
def ack_ranges(largest, ranges):
    f = b"\x02" + varint(largest) + varint(0) + varint(len(ranges) - 1) + varint(ranges[0])
    for gap, length in ranges[1:]:
        f += varint(gap) + varint(length)
    return f
def stream(sid, data, offset=0, fin=False, explicit_len=True):
    t = 0x08 | (0x04 if offset else 0) | (0x02 if explicit_len else 0) | (0x01 if fin else 0)
    f = bytes([t]) + varint(sid) + (varint(offset) if offset else b"")
    return f + (varint(len(data)) if explicit_len else b"") + data
def crypto(offset, data): return b"\x06" + varint(offset) + varint(len(data)) + data
def reset_stream(sid, code, final): return b"\x04" + varint(sid) + varint(code) + varint(final)
def stop_sending(sid, code): return b"\x05" + varint(sid) + varint(code)
def new_token(token): return b"\x07" + varint(len(token)) + token
def max_data(v): return b"\x10" + varint(v)
def max_stream_data(sid, v): return b"\x11" + varint(sid) + varint(v)
def max_streams(bidi, v): return (b"\x12" if bidi else b"\x13") + varint(v)
def data_blocked(v): return b"\x14" + varint(v)
def stream_data_blocked(sid, v): return b"\x15" + varint(sid) + varint(v)
def streams_blocked(bidi, v): return (b"\x16" if bidi else b"\x17") + varint(v)
def new_cid(seq, retire, cid, token=b"\x77" * 16):
    return b"\x18" + varint(seq) + varint(retire) + bytes([len(cid)]) + cid + token
def retire_cid(seq): return b"\x19" + varint(seq)
def path_challenge(data): return b"\x1a" + data
def path_response(data): return b"\x1b" + data
def close_transport(code, frame_type, reason):
    return b"\x1c" + varint(code) + varint(frame_type) + varint(len(reason)) + reason
def close_app(code, reason): return b"\x1d" + varint(code) + varint(len(reason)) + reason
HANDSHAKE_DONE = b"\x1e"
def datagram(data, with_len=True): return (b"\x31" + varint(len(data)) if with_len else b"\x30") + data


def main():
    client_initial = read("endpoint_server_initial", "captured_client_initial")
    # Client Initial: c0 | version | dcid len | dcid | scid len | scid ...
    n = client_initial[5]
    original_dcid = client_initial[6:6 + n]
    m = client_initial[6 + n]
    client_cid = client_initial[7 + n:7 + n + m]
    server_stream = read("endpoint_server_established", "captured_client_streams")
    server_cid = server_stream[1:1 + len(client_cid)]
    assert read("endpoint_client_established", "captured_server_streams")[1:1 + len(client_cid)] == client_cid

    # --- Established server: client -> server 1-RTT packets -------------------
    S = "endpoint_server_established"
    pn = [0x400]
    def c(payload, **kw):
        pn[0] += 1
        return short(server_cid, pn[0], payload, **kw)
    other_cid = bytes(range(0xA0, 0xB0))
    write_each(S, "transport_frames", [
        c(PING + ack(2)),
        c(max_data(1 << 20) + max_stream_data(0, 1 << 18) + max_streams(True, 200) + max_streams(False, 50)),
        c(data_blocked(4096) + stream_data_blocked(0, 100) + streams_blocked(True, 100) + streams_blocked(False, 3)),
        c(new_cid(1, 0, other_cid) + new_cid(2, 1, bytes(range(0xB0, 0xC0)))),
        c(retire_cid(1) + retire_cid(0)),
        c(path_challenge(b"12345678") + path_response(b"abcdefgh")),
    ])
    write_each(S, "streams", [
        c(stream(0, b"hello ") + stream(0, b"world", offset=6, fin=True)),
        c(stream(4, b"tail", offset=100) + stream(4, b"x" * 100) + stream(4, b"", offset=104, fin=True)),
        c(stream(2, b"uni stream data") + reset_stream(2, 0x55, 15)),
        c(stop_sending(0, 0x66) + stream(8, b"no length at the end", explicit_len=False)),
    ])
    write_each(S, "ack_ranges", [
        c(ack_ranges(20, [1, (2, 3), (0, 1)])),
        c(ack(3, ecn=(1, 0, 1))),
        c(ack(1 << 40)),
    ])
    write(S, "protocol_violations", [
        c(new_token(b"not from a client")),
        c(HANDSHAKE_DONE),
    ])
    write(S, "unknown_frame", [c(b"\x40\x21" + b"\x00" * 4)])
    write(S, "crypto_1rtt", [c(crypto(0, b"\x04\x00\x00\x00"))])
    write(S, "datagram_frames", [c(datagram(b"dgram") + datagram(b"rest", with_len=False))])
    write(S, "close_transport", [c(close_transport(0x0a, 0x08, b"protocol violation"))])
    write(S, "close_application", [c(close_app(0x100, b"app said no"))])
    write(S, "key_phase_flip", [c(PING, key_phase=1), c(PING + ack(2), key_phase=1), c(PING, key_phase=0)])
    write(S, "migration", [
        ALT_PATH + c(PING + path_challenge(b"migrate!")),
        ALT_PATH + c(stream(0, b"from the new path")),
        c(path_response(b"00000000")),
    ])
    write(S, "unknown_cid_reset", [short(bytes(16), 1, PING) + bytes(30)])
    write(S, "coalesced_handshake_after", [
        long("handshake", V2, server_cid, client_cid, 9, PING) + c(PING)])

    # --- Established client: server -> client 1-RTT packets -------------------
    C = "endpoint_client_established"
    spn = [0x400]
    def s(payload, **kw):
        spn[0] += 1
        return short(client_cid, spn[0], payload, **kw)
    write_each(C, "transport_frames", [
        s(PING + ack(2) + HANDSHAKE_DONE),
        s(new_token(b"\x01" * 40) + max_data(1 << 21) + max_streams(True, 1000)),
        s(new_cid(3, 1, other_cid) + retire_cid(0)),
        s(path_challenge(b"chalenge") + data_blocked(1000)),
    ])
    write_each(C, "streams", [
        s(stream(1, b"server bidi") + stream(3, b"server uni", fin=True)),
        s(stream(0, b"response to nothing", fin=True)),
        s(reset_stream(1, 7, 11) + stop_sending(0, 8)),
    ])
    write(C, "crypto_new_session_ticket", [s(crypto(0, b"\x04\x00\x00\x08" + b"\x00" * 8))])
    write(C, "close_transport", [s(close_transport(0x03, 0, b"flow"))])
    write(C, "key_phase_flip", [s(PING, key_phase=1), s(PING, key_phase=1)])
    write(C, "preferred_address_path", [ALT_PATH + s(PING + path_challenge(b"from alt"))])
    write(C, "stateless_reset", [bytes([0x41]) + bytes(range(40)) + b"\x77" * 16])

    # --- Fresh server: one datagram from a client ------------------------------
    I = "endpoint_server_initial"
    ch = crypto(0, b"\x01\x00\x00\x04\x03\x03\x00\x00")  # a truncated ClientHello
    write(I, "initial_ping_padding", [long("initial", V1, original_dcid, client_cid, 0, PING, min_size=1200)])
    write(I, "initial_bad_client_hello", [long("initial", V1, original_dcid, client_cid, 0, ch, min_size=1200)])
    write(I, "initial_close", [long("initial", V1, original_dcid, client_cid, 0,
                                    close_transport(0x0a, 0, b"x"), min_size=1200)])
    write(I, "initial_ack_first", [long("initial", V1, original_dcid, client_cid, 0, ack(5) + ch, min_size=1200)])
    write(I, "initial_v2", [long("initial", V2, original_dcid, client_cid, 0, ch, min_size=1200)])
    write(I, "initial_token", [long("initial", V1, original_dcid, client_cid, 0, ch, token=b"T" * 40, min_size=1200)])
    write(I, "initial_small", [long("initial", V1, original_dcid, client_cid, 0, ch)])
    write(I, "zero_rtt_first", [long("0rtt", V1, original_dcid, client_cid, 0, stream(0, b"early"), min_size=1200)])
    write(I, "unknown_version", [bytes([0xC0]) + struct.pack(">I", 0x1A2A3A4A) + bytes([8]) + bytes(8) + bytes([8]) + bytes(8) + bytes(1200)])
    write(I, "short_unknown_cid", [short(bytes(range(16)), 0, PING) + bytes(40)])
    write(I, "coalesced_initial_0rtt", [
        long("initial", V1, original_dcid, client_cid, 0, ch) +
        long("0rtt", V1, original_dcid, client_cid, 1, stream(0, b"early data", fin=True), min_size=1000)])

    # --- Fresh client (first Initial sent): one datagram from the server --------
    K = "endpoint_client_initial"
    sh = crypto(0, b"\x02\x00\x00\x04\x03\x03\x00\x00")  # a truncated ServerHello
    write(K, "initial_server_hello", [long("initial", V1, client_cid, server_cid, 0, ack(0) + sh)])
    write(K, "initial_close", [long("initial", V1, client_cid, server_cid, 0, close_transport(0x02, 0, b"refused"))])
    write(K, "handshake_before_initial", [long("handshake", V1, client_cid, server_cid, 0, crypto(0, b"\x08\x00\x00\x02\x00\x00"))])
    retry = bytes([0xF0]) + struct.pack(">I", V1) + bytes([len(client_cid)]) + client_cid
    retry += bytes([len(server_cid)]) + server_cid + b"retry token bytes" + TAG
    write(K, "retry_null_tag", [retry])
    vn = bytes([0x80]) + struct.pack(">I", 0) + bytes([len(client_cid)]) + client_cid
    vn += bytes([len(original_dcid)]) + original_dcid + struct.pack(">II", 0x1A2A3A4A, V2)
    write(K, "version_negotiation", [vn])
    write(K, "stateless_reset_shape", [bytes([0x43]) + bytes(range(30)) + b"\x55" * 16])


if __name__ == "__main__":
    main()
