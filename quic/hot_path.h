#pragma once
// Two marks for the code every packet runs through.
//
// DPQUIC_INLINE_STEP marks a step of a per-packet function written as a
// function of its own for reading: its callers (usually one) are in the same
// .cc file, and it is always inlined into them.
//
// Why: GCC does not inline a member function with external linkage just
// because it is called once, so each step would cost a call, and spills and
// reloads of the caller's state, on every packet. Measured with callgrind on
// endpoint_bench, the receive and send chains with their steps left as
// calls ran about 250 more instructions per packet each way than the same
// code written as single functions; with the steps marked, they run within
// 0.5% of it. Use it only on the definition, in the .cc file that calls the
// step.
//
// DPQUIC_HOT marks a function on the receive path of every datagram, from
// the endpoint's lookup to the stream's reassembly. GCC places such
// functions together (.text.hot), so the path's code shares as few
// instruction-cache sets as it can.
//
// Why: receiving a packet runs code from a dozen files and from ipsec-mb;
// cachegrind's model of the benchmark machine counts about 160 first-level
// instruction-cache misses per data packet endpoint_bench receives. Where
// the linker happens to put each function then moves receive cycles by 10%
// or more at the same instruction count: two builds whose receive
// instructions differ by 0.6% measured 1.12-1.15x apart in receive cycles,
// and 1.04x once these functions were marked. Mark a function only when
// callgrind shows it running for every received packet.

#define DPQUIC_INLINE_STEP [[gnu::always_inline]] inline
#define DPQUIC_HOT [[gnu::hot]]
