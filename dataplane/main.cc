// The dpquic server binary. The serving engine is not built yet: until it is,
// this prints its intended usage and what is missing, and exits 2 rather than
// pretend to serve.
#include <cstdio>
#include <cstring>

namespace {

constexpr char kUsage[] =
    "usage: dataplane [--backend=udp|dpdk] [--listen=HOST:PORT]... [--cert=PEM --key=PEM]\n"
    "                 [--root=DIR] [--cores=N] [--retry=auto|always|never]\n"
    "                 [--max-connections=N] [--cc=newreno|cubic] [--gso=on|off]\n"
    "                 [--eal=\"EAL ARGS\"] [--stats=SECONDS] [--qlog-dir=DIR]\n"
    "\n"
    "Terminates QUIC (RFC 9000/9001/9002) and serves HTTP/3 (ALPN h3) and the perf\n"
    "protocol (ALPN perf), by default on 127.0.0.1:4433 and [::1]:4433.\n";

constexpr char kNotYet[] =
    "dataplane: not implemented yet. What exists today is the QUIC wire codec\n"
    "(//quic/wire: varints and packet numbers). Still to come: packet protection and\n"
    "TLS (crypto/), recovery, connections and endpoints (quic/), and the kernel-UDP\n"
    "and DPDK backends with the HTTP/3 and perf applications (dataplane/).\n"
    "See README.md for the status table.\n";

}  // namespace

int main(int argc, char** argv) {
  for (int i = 1; i < argc; ++i) {
    if (std::strcmp(argv[i], "--help") == 0 || std::strcmp(argv[i], "-h") == 0) {
      std::fputs(kUsage, stdout);
      std::fputs("\n", stdout);
      std::fputs(kNotYet, stdout);
      return 0;
    }
  }
  std::fputs(kUsage, stderr);
  std::fputs("\n", stderr);
  std::fputs(kNotYet, stderr);
  return 2;
}
