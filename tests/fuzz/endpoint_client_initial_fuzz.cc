// One datagram from the server's address into a fresh client endpoint that
// has just sent its first Initial, with null packet protection
// (tests/fuzz/null_packet_protection.h): the server's first flight (Initial,
// Handshake), Retry (its integrity tag is the null one: zeros), Version
// Negotiation, stateless resets. The client's CIDs come from its fixed seed
// (see the seeds written by endpoint_seed_capture). Then whatever the client
// sends, and its next timers.
#include <cstdint>

#include "tests/fuzz/fuzz_pair.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace dpquic;
  if (size > 65527) return 0;  // larger than any UDP payload: no endpoint needed
  std::unique_ptr<endpoint::Endpoint> client = fuzz::make_client();
  const conn::PathAddresses path{fuzz::kClientAddress, fuzz::kServerAddress};
  if (!client->connect(kSecond, path, "localhost")) {
    __builtin_trap();  // a fresh endpoint always has a slot
  }
  fuzz::take_transmit(*client, kSecond);
  fuzz::deliver_alone(*client, kSecond, path, {data, size});
  return 0;
}
