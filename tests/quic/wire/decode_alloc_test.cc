// Proves that decoding allocates nothing: every operator new and (outside
// sanitizer builds) every malloc/calloc/realloc is counted
// (//tools/testbed:allocation_counter) while a packet
// holding every frame type, and a coalesced datagram with its headers and a
// transport-parameter blob, are decoded 10000 times each. The counter is shown to
// work by allocating inside the same kind of window.
#include <gtest/gtest.h>

#include <cstdlib>
#include <vector>

#include "quic/wire/coalesced.h"
#include "quic/wire/frame_codec.h"
#include "quic/wire/header.h"
#include "quic/wire/transport_params.h"
#include "quic/wire/version_negotiation.h"
#include "tests/quic/wire/frame_test_util.h"
#include "tools/testbed/allocation_counter.h"

namespace dpquic::wire {
namespace {

using ::dpquic::testing::AllocationWindow;

// Keeps test allocations observable so the compiler cannot elide them.
void* volatile g_sink = nullptr;

TEST(DecodeAllocTest, CounterSeesOperatorNew) {
  AllocationWindow window;
  int* p = new int(42);
  g_sink = p;
  delete p;
  EXPECT_GE(window.count(), 1u);
}

TEST(DecodeAllocTest, CounterSeesMalloc) {
  if (!::dpquic::testing::counts_malloc())
    GTEST_SKIP() << "sanitizer build: malloc belongs to the runtime";
  AllocationWindow window;
  void* p = std::malloc(64);
  g_sink = p;
  std::free(p);
  EXPECT_GE(window.count(), 1u);
}

TEST(DecodeAllocTest, DecodingEveryFrameTypeAllocatesNothing) {
  // Built before the window opens: the packet, and a sample to compare with.
  const std::vector<uint8_t> payload = testing::every_frame_payload();
  const size_t expected_frames = testing::sample_frames().size();
  // Close with a STREAM frame without Length, as a real 1-RTT packet would.
  std::vector<uint8_t> packet = payload;
  packet.insert(packet.end(), {0x0c, 0x04, 0x41, 0x00, 'd', 'a', 't', 'a'});

  size_t frames = 0, stream_bytes = 0, ack_ranges = 0;
  {
    AllocationWindow window;
    for (int i = 0; i < 10000; ++i) {
      FrameDecoder decoder(packet);
      Frame frame;
      while (!decoder.done()) {
        if (decoder.next(frame) != WireError::kOk) break;
        ++frames;
        if (frame.type == FrameType::kStream) stream_bytes += frame.stream.data.size();
        if (frame.type == FrameType::kAck || frame.type == FrameType::kAckEcn) {
          for (const AckRange& range : frame.ack.ranges) ack_ranges += range.largest != 0;
        }
      }
    }
    EXPECT_EQ(window.count(), 0u);
  }
  EXPECT_EQ(frames, 10000 * (expected_frames + 1));
  EXPECT_EQ(stream_bytes, 10000u * (10 + 4));
  EXPECT_EQ(ack_ranges, 10000u * 2 * 4);
}

// An Initial, a Handshake and a 1-RTT packet in one datagram, as a server's
// first flight ends up; payloads are arbitrary bytes (no decryption here).
std::vector<uint8_t> coalesced_datagram(std::span<const uint8_t> dcid,
                                        std::span<const uint8_t> scid) {
  std::vector<uint8_t> datagram(1500);
  ByteWriter writer(datagram);
  const auto write_long = [&](PacketType type, uint64_t pn, size_t payload_size) {
    LongHeaderFields fields;
    fields.type = type;
    fields.dcid = dcid;
    fields.scid = scid;
    fields.packet_number = pn;
    EncodedHeader header;
    const size_t start = writer.position();
    ASSERT_TRUE(encode_long_header(writer, fields, header));
    ASSERT_TRUE(writer.fill(0x5a, payload_size));
    ASSERT_TRUE(patch_long_header_length(std::span(datagram).subspan(start), header, payload_size));
  };
  write_long(PacketType::kInitial, 0, 300);
  write_long(PacketType::kHandshake, 0, 400);
  ShortHeaderFields short_fields;
  short_fields.dcid = dcid;
  short_fields.packet_number = 7;
  EncodedHeader short_header;
  EXPECT_TRUE(encode_short_header(writer, short_fields, short_header));
  EXPECT_TRUE(writer.fill(0xa5, 200));
  datagram.resize(writer.position());
  return datagram;
}

TEST(DecodeAllocTest, SplittingAndHeaderParsingAllocateNothing) {
  const std::vector<uint8_t> dcid = {1, 2, 3, 4, 5, 6, 7, 8};
  const std::vector<uint8_t> scid = {9, 10, 11, 12};
  const std::vector<uint8_t> datagram = coalesced_datagram(dcid, scid);
  ASSERT_FALSE(datagram.empty());

  size_t packets = 0, payload_bytes = 0, errors = 0;
  {
    AllocationWindow window;
    for (int i = 0; i < 10000; ++i) {
      DatagramSplitter splitter(datagram, dcid.size());
      CoalescedPacket packet;
      while (splitter.next(packet)) {
        ++packets;
        PacketNumberFields fields;
        // The payload bytes are not protected here, so the "unprotected"
        // first byte is the one encoded: its reserved bits are zero.
        if (decode_packet_number_fields(packet.bytes, packet.header, std::nullopt, fields) !=
            WireError::kOk) {
          ++errors;
          continue;
        }
        payload_bytes += fields.payload_size;
      }
      errors += splitter.error() != WireError::kOk;
    }
    EXPECT_EQ(window.count(), 0u);
  }
  EXPECT_EQ(errors, 0u);
  EXPECT_EQ(packets, 3u * 10000);
  EXPECT_EQ(payload_bytes, 10000u * (300 + 400 + 200));
}

TEST(DecodeAllocTest, VersionNegotiationParsingAllocatesNothing) {
  const std::vector<uint8_t> dcid = {1, 2, 3, 4, 5, 6, 7, 8};
  const std::vector<uint8_t> scid = {9, 10, 11, 12};
  const uint32_t supported[] = {kVersion1, kVersion2};
  std::vector<uint8_t> packet(128);
  ByteWriter writer(packet);
  ASSERT_NE(build_version_negotiation(writer, dcid, scid, supported, 42), 0u);
  packet.resize(writer.position());

  size_t found = 0;
  {
    AllocationWindow window;
    for (int i = 0; i < 10000; ++i) {
      ParsedHeader header;
      VersionNegotiationPacket vn;
      found += parse_packet_header(packet, 0, header) == WireError::kOk &&
               header.type == PacketType::kVersionNegotiation &&
               parse_version_negotiation(packet, vn) == WireError::kOk &&
               vn.versions.contains(kVersion2);
    }
    EXPECT_EQ(window.count(), 0u);
  }
  EXPECT_EQ(found, 10000u);
}

TEST(DecodeAllocTest, TransportParameterDecodingAllocatesNothing) {
  TransportParameters sent;
  sent.initial_max_data = 1 << 20;
  sent.mark_present(TransportParameter::kInitialMaxData);
  sent.initial_max_streams_bidi = 100;
  sent.mark_present(TransportParameter::kInitialMaxStreamsBidi);
  sent.max_idle_timeout_ms = 30000;
  sent.mark_present(TransportParameter::kMaxIdleTimeout);
  const uint8_t scid[] = {1, 2, 3, 4};
  sent.initial_source_connection_id = ConnectionId(scid);
  sent.mark_present(TransportParameter::kInitialSourceConnectionId);
  sent.version_information.chosen_version = kVersion1;
  sent.version_information.available_versions[0] = kVersion1;
  sent.version_information.available_versions[1] = kVersion2;
  sent.version_information.available_version_count = 2;
  sent.mark_present(TransportParameter::kVersionInformation);
  std::vector<uint8_t> blob(512);
  ByteWriter writer(blob);
  ASSERT_TRUE(encode_transport_parameters(sent, Role::kClient, writer));
  blob.resize(writer.position());

  size_t decoded = 0;
  {
    AllocationWindow window;
    for (int i = 0; i < 10000; ++i) {
      TransportParameters received;
      decoded += decode_transport_parameters(blob, Role::kClient, received) == WireError::kOk &&
                 received == sent;
    }
    EXPECT_EQ(window.count(), 0u);
  }
  EXPECT_EQ(decoded, 10000u);
}

}  // namespace
}  // namespace dpquic::wire
