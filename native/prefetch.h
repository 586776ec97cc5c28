// Software prefetch for the weight streams of decode products. Included by matmul.c inside its
// x86 regions, and by bandwidth.c, whose prefetched passes read as these kernels do.
//
// Decode reads every weight once per token, from memory where the weights do not fit in cache.
// A product kernel alternates loads with arithmetic, and the hardware prefetcher alone keeps too
// few cache lines in flight for that: on the Intel Xeon of stop 30 the Q4_0 decode product read
// ~7 GB/s from memory with one thread (18 from cache; a plain streaming read, 13), so it waited
// on memory for most of its time. Asking for the lines STREAM_AHEAD bytes ahead of the kernel
// overlaps the two: 10–12 GB/s, and SmolLM2 Q4_0 decode on 1 thread went from ~70 to ~125 t/s.
// Distances of 2–16 KB all helped there (interleaved runs); 4 KB was as good as any.
// Where the lines go depends on the CPU (toy_stream_l1, set at load by addon.c): into L1
// (prefetcht0) on AMD and on Ice Lake servers, into L2 (prefetcht1) on the other Intel CPUs.
// - Intel Xeon, Emerald Rapids: an L1 prefetch holds one of the core's few L1 miss
// buffers until its line arrives, which capped one thread's stream at about what those buffers
// carry; into L2 the requests queue deeper. On the Intel Xeon (KVM, family 6 model 207), one thread's decode
// products read from memory at 13–14 GB/s (F32, F16, BF16, Q8_0; bench/kernelRates.ts) against
// 10–12 with prefetcht0, and SmolLM2 decode (tg64, 5 interleaved pairs) went F16 36.5 → 41.2 t/s
// with one thread and 73.3 → 76.2 with two, Q8_0 72.2 → 79.5 and 140.5 → 148.7; the quantized
// types limited by unpacking (Q4_K) read about as before.
// - Intel Xeon, Ice Lake (KVM, family 6 model 106, 1.25 MB L2, 48 MB L3; `icelake-server` to
//   GCC): the other way round, like AMD. SmolLM2 decode at depth 0, prefetcht0 against prefetcht1
//   4 KB ahead, t/s, paired rounds of 64 steps alternating inside one process (10–12 pairs,
//   2026-12-07): 1 thread Q4_0 1.04×, Q8_0 1.10×, F16 1.05×, Q4_K_M 1.08×, Q6_K 1.07×, Gemma 3
//   1.03×; 2 threads Q4_0 1.04×, Q8_0 1.06×; Q4_0 at depths 1024 and 4096, 1.02× and 1.04×.
//   prefetcht0 2, 8, 12, 16 or 24 KB ahead: no better than 4 (0.94–1.03×). The split Q6_K
//   kernel takes prefetcht0 there too (stream_prefetch_split6; its file 1.02× with 1 and with 2
//   threads), and so does F32 (stream_prefetch_f32).
// - AMD EPYC (Zen 4, KVM, 1 MB L2, 32 MB L3): the other way round. SmolLM2 decode, ms per step,
//   medians of 3–5 interleaved runs (2026-12-06): prefetcht0 against prefetcht1, 1 thread, F16
//   11.3 against 13.9, Q8_0 7.19 against 8.43, Q4_0 6.02 against 6.71; 2 threads, F16 10.0
//   against 10.3, Q8_0 5.86 against 6.27.
//   The BF16 kernel (vecdot_bf16.h, one 64-byte vdpbf16ps block per row and step) is the
//   exception: into L2 it decodes 12.0 ms/step against 14.2 into L1 (1 thread), so it always
//   prefetches into L2 (stream_prefetch_l2). So does the split Q6_K kernel on AMD (vecdot_vnni.h,
//   1680-byte steps read in four places at once; stream_prefetch_split6): its product from memory (576 × 1536, one
//   thread, medians of 3) read 16.6 GB/s into L2 against 9.3 into L1 (the other split kernels
//   read 4–38% faster into L1 than into L2, and faster still with no hint on AMD:
//   stream_prefetch_wide). TOY_STREAM_PREFETCH=l1|l2 overrides the choice for the other
//   kernels, for comparing.
//
// stream_prefetch is always inlined, not a plain static function: GCC 12 removed every call to a
// helper whose only effect is a prefetch and which it did not inline early (vnni_prefetch's
// hints were compiled out that way, silently, until `objdump -d | grep prefetch` showed none).
#ifndef TOY_PREFETCH_H
#define TOY_PREFETCH_H
#include <stddef.h>

extern int toy_stream_l1; // prefetcht0 (1) or prefetcht1 (0): see above
extern int toy_stream_hw; // the wide kernels leave their stream to the hardware (1): see stream_prefetch_wide
extern int toy_stream_all; // the split Q6_K and F32 decode streams take stream_prefetch too (1): see stream_prefetch_split6, _f32

#ifndef STREAM_AHEAD
#define STREAM_AHEAD 4096
#endif

/** Asks L2 for the cache lines of [p + STREAM_AHEAD, p + STREAM_AHEAD + bytes): the part of one
 *  sequential weight stream that the kernel will read STREAM_AHEAD bytes from now. A prefetch
 *  past the end of the weights is harmless (it never faults). */
static inline __attribute__((always_inline)) void stream_prefetch_l2(const void *p, size_t bytes) {
  const char *a = (const char *)p + STREAM_AHEAD;
  for (size_t o = 0; o < bytes; o += 64) __builtin_prefetch(a + o, 0, 2); // prefetcht1
}

/** stream_prefetch_l2, into L1 instead where toy_stream_l1 says so (AMD, Ice Lake servers, above). */
static inline __attribute__((always_inline)) void stream_prefetch(const void *p, size_t bytes) {
  if (!toy_stream_l1) { stream_prefetch_l2(p, bytes); return; }
  const char *a = (const char *)p + STREAM_AHEAD;
  for (size_t o = 0; o < bytes; o += 64) __builtin_prefetch(a + o, 0, 3); // prefetcht0
}

/** The split Q6_K kernel's stream (its 1680-byte steps read in four places at once): into L2 on
 *  AMD and on the Intel Xeon of stop 30, whatever toy_stream_l1 says (above); on Ice Lake servers
 *  (toy_stream_all) stream_prefetch's hint, as every other stream there. */
static inline __attribute__((always_inline)) void stream_prefetch_split6(const void *p, size_t bytes) {
  if (toy_stream_all) stream_prefetch(p, bytes);
  else stream_prefetch_l2(p, bytes);
}

/** The F32 decode kernel's stream (vecdot_float.h's pairs kernel, 256 bytes a step): left to the
 *  hardware prefetcher (at four bytes a value it asks for lines fast enough for it: no faster
 *  with stream_prefetch on the Intel Xeon of stop 30), except on Ice Lake servers
 *  (toy_stream_all), where stream_prefetch (prefetcht0 there) made SmolLM2 F32 decode 1.03–1.05×
 *  as fast with 1 thread and 1.05× with 2 (paired rounds inside one process, 2026-12-07). */
static inline __attribute__((always_inline)) void stream_prefetch_f32(const void *p, size_t bytes) {
  if (toy_stream_all) stream_prefetch(p, bytes);
}

/** stream_prefetch for the F16 and Q8_0 decode kernels (vecdot_float.h's kernel: also BF16 on CPUs
 *  without AVX512-BF16, not measured) and the split 4- and 5-bit and Q4_K/Q5_K kernels
 *  (vecdot_vnni.h), which spend the fewest instructions per
 *  byte of the prefetching kernels and wait on memory the most: nothing where toy_stream_hw says so
 *  (AMD; TOY_WIDE_PREFETCH=hw|sw overrides it), the hardware prefetcher alone following the
 *  stream. AMD EPYC (Zen 4), SmolLM2 decode at depth 0, ms per step, medians of 7 interleaved
 *  runs (2026-12-06), hardware alone against prefetcht0 4 KB ahead: 1 thread, F16 9.67 against
 *  10.29, Q8_0 5.63 against 6.10, Gemma 3 (its Q8_0 output matrix) 11.54 against 11.96; 2
 *  threads about even (F16 7.38 / 7.29, Q8_0 4.79 / 4.66, Gemma 3 8.80 / 9.10, within the
 *  2-thread noise). One thread's product from memory (bench/kernelRates.ts shapes): F16 27.3
 *  against 25.9 GB/s, Q8_0 24.8 against 22.8. The BF16 kernel is the other way round (11.49
 *  against 12.71 ms without its prefetcht1) and keeps it. The split kernels (2026-12-07, one
 *  thread, 576 × 1536 from memory, medians of 3–5 interleaved processes), hardware alone against
 *  prefetcht0 4 KB ahead: Q4_0 28.5 against 25.7 GB/s, Q4_1 31.3 / 28.8, Q5_0 25.0 / 24.1, Q5_1
 *  28.4 / 27.6, Q4_K 29.1 / 26.4, Q5_K 27.6 / 23.2 (2 or 8 KB ahead: no better); SmolLM2 decode,
 *  one thread, 8 rounds in alternating order: Q4_1 0.94× the step, Q4_0 0.97×, Q4_K_M and Gemma 3
 *  1.00× (two threads, Q4_0: 1.00×). Split Q6_K, whose step is read in four places at once, fell
 *  to 6.6 GB/s with the hardware alone: it takes stream_prefetch_split6. On the Intel Xeons the prefetch is what made F16
 *  and Q8_0 fast (above; on Ice Lake the hardware alone read 0.8× as fast, stop 47), so there they keep it. */
static inline __attribute__((always_inline)) void stream_prefetch_wide(const void *p, size_t bytes) {
  if (!toy_stream_hw) stream_prefetch(p, bytes);
}
#endif
