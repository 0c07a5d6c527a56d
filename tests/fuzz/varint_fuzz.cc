// Fuzzes varint and packet-number decoding: whatever decodes must re-encode to
// the same value, and nothing may read past the input.
#include <cstdint>
#include <cstdlib>
#include <span>

#include "quic/wire/packet_number.h"
#include "quic/wire/varint.h"

namespace {

void check(bool condition) {
  if (!condition) std::abort();
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace dpquic::wire;
  ByteReader reader(std::span<const uint8_t>(data, size));
  std::optional<uint64_t> largest;
  while (!reader.empty()) {
    const size_t before = reader.position();
    uint64_t value = 0;
    if (!reader.read_varint(value)) {
      check(reader.position() == before);
      check(varint_length_from_first_byte(data[before]) > size - before);
      break;
    }
    const size_t consumed = reader.position() - before;
    check(value <= kVarintMax);
    check(varint_length(value) <= consumed);
    uint8_t encoded[8];
    check(varint_encode_fixed(encoded, value, consumed));
    for (size_t i = 0; i < consumed; ++i) check(encoded[i] == data[before + i]);

    // Treat the value's low bits as a truncated packet number.
    const size_t length = 1 + (value & 3);
    const uint64_t truncated = (value >> 2) & ((uint64_t{1} << (8 * length)) - 1);
    const auto full = decode_packet_number(largest, truncated, length);
    // Past 2^62 - 1 there is no valid packet number to recover.
    if (!full) continue;
    check(*full <= kMaxPacketNumber);
    check((*full & ((uint64_t{1} << (8 * length)) - 1)) == truncated);
    if (!largest || *full > *largest) largest = full;
  }
  return 0;
}
