// Per-path destination connection IDs on the wire (RFC 9000 §9.5): "An
// endpoint MUST NOT reuse a connection ID when sending to more than one
// destination address", nor "when sending from more than one local address".
// Every short-header datagram of a download is logged with its DCID; across
// a NAT rebinding (the server re-validates the old address, §9.3.3), a
// client migration (likewise) and the move to the server's preferred
// address (§9.6), no DCID may go to two destination addresses, and a path
// the client left has its CID retired.
//
// Also the §9.5 exception: a server out of unused CIDs that receives packets
// from a new address with an unchanged DCID (a NAT rebinding) may answer
// there with the CID it already uses; the download then still completes.

#include <gtest/gtest.h>

#include <map>
#include <set>
#include <vector>

#include "tests/quic/harness/download_fixture.h"
#include "tools/testbed/perf_app.h"
#include "tools/testbed/quic_pair.h"

namespace dpquic::harness {
namespace {

constexpr uint64_t kTransferBytes = 2 << 20;

const SocketAddress kClientAddress = SocketAddress::ipv4(10, 0, 0, 1, 50000);
const SocketAddress kServerAddress = SocketAddress::ipv4(10, 0, 0, 2, 443);

using Cid = std::vector<uint8_t>;

struct Sent {
  bool client_to_server;
  PathAddresses path;  // local = source, remote = destination
  Cid dcid;
};

// Short-header datagrams with their DCIDs. The CID lengths come from the
// long headers' SCIDs: the client's tells the DCID length of the server's
// short headers, and the other way round.
class DcidLog {
 public:
  void record(bool client_to_server, const Datagram& d) {
    const std::span<const uint8_t> bytes = d.bytes;
    if (bytes.empty()) return;
    if ((bytes[0] & 0x80) != 0) {
      if (bytes.size() < 7) return;
      const size_t dcid_length = bytes[5];
      if (bytes.size() <= 6 + dcid_length) return;
      (client_to_server ? client_cid_length_ : server_cid_length_) = bytes[6 + dcid_length];
      return;
    }
    // Short header: its DCID is the receiver's CID.
    const size_t length = client_to_server ? server_cid_length_ : client_cid_length_;
    ASSERT_NE(length, 0u) << "short header before any long header";
    ASSERT_GT(bytes.size(), 1 + length);
    sent_.push_back(
        Sent{client_to_server, d.path, Cid(bytes.begin() + 1, bytes.begin() + 1 + length)});
  }

  const std::vector<Sent>& sent() const { return sent_; }

  // RFC 9000 §9.5: each DCID a sender used went to one destination address
  // (and, with `check_source`, from one local address). The client's
  // source is not checked across a NAT rebinding: it did not change its
  // local address, the NAT did.
  void expect_one_path_per_dcid(bool client_to_server, bool check_source) const {
    std::map<Cid, SocketAddress> destination;
    std::map<Cid, SocketAddress> source;
    for (const Sent& s : sent_) {
      if (s.client_to_server != client_to_server) continue;
      const auto [to, new_to] = destination.emplace(s.dcid, s.path.remote);
      EXPECT_TRUE(to->second == s.path.remote)
          << (client_to_server ? "client" : "server") << " sent one DCID to two addresses";
      if (check_source) {
        const auto [from, new_from] = source.emplace(s.dcid, s.path.local);
        EXPECT_TRUE(from->second == s.path.local)
            << (client_to_server ? "client" : "server") << " sent one DCID from two addresses";
      }
    }
  }

  // The distinct DCIDs of datagrams from index `from` on in one direction
  // to `destination`.
  std::set<Cid> dcids_to(bool client_to_server, const SocketAddress& destination,
                         size_t from = 0) const {
    std::set<Cid> out;
    for (size_t i = from; i < sent_.size(); ++i) {
      const Sent& s = sent_[i];
      if (s.client_to_server == client_to_server && s.path.remote == destination)
        out.insert(s.dcid);
    }
    return out;
  }

 private:
  size_t client_cid_length_ = 0;
  size_t server_cid_length_ = 0;
  std::vector<Sent> sent_;
};

class PathCidTest : public DownloadFixture {
 protected:
  void start(PairOptions options = PairOptions()) {
    start_download(options, kClientAddress, kServerAddress, kTransferBytes);
    pair_->simulator->set_observer(
        [this](bool c2s, Instant, const Datagram& d) { log_.record(c2s, d); });
  }

  DcidLog log_;
};

TEST_F(PathCidTest, NatRebindingGivesTheNewAddressItsOwnCid) {
  start();
  run_until_received(512 << 10);
  ASSERT_NE(server(), nullptr);
  SocketAddress external = kClientAddress;
  external.port = static_cast<uint16_t>(kClientAddress.port + 1);
  const size_t log_from = log_.sent().size();
  pair_->simulator->set_nat_rebinding({.at = pair_->simulator->now(), .change_port = true});
  ASSERT_NO_FATAL_FAILURE(finish_download());
  ASSERT_EQ(server()->active_path().remote, external);
  // The server sent to both addresses after the rebinding: the new one, and
  // the old one, re-validated (§9.3.3) or still in use until it noticed.
  const std::set<Cid> to_new = log_.dcids_to(false, external, log_from);
  const std::set<Cid> to_old = log_.dcids_to(false, kClientAddress, log_from);
  ASSERT_FALSE(to_new.empty());
  ASSERT_FALSE(to_old.empty());
  log_.expect_one_path_per_dcid(false, true);
  log_.expect_one_path_per_dcid(true, false);
  // The client, unaware of the rebinding, kept its DCID.
  EXPECT_EQ(log_.dcids_to(true, kServerAddress, log_from).size(), 1u);
}

TEST_F(PathCidTest, ClientMigrationsUseNewCidsOnEachSideAndRetireTheOldOnes) {
  start();
  run_until_received(512 << 10);
  ASSERT_NE(server(), nullptr);
  const SocketAddress second = SocketAddress::ipv4(10, 0, 1, 7, 40000);
  const size_t log_from = log_.sent().size();
  const std::set<Cid> client_old = log_.dcids_to(true, kServerAddress);
  ASSERT_EQ(client_old.size(), 1u);
  ASSERT_TRUE(client()->migrate(pair_->simulator->now(), second));
  pair_->client->wake(handle_);
  ASSERT_NO_FATAL_FAILURE(finish_download());
  EXPECT_EQ(client()->active_path().local, second);
  EXPECT_EQ(server()->active_path().remote, second);

  // The server re-validated the client's old address (§9.3.3) after it
  // moved: with a CID it never sent to the new address.
  const std::set<Cid> server_to_new = log_.dcids_to(false, second, log_from);
  const std::set<Cid> server_to_old = log_.dcids_to(false, kClientAddress, log_from);
  ASSERT_FALSE(server_to_new.empty());
  ASSERT_FALSE(server_to_old.empty());
  log_.expect_one_path_per_dcid(false, true);
  log_.expect_one_path_per_dcid(true, true);

  // The client's datagrams from the new address use one new CID.
  std::set<Cid> client_new;
  size_t last_from_old = 0;
  for (size_t i = log_from; i < log_.sent().size(); ++i) {
    const Sent& s = log_.sent()[i];
    if (!s.client_to_server) continue;
    if (s.path.local == second) client_new.insert(s.dcid);
    if (s.path.local == kClientAddress) last_from_old = i;
  }
  ASSERT_EQ(client_new.size(), 1u);
  EXPECT_EQ(client_old.count(*client_new.begin()), 0u);
  // Its old path is abandoned once the new one validated: nothing is sent
  // from the old address after the first datagrams of the move.
  for (size_t i = last_from_old + 1; i < log_.sent().size(); ++i) {
    if (log_.sent()[i].client_to_server) {
      EXPECT_EQ(log_.sent()[i].path.local, second);
    }
  }
  // Each left path's CID is retired, and the server replaces it (§5.1.2):
  // the server issued 4 CIDs (the client's active_connection_id_limit), so
  // without retirements the client could not make five more moves, each
  // with a CID never used before.
  std::set<Cid> used = client_old;
  used.insert(*client_new.begin());
  for (uint8_t move = 0; move < 5; ++move) {
    const SocketAddress next = SocketAddress::ipv4(10, 0, 2, static_cast<uint8_t>(10 + move),
                                                   static_cast<uint16_t>(41000 + move));
    const size_t log_next = log_.sent().size();
    ASSERT_TRUE(client()->migrate(pair_->simulator->now(), next)) << "move " << int{move};
    EXPECT_FALSE(client()->migrate(pair_->simulator->now(), next));  // already there
    pair_->client->wake(handle_);
    client_app_->request(handle_, kTransferBytes / 8);
    ASSERT_TRUE(pair_->run_until([&] { return client_app_->completed() == 2u + move; }));
    EXPECT_EQ(client_app_->mismatches(), 0u);
    EXPECT_EQ(server()->active_path().remote, next);
    std::set<Cid> from_next;
    for (size_t i = log_next; i < log_.sent().size(); ++i) {
      const Sent& s = log_.sent()[i];
      if (s.client_to_server && s.path.local == next) from_next.insert(s.dcid);
    }
    ASSERT_EQ(from_next.size(), 1u);
    EXPECT_TRUE(used.insert(*from_next.begin()).second) << "a CID used before, move " << int{move};
  }
  log_.expect_one_path_per_dcid(false, true);
  log_.expect_one_path_per_dcid(true, true);
}

TEST_F(PathCidTest, PreferredAddressMoveUsesAnotherCidOnBothSides) {
  const SocketAddress preferred = SocketAddress::ipv4(10, 0, 0, 9, 8443);
  PairOptions options;
  options.server.connection.preferred_address_v4 = preferred;
  start(options);
  pair_->simulator->add_server_address(preferred);
  ASSERT_NO_FATAL_FAILURE(finish_download());
  EXPECT_EQ(client()->active_path().remote, preferred);
  EXPECT_EQ(server()->active_path().local, preferred);
  const std::set<Cid> client_to_original = log_.dcids_to(true, kServerAddress);
  const std::set<Cid> client_to_preferred = log_.dcids_to(true, preferred);
  ASSERT_FALSE(client_to_original.empty());
  ASSERT_EQ(client_to_preferred.size(), 1u);
  // The server sent from both of its addresses, with different CIDs.
  std::set<Cid> from_original, from_preferred;
  for (const Sent& s : log_.sent()) {
    if (s.client_to_server) continue;
    (s.path.local == preferred ? from_preferred : from_original).insert(s.dcid);
  }
  ASSERT_FALSE(from_original.empty());
  ASSERT_FALSE(from_preferred.empty());
  log_.expect_one_path_per_dcid(false, true);
  log_.expect_one_path_per_dcid(true, true);
}

// §9.5 MAY: the server holds only two of the client's CIDs (its
// active_connection_id_limit is 2). A first rebinding takes the unused one;
// a second, before the client could replace the CIDs the server retires,
// finds none: the client kept its DCID, so the server answers at the new
// address with the CID of the path the client came from. The connection
// survives and the download completes byte-exact.
TEST_F(PathCidTest, ServerOutOfCidsAnswersARebindingWithTheCurrentCid) {
  PairOptions options;
  options.server.connection.transport.active_connection_id_limit = 2;
  start(options);
  run_until_received(512 << 10);
  ASSERT_NE(server(), nullptr);
  const size_t log_from = log_.sent().size();
  pair_->simulator->set_nat_rebinding({.at = pair_->simulator->now(), .change_port = true});
  ASSERT_TRUE(pair_->run_until([&] {
    return !log_.dcids_to(false, pair_->simulator->client_external_address(), log_from).empty();
  }));
  const SocketAddress first = pair_->simulator->client_external_address();
  pair_->simulator->set_nat_rebinding({.at = pair_->simulator->now(), .change_port = true});
  ASSERT_NO_FATAL_FAILURE(finish_download());
  const SocketAddress second = pair_->simulator->client_external_address();
  ASSERT_NE(second, first);
  EXPECT_EQ(server()->active_path().remote, second);
  // The first datagram to the second address carried the CID the server
  // was using towards the first one.
  std::optional<Cid> first_to_second;
  std::set<Cid> to_first_before;
  for (size_t i = log_from; i < log_.sent().size() && !first_to_second; ++i) {
    const Sent& s = log_.sent()[i];
    if (s.client_to_server) continue;
    if (s.path.remote == first) to_first_before.insert(s.dcid);
    if (s.path.remote == second) first_to_second = s.dcid;
  }
  ASSERT_TRUE(first_to_second.has_value());
  EXPECT_EQ(to_first_before.count(*first_to_second), 1u);
  // Still, the server never reused a CID towards the original address.
  const std::set<Cid> to_original = log_.dcids_to(false, kClientAddress);
  EXPECT_EQ(to_original.count(*first_to_second), 0u);
}

}  // namespace
}  // namespace dpquic::harness
