#pragma once
// dpquic_client's command line.

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "quic/conn/socket_address.h"
#include "quic/recovery/congestion_controller.h"
#include "quic/time.h"

namespace dpquic::interop {

struct Target {
  std::string url;
  std::string authority;  // HOST:PORT as written in the URL
  std::string path;       // starts with '/'
};

struct ClientOptions {
  std::vector<Target> targets;
  bool perf = false;  // perf:// URLs (all URLs share one scheme and server)
  conn::SocketAddress server;
  conn::SocketAddress local;  // loopback of the server's family, port 0
  std::string server_name = "localhost";
  std::string download_dir;
  bool verify_synthetic = false;
  std::string ca_file;
  uint32_t version = 0x00000001;
  bool resume = false;
  bool zero_rtt = false;
  bool key_update = false;
  bool migrate = false;
  uint64_t act_after_bytes = 100 * 1000;  // key update / migration trigger
  Duration timeout = 60 * kSecond;
  recovery::CongestionControlAlgorithm congestion_control =
      recovery::CongestionControlAlgorithm::kCubic;
  // The largest UDP payload to send: the ceiling of PMTU discovery (1452,
  // the base, turns it off).
  size_t max_udp_payload = 16383;
  bool help = false;
};

const char* client_usage();
std::optional<ClientOptions> parse_client_options(int argc, char** argv, std::string& error);

}  // namespace dpquic::interop
