#include "inject/real_functions.h"

#include <dlfcn.h>
#include <link.h>

#include <cstdio>
#include <cstring>

#include "common/log.h"

namespace xpu_timer::inject {
namespace {

struct LibSpec {
  const char* prefix;           // file name up to and including ".so"
  const char* default_version;  // version tag when the file name has no major
};

// Version tags as the CUDA 13 libraries define them; NCCL is unversioned.
constexpr LibSpec kLibs[] = {
    {"libcudart.so", "libcudart.so.13"},
    {"libcublas.so", "libcublas.so.13"},
    {"libcublasLt.so", "libcublasLt.so.13"},
    {"libnccl.so", nullptr},
};

const LibSpec& spec_of(RealLib lib) { return kLibs[static_cast<int>(lib)]; }

const char* basename_of(const char* path) {
  const char* slash = std::strrchr(path, '/');
  return slash == nullptr ? path : slash + 1;
}

constexpr int kMaxCandidates = 4;
constexpr size_t kMaxPath = 4096;

struct Candidates {
  RealLib lib;
  int count = 0;
  char paths[kMaxCandidates][kMaxPath];
};

// Runs with the loader's lock held: only copy names out, never dlopen here.
int collect_module(struct dl_phdr_info* info, size_t, void* data) {
  auto* c = static_cast<Candidates*>(data);
  if (info->dlpi_name == nullptr || info->dlpi_name[0] == '\0') return 0;
  if (!module_basename_matches(basename_of(info->dlpi_name), c->lib)) return 0;
  if (std::strlen(info->dlpi_name) >= kMaxPath) return 0;
  std::snprintf(c->paths[c->count], kMaxPath, "%s", info->dlpi_name);
  return ++c->count >= kMaxCandidates ? 1 : 0;
}

// "libcublas.so.13.1.0.3" -> "libcublas.so.13" (the version tag of its symbols).
void version_tag_of(const char* basename, const LibSpec& spec, char* out, size_t n) {
  out[0] = '\0';
  const size_t plen = std::strlen(spec.prefix);
  const char* p = basename + plen;
  if (p[0] == '.' && p[1] >= '0' && p[1] <= '9') {
    size_t len = plen + 1;
    while (basename[len] >= '0' && basename[len] <= '9') ++len;
    if (len < n) {
      std::memcpy(out, basename, len);
      out[len] = '\0';
      return;
    }
  }
  if (spec.default_version != nullptr) std::snprintf(out, n, "%s", spec.default_version);
}

void* lookup_in(void* handle, const char* name, const char* version) {
  void* p = nullptr;
  if (version[0] != '\0') p = dlvsym(handle, name, version);
  if (p == nullptr) p = dlsym(handle, name);
  return p;
}

}  // namespace

bool module_basename_matches(const char* basename, RealLib lib) {
  const char* prefix = spec_of(lib).prefix;
  const size_t len = std::strlen(prefix);
  if (std::strncmp(basename, prefix, len) != 0) return false;
  return basename[len] == '\0' || basename[len] == '.';
}

bool address_is_ours(const void* addr) {
  Dl_info mine{}, theirs{};
  if (dladdr(reinterpret_cast<const void*>(&address_is_ours), &mine) == 0) return false;
  if (dladdr(addr, &theirs) == 0) return false;
  return mine.dli_fbase == theirs.dli_fbase;
}

void* resolve_real(RealLib lib, const char* name) {
  Candidates c;
  c.lib = lib;
  dl_iterate_phdr(collect_module, &c);
  for (int i = 0; i < c.count; ++i) {
    // RTLD_NOLOAD: only a library the process already loaded; the handle is
    // kept (never dlclose'd) so the library stays mapped while we hold
    // pointers into it, even for our background thread.
    void* handle = dlopen(c.paths[i], RTLD_NOLOAD | RTLD_LAZY);
    if (handle == nullptr) continue;
    char version[64];
    version_tag_of(basename_of(c.paths[i]), spec_of(lib), version, sizeof(version));
    void* p = lookup_in(handle, name, version);
    if (p != nullptr && !address_is_ours(p)) {
      XPU_TIMER_LOG_DEBUG("resolved %s from %s", name, c.paths[i]);
      return p;
    }
  }
  void* p = dlsym(RTLD_NEXT, name);
  if (p != nullptr && !address_is_ours(p)) {
    XPU_TIMER_LOG_DEBUG("resolved %s through RTLD_NEXT", name);
    return p;
  }
  return nullptr;
}

void log_unresolved_function(const char* name) {
  XPU_TIMER_LOG_ERROR(
      "cannot find the real %s in any loaded library; the call returns an error status", name);
}

}  // namespace xpu_timer::inject
