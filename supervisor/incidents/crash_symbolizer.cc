#include "supervisor/incidents/crash_symbolizer.h"

#include <cxxabi.h>
#include <elf.h>
#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <vector>

#include "common/unique_fd.h"

namespace xpu_timer::supervisor {

std::string demangle(const std::string& name) {
  if (name.rfind("_Z", 0) != 0) return name;
  int status = -1;
  char* out = abi::__cxa_demangle(name.c_str(), nullptr, nullptr, &status);
  std::string result = status == 0 && out != nullptr ? std::string(out) : name;
  std::free(out);
  return result;
}

// The function symbols of one ELF64 file, sorted by address.
class CrashSymbolizer::ElfSymbols {
 public:
  struct Sym {
    uint64_t start;
    uint64_t size;
    std::string name;
  };

  static std::unique_ptr<ElfSymbols> read(const std::string& path) {
    UniqueFd fd(::open(path.c_str(), O_RDONLY | O_CLOEXEC));
    struct stat st {};
    if (!fd.valid() || ::fstat(fd.get(), &st) != 0 || st.st_size < static_cast<off_t>(sizeof(Elf64_Ehdr))) {
      return nullptr;
    }
    const size_t size = static_cast<size_t>(st.st_size);
    void* map = ::mmap(nullptr, size, PROT_READ, MAP_PRIVATE, fd.get(), 0);
    if (map == MAP_FAILED) return nullptr;
    auto out = std::make_unique<ElfSymbols>();
    out->parse(static_cast<const unsigned char*>(map), size);
    ::munmap(map, size);
    return out;
  }

  const std::string& build_id() const { return build_id_; }
  // Which table named the symbols: "symtab", "dynsym" or "" (none).
  const char* table() const { return table_; }

  // Containing symbol of `addr`, or null.
  const Sym* find(uint64_t addr) const {
    auto it = std::upper_bound(syms_.begin(), syms_.end(), addr,
                               [](uint64_t a, const Sym& s) { return a < s.start; });
    if (it == syms_.begin()) return nullptr;
    --it;
    return addr < it->start + std::max<uint64_t>(it->size, 1) ? &*it : nullptr;
  }

 private:
  void parse(const unsigned char* base, size_t size) {
    Elf64_Ehdr eh;
    memcpy(&eh, base, sizeof(eh));
    if (memcmp(eh.e_ident, ELFMAG, SELFMAG) != 0 || eh.e_ident[EI_CLASS] != ELFCLASS64) return;
    // No section headers: nothing to read (and no copy from an empty vector).
    if (eh.e_shentsize != sizeof(Elf64_Shdr) || eh.e_shoff == 0 || eh.e_shnum == 0 ||
        eh.e_shoff > size || eh.e_shnum > (size - eh.e_shoff) / sizeof(Elf64_Shdr)) {
      return;
    }
    std::vector<Elf64_Shdr> sections(eh.e_shnum);
    memcpy(sections.data(), base + eh.e_shoff, eh.e_shnum * sizeof(Elf64_Shdr));
    for (const Elf64_Shdr& sh : sections) {
      if (sh.sh_type == SHT_NOTE && build_id_.empty()) read_build_id(base, size, sh);
    }
    // .symtab when present (it has the static functions), else .dynsym.
    for (uint32_t want : {static_cast<uint32_t>(SHT_SYMTAB), static_cast<uint32_t>(SHT_DYNSYM)}) {
      for (const Elf64_Shdr& sh : sections) {
        if (sh.sh_type != want || sh.sh_link >= sections.size()) continue;
        const Elf64_Shdr& strs = sections[sh.sh_link];
        if (sh.sh_offset > size || sh.sh_size > size - sh.sh_offset || strs.sh_offset > size ||
            strs.sh_size > size - strs.sh_offset) {
          continue;
        }
        const char* strtab = reinterpret_cast<const char*>(base + strs.sh_offset);
        const size_t n = sh.sh_size / sizeof(Elf64_Sym);
        for (size_t i = 0; i < n; ++i) {
          Elf64_Sym s;
          memcpy(&s, base + sh.sh_offset + i * sizeof(Elf64_Sym), sizeof(s));
          const int type = ELF64_ST_TYPE(s.st_info);
          if ((type != STT_FUNC && type != STT_GNU_IFUNC) || s.st_shndx == SHN_UNDEF ||
              s.st_name >= strs.sh_size) {
            continue;
          }
          const char* name = strtab + s.st_name;
          const size_t max = strs.sh_size - s.st_name;
          syms_.push_back({s.st_value, s.st_size, std::string(name, strnlen(name, max))});
        }
      }
      if (!syms_.empty()) {
        table_ = want == SHT_SYMTAB ? "symtab" : "dynsym";
        break;
      }
    }
    std::sort(syms_.begin(), syms_.end(),
              [](const Sym& a, const Sym& b) { return a.start < b.start; });
  }

  // NT_GNU_BUILD_ID of a note section, as lower-case hex: what debuginfod
  // and /usr/lib/debug/.build-id/ index the file's debug info by.
  void read_build_id(const unsigned char* base, size_t size, const Elf64_Shdr& sh) {
    if (sh.sh_offset > size || sh.sh_size > size - sh.sh_offset) return;
    size_t at = sh.sh_offset;
    const size_t end = sh.sh_offset + sh.sh_size;
    while (end - at >= sizeof(Elf64_Nhdr)) {
      Elf64_Nhdr nh;
      memcpy(&nh, base + at, sizeof(nh));
      at += sizeof(nh);
      const size_t name = (static_cast<size_t>(nh.n_namesz) + 3) & ~size_t{3};
      const size_t desc = (static_cast<size_t>(nh.n_descsz) + 3) & ~size_t{3};
      if (name > end - at || desc > end - at - name) return;
      if (nh.n_type == NT_GNU_BUILD_ID && nh.n_namesz == 4 && memcmp(base + at, "GNU", 4) == 0 &&
          nh.n_descsz > 0 && nh.n_descsz <= 64) {
        static const char kHex[] = "0123456789abcdef";
        for (size_t i = 0; i < nh.n_descsz; ++i) {
          const unsigned char b = base[at + name + i];
          build_id_ += kHex[b >> 4];
          build_id_ += kHex[b & 15];
        }
        return;
      }
      at += name + desc;
    }
  }

  std::vector<Sym> syms_;
  std::string build_id_;
  const char* table_ = "";
};

CrashSymbolizer::CrashSymbolizer() = default;
CrashSymbolizer::~CrashSymbolizer() = default;

const CrashSymbolizer::ElfSymbols* CrashSymbolizer::load(const std::string& path) {
  auto it = cache_.find(path);
  if (it == cache_.end()) {
    if (cache_.size() > 256) cache_.clear();  // bounded: a report names at most 24 modules
    it = cache_.emplace(path, ElfSymbols::read(path)).first;
  }
  return it->second.get();
}

void CrashSymbolizer::symbolize(std::vector<NativeFrame>* frames) {
  for (NativeFrame& f : *frames) {
    const ElfSymbols* syms = !f.module.empty() && f.module[0] == '/' ? load(f.module) : nullptr;
    if (syms != nullptr) f.build_id = syms->build_id();
    if (!f.function.empty()) {
      f.name_source = "dynsym";  // the handler's: the in-memory .dynsym
    } else if (syms != nullptr) {
      if (const auto* s = syms->find(f.module_offset)) {
        f.function = s->name;
        f.func_offset = f.module_offset - s->start;
        f.name_source = syms->table();
      }
    }
    f.function = demangle(f.function);
  }
}

std::string frame_label(const NativeFrame& f) {
  if (!f.function.empty()) return f.function;
  if (f.module.empty()) return "??";  // a pc in no mapped file (JIT code, a wild jump)
  const size_t slash = f.module.rfind('/');
  char offset[24];
  std::snprintf(offset, sizeof(offset), "+0x%llx",
                static_cast<unsigned long long>(f.module_offset));
  return (slash == std::string::npos ? f.module : f.module.substr(slash + 1)) + offset;
}

}  // namespace xpu_timer::supervisor
