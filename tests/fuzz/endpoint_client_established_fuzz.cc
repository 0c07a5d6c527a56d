// Datagrams to a client whose connection with our server completed its
// handshake in memory (real TLS, null packet protection:
// tests/fuzz/null_packet_protection.h). The input is datagrams separated by
// "QDGM"; each is delivered from the server's address (from its other
// address if the datagram starts with "QPTH"), then the client sends and fires
// timers due within a second. From the handshake on, nothing reaches the real
// server any more: the input alone plays the server (see
// FuzzPair::disconnect). 1-RTT packets name the client's CID from the fixed
// seed (as in the captured seeds).
#include <cstdint>

#include "tests/fuzz/fuzz_pair.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  dpquic::fuzz::deliver_established(/*to_server=*/false, {data, size});
  return 0;
}
