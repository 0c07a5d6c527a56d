// impair: a loopback UDP relay that impairs traffic between QUIC clients and
// a server (loss, bursts, corruption, reordering, duplication, delay, rate,
// blackholes, NAT rebinding), reproducibly from a seed. See --help.

#include <signal.h>

#include <iostream>
#include <stdexcept>
#include <string>
#include <vector>

#include "dataplane/udp/socket_address_conv.h"
#include "tools/impair/impair_options.h"
#include "tools/impair/relay.h"

int main(int argc, char** argv) {
  using namespace dpquic::impair;
  std::vector<std::string> args(argv + 1, argv + argc);
  std::string error;
  const std::optional<ImpairOptions> options = parse_impair_options(args, error);
  if (!options) {
    std::cerr << error << "\n";
    return 2;
  }
  if (options->help) {
    std::cout << impair_usage();
    return 0;
  }
  // Delivered through the relay's signalfd instead.
  sigset_t signals;
  sigemptyset(&signals);
  sigaddset(&signals, SIGINT);
  sigaddset(&signals, SIGTERM);
  sigprocmask(SIG_BLOCK, &signals, nullptr);
  try {
    Relay relay(*options);
    std::cout << "impair: listening on "
              << dpquic::dataplane::format_address(relay.listen_address()) << ", forwarding to "
              << dpquic::dataplane::format_address(options->server) << " (seed " << options->seed
              << ")" << std::endl;
    relay.run(std::cout);
  } catch (const std::exception& e) {
    std::cerr << e.what() << "\n";
    return 1;
  }
  return 0;
}
