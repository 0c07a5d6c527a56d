// One datagram from a client's address into a fresh server endpoint, with
// null packet protection (tests/fuzz/null_packet_protection.h): Initials
// reach the TLS server and the frame parsers; anything else exercises the
// stateless paths (Version Negotiation, stateless reset, refusal). Then
// whatever the endpoint sends, and its next timer.
#include <cstdint>

#include "tests/fuzz/fuzz_pair.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace dpquic;
  std::unique_ptr<endpoint::Endpoint> server = fuzz::make_server();
  fuzz::deliver_alone(*server, kSecond,
                      conn::PathAddresses{fuzz::kServerAddress, fuzz::kClientAddress},
                      {data, size});
  return 0;
}
