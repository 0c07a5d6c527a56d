#include "tools/quicload/load_options.h"

#include <gtest/gtest.h>

#include <string>
#include <vector>

namespace dpquic::tools {
namespace {

struct Parsed {
  std::optional<LoadOptions> options;
  std::string error;
};

Parsed parse(std::vector<const char*> args) {
  args.insert(args.begin(), "quicload");
  Parsed parsed;
  parsed.options = parse_load_options(static_cast<int>(args.size()), args.data(), parsed.error);
  return parsed;
}

std::string error_of(std::vector<const char*> args) {
  const Parsed parsed = parse(std::move(args));
  EXPECT_FALSE(parsed.options.has_value());
  return parsed.error;
}

TEST(LoadOptionsTest, Defaults) {
  const Parsed p = parse({"https://127.0.0.1:4433/1000"});
  ASSERT_TRUE(p.options) << p.error;
  const LoadOptions& o = *p.options;
  EXPECT_EQ(o.connections, 1u);
  EXPECT_EQ(o.streams, 1u);
  EXPECT_EQ(o.requests, 1u);  // one per connection
  EXPECT_EQ(o.duration, 0u);
  EXPECT_EQ(o.timeout, 10 * kSecond);
  EXPECT_EQ(o.cores, 1u);
  EXPECT_EQ(o.backend, LoadBackend::kUdp);
  EXPECT_EQ(o.scheme, UrlScheme::kHttps);
  EXPECT_EQ(o.server, conn::SocketAddress::ipv4(127, 0, 0, 1, 4433));
  EXPECT_EQ(o.server_name, "127.0.0.1");
  ASSERT_EQ(o.targets.size(), 1u);
  EXPECT_EQ(o.targets[0].authority, "127.0.0.1:4433");
  EXPECT_EQ(o.targets[0].path, "/1000");
  EXPECT_EQ(o.targets[0].synthetic_size, 1000u);
  EXPECT_FALSE(o.handshake_only || o.resume || o.zero_rtt);
  EXPECT_FALSE(o.shared_port);  // a source port per connection
}

TEST(LoadOptionsTest, CongestionControllerBbr) {
  const Parsed p = parse({"--cc=bbr", "https://127.0.0.1:1/1"});
  ASSERT_TRUE(p.options) << p.error;
  EXPECT_EQ(p.options->congestion_control, recovery::CongestionControlAlgorithm::kBbr);
}

TEST(LoadOptionsTest, EveryFlag) {
  const Parsed p =
      parse({"--connections=8", "--streams=4", "--requests=1000", "--upload=5000",
             "--per-connection=10", "--0rtt", "--cores=2", "--cc=newreno", "--timeout=0.5",
             "--json=/tmp/x.json", "--qlog-dir=/tmp/q", "--max-udp-payload=1452", "--no-progress",
             "--ca=ca.pem", "--shared-port", "perf://[::1]:9000/4096", "perf://[::1]:9000/8192"});
  ASSERT_TRUE(p.options) << p.error;
  const LoadOptions& o = *p.options;
  EXPECT_EQ(o.connections, 8u);
  EXPECT_EQ(o.streams, 4u);
  EXPECT_EQ(o.requests, 1000u);
  EXPECT_EQ(o.upload, 5000u);
  EXPECT_EQ(o.per_connection, 10u);
  EXPECT_TRUE(o.resume);  // implied by --0rtt
  EXPECT_TRUE(o.zero_rtt);
  EXPECT_EQ(o.cores, 2u);
  EXPECT_EQ(o.congestion_control, recovery::CongestionControlAlgorithm::kNewReno);
  EXPECT_EQ(o.timeout, 500 * kMillisecond);
  EXPECT_EQ(o.json_path, "/tmp/x.json");
  EXPECT_EQ(o.qlog_dir, "/tmp/q");
  EXPECT_EQ(o.max_udp_payload, 1452u);
  EXPECT_FALSE(o.progress);
  EXPECT_EQ(o.ca_file, "ca.pem");
  EXPECT_TRUE(o.shared_port);
  EXPECT_EQ(o.scheme, UrlScheme::kPerf);
  EXPECT_EQ(o.server.family, conn::AddressFamily::kIpv6);
  EXPECT_EQ(o.server.port, 9000);
  EXPECT_EQ(o.server_name, "::1");
  ASSERT_EQ(o.targets.size(), 2u);
  EXPECT_EQ(o.targets[1].synthetic_size, 8192u);
}

TEST(LoadOptionsTest, DurationReplacesTheRequestCount) {
  const Parsed p = parse({"--duration=2.5", "--connections=3", "https://127.0.0.1:1/1"});
  ASSERT_TRUE(p.options) << p.error;
  EXPECT_EQ(p.options->duration, 2500 * kMillisecond);
  EXPECT_EQ(p.options->requests, 0u);
}

TEST(LoadOptionsTest, HandshakeOnlyCountsHandshakes) {
  const Parsed p = parse({"--handshake-only", "--connections=4", "https://127.0.0.1:1/"});
  ASSERT_TRUE(p.options) << p.error;
  EXPECT_TRUE(p.options->handshake_only);
  EXPECT_EQ(p.options->requests, 4u);
  EXPECT_EQ(p.options->targets[0].path, "/");
  EXPECT_FALSE(p.options->targets[0].synthetic_size);
}

TEST(LoadOptionsTest, IdleHoldsConnectionsAndSendsNoRequests) {
  const Parsed p = parse({"--idle=2.5", "--connections=5000", "--connections-in-flight=50",
                          "https://127.0.0.1:4433/"});
  ASSERT_TRUE(p.options) << p.error;
  EXPECT_TRUE(p.options->idle_mode);
  EXPECT_EQ(p.options->idle, 2 * kSecond + 500 * kMillisecond);
  EXPECT_EQ(p.options->connections, 5000u);
  EXPECT_EQ(p.options->connections_in_flight, 50u);
  EXPECT_EQ(p.options->requests, 0u);
  const Parsed defaults = parse({"--idle=0", "https://127.0.0.1:4433/"});
  ASSERT_TRUE(defaults.options) << defaults.error;
  EXPECT_TRUE(defaults.options->idle_mode);
  EXPECT_EQ(defaults.options->connections_in_flight, 100u);
  for (const char* other : {"--duration=1", "--requests=5", "--handshake-only",
                            "--per-connection=1", "--resume", "--0rtt"}) {
    EXPECT_EQ(error_of({"--idle=1", other, "https://127.0.0.1:4433/"})
                  .rfind("quicload: --idle sends no requests", 0),
              0u)
        << other;
  }
  EXPECT_NE(error_of({"--idle=x", "https://127.0.0.1:4433/"}), "");
  EXPECT_NE(error_of({"--idle=1", "--connections-in-flight=0", "https://127.0.0.1:4433/"}), "");
}

TEST(LoadOptionsTest, PathsWithoutANumberAreNotSynthetic) {
  const Parsed p = parse({"https://127.0.0.1:1/files/a.bin", "https://127.0.0.1:1"});
  ASSERT_TRUE(p.options) << p.error;
  EXPECT_FALSE(p.options->targets[0].synthetic_size);
  EXPECT_EQ(p.options->targets[1].path, "/");
}

TEST(LoadOptionsTest, DpdkFlags) {
  const Parsed p =
      parse({"--backend=dpdk", "--eal=--no-huge -l 0-1", "--ip=10.98.0.1/24",
             "--gateway=10.98.0.254", "--local-port=5000", "https://10.98.0.2:4433/1000000"});
  ASSERT_TRUE(p.options) << p.error;
  EXPECT_EQ(p.options->backend, LoadBackend::kDpdk);
  EXPECT_EQ(p.options->eal, "--no-huge -l 0-1");
  ASSERT_TRUE(p.options->ip);
  EXPECT_EQ(p.options->ip->address, conn::SocketAddress::ipv4(10, 98, 0, 1, 0));
  EXPECT_EQ(p.options->ip->prefix_length, 24);
  EXPECT_EQ(p.options->gateway, conn::SocketAddress::ipv4(10, 98, 0, 254, 0));
  EXPECT_EQ(p.options->local_port, 5000);
}

TEST(LoadOptionsTest, HelpStopsParsing) {
  const Parsed p = parse({"--help", "--bogus"});
  ASSERT_TRUE(p.options);
  EXPECT_TRUE(p.options->help);
  EXPECT_NE(std::string(load_usage()).find("--handshake-only"), std::string::npos);
}

TEST(LoadOptionsTest, BadUsageIsOneLine) {
  EXPECT_EQ(error_of({}), "quicload: no URL given (see --help)");
  EXPECT_EQ(error_of({"ftp://127.0.0.1:1/"}),
            "quicload: ftp://127.0.0.1:1/: expected https:// or perf://");
  EXPECT_EQ(error_of({"https:///x"}), "quicload: https:///x: no HOST:PORT");
  EXPECT_NE(error_of({"https://127.0.0.1/x"}).find("https://127.0.0.1/x: "), std::string::npos);
  EXPECT_NE(error_of({"https://127.0.0.1:99999/x"}).find("quicload: https://127.0.0.1:99999/x"),
            std::string::npos);
  EXPECT_EQ(error_of({"perf://127.0.0.1:1/abc"}),
            "quicload: perf://127.0.0.1:1/abc: a perf URL's path is the response size in bytes");
  EXPECT_EQ(error_of({"https://127.0.0.1:1/1", "perf://127.0.0.1:1/1"}),
            "quicload: all URLs must name the same server and scheme");
  EXPECT_EQ(error_of({"https://127.0.0.1:1/1", "https://127.0.0.1:2/1"}),
            "quicload: all URLs must name the same server and scheme");
  EXPECT_EQ(error_of({"--bogus", "https://127.0.0.1:1/1"}),
            "quicload: unknown flag --bogus (see --help)");
  EXPECT_EQ(error_of({"--connections=0", "https://127.0.0.1:1/1"}),
            "quicload: --connections=0: expected 1..100000");
  EXPECT_EQ(error_of({"--streams=x", "https://127.0.0.1:1/1"}),
            "quicload: --streams=x: expected 1..10000");
  EXPECT_EQ(error_of({"--timeout=-1", "https://127.0.0.1:1/1"}),
            "quicload: --timeout=-1: expected seconds, up to 3600");
  EXPECT_EQ(error_of({"--cc=bbr2", "https://127.0.0.1:1/1"}),
            "quicload: --cc=bbr2: expected cubic, newreno or bbr");
  EXPECT_EQ(error_of({"--backend=xdp", "https://127.0.0.1:1/1"}),
            "quicload: --backend=xdp: expected udp or dpdk");
  EXPECT_EQ(error_of({"--requests=5", "--duration=1", "https://127.0.0.1:1/1"}),
            "quicload: --requests and --duration exclude each other");
  EXPECT_EQ(error_of({"--upload=10", "https://127.0.0.1:1/1"}),
            "quicload: --upload applies to perf:// URLs (the h3 client sends no request bodies)");
  EXPECT_EQ(error_of({"--verify=f", "perf://127.0.0.1:1/1"}),
            "quicload: --verify applies to https:// URLs (perf bodies are always checked)");
  EXPECT_EQ(error_of({"--handshake-only", "--verify=f", "https://127.0.0.1:1/1"}),
            "quicload: --handshake-only sends no requests: drop --upload, --verify, "
            "--per-connection");
  EXPECT_EQ(error_of({"--ip=10.0.0.1/24", "https://127.0.0.1:1/1"}),
            "quicload: --eal, --ip, --gateway and --local-port apply to --backend=dpdk only");
  EXPECT_EQ(error_of({"--backend=dpdk", "https://127.0.0.1:1/1"}),
            "quicload: --backend=dpdk needs --ip=ADDR/PREFIX: our own address");
  EXPECT_EQ(error_of({"--backend=dpdk", "--ip=fd00::1/64", "https://127.0.0.1:1/1"}),
            "quicload: --ip and the server must be of the same address family");
  EXPECT_NE(error_of({"--backend=dpdk", "--ip=10.0.0.300", "https://127.0.0.1:1/1"})
                .find("quicload: --ip=10.0.0.300: "),
            std::string::npos);
}

TEST(LoadOptionsTest, Seconds) {
  Duration d = 0;
  EXPECT_TRUE(parse_seconds("2", 0, kNever, d));
  EXPECT_EQ(d, 2 * kSecond);
  EXPECT_TRUE(parse_seconds("0.25", 0, kNever, d));
  EXPECT_EQ(d, 250 * kMillisecond);
  EXPECT_TRUE(parse_seconds("1.000000001", 0, kNever, d));
  EXPECT_EQ(d, kSecond + 1);
  EXPECT_FALSE(parse_seconds("1.", 0, kNever, d));
  EXPECT_FALSE(parse_seconds(".5", 0, kNever, d));
  EXPECT_FALSE(parse_seconds("1.0000000001", 0, kNever, d));
  EXPECT_FALSE(parse_seconds("1s", 0, kNever, d));
  EXPECT_FALSE(parse_seconds("", 0, kNever, d));
  EXPECT_FALSE(parse_seconds("0", kMillisecond, kNever, d));
  EXPECT_FALSE(parse_seconds("11", 0, 10 * kSecond, d));
}

}  // namespace
}  // namespace dpquic::tools
