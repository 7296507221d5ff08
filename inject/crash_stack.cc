#include "inject/crash_stack.h"

#include <elf.h>
#include <link.h>
#include <ucontext.h>
#include <unwind.h>

#include <cstdint>
#include <cstring>

namespace xpu_timer::inject {
namespace {

// Our handler and the unwinder add a few frames above the faulting one.
constexpr int kMaxRawFrames = proto::kCrashMaxFrames + 24;

struct RawStack {
  uintptr_t pc[kMaxRawFrames];
  bool exact[kMaxRawFrames];  // pc is the interrupted instruction, not a return address
  int n = 0;
  bool truncated = false;
};

_Unwind_Reason_Code collect_frame(_Unwind_Context* ctx, void* arg) {
  auto* raw = static_cast<RawStack*>(arg);
  int before_insn = 0;
  const uintptr_t pc = _Unwind_GetIPInfo(ctx, &before_insn);
  if (pc == 0) return _URC_END_OF_STACK;
  if (raw->n >= kMaxRawFrames) {
    raw->truncated = true;
    return _URC_END_OF_STACK;
  }
  raw->pc[raw->n] = pc;
  raw->exact[raw->n] = before_insn != 0;
  ++raw->n;
  return _URC_NO_REASON;
}

uintptr_t interrupted_pc(void* ucontext) {
  if (ucontext == nullptr) return 0;
  const auto* uc = static_cast<const ucontext_t*>(ucontext);
#if defined(__x86_64__)
  return static_cast<uintptr_t>(uc->uc_mcontext.gregs[REG_RIP]);
#elif defined(__aarch64__)
  return static_cast<uintptr_t>(uc->uc_mcontext.pc);
#else
  (void)uc;
  return 0;
#endif
}

void copy_bounded(char* dst, size_t cap, const char* src, size_t src_max) {
  size_t i = 0;
  for (; i + 1 < cap && i < src_max && src[i] != '\0'; ++i) dst[i] = src[i];
  dst[i] = '\0';
}

// Relocated by ld.so on most targets; the vDSO's entries are not.
uintptr_t dyn_ptr(ElfW(Addr) value, uintptr_t bias) {
  return value < bias ? value + bias : value;
}

size_t gnu_hash_symbol_count(const uint32_t* h) {
  const uint32_t nbuckets = h[0];
  const uint32_t symoffset = h[1];
  const uint32_t bloom_size = h[2];
  const auto* bloom = reinterpret_cast<const ElfW(Addr)*>(h + 4);
  const auto* buckets = reinterpret_cast<const uint32_t*>(bloom + bloom_size);
  const uint32_t* chain = buckets + nbuckets;
  uint32_t last = 0;
  for (uint32_t b = 0; b < nbuckets; ++b) {
    if (buckets[b] > last) last = buckets[b];
  }
  if (last < symoffset) return symoffset;
  while ((chain[last - symoffset] & 1) == 0) ++last;
  return last + 1;
}

struct DynSymbols {
  const ElfW(Sym)* symtab = nullptr;
  const char* strtab = nullptr;
  size_t strsz = 0;
  size_t count = 0;
};

DynSymbols dynamic_symbols(const dl_phdr_info* info) {
  DynSymbols out;
  const ElfW(Dyn)* dyn = nullptr;
  for (int i = 0; i < info->dlpi_phnum; ++i) {
    if (info->dlpi_phdr[i].p_type == PT_DYNAMIC) {
      dyn = reinterpret_cast<const ElfW(Dyn)*>(info->dlpi_addr + info->dlpi_phdr[i].p_vaddr);
    }
  }
  if (dyn == nullptr) return out;
  const uintptr_t bias = info->dlpi_addr;
  const uint32_t* sysv_hash = nullptr;
  const uint32_t* gnu_hash = nullptr;
  for (; dyn->d_tag != DT_NULL; ++dyn) {
    switch (dyn->d_tag) {
      case DT_SYMTAB:
        out.symtab = reinterpret_cast<const ElfW(Sym)*>(dyn_ptr(dyn->d_un.d_ptr, bias));
        break;
      case DT_STRTAB:
        out.strtab = reinterpret_cast<const char*>(dyn_ptr(dyn->d_un.d_ptr, bias));
        break;
      case DT_STRSZ:
        out.strsz = dyn->d_un.d_val;
        break;
      case DT_HASH:
        sysv_hash = reinterpret_cast<const uint32_t*>(dyn_ptr(dyn->d_un.d_ptr, bias));
        break;
      case DT_GNU_HASH:
        gnu_hash = reinterpret_cast<const uint32_t*>(dyn_ptr(dyn->d_un.d_ptr, bias));
        break;
      default:
        break;
    }
  }
  if (out.symtab == nullptr || out.strtab == nullptr) return DynSymbols{};
  if (sysv_hash != nullptr) {
    out.count = sysv_hash[1];  // nchain == number of symbols
  } else if (gnu_hash != nullptr) {
    out.count = gnu_hash_symbol_count(gnu_hash);
  }
  return out;
}

void name_frame(const DynSymbols& syms, uintptr_t bias, uintptr_t addr, proto::CrashFrame* f) {
  for (size_t i = 0; i < syms.count; ++i) {
    const ElfW(Sym)& s = syms.symtab[i];
    const int type = ELF64_ST_TYPE(s.st_info);
    if ((type != STT_FUNC && type != STT_GNU_IFUNC) || s.st_shndx == SHN_UNDEF || s.st_size == 0) {
      continue;
    }
    const uintptr_t start = bias + s.st_value;
    if (addr < start || addr >= start + s.st_size || s.st_name >= syms.strsz) continue;
    copy_bounded(f->function, sizeof(f->function), syms.strtab + s.st_name,
                 syms.strsz - s.st_name);
    f->func_offset = addr - start;
    return;
  }
}

struct ResolveState {
  proto::CrashReportMsg* msg;
  proto::CrashFrame* const* frames;  // the frames to name: the stack's, then the caller
  const uintptr_t* lookup;  // per frame: the address to attribute (pc - 1 for return addresses)
  uint32_t count;
  const char* exe_path;
};

bool in_object(const dl_phdr_info* info, uintptr_t addr) {
  for (int i = 0; i < info->dlpi_phnum; ++i) {
    const ElfW(Phdr)& p = info->dlpi_phdr[i];
    if (p.p_type != PT_LOAD) continue;
    const uintptr_t start = info->dlpi_addr + p.p_vaddr;
    if (addr >= start && addr - start < p.p_memsz) return true;
  }
  return false;
}

int resolve_object(dl_phdr_info* info, size_t, void* arg) {
  auto* st = static_cast<ResolveState*>(arg);
  proto::CrashReportMsg* msg = st->msg;
  int module = -2;  // -2: not yet added for this object
  DynSymbols syms;
  for (uint32_t i = 0; i < st->count; ++i) {
    proto::CrashFrame& f = *st->frames[i];
    if (f.module != -1 || !in_object(info, st->lookup[i])) continue;
    if (module == -2) {
      if (msg->nmodules < static_cast<uint32_t>(proto::kCrashMaxModules)) {
        module = static_cast<int>(msg->nmodules++);
        proto::CrashModule& m = msg->modules[module];
        m.load_bias = info->dlpi_addr;
        const char* name = info->dlpi_name;
        if (name == nullptr || name[0] == '\0') name = st->exe_path;
        copy_bounded(m.path, sizeof(m.path), name, sizeof(m.path));
      } else {
        module = -3;  // no room: frames keep their offsets, not their module
        msg->flags |= proto::kCrashFlagModulesTruncated;
      }
      syms = dynamic_symbols(info);
    }
    f.module = module >= 0 ? module : -3;
    f.module_offset = st->lookup[i] - info->dlpi_addr;
    name_frame(syms, info->dlpi_addr, st->lookup[i], &f);
  }
  return 0;
}

}  // namespace

void capture_crash_stack(void* ucontext, uintptr_t caller_pc, const char* exe_path,
                         proto::CrashReportMsg* msg) {
  static RawStack raw;  // one capture per process (the handler reports once): not on the alt stack
  raw.n = 0;
  raw.truncated = false;
  _Unwind_Backtrace(&collect_frame, &raw);

  // Skip our handler's frames: start at the frame the signal interrupted.
  const uintptr_t fault_pc = interrupted_pc(ucontext);
  int first = -1;
  for (int i = 0; i < raw.n && first < 0; ++i) {
    if (raw.exact[i] && (fault_pc == 0 || raw.pc[i] == fault_pc)) first = i;
  }
  if (first < 0) {
    msg->flags |= proto::kCrashFlagNoFaultFrame;
    first = 0;
  }
  static uintptr_t lookup[proto::kCrashMaxFrames + 1];
  static proto::CrashFrame* named[proto::kCrashMaxFrames + 1];
  uint32_t n = 0;
  for (int i = first; i < raw.n; ++i) {
    if (n == static_cast<uint32_t>(proto::kCrashMaxFrames)) {
      msg->flags |= proto::kCrashFlagFramesTruncated;
      break;
    }
    proto::CrashFrame& f = msg->frames[n];
    f.pc = raw.pc[i];
    f.module = -1;
    f.module_offset = 0;
    f.func_offset = 0;
    f.function[0] = '\0';
    // A return address points after the call: attribute it to the call.
    lookup[n] = raw.exact[i] ? raw.pc[i] : raw.pc[i] - 1;
    named[n] = &f;
    ++n;
  }
  if (raw.truncated) msg->flags |= proto::kCrashFlagFramesTruncated;
  msg->nframes = n;
  msg->nmodules = 0;
  uint32_t count = n;
  std::memset(&msg->caller, 0, sizeof(msg->caller));
  if (caller_pc != 0) {
    msg->caller.pc = caller_pc;
    msg->caller.module = -1;
    lookup[count] = caller_pc;
    named[count++] = &msg->caller;
  }
  ResolveState st{msg, named, lookup, count, exe_path};
  dl_iterate_phdr(&resolve_object, &st);
  for (uint32_t i = 0; i < count; ++i) {
    if (named[i]->module == -3) named[i]->module = -1;
  }
}

}  // namespace xpu_timer::inject
