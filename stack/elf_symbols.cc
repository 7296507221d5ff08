#include "stack/elf_symbols.h"

#include <fcntl.h>
#include <gelf.h>
#include <libelf.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

namespace xpu_timer::stack {

std::unique_ptr<ElfSymbols> ElfSymbols::open(const std::string& path, std::string* error) {
  elf_version(EV_CURRENT);
  std::unique_ptr<ElfSymbols> s(new ElfSymbols());
  s->fd_.reset(::open(path.c_str(), O_RDONLY | O_CLOEXEC));
  if (!s->fd_.valid()) {
    if (error) *error = "cannot open " + path + ": " + strerror(errno);
    return nullptr;
  }
  s->elf_ = elf_begin(s->fd_.get(), ELF_C_READ_MMAP, nullptr);
  if (!s->elf_ || elf_kind(s->elf_) != ELF_K_ELF) {
    if (error) *error = path + " is not an ELF file";
    return nullptr;
  }
  size_t nphdr = 0;
  if (elf_getphdrnum(s->elf_, &nphdr) == 0) {
    for (size_t i = 0; i < nphdr; ++i) {
      GElf_Phdr ph;
      if (gelf_getphdr(s->elf_, static_cast<int>(i), &ph) && ph.p_type == PT_LOAD) {
        s->first_load_vaddr_ = ph.p_vaddr & ~uint64_t{0xfff};
        break;
      }
    }
  }
  return s;
}

ElfSymbols::~ElfSymbols() {
  if (elf_) elf_end(elf_);  // fd_ closes after
}

std::optional<uint64_t> ElfSymbols::find(const std::string& name) const {
  // .symtab first (it is a superset when present), then .dynsym.
  for (Elf64_Word wanted : {SHT_SYMTAB, SHT_DYNSYM}) {
    Elf_Scn* scn = nullptr;
    while ((scn = elf_nextscn(elf_, scn)) != nullptr) {
      GElf_Shdr sh;
      if (!gelf_getshdr(scn, &sh) || sh.sh_type != wanted || sh.sh_entsize == 0) continue;
      Elf_Data* data = elf_getdata(scn, nullptr);
      if (!data) continue;
      size_t count = sh.sh_size / sh.sh_entsize;
      for (size_t i = 0; i < count; ++i) {
        GElf_Sym sym;
        if (!gelf_getsym(data, static_cast<int>(i), &sym)) break;
        if (sym.st_shndx == SHN_UNDEF || sym.st_value == 0) continue;
        const char* n = elf_strptr(elf_, sh.sh_link, sym.st_name);
        if (n && name == n) return sym.st_value;
      }
    }
  }
  return std::nullopt;
}

std::optional<std::string> ElfSymbols::find_version_string(const std::string& prefix) const {
  size_t shstrndx = 0;
  if (elf_getshdrstrndx(elf_, &shstrndx) != 0) return std::nullopt;
  Elf_Scn* scn = nullptr;
  while ((scn = elf_nextscn(elf_, scn)) != nullptr) {
    GElf_Shdr sh;
    if (!gelf_getshdr(scn, &sh)) continue;
    const char* name = elf_strptr(elf_, shstrndx, sh.sh_name);
    if (!name || strcmp(name, ".rodata") != 0 || sh.sh_type == SHT_NOBITS) continue;
    Elf_Data* data = elf_getdata(scn, nullptr);
    if (!data || !data->d_buf) return std::nullopt;
    const char* p = static_cast<const char*>(data->d_buf);
    size_t n = data->d_size;
    for (size_t i = 0; i + prefix.size() < n; ++i) {
      if ((i > 0 && p[i - 1] != '\0') || memcmp(p + i, prefix.data(), prefix.size()) != 0) continue;
      size_t j = i + prefix.size();
      size_t digits = 0;
      while (j < n && p[j] >= '0' && p[j] <= '9') ++j, ++digits;
      if (digits > 0 && digits <= 3 && j < n && p[j] == '\0') return std::string(p + i, j - i);
    }
  }
  return std::nullopt;
}

}  // namespace xpu_timer::stack
