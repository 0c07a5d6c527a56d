// Bulk runs on the send path (connection_transmit.cc): once a packet leaves
// nothing owed but stream data, the rest of the burst is the front stream's
// data with no other check per packet. These tests open the client's 1-RTT
// packets with its own keys and check the frames: a run's packets are the
// stream's data alone, up to the packet's end; streams still take turns and pack; running
// out of credit still brings DATA_BLOCKED and STREAM_DATA_BLOCKED in the same
// burst; and everything arrives byte-exact.

#include <gtest/gtest.h>

#include <algorithm>
#include <array>
#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "crypto/mb_manager.h"
#include "tests/quic/transmit/packet_reader.h"
#include "tools/testbed/lent_buffers.h"
#include "tools/testbed/quic_pair.h"

namespace dpquic::harness {
namespace {

using conn::StreamDirection;
using wire::FrameType;

constexpr size_t kSegment = 1472;
constexpr size_t kBurst = 32;

uint8_t pattern(uint64_t stream_id, uint64_t offset) {
  return static_cast<uint8_t>((offset * 7 + stream_id * 13) >> 1);
}

// One 1-RTT packet of a burst, opened: its frames' types and STREAM frames.
struct SeenPacket {
  std::vector<wire::FrameType> types;
  std::vector<wire::StreamFrame> streams;
  size_t size = 0;
};

// The client sends, the server receives; the test drives every burst.
class BulkSender {
 public:
  explicit BulkSender(PairOptions options = PairOptions())
      : pool_(16 * 1024, 512), pair_(short_links(options)) {
    handle_ = pair_.connect();
    // The handshake over the simulated network; from then on the test
    // carries every datagram itself.
    EXPECT_TRUE(pair_.run_until([&] {
      const conn::Connection* server = pair_.server_connection();
      return client().handshake_confirmed() && server != nullptr && server->handshake_confirmed();
    }));
    now_ = pair_.now();
  }

  conn::Connection& client() { return *pair_.client_connection(handle_); }
  conn::Connection& server() { return *pair_.server_connection(); }

  uint64_t open(bool incremental) {
    const uint64_t id = *client().open_stream(StreamDirection::kBidirectional);
    conn::StreamPriority priority;
    priority.incremental = incremental;
    EXPECT_TRUE(client().set_stream_priority(id, priority));
    return id;
  }
  // Queues `bytes` of the stream's pattern after what was queued before.
  void send(uint64_t id, uint64_t bytes, bool fin) {
    uint64_t& queued = queued_[id];
    while (bytes != 0) {
      const size_t n = static_cast<size_t>(std::min<uint64_t>(bytes, pool_.buffer_size()));
      std::vector<uint8_t> data(n);
      for (size_t i = 0; i < n; ++i) data[i] = pattern(id, queued + i);
      const bool last = n == bytes;
      ASSERT_EQ(client().send(id, pool_.copy_from(data), fin && last), conn::SendResult::kOk);
      queued += n;
      bytes -= n;
    }
  }

  // The server sends `bytes` on a stream of its own (ack-eliciting packets
  // the client then owes an ACK for) and the client takes them.
  void server_sends(uint64_t bytes) {
    const uint64_t id = *server().open_stream(StreamDirection::kBidirectional);
    std::vector<uint8_t> data(static_cast<size_t>(bytes), 0x5a);
    ASSERT_EQ(server().send(id, pool_.copy_from(data), false), conn::SendResult::kOk);
    acknowledge();
  }

  // One burst of the client's: its 1-RTT packets opened, then delivered.
  std::vector<SeenPacket> burst() {
    now_ += 20 * kMillisecond;
    pair_.client->handle_timeout(now_);
    pair_.server->handle_timeout(now_);
    std::vector<SeenPacket> seen;
    transmit::BurstDescriptor out;
    conn::PathAddresses path;
    if (!pair_.client->poll_transmit(now_, lent_.buffers(), out, path)) return seen;
    const crypto::PacketKeys* keys =
        client().keys().write_keys(crypto::EncryptionLevel::kApplication);
    const size_t cid_length = pair_.options.server.cid_layout.cid_length;
    for (size_t i = 0; i < out.datagram_count; ++i) {
      const std::span<uint8_t> bytes(lent_.datagram(i), out.lengths[i]);
      std::vector<transmit::testing::OpenedPacket> packets;
      EXPECT_TRUE(transmit::testing::open_datagram(mb_, bytes, cid_length,
                                                   {nullptr, nullptr, nullptr, keys}, packets));
      for (const transmit::testing::OpenedPacket& packet : packets) {
        SeenPacket entry;
        entry.size = packet.size;
        bool ok = false;
        for (const wire::Frame& frame : packet.frames(&ok)) {
          entry.types.push_back(frame.type);
          if (frame.type == FrameType::kStream) entry.streams.push_back(frame.stream);
        }
        EXPECT_TRUE(ok);
        seen.push_back(std::move(entry));
      }
      pair_.server->handle_datagram(now_, {path.remote, path.local}, out.ecn, bytes);
    }
    return seen;
  }
  // What the server sends (its ACKs) to the client.
  void acknowledge() {
    transmit::BurstDescriptor out;
    conn::PathAddresses path;
    while (pair_.server->poll_transmit(now_, lent_.buffers(), out, path)) {
      for (size_t i = 0; i < out.datagram_count; ++i) {
        pair_.client->handle_datagram(now_, {path.remote, path.local}, out.ecn,
                                      {lent_.datagram(i), out.lengths[i]});
      }
    }
  }

  // Reads what the server has of the stream; false on a byte that does not
  // match the pattern.
  bool read(uint64_t id, uint64_t& received, bool& fin) {
    std::array<uint8_t, 4096> buffer;
    bool ok = true;
    for (;;) {
      bool done = false;
      const size_t n = server().read(id, buffer, done);
      for (size_t i = 0; i < n; ++i) ok &= buffer[i] == pattern(id, received + i);
      received += n;
      fin |= done;
      if (n == 0) return ok;
    }
  }

 private:
  // A handshake RTT of 100 us: the pacer's bucket (1 ms of its rate) then
  // holds the whole initial window, so the first burst is a full one.
  static PairOptions short_links(PairOptions options) {
    options.client_to_server.one_way_delay = 50 * kMicrosecond;
    options.server_to_client.one_way_delay = 50 * kMicrosecond;
    return options;
  }

  // Before the pair: the connections' streams hold its chunks until they go.
  transmit::ChunkPool pool_;
  QuicPair pair_;
  crypto::MbManager mb_;
  endpoint::ConnectionHandle handle_{};
  Instant now_ = 0;
  std::map<uint64_t, uint64_t> queued_;
  LentBuffers lent_{kBurst, kSegment};
};

size_t count(const SeenPacket& packet, FrameType type) {
  return static_cast<size_t>(std::count(packet.types.begin(), packet.types.end(), type));
}

// "STREAM(len) ACK ..." for failure messages.
std::string describe(const SeenPacket& packet) {
  std::string text;
  size_t stream = 0;
  for (const FrameType type : packet.types) {
    text += wire::to_string(type);
    if (type == FrameType::kStream) {
      text += packet.streams[stream].has_length ? "(len)" : "(to end)";
      ++stream;
    }
    text += ' ';
  }
  return text;
}

// A run's packet: STREAM frames of one stream and nothing else, the last
// running to the packet's end (two frames where the data crosses from one
// of the application's chunks to the next).
bool only_stream_data(const SeenPacket& packet) {
  if (packet.streams.empty() || packet.types.size() != packet.streams.size() ||
      packet.streams.back().has_length) {
    return false;
  }
  for (const wire::StreamFrame& frame : packet.streams) {
    if (frame.stream_id != packet.streams[0].stream_id) return false;
  }
  return true;
}

TEST(BulkRunTest, ABurstOfOneStreamIsOnlyItsDataPacketAfterPacketByteExact) {
  BulkSender sender;
  const uint64_t id = sender.open(/*incremental=*/false);
  constexpr uint64_t kBytes = 256 * 1024;
  sender.send(id, kBytes, /*fin=*/true);
  uint64_t received = 0, next_offset = 0;
  bool fin = false;
  size_t run_packets = 0;
  for (int round = 0; round < 200 && !fin; ++round) {
    const std::vector<SeenPacket> seen = sender.burst();
    for (size_t i = 0; i < seen.size(); ++i) {
      for (const wire::StreamFrame& frame : seen[i].streams) {
        EXPECT_EQ(frame.offset, next_offset);  // nothing lost: in order
        next_offset = frame.offset + frame.data.size();
      }
      // After the burst's first packet, every packet but a last, short one
      // is the run's.
      const bool last = i + 1 == seen.size();
      if (i > 0 && !(last && seen[i].size < seen[0].size)) {
        EXPECT_TRUE(only_stream_data(seen[i])) << "burst packet " << i << ": " << describe(seen[i]);
        ++run_packets;
      }
    }
    EXPECT_TRUE(sender.read(id, received, fin));
    sender.acknowledge();
  }
  EXPECT_TRUE(fin);
  EXPECT_EQ(received, kBytes);
  EXPECT_EQ(next_offset, kBytes);
  EXPECT_GT(run_packets, 100u);
}

TEST(BulkRunTest, IncrementalStreamsStillTakeTurnsPacketByPacket) {
  BulkSender sender;
  const uint64_t a = sender.open(/*incremental=*/true);
  const uint64_t b = sender.open(/*incremental=*/true);
  sender.send(a, 64 * 1024, false);
  sender.send(b, 64 * 1024, false);
  const std::vector<SeenPacket> seen = sender.burst();
  ASSERT_GE(seen.size(), 4u);
  // Round-robin, a packet's worth per turn (stream_scheduler.h): no two
  // consecutive packets' data comes from one stream.
  for (size_t i = 1; i < seen.size(); ++i) {
    ASSERT_EQ(seen[i].streams.size(), 1u) << "packet " << i;
    ASSERT_EQ(seen[i - 1].streams.size(), 1u) << "packet " << i - 1;
    EXPECT_NE(seen[i].streams[0].stream_id, seen[i - 1].streams[0].stream_id) << "packet " << i;
  }
}

TEST(BulkRunTest, WhereAStreamEndsMidPacketTheNextStreamFillsTheRest) {
  BulkSender sender;
  const uint64_t first = sender.open(/*incremental=*/false);
  const uint64_t second = sender.open(/*incremental=*/false);
  sender.send(first, 5000, /*fin=*/true);  // ends in the fourth packet
  sender.send(second, 64 * 1024, /*fin=*/false);
  const std::vector<SeenPacket> seen = sender.burst();
  ASSERT_GE(seen.size(), 6u);
  size_t ending = seen.size();
  for (size_t i = 0; i < seen.size(); ++i) {
    for (const wire::StreamFrame& frame : seen[i].streams) {
      if (frame.stream_id == first && frame.fin) ending = i;
    }
  }
  ASSERT_LT(ending, seen.size());
  // The packet where the first stream ends also carries the second's data,
  // and every packet of the burst but the last is full.
  ASSERT_EQ(seen[ending].streams.size(), 2u);
  EXPECT_EQ(seen[ending].streams[1].stream_id, second);
  for (size_t i = 0; i + 1 < seen.size(); ++i) EXPECT_EQ(seen[i].size, seen[0].size) << i;
  for (size_t i = ending + 1; i < seen.size(); ++i) {
    ASSERT_EQ(seen[i].streams.size(), 1u);
    EXPECT_EQ(seen[i].streams[0].stream_id, second);
  }
  uint64_t received = 0;
  bool fin = false;
  EXPECT_TRUE(sender.read(first, received, fin));
  EXPECT_EQ(received, 5000u);
  EXPECT_TRUE(fin);
}

// The connection's or the stream's credit runs out inside a run: the BLOCKED
// frame goes out in the same burst, right after the last data it allows.
void expect_blocked_after_data(const std::vector<SeenPacket>& seen, FrameType blocked,
                               uint64_t data_limit) {
  uint64_t data = 0;
  size_t last_data = seen.size(), blocked_at = seen.size();
  for (size_t i = 0; i < seen.size(); ++i) {
    for (const wire::StreamFrame& frame : seen[i].streams) data += frame.data.size();
    if (!seen[i].streams.empty()) last_data = i;
    if (count(seen[i], blocked) != 0 && blocked_at == seen.size()) blocked_at = i;
  }
  EXPECT_EQ(data, data_limit);
  ASSERT_LT(blocked_at, seen.size()) << "no BLOCKED frame in the burst";
  EXPECT_LE(blocked_at, last_data + 1);
}

TEST(BulkRunTest, ConnectionCreditRunningOutBringsDataBlockedInTheSameBurst) {
  PairOptions options;
  options.server.connection.transport.initial_max_data = 9000;
  BulkSender sender(options);
  const uint64_t id = sender.open(/*incremental=*/false);
  sender.send(id, 64 * 1024, false);
  expect_blocked_after_data(sender.burst(), FrameType::kDataBlocked, 9000);
}

TEST(BulkRunTest, StreamCreditRunningOutBringsStreamDataBlockedInTheSameBurst) {
  PairOptions options;
  options.server.connection.transport.initial_max_stream_data = 7000;
  BulkSender sender(options);
  const uint64_t id = sender.open(/*incremental=*/false);
  sender.send(id, 16 * 1024, false);  // one chunk: taken whole past the credit
  expect_blocked_after_data(sender.burst(), FrameType::kStreamDataBlocked, 7000);
}

TEST(BulkRunTest, AnOwedAckGoesInTheBurstsFirstPacketOnly) {
  BulkSender sender;
  const uint64_t id = sender.open(/*incremental=*/false);
  sender.send(id, 1000, false);
  (void)sender.burst();
  sender.server_sends(1000);
  sender.send(id, 64 * 1024, false);
  const std::vector<SeenPacket> seen = sender.burst();
  ASSERT_GE(seen.size(), 4u);
  const auto acks = [](const SeenPacket& packet) {
    return count(packet, FrameType::kAck) + count(packet, FrameType::kAckEcn);
  };
  EXPECT_EQ(acks(seen[0]), 1u) << describe(seen[0]);
  for (size_t i = 1; i < seen.size(); ++i) {
    EXPECT_EQ(acks(seen[i]), 0u) << i;
    EXPECT_TRUE(only_stream_data(seen[i])) << i;
  }
}

}  // namespace
}  // namespace dpquic::harness
