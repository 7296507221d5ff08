// Stack files as a stack dump leaves them, written by the one writer
// (stack/stack_file.h), for the tests of what is read from them.
#pragma once

#include <stdexcept>
#include <string>

#include "stack/stack_file.h"
#include "supervisor/incidents/stack_dump_report.h"

namespace xpu_timer::supervisor {

constexpr char kTrainer[] = "/w/tests/simgpu/sim_trainer.py";

// Rank `rank` (pid 100 + rank) with its main thread in `func` called by train_step.
inline RankStackResult written(const std::string& dir, int rank, const std::string& func) {
  stack::ProcessStack s;
  s.rank = rank;
  s.world_size = 4;
  s.pid = 100 + rank;
  stack::ThreadStack t;
  t.tid = s.pid;
  t.name = "python3";
  t.python = {stack::PythonFrame{"sleep_a_while", "/usr/lib/python3.11/threading.py", 9, true},
              stack::PythonFrame{func, kTrainer, 184, true},
              stack::PythonFrame{"train_step", kTrainer, 226, true}};
  s.threads.push_back(t);
  RankStackResult r;
  r.rank = rank;
  r.pid = s.pid;
  r.attached = true;
  r.file = dir + "/" + stack::stack_file_name(rank, 4);
  std::string error;
  if (!stack::write_stack_file(s, r.file, &error)) throw std::runtime_error(error);
  return r;
}

}  // namespace xpu_timer::supervisor
