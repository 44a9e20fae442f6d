// The rotary embedding's angles, shared by arl_rope and the decode fusion.
#pragma once

#include "common.cuh"

// cos and sign * sin of pos * theta^(-2j/d), in double as on the CPU.
__device__ inline void rope_trig(int32_t j, double pos, float theta, int32_t d, double sign,
                                 float* cs, float* sn) {
  const double angle = pos * pow(double(theta), -2.0 * j / d);
  double s, co;
  sincos(angle, &s, &co);
  *cs = float(co);
  *sn = float(sign * s);
}

// The same with the frequency given: pos * inv_freq (arl_rope_freqs).
__device__ inline void rope_trig_freq(double pos, float inv_freq, double sign, float* cs,
                                      float* sn) {
  const double angle = pos * double(inv_freq);
  double s, co;
  sincos(angle, &s, &co);
  *cs = float(co);
  *sn = float(sign * s);
}
