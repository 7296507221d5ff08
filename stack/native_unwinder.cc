#include "stack/native_unwinder.h"

#include <cxxabi.h>
#include <dwarf.h>
#include <elfutils/libdw.h>
#include <elfutils/libdwfl.h>
#include <sys/uio.h>

#include <cstdlib>
#include <cstring>

namespace xpu_timer::stack {
namespace {

constexpr uint64_t kPageSize = 4096;

// Search paths for separate debug info: none (empty) plus the standard ones.
char* g_debuginfo_path = nullptr;

const Dwfl_Callbacks kProcCallbacks = {
    dwfl_linux_proc_find_elf,
    dwfl_standard_find_debuginfo,
    nullptr,
    &g_debuginfo_path,
};

std::string demangle(const char* name) {
  if (!name) return "??";
  if (name[0] == '_' && name[1] == 'Z') {
    int status = 0;
    char* out = abi::__cxa_demangle(name, nullptr, nullptr, &status);
    if (status == 0 && out) {
      std::string s(out);
      free(out);
      return s;
    }
    free(out);
  }
  return name;
}

// Name of a DW_TAG_inlined_subroutine or subprogram DIE, following
// abstract_origin / specification (dwarf_attr_integrate).
std::string die_name(Dwarf_Die* die) {
  Dwarf_Attribute attr;
  const char* name = nullptr;
  if (dwarf_attr_integrate(die, DW_AT_linkage_name, &attr) ||
      dwarf_attr_integrate(die, DW_AT_MIPS_linkage_name, &attr))
    name = dwarf_formstring(&attr);
  if (name) return demangle(name);
  name = dwarf_diename(die);
  if (!name && dwarf_attr_integrate(die, DW_AT_name, &attr)) name = dwarf_formstring(&attr);
  return name ? name : "??";
}

// DW_AT_call_file / DW_AT_call_line of an inlined subroutine: where, in its
// caller, it was inlined.
void call_site(Dwarf_Die* cudie, Dwarf_Die* inlined, std::string* file, int* line) {
  Dwarf_Attribute attr;
  Dwarf_Word value = 0;
  *line = 0;
  file->clear();
  if (dwarf_attr(inlined, DW_AT_call_line, &attr) && dwarf_formudata(&attr, &value) == 0)
    *line = static_cast<int>(value);
  Dwarf_Files* files = nullptr;
  size_t nfiles = 0;
  if (dwarf_attr(inlined, DW_AT_call_file, &attr) && dwarf_formudata(&attr, &value) == 0 &&
      dwarf_getsrcfiles(cudie, &files, &nfiles) == 0 && value < nfiles) {
    const char* f = dwarf_filesrc(files, value, nullptr, nullptr);
    if (f) *file = f;
  }
}

pid_t next_tid_after(const std::map<pid_t, user_regs_struct>& regs, pid_t prev) {
  auto it = regs.upper_bound(prev);
  return it == regs.end() ? 0 : it->first;
}

bool set_initial_registers_cb(Dwfl_Thread* thread, void* thread_arg) {
  const auto* r = static_cast<const user_regs_struct*>(thread_arg);
  // x86_64 DWARF register numbers 0-16: rax rdx rcx rbx rsi rdi rbp rsp r8-r15 rip.
  Dwarf_Word regs[17] = {r->rax, r->rdx, r->rcx, r->rbx, r->rsi, r->rdi, r->rbp, r->rsp, r->r8,
                         r->r9,  r->r10, r->r11, r->r12, r->r13, r->r14, r->r15, r->rip};
  return dwfl_thread_state_registers(thread, 0, 17, regs);
}

}  // namespace

bool NativeUnwinder::read_word(uint64_t addr, uint64_t* out) {
  uint64_t page = addr & ~(kPageSize - 1);
  uint64_t in_page = addr - page;
  if (in_page + sizeof(uint64_t) > kPageSize) {  // straddles two pages
    uint64_t lo = 0, hi = 0;
    size_t first = kPageSize - in_page;
    if (!read_word(page + kPageSize - 8, &lo) || !read_word(page + kPageSize, &hi)) return false;
    uint8_t bytes[16];
    memcpy(bytes, &lo, 8);
    memcpy(bytes + 8, &hi, 8);
    memcpy(out, bytes + (8 - first), 8);
    return true;
  }
  auto it = pages_.find(page);
  if (it == pages_.end()) {
    std::vector<uint8_t> bytes(kPageSize);
    iovec local{bytes.data(), kPageSize};
    iovec remote{reinterpret_cast<void*>(page), kPageSize};
    if (process_vm_readv(pid_, &local, 1, &remote, 1, 0) != static_cast<ssize_t>(kPageSize)) {
      bytes.clear();  // unreadable: remember that too
    }
    it = pages_.emplace(page, std::move(bytes)).first;
  }
  if (it->second.empty()) return false;
  memcpy(out, it->second.data() + in_page, sizeof(uint64_t));
  return true;
}

bool NativeUnwinder::memory_read_cb(Dwfl*, uint64_t addr, uint64_t* result, void* arg) {
  return static_cast<NativeUnwinder*>(arg)->read_word(addr, result);
}

int NativeUnwinder::next_thread_cb(Dwfl*, void* arg, void** thread_arg) {
  auto* self = static_cast<NativeUnwinder*>(arg);
  // *thread_arg points at the previous thread's registers (or is null).
  pid_t prev = 0;
  if (*thread_arg) {
    for (auto& [tid, regs] : self->regs_)
      if (&regs == *thread_arg) prev = tid;
  }
  pid_t next = next_tid_after(self->regs_, prev);
  if (next == 0) return 0;
  *thread_arg = &self->regs_[next];
  return next;
}

bool NativeUnwinder::get_thread_cb(Dwfl*, pid_t tid, void* arg, void** thread_arg) {
  auto* self = static_cast<NativeUnwinder*>(arg);
  auto it = self->regs_.find(tid);
  if (it == self->regs_.end()) return false;
  *thread_arg = &it->second;
  return true;
}

std::unique_ptr<NativeUnwinder> NativeUnwinder::create(pid_t pid, std::string* error) {
  std::unique_ptr<NativeUnwinder> u(new NativeUnwinder());
  u->pid_ = pid;
  u->dwfl_ = dwfl_begin(&kProcCallbacks);
  if (!u->dwfl_) {
    *error = std::string("dwfl_begin failed: ") + dwfl_errmsg(-1);
    return nullptr;
  }
  dwfl_report_begin(u->dwfl_);
  int rc = dwfl_linux_proc_report(u->dwfl_, pid);
  dwfl_report_end(u->dwfl_, nullptr, nullptr);
  if (rc != 0) {
    *error = "cannot read the modules of " + std::to_string(pid) + ": " +
             (rc > 0 ? strerror(rc) : dwfl_errmsg(-1));
    return nullptr;
  }
  return u;
}

NativeUnwinder::~NativeUnwinder() {
  if (dwfl_) dwfl_end(dwfl_);
}

bool NativeUnwinder::set_threads(const std::map<pid_t, user_regs_struct>& regs,
                                 std::string* error) {
  static const Dwfl_Thread_Callbacks kThreadCallbacks = {
      next_thread_cb, get_thread_cb, memory_read_cb, set_initial_registers_cb, nullptr, nullptr,
  };
  regs_ = regs;
  if (!dwfl_attach_state(dwfl_, nullptr, pid_, &kThreadCallbacks, this)) {
    *error = std::string("dwfl_attach_state failed: ") + dwfl_errmsg(-1);
    return false;
  }
  return true;
}

bool NativeUnwinder::unwind(pid_t tid, std::vector<RawFrame>* frames, std::string* error,
                            size_t max_frames) {
  struct Ctx {
    std::vector<RawFrame>* frames;
    size_t max;
  } ctx{frames, max_frames};
  frames->clear();
  int rc = dwfl_getthread_frames(
      dwfl_, tid,
      [](Dwfl_Frame* state, void* arg) -> int {
        auto* c = static_cast<Ctx*>(arg);
        Dwarf_Addr pc = 0;
        bool activation = false;
        if (!dwfl_frame_pc(state, &pc, &activation)) return DWARF_CB_ABORT;
        // Guard against a corrupt stack looping on itself.
        if (!c->frames->empty() && c->frames->size() > 2 && pc == c->frames->back().pc &&
            pc == (*c->frames)[c->frames->size() - 2].pc)
          return DWARF_CB_ABORT;
        c->frames->push_back({pc, activation});
        return c->frames->size() >= c->max ? DWARF_CB_ABORT : DWARF_CB_OK;
      },
      &ctx);
  if (frames->empty()) {
    *error = "cannot unwind thread " + std::to_string(tid) + ": " +
             (rc != 0 ? dwfl_errmsg(-1) : "no frame");
    return false;
  }
  return true;
}

const std::vector<NativeFrame>& NativeUnwinder::symbolize_pc(uint64_t pc, bool activation) {
  uint64_t key = pc * 2 + (activation ? 1 : 0);
  auto cached = symbol_cache_.find(key);
  if (cached != symbol_cache_.end()) return cached->second;

  // A return address points after the call: look up pc-1 so the call's own
  // line (and inline scope) is found, not the next statement's.
  uint64_t lookup = activation ? pc : pc - 1;
  NativeFrame outer;
  outer.pc = pc;
  std::vector<NativeFrame> result;
  Dwfl_Module* mod = dwfl_addrmodule(dwfl_, lookup);
  if (!mod) {
    result.push_back(outer);
    return symbol_cache_.emplace(key, std::move(result)).first->second;
  }
  Dwarf_Addr start = 0;
  const char* mainfile = nullptr;
  const char* modname =
      dwfl_module_info(mod, nullptr, &start, nullptr, nullptr, nullptr, &mainfile, nullptr);
  outer.module = mainfile ? mainfile : (modname ? modname : "");
  outer.offset = pc - start;
  GElf_Off sym_off = 0;
  GElf_Sym sym;
  const char* sym_name =
      dwfl_module_addrinfo(mod, lookup, &sym_off, &sym, nullptr, nullptr, nullptr);
  if (sym_name) outer.func = demangle(sym_name);

  // Innermost source location.
  std::string src_file;
  int src_line = 0;
  if (Dwfl_Line* line = dwfl_module_getsrc(mod, lookup)) {
    int lineno = 0;
    const char* f = dwfl_lineinfo(line, nullptr, &lineno, nullptr, nullptr, nullptr);
    if (f) src_file = f;
    src_line = lineno;
  }

  // Inlined scopes, innermost first, up to the physical subprogram.
  Dwarf_Addr bias = 0;
  Dwarf_Die* cudie = dwfl_module_addrdie(mod, lookup, &bias);
  Dwarf_Die* scopes = nullptr;
  int nscopes = cudie ? dwarf_getscopes(cudie, lookup - bias, &scopes) : 0;
  std::string file = src_file;
  int line = src_line;
  for (int i = 0; i < nscopes; ++i) {
    int tag = dwarf_tag(&scopes[i]);
    if (tag == DW_TAG_subprogram) break;
    if (tag != DW_TAG_inlined_subroutine) continue;
    NativeFrame f = outer;
    f.func = die_name(&scopes[i]);
    f.file = file;
    f.line = line;
    f.inlined = true;
    result.push_back(std::move(f));
    call_site(cudie, &scopes[i], &file, &line);
  }
  free(scopes);
  outer.file = file;
  outer.line = line;
  result.push_back(std::move(outer));
  return symbol_cache_.emplace(key, std::move(result)).first->second;
}

std::vector<NativeFrame> NativeUnwinder::symbolize(const std::vector<RawFrame>& frames) {
  std::vector<NativeFrame> out;
  for (const auto& raw : frames) {
    const auto& sym = symbolize_pc(raw.pc, raw.activation);
    out.insert(out.end(), sym.begin(), sym.end());
  }
  return out;
}

}  // namespace xpu_timer::stack
