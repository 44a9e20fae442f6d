// The memory the system can give, for arl_alloc's check of large blocks: Linux's MemAvailable
// plus free swap, within the process's memory cgroup limit (v2 or v1) when it has one.
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>

#include "common.h"

namespace arl {
namespace {

// The number after `key` in a /proc/meminfo-style file (in kB), or -1.
int64_t meminfo_kib(FILE* f, const char* key) {
  std::rewind(f);
  char line[256];
  const size_t n = std::strlen(key);
  while (std::fgets(line, sizeof(line), f) != nullptr) {
    long long kib = 0;
    if (std::strncmp(line, key, n) == 0 && std::sscanf(line + n, " %lld", &kib) == 1)
      return kib >= 0 ? int64_t(kib) : -1;
  }
  return -1;
}

// One number from a file (cgroup's memory.max / memory.current), or -1 ("max", absent).
int64_t read_number(const std::string& path) {
  FILE* f = std::fopen(path.c_str(), "r");
  if (f == nullptr) return -1;
  long long v = -1;
  if (std::fscanf(f, "%lld", &v) != 1) v = -1;
  std::fclose(f);
  return v;
}

// limit - usage from a cgroup folder's two files, or -1 (absent, or no limit: "max").
int64_t room_in(const std::string& dir, const char* limit_file, const char* usage_file) {
  const int64_t limit = read_number(dir + "/" + limit_file);
  const int64_t usage = read_number(dir + "/" + usage_file);
  if (limit < 0 || usage < 0) return -1;
  return limit > usage ? limit - usage : 0;
}

// The bytes the process's memory cgroup still allows (v2's memory.max, or v1's
// memory.limit_in_bytes, less the usage), or -1 where none is found.
int64_t cgroup_room() {
  FILE* f = std::fopen("/proc/self/cgroup", "r");
  if (f == nullptr) return -1;
  char line[512];
  std::string v2, v1;
  while (std::fgets(line, sizeof(line), f) != nullptr) {
    std::string entry = line;
    while (!entry.empty() && (entry.back() == '\n' || entry.back() == '/')) entry.pop_back();
    if (entry.rfind("0::", 0) == 0) v2 = entry.substr(3);
    const size_t memory = entry.find(":memory:");
    if (memory != std::string::npos) v1 = entry.substr(memory + 8);
  }
  std::fclose(f);
  // (the process's own folder, else the mount's root: inside a cgroup namespace)
  for (const std::string& dir : {"/sys/fs/cgroup" + v2, std::string("/sys/fs/cgroup")}) {
    const int64_t room = room_in(dir, "memory.max", "memory.current");
    if (room >= 0) return room;
  }
  for (const std::string& dir : {"/sys/fs/cgroup/memory" + v1, std::string("/sys/fs/cgroup/memory")}) {
    const int64_t room = room_in(dir, "memory.limit_in_bytes", "memory.usage_in_bytes");
    if (room >= 0) return room;
  }
  return -1;
}

}  // namespace

int64_t available_memory_bytes() {
  const char* test_file = std::getenv("AGENTRL_MEMINFO");
  const bool test = test_file != nullptr && test_file[0] != '\0';
  FILE* f = std::fopen(test ? test_file : "/proc/meminfo", "r");
  if (f == nullptr) return -1;
  const int64_t available = meminfo_kib(f, "MemAvailable:");
  const int64_t swap = meminfo_kib(f, "SwapFree:");
  std::fclose(f);
  if (available < 0) return -1;
  int64_t bytes = (available + (swap > 0 ? swap : 0)) * 1024;
  if (!test) {
    const int64_t room = cgroup_room();
    if (room >= 0 && room < bytes) bytes = room;
  }
  return bytes;
}

}  // namespace arl
