#include "stack/python_layouts.h"

#include <cstring>

namespace xpu_timer::stack {
namespace {

PyLayout layout_38_39(int minor) {
  PyLayout l;
  l.minor = minor;
  l.frame_model = FrameModel::kFrameObject;
  l.line_table = LineTableFormat::kLnotab;
  l.gil_model = GilModel::kRuntimeTstateCurrent;
  l.runtime_interpreters_head = 32;
  l.runtime_tstate_current = minor == 8 ? 1368 : 568;
  l.interp_next = 0;
  l.interp_threads_head = 8;  // tstate_head
  l.tstate_next = 8;
  l.tstate_frame = 24;
  l.tstate_thread_id = 176;
  l.frame_back = 24;
  l.frame_code = 32;
  l.frame_lasti = 104;
  l.code_filename = 104;
  l.code_name = 112;
  l.code_firstlineno = 40;
  l.code_linetable = 120;  // co_lnotab
  return l;
}

PyLayout layout_310() {
  PyLayout l = layout_38_39(9);
  l.minor = 10;
  l.line_table = LineTableFormat::kLinetable310;
  l.frame_lasti = 96;
  l.lasti_in_code_units = true;
  l.code_linetable = 120;  // co_linetable
  return l;
}

PyLayout layout_311() {
  PyLayout l;
  l.minor = 11;
  l.frame_model = FrameModel::kInterpreterFrame;
  l.line_table = LineTableFormat::kLocations;
  l.gil_model = GilModel::kRuntimeTstateCurrent;
  l.runtime_interpreters_head = 40;
  l.runtime_tstate_current = 576;
  l.interp_next = 0;
  l.interp_threads_head = 16;
  l.tstate_next = 8;
  l.tstate_cframe = 56;
  l.cframe_current_frame = 8;
  l.tstate_thread_id = 152;
  l.tstate_native_thread_id = 160;
  l.frame_code = 32;
  l.frame_back = 48;
  l.frame_instr = 56;  // prev_instr
  l.frame_is_entry = 68;
  l.frame_owner = 69;
  l.code_filename = 112;
  l.code_name = 120;
  l.code_firstlineno = 72;
  l.code_linetable = 136;
  l.code_code_adaptive = 184;
  return l;
}

PyLayout layout_312() {
  PyLayout l;
  l.minor = 12;
  l.frame_model = FrameModel::kInterpreterFrame;
  l.line_table = LineTableFormat::kLocations;
  l.gil_model = GilModel::kInterpGilPointer;
  l.runtime_interpreters_head = 40;
  l.interp_next = 0;
  l.interp_threads_head = 72;
  l.interp_ceval_gil = 384;
  l.gil_last_holder = 8;
  l.gil_locked = 16;
  l.tstate_next = 8;
  l.tstate_cframe = 56;
  l.cframe_current_frame = 0;
  l.tstate_thread_id = 136;
  l.tstate_native_thread_id = 144;
  l.frame_code = 0;
  l.frame_back = 8;
  l.frame_instr = 56;  // prev_instr
  l.frame_owner = 70;
  l.code_filename = 112;
  l.code_name = 120;
  l.code_firstlineno = 68;
  l.code_linetable = 136;
  l.code_code_adaptive = 192;
  l.unicode_ascii_size = 40;  // wstr removed in 3.12
  l.unicode_compact_size = 56;
  return l;
}

uint64_t u64_at(const uint8_t* data, size_t off) {
  uint64_t v;
  memcpy(&v, data + off, sizeof(v));
  return v;
}

}  // namespace

std::optional<PyLayout> layout_for_version(int major, int minor) {
  if (major != 3) return std::nullopt;
  switch (minor) {
    case 8:
    case 9:
      return layout_38_39(minor);
    case 10:
      return layout_310();
    case 11:
      return layout_311();
    case 12:
      return layout_312();
    default:
      return std::nullopt;
  }
}

std::optional<PyLayout> layout_from_debug_offsets(const uint8_t* data, size_t size,
                                                  uint64_t* version_hex, std::string* error) {
  if (size < kDebugOffsetsReadSize || memcmp(data, "xdebugpy", 8) != 0) {
    *error = "no _Py_DebugOffsets cookie at _PyRuntime";
    return std::nullopt;
  }
  uint64_t version = u64_at(data, 8);
  *version_hex = version;
  int major = static_cast<int>((version >> 24) & 0xff);
  int minor = static_cast<int>((version >> 16) & 0xff);
  if (major != 3 || minor != 13) {
    // The struct itself grows between minor versions (3.14 added fields in
    // the middle): only the layout we know is trusted.
    *error = "Python " + std::to_string(major) + "." + std::to_string(minor) +
             ": _Py_DebugOffsets layout of this version is not supported yet";
    return std::nullopt;
  }
  if (u64_at(data, 16) != 0) {
    *error = "free-threaded CPython build is not supported yet";
    return std::nullopt;
  }
  // struct _Py_DebugOffsets of CPython 3.13 (Include/internal/pycore_runtime.h).
  PyLayout l;
  l.minor = 13;
  l.frame_model = FrameModel::kInterpreterFrame;
  l.line_table = LineTableFormat::kLocations;
  l.gil_model = GilModel::kInterpGilPointer;
  l.runtime_interpreters_head = static_cast<int64_t>(u64_at(data, 40));
  l.interp_next = static_cast<int64_t>(u64_at(data, 64));
  l.interp_threads_head = static_cast<int64_t>(u64_at(data, 72));
  l.interp_ceval_gil = static_cast<int64_t>(u64_at(data, 112));
  // gil_runtime_state_{locked,holder} are offsets in PyInterpreterState of
  // its embedded _gil; we follow ceval.gil (which may point to another
  // interpreter's _gil), so keep them relative to the struct.
  l.gil_locked = static_cast<int64_t>(u64_at(data, 136) - u64_at(data, 120));
  l.gil_last_holder = static_cast<int64_t>(u64_at(data, 144) - u64_at(data, 120));
  l.tstate_next = static_cast<int64_t>(u64_at(data, 168));
  l.tstate_frame = static_cast<int64_t>(u64_at(data, 184));  // current_frame
  l.tstate_thread_id = static_cast<int64_t>(u64_at(data, 192));
  l.tstate_native_thread_id = static_cast<int64_t>(u64_at(data, 200));
  l.frame_back = static_cast<int64_t>(u64_at(data, 232));
  l.frame_code = static_cast<int64_t>(u64_at(data, 240));   // f_executable
  l.frame_instr = static_cast<int64_t>(u64_at(data, 248));  // instr_ptr
  l.frame_owner = static_cast<int64_t>(u64_at(data, 264));
  l.code_filename = static_cast<int64_t>(u64_at(data, 280));
  l.code_name = static_cast<int64_t>(u64_at(data, 288));
  l.code_linetable = static_cast<int64_t>(u64_at(data, 304));
  l.code_firstlineno = static_cast<int64_t>(u64_at(data, 312));
  l.code_code_adaptive = static_cast<int64_t>(u64_at(data, 344));
  l.bytes_size = static_cast<int64_t>(u64_at(data, 520));
  l.bytes_sval = static_cast<int64_t>(u64_at(data, 528));
  l.unicode_state = static_cast<int64_t>(u64_at(data, 544));
  l.unicode_ascii_size = static_cast<int64_t>(u64_at(data, 560));
  l.unicode_compact_size = l.unicode_ascii_size + 16;  // + utf8_length + utf8
  return l;
}

}  // namespace xpu_timer::stack
