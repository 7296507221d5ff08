// Symbol lookup in one ELF file on disk with libelf (.symtab and .dynsym),
// used to find the CPython runtime (_PyRuntime, Py_Version) before the target
// is stopped. Owns the fd and the Elf handle (RAII); single-threaded use.
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <string>

#include "common/unique_fd.h"

typedef struct Elf Elf;

namespace xpu_timer::stack {

class ElfSymbols {
 public:
  // nullopt (and *error set) if the file cannot be opened or is not ELF.
  static std::unique_ptr<ElfSymbols> open(const std::string& path, std::string* error);
  ~ElfSymbols();
  ElfSymbols(const ElfSymbols&) = delete;
  ElfSymbols& operator=(const ElfSymbols&) = delete;

  // st_value of a defined symbol (not an undefined import).
  std::optional<uint64_t> find(const std::string& name) const;

  // p_vaddr of the first PT_LOAD, rounded down to its page: the load bias of
  // the file is (start of its offset-0 mapping) - this.
  uint64_t first_load_vaddr() const { return first_load_vaddr_; }

  // Finds a NUL-delimited string in .rodata that starts with prefix and then
  // has only digits and dots ("3.9." -> "3.9.18"); used for PY_VERSION.
  std::optional<std::string> find_version_string(const std::string& prefix) const;

 private:
  ElfSymbols() = default;
  UniqueFd fd_;  // declared before elf_: closed after elf_end()
  Elf* elf_ = nullptr;
  uint64_t first_load_vaddr_ = 0;
};

}  // namespace xpu_timer::stack
