"""Encodings shared by the seed writers (make_endpoint_seeds.py, make_h3_seeds.py)."""
import struct


def varint(v):
    """A QUIC variable-length integer (RFC 9000 §16), in its shortest form."""
    if v < 0x40:
        return bytes([v])
    if v < 0x4000:
        return struct.pack(">H", 0x4000 | v)
    if v < 0x40000000:
        return struct.pack(">I", 0x80000000 | v)
    return struct.pack(">Q", 0xC000000000000000 | v)
