// Writes the captured seeds of the endpoint fuzz targets: the plaintext
// datagrams (null packet protection) of real in-memory exchanges between our
// client and server, on the fixed seeds the targets use.
//   bazel run //tests/fuzz:endpoint_seed_capture -- $PWD/tests/fuzz/corpus
// Seeds of the established targets are datagrams joined by "QDGM". Crafted
// seeds (tests/fuzz/make_endpoint_seeds.py) are built on the CIDs these
// captures show.
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <string>
#include <string_view>
#include <vector>

#include "quic/transmit/chunk.h"
#include "tests/fuzz/fuzz_pair.h"

namespace dpquic::fuzz {
namespace {

using Datagrams = std::vector<std::vector<uint8_t>>;

std::filesystem::path g_root;

void write(const std::string& target, const std::string& name, const Datagrams& datagrams) {
  if (datagrams.empty()) {
    std::fprintf(stderr, "capture: %s/%s: nothing captured\n", target.c_str(), name.c_str());
    std::exit(1);
  }
  const std::filesystem::path dir = g_root / target;
  std::filesystem::create_directories(dir);
  std::ofstream file(dir / ("captured_" + name), std::ios::binary);
  for (size_t i = 0; i < datagrams.size(); ++i) {
    if (i != 0) file.write(reinterpret_cast<const char*>(kDatagramMarker), sizeof(kDatagramMarker));
    file.write(reinterpret_cast<const char*>(datagrams[i].data()),
               static_cast<std::streamsize>(datagrams[i].size()));
  }
  std::printf("%s/captured_%s: %zu datagrams\n", target.c_str(), name.c_str(), datagrams.size());
}

struct Capture {
  Datagrams to_server, to_client;
  void attach(FuzzPair& pair) {
    to_server.clear();
    to_client.clear();
    pair.observer = [this](bool to_server_side, std::span<const uint8_t> bytes) {
      (to_server_side ? to_server : to_client).emplace_back(bytes.begin(), bytes.end());
    };
  }
};

endpoint::ConnectionHandle server_handle(FuzzPair& pair) {
  for (endpoint::ConnectionHandle h = 0; h < 4; ++h) {
    if (pair.server().connection(h) != nullptr) return h;
  }
  std::exit(1);
}

// A pair past its handshake, capturing what each side sends from then on.
struct EstablishedCapture {
  FuzzPair pair;
  Capture capture;

  EstablishedCapture() {
    if (!pair.handshake()) std::exit(1);
    capture.attach(pair);
  }

  // Opens a stream on `side` and sends `text` on it; returns its id.
  static uint64_t send_on_new_stream(endpoint::Endpoint& side, endpoint::ConnectionHandle h,
                                     conn::StreamDirection direction, transmit::ChunkPool& pool,
                                     const std::string& text, bool fin) {
    const uint64_t id = *side.open_stream(h, direction);
    side.send(h, id, pool.copy_from({reinterpret_cast<const uint8_t*>(text.data()), text.size()}),
              fin);
    return id;
  }

  // `side` closes its connection; the capture restarts, so it then holds
  // only the datagrams of the close.
  void close(endpoint::Endpoint& side, endpoint::ConnectionHandle h, uint64_t code,
             const char* reason) {
    side.close(pair.now(), h, code, reason);
    capture.attach(pair);
    pair.settle();
  }
};

void handshakes() {
  FuzzPair pair;
  Capture capture;
  capture.attach(pair);
  if (!pair.handshake()) std::exit(1);
  // Client datagrams of the handshake, each alone for a fresh server (the
  // first opens a connection, later ones exercise the stateless paths).
  write("endpoint_server_initial", "client_initial", {capture.to_server.front()});
  for (size_t i = 1; i < capture.to_server.size() && i < 4; ++i) {
    write("endpoint_server_initial", "client_flight_" + std::to_string(i), {capture.to_server[i]});
  }
  for (size_t i = 0; i < capture.to_client.size() && i < 4; ++i) {
    write("endpoint_client_initial", "server_flight_" + std::to_string(i), {capture.to_client[i]});
  }
  write("endpoint_server_established", "handshake_all", capture.to_server);
  write("endpoint_client_established", "handshake_all", capture.to_client);
}

void client_streams(transmit::ChunkPool& pool) {
  EstablishedCapture run;
  endpoint::Endpoint& client = run.pair.client();
  const auto h = run.pair.client_handle();
  const uint64_t bidi = run.send_on_new_stream(client, h, conn::StreamDirection::kBidirectional,
                                               pool, "GET /index.html\r\n", true);
  const uint64_t uni = run.send_on_new_stream(client, h, conn::StreamDirection::kUnidirectional,
                                              pool, std::string(3000, 'u'), false);
  run.pair.settle();
  run.pair.client_connection()->reset_stream(uni, 0x101);
  run.pair.client_connection()->stop_sending(bidi, 0x102);
  client.wake(h);
  run.pair.settle();
  write("endpoint_server_established", "client_streams", run.capture.to_server);
  write("endpoint_client_established", "server_acks", run.capture.to_client);
  run.close(client, h, 0x0c, "done");
  write("endpoint_server_established", "client_close", run.capture.to_server);
}

void server_streams(transmit::ChunkPool& pool) {
  EstablishedCapture run;
  endpoint::Endpoint& server = run.pair.server();
  const auto h = server_handle(run.pair);
  run.send_on_new_stream(server, h, conn::StreamDirection::kUnidirectional, pool,
                         std::string(2500, 's'), true);
  run.send_on_new_stream(server, h, conn::StreamDirection::kBidirectional, pool, "server push",
                         false);
  run.pair.settle();
  write("endpoint_client_established", "server_streams", run.capture.to_client);
  write("endpoint_server_established", "client_acks", run.capture.to_server);
  run.close(server, h, 0x0a, "bye");
  write("endpoint_client_established", "server_close", run.capture.to_client);
}

void key_update(transmit::ChunkPool& pool) {
  EstablishedCapture run;
  endpoint::Endpoint& client = run.pair.client();
  const auto h = run.pair.client_handle();
  run.pair.client_connection()->initiate_key_update();
  client.wake(h);
  run.send_on_new_stream(client, h, conn::StreamDirection::kBidirectional, pool, "after key update",
                         true);
  run.pair.settle();
  write("endpoint_server_established", "key_update", run.capture.to_server);
  write("endpoint_client_established", "key_update", run.capture.to_client);
}

}  // namespace
}  // namespace dpquic::fuzz

int main(int argc, char** argv) {
  const char* usage =
      "usage: %s CORPUS_ROOT   (e.g. $PWD/tests/fuzz/corpus)\n"
      "Runs real handshakes and transfers in memory and writes the datagrams they exchange\n"
      "as seed files for the endpoint fuzz targets under CORPUS_ROOT.\n";
  if (argc == 2 && std::string_view(argv[1]) == "--help") {
    std::printf(usage, argv[0]);
    return 0;
  }
  if (argc != 2) {
    std::fprintf(stderr, usage, argv[0]);
    return 2;
  }
  dpquic::fuzz::g_root = argv[1];
  dpquic::transmit::ChunkPool pool(4096, 64);
  dpquic::fuzz::handshakes();
  dpquic::fuzz::client_streams(pool);
  dpquic::fuzz::server_streams(pool);
  dpquic::fuzz::key_update(pool);
  return 0;
}
