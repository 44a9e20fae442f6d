// The CUDA emulator's stand-in for <cuda_bf16.h>: the bf16 type and its conversions (round to
// nearest even, NaN kept quiet), as the CUDA library would use them.
#pragma once

#include <cstdint>
#include <cstring>

struct __nv_bfloat16 {
  uint16_t bits;
  __nv_bfloat16() = default;
  __nv_bfloat16(float f) : bits(from_float(f)) {}
  operator float() const {
    const uint32_t w = uint32_t(bits) << 16;
    float f;
    std::memcpy(&f, &w, 4);
    return f;
  }
  static uint16_t from_float(float f) {
    uint32_t w;
    std::memcpy(&w, &f, 4);
    if ((w & 0x7fffffffu) > 0x7f800000u) return uint16_t((w >> 16) | 0x40);  // quiet NaN
    return uint16_t((w + 0x7fffu + ((w >> 16) & 1u)) >> 16);
  }
};

inline __nv_bfloat16 __float2bfloat16(float f) { return __nv_bfloat16(f); }
inline __nv_bfloat16 __float2bfloat16_rn(float f) { return __nv_bfloat16(f); }
inline float __bfloat162float(__nv_bfloat16 h) { return float(h); }
