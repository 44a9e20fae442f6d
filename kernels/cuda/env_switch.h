// The CUDA library's environment switches (AGENTRL_CUDA_*: a measurement's baselines and
// experiments, a few settings). Each caller reads its switch once, into a function-local static:
//   static const bool on = arl::env_flag("AGENTRL_CUDA_GREEDY_PDL", true);
// A value that is not one of the switch's own is said on stderr, and the default is kept.
#pragma once

#include <initializer_list>

namespace arl {

// The index of the value of `env` among the n `names`, or `fallback` when it is unset or empty
// (or unknown: then stderr names the values known). A fallback of -1 stands for "not set".
int env_choice(const char* env, const char* const* names, int n, int fallback = 0);
inline int env_choice(const char* env, std::initializer_list<const char*> names,
                      int fallback = 0) {
  return env_choice(env, names.begin(), int(names.size()), fallback);
}

// A 0|1 switch: whether it is 1, `fallback` when unset.
inline bool env_flag(const char* env, bool fallback) {
  return env_choice(env, {"0", "1"}, fallback ? 1 : 0) == 1;
}

// A whole number in [lo, hi], `fallback` when unset (or not such a number: then said on stderr).
int env_int(const char* env, int lo, int hi, int fallback);

}  // namespace arl
