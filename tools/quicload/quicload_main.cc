// quicload: dpquic's load generator and client.
//
//   bazel run //tools:quicload -- [flags] URL...
//
// See load_options.cc for the flags and docs/quicload.md for the
// report's JSON keys. Exit 0: every request (handshake) succeeded; 1: some
// failed; 2: bad usage or a start-up error (one line on stderr).
#include <signal.h>

#include <atomic>
#include <cinttypes>
#include <cstdio>
#include <exception>
#include <memory>
#include <string>

#include "dataplane/qlog/qlog_writer.h"
#include "dataplane/udp/socket_address_conv.h"
#include "tools/quicload/body_check.h"
#include "tools/quicload/load_dpdk.h"
#include "tools/quicload/load_options.h"
#include "tools/quicload/load_report.h"
#include "tools/quicload/load_run.h"

namespace {

std::atomic<bool> g_interrupted{false};

void on_interrupt(int) { g_interrupted.store(true, std::memory_order_relaxed); }

bool write_file(const std::string& path, const std::string& text) {
  std::FILE* file = std::fopen(path.c_str(), "w");
  if (file == nullptr) return false;
  const bool ok = std::fwrite(text.data(), 1, text.size(), file) == text.size();
  return std::fclose(file) == 0 && ok;
}

int run(const dpquic::tools::LoadOptions& options) {
  using namespace dpquic::tools;
  std::unique_ptr<MappedFile> verify;
  if (!options.verify_file.empty()) verify = std::make_unique<MappedFile>(options.verify_file);
  std::unique_ptr<dpquic::dataplane::QlogFactory> qlog;
  if (!options.qlog_dir.empty()) {
    qlog = std::make_unique<dpquic::dataplane::QlogFactory>(options.qlog_dir);
  }
  struct sigaction action {};
  action.sa_handler = on_interrupt;
  sigaction(SIGINT, &action, nullptr);
  sigaction(SIGTERM, &action, nullptr);

  LoadResources resources{verify.get(), qlog.get(), &g_interrupted};
  const LoadSummary summary = options.backend == LoadBackend::kDpdk
                                  ? run_dpdk_load(options, resources)
                                  : run_udp_load(options, resources);
  if (qlog) qlog->flush_all();
  std::fputs(format_report_text(summary).c_str(), stdout);
  std::fflush(stdout);
  const uint64_t timeouts =
      summary.counters.errors[static_cast<size_t>(ErrorKind::kHandshakeTimeout)];
  if (timeouts != 0) {
    std::fprintf(stderr,
                 "quicload: %" PRIu64
                 " handshake%s timed out after %.3g s: is a server "
                 "listening on %s?\n",
                 timeouts, timeouts == 1 ? "" : "s",
                 static_cast<double>(options.timeout) / dpquic::kSecond,
                 dpquic::dataplane::format_address(options.server).c_str());
  }
  if (!options.json_path.empty() &&
      !write_file(options.json_path, format_report_json(summary) + "\n")) {
    std::fprintf(stderr, "quicload: --json=%s: cannot write the file\n", options.json_path.c_str());
    return 2;
  }
  return exit_code_for(summary.counters);
}

}  // namespace

int main(int argc, char** argv) {
  signal(SIGPIPE, SIG_IGN);
  std::string error;
  const auto options = dpquic::tools::parse_load_options(argc, argv, error);
  if (!options) {
    std::fprintf(stderr, "%s\n", error.c_str());
    return 2;
  }
  if (options->help) {
    std::fputs(dpquic::tools::load_usage(), stdout);
    return 0;
  }
  try {
    return run(*options);
  } catch (const std::exception& e) {
    std::fprintf(stderr, "quicload: %s\n", e.what());
    return 2;
  }
}
