// Scenarios: connection migration (RFC 9000 §9) during a download.
//  - NAT rebinding of the client's port, then of its address: the server
//    sees 1-RTT packets from a new address, validates it with a
//    PATH_CHALLENGE (in a datagram padded to at least 1200 bytes, §8.2.1),
//    moves there with fresh congestion state (§9.4) and the download ends
//    byte-exact.
//  - Client-initiated migration to a second local address (§9.2), with a
//    new connection ID (§9.5).
//  - Migration to the server's preferred address after the handshake
//    (§9.6).

#include <gtest/gtest.h>

#include <algorithm>
#include <vector>

#include "quic/recovery/congestion_controller.h"
#include "tests/quic/harness/download_fixture.h"
#include "tools/testbed/perf_app.h"
#include "tools/testbed/quic_pair.h"

namespace dpquic::harness {
namespace {

constexpr uint64_t kTransferBytes = 4 << 20;

const SocketAddress kClientAddress = SocketAddress::ipv4(10, 0, 0, 1, 50000);
const SocketAddress kServerAddress = SocketAddress::ipv4(10, 0, 0, 2, 443);

bool is_short_header(std::span<const uint8_t> bytes) {
  return !bytes.empty() && (bytes[0] & 0x80) == 0;
}

// What the wire showed, per direction and address.
struct WireLog {
  struct Entry {
    bool client_to_server;
    Instant at;
    PathAddresses path;
    size_t size;
    bool short_header;
    std::vector<uint8_t> dcid;  // short headers only
  };
  std::vector<Entry> entries;
  size_t server_cid_length = 0;

  void record(bool client_to_server, Instant now, const Datagram& d) {
    Entry entry{client_to_server, now, d.path, d.bytes.size(), is_short_header(d.bytes), {}};
    if (entry.short_header && server_cid_length != 0 && client_to_server &&
        d.bytes.size() > server_cid_length) {
      entry.dcid.assign(d.bytes.begin() + 1, d.bytes.begin() + 1 + server_cid_length);
    }
    // The server's long headers carry its CID as the SCID: its length tells
    // us where the DCID of the client's short headers ends.
    if (!client_to_server && !entry.short_header && server_cid_length == 0 && d.bytes.size() > 7) {
      const size_t dcid_length = d.bytes[5];
      if (d.bytes.size() > 6 + dcid_length) server_cid_length = d.bytes[6 + dcid_length];
    }
    entries.push_back(std::move(entry));
  }
};

class MigrationTest : public DownloadFixture {
 protected:
  void start(PairOptions options = PairOptions()) {
    start_download(options, kClientAddress, kServerAddress, kTransferBytes);
    pair_->simulator->set_observer([this](bool c2s, Instant now, const Datagram& d) {
      log_.record(c2s, now, d);
      if (!c2s && watch_address_.valid() && d.path.remote == watch_address_ && !first_to_watched_) {
        first_to_watched_ = log_.entries.size() - 1;
        if (conn::Connection* server = pair_->server_connection()) {
          window_at_first_to_watched_ = server->congestion().congestion_window();
        }
      }
    });
  }

  // Datagrams in one direction matching `pred`, from entry `from` on.
  template <typename Pred>
  size_t count(size_t from, bool client_to_server, Pred pred) const {
    size_t n = 0;
    for (size_t i = from; i < log_.entries.size(); ++i) {
      const auto& e = log_.entries[i];
      if (e.client_to_server == client_to_server && pred(e)) ++n;
    }
    return n;
  }

  // The server's answer to a move of the client to `external`.
  // `peer_probed`: the client itself probed the new path with a padded
  // PATH_CHALLENGE (an active migration), so the server's first datagram
  // there is not held below 1200 bytes by the anti-amplification limit.
  void expect_server_moved_to(const SocketAddress& external, size_t log_from, bool peer_probed) {
    ASSERT_TRUE(first_to_watched_.has_value());
    ASSERT_NE(server(), nullptr);
    const WireLog::Entry& first = log_.entries[*first_to_watched_];
    EXPECT_GE(*first_to_watched_, log_from);
    EXPECT_TRUE(first.short_header);
    EXPECT_EQ(first.path.local, kServerAddress);
    // What the server had received from the new address before it first
    // sent there: the anti-amplification limit allows three times that
    // (RFC 9000 §9.3).
    uint64_t received_before = 0;
    for (size_t i = log_from; i < *first_to_watched_; ++i) {
      const auto& e = log_.entries[i];
      if (e.client_to_server && e.path.local == external) received_before += e.size;
    }
    EXPECT_LE(first.size, 3 * received_before);
    if (peer_probed) {
      // The PATH_RESPONSE and the server's own PATH_CHALLENGE, padded to
      // 1200 bytes (RFC 9000 §8.2.1, §8.2.2).
      EXPECT_GE(first.size, 1200u);
    } else {
      // A NAT rebinding: the client sent only small ACKs from the new
      // address, so the first PATH_CHALLENGE fits in 3x their size, unpadded.
      // Its PATH_RESPONSE (padded by the client) lifts the limit, and the
      // server validates again with a padded challenge to check the path
      // MTU (§8.2.1). Two padded datagrams from the client prove both
      // responses: in a download it otherwise sends only ACKs.
      EXPECT_LT(first.size, 1200u);
      EXPECT_GE(count(log_from, true,
                      [&](const auto& e) { return e.path.local == external && e.size >= 1200; }),
                2u);
    }
    // Congestion state starts afresh on the new path (§9.4).
    EXPECT_EQ(window_at_first_to_watched_, recovery::initial_window(wire::kMinInitialDatagramSize));
    EXPECT_EQ(server()->active_path().remote, external);
    EXPECT_TRUE(server()->address_validated());
    // After the move nothing more goes to the old address.
    size_t last_to_new = 0;
    for (size_t i = log_from; i < log_.entries.size(); ++i) {
      const auto& e = log_.entries[i];
      if (!e.client_to_server && e.path.remote == external) last_to_new = i;
    }
    EXPECT_EQ(count(last_to_new, false, [&](const auto& e) { return e.path.remote != external; }),
              0u);
    EXPECT_GT(count(log_from, false, [&](const auto& e) { return e.path.remote == external; }),
              100u);
  }

  WireLog log_;
  SocketAddress watch_address_;
  std::optional<size_t> first_to_watched_;
  uint64_t window_at_first_to_watched_ = 0;
};

TEST_F(MigrationTest, NatRebindingOfThePort) {
  start();
  run_until_received(1 << 20);
  ASSERT_NE(server(), nullptr);
  ASSERT_EQ(server()->active_path().remote, kClientAddress);
  SocketAddress external = kClientAddress;
  external.port = static_cast<uint16_t>(kClientAddress.port + 1);
  watch_address_ = external;
  const size_t log_from = log_.entries.size();
  pair_->simulator->set_nat_rebinding({.at = pair_->simulator->now(), .change_port = true});
  ASSERT_NO_FATAL_FAILURE(finish_download());
  EXPECT_EQ(pair_->simulator->client_external_address(), external);
  expect_server_moved_to(external, log_from, false);
  // The client never noticed: its own path is unchanged.
  EXPECT_EQ(client()->active_path().local, kClientAddress);
  EXPECT_EQ(client()->active_path().remote, kServerAddress);
}

TEST_F(MigrationTest, NatRebindingOfTheAddress) {
  start();
  run_until_received(1 << 20);
  ASSERT_NE(server(), nullptr);
  const size_t log_from = log_.entries.size();
  pair_->simulator->set_nat_rebinding(
      {.at = pair_->simulator->now(), .change_port = false, .change_address = true});
  // The new external address is known once the NAT applied it: watch for
  // the first datagram the server sends anywhere but the old address.
  ASSERT_TRUE(pair_->run_until(
      [&] { return pair_->simulator->client_external_address() != kClientAddress; }));
  const SocketAddress external = pair_->simulator->client_external_address();
  EXPECT_FALSE(external.same_ip(kClientAddress));
  EXPECT_EQ(external.port, kClientAddress.port);
  watch_address_ = external;
  ASSERT_NO_FATAL_FAILURE(finish_download());
  expect_server_moved_to(external, log_from, false);
}

TEST_F(MigrationTest, ClientMigratesToASecondAddress) {
  start();
  run_until_received(1 << 20);
  ASSERT_NE(server(), nullptr);
  const SocketAddress second = SocketAddress::ipv4(10, 0, 1, 7, 40000);
  watch_address_ = second;
  const size_t log_from = log_.entries.size();
  // DCIDs the client used before moving.
  std::vector<std::vector<uint8_t>> old_dcids;
  for (const auto& e : log_.entries) {
    if (e.client_to_server && !e.dcid.empty()) old_dcids.push_back(e.dcid);
  }
  ASSERT_FALSE(old_dcids.empty());
  ASSERT_TRUE(client()->migrate(pair_->simulator->now(), second));
  pair_->client->wake(handle_);
  ASSERT_NO_FATAL_FAILURE(finish_download());
  EXPECT_EQ(client()->active_path().local, second);
  EXPECT_EQ(server()->active_path().remote, second);
  expect_server_moved_to(second, log_from, true);
  // The client probed from the new address with a padded PATH_CHALLENGE.
  const size_t from_second =
      count(log_from, true, [&](const auto& e) { return e.path.local == second; });
  EXPECT_GT(from_second, 10u);
  const auto first_from_second =
      std::find_if(log_.entries.begin() + static_cast<std::ptrdiff_t>(log_from), log_.entries.end(),
                   [&](const auto& e) { return e.client_to_server && e.path.local == second; });
  ASSERT_NE(first_from_second, log_.entries.end());
  EXPECT_TRUE(first_from_second->short_header);
  EXPECT_GE(first_from_second->size, 1200u);
  // A new connection ID on the new path, never used on the old one (§9.5).
  for (const auto& e : log_.entries) {
    if (!e.client_to_server || e.path.local != second || e.dcid.empty()) continue;
    EXPECT_EQ(std::count(old_dcids.begin(), old_dcids.end(), e.dcid), 0);
  }
  // Once moved, the client stops sending from the old address.
  size_t last_from_second = 0;
  for (size_t i = log_from; i < log_.entries.size(); ++i) {
    if (log_.entries[i].client_to_server && log_.entries[i].path.local == second) {
      last_from_second = i;
    }
  }
  EXPECT_EQ(count(last_from_second, true, [&](const auto& e) { return e.path.local != second; }),
            0u);
}

TEST_F(MigrationTest, ClientMovesToThePreferredAddress) {
  const SocketAddress preferred = SocketAddress::ipv4(10, 0, 0, 9, 8443);
  PairOptions options;
  options.server.connection.preferred_address_v4 = preferred;
  start(options);
  pair_->simulator->add_server_address(preferred);
  ASSERT_NO_FATAL_FAILURE(finish_download());
  ASSERT_NE(server(), nullptr);
  EXPECT_TRUE(client()->peer_parameters().has(wire::TransportParameter::kPreferredAddress));
  EXPECT_EQ(client()->active_path().remote, preferred);
  EXPECT_EQ(server()->active_path().local, preferred);
  // The handshake ran on the original address, the download on the
  // preferred one: every datagram after the first to the preferred address
  // goes there, and the server answers from it.
  const auto first_to_preferred =
      std::find_if(log_.entries.begin(), log_.entries.end(),
                   [&](const auto& e) { return e.client_to_server && e.path.remote == preferred; });
  ASSERT_NE(first_to_preferred, log_.entries.end());
  const size_t from = static_cast<size_t>(first_to_preferred - log_.entries.begin());
  EXPECT_GT(count(0, true, [&](const auto& e) { return e.path.remote == kServerAddress; }), 0u);
  EXPECT_GE(first_to_preferred->size, 1200u);  // the client's PATH_CHALLENGE
  size_t last_to_original = 0;
  for (size_t i = 0; i < log_.entries.size(); ++i) {
    const auto& e = log_.entries[i];
    if (e.client_to_server && e.path.remote == kServerAddress) last_to_original = i;
  }
  EXPECT_EQ(
      count(last_to_original + 1, true, [&](const auto& e) { return e.path.remote != preferred; }),
      0u);
  const uint64_t from_preferred =
      count(from, false, [&](const auto& e) { return e.path.local == preferred; });
  const uint64_t all_server = count(0, false, [](const auto&) { return true; });
  // Most of the download (about 2900 datagrams) came from the preferred
  // address.
  EXPECT_GT(from_preferred, all_server * 9 / 10);
  // The last datagrams of the download came from there.
  const auto last_server = std::find_if(log_.entries.rbegin(), log_.entries.rend(),
                                        [](const auto& e) { return !e.client_to_server; });
  ASSERT_NE(last_server, log_.entries.rend());
  EXPECT_EQ(last_server->path.local, preferred);
}

}  // namespace
}  // namespace dpquic::harness
