// The dpquic server binary: `bazel run //dataplane` serves h3 and perf on
// 127.0.0.1:4433 and [::1]:4433. See `dataplane --help`.
#include <signal.h>

#include <cstdio>
#include <exception>
#include <string>

#include "dataplane/server.h"
#include "dataplane/server_options.h"

int main(int argc, char** argv) {
  std::string error;
  const auto options = dpquic::dataplane::parse_server_options(argc, argv, error);
  if (!options) {
    std::fprintf(stderr, "%s\n", error.c_str());
    return 2;
  }
  if (options->help) {
    std::fputs(dpquic::dataplane::server_usage(), stdout);
    return 0;
  }
  // Shard threads inherit this mask; the main thread takes the signals
  // with sigwait and stops the shards gracefully.
  // A shell starts background jobs with SIGINT ignored, and an ignored
  // signal is discarded rather than left pending for sigwait: take both
  // back first (blocked, their default action never runs).
  signal(SIGINT, SIG_DFL);
  signal(SIGTERM, SIG_DFL);
  signal(SIGHUP, SIG_DFL);
  sigset_t signals;
  sigemptyset(&signals);
  sigaddset(&signals, SIGINT);
  sigaddset(&signals, SIGTERM);
  sigaddset(&signals, SIGHUP);
  pthread_sigmask(SIG_BLOCK, &signals, nullptr);
  signal(SIGPIPE, SIG_IGN);
  try {
    dpquic::dataplane::Server server(*options);
    std::fputs(server.banner().c_str(), stdout);
    std::fflush(stdout);
    server.run();
    std::fputs(server.totals_line().c_str(), stdout);
    std::puts("dataplane: stopped");
  } catch (const std::exception& e) {
    std::fprintf(stderr, "dataplane: %s\n", e.what());
    return 2;
  }
  return 0;
}
