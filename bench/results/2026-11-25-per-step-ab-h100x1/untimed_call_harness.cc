// Standalone: what TimedCall::begin/end cost for a sampled-out GEMM (no CUDA call), per call.
#include "inject/runtime.h"
#include "inject/timed_call.h"
#include "inject/sample_gate.h"
#include "common/clock.h"
#include <thread>
#include <cstdio>
#include <cstdlib>
using namespace xpu_timer;
using namespace xpu_timer::inject;
int main(int argc, char** argv) {
  int work = argc > 1 ? atoi(argv[1]) : 0;
  auto* st = new RuntimeState();
  st->gate = new SampleGate(0.001);
  OpDesc d; d.name = proto::OpName::kGemmEx; d.dtype = proto::DType::kBF16; d.m = 64; d.n = 64; d.k = 64; d.batch = 1; d.flops = 2*64*64*64;
  uint64_t key = sample_key(static_cast<uint64_t>(d.name), static_cast<uint64_t>(d.dtype), d.flops, d.bytes, d.group_size);
  st->gate->should_time(key, monotonic_ns());  // window taken: the calls below are sampled out
  std::atomic<bool> stop{false};
  std::thread cons([&]{ OpRecord r; while(!stop.load()){ while(st->queue.try_pop(&r)) {} timespec ts{0,1000000}; nanosleep(&ts,nullptr);} });
  char* buf = (char*)calloc(1<<22,1); size_t off=0;
  const int N = 1000000;
  for (int mode = 0; mode < 2; ++mode)
  for (int rep = 0; rep < 5; ++rep) {
    uint64_t t0 = monotonic_ns();
    for (int i = 0; i < N; ++i) {
      if (mode == 1) { TimedCall c; if (c.begin(st, d, nullptr)) { std::abort(); } c.end(true); }
      for (int w = 0; w < work; w++) { buf[off]++; off = (off + 64) & ((1 << 22) - 1); }
    }
    printf("%s rep %d: %.1f ns/op\n", mode ? "begin/end" : "base     ", rep, double(monotonic_ns() - t0) / N);
  }
  stop = true; cons.join();
}
