// The two-node simulator: exact timing through both links, routing by
// address (migration, preferred address, NAT rebinding), determinism, the
// stall guards, and a million datagrams fast and without allocation.
#include "tools/testbed/simulator.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <array>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <vector>

#include "tools/testbed/allocation_counter.h"

namespace dpquic::harness {
namespace {

using transmit::EcnCodepoint;

const SocketAddress kClient = SocketAddress::ipv4(192, 0, 2, 1, 5000);
const SocketAddress kServer = SocketAddress::ipv4(198, 51, 100, 1, 443);
constexpr Instant kT0 = kSimulationStart;

// Payload of datagram `id`: the id, its complement (so a flipped id bit is
// seen), then a fixed pattern (copied, so fake nodes stay cheap next to the
// network they exercise).
constexpr size_t kMaxDatagram = 2048;

const std::array<uint8_t, kMaxDatagram>& pattern() {
  static const std::array<uint8_t, kMaxDatagram> bytes = [] {
    std::array<uint8_t, kMaxDatagram> out{};
    for (size_t i = 0; i < out.size(); ++i) out[i] = static_cast<uint8_t>(i * 13 + 5);
    return out;
  }();
  return bytes;
}

void fill(uint64_t id, std::span<uint8_t> out) {
  std::memcpy(out.data(), pattern().data(), out.size());
  const uint64_t header[2] = {id, ~id};
  std::memcpy(out.data(), header, std::min(out.size(), sizeof(header)));
}

uint64_t id_of(std::span<const uint8_t> bytes) {
  uint64_t id = 0;
  std::memcpy(&id, bytes.data(), std::min(bytes.size(), sizeof(id)));
  return id;
}

bool intact(std::span<const uint8_t> bytes) {
  if (bytes.size() < 16 || bytes.size() > kMaxDatagram) return false;
  uint64_t header[2];
  std::memcpy(header, bytes.data(), sizeof(header));
  return header[1] == ~header[0] &&
         std::memcmp(bytes.data() + 16, pattern().data() + 16, bytes.size() - 16) == 0;
}

// A scriptable fake endpoint: sends planned datagrams at given times and/or a
// paced stream, optionally echoes every datagram it receives back along the
// path it came on, and records (or just counts) what arrives. Every payload
// carries its id and a pattern, so corruption is visible.
class TestNode : public Node {
 public:
  struct Arrival {
    Instant at;
    PathAddresses path;
    EcnCodepoint ecn;
    uint64_t id;
    size_t size;
    bool intact;
    bool operator==(const Arrival&) const = default;
  };

  TestNode() {
    buffer_.resize(kMaxDatagram);
    replies_.reserve(1024);
  }

  void plan(Instant at, PathAddresses path, uint64_t id, size_t size,
            EcnCodepoint ecn = EcnCodepoint::kNotEct) {
    planned_.push_back({at, path, id, size, ecn});
  }
  void pace(Instant start, Duration interval, uint64_t per_tick, uint64_t total, PathAddresses path,
            size_t size) {
    next_tick_ = start;
    interval_ = interval;
    per_tick_ = per_tick;
    paced_total_ = total;
    paced_path_ = path;
    paced_size_ = size;
  }
  void echo(size_t reply_size) { echo_size_ = reply_size; }
  void record(bool on) { record_ = on; }

  void handle_datagram(Instant now, const PathAddresses& path, EcnCodepoint ecn,
                       std::span<uint8_t> bytes) override {
    const uint64_t id = id_of(bytes);
    const bool whole = intact(bytes);
    ++received_;
    if (!whole) ++damaged_;
    if (record_) arrivals_.push_back({now, path, ecn, id, bytes.size(), whole});
    if (echo_size_ > 0) replies_.push_back({path, id});
  }
  void handle_timeout(Instant) override { ++timeouts_; }
  Instant poll_timeout() override {
    Instant next = kNever;
    if (next_planned_ < planned_.size()) next = planned_[next_planned_].at;
    if (paced_sent_ < paced_total_) next = std::min(next, next_tick_);
    return next;
  }
  void poll_transmit(Instant now, Sink& sink) override {
    for (const Reply& reply : replies_) {
      send(sink, reply.path, reply.id, echo_size_, EcnCodepoint::kNotEct);
    }
    replies_.clear();
    while (next_planned_ < planned_.size() && planned_[next_planned_].at <= now) {
      const Planned& p = planned_[next_planned_++];
      send(sink, p.path, p.id, p.size, p.ecn);
    }
    while (paced_sent_ < paced_total_ && next_tick_ <= now) {
      for (uint64_t i = 0; i < per_tick_ && paced_sent_ < paced_total_; ++i) {
        send(sink, paced_path_, paced_sent_++, paced_size_, EcnCodepoint::kEct0);
      }
      next_tick_ += interval_;
    }
  }

  uint64_t sent() const { return sent_; }
  uint64_t received() const { return received_; }
  uint64_t damaged() const { return damaged_; }
  uint64_t timeouts() const { return timeouts_; }
  const std::vector<Arrival>& arrivals() const { return arrivals_; }

 private:
  struct Planned {
    Instant at;
    PathAddresses path;
    uint64_t id;
    size_t size;
    EcnCodepoint ecn;
  };
  struct Reply {
    PathAddresses path;  // as received: local = our address, remote = peer
    uint64_t id;
  };

  void send(Sink& sink, const PathAddresses& path, uint64_t id, size_t size, EcnCodepoint ecn) {
    const std::span<uint8_t> bytes(buffer_.data(), size);
    fill(id, bytes);
    sink.send(path, ecn, bytes);
    ++sent_;
  }

  std::vector<uint8_t> buffer_;
  std::vector<Planned> planned_;
  size_t next_planned_ = 0;
  Instant next_tick_ = kNever;
  Duration interval_ = 0;
  uint64_t per_tick_ = 0;
  uint64_t paced_total_ = 0;
  uint64_t paced_sent_ = 0;
  PathAddresses paced_path_;
  size_t paced_size_ = 0;
  size_t echo_size_ = 0;
  bool record_ = true;
  std::vector<Reply> replies_;
  std::vector<Arrival> arrivals_;
  uint64_t sent_ = 0;
  uint64_t received_ = 0;
  uint64_t damaged_ = 0;
  uint64_t timeouts_ = 0;
};

const PathAddresses kToServer{kClient, kServer};

LinkConfig delay_only(Duration delay) {
  LinkConfig config;
  config.one_way_delay = delay;
  return config;
}

TEST(SimulatorTest, RoundTripTakesExactlyBothDelays) {
  TestNode client, server;
  server.echo(100);
  client.plan(kT0, kToServer, 1, 1200, EcnCodepoint::kEct0);
  Simulator sim(client, kClient, server, kServer, delay_only(10 * kMillisecond),
                delay_only(30 * kMillisecond));
  EXPECT_EQ(sim.now(), kT0);
  ASSERT_TRUE(sim.run_until([&] { return client.received() == 1; }, kT0 + kSecond));
  EXPECT_EQ(sim.now(), kT0 + 40 * kMillisecond);

  ASSERT_EQ(server.arrivals().size(), 1u);
  const TestNode::Arrival& at_server = server.arrivals()[0];
  EXPECT_EQ(at_server.at, kT0 + 10 * kMillisecond);
  EXPECT_EQ(at_server.path, (PathAddresses{kServer, kClient}));
  EXPECT_EQ(at_server.ecn, EcnCodepoint::kEct0);
  EXPECT_EQ(at_server.size, 1200u);
  EXPECT_TRUE(at_server.intact);
  ASSERT_EQ(client.arrivals().size(), 1u);
  EXPECT_EQ(client.arrivals()[0].at, kT0 + 40 * kMillisecond);
  EXPECT_EQ(client.arrivals()[0].path, (PathAddresses{kClient, kServer}));
  EXPECT_EQ(client.arrivals()[0].size, 100u);
  EXPECT_EQ(sim.client_to_server_stats().delivered, 1u);
  EXPECT_EQ(sim.server_to_client_stats().bytes_delivered, 100u);
}

TEST(SimulatorTest, BottleneckSerializesAndTailDrops) {
  TestNode client, server;
  for (uint64_t id = 0; id < 10; ++id) client.plan(kT0, kToServer, id, 1250);
  LinkConfig bottleneck = delay_only(5 * kMillisecond);
  bottleneck.bandwidth_bps = 10'000'000;  // 1 ms per 1250 bytes
  bottleneck.queue_bytes = 5000;
  Simulator sim(client, kClient, server, kServer, bottleneck, delay_only(5 * kMillisecond));
  EXPECT_FALSE(sim.run_until([] { return false; }, kT0 + kSecond));
  EXPECT_EQ(sim.now(), kT0 + kSecond);
  ASSERT_EQ(server.arrivals().size(), 4u);
  for (uint64_t id = 0; id < 4; ++id) {
    EXPECT_EQ(server.arrivals()[id].id, id);
    EXPECT_EQ(server.arrivals()[id].at, kT0 + (id + 1) * kMillisecond + 5 * kMillisecond);
  }
  EXPECT_EQ(sim.client_to_server_stats().sent, 10u);
  EXPECT_EQ(sim.client_to_server_stats().dropped_queue, 6u);
}

TEST(SimulatorTest, DropIndicesDropClientPacketsTwoToSeven) {
  TestNode client, server;
  for (uint64_t id = 0; id < 10; ++id) client.plan(kT0 + id * kMillisecond, kToServer, id, 1200);
  LinkConfig lossy = delay_only(kMillisecond);
  lossy.drop_indices = {2, 3, 4, 5, 6, 7};
  Simulator sim(client, kClient, server, kServer, lossy, delay_only(kMillisecond));
  sim.run_until([] { return false; }, kT0 + kSecond);
  std::vector<uint64_t> ids;
  for (const TestNode::Arrival& arrival : server.arrivals()) ids.push_back(arrival.id);
  EXPECT_EQ(ids, (std::vector<uint64_t>{0, 1, 8, 9}));
  EXPECT_EQ(sim.client_to_server_stats().dropped_loss, 6u);
}

// An impaired echo exchange; returns both nodes' arrivals.
std::pair<std::vector<TestNode::Arrival>, std::vector<TestNode::Arrival>> impaired_run(
    uint64_t seed) {
  TestNode client, server;
  server.echo(60);
  client.pace(kT0, 100 * kMicrosecond, 5, 20'000, kToServer, 1200);  // 480 Mbit/s
  LinkConfig forward = delay_only(10 * kMillisecond);
  forward.bandwidth_bps = 400'000'000;
  forward.queue_bytes = 30'000;
  forward.loss = 0.02;
  forward.burst_loss_enter = 0.001;
  forward.burst_loss_exit = 0.3;
  forward.reorder = 0.02;
  forward.duplicate = 0.02;
  forward.corrupt = 0.02;
  forward.seed = seed;
  LinkConfig backward = forward;
  backward.bandwidth_bps = 0;
  backward.seed = seed + 100;
  Simulator sim(client, kClient, server, kServer, forward, backward);
  sim.run_until([] { return false; }, kT0 + 2 * kSecond);
  EXPECT_EQ(client.sent(), 20'000u);
  EXPECT_GT(sim.client_to_server_stats().dropped_loss, 0u);
  EXPECT_GT(sim.client_to_server_stats().dropped_queue, 0u);
  EXPECT_EQ(server.received(), sim.client_to_server_stats().delivered);
  EXPECT_EQ(client.received(), sim.server_to_client_stats().delivered);
  return {client.arrivals(), server.arrivals()};
}

TEST(SimulatorTest, SameSeedSameRunDifferentSeedDifferentRun) {
  const auto first = impaired_run(11);
  const auto again = impaired_run(11);
  EXPECT_EQ(first.first, again.first);
  EXPECT_EQ(first.second, again.second);
  const auto other = impaired_run(12);
  EXPECT_NE(first.second, other.second);
}

TEST(SimulatorTest, CorruptedDatagramsAreExactlyTheDamagedOnes) {
  TestNode client, server;
  client.pace(kT0, kMillisecond, 10, 10'000, kToServer, 500);
  LinkConfig corrupting = delay_only(kMillisecond);
  corrupting.corrupt = 0.3;
  Simulator sim(client, kClient, server, kServer, corrupting, delay_only(kMillisecond));
  sim.run_until([] { return false; }, kT0 + 10 * kSecond);
  EXPECT_EQ(server.received(), 10'000u);
  EXPECT_NEAR(static_cast<double>(server.damaged()), 3000.0, 250.0);
  EXPECT_EQ(server.damaged(), sim.client_to_server_stats().corrupted);
}

// The client sends at 0, 20, 40, ... ms (10 ms each way); the NAT rebinds at
// 50 ms. The server sees the new external address from the first datagram
// after the rebinding, and the reply to the datagram sent at 40 ms (to the
// old mapping, reaching the NAT at 60 ms) is dropped.
void check_rebinding(const NatRebinding& rebinding, const SocketAddress& expected_external) {
  TestNode client, server;
  server.echo(40);
  for (uint64_t id = 0; id < 10; ++id)
    client.plan(kT0 + id * 20 * kMillisecond, kToServer, id, 1200);
  Simulator sim(client, kClient, server, kServer, delay_only(10 * kMillisecond),
                delay_only(10 * kMillisecond));
  sim.set_nat_rebinding(rebinding);
  sim.run_until([] { return false; }, kT0 + kSecond);
  EXPECT_EQ(sim.client_external_address(), expected_external);

  ASSERT_EQ(server.arrivals().size(), 10u);
  for (const TestNode::Arrival& arrival : server.arrivals()) {
    EXPECT_EQ(arrival.path.local, kServer);
    EXPECT_EQ(arrival.path.remote, arrival.id < 3 ? kClient : expected_external) << arrival.id;
  }
  std::vector<uint64_t> ids;
  for (const TestNode::Arrival& arrival : client.arrivals()) {
    ids.push_back(arrival.id);
    EXPECT_EQ(arrival.path, (PathAddresses{kClient, kServer}));
  }
  EXPECT_EQ(ids, (std::vector<uint64_t>{0, 1, 3, 4, 5, 6, 7, 8, 9}));
  EXPECT_EQ(sim.server_to_client_stats().dropped_unroutable, 1u);
  EXPECT_EQ(sim.server_to_client_stats().delivered, 9u);
}

TEST(SimulatorTest, NatRebindingOfThePort) {
  check_rebinding({kT0 + 50 * kMillisecond, true, false}, SocketAddress::ipv4(192, 0, 2, 1, 5001));
}

TEST(SimulatorTest, NatRebindingOfTheAddress) {
  check_rebinding({kT0 + 50 * kMillisecond, false, true}, SocketAddress::ipv4(10, 123, 0, 1, 5000));
}

TEST(SimulatorTest, NatRebindingOfBoth) {
  check_rebinding({kT0 + 50 * kMillisecond, true, true}, SocketAddress::ipv4(10, 123, 0, 1, 5001));
}

TEST(SimulatorTest, NatRebindsAgain) {
  TestNode client, server;
  server.echo(40);
  client.plan(kT0, kToServer, 0, 100);
  client.plan(kT0 + 100 * kMillisecond, kToServer, 1, 100);
  Simulator sim(client, kClient, server, kServer, delay_only(kMillisecond),
                delay_only(kMillisecond));
  sim.set_nat_rebinding({kT0 + 50 * kMillisecond});
  sim.run_until([] { return false; }, kT0 + 200 * kMillisecond);
  sim.set_nat_rebinding({kT0 + 300 * kMillisecond});
  client.plan(kT0 + 400 * kMillisecond, kToServer, 2, 100);
  sim.run_until([] { return false; }, kT0 + kSecond);
  ASSERT_EQ(server.arrivals().size(), 3u);
  EXPECT_EQ(server.arrivals()[0].path.remote.port, 5000);
  EXPECT_EQ(server.arrivals()[1].path.remote.port, 5001);
  EXPECT_EQ(server.arrivals()[2].path.remote.port, 5002);
  EXPECT_EQ(client.arrivals().size(), 3u);
}

TEST(SimulatorTest, MigrationPreferredAddressAndUnroutable) {
  TestNode client, server;
  server.echo(40);
  const SocketAddress kClientMigrated = SocketAddress::ipv4(192, 0, 2, 2, 6000);
  const SocketAddress kPreferred = SocketAddress::ipv4(203, 0, 113, 5, 4433);
  const SocketAddress kNowhere = SocketAddress::ipv4(203, 0, 113, 99, 1);
  client.plan(kT0, {kClientMigrated, kServer}, 0, 1200);
  client.plan(kT0, {kClient, kPreferred}, 1, 1200);
  client.plan(kT0, {kClient, kNowhere}, 2, 1200);
  Simulator sim(client, kClient, server, kServer, delay_only(kMillisecond),
                delay_only(kMillisecond));
  sim.add_server_address(kPreferred);
  sim.run_until([] { return false; }, kT0 + kSecond);

  ASSERT_EQ(server.arrivals().size(), 2u);
  EXPECT_EQ(server.arrivals()[0].path, (PathAddresses{kServer, kClientMigrated}));
  EXPECT_EQ(server.arrivals()[1].path, (PathAddresses{kPreferred, kClient}));
  ASSERT_EQ(client.arrivals().size(), 2u);
  EXPECT_EQ(client.arrivals()[0].path, (PathAddresses{kClientMigrated, kServer}));
  EXPECT_EQ(client.arrivals()[1].path, (PathAddresses{kClient, kPreferred}));
  EXPECT_EQ(sim.client_to_server_stats().dropped_unroutable, 1u);
  EXPECT_EQ(sim.client_to_server_stats().delivered, 2u);
}

TEST(SimulatorTest, ObserverSeesEveryDatagramOnTheWire) {
  TestNode client, server;
  server.echo(40);
  for (uint64_t id = 0; id < 100; ++id) client.plan(kT0 + id * kMillisecond, kToServer, id, 300);
  LinkConfig lossy = delay_only(5 * kMillisecond);
  lossy.loss = 0.5;
  Simulator sim(client, kClient, server, kServer, lossy, delay_only(5 * kMillisecond));
  sim.set_nat_rebinding({kT0 + 50 * kMillisecond});
  uint64_t forward = 0, backward = 0, forward_bytes = 0;
  bool ordered = true;
  Instant last = 0;
  sim.set_observer([&](bool client_to_server, Instant now, const Datagram& datagram) {
    ordered = ordered && now >= last;
    last = now;
    if (client_to_server) {
      ++forward;
      forward_bytes += datagram.bytes.size();
      const uint64_t id = id_of(datagram.bytes);
      EXPECT_EQ(now, kT0 + id * kMillisecond);
      EXPECT_EQ(datagram.path.local.port, now < kT0 + 50 * kMillisecond ? 5000 : 5001);
      EXPECT_EQ(datagram.path.remote, kServer);
    } else {
      ++backward;
      EXPECT_EQ(datagram.path.local, kServer);
    }
  });
  sim.run_until([] { return false; }, kT0 + kSecond);
  EXPECT_TRUE(ordered);
  EXPECT_EQ(forward, 100u);  // lost ones included
  EXPECT_EQ(forward_bytes, 30'000u);
  EXPECT_EQ(backward, server.sent());
  EXPECT_EQ(backward, sim.server_to_client_stats().sent);
  EXPECT_LT(server.received(), 70u);
}

TEST(SimulatorTest, StopsAsSoonAsDoneAndResumesFromThere) {
  TestNode client, server;
  client.pace(kT0, 100 * kMillisecond, 1, 1'000'000, kToServer, 100);
  Simulator sim(client, kClient, server, kServer, delay_only(10 * kMillisecond),
                delay_only(10 * kMillisecond));
  EXPECT_TRUE(sim.run_until([&] { return server.received() == 3; }, kNever));
  EXPECT_EQ(sim.now(), kT0 + 210 * kMillisecond);
  EXPECT_FALSE(sim.run_until([] { return false; }, kT0 + 350 * kMillisecond));
  EXPECT_EQ(sim.now(), kT0 + 350 * kMillisecond);
  EXPECT_EQ(server.received(), 4u);  // the one sent at 300 ms is still in flight
  EXPECT_TRUE(sim.run_until([] { return true; }, kT0));  // done before anything happens
  EXPECT_EQ(sim.now(), kT0 + 350 * kMillisecond);
}

TEST(SimulatorTest, ReturnsWhenNothingCanHappen) {
  TestNode client, server;
  client.plan(kT0, kToServer, 0, 100);
  Simulator sim(client, kClient, server, kServer, delay_only(kMillisecond),
                delay_only(kMillisecond));
  EXPECT_FALSE(sim.run_until([] { return false; }, kNever));
  EXPECT_EQ(sim.now(), kT0 + kMillisecond);
  EXPECT_EQ(server.received(), 1u);
}

// Reports a timeout in the past forever (or for `stale_reports` calls).
class StuckNode : public Node {
 public:
  explicit StuckNode(uint64_t stale_reports) : stale_reports_(stale_reports) {}
  void handle_datagram(Instant, const PathAddresses&, EcnCodepoint, std::span<uint8_t>) override {}
  void handle_timeout(Instant now) override {
    ++timeouts_;
    now_ = now;
  }
  Instant poll_timeout() override {
    if (timeouts_ < stale_reports_) return kT0;
    return timeouts_ == stale_reports_ ? now_ + kMillisecond : kNever;
  }
  void poll_transmit(Instant, Sink&) override {}
  uint64_t timeouts() const { return timeouts_; }

 private:
  uint64_t stale_reports_;
  uint64_t timeouts_ = 0;
  Instant now_ = 0;
};

TEST(SimulatorTest, NodeStuckInThePastFailsLoudly) {
  StuckNode stuck(UINT64_MAX);
  TestNode server;
  Simulator sim(stuck, kClient, server, kServer, LinkConfig{}, LinkConfig{});
  try {
    sim.run_until([] { return false; }, kT0 + kSecond);
    ADD_FAILURE() << "no SimulationStalled";
  } catch (const SimulationStalled& stalled) {
    EXPECT_NE(std::string(stalled.what()).find("client node"), std::string::npos) << stalled.what();
  }
  EXPECT_EQ(stuck.timeouts(), 1001u);  // the default limit of 1000 repeats, then the throw
}

TEST(SimulatorTest, NodeThatCatchesUpIsNotAStall) {
  StuckNode slow(50);
  TestNode client;
  Simulator sim(client, kClient, slow, kServer, LinkConfig{}, LinkConfig{});
  EXPECT_FALSE(sim.run_until([] { return false; }, kT0 + kSecond));
  EXPECT_EQ(slow.timeouts(), 51u);
}

TEST(SimulatorTest, TimeThatNeverAdvancesFailsLoudly) {
  // Zero-delay echo in both directions: an endless exchange at one instant.
  TestNode client, server;
  client.echo(16);
  server.echo(16);
  client.plan(kT0, kToServer, 0, 16);
  Simulator sim(client, kClient, server, kServer, delay_only(0), delay_only(0));
  sim.set_stall_limits(1000, 10'000);
  client.record(false);
  server.record(false);
  EXPECT_THROW(sim.run_until([] { return false; }, kT0 + kSecond), SimulationStalled);
  EXPECT_EQ(sim.now(), kT0);
}

TEST(SimulatorTest, MillionDatagramsFastWithoutAllocation) {
  // 1M datagrams of 1200 bytes at 960 Mbit/s into a 1 Gbit/s, 10 ms link with
  // every impairment on, each echoed back: about 2M datagrams in ~10.5 s of
  // virtual time.
  constexpr uint64_t kTotal = 1'000'000;
  TestNode client, server;
  client.record(false);
  server.record(false);
  server.echo(40);
  client.pace(kT0, 100 * kMicrosecond, 10, kTotal, kToServer, 1200);
  LinkConfig forward = delay_only(10 * kMillisecond);
  forward.bandwidth_bps = 1'000'000'000;
  forward.queue_bytes = 1'000'000;
  forward.loss = 0.01;
  forward.reorder = 0.01;
  forward.duplicate = 0.01;
  forward.corrupt = 0.01;
  forward.ce_mark = 0.01;
  LinkConfig backward = delay_only(10 * kMillisecond);
  backward.loss = 0.01;
  backward.reorder = 0.05;
  Simulator sim(client, kClient, server, kServer, forward, backward);
  uint64_t observed = 0;
  sim.set_observer([&](bool, Instant, const Datagram&) { ++observed; });

  const std::function<bool()> warmed_up = [&] { return client.sent() >= 50'000; };
  const std::function<bool()> never = [] { return false; };
  ASSERT_TRUE(sim.run_until(warmed_up, kNever));

  const auto started = std::chrono::steady_clock::now();
  size_t allocations;
  {
    testing::AllocationWindow window;
    sim.run_until(never, kT0 + 20 * kSecond);
    allocations = window.count();
  }
  const double seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - started).count();

  EXPECT_EQ(allocations, 0u);
  EXPECT_EQ(client.sent(), kTotal);
  EXPECT_EQ(sim.client_to_server_stats().sent, kTotal);
  EXPECT_EQ(sim.client_to_server_stats().dropped_queue, 0u);
  EXPECT_NEAR(static_cast<double>(server.received()), kTotal * 0.99 * 1.01, 2000.0);
  EXPECT_EQ(server.received(), sim.client_to_server_stats().delivered);
  EXPECT_EQ(client.received(), sim.server_to_client_stats().delivered);
  EXPECT_EQ(observed, kTotal + server.sent());
  // Wall time is printed, not asserted: speed claims belong in benchmarks.
  std::printf("1M datagrams (+%llu echoes) in %.3f s wall time\n",
              static_cast<unsigned long long>(server.sent()), seconds);
}

}  // namespace
}  // namespace dpquic::harness
