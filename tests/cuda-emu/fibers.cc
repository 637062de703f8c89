/* halo-cuda-emu: kernel launches.
 *
 * A launch is checked like a real one (block and grid limits), then queued
 * on its stream.  When it runs, blocks run one after another.  The first
 * block of every launch runs each thread as a fiber (a stack of its own), so that
 * __syncthreads and warp shuffles can switch between threads; if that
 * block used neither, the rest run as plain calls, thread after thread,
 * which is fast.  A barrier reached in such a block afterwards stops the
 * process with a message rather than being skipped.
 *
 * Barriers are strict: __syncthreads needs every thread of the block and a
 * full-mask shuffle every lane of the warp.  A thread that returns while
 * others wait, which hangs or corrupts on a GPU, is reported. */
#include <stdlib.h>
#include <sys/mman.h>
#include <ucontext.h>

#include <vector>

#include "emu.h"

#if defined(__SANITIZE_ADDRESS__)
#include <sanitizer/common_interface_defs.h>
#define HALO_EMU_ASAN 1
#else
#define HALO_EMU_ASAN 0
#endif

namespace halo_emu {

thread_ctx *current = nullptr;

namespace {

constexpr int kWarp = 32;
constexpr unsigned kMaxThreads = 1024;
constexpr size_t kStackBytes = (size_t)256 << 10;

enum class state { runnable, at_block_barrier, at_warp_barrier, done };

/* Switching threads is the emulator's inner loop (a warp reduction switches
 * every lane at every step), so on x86-64 it is a few instructions that
 * save the callee-saved registers and the floating-point control words on
 * the old stack and restore them from the new one; glibc's swapcontext
 * makes a system call (the signal mask) each time, 20 times slower.
 * Elsewhere the emulator uses swapcontext. */
#if defined(__x86_64__)
extern "C" void halo_emu_switch(void **save_sp, void *load_sp);
asm(R"(
  .text
  .p2align 4
  .type halo_emu_switch, @function
halo_emu_switch:
  pushq %rbp
  pushq %rbx
  pushq %r12
  pushq %r13
  pushq %r14
  pushq %r15
  subq $8, %rsp
  stmxcsr (%rsp)
  fnstcw 4(%rsp)
  movq %rsp, (%rdi)
  movq %rsi, %rsp
  ldmxcsr (%rsp)
  fldcw 4(%rsp)
  addq $8, %rsp
  popq %r15
  popq %r14
  popq %r13
  popq %r12
  popq %rbx
  popq %rbp
  ret
  .size halo_emu_switch, .-halo_emu_switch
  .section .note.GNU-stack,"",@progbits
  .text
)");

struct context {
  void *sp = nullptr;
};

void fiber_main();

/* A fresh stack whose first switch "returns" into fiber_main, with the
 * stack aligned as a call would leave it and default control words. */
void context_make(context &c, void *stack, size_t bytes) {
  uintptr_t top = ((uintptr_t)stack + bytes) & ~(uintptr_t)15;
  uint64_t *sp = (uint64_t *)top;
  *--sp = 0; /* fiber_main's return address: it never returns */
  *--sp = (uint64_t)(uintptr_t)fiber_main;
  for (int i = 0; i < 6; i++) *--sp = 0; /* rbp rbx r12 r13 r14 r15 */
  *--sp = 0x037f00001f80ull;             /* MXCSR 0x1f80, x87 control word 0x037f */
  c.sp = sp;
}

void context_switch(context &from, context &to) { halo_emu_switch(&from.sp, to.sp); }
#else
struct context {
  ucontext_t uc;
};

void fiber_main();

void context_make(context &c, void *stack, size_t bytes) {
  getcontext(&c.uc);
  c.uc.uc_stack.ss_sp = stack;
  c.uc.uc_stack.ss_size = bytes;
  c.uc.uc_link = nullptr;
  makecontext(&c.uc, fiber_main, 0);
}

void context_switch(context &from, context &to) { swapcontext(&from.uc, &to.uc); }
#endif

struct fiber {
  context ctxt;
  void *stack = nullptr;
  thread_ctx ctx;
  state st = state::runnable;
  uint64_t slot = 0; /* a shuffle's outgoing value */
};

/* The block being run with fibers, and its barriers. */
struct block_run {
  std::vector<fiber> fibers;
  unsigned n = 0;
  const std::function<void()> *body = nullptr;
  const launch_config *config = nullptr;
  fiber *running = nullptr;
  context scheduler;
  unsigned block_waiting = 0;
  std::vector<unsigned> warp_waiting;
  bool synchronised = false; /* a barrier or shuffle ran in this block */
  bool with_fibers = false;
  thread_ctx direct; /* the thread a block without fibers is running */
  /* The scheduler's stack, for AddressSanitizer's fiber switches. */
  const void *main_bottom = nullptr;
  size_t main_size = 0;
} g_run;

void enter_fiber(fiber &f) {
#if HALO_EMU_ASAN
  void *fake = nullptr;
  __sanitizer_start_switch_fiber(&fake, f.stack, kStackBytes);
  context_switch(g_run.scheduler, f.ctxt);
  __sanitizer_finish_switch_fiber(fake, nullptr, nullptr);
#else
  context_switch(g_run.scheduler, f.ctxt);
#endif
}

/* Back to the scheduler from the running fiber, until it is resumed. */
void yield() {
  fiber &f = *g_run.running;
#if HALO_EMU_ASAN
  void *fake = nullptr;
  __sanitizer_start_switch_fiber(&fake, g_run.main_bottom, g_run.main_size);
  context_switch(f.ctxt, g_run.scheduler);
  __sanitizer_finish_switch_fiber(fake, &g_run.main_bottom, &g_run.main_size);
#else
  context_switch(f.ctxt, g_run.scheduler);
#endif
}

/* A fiber's whole life: the kernel body, then back to the scheduler for
 * good (its context is made afresh for the next block). */
void fiber_main() {
#if HALO_EMU_ASAN
  __sanitizer_finish_switch_fiber(nullptr, &g_run.main_bottom, &g_run.main_size);
#endif
  (*g_run.body)();
  fiber &f = *g_run.running;
  f.st = state::done;
#if HALO_EMU_ASAN
  __sanitizer_start_switch_fiber(nullptr, g_run.main_bottom, g_run.main_size);
#endif
  context_switch(f.ctxt, g_run.scheduler);
  fatal("a finished fiber was resumed");
}

const char *where_launched() {
  static char buf[512];
  snprintf(buf, sizeof buf, "%s:%d", g_run.config->file, g_run.config->line);
  return buf;
}

void require_fibers(const char *what) {
  if (!g_run.with_fibers)
    fatal(
        "%s in the kernel launched at %s, in a block after the first, which used none: "
        "the emulator runs such blocks without fibers",
        what, where_launched());
}

unsigned linear(const thread_ctx &c) {
  return c.thread_idx.x + c.block_dim.x * (c.thread_idx.y + c.block_dim.y * c.thread_idx.z);
}

void run_block_fibers(const dim3 &grid, const dim3 &block, const uint3 &block_idx) {
  block_run &r = g_run;
  r.n = block.x * block.y * block.z;
  if (r.fibers.size() < r.n) r.fibers.resize(r.n);
  r.block_waiting = 0;
  r.warp_waiting.assign((r.n + kWarp - 1) / kWarp, 0);
  for (unsigned i = 0; i < r.n; i++) {
    fiber &f = r.fibers[i];
    if (!f.stack) {
      f.stack = mmap(nullptr, kStackBytes, PROT_READ | PROT_WRITE,
                     MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
      if (f.stack == MAP_FAILED) fatal("no memory for a fiber's stack");
    }
    f.ctx = {
        {i % block.x, (i / block.x) % block.y, i / (block.x * block.y)}, block_idx, block, grid};
    f.st = state::runnable;
    context_make(f.ctxt, f.stack, kStackBytes);
  }
  for (;;) {
    bool ran = false, all_done = true;
    for (unsigned i = 0; i < r.n; i++) {
      fiber &f = r.fibers[i];
      if (f.st == state::done) continue;
      all_done = false;
      if (f.st != state::runnable) continue;
      ran = true;
      r.running = &f;
      current = &f.ctx;
      enter_fiber(f);
    }
    if (all_done) break;
    if (!ran) {
      unsigned done = 0, block_wait = 0, warp_wait = 0;
      for (unsigned i = 0; i < r.n; i++) {
        done += r.fibers[i].st == state::done;
        block_wait += r.fibers[i].st == state::at_block_barrier;
        warp_wait += r.fibers[i].st == state::at_warp_barrier;
      }
      fatal(
          "the kernel launched at %s hangs in block (%u,%u,%u): %u threads wait at "
          "__syncthreads, %u at a warp shuffle, %u have returned",
          where_launched(), block_idx.x, block_idx.y, block_idx.z, block_wait, warp_wait, done);
    }
  }
  r.running = nullptr;
}

void run_block_direct(const dim3 &grid, const dim3 &block, const uint3 &block_idx) {
  thread_ctx &ctx = g_run.direct;
  ctx = {{0, 0, 0}, block_idx, block, grid};
  current = &ctx;
  for (unsigned z = 0; z < block.z; z++)
    for (unsigned y = 0; y < block.y; y++)
      for (unsigned x = 0; x < block.x; x++) {
        ctx.thread_idx = {x, y, z};
        (*g_run.body)();
      }
}

/* Runs a whole grid (from the stream's queue). */
void run_grid(const launch_config &c, const std::function<void()> &body) {
  g_run.body = &body;
  g_run.config = &c;
  g_run.synchronised = false;
  bool first = true;
  for (unsigned z = 0; z < c.grid.z; z++)
    for (unsigned y = 0; y < c.grid.y; y++)
      for (unsigned x = 0; x < c.grid.x; x++) {
        g_run.with_fibers = first || g_run.synchronised;
        if (g_run.with_fibers)
          run_block_fibers(c.grid, c.block, {x, y, z});
        else
          run_block_direct(c.grid, c.block, {x, y, z});
        first = false;
      }
  current = nullptr;
  g_run.body = nullptr;
}

}  // namespace

void sync_block() {
  require_fibers("__syncthreads");
  block_run &r = g_run;
  r.synchronised = true;
  if (++r.block_waiting == r.n) {
    /* The last to arrive releases the others and goes on. */
    r.block_waiting = 0;
    for (unsigned i = 0; i < r.n; i++)
      if (r.fibers[i].st == state::at_block_barrier) r.fibers[i].st = state::runnable;
    return;
  }
  r.running->st = state::at_block_barrier;
  yield();
}

/* Every lane of the running thread's warp arrives before any goes on. */
static void warp_barrier(unsigned warp, unsigned lanes) {
  block_run &r = g_run;
  if (++r.warp_waiting[warp] == lanes) {
    r.warp_waiting[warp] = 0;
    for (unsigned i = warp * kWarp; i < warp * kWarp + lanes; i++)
      if (r.fibers[i].st == state::at_warp_barrier) r.fibers[i].st = state::runnable;
    return;
  }
  r.running->st = state::at_warp_barrier;
  yield();
}

uint64_t shfl_xor(unsigned mask, uint64_t bits, int lane_mask, int width) {
  require_fibers("a warp shuffle");
  block_run &r = g_run;
  r.synchronised = true;
  const unsigned tid = linear(r.running->ctx);
  const unsigned warp = tid / kWarp, lane = tid % kWarp;
  const unsigned lanes = r.n - warp * kWarp < (unsigned)kWarp ? r.n - warp * kWarp : kWarp;
  if (mask != 0xffffffffu || lanes != (unsigned)kWarp)
    fatal(
        "the kernel launched at %s shuffles with mask %#x in a warp of %u lanes: only full "
        "warps with a full mask are emulated",
        where_launched(), mask, lanes);
  if (width <= 0 || width > kWarp || (width & (width - 1)))
    fatal("the kernel launched at %s shuffles with width %d", where_launched(), width);
  r.running->slot = bits;
  warp_barrier(warp, lanes);
  unsigned src = lane ^ (unsigned)lane_mask;
  /* A lane of a later group of `width` reads its own value. */
  if (src / (unsigned)width > lane / (unsigned)width || src >= (unsigned)kWarp) src = lane;
  const uint64_t out = r.fibers[warp * kWarp + src].slot;
  warp_barrier(warp, lanes);
  return out;
}

int check_pointer(const launch_config &c, int index, const void *p, size_t align) {
  if (!p) return 1;
  if (where(p) != space::device) {
    report("the kernel launched at %s:%d gets host memory %p as argument %d", c.file, c.line, p,
           index);
    set_last(cudaErrorInvalidValue);
    return 0;
  }
  if ((uintptr_t)p % align) {
    report("the kernel launched at %s:%d gets %p, not %zu-byte aligned, as argument %d", c.file,
           c.line, p, align, index);
    set_last(cudaErrorMisalignedAddress);
    return 0;
  }
  return 1;
}

void launch(const launch_config &c, std::function<void()> grid) {
  HALO_EMU_API;
  const unsigned long long threads = (unsigned long long)c.block.x * c.block.y * c.block.z;
  if (sticky() != cudaSuccess) return;
  if (c.grid.x == 0 || c.grid.y == 0 || c.grid.z == 0 || threads == 0 || threads > kMaxThreads ||
      c.block.z > 64 || c.grid.x > 2147483647u || c.grid.y > 65535 || c.grid.z > 65535 ||
      c.shared > 48 * 1024) {
    report(
        "the kernel launched at %s:%d has grid (%u,%u,%u) and block (%u,%u,%u): not a valid "
        "configuration",
        c.file, c.line, c.grid.x, c.grid.y, c.grid.z, c.block.x, c.block.y, c.block.z);
    set_last(cudaErrorInvalidConfiguration);
    return;
  }
  enqueue(stream_of(c.stream), [c, grid = std::move(grid)] { run_grid(c, grid); });
}

}  // namespace halo_emu
