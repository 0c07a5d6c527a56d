#include "tools/impair/impair_options.h"

#include <gtest/gtest.h>

namespace dpquic::impair {
namespace {

std::optional<ImpairOptions> parse(std::vector<std::string> args,
                                   std::string* error_out = nullptr) {
  std::vector<std::string> all = {"--listen=127.0.0.1:4434", "--server=127.0.0.1:4433"};
  all.insert(all.end(), args.begin(), args.end());
  std::string error;
  std::optional<ImpairOptions> options = parse_impair_options(all, error);
  if (error_out) *error_out = error;
  return options;
}

TEST(ImpairOptionsTest, ValueParsers) {
  EXPECT_DOUBLE_EQ(*parse_probability("2%"), 0.02);
  EXPECT_DOUBLE_EQ(*parse_probability("0.25"), 0.25);
  EXPECT_DOUBLE_EQ(*parse_probability("100%"), 1.0);
  EXPECT_FALSE(parse_probability("101%"));
  EXPECT_FALSE(parse_probability("-1"));
  EXPECT_FALSE(parse_probability("1e-3"));
  EXPECT_FALSE(parse_probability(""));
  EXPECT_FALSE(parse_probability("%"));

  EXPECT_EQ(*parse_duration("250ms", kSecond), 250 * kMillisecond);
  EXPECT_EQ(*parse_duration("1.5s", kMillisecond), 1500 * kMillisecond);
  EXPECT_EQ(*parse_duration("500us", kSecond), 500 * kMicrosecond);
  EXPECT_EQ(*parse_duration("10ns", kSecond), 10u);
  EXPECT_EQ(*parse_duration("3", kSecond), 3 * kSecond);
  EXPECT_EQ(*parse_duration("3", kMillisecond), 3 * kMillisecond);
  EXPECT_FALSE(parse_duration("3m", kSecond));
  EXPECT_FALSE(parse_duration("s", kSecond));

  EXPECT_EQ(*parse_rate("20M"), 20'000'000u);
  EXPECT_EQ(*parse_rate("20Mbit"), 20'000'000u);
  EXPECT_EQ(*parse_rate("500kbit/s"), 500'000u);
  EXPECT_EQ(*parse_rate("1.5G"), 1'500'000'000u);
  EXPECT_EQ(*parse_rate("64000"), 64'000u);
  EXPECT_FALSE(parse_rate("fast"));

  EXPECT_EQ(*parse_bytes("64K"), 65536u);
  EXPECT_EQ(*parse_bytes("2M"), 2u << 20);
  EXPECT_EQ(*parse_bytes("1500"), 1500u);
  EXPECT_FALSE(parse_bytes("1.5K"));
}

TEST(ImpairOptionsTest, Loopback) {
  EXPECT_TRUE(is_loopback(conn::SocketAddress::ipv4(127, 0, 0, 1, 1)));
  EXPECT_TRUE(is_loopback(conn::SocketAddress::ipv4(127, 9, 8, 7, 1)));
  EXPECT_FALSE(is_loopback(conn::SocketAddress::ipv4(10, 0, 0, 1, 1)));
  EXPECT_FALSE(is_loopback(conn::SocketAddress::ipv4(0, 0, 0, 0, 1)));
  EXPECT_TRUE(
      is_loopback(conn::SocketAddress::ipv6({0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 1}, 1)));
  EXPECT_TRUE(is_loopback(
      conn::SocketAddress::ipv6({0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xff, 0xff, 127, 0, 0, 1}, 1)));
  EXPECT_FALSE(is_loopback(conn::SocketAddress::ipv6({0x20, 1, 0xd, 0xb8}, 1)));
  EXPECT_FALSE(is_loopback(conn::SocketAddress::ipv6({}, 1)));
}

TEST(ImpairOptionsTest, DefaultsAndGeneralFlags) {
  std::optional<ImpairOptions> options = parse({});
  ASSERT_TRUE(options);
  EXPECT_EQ(options->listen, conn::SocketAddress::ipv4(127, 0, 0, 1, 4434));
  EXPECT_EQ(options->server, conn::SocketAddress::ipv4(127, 0, 0, 1, 4433));
  EXPECT_EQ(options->duration, 60 * kSecond);
  EXPECT_EQ(options->seed, 1u);
  EXPECT_EQ(options->up.loss, 0);
  EXPECT_EQ(options->down.blackhole_off, 0u);

  options = parse({"--seed=99", "--duration=3600", "--max-packets=5000", "--stats=0.5",
                   "--rebind-every=2", "--max-clients=3"});
  ASSERT_TRUE(options);
  EXPECT_EQ(options->seed, 99u);
  EXPECT_EQ(options->duration, 3600 * kSecond);
  EXPECT_EQ(options->max_packets, 5000u);
  EXPECT_EQ(options->stats_interval, 500 * kMillisecond);
  EXPECT_EQ(options->rebind_every, 2 * kSecond);
  EXPECT_EQ(options->max_clients, 3u);

  std::string error;
  std::optional<ImpairOptions> any =
      parse_impair_options({"--listen=127.0.0.1:0", "--server=[::1]:4433"}, error);
  ASSERT_TRUE(any) << error;
  EXPECT_EQ(any->listen.port, 0);
  EXPECT_EQ(any->server.family, conn::AddressFamily::kIpv6);
}

TEST(ImpairOptionsTest, DirectionSuffixes) {
  std::optional<ImpairOptions> options = parse(
      {"--loss=2%", "--loss-down=5%", "--corrupt-up=1%", "--rate-down=20M", "--blackhole=5s/2s",
       "--burst-loss=1%,30%", "--reorder-down=5%,4", "--reorder-up=10%,10ms", "--delay=20",
       "--jitter-up=2ms", "--duplicate-down=1%", "--queue-down=64K", "--rate-burst=3000"});
  ASSERT_TRUE(options);
  EXPECT_DOUBLE_EQ(options->up.loss, 0.02);
  EXPECT_DOUBLE_EQ(options->down.loss, 0.05);
  EXPECT_DOUBLE_EQ(options->up.corrupt, 0.01);
  EXPECT_DOUBLE_EQ(options->down.corrupt, 0);
  EXPECT_EQ(options->down.rate_bits_per_second, 20'000'000u);
  EXPECT_EQ(options->up.rate_bits_per_second, 0u);
  EXPECT_EQ(options->down.queue_bytes, 65536u);
  EXPECT_EQ(options->up.rate_burst_bytes, 3000u);
  for (const LinkConfig* link : {&options->up, &options->down}) {
    EXPECT_EQ(link->blackhole_on, 5 * kSecond);
    EXPECT_EQ(link->blackhole_off, 2 * kSecond);
    EXPECT_DOUBLE_EQ(link->burst_enter, 0.01);
    EXPECT_DOUBLE_EQ(link->burst_exit, 0.3);
    EXPECT_DOUBLE_EQ(link->burst_loss_in_bad, 1);
    EXPECT_EQ(link->delay, 20 * kMillisecond);
  }
  EXPECT_DOUBLE_EQ(options->down.reorder, 0.05);
  EXPECT_EQ(options->down.reorder_packets, 4u);
  EXPECT_EQ(options->down.reorder_delay, 0u);
  EXPECT_DOUBLE_EQ(options->up.reorder, 0.1);
  EXPECT_EQ(options->up.reorder_delay, 10 * kMillisecond);
  EXPECT_EQ(options->up.jitter, 2 * kMillisecond);
  EXPECT_EQ(options->down.jitter, 0u);
  EXPECT_DOUBLE_EQ(options->down.duplicate, 0.01);
}

TEST(ImpairOptionsTest, BadFlagsGiveOneLineNamingTheFlag) {
  const std::vector<std::pair<std::vector<std::string>, std::string>> cases = {
      {{"--loss=2"}, "impair: --loss: bad value '2' (see --help)"},
      {{"--loss-sideways=2%"}, "impair: --loss-sideways: unknown flag (see --help)"},
      {{"--duration=3601"},
       "impair: --duration: expected seconds (e.g. 30, 1.5, 500ms), at most 3600 s"},
      {{"--duration=0"}, "impair: --duration: must be above 0"},
      {{"--burst-loss=1%"}, "impair: --burst-loss: bad value '1%' (see --help)"},
      {{"--burst-loss=1%,0"}, "impair: --burst-loss: bad value '1%,0' (see --help)"},
      {{"--reorder=5%,0"}, "impair: --reorder: bad value '5%,0' (see --help)"},
      {{"--blackhole=5s"}, "impair: --blackhole: bad value '5s' (see --help)"},
      {{"--rate=1k"}, "impair: --rate: bad value '1k' (see --help)"},
      {{"--seed=-1"}, "impair: --seed: expected a decimal number"},
      {{"--loss"}, "impair: --loss: missing '=VALUE'"},
      {{"extra"}, "impair: extra: unexpected argument (flags are --name=value)"},
      {{"--server=192.0.2.1:443"},
       "impair: --server: only loopback addresses are allowed (127.0.0.0/8 or ::1)"},
  };
  for (const auto& [args, expected] : cases) {
    std::string error;
    EXPECT_FALSE(parse(args, &error)) << expected;
    EXPECT_EQ(error, expected);
  }
  std::string error;
  EXPECT_FALSE(parse_impair_options({"--server=127.0.0.1:1"}, error));
  EXPECT_EQ(error, "impair: --listen: required (e.g. --listen=127.0.0.1:4434)");
  EXPECT_FALSE(parse_impair_options({"--listen=127.0.0.1:1"}, error));
  EXPECT_EQ(error, "impair: --server: required (e.g. --server=127.0.0.1:4433)");
  EXPECT_FALSE(parse_impair_options({"--listen=127.0.0.1:1", "--server=127.0.0.1:0"}, error));
  EXPECT_NE(error.find("impair: --server: "), std::string::npos) << error;
}

TEST(ImpairOptionsTest, Help) {
  std::string error;
  std::optional<ImpairOptions> options = parse_impair_options({"--help"}, error);
  ASSERT_TRUE(options);
  EXPECT_TRUE(options->help);
  EXPECT_NE(impair_usage().find("--rebind-every"), std::string::npos);
}

}  // namespace
}  // namespace dpquic::impair
