#include "quic/conn/stream_id.h"

#include <gtest/gtest.h>

namespace dpquic::conn {
namespace {

using wire::Role;

constexpr auto kBidi = StreamDirection::kBidirectional;
constexpr auto kUni = StreamDirection::kUnidirectional;

// RFC 9000 Table 1: the low two bits of each stream type.
static_assert(make_stream_id(0, Role::kClient, kBidi) == 0x0);
static_assert(make_stream_id(0, Role::kServer, kBidi) == 0x1);
static_assert(make_stream_id(0, Role::kClient, kUni) == 0x2);
static_assert(make_stream_id(0, Role::kServer, kUni) == 0x3);

TEST(StreamIdTest, MakeStreamIdForAllFourTypes) {
  EXPECT_EQ(make_stream_id(0, Role::kClient, kBidi), 0u);
  EXPECT_EQ(make_stream_id(1, Role::kClient, kBidi), 4u);
  EXPECT_EQ(make_stream_id(7, Role::kClient, kBidi), 28u);
  EXPECT_EQ(make_stream_id(0, Role::kServer, kBidi), 1u);
  EXPECT_EQ(make_stream_id(1, Role::kServer, kBidi), 5u);
  EXPECT_EQ(make_stream_id(7, Role::kServer, kBidi), 29u);
  EXPECT_EQ(make_stream_id(0, Role::kClient, kUni), 2u);
  EXPECT_EQ(make_stream_id(1, Role::kClient, kUni), 6u);
  EXPECT_EQ(make_stream_id(7, Role::kClient, kUni), 30u);
  EXPECT_EQ(make_stream_id(0, Role::kServer, kUni), 3u);
  EXPECT_EQ(make_stream_id(1, Role::kServer, kUni), 7u);
  EXPECT_EQ(make_stream_id(7, Role::kServer, kUni), 31u);
  // The largest index gives the largest varint.
  const uint64_t last_index = (uint64_t{1} << 60) - 1;
  EXPECT_EQ(make_stream_id(last_index, Role::kServer, kUni), kMaxStreamId);
  EXPECT_EQ(make_stream_id(last_index, Role::kClient, kBidi), kMaxStreamId - 3);
}

TEST(StreamIdTest, DecomposesIds) {
  // RFC 9000 §19.11 example: a server's uni streams 3, 7, 11 have indexes 0, 1, 2.
  EXPECT_EQ(stream_index(3), 0u);
  EXPECT_EQ(stream_index(7), 1u);
  EXPECT_EQ(stream_index(11), 2u);
  EXPECT_EQ(stream_index(kMaxStreamId), (uint64_t{1} << 60) - 1);

  EXPECT_TRUE(is_client_initiated(0));
  EXPECT_TRUE(is_client_initiated(2));
  EXPECT_FALSE(is_client_initiated(1));
  EXPECT_FALSE(is_client_initiated(3));
  EXPECT_FALSE(is_unidirectional(0));
  EXPECT_FALSE(is_unidirectional(1));
  EXPECT_TRUE(is_unidirectional(2));
  EXPECT_TRUE(is_unidirectional(3));
  EXPECT_EQ(stream_direction(4), kBidi);
  EXPECT_EQ(stream_direction(6), kUni);
  EXPECT_EQ(stream_initiator(8), Role::kClient);
  EXPECT_EQ(stream_initiator(9), Role::kServer);

  for (uint64_t index : {uint64_t{0}, uint64_t{1}, uint64_t{12345}}) {
    for (Role role : {Role::kClient, Role::kServer}) {
      for (StreamDirection direction : {kBidi, kUni}) {
        const uint64_t id = make_stream_id(index, role, direction);
        EXPECT_EQ(stream_index(id), index);
        EXPECT_EQ(stream_initiator(id), role);
        EXPECT_EQ(stream_direction(id), direction);
      }
    }
  }
}

TEST(StreamIdTest, LocalityAndDirectionOfData) {
  // Client bidi (0): both sides send and receive.
  EXPECT_TRUE(is_local(0, Role::kClient));
  EXPECT_FALSE(is_local(0, Role::kServer));
  EXPECT_TRUE(local_can_send(0, Role::kClient));
  EXPECT_TRUE(local_can_receive(0, Role::kClient));
  EXPECT_TRUE(local_can_send(0, Role::kServer));
  EXPECT_TRUE(local_can_receive(0, Role::kServer));
  // Server bidi (1).
  EXPECT_TRUE(is_local(1, Role::kServer));
  EXPECT_TRUE(local_can_send(1, Role::kClient));
  EXPECT_TRUE(local_can_receive(1, Role::kClient));
  // Client uni (2): the client sends, the server receives.
  EXPECT_TRUE(local_can_send(2, Role::kClient));
  EXPECT_FALSE(local_can_receive(2, Role::kClient));
  EXPECT_FALSE(local_can_send(2, Role::kServer));
  EXPECT_TRUE(local_can_receive(2, Role::kServer));
  // Server uni (3): the server sends, the client receives.
  EXPECT_TRUE(local_can_send(3, Role::kServer));
  EXPECT_FALSE(local_can_receive(3, Role::kServer));
  EXPECT_FALSE(local_can_send(3, Role::kClient));
  EXPECT_TRUE(local_can_receive(3, Role::kClient));
}

}  // namespace
}  // namespace dpquic::conn
