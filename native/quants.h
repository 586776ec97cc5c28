// ggml block layouts (ggml-common.h).
#ifndef TOY_QUANTS_H
#define TOY_QUANTS_H
#include <stdint.h>

typedef struct { uint16_t d; uint8_t qs[16]; } bq4_0;
typedef struct { uint16_t d, m; uint8_t qs[16]; } bq4_1;
typedef struct { uint16_t d; uint8_t qh[4]; uint8_t qs[16]; } bq5_0;
typedef struct { uint16_t d, m; uint8_t qh[4]; uint8_t qs[16]; } bq5_1;
typedef struct { uint16_t d; int8_t qs[32]; } bq8_0;
typedef struct { uint8_t scales[16]; uint8_t qs[64]; uint16_t d, dmin; } bq2_K;
typedef struct { uint8_t hmask[32]; uint8_t qs[64]; uint8_t scales[12]; uint16_t d; } bq3_K;
typedef struct { uint16_t d, dmin; uint8_t scales[12]; uint8_t qs[128]; } bq4_K;
typedef struct { uint16_t d, dmin; uint8_t scales[12]; uint8_t qh[32]; uint8_t qs[128]; } bq5_K;
typedef struct { uint8_t ql[128]; uint8_t qh[64]; int8_t scales[16]; uint16_t d; } bq6_K;

_Static_assert(sizeof(bq4_0) == 18, "q4_0"); _Static_assert(sizeof(bq4_1) == 20, "q4_1");
_Static_assert(sizeof(bq5_0) == 22, "q5_0"); _Static_assert(sizeof(bq5_1) == 24, "q5_1");
_Static_assert(sizeof(bq8_0) == 34, "q8_0"); _Static_assert(sizeof(bq2_K) == 84, "q2_K");
_Static_assert(sizeof(bq3_K) == 110, "q3_K"); _Static_assert(sizeof(bq4_K) == 144, "q4_K");
_Static_assert(sizeof(bq5_K) == 176, "q5_K"); _Static_assert(sizeof(bq6_K) == 210, "q6_K");

/** Q4_K/Q5_K: the 6-bit scale and min of sub-block j from the packed 12 bytes. */
static inline void scale_min_k4(int j, const uint8_t *q, uint8_t *d, uint8_t *m) {
  if (j < 4) { *d = q[j] & 63; *m = q[j + 4] & 63; }
  else { *d = (q[j + 4] & 0xF) | ((q[j - 4] >> 6) << 4); *m = (q[j + 4] >> 4) | ((q[j - 0] >> 6) << 4); }
}
/** Q3_K: the 16 six-bit scales (offset by 32) from the packed 12 bytes. */
void q3k_scales(const uint8_t *in, int8_t *scales);
#endif
