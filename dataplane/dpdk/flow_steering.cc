#include "dataplane/dpdk/flow_steering.h"

#include <rte_byteorder.h>
#include <rte_errno.h>
#include <rte_flow.h>

#include <array>
#include <cstring>
#include <memory>
#include <stdexcept>
#include <vector>

namespace dpquic::dataplane::dpdk {
namespace {

enum class Family { kIpv4, kIpv6 };
constexpr std::array<Family, 2> kFamilies = {Family::kIpv4, Family::kIpv6};

const char* family_name(Family family) { return family == Family::kIpv4 ? "IPv4" : "IPv6"; }

// One rule's items and actions. Everything the rte_flow arrays point at lives
// in this object, so it must not move once pattern() / actions() are taken.
class CoreRule {
 public:
  CoreRule(Family family, uint16_t udp_port, size_t core_offset, uint8_t core, uint16_t queue) {
    std::memset(&udp_spec_, 0, sizeof(udp_spec_));
    std::memset(&udp_mask_, 0, sizeof(udp_mask_));
    udp_spec_.hdr.dst_port = rte_cpu_to_be_16(udp_port);
    udp_mask_.hdr.dst_port = RTE_BE16(0xffff);

    // The core byte of a short header's DCID: UDP payload byte 0 is the
    // header's first byte, the DCID follows (first octet, server ID, core).
    core_byte_ = core;
    core_byte_mask_ = 0xff;
    std::memset(&raw_spec_, 0, sizeof(raw_spec_));
    raw_spec_.relative = 1;  // offset counts from the end of the UDP header
    raw_spec_.search = 0;
    raw_spec_.offset = static_cast<int32_t>(core_offset);
    raw_spec_.length = 1;
    raw_spec_.pattern = &core_byte_;
    std::memset(&raw_mask_, 0, sizeof(raw_mask_));
    raw_mask_.relative = 1;
    raw_mask_.search = 1;
    raw_mask_.offset = -1;
    raw_mask_.limit = 0xffff;
    raw_mask_.length = 0xffff;
    raw_mask_.pattern = &core_byte_mask_;

    queue_.index = queue;

    std::memset(&attr_, 0, sizeof(attr_));
    attr_.ingress = 1;

    std::memset(pattern_.data(), 0, sizeof(pattern_));
    pattern_[0].type = RTE_FLOW_ITEM_TYPE_ETH;
    pattern_[1].type = family == Family::kIpv4 ? RTE_FLOW_ITEM_TYPE_IPV4 : RTE_FLOW_ITEM_TYPE_IPV6;
    pattern_[2].type = RTE_FLOW_ITEM_TYPE_UDP;
    pattern_[2].spec = &udp_spec_;
    pattern_[2].mask = &udp_mask_;
    pattern_[3].type = RTE_FLOW_ITEM_TYPE_RAW;
    pattern_[3].spec = &raw_spec_;
    pattern_[3].mask = &raw_mask_;
    pattern_[4].type = RTE_FLOW_ITEM_TYPE_END;

    std::memset(actions_.data(), 0, sizeof(actions_));
    actions_[0].type = RTE_FLOW_ACTION_TYPE_QUEUE;
    actions_[0].conf = &queue_;
    actions_[1].type = RTE_FLOW_ACTION_TYPE_END;
  }
  CoreRule(const CoreRule&) = delete;
  CoreRule& operator=(const CoreRule&) = delete;

  const rte_flow_attr* attr() const { return &attr_; }
  const rte_flow_item* pattern() const { return pattern_.data(); }
  const rte_flow_action* actions() const { return actions_.data(); }

 private:
  rte_flow_item_udp udp_spec_;
  rte_flow_item_udp udp_mask_;
  uint8_t core_byte_;
  uint8_t core_byte_mask_;
  rte_flow_item_raw raw_spec_;
  rte_flow_item_raw raw_mask_;
  rte_flow_action_queue queue_;
  rte_flow_attr attr_;
  std::array<rte_flow_item, 5> pattern_;
  std::array<rte_flow_action, 2> actions_;
};

std::string describe(const char* call, Family family, uint16_t queue, uint16_t port_id, int result,
                     const rte_flow_error& error) {
  std::string text = std::string(call) + " refused the " + family_name(family) +
                     " rule for queue " + std::to_string(queue) + " on port " +
                     std::to_string(port_id) + ": ";
  const int code = result < 0 ? -result : rte_errno;
  text += rte_strerror(code);
  if (error.message != nullptr && std::strcmp(error.message, rte_strerror(code)) != 0) {
    text += std::string(" (") + error.message + ")";
  }
  return text + "; steering in software instead";
}

}  // namespace

namespace {

using CoreRules = std::vector<std::unique_ptr<CoreRule>>;

// Every rule is checked before any is created; "" when all would be taken.
std::string validate_rules(uint16_t port_id, uint16_t queues, const CoreRules& rules) {
  for (size_t index = 0; index < rules.size(); ++index) {
    const CoreRule& rule = *rules[index];
    rte_flow_error error;
    std::memset(&error, 0, sizeof(error));
    const int validated =
        rte_flow_validate(port_id, rule.attr(), rule.pattern(), rule.actions(), &error);
    if (validated != 0) {
      return describe("rte_flow_validate", kFamilies[index / queues],
                      static_cast<uint16_t>(index % queues), port_id, validated, error);
    }
  }
  return "";
}

// All or nothing: a partial rule set would send some shards' packets by
// rule and others by RSS. "" when every rule was created.
std::string create_rules(uint16_t port_id, uint16_t queues, const CoreRules& rules,
                         size_t& created_count) {
  std::vector<rte_flow*> created;
  created.reserve(rules.size());
  for (const auto& rule : rules) {
    rte_flow_error error;
    std::memset(&error, 0, sizeof(error));
    rte_flow* flow =
        rte_flow_create(port_id, rule->attr(), rule->pattern(), rule->actions(), &error);
    if (flow == nullptr) {
      const size_t index = created.size();
      std::string reason =
          describe("rte_flow_create", kFamilies[index / queues],
                   static_cast<uint16_t>(index % queues), port_id, -rte_errno, error);
      for (rte_flow* made : created) {
        rte_flow_error ignored;
        rte_flow_destroy(port_id, made, &ignored);
      }
      return reason;
    }
    created.push_back(flow);
  }
  created_count = created.size();
  return "";
}

}  // namespace

FlowSteeringResult install_cid_steering(uint16_t port_id, uint16_t queues, uint16_t udp_port,
                                        const conn::CidLayout& layout) {
  FlowSteeringResult result;
  if (queues == 0) {
    result.reason = "no queues to steer to";
    return result;
  }
  if (queues > 256) {
    result.reason = "more queues than core IDs (256)";
    return result;
  }
  try {
    conn::CidGenerator::validate(layout);
  } catch (const std::invalid_argument& error) {
    result.reason = std::string("invalid CID layout: ") + error.what();
    return result;
  }
  // UDP payload: header byte, DCID first octet, server ID, core byte.
  const size_t core_offset = 1 + 1 + layout.server_id.size();
  // Rules are built in place (they hold pointers into themselves).
  CoreRules rules;
  rules.reserve(size_t{queues} * kFamilies.size());
  for (Family family : kFamilies) {
    for (uint16_t queue = 0; queue < queues; ++queue) {
      rules.push_back(std::make_unique<CoreRule>(family, udp_port, core_offset,
                                                 static_cast<uint8_t>(queue), queue));
    }
  }
  result.reason = validate_rules(port_id, queues, rules);
  if (!result.reason.empty()) return result;
  result.reason = create_rules(port_id, queues, rules, result.rules);
  result.installed = result.reason.empty();
  return result;
}

void remove_cid_steering(uint16_t port_id) {
  rte_flow_error error;
  std::memset(&error, 0, sizeof(error));
  // Ports without rte_flow answer ENOSYS: nothing was installed there.
  rte_flow_flush(port_id, &error);
}

}  // namespace dpquic::dataplane::dpdk
