#include "inject/real_functions.h"

#include <dlfcn.h>
#include <gtest/gtest.h>

#include <string>

namespace xpu_timer::inject {
namespace {

TEST(RealFunctions, ModuleNamesMatchTheirLibraryOnly) {
  EXPECT_TRUE(module_basename_matches("libcublas.so", RealLib::kCublas));
  EXPECT_TRUE(module_basename_matches("libcublas.so.13", RealLib::kCublas));
  EXPECT_TRUE(module_basename_matches("libcublas.so.13.1.0.3", RealLib::kCublas));
  EXPECT_FALSE(module_basename_matches("libcublasLt.so.13", RealLib::kCublas));
  EXPECT_TRUE(module_basename_matches("libcublasLt.so.13", RealLib::kCublasLt));
  EXPECT_FALSE(module_basename_matches("libcublas.so.13", RealLib::kCublasLt));
  EXPECT_TRUE(module_basename_matches("libnccl.so.2", RealLib::kNccl));
  EXPECT_FALSE(module_basename_matches("libnccl-net.so", RealLib::kNccl));
  EXPECT_TRUE(module_basename_matches("libcudart.so.13", RealLib::kCudart));
  EXPECT_FALSE(module_basename_matches("libcudart_static.a", RealLib::kCudart));
  EXPECT_FALSE(module_basename_matches("libcudart.sox", RealLib::kCudart));
}

// The situation of PyTorch: the libraries are loaded RTLD_LOCAL, so only the
// module walk finds them; RTLD_NEXT does not.
TEST(RealFunctions, ResolvesFromLibrariesLoadedLocallyWhereRtldNextFails) {
  const std::string dir = XPU_FAKE_LIB_DIR;
  // Lt first, so that a prefix match on "libcublas" would find it first.
  void* lt = dlopen((dir + "/libcublasLt.so.13").c_str(), RTLD_NOW | RTLD_LOCAL);
  void* blas = dlopen((dir + "/libcublas.so.13").c_str(), RTLD_NOW | RTLD_LOCAL);
  ASSERT_NE(lt, nullptr) << dlerror();
  ASSERT_NE(blas, nullptr) << dlerror();
  EXPECT_EQ(dlsym(RTLD_NEXT, "xpu_probe_which"), nullptr);
  EXPECT_EQ(dlsym(RTLD_DEFAULT, "xpu_probe_which"), nullptr);

  using Probe = const char* (*)();
  auto from_blas = reinterpret_cast<Probe>(resolve_real(RealLib::kCublas, "xpu_probe_which"));
  auto from_lt = reinterpret_cast<Probe>(resolve_real(RealLib::kCublasLt, "xpu_probe_which"));
  ASSERT_NE(from_blas, nullptr);
  ASSERT_NE(from_lt, nullptr);
  EXPECT_STREQ(from_blas(), "cublas");
  EXPECT_STREQ(from_lt(), "cublasLt");
  EXPECT_EQ(resolve_real(RealLib::kNccl, "xpu_probe_which"), nullptr);
  EXPECT_EQ(resolve_real(RealLib::kCublas, "no_such_function"), nullptr);

  RealFunction<Probe> cached(RealLib::kCublas, "xpu_probe_which");
  ASSERT_NE(cached.get(), nullptr);
  EXPECT_STREQ(cached.get()(), "cublas");
}

TEST(RealFunctions, AddressIsOursOnlyForOurCode) {
  // In the test binary "ours" is the executable that contains this code.
  EXPECT_TRUE(address_is_ours(reinterpret_cast<const void*>(&module_basename_matches)));
  // libc's own function, looked up in libc: `&dlopen` may name a sanitizer's
  // interceptor linked into this executable (clang's static ASan runtime).
  void* libc = dlopen("libc.so.6", RTLD_NOLOAD | RTLD_LAZY);
  ASSERT_NE(libc, nullptr);
  void* libc_dlopen = dlsym(libc, "dlopen");
  ASSERT_NE(libc_dlopen, nullptr);
  EXPECT_FALSE(address_is_ours(libc_dlopen));
}

}  // namespace
}  // namespace xpu_timer::inject
