#include "tools/client/client_rig.h"

#include <signal.h>

#include <cstdio>
#include <exception>

namespace dpquic::interop {

conn::SocketAddress loopback_for(const conn::SocketAddress& server) {
  return server.family == conn::AddressFamily::kIpv6
             ? conn::SocketAddress::ipv6({0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 1}, 0)
             : conn::SocketAddress::ipv4(127, 0, 0, 1, 0);
}

int guarded_main(const char* program, const std::function<int()>& body) {
  signal(SIGPIPE, SIG_IGN);
  try {
    return body();
  } catch (const std::exception& e) {
    std::fprintf(stderr, "%s: %s\n", program, e.what());
    return 2;
  }
}

}  // namespace dpquic::interop
