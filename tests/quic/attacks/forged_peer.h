#pragma once
// The attacker of the attack regression tests: a real client and server
// complete a handshake over the in-memory network (tests/quic/harness), then
// the ForgedPeer takes the place of one of them. It keeps that side's 1-RTT
// secrets, seals 1-RTT packets with arbitrary frames under them (what the
// real peer could have sent, byte for byte), delivers them to the other
// endpoint (the victim) from the impersonated side's address, drives the
// victim's timers by hand and decrypts everything the victim sends back.
//
// Calls into the victim endpoint are counted by //tools/testbed:allocation_counter,
// so tests linking this library must set linkstatic = True.

#include <gtest/gtest.h>

#include <cstddef>
#include <cstdint>
#include <functional>
#include <optional>
#include <span>
#include <vector>

#include "crypto/packet_keys.h"
#include "quic/endpoint/endpoint.h"
#include "quic/wire/ack_ranges.h"
#include "quic/wire/connection_id.h"
#include "quic/wire/frames.h"
#include "quic/wire/varint.h"
#include "tools/testbed/lent_buffers.h"
#include "tools/testbed/perf_app.h"
#include "tools/testbed/quic_pair.h"

namespace dpquic::attacks {

enum class Side : uint8_t { kClient, kServer };

// One 1-RTT packet the victim sent, decrypted.
struct VictimPacket {
  uint64_t packet_number = 0;
  std::vector<uint8_t> payload;  // the frames, in plaintext

  // The payload decoded (spans point into `payload`); stops at an error.
  std::vector<wire::Frame> frames() const;
  size_t count(wire::FrameType type) const;
};

// A CONNECTION_CLOSE the victim sent.
struct ObservedClose {
  uint64_t error_code = 0;
  uint64_t frame_type = 0;
  bool application = false;
};

// Encodes frames into a fixed buffer (no allocation after construction).
class FrameBuffer {
 public:
  explicit FrameBuffer(size_t capacity = 1200) : storage_(capacity), writer_(storage_) {}
  // False (nothing written) when the frame does not fit.
  bool add(const wire::Frame& frame);
  // An ACK frame for `ranges` (descending, disjoint, non-adjacent).
  bool add_ack(std::span<const wire::AckRange> ranges, uint64_t ack_delay = 0);
  bool pad_to(size_t size);
  size_t size() const { return writer_.position(); }
  size_t remaining() const { return writer_.remaining(); }
  std::span<const uint8_t> bytes() const { return {storage_.data(), writer_.position()}; }
  void clear() { writer_ = wire::ByteWriter(storage_); }

 private:
  std::vector<uint8_t> storage_;
  wire::ByteWriter writer_;
};

// Frame constructors.
wire::Frame ping_frame();
wire::Frame path_challenge_frame(uint64_t value);
// `cid` must outlive the frame; the reset token is derived from `sequence`.
wire::Frame new_connection_id_frame(uint64_t sequence, uint64_t retire_prior_to,
                                    std::span<const uint8_t> cid);
wire::Frame crypto_frame(uint64_t offset, std::span<const uint8_t> data);
wire::Frame stream_frame(uint64_t stream_id, uint64_t offset, std::span<const uint8_t> data,
                         bool fin = false);

class ForgedPeer {
 public:
  // A QuicPair with `options`; nothing runs yet.
  explicit ForgedPeer(Side impersonated, harness::PairOptions options = harness::PairOptions());
  ForgedPeer(const ForgedPeer&) = delete;
  ForgedPeer& operator=(const ForgedPeer&) = delete;

  // Connects, runs the pair until both sides confirmed the handshake, lets
  // the traffic settle, then take_over().
  // `after_connect` runs right after connect (e.g. to queue a request).
  void establish(const std::function<void(endpoint::ConnectionHandle)>& after_connect = {});
  // establish() with a perf download of `bytes` under way: `client` asks
  // for it at connect, `server` serves it as the victim's application.
  void establish_download(harness::PerfServer& server, harness::PerfClient& client, uint64_t bytes);
  // From now on the simulator no longer runs: the victim is driven by hand
  // and the impersonated endpoint is never called again. Captures the keys,
  // CIDs and addresses of the impersonated connection.
  void take_over();

  harness::QuicPair& pair() { return pair_; }
  endpoint::ConnectionHandle client_handle() const { return client_handle_; }
  endpoint::Endpoint& victim_endpoint();
  // The victim's connection (null once the endpoint freed it). After
  // calling into it directly, wake_victim() so that its endpoint polls it.
  conn::Connection* victim();
  void wake_victim() { victim_endpoint().wake(victim_handle_); }
  Instant now() const { return now_; }

  // Seals `frames` (an encoded payload) into a 1-RTT packet with the next
  // packet number, delivers it to the victim and collects its answer. With
  // auto_ack (the default) an ACK of every victim packet opened so far is
  // put in front of the frames, as the real peer would.
  void send(std::span<const uint8_t> frames);
  void send(const FrameBuffer& frames) { send(frames.bytes()); }
  // Delivers an arbitrary datagram to the victim as if from the
  // impersonated side and collects its answer.
  void deliver(std::span<const uint8_t> datagram);
  void set_auto_ack(bool on) { auto_ack_ = on; }
  // The victim's application, run after every input to the victim and
  // before polling it for output (like EndpointNode's); it reads the
  // victim's events itself. Without one, the peer drains them.
  void set_victim_application(std::function<void(Instant)> application) {
    application_ = std::move(application);
  }
  // Off: send/deliver do not poll the victim for output (it queues what it
  // would send, as when it cannot transmit between datagrams); flush()
  // collects it.
  void set_collect(bool on) { collect_ = on; }
  void flush() { collect(); }
  uint64_t next_packet_number() const { return next_packet_number_; }
  // The length of the impersonated side's CIDs (which the victim sends to).
  size_t own_cid_length() const { return own_cid_length_; }

  // Lets virtual time pass, firing the victim's timers and collecting its
  // output; returns at now() + duration.
  void advance(Duration duration);

  // What the victim sent since take_over().
  const std::vector<VictimPacket>& received() const { return received_; }
  uint64_t victim_datagrams() const { return victim_datagrams_; }
  uint64_t victim_bytes() const { return victim_bytes_; }
  size_t undecryptable() const { return undecryptable_; }
  // Every packet number the victim used, as ACK ranges (descending).
  std::vector<wire::AckRange> victim_packet_ranges() const;
  // The first CONNECTION_CLOSE the victim sent, if any.
  std::optional<ObservedClose> close() const;
  size_t count_frames(wire::FrameType type) const;
  // Blocks the victim endpoint's pool has lent out.
  size_t victim_blocks_in_use() { return victim_endpoint().core().blocks->blocks_in_use(); }
  // The victim endpoint's events (drained after every call, so that it
  // frees finished connections).
  const std::vector<endpoint::EndpointEvent>& events() const { return events_; }

  // Heap allocations made inside the victim endpoint's calls (handle_*,
  // poll_transmit) since the last reset.
  size_t victim_allocations() const { return victim_allocations_; }
  void reset_victim_allocations() { victim_allocations_ = 0; }

 private:
  void collect();
  void open(std::span<uint8_t> datagram);

  harness::QuicPair pair_;
  const Side impersonated_;
  endpoint::ConnectionHandle client_handle_ = 0;
  endpoint::ConnectionHandle victim_handle_ = 0;
  bool taken_over_ = false;
  Instant now_ = 0;

  // The impersonated connection's keys (copies: its own may change).
  crypto::PacketKeys write_keys_;
  crypto::PacketKeys read_keys_;
  bool key_phase_ = false;
  wire::ConnectionId dcid_;          // a CID of the victim's
  size_t own_cid_length_ = 0;        // of the CIDs the victim sends to
  conn::PathAddresses victim_path_;  // local = victim, remote = impersonated
  uint64_t next_packet_number_ = 0;
  std::optional<uint64_t> largest_received_;
  bool auto_ack_ = true;
  bool collect_ = true;
  std::function<void(Instant)> application_;

  std::vector<uint8_t> datagram_;  // the packet being sealed
  FrameBuffer payload_{1400};
  harness::LentBuffers transmit_;

  std::vector<VictimPacket> received_;
  std::vector<endpoint::EndpointEvent> events_;
  uint64_t victim_datagrams_ = 0;
  uint64_t victim_bytes_ = 0;
  size_t undecryptable_ = 0;
  size_t victim_allocations_ = 0;
};

// For EXPECT_TRUE / ASSERT_TRUE: `close` is a transport CONNECTION_CLOSE
// with `code` naming `frame_type`.
::testing::AssertionResult closed_with(const std::optional<ObservedClose>& close,
                                       wire::TransportErrorCode code, uint64_t frame_type);
// For EXPECT_TRUE: once the victim's clock ran 10 s on (past its closing
// period) its connection is gone, its endpoint holds none, and its block
// pool is back at `blocks_before`.
::testing::AssertionResult freed_after_closing(ForgedPeer& peer, size_t blocks_before);

}  // namespace dpquic::attacks
