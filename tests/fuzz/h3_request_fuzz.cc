// Fuzzes the HTTP/3 request path: nghttp3 plus our H3Server handler, fed by
// our client endpoint's streams over an in-memory connection (real TLS, null
// packet protection; the QUIC layers only carry the bytes). The input plays
// the HTTP/3 client: a script of stream writes,
//   op u8 | length u16 (big-endian, at most 16384) | data
//   op bits 0-1: 0 = client bidirectional stream (requests), 1 =
//                unidirectional (control 0x00, QPACK encoder 0x02 / decoder
//                0x03, or anything else), 2 = reset, 3 = STOP_SENDING of the
//                stream named by bits 2-4 (bidirectional if bit 6 is clear)
//   op bits 2-4: which of the 8 streams of that kind (opened on first use)
//   op bit 5:    FIN after the data
// After each write both endpoints run (the server's events go to H3Server,
// then its pump), so responses flow back and are read and dropped.
#include <algorithm>
#include <array>
#include <cstdint>
#include <cstdlib>
#include <optional>
#include <span>

#include "dataplane/app/h3_server.h"
#include "quic/transmit/chunk.h"
#include "tests/fuzz/fuzz_pair.h"

namespace {

using namespace dpquic;

struct Script {
  std::span<const uint8_t> input;
  size_t position = 0;
  bool empty() const { return position >= input.size(); }
  uint8_t u8() { return position < input.size() ? input[position++] : 0; }
  std::span<const uint8_t> take(size_t n) {
    n = std::min(n, input.size() - position);
    const std::span<const uint8_t> piece = input.subspan(position, n);
    position += n;
    return piece;
  }
};

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  transmit::ChunkPool pool(16384, 32);
  fuzz::FuzzPair pair("h3");
  dataplane::H3ServerConfig config;
  config.chunk_size = 4096;
  config.chunk_count = 64;
  config.max_synthetic_bytes = 64 * 1024;
  config.max_buffers_per_response = 8;
  config.max_path_length = 1024;
  config.max_field_section_size = 16 * 1024;
  dataplane::H3Server server(pair.server(), config);
  pair.on_server_event = [&server](Instant now, const endpoint::EndpointEvent& event) {
    server.on_event(now, event);
  };
  pair.after_server_input = [&server](Instant now) { server.pump(now); };
  if (!pair.handshake()) std::abort();

  endpoint::Endpoint& client = pair.client();
  const endpoint::ConnectionHandle handle = pair.client_handle();
  std::array<std::optional<uint64_t>, 8> bidi, uni;
  Script script{{data, size}};
  for (int steps = 0; steps < 256 && !script.empty(); ++steps) {
    const uint8_t op = script.u8();
    // At most one pooled buffer per write.
    const size_t length = std::min<size_t>(size_t{script.u8()} << 8 | script.u8(), 16384);
    const std::span<const uint8_t> bytes = script.take(length);
    const size_t which = (op >> 2) & 7;
    const bool fin = (op & 0x20) != 0;
    conn::Connection* connection = client.connection(handle);
    if (connection == nullptr) break;  // closed (e.g. an HTTP/3 error)
    switch (op & 3) {
      case 0:
      case 1: {
        const bool bidirectional = (op & 3) == 0;
        std::optional<uint64_t>& stream = bidirectional ? bidi[which] : uni[which];
        if (!stream) {
          stream =
              client.open_stream(handle, bidirectional ? conn::StreamDirection::kBidirectional
                                                       : conn::StreamDirection::kUnidirectional);
          if (!stream) break;
        }
        client.send(handle, *stream, pool.copy_from(bytes), fin);
        break;
      }
      case 2:
      case 3: {
        const std::optional<uint64_t>& stream = (op & 0x40) ? uni[which] : bidi[which];
        if (!stream) break;
        if ((op & 3) == 2) {
          connection->reset_stream(*stream, 0x10c);  // H3_REQUEST_CANCELLED
        } else {
          connection->stop_sending(*stream, 0x10c);
        }
        client.wake(handle);
        break;
      }
    }
    pair.settle();
  }
  // Responses still in flight drain before the pool and the server go.
  pair.settle(64, 10 * kSecond, 16);
  pair.server().reset_connections();
  pair.client().reset_connections();
  return 0;
}
