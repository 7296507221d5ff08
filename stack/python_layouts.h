// Where CPython keeps what we read, per version. 3.8-3.12: offsets measured
// with `ptype/o` on the pyenv builds' debug info (x86_64, release builds,
// non-debug ABI); they match the struct definitions in CPython's Include/ for
// that minor version. 3.13+: taken from the target's own _Py_DebugOffsets
// (the first bytes of _PyRuntime, cookie "xdebugpy").
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>

namespace xpu_timer::stack {

enum class FrameModel {
  kFrameObject,       // 3.8-3.10: tstate->frame, PyFrameObject chain
  kInterpreterFrame,  // 3.11+: _PyInterpreterFrame chain
};

enum class LineTableFormat {
  kLnotab,        // 3.8-3.9 co_lnotab
  kLinetable310,  // 3.10 co_linetable
  kLocations,     // 3.11+ co_linetable (location table)
};

enum class GilModel {
  kRuntimeTstateCurrent,  // 3.8-3.11: _PyRuntime.gilstate.tstate_current
  kInterpGilPointer,      // 3.12+: interp->ceval.gil -> {last_holder, locked}
};

constexpr int64_t kNoField = -1;

struct PyLayout {
  int minor = 0;  // 3.minor
  FrameModel frame_model = FrameModel::kFrameObject;
  LineTableFormat line_table = LineTableFormat::kLnotab;
  GilModel gil_model = GilModel::kRuntimeTstateCurrent;

  int64_t runtime_interpreters_head = 0;
  int64_t runtime_tstate_current = kNoField;

  int64_t interp_next = 0;
  int64_t interp_threads_head = 0;
  int64_t interp_ceval_gil = kNoField;  // pointer to struct _gil_runtime_state
  int64_t gil_last_holder = kNoField;   // in struct _gil_runtime_state
  int64_t gil_locked = kNoField;

  int64_t tstate_next = 0;
  int64_t tstate_thread_id = 0;  // pthread_t
  int64_t tstate_native_thread_id = kNoField;
  int64_t tstate_frame = kNoField;   // 3.8-3.10 frame, 3.13+ current_frame
  int64_t tstate_cframe = kNoField;  // 3.11-3.12
  int64_t cframe_current_frame = kNoField;

  int64_t frame_back = 0;             // f_back / previous
  int64_t frame_code = 0;             // f_code / f_executable
  int64_t frame_lasti = kNoField;     // 3.8-3.10 f_lasti (int)
  int64_t frame_instr = kNoField;     // 3.11+ prev_instr / instr_ptr
  int64_t frame_owner = kNoField;     // 3.11+ (char)
  int64_t frame_is_entry = kNoField;  // 3.11 only (bool)
  bool lasti_in_code_units = false;   // 3.10: f_lasti counts 2-byte units

  int64_t code_filename = 0;
  int64_t code_name = 0;
  int64_t code_firstlineno = 0;
  int64_t code_linetable = 0;  // co_lnotab or co_linetable
  int64_t code_code_adaptive = kNoField;

  int64_t bytes_size = 16;
  int64_t bytes_sval = 32;
  int64_t unicode_state = 32;
  int64_t unicode_ascii_size = 48;    // sizeof(PyASCIIObject)
  int64_t unicode_compact_size = 72;  // sizeof(PyCompactUnicodeObject)
};

// Owner values of _PyInterpreterFrame (3.11+).
constexpr int kFrameOwnedByCStack = 3;

// Hard-coded layouts for 3.8 to 3.12; nullopt for anything else.
std::optional<PyLayout> layout_for_version(int major, int minor);

// The start of _PyRuntime as read from the target (at least
// kDebugOffsetsReadSize bytes). nullopt and *error when the cookie is absent
// or the layout of that version's _Py_DebugOffsets is unknown to us.
constexpr size_t kDebugOffsetsReadSize = 600;
std::optional<PyLayout> layout_from_debug_offsets(const uint8_t* data, size_t size,
                                                  uint64_t* version_hex, std::string* error);

}  // namespace xpu_timer::stack
