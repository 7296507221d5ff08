// Finding the real cuBLAS / cuBLASLt / NCCL / CUDA runtime functions behind
// our hooks.
//
// dlsym(RTLD_NEXT) is not enough: PyTorch loads these libraries with
// RTLD_LOCAL, so they are not in the global scope and RTLD_NEXT returns NULL
// (measured on the GPU machine; calling that NULL killed the rank). We walk
// the loaded modules (dl_iterate_phdr) for the library by file name, open it
// with RTLD_NOLOAD and look the symbol up in it (dlvsym with the library's
// version tag, then dlsym); RTLD_NEXT is only the last resort. A result that
// points into our own library is rejected, so a hook can never call itself.
//
// Threads: any. Resolution takes the dynamic loader's locks, so it runs once
// per symbol (RealFunction caches it) and never from the Poller's hot loop.
#pragma once

#include <atomic>
#include <cstdint>

namespace xpu_timer::inject {

enum class RealLib : uint8_t { kCudart = 0, kCublas = 1, kCublasLt = 2, kNccl = 3 };

// "libcublas.so" matches "libcublas.so", "libcublas.so.13", "libcublas.so.13.1.0.3"
// but not "libcublasLt.so.13". Exposed for tests.
bool module_basename_matches(const char* basename, RealLib lib);

// The real `name` from the loaded `lib`; nullptr when it cannot be found.
void* resolve_real(RealLib lib, const char* name);

// True when `addr` lies in this library (libxpu_timer_inject.so).
bool address_is_ours(const void* addr);

// One real function, resolved on first use and cached. Constant-initialisable
// so instances can be namespace-scope statics used before constructors run.
template <typename Fn>
class RealFunction {
 public:
  constexpr RealFunction(RealLib lib, const char* name) : lib_(lib), name_(name) {}

  // nullptr when the function cannot be found; the caller then returns an
  // error status instead of calling through (logged once here).
  Fn get() {
    void* p = ptr_.load(std::memory_order_acquire);
    if (p == nullptr) {
      p = resolve_real(lib_, name_);
      if (p != nullptr) {
        ptr_.store(p, std::memory_order_release);
      } else if (!warned_.exchange(true)) {
        report_unresolved(name_);
      }
    }
    return reinterpret_cast<Fn>(p);
  }
  const char* name() const { return name_; }

 private:
  static void report_unresolved(const char* name);

  RealLib lib_;
  const char* name_;
  std::atomic<void*> ptr_{nullptr};
  std::atomic<bool> warned_{false};
};

void log_unresolved_function(const char* name);

template <typename Fn>
void RealFunction<Fn>::report_unresolved(const char* name) {
  log_unresolved_function(name);
}

}  // namespace xpu_timer::inject
