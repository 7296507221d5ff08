// The workload's NVTX calls: a real NVTX v3 client (the header-only library
// from the CUDA toolkit, its loader included), as PyTorch's torch.cuda.nvtx
// and Megatron are. At the first call NVTX loads NVTX_INJECTION64_PATH and
// hands it its function tables; without it every call is a no-op.
#include <nvtx3/nvToolsExt.h>

#include "tests/simgpu/sim_workload.h"

extern "C" {

int sim_nvtx_push(const char* name) { return nvtxRangePushA(name); }

int sim_nvtx_pop(void) { return nvtxRangePop(); }

unsigned long long sim_nvtx_start(const char* name) { return nvtxRangeStartA(name); }

void sim_nvtx_end(unsigned long long id) { nvtxRangeEnd(id); }

int sim_nvtx_domain_push(const char* domain, const char* name) {
  // Domains are created once per name, as a library does (NCCL: "NCCL").
  static nvtxDomainHandle_t handle = nullptr;
  static const char* handle_name = nullptr;
  if (handle == nullptr || handle_name != domain) {
    handle = nvtxDomainCreateA(domain);
    handle_name = domain;
  }
  nvtxEventAttributes_t a{};
  a.version = NVTX_VERSION;
  a.size = NVTX_EVENT_ATTRIB_STRUCT_SIZE;
  a.messageType = NVTX_MESSAGE_TYPE_REGISTERED;
  a.message.registered = nvtxDomainRegisterStringA(handle, name);
  const int level = nvtxDomainRangePushEx(handle, &a);
  nvtxDomainRangePop(handle);
  return level;
}

}  // extern "C"
