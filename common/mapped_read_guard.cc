#include "common/mapped_read_guard.h"

#include <setjmp.h>
#include <signal.h>
#include <string.h>

#include <mutex>

namespace xpu_timer::common {
namespace {

thread_local sigjmp_buf t_jump;
thread_local volatile sig_atomic_t t_guarded = 0;
struct sigaction g_previous;

void on_sigbus(int sig, siginfo_t* info, void* ctx) {
  if (t_guarded) {
    t_guarded = 0;
    siglongjmp(t_jump, 1);
  }
  // Not a guarded read: behave as if we were never installed.
  if (g_previous.sa_flags & SA_SIGINFO) {
    if (g_previous.sa_sigaction != nullptr) {
      g_previous.sa_sigaction(sig, info, ctx);
      return;
    }
  } else if (g_previous.sa_handler != SIG_DFL && g_previous.sa_handler != SIG_IGN &&
             g_previous.sa_handler != nullptr) {
    g_previous.sa_handler(sig);
    return;
  }
  signal(SIGBUS, SIG_DFL);  // returning re-executes the access: default action
}

}  // namespace

void install_mapped_read_guard() {
  static std::once_flag once;
  std::call_once(once, [] {
    struct sigaction sa;
    memset(&sa, 0, sizeof(sa));
    sa.sa_sigaction = on_sigbus;
    sa.sa_flags = SA_SIGINFO | SA_NODEFER;
    sigemptyset(&sa.sa_mask);
    sigaction(SIGBUS, &sa, &g_previous);
  });
}

bool run_guarded(bool (*fn)(void*), void* arg) {
  install_mapped_read_guard();
  if (sigsetjmp(t_jump, 1) != 0) return false;
  t_guarded = 1;
  const bool ok = fn(arg);
  t_guarded = 0;
  return ok;
}

}  // namespace xpu_timer::common
