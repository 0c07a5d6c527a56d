// A short-header packet whose CID names another core of the same server is
// dropped, not answered with a stateless reset: the shared reset key would
// make that reset valid for the live connection on the other core.

#include <gtest/gtest.h>

#include <vector>

#include "quic/conn/cid_generator.h"
#include "quic/conn/random.h"
#include "tools/testbed/quic_pair.h"

namespace dpquic::harness {
namespace {

size_t resets_for_cid_of_core(uint8_t core) {
  QuicPair pair;  // the server endpoint is core 0
  conn::RandomSource random;
  conn::CidGenerator generator(pair.options.server.cid_layout, core, random);
  const wire::ConnectionId cid = generator.generate();
  std::vector<uint8_t> datagram(200, 0x5a);
  datagram[0] = 0x40;  // short header, fixed bit
  std::copy(cid.span().begin(), cid.span().end(), datagram.begin() + 1);
  const PathAddresses path{pair.options.server_address, pair.options.client_address};
  pair.server->handle_datagram(kSimulationStart, path, transmit::EcnCodepoint::kNotEct, datagram);
  return pair.server->stats().stateless_resets_sent;
}

TEST(WrongCoreTest, CidOfAnotherCoreGetsNoStatelessReset) {
  EXPECT_EQ(resets_for_cid_of_core(1), 0u);
  EXPECT_EQ(resets_for_cid_of_core(200), 0u);
}

TEST(WrongCoreTest, CidOfThisCoreWithoutConnectionGetsAReset) {
  EXPECT_EQ(resets_for_cid_of_core(0), 1u);
}

}  // namespace
}  // namespace dpquic::harness
