// Run-time CPU feature detection: the AVX2+FMA code paths are used only where
// the processor has them (AGENTRL_PORTABLE=1 forces the portable path).
#pragma once

#include <cstdlib>

namespace arl {

inline bool has_avx2_fma() {
  static const bool value = [] {
    const char* force = std::getenv("AGENTRL_PORTABLE");
    if (force != nullptr && force[0] == '1') return false;
#if defined(__x86_64__) || defined(__i386__)
    __builtin_cpu_init();
    return __builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma");
#else
    return false;
#endif
  }();
  return value;
}

}  // namespace arl
