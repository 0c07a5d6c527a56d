#pragma once
// Splitting a UDP datagram into its coalesced QUIC packets (RFC 9000 §12.2),
// without allocating: a DatagramSplitter hands out one packet per next().
//
//   DatagramSplitter splitter(datagram, local_cid_length);
//   CoalescedPacket packet;
//   while (splitter.next(packet)) { ... packet.bytes, packet.header ... }
//   if (splitter.error() != WireError::kOk) { count the dropped tail }
//
// Rules:
// - The first packet's Destination Connection ID is the datagram's. A later
//   packet with a different DCID is skipped (counted in skipped()), as RFC 9000
//   §12.2 recommends.
// - A malformed packet ends the iteration; packets already returned stay
//   valid. error() says why it ended early (kDrop), or kOk at a clean end,
//   and dropped_bytes() how much it discarded.
// - next_any() returns the skipped packets too, marked, for a receiver that
//   reports each one (the connection traces them); next() is next_any()
//   without them.
// - Short headers, Retry, Version Negotiation and unknown versions have no
//   Length field, so they extend to the end of the datagram.

#include <algorithm>
#include <cstddef>
#include <span>

#include "quic/wire/errors.h"
#include "quic/wire/header.h"

namespace dpquic::wire {

struct CoalescedPacket {
  std::span<const uint8_t> bytes;  // exactly this packet (header.packet_size bytes)
  size_t offset = 0;               // where it starts in the datagram
  ParsedHeader header;             // step-1 parse; spans point into the datagram
  bool same_dcid = true;           // false: next_any() returns a skipped packet
};

class DatagramSplitter {
 public:
  // `local_cid_length`: length of the connection IDs this endpoint issued,
  // needed to parse short headers.
  DatagramSplitter(std::span<const uint8_t> datagram, size_t local_cid_length)
      : datagram_(datagram), local_cid_length_(local_cid_length) {}

  // Fills `out` with the next packet and returns true; false when the datagram
  // is exhausted or the next packet is malformed (see error()).
  bool next(CoalescedPacket& out);
  // The same, but also returns the packets next() skips, with same_dcid
  // false.
  bool next_any(CoalescedPacket& out);

  // kOk while iterating and after a clean end; kDrop once a malformed packet
  // stopped the iteration (its bytes and everything after were discarded).
  WireError error() const { return error_; }
  // Packets skipped because their DCID differed from the first packet's.
  size_t skipped() const { return skipped_; }
  // Bytes not yet handed out or skipped.
  size_t remaining() const { return datagram_.size() - offset_; }
  // Bytes the malformed packet discarded, from its start to the datagram's
  // end (0 while error() is kOk).
  size_t dropped_bytes() const { return dropped_bytes_; }
  // The first packet's DCID (empty until next() returned a packet).
  std::span<const uint8_t> datagram_dcid() const { return first_dcid_; }

 private:
  std::span<const uint8_t> datagram_;
  size_t local_cid_length_;
  size_t offset_ = 0;
  size_t skipped_ = 0;
  size_t dropped_bytes_ = 0;
  bool have_first_ = false;
  std::span<const uint8_t> first_dcid_;
  WireError error_ = WireError::kOk;
};

// Inline: the receive path calls it once per packet.
inline bool DatagramSplitter::next_any(CoalescedPacket& out) {
  if (error_ != WireError::kOk || offset_ >= datagram_.size()) return false;
  const std::span<const uint8_t> rest = datagram_.subspan(offset_);
  const WireError error = parse_packet_header(rest, local_cid_length_, out.header);
  if (error != WireError::kOk) {
    error_ = error;
    dropped_bytes_ = rest.size();
    offset_ = datagram_.size();
    return false;
  }
  out.bytes = rest.first(out.header.packet_size);
  out.offset = offset_;
  offset_ += out.header.packet_size;
  if (!have_first_) {
    have_first_ = true;
    first_dcid_ = out.header.dcid;
    out.same_dcid = true;
    return true;
  }
  out.same_dcid = std::ranges::equal(out.header.dcid, first_dcid_);
  if (!out.same_dcid) ++skipped_;
  return true;
}

}  // namespace dpquic::wire
