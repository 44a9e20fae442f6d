// The environment switches' parsing (env_switch.h).
#include "env_switch.h"

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>

namespace arl {

int env_choice(const char* env, const char* const* names, int n, int fallback) {
  const char* e = std::getenv(env);
  if (e == nullptr || *e == '\0') return fallback;
  std::string known;
  for (int i = 0; i < n; i++) {
    if (std::strcmp(e, names[i]) == 0) return i;
    known += std::string(i == 0 ? "" : ", ") + names[i];
  }
  const std::string kept =
      fallback >= 0 && fallback < n ? std::string("using ") + names[fallback] : "ignored";
  std::fprintf(stderr, "agentrl: %s=%s is not one of %s; %s\n", env, e, known.c_str(),
               kept.c_str());
  return fallback;
}

int env_int(const char* env, int lo, int hi, int fallback) {
  const char* e = std::getenv(env);
  if (e == nullptr || *e == '\0') return fallback;
  char* end = nullptr;
  const long long v = std::strtoll(e, &end, 10);
  if (*end == '\0' && v >= lo && v <= hi) return int(v);
  std::fprintf(stderr, "agentrl: %s=%s is not a whole number in %d..%d; using %d\n", env, e, lo,
               hi, fallback);
  return fallback;
}

}  // namespace arl
