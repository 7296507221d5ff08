// Device, version and error entry points of the simulated libcudart.so.13.
#include <cuda_runtime_api.h>
#include <string.h>

#include "common/env_config.h"
#include "tests/simgpu/error_state.h"
#include "tests/simgpu/sim_ext.h"
#include "tests/simgpu/stream.h"

namespace sim = xpu_timer::simgpu;

namespace {

// XPU_TIMER_SIM_DEVICE_COUNT, else LOCAL_WORLD_SIZE (each local rank calls
// cudaSetDevice(LOCAL_RANK), as under torchrun), else 1.
int device_count() {
  static const int count = [] {
    long n = xpu_timer::env_long("XPU_TIMER_SIM_DEVICE_COUNT", 0);
    if (n <= 0) n = xpu_timer::env_long("LOCAL_WORLD_SIZE", 1);
    return static_cast<int>(n > 0 && n <= 1024 ? n : 1);
  }();
  return count;
}

thread_local int t_device = 0;

}  // namespace

extern "C" {

cudaError_t cudaGetDeviceCount(int* count) {
  XPU_SIM_ENTRY();
  if (count == nullptr) return sim::record_error(cudaErrorInvalidValue);
  *count = device_count();
  return cudaSuccess;
}

cudaError_t cudaGetDevice(int* device) {
  XPU_SIM_ENTRY();
  if (device == nullptr) return sim::record_error(cudaErrorInvalidValue);
  *device = t_device;
  return cudaSuccess;
}

cudaError_t cudaSetDevice(int device) {
  XPU_SIM_ENTRY();
  if (device < 0 || device >= device_count()) return sim::record_error(cudaErrorInvalidDevice);
  t_device = device;
  return cudaSuccess;
}

cudaError_t cudaGetDeviceProperties(struct cudaDeviceProp* prop, int device) {
  XPU_SIM_ENTRY();
  if (prop == nullptr) return sim::record_error(cudaErrorInvalidValue);
  if (device < 0 || device >= device_count()) return sim::record_error(cudaErrorInvalidDevice);
  memset(prop, 0, sizeof(*prop));
  snprintf(prop->name, sizeof(prop->name), "xpu-timer simulated GPU %d", device);
  prop->totalGlobalMem = 80ull << 30;
  prop->major = 9;
  prop->minor = 0;
  prop->multiProcessorCount = 132;
  prop->warpSize = 32;
  prop->pciDeviceID = device;
  return cudaSuccess;
}

cudaError_t cudaDeviceSynchronize(void) {
  XPU_SIM_ENTRY();
  for (const auto& stream : sim::StreamRegistry::instance().all()) stream->wait_idle();
  return cudaSuccess;
}

cudaError_t cudaRuntimeGetVersion(int* version) {
  XPU_SIM_ENTRY();
  if (version == nullptr) return sim::record_error(cudaErrorInvalidValue);
  *version = CUDART_VERSION;
  return cudaSuccess;
}

cudaError_t cudaDriverGetVersion(int* version) {
  XPU_SIM_ENTRY();
  if (version == nullptr) return sim::record_error(cudaErrorInvalidValue);
  *version = CUDART_VERSION;
  return cudaSuccess;
}

cudaError_t cudaGetLastError(void) {
  XPU_SIM_ENTRY();
  return sim::take_last_error();
}
cudaError_t cudaPeekAtLastError(void) {
  XPU_SIM_ENTRY();
  return sim::peek_last_error();
}
const char* cudaGetErrorName(cudaError_t error) {
  XPU_SIM_ENTRY();
  return sim::error_name(error);
}
const char* cudaGetErrorString(cudaError_t error) {
  XPU_SIM_ENTRY();
  return sim::error_string(error);
}

}  // extern "C"
