#pragma once
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
// 0.5% of it.
//
// Use it only on the definition, in the .cc file that calls the step.

#define DPQUIC_INLINE_STEP [[gnu::always_inline]] inline
