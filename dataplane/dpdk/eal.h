#pragma once
// DPDK's EAL for the dataplane: started once per process from the --eal
// string, with failures turned into one line that says what to fix.

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace dpquic::dataplane::dpdk {

// Splits an --eal value into arguments like a POSIX shell would for plain
// words: whitespace separates, single and double quotes group, backslash
// escapes. An unterminated quote is an error (nullopt-like: empty vector
// and `error` set).
std::vector<std::string> split_eal_arguments(std::string_view text, std::string& error);

// The hint printed when rte_eal_init fails with `rte_errno_value` for
// `arguments` (e.g. no free hugepages and no --no-huge: "reserve hugepages
// (echo 512 > /proc/sys/vm/nr_hugepages) or pass --no-huge to try without
// hugepages"; EALREADY; EACCES: "run as root"; ENODEV ...).
std::string eal_failure_hint(const std::vector<std::string>& arguments, int rte_errno_value);

// What the failure hint looks at besides the arguments.
struct EalHostStatus {
  bool meminfo_read = false;  // /proc/meminfo had the HugePages_ lines
  uint64_t hugepages_total = 0;
  uint64_t hugepages_free = 0;
  bool root = false;  // effective uid 0
};

// Parses HugePages_Total / HugePages_Free out of /proc/meminfo text.
EalHostStatus parse_meminfo(std::string_view meminfo, bool root);
// This host, now: /proc/meminfo and geteuid().
EalHostStatus current_host_status();

// eal_failure_hint for a given host status (the one above uses
// current_host_status()): tests pass their own.
std::string eal_failure_hint(const std::vector<std::string>& arguments, int rte_errno_value,
                             const EalHostStatus& host);

// rte_eal_init with `program` as argv[0] followed by `arguments`. Throws
// std::runtime_error("EAL init failed (<rte_strerror>): <hint>") on failure.
// Calling it twice in one process throws (EAL cannot restart).
void init_eal(const std::string& program, const std::vector<std::string>& arguments);

// rte_eal_cleanup if init_eal succeeded.
void cleanup_eal();

}  // namespace dpquic::dataplane::dpdk
