// Names for the frames of a crash report, after the fact, from the files of
// the modules: the handler could only read exported (.dynsym) names from
// memory, so static functions come back nameless. Reads the ELF .symtab (or
// .dynsym) of the module file, bounds-checked (the file is not trusted to be
// well formed), and demangles C++ names. A frame no table names keeps its
// module, offset and the module's GNU build-id, so that it can be resolved
// later where debug info exists (docs/usage.md "Crashes"). Asio thread only (holds a cache).
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <string>

#include "supervisor/ranks/crash_message.h"

namespace xpu_timer::supervisor {

// "_ZN3foo3barEv" -> "foo::bar()"; anything else unchanged.
std::string demangle(const std::string& name);

// The best name of a frame for people: its function, else "libc.so.6+0x29d90"
// (module basename and the offset addr2line takes), else "??" (no module).
std::string frame_label(const NativeFrame& f);

class CrashSymbolizer {
 public:
  CrashSymbolizer();
  ~CrashSymbolizer();
  CrashSymbolizer(const CrashSymbolizer&) = delete;
  CrashSymbolizer& operator=(const CrashSymbolizer&) = delete;

  // Fills in missing names from the module files (.symtab, else .dynsym),
  // each frame's module build-id and name source, demangles all names.
  void symbolize(std::vector<NativeFrame>* frames);

 private:
  class ElfSymbols;
  const ElfSymbols* load(const std::string& path);
  std::map<std::string, std::unique_ptr<ElfSymbols>> cache_;  // null entry: unreadable
};

}  // namespace xpu_timer::supervisor
