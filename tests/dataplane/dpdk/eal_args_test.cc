// The --eal string splitting and the failure hints (no EAL started here).
#include <gtest/gtest.h>

#include <cerrno>
#include <cstring>
#include <stdexcept>
#include <string>
#include <vector>

#include "dataplane/dpdk/eal.h"

namespace dpquic::dataplane::dpdk {
namespace {

using Args = std::vector<std::string>;

Args split_ok(std::string_view text) {
  std::string error = "stale";
  Args arguments = split_eal_arguments(text, error);
  EXPECT_EQ(error, "") << text;
  return arguments;
}

std::string split_error(std::string_view text) {
  std::string error;
  const Args arguments = split_eal_arguments(text, error);
  EXPECT_TRUE(arguments.empty()) << text;
  return error;
}

TEST(SplitEalArguments, PlainWordsSplitOnAnyWhitespace) {
  EXPECT_EQ(split_ok("--no-huge -m 256\t--no-pci\n --vdev=net_ring0  "),
            (Args{"--no-huge", "-m", "256", "--no-pci", "--vdev=net_ring0"}));
}

TEST(SplitEalArguments, EmptyAndBlankGiveNoArguments) {
  EXPECT_EQ(split_ok(""), Args{});
  EXPECT_EQ(split_ok(" \t\n "), Args{});
}

TEST(SplitEalArguments, SingleQuotesKeepEverythingLiterally) {
  EXPECT_EQ(split_ok("--vdev='net_tap0,iface=a b' x"), (Args{"--vdev=net_tap0,iface=a b", "x"}));
  EXPECT_EQ(split_ok(R"('a\"b$c')"), (Args{R"(a\"b$c)"}));
}

TEST(SplitEalArguments, DoubleQuotesEscapeOnlyShellSpecials) {
  EXPECT_EQ(split_ok(R"("a \"b\" \\ \$ \x")"), (Args{R"(a "b" \ $ \x)"}));
  EXPECT_EQ(split_ok(R"("it's")"), (Args{"it's"}));
}

TEST(SplitEalArguments, BackslashEscapesOutsideQuotes) {
  EXPECT_EQ(split_ok(R"(a\ b c\'d \"e)"), (Args{"a b", "c'd", "\"e"}));
  EXPECT_EQ(split_ok(R"(\\)"), (Args{"\\"}));
}

TEST(SplitEalArguments, AdjacentPartsJoinIntoOneWord) {
  EXPECT_EQ(split_ok(R"(--file-prefix="dp q"'_1'x)"), (Args{"--file-prefix=dp q_1x"}));
}

TEST(SplitEalArguments, EmptyQuotesAreAnEmptyArgument) {
  EXPECT_EQ(split_ok("a '' \"\" b"), (Args{"a", "", "", "b"}));
}

TEST(SplitEalArguments, UnterminatedQuotesAndTrailingBackslashAreErrors) {
  EXPECT_EQ(split_error("-m 256 'abc"),
            "unterminated single quote at offset 7 of the EAL arguments");
  EXPECT_EQ(split_error("\"abc"), "unterminated double quote at offset 0 of the EAL arguments");
  EXPECT_EQ(split_error(R"("a\")"), "unterminated double quote at offset 0 of the EAL arguments");
  EXPECT_EQ(split_error("abc\\"), "trailing backslash at the end of the EAL arguments");
}

TEST(ParseMeminfo, ReadsHugepageCounts) {
  const EalHostStatus host = parse_meminfo(
      "MemTotal:       16314628 kB\n"
      "AnonHugePages:         0 kB\n"
      "HugePages_Total:     512\n"
      "HugePages_Free:      100\n"
      "HugePages_Rsvd:        0\n"
      "Hugepagesize:       2048 kB\n",
      true);
  EXPECT_TRUE(host.meminfo_read);
  EXPECT_EQ(host.hugepages_total, 512u);
  EXPECT_EQ(host.hugepages_free, 100u);
  EXPECT_TRUE(host.root);
}

TEST(ParseMeminfo, MissingLinesAreUnknown) {
  const EalHostStatus host = parse_meminfo("MemTotal: 1 kB\nHugePages_Total: 4\n", false);
  EXPECT_FALSE(host.meminfo_read);
  EXPECT_FALSE(host.root);
}

TEST(ParseMeminfo, ThisHostIsReadable) {
  // Linux always has these lines (0 when no hugepages are reserved).
  EXPECT_TRUE(current_host_status().meminfo_read);
}

const EalHostStatus kNoHugepagesRoot{
    .meminfo_read = true, .hugepages_total = 0, .hugepages_free = 0, .root = true};
const EalHostStatus kHugepagesRoot{
    .meminfo_read = true, .hugepages_total = 512, .hugepages_free = 512, .root = true};
const EalHostStatus kHugepagesUser{
    .meminfo_read = true, .hugepages_total = 512, .hugepages_free = 512, .root = false};
constexpr const char* kNoHugepagesHint =
    "no free hugepages: reserve some (echo 512 > /proc/sys/vm/nr_hugepages) or pass --no-huge to "
    "try without hugepages";

TEST(EalFailureHint, NoFreeHugepagesWithoutNoHuge) {
  // What rte_eal_init reports here without hugepages: EACCES ("Cannot get
  // hugepage information"); ENOMEM and ENODEV can come from the same cause.
  for (int error : {EACCES, ENOMEM, EIO}) {
    EXPECT_EQ(eal_failure_hint({"--in-memory", "--no-pci"}, error, kNoHugepagesRoot),
              kNoHugepagesHint)
        << error;
  }
}

TEST(EalFailureHint, BadDeviceWithoutHugepagesNamesBoth) {
  // EAL parses --vdev before it looks at hugepages.
  EXPECT_EQ(eal_failure_hint({"--vdev=net_nothing0"}, ENODEV, kNoHugepagesRoot),
            std::string("a device or the memory could not be set up: check the --vdev/-a names "
                        "(e.g. --vdev=net_tap0,iface=dpq0) and that the NIC is bound with "
                        "dpdk-devbind.py; also ") +
                kNoHugepagesHint);
}

TEST(EalFailureHint, NoHugeMakesMissingHugepagesIrrelevant) {
  EXPECT_EQ(eal_failure_hint({"--no-huge", "-m", "99999"}, ENOMEM, kNoHugepagesRoot),
            "not enough memory for the --no-huge heap: lower -m");
  EXPECT_EQ(eal_failure_hint({"--no-huge"}, ENOMEM, kNoHugepagesRoot),
            "not enough memory for the --no-huge heap: pass a smaller -m (e.g. -m 256)");
  EXPECT_EQ(eal_failure_hint({"--no-huge"}, EACCES, kNoHugepagesRoot),
            "permission denied although running as root: check that hugetlbfs is mounted "
            "(mount -t hugetlbfs nodev /dev/hugepages) and /dev/vfio is accessible");
}

TEST(EalFailureHint, HugepagesPresentButTooFew) {
  const EalHostStatus some{
      .meminfo_read = true, .hugepages_total = 64, .hugepages_free = 3, .root = true};
  EXPECT_EQ(eal_failure_hint({"--in-memory"}, ENOMEM, some),
            "not enough hugepage memory (HugePages_Free 3 of 64): reserve more (echo 1024 > "
            "/proc/sys/vm/nr_hugepages) or lower -m/--socket-mem");
}

TEST(EalFailureHint, PermissionsAsUser) {
  for (int error : {EACCES, EPERM}) {
    EXPECT_EQ(eal_failure_hint({"--in-memory"}, error, kHugepagesUser),
              "run as root (needs /dev/hugepages, /dev/vfio and /dev/net/tun), or pass --no-huge "
              "--no-pci for virtual devices only");
  }
}

TEST(EalFailureHint, AlreadyInitialised) {
  EXPECT_EQ(eal_failure_hint({"--no-huge"}, EALREADY, kNoHugepagesRoot),
            "EAL already initialised in this process (it cannot be started twice)");
}

TEST(EalFailureHint, BadArguments) {
  EXPECT_EQ(eal_failure_hint({"--bogus"}, EINVAL, kHugepagesRoot),
            "bad EAL arguments: the EAL log above names the one it rejected, and EAL printed its "
            "usage");
  EXPECT_EQ(eal_failure_hint({"--no-huge", "--in-memory"}, EINVAL, kHugepagesRoot),
            "--in-memory cannot be combined with --no-huge (which implies legacy memory): drop "
            "--in-memory");
}

TEST(EalFailureHint, DevicesBusesAndSystem) {
  EXPECT_EQ(eal_failure_hint({"--vdev=net_nothing0"}, ENODEV, kHugepagesRoot),
            "a device or the memory could not be set up: check the --vdev/-a names (e.g. "
            "--vdev=net_tap0,iface=dpq0) and that the NIC is bound with dpdk-devbind.py");
  EXPECT_EQ(eal_failure_hint({}, EPROTO, kHugepagesRoot),
            "the PCI bus is not present or not readable: pass --no-pci for virtual devices, or "
            "run as root with /sys/bus/pci available");
  EXPECT_EQ(eal_failure_hint({}, ENOTSUP, kHugepagesRoot),
            "EAL cannot run on this system (CPU or IOVA mode unsupported): try --iova-mode=va, or "
            "--no-huge --no-pci");
  EXPECT_EQ(eal_failure_hint({}, EAGAIN, kHugepagesRoot),
            "a bus or system resource was busy: retry, and make sure no other DPDK process uses "
            "the same --file-prefix (or pass --in-memory)");
  EXPECT_EQ(eal_failure_hint({}, EFAULT, kHugepagesRoot),
            "the shared memory configuration does not match: use --in-memory or a unique "
            "--file-prefix");
  EXPECT_EQ(eal_failure_hint({}, ENOEXEC, kHugepagesRoot),
            "a service core failed to launch: check -s/--lcores");
  EXPECT_EQ(eal_failure_hint({}, EIO, kHugepagesRoot), "see the EAL log lines above");
}

TEST(EalFailureHint, HintsAreOneLine) {
  for (int error : {EACCES, EPERM, EALREADY, EINVAL, ENOMEM, ENODEV, EPROTO, ENOTSUP, EAGAIN,
                    EFAULT, ENOEXEC, EIO}) {
    for (const EalHostStatus& host : {kNoHugepagesRoot, kHugepagesRoot, kHugepagesUser}) {
      const std::string hint = eal_failure_hint({"--no-huge"}, error, host);
      EXPECT_FALSE(hint.empty());
      EXPECT_EQ(hint.find('\n'), std::string::npos) << hint;
    }
  }
}

TEST(InitEal, RejectedArgumentsThrowOneLineWithTheHint) {
  // rte_eal_init refuses this while parsing, before it sets anything up.
  try {
    init_eal("eal_args_test", {"--no-huge", "--no-such-eal-option"});
    FAIL() << "EAL accepted an unknown option";
  } catch (const std::runtime_error& error) {
    EXPECT_EQ(std::string(error.what()),
              std::string("EAL init failed (") + std::strerror(EINVAL) +
                  "): bad EAL arguments: the EAL log above names the one it rejected, and EAL "
                  "printed its usage");
  }
}

}  // namespace
}  // namespace dpquic::dataplane::dpdk
