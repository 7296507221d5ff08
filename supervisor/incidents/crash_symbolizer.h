// Names for the frames of a crash report, after the fact, from the files of
// the modules: the handler could only read exported (.dynsym) names from
// memory, so static functions come back nameless. Reads the ELF .symtab (or
// .dynsym) of the module file, bounds-checked (the file is not trusted to be
// well formed), and demangles C++ names. Asio thread only (holds a cache).
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <string>

#include "supervisor/ranks/crash_message.h"

namespace xpu_timer::supervisor {

// "_ZN3foo3barEv" -> "foo::bar()"; anything else unchanged.
std::string demangle(const std::string& name);

class CrashSymbolizer {
 public:
  CrashSymbolizer();
  ~CrashSymbolizer();
  CrashSymbolizer(const CrashSymbolizer&) = delete;
  CrashSymbolizer& operator=(const CrashSymbolizer&) = delete;

  // Fills in missing names from the module files, demangles all of them.
  void symbolize(std::vector<NativeFrame>* frames);

 private:
  class ElfSymbols;
  const ElfSymbols* load(const std::string& path);
  std::map<std::string, std::unique_ptr<ElfSymbols>> cache_;  // null entry: unreadable
};

}  // namespace xpu_timer::supervisor
