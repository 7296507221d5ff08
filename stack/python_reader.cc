#include "stack/python_reader.h"

#include <unistd.h>

#include <cstring>
#include <regex>
#include <set>

#include "common/parse_number.h"
#include "stack/elf_symbols.h"
#include "stack/line_table.h"

namespace xpu_timer::stack {
namespace {

constexpr uint64_t kMaxStringChars = 4096;
constexpr uint64_t kMaxBytes = 1 << 20;
constexpr int kMaxInterpreters = 64;

std::string basename_of(const std::string& path) {
  size_t slash = path.rfind('/');
  return slash == std::string::npos ? path : path.substr(slash + 1);
}

// "python3.10" / "libpython3.9d.so.1.0" -> minor version.
std::optional<int> minor_from_name(const std::string& path) {
  static const std::regex re(R"(python3\.(\d+))");
  std::smatch m;
  std::string base = basename_of(path);
  if (!std::regex_search(base, m, re)) return std::nullopt;
  const std::optional<int64_t> minor = parse_int(m.str(1), 0, INT32_MAX);
  if (!minor) return std::nullopt;
  return static_cast<int>(*minor);
}

void append_utf8(std::string* out, uint32_t cp) {
  if (cp < 0x80) {
    out->push_back(static_cast<char>(cp));
  } else if (cp < 0x800) {
    out->push_back(static_cast<char>(0xc0 | (cp >> 6)));
    out->push_back(static_cast<char>(0x80 | (cp & 0x3f)));
  } else if (cp < 0x10000) {
    out->push_back(static_cast<char>(0xe0 | (cp >> 12)));
    out->push_back(static_cast<char>(0x80 | ((cp >> 6) & 0x3f)));
    out->push_back(static_cast<char>(0x80 | (cp & 0x3f)));
  } else if (cp < 0x110000) {
    out->push_back(static_cast<char>(0xf0 | (cp >> 18)));
    out->push_back(static_cast<char>(0x80 | ((cp >> 12) & 0x3f)));
    out->push_back(static_cast<char>(0x80 | ((cp >> 6) & 0x3f)));
    out->push_back(static_cast<char>(0x80 | (cp & 0x3f)));
  } else {
    out->push_back('?');
  }
}

}  // namespace

std::unique_ptr<PythonReader> PythonReader::find(pid_t pid, const std::vector<MapEntry>& maps,
                                                 const RemoteMemory& mem, std::string* note) {
  std::vector<std::string> candidates;
  char exe[4096];
  std::string exe_link = "/proc/" + std::to_string(pid) + "/exe";
  ssize_t n = readlink(exe_link.c_str(), exe, sizeof(exe) - 1);
  if (n > 0) candidates.emplace_back(exe, static_cast<size_t>(n));
  std::set<std::string> seen(candidates.begin(), candidates.end());
  for (const auto& m : maps) {
    if (basename_of(m.path).rfind("libpython3", 0) == 0 && seen.insert(m.path).second)
      candidates.push_back(m.path);
  }
  std::string root = "/proc/" + std::to_string(pid) + "/root";
  for (const auto& path : candidates) {
    std::string err;
    auto elf = ElfSymbols::open(path, &err);
    if (!elf) elf = ElfSymbols::open(root + path, &err);  // other mount namespace
    if (!elf) continue;
    auto runtime_sym = elf->find("_PyRuntime");
    if (!runtime_sym) continue;
    auto base = mapping_base(maps, path);
    if (!base) continue;
    uint64_t bias = *base - elf->first_load_vaddr();

    auto reader = std::unique_ptr<PythonReader>(new PythonReader());
    reader->runtime_ = bias + *runtime_sym;
    reader->binary_ = path;

    int major = 3;
    std::optional<int> minor;
    if (auto v = elf->find("Py_Version")) {
      uint32_t hex = 0;
      if (mem.read_value(bias + *v, &hex)) {
        major = static_cast<int>(hex >> 24);
        minor = static_cast<int>((hex >> 16) & 0xff);
        reader->version_ = std::to_string(major) + "." + std::to_string(*minor) + "." +
                           std::to_string((hex >> 8) & 0xff);
      }
    }
    if (!minor) {
      minor = minor_from_name(path);
      if (!minor) {
        *note = "found _PyRuntime in " + path + " but cannot tell the Python version";
        return nullptr;
      }
      std::string prefix = "3." + std::to_string(*minor) + ".";
      reader->version_ = "3." + std::to_string(*minor);
      // Before Py_Version: Py_GetVersion()'s static buffer (filled at start
      // for sys.version, "3.9.18 (main, ...)"; in .symtab when not stripped),
      // else PY_VERSION in .rodata, else the minor version from the name.
      char buf[32] = {};
      auto static_version = elf->find("version.0");
      if (static_version && mem.read(bias + *static_version, buf, sizeof(buf) - 1) &&
          std::string(buf).rfind(prefix, 0) == 0) {
        std::string v(buf);
        reader->version_ = v.substr(0, v.find_first_not_of("0123456789.", prefix.size()));
      } else if (auto full = elf->find_version_string(prefix)) {
        reader->version_ = *full;
      }
    }

    if (major == 3 && *minor >= 13) {
      uint8_t buf[kDebugOffsetsReadSize];
      if (!mem.read(reader->runtime_, buf, sizeof(buf))) {
        *note = "cannot read _PyRuntime of Python " + reader->version_;
        return nullptr;
      }
      uint64_t hex = 0;
      auto layout = layout_from_debug_offsets(buf, sizeof(buf), &hex, &err);
      if (!layout) {
        *note = "Python " + reader->version_ + ": " + err;
        return nullptr;
      }
      reader->layout_ = *layout;
    } else {
      auto layout = layout_for_version(major, *minor);
      if (!layout) {
        *note = "Python " + reader->version_ + " is not supported (3.8 or newer is)";
        return nullptr;
      }
      reader->layout_ = *layout;
    }
    return reader;
  }
  *note = "no Python interpreter found (no _PyRuntime symbol in the executable or a libpython)";
  return nullptr;
}

std::optional<std::string> PythonReader::read_unicode(const RemoteMemory& mem,
                                                      uint64_t addr) const {
  uint32_t state = 0;
  int64_t length = 0;
  if (!mem.read_value(addr + layout_.unicode_state, &state) || !mem.read_value(addr + 16, &length))
    return std::nullopt;
  unsigned kind = (state >> 2) & 7;
  bool compact = (state >> 5) & 1;
  bool ascii = (state >> 6) & 1;
  if (!compact || length < 0 || static_cast<uint64_t>(length) > kMaxStringChars)
    return std::nullopt;
  if (ascii) {
    std::string s(static_cast<size_t>(length), '\0');
    if (!mem.read(addr + layout_.unicode_ascii_size, s.data(), s.size())) return std::nullopt;
    return s;
  }
  if (kind != 1 && kind != 2 && kind != 4) return std::nullopt;
  std::vector<uint8_t> raw(static_cast<size_t>(length) * kind);
  if (!mem.read(addr + layout_.unicode_compact_size, raw.data(), raw.size())) return std::nullopt;
  std::string out;
  for (int64_t i = 0; i < length; ++i) {
    uint32_t cp = 0;
    memcpy(&cp, raw.data() + i * kind, kind);  // little endian
    append_utf8(&out, cp);
  }
  return out;
}

std::optional<std::string> PythonReader::read_bytes(const RemoteMemory& mem, uint64_t addr) const {
  int64_t size = 0;
  if (!mem.read_value(addr + layout_.bytes_size, &size) || size < 0 ||
      static_cast<uint64_t>(size) > kMaxBytes)
    return std::nullopt;
  std::string s(static_cast<size_t>(size), '\0');
  if (!mem.read(addr + layout_.bytes_sval, s.data(), s.size())) return std::nullopt;
  return s;
}

const PythonReader::CodeInfo& PythonReader::code_info(const RemoteMemory& mem, uint64_t code) {
  auto it = codes_.find(code);
  if (it != codes_.end()) return it->second;
  CodeInfo info;
  uint64_t name = mem.read_ptr(code + layout_.code_name);
  uint64_t file = mem.read_ptr(code + layout_.code_filename);
  uint64_t table = mem.read_ptr(code + layout_.code_linetable);
  int32_t first = 0;
  auto n = name ? read_unicode(mem, name) : std::nullopt;
  auto f = file ? read_unicode(mem, file) : std::nullopt;
  auto t = table ? read_bytes(mem, table) : std::nullopt;
  if (n && f && mem.read_value(code + layout_.code_firstlineno, &first)) {
    info.name = *n;
    info.file = *f;
    info.firstlineno = first;
    if (t) info.linetable = *t;
    info.ok = true;
  }
  return codes_.emplace(code, std::move(info)).first->second;
}

int PythonReader::line_for(const CodeInfo& info, int64_t addrq) const {
  if (addrq > (1 << 30)) return -1;
  int a = static_cast<int>(addrq);
  switch (layout_.line_table) {
    case LineTableFormat::kLnotab:
      return lnotab_line(info.linetable, info.firstlineno, a);
    case LineTableFormat::kLinetable310:
      return linetable310_line(info.linetable, info.firstlineno, a);
    case LineTableFormat::kLocations:
      return location_table_line(info.linetable, info.firstlineno, a);
  }
  return -1;
}

void PythonReader::read_frames(const RemoteMemory& mem, uint64_t tstate, PythonThreadState* out,
                               std::vector<std::string>* errors) {
  const PyLayout& l = layout_;
  uint64_t frame = 0;
  if (l.tstate_cframe != kNoField) {
    uint64_t cframe = mem.read_ptr(tstate + l.tstate_cframe);
    frame = cframe ? mem.read_ptr(cframe + l.cframe_current_frame) : 0;
  } else {
    frame = mem.read_ptr(tstate + l.tstate_frame);
  }
  std::set<uint64_t> visited;
  bool interp_frames = l.frame_model == FrameModel::kInterpreterFrame;
  while (frame != 0) {
    if (out->frames.size() >= kMaxFrames || !visited.insert(frame).second) {
      errors->push_back("Python stack of thread " + std::to_string(out->native_tid) +
                        " truncated (cycle or more than 1024 frames)");
      break;
    }
    uint64_t back = 0;
    if (!mem.read_value(frame + l.frame_back, &back)) {
      errors->push_back("cannot read a Python frame; stack truncated");
      break;
    }
    if (interp_frames && l.frame_owner != kNoField) {
      uint8_t owner = 0;
      if (mem.read_value(frame + l.frame_owner, &owner) && owner == kFrameOwnedByCStack) {
        // Shim frame pushed by each _PyEval_EvalFrameDefault entry (3.12+):
        // the Python frame above it was the first one that call ran.
        if (!out->frames.empty()) out->frames.back().entry = true;
        frame = back;
        continue;
      }
    }
    uint64_t code = mem.read_ptr(frame + l.frame_code);
    PythonFrame pf;
    pf.entry = !interp_frames;
    const CodeInfo* info = code ? &code_info(mem, code) : nullptr;
    if (!info || !info->ok) {
      pf.func = "??";
      pf.file = "??";
    } else {
      pf.func = info->name;
      pf.file = info->file;
      int64_t addrq = -1;
      if (!interp_frames) {
        int32_t lasti = -1;
        if (mem.read_value(frame + l.frame_lasti, &lasti))
          addrq = l.lasti_in_code_units ? int64_t{lasti} * 2 : lasti;
      } else {
        uint64_t instr = mem.read_ptr(frame + l.frame_instr);
        uint64_t code_start = code + static_cast<uint64_t>(l.code_code_adaptive);
        if (instr >= code_start) addrq = static_cast<int64_t>(instr - code_start);
      }
      pf.line = line_for(*info, addrq);
      if (pf.line < 0) pf.line = 0;
    }
    if (l.frame_is_entry != kNoField) {
      uint8_t is_entry = 0;
      if (mem.read_value(frame + l.frame_is_entry, &is_entry)) pf.entry = is_entry != 0;
    }
    out->frames.push_back(std::move(pf));
    frame = back;
  }
  if (!out->frames.empty()) out->frames.back().entry = true;
}

std::optional<uint64_t> PythonReader::read_gil_holder(const RemoteMemory& mem,
                                                      uint64_t interp) const {
  const PyLayout& l = layout_;
  if (l.gil_model == GilModel::kRuntimeTstateCurrent) {
    uint64_t holder = 0;
    if (!mem.read_value(runtime_ + l.runtime_tstate_current, &holder)) return std::nullopt;
    return holder;
  }
  uint64_t gil = mem.read_ptr(interp + l.interp_ceval_gil);
  if (!gil) return std::nullopt;
  int32_t locked = 0;
  uint64_t holder = 0;
  if (!mem.read_value(gil + l.gil_locked, &locked) ||
      !mem.read_value(gil + l.gil_last_holder, &holder))
    return std::nullopt;
  return locked ? holder : 0;
}

PythonSnapshot PythonReader::read(const RemoteMemory& mem) {
  PythonSnapshot snap;
  const PyLayout& l = layout_;
  codes_.clear();  // code objects may have been freed and reused since last time
  uint64_t interp = mem.read_ptr(runtime_ + l.runtime_interpreters_head);
  if (!interp) {
    snap.errors.push_back("Python " + version_ + ": no interpreter state (not initialized yet?)");
    return snap;
  }
  snap.gil_holder = read_gil_holder(mem, interp);
  std::set<uint64_t> seen_interps;
  for (int i = 0; interp && i < kMaxInterpreters && seen_interps.insert(interp).second; ++i) {
    uint64_t tstate = mem.read_ptr(interp + l.interp_threads_head);
    std::set<uint64_t> seen;
    while (tstate && snap.threads.size() < kMaxThreads && seen.insert(tstate).second) {
      PythonThreadState ts;
      ts.tstate = tstate;
      ts.thread_id = mem.read_ptr(tstate + l.tstate_thread_id);
      if (l.tstate_native_thread_id != kNoField) {
        uint64_t native = 0;
        if (mem.read_value(tstate + l.tstate_native_thread_id, &native))
          ts.native_tid = static_cast<int64_t>(native);
      }
      read_frames(mem, tstate, &ts, &snap.errors);
      snap.threads.push_back(std::move(ts));
      tstate = mem.read_ptr(tstate + l.tstate_next);
    }
    interp = mem.read_ptr(interp + l.interp_next);
  }
  return snap;
}

}  // namespace xpu_timer::stack
