#include "dataplane/dpdk/eal.h"

#include <rte_eal.h>
#include <rte_errno.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <charconv>
#include <deque>
#include <fstream>
#include <mutex>
#include <sstream>
#include <stdexcept>

namespace dpquic::dataplane::dpdk {
namespace {

bool is_space(char c) {
  return c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\v' || c == '\f';
}

// Inside double quotes a backslash only escapes what the shell treats
// specially there; before anything else it stays.
bool escapable_in_double_quotes(char c) {
  return c == '\\' || c == '"' || c == '$' || c == '`' || c == '\n';
}

bool has_argument(const std::vector<std::string>& arguments, std::string_view name) {
  return std::find(arguments.begin(), arguments.end(), name) != arguments.end();
}

// -m 256, -m256, --socket-mem=... or --socket-mem ...: a memory size given.
bool has_memory_size(const std::vector<std::string>& arguments) {
  for (const std::string& argument : arguments) {
    if (argument.rfind("-m", 0) == 0 && argument.rfind("--", 0) != 0) return true;
    if (argument.rfind("--socket-mem", 0) == 0) return true;
  }
  return false;
}

std::string hugepage_counts(const EalHostStatus& host) {
  return "HugePages_Free " + std::to_string(host.hugepages_free) + " of " +
         std::to_string(host.hugepages_total);
}

constexpr const char* kNoHugepagesHint =
    "no free hugepages: reserve some (echo 512 > /proc/sys/vm/nr_hugepages) or pass --no-huge to "
    "try without hugepages";

bool uint_field(std::string_view line, std::string_view name, uint64_t& value) {
  if (line.rfind(name, 0) != 0) return false;
  std::string_view rest = line.substr(name.size());
  const size_t first_digit = rest.find_first_not_of(" \t");
  if (first_digit == std::string_view::npos) return false;
  rest = rest.substr(first_digit);
  const auto [end, error] = std::from_chars(rest.data(), rest.data() + rest.size(), value);
  (void)end;
  return error == std::errc();
}

std::mutex eal_mutex;
bool eal_running = false;  // stays true after cleanup: EAL cannot restart
bool eal_cleaned_up = false;

}  // namespace

std::vector<std::string> split_eal_arguments(std::string_view text, std::string& error) {
  enum class Quote { kNone, kSingle, kDouble };
  error.clear();
  std::vector<std::string> arguments;
  std::string word;
  bool in_word = false;  // '' starts an (empty) word too
  Quote quote = Quote::kNone;
  size_t quote_start = 0;

  for (size_t i = 0; i < text.size(); ++i) {
    const char c = text[i];
    switch (quote) {
      case Quote::kSingle:
        if (c == '\'') {
          quote = Quote::kNone;
        } else {
          word.push_back(c);
        }
        continue;
      case Quote::kDouble:
        if (c == '"') {
          quote = Quote::kNone;
        } else if (c == '\\' && i + 1 < text.size() && escapable_in_double_quotes(text[i + 1])) {
          word.push_back(text[++i]);
        } else {
          word.push_back(c);
        }
        continue;
      case Quote::kNone: break;
    }
    if (is_space(c)) {
      if (in_word) arguments.push_back(std::move(word));
      word.clear();
      in_word = false;
    } else if (c == '\'' || c == '"') {
      quote = c == '\'' ? Quote::kSingle : Quote::kDouble;
      quote_start = i;
      in_word = true;
    } else if (c == '\\') {
      if (i + 1 == text.size()) {
        error = "trailing backslash at the end of the EAL arguments";
        return {};
      }
      word.push_back(text[++i]);
      in_word = true;
    } else {
      word.push_back(c);
      in_word = true;
    }
  }
  if (quote != Quote::kNone) {
    error = std::string("unterminated ") + (quote == Quote::kSingle ? "single" : "double") +
            " quote at offset " + std::to_string(quote_start) + " of the EAL arguments";
    return {};
  }
  if (in_word) arguments.push_back(std::move(word));
  return arguments;
}

EalHostStatus parse_meminfo(std::string_view meminfo, bool root) {
  EalHostStatus host;
  host.root = root;
  bool have_total = false;
  bool have_free = false;
  while (!meminfo.empty()) {
    const size_t end = meminfo.find('\n');
    const std::string_view line = meminfo.substr(0, end);
    meminfo = end == std::string_view::npos ? std::string_view() : meminfo.substr(end + 1);
    have_total |= uint_field(line, "HugePages_Total:", host.hugepages_total);
    have_free |= uint_field(line, "HugePages_Free:", host.hugepages_free);
  }
  host.meminfo_read = have_total && have_free;
  return host;
}

EalHostStatus current_host_status() {
  std::ifstream file("/proc/meminfo");
  std::ostringstream text;
  text << file.rdbuf();
  return parse_meminfo(text.str(), geteuid() == 0);
}

std::string eal_failure_hint(const std::vector<std::string>& arguments, int rte_errno_value,
                             const EalHostStatus& host) {
  const bool no_huge = has_argument(arguments, "--no-huge");
  const bool in_memory = has_argument(arguments, "--in-memory");
  // Without --no-huge, EAL needs hugepages; with none free it fails with
  // EACCES ("Cannot get hugepage information") or ENOMEM.
  const bool hugepages_missing = !no_huge && host.meminfo_read && host.hugepages_free == 0;

  switch (rte_errno_value) {
    case EALREADY: return "EAL already initialised in this process (it cannot be started twice)";
    case EINVAL:
      if (no_huge && in_memory) {
        return "--in-memory cannot be combined with --no-huge (which implies legacy memory): "
               "drop --in-memory";
      }
      return "bad EAL arguments: the EAL log above names the one it rejected, and EAL printed its "
             "usage";
    case EACCES:
    case EPERM:
      if (hugepages_missing) return kNoHugepagesHint;
      if (!host.root) {
        return "run as root (needs /dev/hugepages, /dev/vfio and /dev/net/tun), or pass --no-huge "
               "--no-pci for virtual devices only";
      }
      return "permission denied although running as root: check that hugetlbfs is mounted "
             "(mount -t hugetlbfs nodev /dev/hugepages) and /dev/vfio is accessible";
    case ENOMEM:
      if (hugepages_missing) return kNoHugepagesHint;
      if (no_huge) {
        return std::string("not enough memory for the --no-huge heap: ") +
               (has_memory_size(arguments) ? "lower -m" : "pass a smaller -m (e.g. -m 256)");
      }
      return "not enough hugepage memory (" + hugepage_counts(host) +
             "): reserve more (echo 1024 > /proc/sys/vm/nr_hugepages) or lower -m/--socket-mem";
    case ENODEV: {
      // EAL parses devices before it looks at hugepages: name both causes.
      std::string hint =
          "a device or the memory could not be set up: check the --vdev/-a names (e.g. "
          "--vdev=net_tap0,iface=dpq0) and that the NIC is bound with dpdk-devbind.py";
      if (hugepages_missing) hint += "; also " + std::string(kNoHugepagesHint);
      return hint;
    }
    case EPROTO:
      return "the PCI bus is not present or not readable: pass --no-pci for virtual devices, or "
             "run as root with /sys/bus/pci available";
    case ENOTSUP:
      return "EAL cannot run on this system (CPU or IOVA mode unsupported): try --iova-mode=va, "
             "or --no-huge --no-pci";
    case EAGAIN:
      return "a bus or system resource was busy: retry, and make sure no other DPDK process uses "
             "the same --file-prefix (or pass --in-memory)";
    case EFAULT:
      return "the shared memory configuration does not match: use --in-memory or a unique "
             "--file-prefix";
    case ENOEXEC: return "a service core failed to launch: check -s/--lcores";
    default:
      if (hugepages_missing) return kNoHugepagesHint;
      return "see the EAL log lines above";
  }
}

std::string eal_failure_hint(const std::vector<std::string>& arguments, int rte_errno_value) {
  return eal_failure_hint(arguments, rte_errno_value, current_host_status());
}

void init_eal(const std::string& program, const std::vector<std::string>& arguments) {
  std::lock_guard<std::mutex> lock(eal_mutex);
  std::vector<std::string> storage;
  storage.reserve(arguments.size() + 1);
  storage.push_back(program);
  storage.insert(storage.end(), arguments.begin(), arguments.end());
  // rte_eal_init permutes argv and may keep pointers to its strings: they
  // live as long as the process.
  static auto* const kept_alive = new std::deque<std::vector<std::string>>();

  int error = EALREADY;
  if (!eal_running) {
    std::vector<std::string>& strings = kept_alive->emplace_back(std::move(storage));
    std::vector<char*> argv;
    argv.reserve(strings.size() + 1);
    for (std::string& argument : strings) argv.push_back(argument.data());
    argv.push_back(nullptr);
    if (rte_eal_init(static_cast<int>(strings.size()), argv.data()) >= 0) {
      eal_running = true;
      return;
    }
    error = rte_errno;
  }
  throw std::runtime_error(std::string("EAL init failed (") + rte_strerror(error) +
                           "): " + eal_failure_hint(arguments, error));
}

void cleanup_eal() {
  std::lock_guard<std::mutex> lock(eal_mutex);
  if (!eal_running || eal_cleaned_up) return;
  rte_eal_cleanup();
  eal_cleaned_up = true;
}

}  // namespace dpquic::dataplane::dpdk
