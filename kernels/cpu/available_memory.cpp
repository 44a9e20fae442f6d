// The memory the system can give without swapping, for arl_alloc's check of large blocks.
#include <cstdio>
#include <cstdlib>

#include "common.h"

namespace arl {

int64_t available_memory_bytes() {
  const char* path = std::getenv("AGENTRL_MEMINFO");
  FILE* f = std::fopen(path != nullptr && path[0] != '\0' ? path : "/proc/meminfo", "r");
  if (f == nullptr) return -1;
  char line[256];
  int64_t bytes = -1;
  while (std::fgets(line, sizeof(line), f) != nullptr) {
    long long kib = 0;
    if (std::sscanf(line, "MemAvailable: %lld kB", &kib) == 1) {
      bytes = kib >= 0 ? int64_t(kib) * 1024 : -1;
      break;
    }
  }
  std::fclose(f);
  return bytes;
}

}  // namespace arl
