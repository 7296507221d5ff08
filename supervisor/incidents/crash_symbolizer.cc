#include "supervisor/incidents/crash_symbolizer.h"

#include <cxxabi.h>
#include <elf.h>
#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
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
    if (eh.e_shentsize != sizeof(Elf64_Shdr) || eh.e_shoff == 0 ||
        eh.e_shoff > size || eh.e_shnum > (size - eh.e_shoff) / sizeof(Elf64_Shdr)) {
      return;
    }
    std::vector<Elf64_Shdr> sections(eh.e_shnum);
    memcpy(sections.data(), base + eh.e_shoff, eh.e_shnum * sizeof(Elf64_Shdr));
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
      if (!syms_.empty()) break;
    }
    std::sort(syms_.begin(), syms_.end(),
              [](const Sym& a, const Sym& b) { return a.start < b.start; });
  }

  std::vector<Sym> syms_;
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
    if (f.function.empty() && !f.module.empty() && f.module[0] == '/') {
      if (const ElfSymbols* syms = load(f.module)) {
        if (const auto* s = syms->find(f.module_offset)) {
          f.function = s->name;
          f.func_offset = f.module_offset - s->start;
        }
      }
    }
    f.function = demangle(f.function);
  }
}

}  // namespace xpu_timer::supervisor
