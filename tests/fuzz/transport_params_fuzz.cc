// Fuzzes transport-parameter decoding as both roles. Whatever decodes must
// re-encode (no larger than the input, since encoding is minimal and drops
// unknown parameters) and decode back to an equal struct; whatever fails must
// fail with TRANSPORT_PARAMETER_ERROR and leave the defaults.
#include <array>
#include <cstdint>
#include <cstdlib>
#include <span>

#include "quic/wire/transport_params.h"

namespace {

void check(bool condition) {
  if (!condition) std::abort();
}

std::array<uint8_t, 1 << 16> g_buffer;

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace dpquic::wire;
  const std::span<const uint8_t> input(data, size);
  for (const auto sender : {Role::kClient, Role::kServer}) {
    TransportParameters decoded;
    const WireError error = decode_transport_parameters(input, sender, decoded);
    if (error != WireError::kOk) {
      check(error == WireError::kTransportParameterError);
      check(decoded == TransportParameters{});
      continue;
    }
    check(validate_transport_parameters(decoded, sender) == WireError::kOk);
    if (size > g_buffer.size()) continue;
    ByteWriter writer(g_buffer);
    check(encode_transport_parameters(decoded, sender, writer));
    check(writer.position() <= size);
    TransportParameters again;
    check(decode_transport_parameters(writer.written(), sender, again) == WireError::kOk);
    check(again == decoded);
  }
  return 0;
}
