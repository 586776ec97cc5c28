// GGUF storage types: block layouts (ggml-common.h) and dequantization to float32 (the exact
// formulas of ggml-quants.c, so getRows matches every other GGUF reader bit for bit).
#include <string.h>
#include "toy.h"
#include "quants.h"

size_t row_bytes(int type, int64_t cols) {
  int bs, ts;
  switch (type) {
    case T_F32: bs = 1; ts = 4; break;
    case T_F16: case T_BF16: bs = 1; ts = 2; break;
    case T_Q4_0: bs = 32; ts = sizeof(bq4_0); break;
    case T_Q4_1: bs = 32; ts = sizeof(bq4_1); break;
    case T_Q5_0: bs = 32; ts = sizeof(bq5_0); break;
    case T_Q5_1: bs = 32; ts = sizeof(bq5_1); break;
    case T_Q8_0: bs = 32; ts = sizeof(bq8_0); break;
    case T_Q2_K: bs = 256; ts = sizeof(bq2_K); break;
    case T_Q3_K: bs = 256; ts = sizeof(bq3_K); break;
    case T_Q4_K: bs = 256; ts = sizeof(bq4_K); break;
    case T_Q5_K: bs = 256; ts = sizeof(bq5_K); break;
    case T_Q6_K: bs = 256; ts = sizeof(bq6_K); break;
    case T_IQ4_NL: bs = 32; ts = 18; break;  // d, qs[16]
    case T_IQ4_XS: bs = 256; ts = 136; break; // d, scales_h, scales_l[4], qs[128]
    default: return 0;
  }
  if (cols <= 0 || cols % bs) return 0;
  return (size_t)(cols / bs) * ts;
}

int type_supported(int type) { return row_bytes(type, 256) != 0; }

void q3k_scales(const uint8_t *in, int8_t *scales) {
  const uint32_t kmask1 = 0x03030303, kmask2 = 0x0f0f0f0f;
  uint32_t aux[4];
  memcpy(aux, in, 12);
  uint32_t tmp = aux[2];
  aux[2] = ((aux[0] >> 4) & kmask2) | (((tmp >> 4) & kmask1) << 4);
  aux[3] = ((aux[1] >> 4) & kmask2) | (((tmp >> 6) & kmask1) << 4);
  aux[0] = (aux[0] & kmask2) | (((tmp >> 0) & kmask1) << 4);
  aux[1] = (aux[1] & kmask2) | (((tmp >> 2) & kmask1) << 4);
  memcpy(scales, aux, 16); // 6-bit values, still offset by 32
}

static const int8_t kvalues_iq4nl[16] = { -127, -104, -83, -65, -49, -35, -22, -10, 1, 13, 25, 38, 53, 69, 89, 113 };

void dequantize_row(int type, const void *row, float *y, int64_t k) {
  switch (type) {
    case T_IQ4_NL: {
      const uint8_t *x = row;
      for (int64_t i = 0; i < k / 32; i++, x += 18, y += 32) {
        uint16_t h; memcpy(&h, x, 2);
        const float d = f16_to_f32(h);
        for (int j = 0; j < 16; j++) { y[j] = d * kvalues_iq4nl[x[2 + j] & 0xf]; y[j + 16] = d * kvalues_iq4nl[x[2 + j] >> 4]; }
      }
      return;
    }
    case T_IQ4_XS: {
      const uint8_t *x = row;
      for (int64_t i = 0; i < k / 256; i++, x += 136) {
        uint16_t h, sh; memcpy(&h, x, 2); memcpy(&sh, x + 2, 2);
        const float d = f16_to_f32(h);
        for (int ib = 0; ib < 8; ib++, y += 32) {
          const int ls = ((x[4 + ib / 2] >> 4 * (ib % 2)) & 0xf) | (((sh >> 2 * ib) & 3) << 4);
          const float dl = d * (ls - 32);
          const uint8_t *qs = x + 8 + 16 * ib;
          for (int j = 0; j < 16; j++) { y[j] = dl * kvalues_iq4nl[qs[j] & 0xf]; y[j + 16] = dl * kvalues_iq4nl[qs[j] >> 4]; }
        }
      }
      return;
    }
    case T_F32: memcpy(y, row, k * 4); return;
    case T_F16: { const uint16_t *h = row; for (int64_t i = 0; i < k; i++) y[i] = f16_to_f32(h[i]); return; }
    case T_BF16: { const uint16_t *h = row; for (int64_t i = 0; i < k; i++) y[i] = bf16_to_f32(h[i]); return; }
    case T_Q4_0: {
      const bq4_0 *x = row;
      for (int64_t i = 0; i < k / 32; i++, y += 32) {
        const float d = f16_to_f32(x[i].d);
        for (int j = 0; j < 16; j++) {
          y[j] = ((x[i].qs[j] & 0x0F) - 8) * d;
          y[j + 16] = ((x[i].qs[j] >> 4) - 8) * d;
        }
      }
      return;
    }
    case T_Q4_1: {
      const bq4_1 *x = row;
      for (int64_t i = 0; i < k / 32; i++, y += 32) {
        const float d = f16_to_f32(x[i].d), m = f16_to_f32(x[i].m);
        for (int j = 0; j < 16; j++) {
          y[j] = (x[i].qs[j] & 0x0F) * d + m;
          y[j + 16] = (x[i].qs[j] >> 4) * d + m;
        }
      }
      return;
    }
    case T_Q5_0: {
      const bq5_0 *x = row;
      for (int64_t i = 0; i < k / 32; i++, y += 32) {
        const float d = f16_to_f32(x[i].d);
        uint32_t qh; memcpy(&qh, x[i].qh, 4);
        for (int j = 0; j < 16; j++) {
          const uint8_t xh0 = ((qh >> (j + 0)) << 4) & 0x10, xh1 = ((qh >> (j + 12))) & 0x10;
          y[j] = ((int32_t)((x[i].qs[j] & 0x0F) | xh0) - 16) * d;
          y[j + 16] = ((int32_t)((x[i].qs[j] >> 4) | xh1) - 16) * d;
        }
      }
      return;
    }
    case T_Q5_1: {
      const bq5_1 *x = row;
      for (int64_t i = 0; i < k / 32; i++, y += 32) {
        const float d = f16_to_f32(x[i].d), m = f16_to_f32(x[i].m);
        uint32_t qh; memcpy(&qh, x[i].qh, 4);
        for (int j = 0; j < 16; j++) {
          const uint8_t xh0 = ((qh >> (j + 0)) << 4) & 0x10, xh1 = ((qh >> (j + 12))) & 0x10;
          y[j] = ((x[i].qs[j] & 0x0F) | xh0) * d + m;
          y[j + 16] = ((x[i].qs[j] >> 4) | xh1) * d + m;
        }
      }
      return;
    }
    case T_Q8_0: {
      const bq8_0 *x = row;
      for (int64_t i = 0; i < k / 32; i++, y += 32) {
        const float d = f16_to_f32(x[i].d);
        for (int j = 0; j < 32; j++) y[j] = x[i].qs[j] * d;
      }
      return;
    }
    case T_Q2_K: {
      const bq2_K *x = row;
      for (int64_t i = 0; i < k / 256; i++) {
        const float d = f16_to_f32(x[i].d), min = f16_to_f32(x[i].dmin);
        const uint8_t *q = x[i].qs;
        int is = 0;
        for (int n = 0; n < 256; n += 128) {
          int shift = 0;
          for (int j = 0; j < 4; ++j) {
            uint8_t sc = x[i].scales[is++];
            float dl = d * (sc & 0xF), ml = min * (sc >> 4);
            for (int l = 0; l < 16; ++l) *y++ = dl * ((int8_t)((q[l] >> shift) & 3)) - ml;
            sc = x[i].scales[is++];
            dl = d * (sc & 0xF), ml = min * (sc >> 4);
            for (int l = 0; l < 16; ++l) *y++ = dl * ((int8_t)((q[l + 16] >> shift) & 3)) - ml;
            shift += 2;
          }
          q += 32;
        }
      }
      return;
    }
    case T_Q3_K: {
      const bq3_K *x = row;
      for (int64_t i = 0; i < k / 256; i++) {
        const float d_all = f16_to_f32(x[i].d);
        const uint8_t *q = x[i].qs, *hm = x[i].hmask;
        uint8_t m = 1;
        int8_t scales[16];
        q3k_scales(x[i].scales, scales);
        int is = 0;
        for (int n = 0; n < 256; n += 128) {
          int shift = 0;
          for (int j = 0; j < 4; ++j) {
            float dl = d_all * (scales[is++] - 32);
            for (int l = 0; l < 16; ++l) *y++ = dl * ((int8_t)((q[l + 0] >> shift) & 3) - ((hm[l + 0] & m) ? 0 : 4));
            dl = d_all * (scales[is++] - 32);
            for (int l = 0; l < 16; ++l) *y++ = dl * ((int8_t)((q[l + 16] >> shift) & 3) - ((hm[l + 16] & m) ? 0 : 4));
            shift += 2;
            m <<= 1;
          }
          q += 32;
        }
      }
      return;
    }
    case T_Q4_K: {
      const bq4_K *x = row;
      for (int64_t i = 0; i < k / 256; i++) {
        const uint8_t *q = x[i].qs;
        const float d = f16_to_f32(x[i].d), min = f16_to_f32(x[i].dmin);
        int is = 0;
        uint8_t sc, m;
        for (int j = 0; j < 256; j += 64) {
          scale_min_k4(is + 0, x[i].scales, &sc, &m);
          const float d1 = d * sc, m1 = min * m;
          scale_min_k4(is + 1, x[i].scales, &sc, &m);
          const float d2 = d * sc, m2 = min * m;
          for (int l = 0; l < 32; ++l) *y++ = d1 * (q[l] & 0xF) - m1;
          for (int l = 0; l < 32; ++l) *y++ = d2 * (q[l] >> 4) - m2;
          q += 32;
          is += 2;
        }
      }
      return;
    }
    case T_Q5_K: {
      const bq5_K *x = row;
      for (int64_t i = 0; i < k / 256; i++) {
        const uint8_t *ql = x[i].qs, *qh = x[i].qh;
        const float d = f16_to_f32(x[i].d), min = f16_to_f32(x[i].dmin);
        int is = 0;
        uint8_t sc, m, u1 = 1, u2 = 2;
        for (int j = 0; j < 256; j += 64) {
          scale_min_k4(is + 0, x[i].scales, &sc, &m);
          const float d1 = d * sc, m1 = min * m;
          scale_min_k4(is + 1, x[i].scales, &sc, &m);
          const float d2 = d * sc, m2 = min * m;
          for (int l = 0; l < 32; ++l) *y++ = d1 * ((ql[l] & 0xF) + (qh[l] & u1 ? 16 : 0)) - m1;
          for (int l = 0; l < 32; ++l) *y++ = d2 * ((ql[l] >> 4) + (qh[l] & u2 ? 16 : 0)) - m2;
          ql += 32;
          is += 2;
          u1 <<= 2;
          u2 <<= 2;
        }
      }
      return;
    }
    case T_Q6_K: {
      const bq6_K *x = row;
      for (int64_t i = 0; i < k / 256; i++) {
        const float d = f16_to_f32(x[i].d);
        const uint8_t *ql = x[i].ql, *qh = x[i].qh;
        const int8_t *sc = x[i].scales;
        for (int n = 0; n < 256; n += 128) {
          for (int l = 0; l < 32; ++l) {
            int is = l / 16;
            const int8_t q1 = (int8_t)((ql[l + 0] & 0xF) | (((qh[l] >> 0) & 3) << 4)) - 32;
            const int8_t q2 = (int8_t)((ql[l + 32] & 0xF) | (((qh[l] >> 2) & 3) << 4)) - 32;
            const int8_t q3 = (int8_t)((ql[l + 0] >> 4) | (((qh[l] >> 4) & 3) << 4)) - 32;
            const int8_t q4 = (int8_t)((ql[l + 32] >> 4) | (((qh[l] >> 6) & 3) << 4)) - 32;
            y[l + 0] = d * sc[is + 0] * q1;
            y[l + 32] = d * sc[is + 2] * q2;
            y[l + 64] = d * sc[is + 4] * q3;
            y[l + 96] = d * sc[is + 6] * q4;
          }
          y += 128;
          ql += 64;
          qh += 32;
          sc += 8;
        }
      }
      return;
    }
  }
}
