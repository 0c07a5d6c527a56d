#include "quic/conn/path_mtu.h"

#include <algorithm>

namespace dpquic::conn {

void PathMtu::reset(size_t base, size_t ip_overhead, uint64_t first_packet_number) {
  const size_t ceiling = ceiling_;
  *this = PathMtu();
  first_packet_number_ = first_packet_number;
  base_ = base;
  plpmtu_ = base;
  ip_overhead_ = ip_overhead;
  ceiling_ = ceiling;
}

void PathMtu::set_ceiling(size_t ceiling) {
  if (ceiling == ceiling_) return;
  ceiling_ = ceiling;
  if (plpmtu_ > std::max(ceiling_, base_)) plpmtu_ = std::max(ceiling_, base_);
  // A probe above the new ceiling proves nothing usable.
  if (probe_size_ > ceiling_) {
    probe_size_ = 0;
    probe_deadline_ = kNever;
  }
}

PmtuState PathMtu::state() const {
  if (ceiling_ <= base_) return PmtuState::kDisabled;
  return next_candidate() == 0 ? PmtuState::kSearchComplete : PmtuState::kSearching;
}

size_t PathMtu::next_candidate() const {
  const auto usable = [&](size_t size) {
    return size > plpmtu_ && size <= ceiling_ && (failed_size_ == 0 || size < failed_size_);
  };
  for (const size_t link_mtu : kLinkMtus) {
    const size_t payload = link_mtu - ip_overhead_;
    if (usable(payload)) return payload;
  }
  return usable(ceiling_) ? ceiling_ : 0;
}

size_t PathMtu::probe_due(Instant) const {
  if (ceiling_ <= base_ || probe_size_ != 0 || confirming_base_) return 0;
  return next_candidate();
}

void PathMtu::on_probe_sent(Instant now, uint64_t packet_number, size_t size,
                            Duration probe_timeout) {
  if (size != candidate_size_) {
    candidate_size_ = size;
    candidate_failures_ = 0;
  }
  probe_size_ = size;
  probe_packet_number_ = packet_number;
  probe_deadline_ = now + std::max(probe_timeout, kMinProbeTimeout);
  ++probes_sent_;
}

void PathMtu::on_packet_acked(uint64_t packet_number, size_t size) {
  if (packet_number < first_packet_number_) return;
  if (probe_size_ != 0 && packet_number == probe_packet_number_) {
    // RFC 8899 §4.2: only an acknowledged probe confirms a larger size.
    plpmtu_ = std::max(plpmtu_, probe_size_);
    probe_size_ = 0;
    probe_deadline_ = kNever;
    candidate_size_ = 0;
    candidate_failures_ = 0;
  }
  pto_run_ = 0;
  if (size > base_) {
    loss_rounds_ = 0;
    last_loss_round_ = kNever;
  }
  confirming_base_ = false;
}

void PathMtu::on_packet_lost(Instant now, uint64_t packet_number, size_t size) {
  if (packet_number < first_packet_number_) return;
  if (probe_size_ != 0 && packet_number == probe_packet_number_) {
    probe_failed(now);
    return;
  }
  // Lost probes are no evidence: they are expected to fail now and then.
  if (plpmtu_ <= base_ || size <= base_) return;
  if (now != last_loss_round_) {
    last_loss_round_ = now;
    if (++loss_rounds_ >= kBlackHoleLossRounds) fall_back();
  }
}

void PathMtu::on_pto(Instant) {
  if (plpmtu_ <= base_) return;
  if (++pto_run_ >= kBlackHolePtos) fall_back();
}

Instant PathMtu::next_deadline() const {
  return std::min(probe_size_ != 0 ? probe_deadline_ : kNever, raise_at_);
}

void PathMtu::on_timeout(Instant now) {
  if (probe_size_ != 0 && now >= probe_deadline_) probe_failed(now);
  if (now >= raise_at_) {
    // RFC 8899 §5.2: PMTU_RAISE_TIMER, try the larger sizes again.
    raise_at_ = kNever;
    failed_size_ = 0;
  }
}

void PathMtu::probe_failed(Instant now) {
  ++probes_lost_;
  probe_size_ = 0;
  probe_deadline_ = kNever;
  if (++candidate_failures_ < kMaxProbes) return;
  // MAX_PROBES reached: the search ends below this size until the raise
  // timer.
  failed_size_ = candidate_size_;
  candidate_size_ = 0;
  candidate_failures_ = 0;
  raise_at_ = now + kRaiseTimer;
}

void PathMtu::fall_back() {
  ++black_holes_;
  plpmtu_ = base_;
  probe_size_ = 0;
  probe_deadline_ = kNever;
  candidate_size_ = 0;
  candidate_failures_ = 0;
  pto_run_ = 0;
  loss_rounds_ = 0;
  last_loss_round_ = kNever;
  failed_size_ = 0;
  raise_at_ = kNever;
  confirming_base_ = true;
}

}  // namespace dpquic::conn
