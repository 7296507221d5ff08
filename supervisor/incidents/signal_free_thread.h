// A thread that takes none of the process's signals: the asio signal_set of
// the supervisor owns them. A thread inherits the mask of its creator, and so
// does a collector child forked from it. Used by the incident threads (the
// stack dumper's, the crash stack reads).
#pragma once

#include <pthread.h>
#include <signal.h>

#include <thread>
#include <utility>

namespace xpu_timer::supervisor {

template <typename F>
std::thread spawn_without_signals(F&& body) {
  sigset_t all, old;
  sigfillset(&all);
  pthread_sigmask(SIG_BLOCK, &all, &old);
  try {
    std::thread t(std::forward<F>(body));
    pthread_sigmask(SIG_SETMASK, &old, nullptr);
    return t;
  } catch (...) {
    pthread_sigmask(SIG_SETMASK, &old, nullptr);
    throw;
  }
}

}  // namespace xpu_timer::supervisor
