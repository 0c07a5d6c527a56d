#pragma once
// The load over DPDK: EAL and port from --eal, client shards on the worker
// lcores (DpdkRuntime::launch_each), addresses from --ip/--gateway, one UDP
// port for every shard (replies reach the right shard by connection ID).

#include "tools/quicload/load_options.h"
#include "tools/quicload/load_report.h"
#include "tools/quicload/load_run.h"

namespace dpquic::tools {

// Throws std::runtime_error (one line) when EAL or the port cannot start.
LoadSummary run_dpdk_load(const LoadOptions& options, const LoadResources& resources);

}  // namespace dpquic::tools
