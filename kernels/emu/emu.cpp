// The CUDA emulator's runtime: the fiber scheduler that runs a launch's blocks one at a time
// (every thread of a block a fiber, switched at barriers; a cooperative launch's blocks all at
// once, so that a grid-wide barrier can hold them), and the slice of the CUDA runtime
// API the library uses (memory is host memory; streams run their work at once, except while
// captured into a graph, which records it for replay).
//
// Environment: AGENTRL_CUDA_EMU_ORDER = forward (default) | reverse | shuffle: the order in
// which blocks run and in which a block's ready threads run between barriers; a kernel whose
// results change with it reads or writes shared data that no barrier orders. lag: forward, but
// in a launch whose blocks run together, every other cluster (or block) runs only one pass in
// kLagPasses, so that a block that reads another's writes without waiting for them reads early.
// AGENTRL_CUDA_EMU_SMS (default 132, an H100) is the multiprocessor count reported;
// AGENTRL_CUDA_EMU_DEVICES (default 1) the device count (0: the "no CUDA device" path).
//
// Device memory: every allocation (256-byte aligned, its size rounded up to 256 bytes) ends at a
// page boundary followed by an inaccessible page, and starts filled with 0xff bytes (NaN as
// floats), so a kernel that writes or reads past the end of a buffer faults at once (stderr
// names the kernel, block and thread) and reads of memory nothing wrote show up as NaN or
// garbage, as they could on a GPU.
#include "cuda_runtime.h"

#include <pthread.h>
#include <signal.h>
#include <sys/mman.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <random>
#include <string>
#include <vector>

uint3 threadIdx, blockIdx;
dim3 blockDim, gridDim;

// ---- fibers ----------------------------------------------------------------------------------

extern "C" void emu_switch(void** save_sp, void* load_sp);
extern "C" void emu_trampoline();
extern "C" void emu_fiber_main();

#if defined(__x86_64__)
// Saves the callee-saved registers on the current stack, stores the stack pointer in *save_sp
// and resumes the fiber whose stack pointer is load_sp. The floating-point control words are
// left alone (kernels do not change rounding modes; saving them cost most of a switch).
asm(R"(
  .text
  .globl emu_switch
  .hidden emu_switch
  .type emu_switch, @function
emu_switch:
  pushq %rbp
  pushq %rbx
  pushq %r12
  pushq %r13
  pushq %r14
  pushq %r15
  movq %rsp, (%rdi)
  movq %rsi, %rsp
  popq %r15
  popq %r14
  popq %r13
  popq %r12
  popq %rbx
  popq %rbp
  ret
  .size emu_switch, .-emu_switch

  .globl emu_trampoline
  .hidden emu_trampoline
  .type emu_trampoline, @function
emu_trampoline:
  call emu_fiber_main@PLT
  ud2
  .size emu_trampoline, .-emu_trampoline
)");
#else
#error "the CUDA emulator's fibers are written for x86-64"
#endif

namespace emu {
namespace {

constexpr size_t kStackBytes = 256 * 1024;
constexpr int kMaxThreads = 1024;
// A cooperative launch's fibers (all of its blocks' threads at once) get smaller stacks of
// their own, without guard pages (so many would pass the kernel's limit on mappings).
constexpr size_t kGridStackBytes = 64 * 1024;
constexpr int kMaxGridThreads = 1 << 17;
// One SM's capacity, for occupancy and cooperative launches (an H100's; registers not modelled).
constexpr int kSmThreads = 2048;
constexpr size_t kSmSharedBytes = 227 * 1024;

enum State { kReady, kWaitBlock, kWaitWarp, kDone };

struct Fiber {
  void* sp;
  State state;
  unsigned warp_barriers;  // warp barriers this thread has passed
  uint3 index;             // its threadIdx
  unsigned cluster_phase;  // its cluster barrier's phase when it last arrived
};

enum class Order { kForward, kReverse, kShuffle, kLag };
constexpr int kLagPasses = 16;

Order order_from_env() {
  const char* v = std::getenv("AGENTRL_CUDA_EMU_ORDER");
  if (v == nullptr || std::strcmp(v, "forward") == 0) return Order::kForward;
  if (std::strcmp(v, "reverse") == 0) return Order::kReverse;
  if (std::strcmp(v, "shuffle") == 0) return Order::kShuffle;
  if (std::strcmp(v, "lag") == 0) return Order::kLag;
  std::fprintf(stderr, "AGENTRL_CUDA_EMU_ORDER=%s: expected forward, reverse, shuffle or lag\n",
               v);
  return Order::kForward;
}

int int_from_env(const char* name, int fallback) {
  const char* v = std::getenv(name);
  return v != nullptr && *v != '\0' ? std::atoi(v) : fallback;
}

// A block being run (under g_launch_mutex): one at a time, or a cooperative launch's all at once.
struct Block {
  Body* body = nullptr;
  const char* kernel = "";
  int threads = 0;
  int live = 0;
  int arrived = 0;  // threads waiting at __syncthreads
  std::vector<Fiber> fibers;
  std::vector<int> warp_live, warp_arrived;
  std::vector<uint64_t> slots;  // per warp: 2 x 32 exchange slots
  std::vector<int> order;
  int current = -1;
  void* scheduler_sp = nullptr;
  unsigned char* dynamic_shared = nullptr;
  uint3 index = {0, 0, 0};                // its blockIdx
  std::vector<unsigned char> shared_store;  // a cooperative launch's block: its shared memory
};
Block g_single;          // the block of an ordinary launch
Block* g_cur = &g_single;  // the block whose fiber runs

// Threads that spun (__nanosleep: waiting for a value another thread writes) in this pass. A
// run of passes in which every thread that ran only spun is a deadlock once it is longer than
// kMaxIdlePasses or kMaxIdleNs of the host's clock (the clock bounds a big grid, whose passes are
// slow; a wait with a time limit shorter than that gives up first and reports itself).
int g_spins = 0;
constexpr int kMaxIdlePasses = 1 << 20;
constexpr unsigned long long kMaxIdleNs = 20000000000ull;

// A run of passes without progress: how many, and when it began (global_ns).
struct IdleRun {
  int passes = 0;
  unsigned long long since = 0;
};

std::mutex g_launch_mutex;
char* g_stacks = nullptr;
char* g_grid_stacks = nullptr;
std::mt19937 g_rng(12345);
const Order g_order = order_from_env();
thread_local cudaError_t t_last_error = cudaSuccess;

char* stack_of(int t) {
  if (g_stacks == nullptr) {
    const size_t bytes = kStackBytes * kMaxThreads;
    void* p = mmap(nullptr, bytes, PROT_READ | PROT_WRITE,
                   MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
    if (p == MAP_FAILED) {
      std::fprintf(stderr, "CUDA emulator: cannot map %zu bytes of fiber stacks\n", bytes);
      std::abort();
    }
    g_stacks = static_cast<char*>(p);
    const size_t page = size_t(sysconf(_SC_PAGESIZE));
    for (int i = 0; i < kMaxThreads; i++) mprotect(g_stacks + i * kStackBytes, page, PROT_NONE);
  }
  return g_stacks + size_t(t) * kStackBytes;
}

// Stack i of a cooperative launch's fibers.
char* grid_stack_of(int i) {
  if (g_grid_stacks == nullptr) {
    const size_t bytes = kGridStackBytes * kMaxGridThreads;
    void* p = mmap(nullptr, bytes, PROT_READ | PROT_WRITE,
                   MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
    if (p == MAP_FAILED) {
      std::fprintf(stderr, "CUDA emulator: cannot map %zu bytes of fiber stacks\n", bytes);
      std::abort();
    }
    g_grid_stacks = static_cast<char*>(p);
  }
  return g_grid_stacks + size_t(i) * kGridStackBytes;
}

// A fresh stack (of `bytes` at `stack`) for thread t that emu_switch resumes into
// emu_trampoline.
void* initial_sp(char* stack, size_t bytes, int t) {
  // Stack tops staggered (by up to an eighth of the stack): at a power-of-two stride they would
  // share cache sets.
  char* top = stack + bytes - size_t(t % 512) * 64 % (bytes / 8);
  // emu_switch pops 6 registers and returns: 7 words, after which the trampoline's stack must
  // be 16-byte aligned (it calls emu_fiber_main).
  auto* sp = reinterpret_cast<uint64_t*>(top - 128 - 8);
  for (int i = 0; i < 6; i++) sp[i] = 0;  // r15 r14 r13 r12 rbx rbp
  sp[6] = reinterpret_cast<uint64_t>(&emu_trampoline);
  return sp;
}

// Back to the scheduler; returns when this thread is resumed.
void yield() {
  Block& b = *g_cur;
  const int self = b.current;
  emu_switch(&b.fibers[size_t(self)].sp, b.scheduler_sp);
}

void release(State waiting, int warp) {
  Block& b = *g_cur;
  const int begin = warp < 0 ? 0 : warp * 32;
  const int end = warp < 0 ? b.threads : std::min(b.threads, begin + 32);
  for (int t = begin; t < end; t++)
    if (b.fibers[size_t(t)].state == waiting) b.fibers[size_t(t)].state = kReady;
}

// After `warp` lost a live thread: the barriers its waiters were waiting for may be complete.
void recheck_barriers(int warp) {
  Block& b = *g_cur;
  if (b.arrived > 0 && b.arrived == b.live) {
    b.arrived = 0;
    release(kWaitBlock, -1);
  }
  if (b.warp_arrived[size_t(warp)] > 0 &&
      b.warp_arrived[size_t(warp)] == b.warp_live[size_t(warp)]) {
    b.warp_arrived[size_t(warp)] = 0;
    release(kWaitWarp, warp);
  }
}

std::string describe_waits(const Block& b) {
  int at_block = 0, at_warp = 0, spinning = 0;
  for (const Fiber& f : b.fibers) {
    at_block += f.state == kWaitBlock;
    at_warp += f.state == kWaitWarp;
    spinning += f.state == kReady;
  }
  char text[300];
  std::snprintf(text, sizeof(text),
                "%d threads wait at __syncthreads, %d at a warp barrier (shuffle or "
                "__syncwarp) and %d spin (__nanosleep) on a value no thread writes",
                at_block, at_warp, spinning);
  return text;
}

// Sets block b up to run from the start at `index` (its threads' stacks from stack(t)).
template <typename Stack>
void start_block(Block& b, const dim3& index, Stack stack) {
  b.index = {index.x, index.y, index.z};
  b.live = b.threads;
  b.arrived = 0;
  const int warps = (b.threads + 31) / 32;
  b.warp_live.assign(size_t(warps), 0);
  b.warp_arrived.assign(size_t(warps), 0);
  b.slots.assign(size_t(warps) * 64, 0);
  b.fibers.resize(size_t(b.threads));
  for (int t = 0; t < b.threads; t++) {
    const unsigned bx = blockDim.x, by = blockDim.y, u = unsigned(t);
    b.fibers[size_t(t)] = Fiber{stack(t), kReady, 0, {u % bx, u / bx % by, u / (bx * by)}, 0};
    b.warp_live[size_t(t / 32)]++;
  }
}

// Runs each ready thread of block b once (to its next barrier, spin or end); how many ran.
int run_ready(Block& b) {
  g_cur = &b;
  blockIdx = b.index;
  if (g_order == Order::kShuffle) std::shuffle(b.order.begin(), b.order.end(), g_rng);
  int ran = 0;
  for (int t : b.order) {
    if (b.fibers[size_t(t)].state != kReady) continue;
    b.current = t;
    threadIdx = b.fibers[size_t(t)].index;
    emu_switch(&b.scheduler_sp, b.fibers[size_t(t)].sp);
    ran++;
  }
  return ran;
}

// After a pass in which `ran` threads ran: whether it made progress (a thread that ran did
// more than spin), counting the passes in a row without.
bool progressed(int ran, IdleRun* idle) {
  const bool only_spun = ran > 0 && ran == g_spins;
  g_spins = 0;
  if (!only_spun) {
    idle->passes = 0;
    return ran > 0;
  }
  if (idle->passes++ == 0) idle->since = emu::global_ns();
  return idle->passes <= kMaxIdlePasses &&
         ((idle->passes & 255) != 0 || emu::global_ns() - idle->since <= kMaxIdleNs);
}

void report_deadlock(const Block& b) {
  std::fprintf(stderr, "CUDA emulator: kernel %s, block (%u, %u, %u): %s\n", b.kernel, b.index.x,
               b.index.y, b.index.z, describe_waits(b).c_str());
}

// Runs one block to completion; false (with a message on stderr) on a barrier deadlock.
bool run_block(const dim3& index) {
  Block& b = g_single;
  start_block(b, index, [](int t) { return initial_sp(stack_of(t), kStackBytes, t); });
  IdleRun idle;
  while (b.live > 0) {
    if (!progressed(run_ready(b), &idle)) {
      report_deadlock(b);
      return false;
    }
  }
  return true;
}

// Runs a cooperative launch's blocks together: each pass runs every block's ready threads, so
// that a thread can spin (__nanosleep) until another block writes what it waits for (a grid
// barrier). False (with a message on stderr) on a deadlock. (Order::kLag: the odd clusters of
// `cluster` blocks run one pass in kLagPasses.)
bool run_grid(std::vector<Block>& blocks, const std::vector<dim3>& indices, unsigned cluster) {
  for (size_t i = 0; i < blocks.size(); i++) {
    const int base = int(i) * blocks[i].threads;
    start_block(blocks[i], indices[i], [base](int t) {
      return initial_sp(grid_stack_of(base + t), kGridStackBytes, t);
    });
  }
  std::vector<size_t> order(blocks.size());
  for (size_t i = 0; i < order.size(); i++) order[i] = i;
  const auto live = [&blocks] {
    return std::any_of(blocks.begin(), blocks.end(), [](const Block& b) { return b.live > 0; });
  };
  const auto lagging = [&](size_t i) {
    const dim3& at = indices[i];
    return (at.x + gridDim.x * (at.y + gridDim.y * at.z)) / cluster % 2 == 1;
  };
  IdleRun idle;
  for (uint64_t pass = 0; live(); pass++) {
    if (g_order == Order::kShuffle) std::shuffle(order.begin(), order.end(), g_rng);
    int ran = 0;
    bool held = false;  // (a lagging block that could have run)
    for (size_t i : order) {
      if (g_order == Order::kLag && pass % kLagPasses != 0 && lagging(i)) {
        held = held || blocks[i].live > 0;
        continue;
      }
      ran += run_ready(blocks[i]);
    }
    if (ran == 0 && held) continue;
    if (progressed(ran, &idle)) continue;
    for (const Block& b : blocks) {
      if (b.live > 0) {
        report_deadlock(b);
        break;
      }
    }
    return false;
  }
  return true;
}

// A cluster launch's state (under g_launch_mutex): its blocks by linear index, and each
// cluster's barrier (threads arrived in this phase, and the phase).
struct Clusters {
  unsigned size = 1;
  size_t shared = 0;
  int threads = 0;  // a cluster's: size times a block's
  std::vector<Block*> by_index;
  std::vector<int> arrived;
  std::vector<unsigned> phase;
};
Clusters g_clusters;

unsigned linear_block() { return blockIdx.x + gridDim.x * (blockIdx.y + gridDim.y * blockIdx.z); }

std::map<const void*, int> g_max_dynamic_shared;

// The dynamic shared memory a launch of `kernel` may ask for (48 KiB unless
// cudaFuncSetAttribute raised it).
size_t shared_limit(const void* kernel) {
  const auto it = g_max_dynamic_shared.find(kernel);
  return it == g_max_dynamic_shared.end() ? 48 * 1024 : size_t(it->second);
}

// Blocks of `threads` threads and `shared` dynamic bytes that one SM holds.
uint64_t blocks_per_sm(uint64_t threads, size_t shared) {
  const uint64_t by_threads = kSmThreads / threads;
  return shared == 0 ? by_threads : std::min<uint64_t>(by_threads, kSmSharedBytes / shared);
}

cudaError_t check_config(const void* kernel, const Config& c) {
  const uint64_t threads = uint64_t(c.block.x) * c.block.y * c.block.z;
  if (threads == 0 || threads > kMaxThreads || c.block.z > 64) return cudaErrorInvalidConfiguration;
  if (c.grid.x == 0 || c.grid.y == 0 || c.grid.z == 0 || c.grid.x > 0x7fffffffu ||
      c.grid.y > 65535 || c.grid.z > 65535)
    return cudaErrorInvalidConfiguration;
  if (c.shared > shared_limit(kernel)) return cudaErrorInvalidValue;
  if (c.cooperative || c.cluster > 1) {  // every block at once, within the emulator's fibers
    const uint64_t blocks = uint64_t(c.grid.x) * c.grid.y * c.grid.z;
    const uint64_t per_sm = blocks_per_sm(threads, c.shared);
    const uint64_t sms = uint64_t(std::max(1, int_from_env("AGENTRL_CUDA_EMU_SMS", 132)));
    if (blocks > per_sm * sms || threads * blocks > uint64_t(kMaxGridThreads))
      return cudaErrorCooperativeLaunchTooLarge;
  }
  return cudaSuccess;
}

// Set while a kernel runs (for the fault handler).
pthread_t g_running_thread;
volatile sig_atomic_t g_running = 0;
struct sigaction g_previous_segv, g_previous_bus;

// A fault while a kernel runs is (almost surely) the kernel's: say which, then die as the
// fault would have. Other faults go to the handler that was there before.
void on_fault(int sig, siginfo_t* info, void* context) {
  if (g_running && pthread_equal(pthread_self(), g_running_thread)) {
    const Block& b = *g_cur;
    char text[400];
    const int len = std::snprintf(
        text, sizeof(text),
        "CUDA emulator: kernel %s, block (%u, %u, %u), thread (%u, %u, %u) touched %p, outside "
        "every allocation (past a buffer's end, or freed)\n",
        b.kernel, blockIdx.x, blockIdx.y, blockIdx.z, threadIdx.x, threadIdx.y, threadIdx.z,
        info->si_addr);
    if (len > 0) (void)!write(2, text, size_t(len));
    signal(sig, SIG_DFL);
    return;  // the access faults again, now fatally
  }
  const struct sigaction& prev = sig == SIGSEGV ? g_previous_segv : g_previous_bus;
  if (prev.sa_flags & SA_SIGINFO) {
    prev.sa_sigaction(sig, info, context);
  } else if (prev.sa_handler != SIG_DFL && prev.sa_handler != SIG_IGN) {
    prev.sa_handler(sig);
  } else {
    signal(sig, SIG_DFL);
  }
}

void install_fault_handler() {
  static std::once_flag once;
  std::call_once(once, [] {
    struct sigaction sa;
    std::memset(&sa, 0, sizeof(sa));
    sa.sa_sigaction = on_fault;
    sa.sa_flags = SA_SIGINFO | SA_ONSTACK;
    sigemptyset(&sa.sa_mask);
    sigaction(SIGSEGV, &sa, &g_previous_segv);
    sigaction(SIGBUS, &sa, &g_previous_bus);
  });
}

void execute(const char* name, const Config& c, Body* body) {
  install_fault_handler();
  std::lock_guard<std::mutex> lock(g_launch_mutex);
  g_running_thread = pthread_self();
  g_running = 1;
  Block& b = g_single;
  g_cur = &b;
  b.body = body;
  b.kernel = name;
  b.threads = int(c.block.x * c.block.y * c.block.z);
  b.order.resize(size_t(b.threads));
  for (int t = 0; t < b.threads; t++)
    b.order[size_t(t)] = g_order == Order::kReverse ? b.threads - 1 - t : t;
  // NaN bytes, so that uninitialized reads show; 256-byte aligned, which covers WMMA's rule
  auto aligned_shared = [&c](std::vector<unsigned char>& store) {
    store.assign(c.shared + 256, 0xff);
    return store.data() + (256 - reinterpret_cast<uintptr_t>(store.data()) % 256) % 256;
  };
  b.dynamic_shared = aligned_shared(b.shared_store);
  blockDim = c.block;
  gridDim = c.grid;
  std::vector<dim3> blocks;
  blocks.reserve(size_t(c.grid.x) * c.grid.y * c.grid.z);
  for (unsigned z = 0; z < c.grid.z; z++)
    for (unsigned y = 0; y < c.grid.y; y++)
      for (unsigned x = 0; x < c.grid.x; x++) blocks.push_back(dim3(x, y, z));
  if (g_order == Order::kReverse) std::reverse(blocks.begin(), blocks.end());
  if (g_order == Order::kShuffle) std::shuffle(blocks.begin(), blocks.end(), g_rng);
  if (c.cooperative || c.cluster > 1) {
    std::vector<Block> grid(blocks.size(), b);  // each with its own fibers and shared memory
    for (Block& gb : grid) gb.dynamic_shared = aligned_shared(gb.shared_store);
    if (c.cluster > 1) {
      g_clusters.size = c.cluster;
      g_clusters.shared = c.shared;
      g_clusters.threads = int(c.cluster) * b.threads;
      g_clusters.by_index.assign(grid.size(), nullptr);
      for (size_t i = 0; i < grid.size(); i++)
        g_clusters.by_index[blocks[i].x + c.grid.x * (blocks[i].y + c.grid.y * blocks[i].z)] =
            &grid[i];
      g_clusters.arrived.assign(grid.size() / c.cluster, 0);
      g_clusters.phase.assign(grid.size() / c.cluster, 0);
    }
    if (!run_grid(grid, blocks, c.cluster)) t_last_error = cudaErrorLaunchFailure;
    g_clusters = Clusters{};
    g_cur = &b;
  } else {
    for (const dim3& index : blocks) {
      if (!run_block(index)) {
        t_last_error = cudaErrorLaunchFailure;
        break;
      }
    }
  }
  b.body = nullptr;
  b.dynamic_shared = nullptr;
  g_running = 0;
}

}  // namespace

void sync_block() {
  Block& b = *g_cur;
  if (++b.arrived == b.live) {
    b.arrived = 0;
    release(kWaitBlock, -1);
    return;
  }
  b.fibers[size_t(b.current)].state = kWaitBlock;
  yield();
}

void spin() {
  g_spins++;
  yield();  // still ready: it runs again in the next pass
}

unsigned long long global_ns() {
  using namespace std::chrono;
  return uint64_t(duration_cast<nanoseconds>(steady_clock::now().time_since_epoch()).count());
}

void cluster_arrive() {
  if (g_clusters.size <= 1) {
    std::fprintf(stderr, "CUDA emulator: kernel %s: a cluster barrier outside a cluster launch\n",
                 g_cur->kernel);
    std::abort();
  }
  const unsigned cluster = linear_block() / g_clusters.size;
  Block& b = *g_cur;
  b.fibers[size_t(b.current)].cluster_phase = g_clusters.phase[cluster];
  if (++g_clusters.arrived[cluster] == g_clusters.threads) {
    g_clusters.arrived[cluster] = 0;
    g_clusters.phase[cluster]++;
  }
}

void cluster_wait() {
  const unsigned cluster = linear_block() / g_clusters.size;
  const Block& b = *g_cur;
  while (g_clusters.size > 1 &&
         g_clusters.phase[cluster] == b.fibers[size_t(b.current)].cluster_phase)
    spin();  // (until the cluster's last thread arrives)
}

void* cluster_map(const void* shared, unsigned rank) {
  const auto* p = static_cast<const unsigned char*>(shared);
  const Block& b = *g_cur;
  if (g_clusters.size <= 1 || rank >= g_clusters.size || p < b.dynamic_shared ||
      p >= b.dynamic_shared + g_clusters.shared) {
    std::fprintf(stderr,
                 "CUDA emulator: kernel %s: cluster_map of %p to rank %u (cluster size %u): not "
                 "this block's dynamic shared memory, or no such rank\n",
                 b.kernel, shared, rank, g_clusters.size);
    std::abort();
  }
  const unsigned target = linear_block() / g_clusters.size * g_clusters.size + rank;
  return g_clusters.by_index[target]->dynamic_shared + (p - b.dynamic_shared);
}

void sync_warp() {
  Block& b = *g_cur;
  const int self = b.current, warp = self / 32;
  b.fibers[size_t(self)].warp_barriers++;
  if (++b.warp_arrived[size_t(warp)] == b.warp_live[size_t(warp)]) {
    b.warp_arrived[size_t(warp)] = 0;
    release(kWaitWarp, warp);
    return;
  }
  b.fibers[size_t(self)].state = kWaitWarp;
  yield();
}

uint64_t* warp_slots(int* lane) {
  Block& b = *g_cur;
  const int self = b.current, warp = self / 32;
  *lane = self % 32;
  const unsigned parity = b.fibers[size_t(self)].warp_barriers & 1u;
  return &b.slots[(size_t(warp) * 2 + parity) * 32];
}

void* dynamic_shared_bytes() { return g_cur->dynamic_shared; }

}  // namespace emu

extern "C" void emu_fiber_main() {
  using namespace emu;
  Block& b = *g_cur;
  b.body->run();
  const int self = b.current, warp = self / 32;
  b.fibers[size_t(self)].state = kDone;
  b.live--;
  b.warp_live[size_t(warp)]--;
  recheck_barriers(warp);
  void* unused;
  emu_switch(&unused, b.scheduler_sp);
  std::abort();  // a finished fiber is never resumed
}

namespace emu {
[[noreturn]] void wmma_fail(const char* call, const char* what) {
  const Block& b = *g_cur;
  std::fprintf(stderr, "CUDA emulator: kernel %s, block (%u, %u, %u), thread (%u, %u, %u): %s: %s\n",
               b.kernel, blockIdx.x, blockIdx.y, blockIdx.z, threadIdx.x, threadIdx.y, threadIdx.z,
               call, what);
  std::abort();
}
}  // namespace emu

unsigned __ballot_sync(unsigned, int predicate) {
  unsigned votes = 0;
  int lane = 0;
  uint64_t* slots = emu::warp_slots(&lane);
  slots[lane] = predicate != 0;
  emu::sync_warp();
  // Lanes past the block's end never write (their slots stay 0); lanes that voted and then
  // exited still count, as in the exchanges.
  for (int l = 0; l < 32; l++)
    if (slots[l] != 0) votes |= 1u << l;
  return votes;
}

// ---- streams, graphs and the runtime API -----------------------------------------------------

struct emu_stream {
  bool capturing = false;
  bool invalidated = false;
  std::vector<std::function<void()>> recorded;
};
struct emu_graph {
  std::vector<std::function<void()>> ops;
};
struct emu_event {
  double ms = 0;
};

namespace {

thread_local std::vector<emu_stream*> t_capturing;  // streams this thread is capturing

// cudaMalloc's mappings: the data ends where the guard page starts.
struct Mapping {
  void* base;
  size_t bytes;
};
std::mutex g_alloc_mutex;
std::map<void*, Mapping> g_allocations;

double now_ms() { return double(emu::global_ns()) * 1e-6; }

// Calls that wait for the device or change memory fail while this thread captures a stream,
// and the capture is invalidated (as in cudaStreamCaptureModeThreadLocal).
bool refuse_while_capturing() {
  if (t_capturing.empty()) return false;
  for (emu_stream* s : t_capturing) s->invalidated = true;
  return true;
}

bool record(cudaStream_t stream, std::function<void()> op) {
  if (stream == nullptr || !stream->capturing) return false;
  stream->recorded.push_back(std::move(op));
  return true;
}

int device_count() { return std::max(0, emu::int_from_env("AGENTRL_CUDA_EMU_DEVICES", 1)); }

}  // namespace

void emu::submit(const void* kernel, const char* name, const Config& config, Body* body) {
  std::shared_ptr<Body> owned(body);
  const cudaError_t err = check_config(kernel, config);
  if (err != cudaSuccess) {
    t_last_error = err;
    return;
  }
  const Config c = config;
  if (record(config.stream, [owned, name, c] { execute(name, c, owned.get()); })) return;
  execute(name, config, owned.get());
}

cudaError_t emu::refuse_launch_attribute() { return t_last_error = cudaErrorInvalidValue; }

namespace {
std::atomic<size_t> g_persisting_limit{0};  // cudaLimitPersistingL2CacheSize
}  // namespace

bool emu::access_policy_window_valid(const cudaAccessPolicyWindow& window) {
  int widest = 0;
  cudaDeviceGetAttribute(&widest, cudaDevAttrMaxAccessPolicyWindowSize, 0);
  auto property = [](cudaAccessProperty p) {
    return p == cudaAccessPropertyNormal || p == cudaAccessPropertyStreaming ||
           p == cudaAccessPropertyPersisting;
  };
  const bool valid = window.base_ptr != nullptr && window.num_bytes > 0 &&
                     window.num_bytes <= size_t(widest) && window.hitRatio >= 0.0f &&
                     window.hitRatio <= 1.0f && property(window.hitProp) &&
                     property(window.missProp);
  // each window said once (by its start and size)
  static std::mutex lock;
  static std::vector<std::pair<void*, size_t>> said;
  std::lock_guard<std::mutex> hold(lock);
  const std::pair<void*, size_t> key(window.base_ptr, window.num_bytes);
  if (valid && std::find(said.begin(), said.end(), key) == said.end()) {
    said.push_back(key);
    std::fprintf(stderr,
                 "emu: an L2 access-policy window of %zu bytes at hit ratio %.3f (set-aside %zu "
                 "bytes): checked, then ignored (the emulator has no cache)\n",
                 window.num_bytes, double(window.hitRatio), g_persisting_limit.load());
  }
  return valid;
}

cudaError_t cudaDeviceSetLimit(cudaLimit limit, size_t value) {
  if (limit != cudaLimitPersistingL2CacheSize) return emu::t_last_error = cudaErrorInvalidValue;
  int most = 0;
  cudaDeviceGetAttribute(&most, cudaDevAttrMaxPersistingL2CacheSize, 0);
  g_persisting_limit = std::min(value, size_t(most));  // (CUDA clamps it too)
  return cudaSuccess;
}

cudaError_t cudaDeviceGetLimit(size_t* value, cudaLimit limit) {
  if (value == nullptr || limit != cudaLimitPersistingL2CacheSize)
    return emu::t_last_error = cudaErrorInvalidValue;
  *value = g_persisting_limit;
  return cudaSuccess;
}

cudaError_t cudaCtxResetPersistingL2Cache() { return cudaSuccess; }

const char* cudaGetErrorName(cudaError_t err) {
  switch (err) {
    case cudaSuccess: return "cudaSuccess";
    case cudaErrorInvalidValue: return "cudaErrorInvalidValue";
    case cudaErrorMemoryAllocation: return "cudaErrorMemoryAllocation";
    case cudaErrorInvalidConfiguration: return "cudaErrorInvalidConfiguration";
    case cudaErrorNoDevice: return "cudaErrorNoDevice";
    case cudaErrorInvalidDevice: return "cudaErrorInvalidDevice";
    case cudaErrorInvalidResourceHandle: return "cudaErrorInvalidResourceHandle";
    case cudaErrorIllegalState: return "cudaErrorIllegalState";
    case cudaErrorLaunchFailure: return "cudaErrorLaunchFailure";
    case cudaErrorCooperativeLaunchTooLarge: return "cudaErrorCooperativeLaunchTooLarge";
    case cudaErrorStreamCaptureUnsupported: return "cudaErrorStreamCaptureUnsupported";
    case cudaErrorStreamCaptureInvalidated: return "cudaErrorStreamCaptureInvalidated";
    case cudaErrorStreamCaptureUnmatched: return "cudaErrorStreamCaptureUnmatched";
    case cudaErrorStreamCaptureImplicit: return "cudaErrorStreamCaptureImplicit";
  }
  return "cudaErrorUnknown";
}

const char* cudaGetErrorString(cudaError_t err) {
  switch (err) {
    case cudaSuccess: return "no error";
    case cudaErrorInvalidValue: return "invalid argument";
    case cudaErrorMemoryAllocation: return "out of memory";
    case cudaErrorInvalidConfiguration: return "invalid configuration argument";
    case cudaErrorNoDevice: return "no CUDA-capable device is detected (CUDA emulator)";
    case cudaErrorInvalidDevice: return "invalid device ordinal";
    case cudaErrorInvalidResourceHandle: return "invalid resource handle";
    case cudaErrorIllegalState: return "the operation cannot be performed in the present state";
    case cudaErrorLaunchFailure: return "unspecified launch failure (a barrier deadlock)";
    case cudaErrorCooperativeLaunchTooLarge:
      return "too many blocks in cooperative launch";
    case cudaErrorStreamCaptureUnsupported:
      return "operation not permitted when stream is capturing";
    case cudaErrorStreamCaptureInvalidated:
      return "operation failed due to a previous error during capture";
    case cudaErrorStreamCaptureUnmatched: return "capture was not initiated in this stream";
    case cudaErrorStreamCaptureImplicit:
      return "operation would make the legacy stream depend on a capturing blocking stream";
  }
  return "unknown error";
}

cudaError_t cudaPeekAtLastError() { return emu::t_last_error; }

cudaError_t cudaGetLastError() {
  const cudaError_t err = emu::t_last_error;
  emu::t_last_error = cudaSuccess;
  return err;
}

cudaError_t cudaGetDeviceCount(int* count) {
  *count = device_count();
  return *count > 0 ? cudaSuccess : cudaErrorNoDevice;
}

cudaError_t cudaSetDevice(int device) {
  return device >= 0 && device < device_count() ? cudaSuccess : cudaErrorInvalidDevice;
}

cudaError_t cudaDeviceGetAttribute(int* value, cudaDeviceAttr attr, int device) {
  if (device < 0 || device >= device_count()) return cudaErrorInvalidDevice;
  switch (attr) {
    case cudaDevAttrMultiProcessorCount:
      *value = std::max(1, emu::int_from_env("AGENTRL_CUDA_EMU_SMS", 132));
      return cudaSuccess;
    case cudaDevAttrCooperativeLaunch:
    case cudaDevAttrClusterLaunch:
      *value = 1;
      return cudaSuccess;
    case cudaDevAttrL2CacheSize:  // an H100's
      *value = 50 * 1024 * 1024;
      return cudaSuccess;
    case cudaDevAttrComputeCapabilityMajor:  // a Hopper GPU's: the library takes its paths
      *value = 9;
      return cudaSuccess;
    case cudaDevAttrMaxPersistingL2CacheSize:  // 3/4 of the L2, as an A100's
      *value = 3 * (50 * 1024 * 1024 / 4);
      return cudaSuccess;
    case cudaDevAttrMaxAccessPolicyWindowSize:
      *value = 128 * 1024 * 1024;
      return cudaSuccess;
    case cudaDevAttrMaxSharedMemoryPerBlockOptin:  // an H100's unless AGENTRL_CUDA_EMU_SMEM
      *value = std::max(48 * 1024, emu::int_from_env("AGENTRL_CUDA_EMU_SMEM", 227 * 1024));
      return cudaSuccess;
  }
  return cudaErrorInvalidValue;
}

// Kernels built as if for sm_90 (what the library's build gives a Hopper GPU).
cudaError_t cudaFuncGetAttributes(cudaFuncAttributes* attr, const void* func) {
  if (attr == nullptr || func == nullptr) return cudaErrorInvalidValue;
  attr->binaryVersion = 90;
  attr->ptxVersion = 90;
  return cudaSuccess;
}

cudaError_t cudaDeviceSynchronize() {
  return refuse_while_capturing() ? cudaErrorStreamCaptureUnsupported : cudaSuccess;
}

cudaError_t cudaStreamCreateWithFlags(cudaStream_t* stream, unsigned) {
  *stream = new emu_stream();
  return cudaSuccess;
}

cudaError_t cudaStreamDestroy(cudaStream_t stream) {
  delete stream;
  return cudaSuccess;
}

cudaError_t cudaStreamSynchronize(cudaStream_t) {
  return refuse_while_capturing() ? cudaErrorStreamCaptureUnsupported : cudaSuccess;
}

cudaError_t cudaMalloc(void** ptr, size_t bytes) {
  *ptr = nullptr;
  if (refuse_while_capturing()) return cudaErrorStreamCaptureUnsupported;
  // 256-byte aligned, as CUDA promises, and ending where the guard page starts, so that
  // overruns past the rounding fault.
  const size_t size = (std::max<size_t>(bytes, 1) + 255) / 256 * 256;
  if (size > (size_t(1) << 40)) return cudaErrorMemoryAllocation;
  const size_t page = size_t(sysconf(_SC_PAGESIZE));
  const size_t data = (size + page - 1) / page * page, total = data + page;
  void* base = mmap(nullptr, total, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  if (base == MAP_FAILED) return cudaErrorMemoryAllocation;
  mprotect(static_cast<char*>(base) + data, page, PROT_NONE);  // the guard page
  char* p = static_cast<char*>(base) + data - size;
  std::memset(p, 0xff, size);
  std::lock_guard<std::mutex> lock(g_alloc_mutex);
  g_allocations[p] = Mapping{base, total};
  *ptr = p;
  return cudaSuccess;
}

cudaError_t cudaFree(void* ptr) {
  if (refuse_while_capturing()) return cudaErrorStreamCaptureUnsupported;
  if (ptr == nullptr) return cudaSuccess;
  Mapping m;
  {
    std::lock_guard<std::mutex> lock(g_alloc_mutex);
    const auto it = g_allocations.find(ptr);
    if (it == g_allocations.end()) return cudaErrorInvalidValue;
    m = it->second;
    g_allocations.erase(it);
  }
  munmap(m.base, m.bytes);
  return cudaSuccess;
}

cudaError_t cudaMallocHost(void** ptr, size_t bytes) { return cudaMalloc(ptr, bytes); }
cudaError_t cudaFreeHost(void* ptr) { return cudaFree(ptr); }

cudaError_t cudaMemcpyAsync(void* dst, const void* src, size_t bytes, cudaMemcpyKind,
                            cudaStream_t stream) {
  if (bytes > 0 && (dst == nullptr || src == nullptr)) return cudaErrorInvalidValue;
  if (record(stream, [=] { std::memmove(dst, src, bytes); })) return cudaSuccess;
  if (bytes > 0) std::memmove(dst, src, bytes);
  return cudaSuccess;
}

cudaError_t cudaMemcpy(void* dst, const void* src, size_t bytes, cudaMemcpyKind kind) {
  if (refuse_while_capturing()) return cudaErrorStreamCaptureUnsupported;
  return cudaMemcpyAsync(dst, src, bytes, kind, nullptr);
}

cudaError_t cudaMemsetAsync(void* dst, int value, size_t bytes, cudaStream_t stream) {
  if (bytes > 0 && dst == nullptr) return cudaErrorInvalidValue;
  if (record(stream, [=] { std::memset(dst, value, bytes); })) return cudaSuccess;
  if (bytes > 0) std::memset(dst, value, bytes);
  return cudaSuccess;
}

cudaError_t cudaMemset(void* dst, int value, size_t bytes) {
  if (refuse_while_capturing()) return cudaErrorStreamCaptureUnsupported;
  return cudaMemsetAsync(dst, value, bytes, nullptr);
}

cudaError_t cudaEventCreate(cudaEvent_t* event) {
  *event = new emu_event();
  return cudaSuccess;
}

cudaError_t cudaEventDestroy(cudaEvent_t event) {
  delete event;
  return cudaSuccess;
}

cudaError_t cudaEventRecord(cudaEvent_t event, cudaStream_t stream) {
  if (event == nullptr) return cudaErrorInvalidResourceHandle;
  if (record(stream, [event] { event->ms = now_ms(); })) return cudaSuccess;
  event->ms = now_ms();
  return cudaSuccess;
}

cudaError_t cudaEventSynchronize(cudaEvent_t event) {
  if (event == nullptr) return cudaErrorInvalidResourceHandle;
  return refuse_while_capturing() ? cudaErrorStreamCaptureUnsupported : cudaSuccess;
}

cudaError_t cudaStreamWaitEvent(cudaStream_t stream, cudaEvent_t event, unsigned) {
  if (event == nullptr) return cudaErrorInvalidResourceHandle;
  // (a wait inside a capture would join another stream's work into the graph: not emulated)
  if (stream != nullptr && stream->capturing) return cudaErrorStreamCaptureUnsupported;
  return cudaSuccess;
}

cudaError_t cudaEventElapsedTime(float* ms, cudaEvent_t start, cudaEvent_t end) {
  if (start == nullptr || end == nullptr) return cudaErrorInvalidResourceHandle;
  *ms = float(end->ms - start->ms);
  return cudaSuccess;
}

cudaError_t cudaStreamBeginCapture(cudaStream_t stream, cudaStreamCaptureMode) {
  if (stream == nullptr) return cudaErrorStreamCaptureImplicit;
  if (stream->capturing) return cudaErrorIllegalState;
  stream->capturing = true;
  stream->invalidated = false;
  stream->recorded.clear();
  t_capturing.push_back(stream);
  return cudaSuccess;
}

cudaError_t cudaStreamEndCapture(cudaStream_t stream, cudaGraph_t* graph) {
  *graph = nullptr;
  if (stream == nullptr || !stream->capturing) return cudaErrorIllegalState;
  stream->capturing = false;
  t_capturing.erase(std::remove(t_capturing.begin(), t_capturing.end(), stream),
                    t_capturing.end());
  std::vector<std::function<void()>> ops;
  ops.swap(stream->recorded);
  if (stream->invalidated) return cudaErrorStreamCaptureInvalidated;
  *graph = new emu_graph{std::move(ops)};
  return cudaSuccess;
}

cudaError_t cudaGraphInstantiate(cudaGraphExec_t* exec, cudaGraph_t graph, unsigned long long) {
  if (graph == nullptr) return cudaErrorInvalidValue;
  *exec = new emu_graph{graph->ops};
  return cudaSuccess;
}

cudaError_t cudaGraphLaunch(cudaGraphExec_t exec, cudaStream_t stream) {
  if (exec == nullptr) return cudaErrorInvalidValue;
  if (stream != nullptr && stream->capturing) return cudaErrorStreamCaptureUnsupported;
  for (const auto& op : exec->ops) op();
  return cudaSuccess;
}

cudaError_t cudaGraphDestroy(cudaGraph_t graph) {
  delete graph;
  return cudaSuccess;
}

cudaError_t cudaGraphExecDestroy(cudaGraphExec_t exec) {
  delete exec;
  return cudaSuccess;
}

cudaError_t cudaOccupancyMaxActiveBlocksPerMultiprocessor(int* blocks, const void* func,
                                                          int threads, size_t shared) {
  if (blocks == nullptr || func == nullptr || threads <= 0 || threads > emu::kMaxThreads)
    return cudaErrorInvalidValue;
  *blocks =
      shared > emu::shared_limit(func) ? 0 : int(emu::blocks_per_sm(uint64_t(threads), shared));
  return cudaSuccess;
}

cudaError_t cudaFuncSetAttribute(const void* func, cudaFuncAttribute attr, int value) {
  if (attr != cudaFuncAttributeMaxDynamicSharedMemorySize || value < 0 || value > 227 * 1024)
    return cudaErrorInvalidValue;
  std::lock_guard<std::mutex> lock(emu::g_launch_mutex);
  emu::g_max_dynamic_shared[func] = value;
  return cudaSuccess;
}
