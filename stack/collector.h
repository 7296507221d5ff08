// The stack/ library's entry point: collect the native and Python stacks of
// every thread of one process.
//
//   CollectOptions opt;            // both kinds, rank 0 of 1
//   ProcessStack s = collect_stacks(pid, opt);             // in this process
//   ProcessStack s = collect_stacks_in_child(pid, opt);    // in a forked child
//
// Order, chosen to keep the target stopped as briefly as possible: before
// stopping, read /proc (states, names, maps), find the interpreter and report
// the modules to libdwfl; while stopped, read registers, Python thread states
// and raw native pcs; after detaching, symbolize (names, DWARF lines).
//
// collect_stacks runs the ptrace part on a thread it creates and joins, so
// that a thread that never stopped (state D) is released by the kernel when
// that tracer thread exits. collect_stacks_in_child runs everything in a
// forked child: if our own code crashes, the kernel detaches a dead tracer
// and the target runs on; it is also immune to other threads of the caller
// calling waitpid(-1). The supervisor should use the child variant.
#pragma once

#include <sys/types.h>

#include <chrono>

#include "stack/stack_types.h"

namespace xpu_timer::stack {

struct CollectOptions {
  bool native = true;
  bool python = true;
  int rank = 0;
  int world_size = 1;
  // Bound on waiting for the threads to reach their ptrace stop.
  std::chrono::milliseconds stop_timeout{500};
  // Bound on the whole collection in the forked child.
  std::chrono::milliseconds child_timeout{30000};
};

// True when the collection could not attach at all (no such process,
// permission, zombie): errors[0] says why.
struct CollectResult {
  ProcessStack stack;
  bool attached = false;
};

CollectResult collect_stacks(pid_t pid, const CollectOptions& options);
CollectResult collect_stacks_in_child(pid_t pid, const CollectOptions& options);

}  // namespace xpu_timer::stack
