#include "flamegraph/bench/synthetic_dump.h"

#include <algorithm>

#include "stack/stack_file.h"

namespace xpu_timer::flamegraph {
namespace {

struct NativeFrame {
  const char* func;
  const char* module;
  const char* file;  // nullptr when no debug info
  int line;
};
struct PyFrame {
  const char* func;
  const char* file;
  int line;
};

// Innermost first, as in the files.
const NativeFrame kFutexWait[] = {
    {"__futex_abstimed_wait_common", "/usr/lib/x86_64-linux-gnu/libc.so.6", nullptr, 0},
    {"__pthread_cond_wait_common", "/usr/lib/x86_64-linux-gnu/libc.so.6", nullptr, 0},
    {"pthread_cond_wait", "/usr/lib/x86_64-linux-gnu/libc.so.6", nullptr, 0},
};
const NativeFrame kThreadStart[] = {
    {"start_thread", "/usr/lib/x86_64-linux-gnu/libc.so.6", nullptr, 0},
    {"clone3", "/usr/lib/x86_64-linux-gnu/libc.so.6", nullptr, 0},
};
const NativeFrame kMainStart[] = {
    {"Py_RunMain", "/usr/bin/python3.12", nullptr, 0},
    {"Py_BytesMain", "/usr/bin/python3.12", nullptr, 0},
    {"__libc_start_call_main", "/usr/lib/x86_64-linux-gnu/libc.so.6", nullptr, 0},
    {"__libc_start_main_impl", "/usr/lib/x86_64-linux-gnu/libc.so.6", nullptr, 0},
    {"_start", "/usr/bin/python3.12", nullptr, 0},
};
const NativeFrame kEvalLoop[] = {
    {"_PyEval_EvalFrameDefault", "/usr/bin/python3.12", "ceval.c", 4321},
    {"_PyFunction_Vectorcall", "/usr/bin/python3.12", "call.c", 419},
    {"PyObject_Call", "/usr/bin/python3.12", "call.c", 387},
};

// One thread's three frame lists, built innermost first as in the files.
class Builder {
 public:
  explicit Builder(stack::ThreadStack* thread) : t_(thread) {}

  void add_native(const NativeFrame& f, unsigned long long base) {
    stack::NativeFrame n;
    n.pc = base + offset_of(f);
    n.func = f.func;
    n.module = f.module;
    n.offset = offset_of(f);
    if (f.file != nullptr) {
      n.file = f.file;
      n.line = f.line;
    }
    t_->native.push_back(n);
    t_->mixed.push_back(mixed_native(n));
  }
  template <size_t N>
  void add_natives(const NativeFrame (&fs)[N], unsigned long long base) {
    for (const NativeFrame& f : fs) add_native(f, base);
  }
  // One interpreter call: native eval frames, with the Python frame in mixed
  // standing for the _PyEval_EvalFrameDefault frame.
  void add_python(const PyFrame& p, unsigned long long base) {
    t_->python.push_back({p.func, p.file, p.line, true});
    for (const NativeFrame& f : kEvalLoop) {
      add_native(f, base);
      if (f.func == kEvalLoop[0].func) {
        stack::MixedFrame& m = t_->mixed.back();
        m = stack::MixedFrame{};
        m.python = true;
        m.func = p.func;
        m.file = p.file;
        m.line = p.line;
      }
    }
  }

 private:
  static stack::MixedFrame mixed_native(const stack::NativeFrame& n) {
    stack::MixedFrame m;
    m.func = n.func;
    m.module = n.module;
    m.file = n.file;
    m.line = n.line;
    return m;
  }
  static unsigned long long offset_of(const NativeFrame& f) {
    unsigned long long h = 1469598103934665603ull;
    for (const char* c = f.func; *c; ++c)
      h = (h ^ static_cast<unsigned char>(*c)) * 1099511628211ull;
    return 0x1000 + (h % 0x400000);
  }
  stack::ThreadStack* t_;
};

stack::ThreadStack main_thread(int rank, bool leak, unsigned long long base) {
  stack::ThreadStack t;
  t.tid = 1000 + rank;
  t.name = "python3";
  t.state = 'S';
  t.holds_gil = !leak;
  Builder b(&t);
  if (leak) {
    b.add_native({"clock_nanosleep", "/usr/lib/x86_64-linux-gnu/libc.so.6", nullptr, 0}, base);
    b.add_native({"pysleep", "/usr/bin/python3.12", "timemodule.c", 2159}, base);
    b.add_python({"stuck_in_host_code", "/job/sim_trainer.py", 88}, base);
  } else {
    b.add_native(
        {"__futex_abstimed_wait_common", "/usr/lib/x86_64-linux-gnu/libc.so.6", nullptr, 0}, base);
    b.add_native({"cudaStreamSynchronize",
                  "/venv/lib/python3.12/site-packages/nvidia/cu13/lib/libcudart.so.13", nullptr, 0},
                 base);
    b.add_native(
        {"ncclAllReduce", "/venv/lib/python3.12/site-packages/nvidia/nccl/lib/libnccl.so.2",
         "collectives.cc", 120 + (rank % 2)},
        base);
    b.add_native({"c10d::ProcessGroupNCCL::allreduce(std::vector<at::Tensor>&, "
                  "c10d::AllreduceOptions const&)",
                  "/venv/lib/python3.12/site-packages/torch/lib/libtorch_cuda.so", nullptr, 0},
                 base);
    b.add_native({"torch::autograd::THPVariable_add(_object*, _object*, _object*)",
                  "/venv/lib/python3.12/site-packages/torch/lib/libtorch_python.so", nullptr, 0},
                 base);
    b.add_python({"all_reduce",
                  "/venv/lib/python3.12/site-packages/torch/distributed/distributed_c10d.py", 2501},
                 base);
    b.add_python(
        {"wrapper", "/venv/lib/python3.12/site-packages/torch/distributed/c10d_logger.py", 83},
        base);
  }
  b.add_python({"train_step", "/job/train.py", 42}, base);
  b.add_python({"train", "/job/train.py", 97}, base);
  b.add_python({"<module>", "/job/train.py", 120}, base);
  b.add_natives(kMainStart, base);
  return t;
}

stack::ThreadStack worker_thread(int rank, int index, unsigned long long base) {
  stack::ThreadStack t;
  t.tid = 100000 + rank * 1000 + index;
  t.state = 'S';
  t.holds_gil = false;
  Builder b(&t);
  std::string& name = t.name;
  switch (index % 4) {
    case 0:  // autograd engine worker
      b.add_natives(kFutexWait, base);
      b.add_native({"std::condition_variable::wait(std::unique_lock<std::mutex>&)",
                    "/usr/lib/x86_64-linux-gnu/libstdc++.so.6", nullptr, 0},
                   base);
      b.add_native({"torch::autograd::ReadyQueue::pop()",
                    "/venv/lib/python3.12/site-packages/torch/lib/libtorch_cpu.so", nullptr, 0},
                   base);
      b.add_native({"torch::autograd::Engine::thread_main(std::shared_ptr<torch::autograd::"
                    "GraphTask> const&)",
                    "/venv/lib/python3.12/site-packages/torch/lib/libtorch_cpu.so", nullptr, 0},
                   base);
      b.add_native({"torch::autograd::Engine::thread_init(int, "
                    "std::shared_ptr<torch::autograd::ReadyQueue> const&, bool)",
                    "/venv/lib/python3.12/site-packages/torch/lib/libtorch_cpu.so", nullptr, 0},
                   base);
      b.add_native(
          {"execute_native_thread_routine", "/usr/lib/x86_64-linux-gnu/libstdc++.so.6", nullptr, 0},
          base);
      name = "pt_autograd_" + std::to_string(index);
      break;
    case 1:  // NCCL proxy: spins, so its leaf differs a little between ranks
      b.add_native({"poll", "/usr/lib/x86_64-linux-gnu/libc.so.6", nullptr, 0}, base);
      b.add_native({"ncclProxyService(void*)",
                    "/venv/lib/python3.12/site-packages/nvidia/nccl/lib/libnccl.so.2", "proxy.cc",
                    1500 + (rank % 3)},
                   base);
      name = "ncclProxy";
      break;
    case 2:  // data-loader pin-memory thread
      b.add_natives(kFutexWait, base);
      b.add_native({"PyThread_acquire_lock_timed", "/usr/bin/python3.12", "thread_pthread.h", 497},
                   base);
      b.add_python({"wait", "/usr/lib/python3.12/threading.py", 359}, base);
      b.add_python({"get", "/usr/lib/python3.12/queue.py", 180}, base);
      b.add_python({"_pin_memory_loop",
                    "/venv/lib/python3.12/site-packages/torch/utils/data/_utils/pin_memory.py", 59},
                   base);
      b.add_python({"run", "/usr/lib/python3.12/threading.py", 1010}, base);
      b.add_python({"_bootstrap_inner", "/usr/lib/python3.12/threading.py", 1073}, base);
      b.add_python({"_bootstrap", "/usr/lib/python3.12/threading.py", 1030}, base);
      b.add_native({"thread_run", "/usr/bin/python3.12", "_threadmodule.c", 1114}, base);
      name = "pin_memory";
      break;
    default:  // OpenMP worker
      b.add_native({"do_spin", "/usr/lib/x86_64-linux-gnu/libgomp.so.1", "wait.h", 57}, base);
      b.add_native(
          {"gomp_team_barrier_wait_end", "/usr/lib/x86_64-linux-gnu/libgomp.so.1", "bar.c", 112},
          base);
      b.add_native({"gomp_thread_start", "/usr/lib/x86_64-linux-gnu/libgomp.so.1", "team.c", 125},
                   base);
      name = "omp_worker";
  }
  b.add_natives(kThreadStart, base);
  return t;
}

}  // namespace

bool write_synthetic_dump(const std::string& dir, const SyntheticDumpSpec& spec,
                          std::string* error) {
  for (int rank = 0; rank < spec.world_size; ++rank) {
    if (std::find(spec.no_file_ranks.begin(), spec.no_file_ranks.end(), rank) !=
        spec.no_file_ranks.end()) {
      continue;
    }
    // Each rank's libraries load at a different base (ASLR): pc differs, offset not.
    const unsigned long long base =
        0x7f0000000000ull + static_cast<unsigned long long>(rank) * 0x1000000ull;
    stack::ProcessStack s;
    s.rank = rank;
    s.world_size = spec.world_size;
    s.pid = 4000 + rank;
    s.host = "node" + std::to_string(rank / 8);
    s.process_state = "S (sleeping)";
    s.collected_at = 1763800000.123;
    s.stopped_ms = 12.5;
    s.python_version = "3.12.3";
    s.threads.push_back(main_thread(rank, rank == spec.leak_rank, base));
    for (int t = 1; t < spec.threads_per_rank; ++t)
      s.threads.push_back(worker_thread(rank, t, base));
    // Through the one writer: the bytes the supervisor writes after a hang.
    const std::string path = dir + "/" + stack::stack_file_name(rank, spec.world_size);
    if (!stack::write_stack_file(s, path, error)) return false;
  }
  return true;
}

}  // namespace xpu_timer::flamegraph
