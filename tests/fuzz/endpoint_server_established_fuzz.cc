// Datagrams to a server whose connection with our client completed its
// handshake in memory (real TLS, null packet protection:
// tests/fuzz/null_packet_protection.h). The input is datagrams separated by
// "QDGM"; each is delivered from the client's address (from its other
// address if the datagram starts with "QPTH"), then the server sends and fires
// timers due within a second. From the handshake on, nothing reaches the real
// client any more: the input alone plays the client (see
// FuzzPair::disconnect). 1-RTT packets name the server's CID from the fixed
// seed (as in the captured seeds).
#include <cstdint>

#include "tests/fuzz/fuzz_pair.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  dpquic::fuzz::deliver_established(/*to_server=*/true, {data, size});
  return 0;
}
