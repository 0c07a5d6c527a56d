#!/usr/bin/env python3
"""Writes the seeds of h3_request_fuzz (tests/fuzz/corpus/h3_request).

A seed is a script of client stream writes (see tests/fuzz/h3_request_fuzz.cc):
op u8 | length u16 | data. HTTP/3 frames (RFC 9114 §7) and QPACK field
sections (RFC 9204) with static-table references and literals only.
    python3 tests/fuzz/make_h3_seeds.py
"""
import os
import struct

from seed_encoding import varint

OUT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "corpus", "h3_request")


def prefixed_int(value, prefix_bits, flags):
    """HPACK/QPACK integer with an N-bit prefix; `flags` fills the bits above it."""
    limit = (1 << prefix_bits) - 1
    if value < limit:
        return bytes([flags | value])
    out = [flags | limit]
    value -= limit
    while value >= 128:
        out.append(0x80 | (value & 0x7F))
        value >>= 7
    out.append(value)
    return bytes(out)


def indexed(static_index):
    return prefixed_int(static_index, 6, 0xC0)


def literal_name_ref(static_index, value):
    return prefixed_int(static_index, 4, 0x50) + prefixed_int(len(value), 7, 0x00) + value


def literal(name, value):
    return prefixed_int(len(name), 3, 0x20) + name + prefixed_int(len(value), 7, 0x00) + value


def field_section(*lines):
    return b"\x00\x00" + b"".join(lines)  # Required Insert Count 0, Base 0


def frame(frame_type, payload):
    return varint(frame_type) + varint(len(payload)) + payload


def headers(*lines):
    return frame(0x01, field_section(*lines))


def data(payload):
    return frame(0x00, payload)


GET, HEAD, POST, PUT = indexed(17), indexed(18), indexed(20), indexed(21)
HTTPS = indexed(23)
AUTHORITY = literal_name_ref(0, b"localhost")


def path(p):
    return literal_name_ref(1, p)


CONTROL = frame(0x04, varint(0x01) + varint(4096) + varint(0x07) + varint(16) + varint(0x21) + varint(1))
CONTROL_STREAM = b"\x00" + CONTROL
ENCODER_STREAM = b"\x02"
DECODER_STREAM = b"\x03"


def write_op(kind, which, payload=b"", fin=False, uni_target=False):
    op = kind | (which << 2) | (0x20 if fin else 0) | (0x40 if uni_target else 0)
    return bytes([op]) + struct.pack(">H", len(payload)) + payload


def bidi(which, payload, fin=True):
    return write_op(0, which, payload, fin)


def uni(which, payload, fin=False):
    return write_op(1, which, payload, fin)


def reset(which):
    return write_op(2, which)


def stop(which):
    return write_op(3, which)


def get(p, method=GET, *extra):
    return headers(method, HTTPS, AUTHORITY, path(p), *extra)


SETUP = uni(0, CONTROL_STREAM) + uni(1, ENCODER_STREAM) + uni(2, DECODER_STREAM)

SEEDS = {
    "get_root": SETUP + bidi(0, get(b"/")),
    "get_synthetic": SETUP + bidi(0, get(b"/1000")),
    "get_large_synthetic": SETUP + bidi(0, get(b"/60000")),
    "get_too_large": SETUP + bidi(0, get(b"/999999999")),
    "head": SETUP + bidi(0, get(b"/200", HEAD)),
    "post_with_body": SETUP + bidi(0, get(b"/5", POST) + data(b"body bytes")),
    "put_405": SETUP + bidi(0, get(b"/5", PUT)),
    "not_found": SETUP + bidi(0, get(b"/nothing/here")),
    "long_path": SETUP + bidi(0, get(b"/" + b"a" * 1100)),
    "extra_headers": SETUP + bidi(0, get(b"/10", GET, literal(b"user-agent", b"fuzz/1.0"),
                                      indexed(31), literal(b"x-empty", b""))),
    "pipelined": SETUP + bidi(0, get(b"/1")) + bidi(1, get(b"/2")) + bidi(2, get(b"/3", HEAD)),
    "split_headers": SETUP + bidi(0, get(b"/64")[:7], fin=False) + bidi(0, get(b"/64")[7:]),
    "no_control_stream": bidi(0, get(b"/7")),
    "reset_request": SETUP + bidi(0, get(b"/50000"), fin=False) + reset(0),
    "stop_sending": SETUP + bidi(0, get(b"/50000")) + stop(0),
    "data_before_headers": SETUP + bidi(0, data(b"x") + get(b"/1")),
    "missing_pseudo_headers": SETUP + bidi(0, headers(GET, AUTHORITY)),
    "uppercase_header": SETUP + bidi(0, get(b"/1", GET, literal(b"X-Upper", b"v"))),
    "dynamic_reference": SETUP + bidi(0, frame(0x01, b"\x02\x00" + b"\x80")),
    "trailers": SETUP + bidi(0, get(b"/1", POST) + data(b"abc") + headers(literal(b"x-trailer", b"t"))),
    "reserved_frames": SETUP + bidi(0, frame(0x21, b"grease") + get(b"/3")),
    "settings_twice": uni(0, CONTROL_STREAM + CONTROL) + bidi(0, get(b"/1")),
    "control_closed": uni(0, CONTROL_STREAM, fin=True) + bidi(0, get(b"/1")),
    "push_promise_from_client": SETUP + bidi(0, frame(0x05, varint(0) + field_section(GET))),
    "goaway": SETUP + uni(0, frame(0x07, varint(0))) + bidi(0, get(b"/1")),
    "unknown_uni_stream": uni(3, b"\x54" + b"whatever") + SETUP + bidi(0, get(b"/1")),
    "qpack_encoder_insert": SETUP + uni(1, b"\x3f\x61" + b"\xc0\x00") + bidi(0, get(b"/1")),
    "headers_on_control": uni(0, b"\x00" + get(b"/1")),
}


def main():
    os.makedirs(OUT, exist_ok=True)
    for name, script in SEEDS.items():
        with open(os.path.join(OUT, name), "wb") as f:
            f.write(script)
    print(f"{len(SEEDS)} seeds in {OUT}")


if __name__ == "__main__":
    main()
