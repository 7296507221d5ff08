// Private to the stack-file reader (stack_file_parser.cc): decoding into a
// ProcessStack that held an earlier file reuses its elements, whose strings
// keep their capacity, so that a loader decoding many files through one
// ProcessStack allocates almost nothing once warm. Each element is reset to
// its defaults (stack_types.h) here before the file's fields are read into it.
#pragma once

#include <cstddef>
#include <vector>

#include "stack/stack_file.h"
#include "stack/stack_types.h"

namespace xpu_timer::stack::file_reuse {

inline void reset(NativeFrame* f) {
  f->pc = f->offset = 0;
  f->func = "??";
  f->module.clear();
  f->file.clear();
  f->line = 0;
  f->inlined = false;
}
inline void reset(PythonFrame* f) {
  f->func.clear();
  f->file.clear();
  f->line = 0;
  f->entry = true;
}
inline void reset(MixedFrame* f) {
  f->python = false;
  f->func.clear();
  f->module.clear();
  f->file.clear();
  f->line = 0;
}
inline void reset(ThreadStack* t) {
  t->tid = 0;
  t->name.clear();
  t->state = '?';
  t->holds_gil.reset();
  // The frame lists are cut to what the file holds when the thread ends.
}
inline void reset(ProcessStack* s) {
  s->version = kStackFileVersion;
  s->rank = 0;
  s->world_size = 1;
  s->pid = 0;
  s->host.clear();
  s->process_state.clear();
  s->collected_at = s->stopped_ms = 0;
  s->python_version.reset();
  s->errors.clear();
  // The threads are cut to what the file holds when it ends.
}

// The next element of *v, the *used first ones being taken: an old one reset,
// or a new one.
template <typename T>
T* next(std::vector<T>* v, size_t* used) {
  if (*used < v->size()) {
    reset(&(*v)[*used]);
  } else {
    v->emplace_back();
  }
  return &(*v)[(*used)++];
}

}  // namespace xpu_timer::stack::file_reuse
