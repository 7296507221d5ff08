// Reads of memory mapped from a file that another process owns. If that
// process truncates the file, touching the mapping raises SIGBUS; the guard
// turns the fault into a failed read instead of killing the reader. Used by
// the supervisor for the status pages and the flight-recorder rings. Any
// thread (the jump buffer is per thread); faults outside a guarded read keep
// their previous handling (the handler chains, or restores the default).
#pragma once

#include <utility>

namespace xpu_timer::common {

// Installs the SIGBUS handler once (idempotent, thread-safe).
void install_mapped_read_guard();

// Runs fn(arg) with SIGBUS turned into a `false` return. fn must not
// allocate, lock or run destructors that matter: a fault jumps out of it.
bool run_guarded(bool (*fn)(void*), void* arg);

// The same for a callable (a lambda capturing by reference).
template <typename F>
bool guarded(F&& f) {
  return run_guarded([](void* p) -> bool { return (*static_cast<F*>(p))(); },
                     const_cast<void*>(static_cast<const void*>(&f)));
}

}  // namespace xpu_timer::common
