#include "inject/runtime.h"

#include <pthread.h>
#include <time.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>

#include "common/env_config.h"
#include "common/env_names.h"
#include "common/log.h"
#include "common/rank_messages.h"
#include "common/status_page_layout.h"
#include "inject/crash_handlers.h"
#include "inject/crash_python_hook.h"
#include "inject/cuda_runtime_calls.h"
#include "inject/poller.h"
#include "inject/settings.h"

namespace xpu_timer::inject {

namespace runtime_detail {
// All constant-initialised: valid before our constructor and after exit.
std::atomic<int> g_mode{static_cast<int>(Mode::kUninit)};
std::atomic<RuntimeState*> g_state{nullptr};
__thread int t_hook_depth __attribute__((tls_model("initial-exec"))) = 0;
}  // namespace runtime_detail

namespace {

using runtime_detail::g_mode;
using runtime_detail::g_state;

std::atomic<bool> g_pass_through_logged{false};

constexpr uint64_t kExitWaitNs = 500ull * 1000 * 1000;

void set_mode(Mode m) { g_mode.store(static_cast<int>(m), std::memory_order_release); }

// Runs from exit(), before the destructors of libraries loaded earlier (our
// handler was registered after they were constructed), so the CUDA runtime
// is still alive while the Poller finishes its last pass.
void on_process_exit() {
  RuntimeState* st = g_state.load(std::memory_order_acquire);
  if (st == nullptr || st->pid != getpid()) return;  // a forked child: not ours
  set_mode(Mode::kPassThrough);
  crash_set_link_fd(-1);  // closed below: a later crash writes its text file
  if (st->poller != nullptr) {
    st->poller->request_stop();
    if (!st->poller->wait_done(kExitWaitNs)) {
      XPU_TIMER_LOG_WARN("background thread did not stop within 500 ms at exit");
    }
  }
  st->page->unlink();
  st->ring.unlink_file();
  st->link.close_fd();
}

// Child of fork(): only the forking thread survives, so there is no Poller;
// DataLoader workers inherit LD_PRELOAD and RANK but are not the rank. Only
// async-signal-safe work here.
void on_fork_child() {
  if (g_mode.load(std::memory_order_relaxed) == static_cast<int>(Mode::kUninit)) {
    return;  // forked before we started: the child may start on its own
  }
  set_mode(Mode::kPassThrough);
  crash_forget_process();  // a crash here is not the rank's
  RuntimeState* st = g_state.load(std::memory_order_relaxed);
  // Our copy of the socket would hide the parent's death from the supervisor.
  if (st != nullptr) st->link.close_fd();
}

__attribute__((constructor)) void register_fork_handler() {
  // The only work done at load time: LD_PRELOAD also puts us into bash,
  // torchrun and every other process of the job.
  pthread_atfork(nullptr, nullptr, on_fork_child);
}

void fill_register_msg(const RuntimeState& st, proto::RegisterMsg* msg) {
  char host[sizeof(msg->hostname)] = {};
  if (gethostname(host, sizeof(host) - 1) != 0) host[0] = '\0';
  proto::RegisterInfo info;
  info.pid = st.pid;
  info.identity = st.identity;
  info.hostname = host;
  info.status_path = st.page->path().c_str();
  if (!proto::encode_register(info, msg)) {  // cut: the supervisor will not find the page
    XPU_TIMER_LOG_WARN("status page path %s is too long for the protocol",
                       info.status_path);
  }
}

// Returns the new mode. Runs on the first hooking thread, inside its hook.
Mode initialize() {
  const RankIdentity id = rank_identity_from_env();
  char tag[48];
  std::snprintf(tag, sizeof(tag), "xpu_timer inject[rank %d]", id.rank);
  set_log_tag(tag);
  const InjectSettings& config = settings();
  if (config.debug) set_log_level(LogLevel::kDebug);
  report_setting_problems();  // read at load time; said once the process is a rank

  if (config.disable) {
    XPU_TIMER_LOG_DEBUG("%s=1: hooks pass through", proto::kEnvDisable);
    return Mode::kPassThrough;
  }
  // Crash reporting works with or without a supervisor (a text file then).
  CrashConfig crash;
  crash.rank = id.rank;
  crash.crash_dir = config.crash_dir;
  crash.wait_ms = static_cast<int>(config.crash_wait_ms);
  install_crash_handlers(crash);
  start_python_excepthook_install();

  const char* socket_path = config.socket;
  if (socket_path[0] == '\0') {
    XPU_TIMER_LOG_INFO("%s is not set (not started by xpu_timer_supervisor): hooks pass through",
                       proto::kEnvSocket);
    return Mode::kPassThrough;
  }
  const char* run_dir = config.run_dir;
  if (run_dir[0] == '\0') {
    XPU_TIMER_LOG_WARN("%s is not set: hooks pass through", proto::kEnvRunDir);
    return Mode::kPassThrough;
  }
  if (!load_cuda_runtime_calls(mutable_cuda_calls())) return Mode::kPassThrough;

  RuntimeState* st = new RuntimeState;
  st->identity = id;
  // Each (operation, shape) timed sample_per_sec times a second, the other
  // calls counted (collectives keep a completion marker); 0 times every call.
  st->gate = new SampleGate(config.sample_per_sec);
  st->pid = getpid();
  std::string page_error;
  st->page = proto::StatusPageFile::create(run_dir, id, st->pid, &page_error);
  if (st->page == nullptr) {
    XPU_TIMER_LOG_WARN("%s; timing is off", page_error.c_str());
    delete st;
    return Mode::kPassThrough;
  }
  // The flight recorder is optional: without it, timing and hang detection
  // go on (the supervisor finds no ring file and says so in its dumps).
  if (const uint32_t cap = recorder::capacity_for(config.recorder_size); cap > 0) {
    st->ring.create(run_dir, id, st->pid, cap);
  }
  proto::RegisterMsg msg;
  fill_register_msg(*st, &msg);
  if (!st->link.connect_and_register(socket_path, msg)) {
    st->page->unlink();
    st->ring.unlink_file();
    delete st;
    return Mode::kPassThrough;
  }
  crash_set_link_fd(st->link.fd());
  st->poller = new Poller(st);
  if (!st->poller->start()) {
    crash_set_link_fd(-1);
    st->page->unlink();
    st->ring.unlink_file();
    st->link.close_fd();
    return Mode::kPassThrough;  // st is leaked on purpose: tiny, and never half-used
  }
  g_state.store(st, std::memory_order_release);
  if (std::atexit(on_process_exit) != 0) {
    XPU_TIMER_LOG_WARN("atexit failed; the status page file is left behind at exit");
  }
  XPU_TIMER_LOG_INFO("watching this rank; status page %s", st->page->path().c_str());
  return Mode::kActive;
}

}  // namespace

RuntimeState* runtime_state() { return g_state.load(std::memory_order_acquire); }

// Another thread is initialising: wait for it (bounded) rather than pass an
// NCCL call through untimed, which would leave this rank's per-communicator
// sequence numbers one behind the other ranks' for good. Initialisation
// takes milliseconds; the bound only guards against the unforeseen.
Mode wait_for_initialisation() {
  constexpr int kMaxWaits = 20000;  // x 100 us = 2 s
  const timespec pause{0, 100 * 1000};
  int m = g_mode.load(std::memory_order_acquire);
  for (int i = 0; i < kMaxWaits && m == static_cast<int>(Mode::kInitializing); ++i) {
    nanosleep(&pause, nullptr);
    m = g_mode.load(std::memory_order_acquire);
  }
  return static_cast<Mode>(m);
}

bool set_paused(bool paused) {
  int expected = static_cast<int>(paused ? Mode::kActive : Mode::kPaused);
  const int desired = static_cast<int>(paused ? Mode::kPaused : Mode::kActive);
  return g_mode.compare_exchange_strong(expected, desired) || expected == desired;
}

RuntimeState* runtime_detail::active_runtime_slow(int m) {
  if (m == static_cast<int>(Mode::kInitializing)) {
    return wait_for_initialisation() == Mode::kActive ? g_state.load(std::memory_order_acquire)
                                                      : nullptr;
  }
  if (m != static_cast<int>(Mode::kUninit)) return nullptr;
  if (!g_mode.compare_exchange_strong(m, static_cast<int>(Mode::kInitializing))) {
    return wait_for_initialisation() == Mode::kActive ? g_state.load(std::memory_order_acquire)
                                                      : nullptr;
  }
  Mode result = Mode::kPassThrough;
  try {
    result = initialize();
  } catch (...) {  // allocation failure: never let it reach the C ABI
    XPU_TIMER_LOG_WARN("initialisation failed (out of memory?): hooks pass through");
    result = Mode::kPassThrough;
  }
  // A fork child handler or an exit handler may have run meanwhile: only
  // leave kInitializing.
  int expected = static_cast<int>(Mode::kInitializing);
  g_mode.compare_exchange_strong(expected, static_cast<int>(result));
  return mode() == Mode::kActive ? g_state.load(std::memory_order_acquire) : nullptr;
}

void switch_to_pass_through(const char* why) {
  int expected = static_cast<int>(Mode::kActive);
  g_mode.compare_exchange_strong(expected, static_cast<int>(Mode::kPassThrough));
  // The Poller keeps publishing heartbeats with nothing in flight: tell the
  // supervisor that this rank's "idle" means nothing. The Poller never
  // writes `flags`, so an atomic OR outside the seqlock is safe.
  if (RuntimeState* st = g_state.load(std::memory_order_acquire); st != nullptr) {
    if (proto::StatusPage* page = st->page->page(); page != nullptr) {
      __atomic_fetch_or(&page->flags, proto::kPageFlagTimingDisabled, __ATOMIC_RELEASE);
    }
  }
  if (!g_pass_through_logged.exchange(true)) {
    XPU_TIMER_LOG_WARN("timing switched off for the rest of this process: %s", why);
  }
}

}  // namespace xpu_timer::inject
