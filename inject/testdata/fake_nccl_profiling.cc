// A stand-in libnccl.so.2 that drives a profiler plugin the way NCCL does,
// for the profiler-plugin test (the simulated GPU's NCCL loads no plugin):
// ncclCommInitRank dlopens $NCCL_PROFILER_PLUGIN, takes the newest
// ncclProfiler_vN of $FAKE_NCCL_PROFILER_VERSION (default 5) and calls init;
// each collective starts a Group event then a Coll event per member at its
// launch (ncclAllReduce outside a group, the outermost ncclGroupEnd inside
// one), on the calling thread, or on a helper thread when the test asks for
// it (like NCCL's own thread for a non-blocking communicator), honouring the
// activation mask. Under v5 with KernelCh events asked for, a Coll event with
// a handle gets one KernelCh start and stop per channel, with timestamps
// 1000 + channel and 2000 + channel, on a helper thread (NCCL's proxy
// thread). Nothing runs on the stream: the hooks' events complete at once.
// Test infrastructure only.
#include <dlfcn.h>
#include <nccl.h>

#include <cstdlib>
#include <cstring>
#include <string>
#include <thread>
#include <type_traits>
#include <vector>

#include "inject/nccl_profiler_abi.h"

namespace abi = xpu_timer::inject::nccl_abi;

namespace {

struct FakeComm {
  int nranks;
  int rank;
  void* context;
};

struct Launch {
  std::string algo;
  std::string proto;
  int channels;
};

int g_version = 0;
void* g_plugin = nullptr;  // the ncclProfiler_vN object
int g_mask = 0;
int g_group_depth = 0;
std::vector<Launch> g_pending;
Launch g_next{"Ring", "LL128", 8};
bool g_async = false;
FakeComm* g_group_comm = nullptr;

// v1 carries NCCL's enum values.
uint8_t algo_enum(const std::string& a) {
  const char* names[] = {"Tree",     "Ring", "CollNetDirect", "CollNetChain", "NVLS",
                         "NVLSTree", "PAT"};
  for (uint8_t i = 0; i < 7; ++i) {
    if (a == names[i]) return i;
  }
  return 99;
}
uint8_t proto_enum(const std::string& p) { return p == "LL" ? 0 : p == "LL128" ? 1 : 2; }

void emit_kernel_ch(abi::ProfilerV5* prof, FakeComm* comm, void* coll, int channels) {
  for (int c = 0; c < channels; ++c) {
    abi::EventDescrV5 d{};
    d.type = abi::kProfileKernelCh;
    d.parentObj = coll;
    d.rank = comm->rank;
    d.kernelCh.channelId = static_cast<uint8_t>(c);
    d.kernelCh.pTimer = 1000 + static_cast<uint64_t>(c);
    void* h = nullptr;
    prof->startEvent(comm->context, &h, &d);
    if (h == nullptr) continue;
    abi::StateArgsV5 args{};
    args.kernelCh.pTimer = 2000 + static_cast<uint64_t>(c);
    prof->recordEventState(h, abi::kProfilerKernelChStop, &args);
    prof->stopEvent(h);
  }
}

template <typename Profiler, typename Descr>
void emit_with(FakeComm* comm, const std::vector<Launch>& launches, Descr proto_descr) {
  auto* prof = static_cast<Profiler*>(g_plugin);
  Descr group = proto_descr;
  group.type = abi::kProfileGroup;
  void* group_handle = nullptr;
  prof->startEvent(comm->context, &group_handle, &group);
  for (const Launch& l : launches) {
    Descr d = proto_descr;
    d.type = abi::kProfileColl;
    d.parentObj = group_handle;
    d.rank = comm->rank;
    if constexpr (std::is_same_v<Descr, abi::EventDescrV1>) {
      d.coll.algo = algo_enum(l.algo);
      d.coll.proto = proto_enum(l.proto);
      d.coll.nMaxChannels = static_cast<uint8_t>(l.channels);
    } else if constexpr (std::is_same_v<Descr, abi::EventDescrV2> ||
                         std::is_same_v<Descr, abi::EventDescrV3>) {
      d.coll.algo = l.algo.c_str();
      d.coll.proto = l.proto.c_str();
      d.coll.nMaxChannels = static_cast<uint8_t>(l.channels);
    } else {
      d.coll.func = "AllReduce";
      d.coll.algo = l.algo.c_str();
      d.coll.proto = l.proto.c_str();
      d.coll.nChannels = static_cast<uint8_t>(l.channels);
    }
    void* handle = nullptr;
    prof->startEvent(comm->context, &handle, &d);
    if (handle != nullptr) prof->stopEvent(handle);
    if constexpr (std::is_same_v<Descr, abi::EventDescrV5>) {
      if (handle != nullptr && (g_mask & abi::kProfileKernelCh) != 0) {
        std::thread proxy([&] { emit_kernel_ch(prof, comm, handle, l.channels); });
        proxy.join();
      }
    }
  }
  if (group_handle != nullptr) prof->stopEvent(group_handle);
}

void emit_now(FakeComm* comm, const std::vector<Launch>& launches) {
  if (g_plugin == nullptr || (g_mask & abi::kProfileColl) == 0 || comm == nullptr) return;
  switch (g_version) {
    case 5:
      return emit_with<abi::ProfilerV5>(comm, launches, abi::EventDescrV5{});
    case 4:
      return emit_with<abi::ProfilerV4>(comm, launches, abi::EventDescrV4{});
    case 3:
      return emit_with<abi::ProfilerV3>(comm, launches, abi::EventDescrV3{});
    case 2:
      return emit_with<abi::ProfilerV2>(comm, launches, abi::EventDescrV2{});
    case 1:
      return emit_with<abi::ProfilerV1>(comm, launches, abi::EventDescrV1{});
  }
}

void launch(FakeComm* comm, const std::vector<Launch>& launches) {
  if (g_async) {
    std::thread t([comm, launches] { emit_now(comm, launches); });
    t.join();
  } else {
    emit_now(comm, launches);
  }
}

void load_plugin(FakeComm* comm) {
  const char* path = std::getenv("NCCL_PROFILER_PLUGIN");
  const char* v = std::getenv("FAKE_NCCL_PROFILER_VERSION");
  g_version = v != nullptr ? std::atoi(v) : 5;
  void* lib = path != nullptr ? dlopen(path, RTLD_NOW | RTLD_LOCAL) : nullptr;
  if (lib == nullptr) return;
  g_plugin = dlsym(lib, ("ncclProfiler_v" + std::to_string(g_version)).c_str());
  if (g_plugin == nullptr) return;
  const int nnodes =
      std::getenv("FAKE_NCCL_NNODES") ? std::atoi(std::getenv("FAKE_NCCL_NNODES")) : 1;
  ncclResult_t r = ncclSuccess;
  if (g_version == 5) {
    r = static_cast<abi::ProfilerV5*>(g_plugin)->init(&comm->context, 42, &g_mask, "fake", nnodes,
                                                      comm->nranks, comm->rank, nullptr);
  } else if (g_version == 4) {
    r = static_cast<abi::ProfilerV4*>(g_plugin)->init(&comm->context, &g_mask, "fake", 42, nnodes,
                                                      comm->nranks, comm->rank, nullptr);
  } else {
    r = static_cast<abi::ProfilerV1*>(g_plugin)->init(&comm->context, &g_mask);
  }
  if (r != ncclSuccess) g_plugin = nullptr;
}

}  // namespace

extern "C" {

// Test control: how the next collectives are launched.
void fake_nccl_set_next(const char* algo, const char* proto, int channels, int async) {
  g_next = Launch{algo, proto, channels};
  g_async = async != 0;
}
int fake_nccl_activation_mask() { return g_mask; }

ncclResult_t ncclCommInitRank(ncclComm_t* comm, int nranks, ncclUniqueId, int rank) {
  auto* c = new FakeComm{nranks, rank, nullptr};
  load_plugin(c);
  *comm = reinterpret_cast<ncclComm_t>(c);
  return ncclSuccess;
}

ncclResult_t ncclCommCount(const ncclComm_t comm, int* count) {
  *count = reinterpret_cast<FakeComm*>(comm)->nranks;
  return ncclSuccess;
}
ncclResult_t ncclCommUserRank(const ncclComm_t comm, int* rank) {
  *rank = reinterpret_cast<FakeComm*>(comm)->rank;
  return ncclSuccess;
}
ncclResult_t ncclCommCuDevice(const ncclComm_t, int* device) {
  *device = 0;
  return ncclSuccess;
}

ncclResult_t ncclCommDestroy(ncclComm_t comm) {
  auto* c = reinterpret_cast<FakeComm*>(comm);
  if (g_plugin != nullptr && c->context != nullptr) {
    static_cast<abi::ProfilerV5*>(g_plugin)->finalize(c->context);  // same slot in every version
  }
  delete c;
  return ncclSuccess;
}

ncclResult_t ncclAllReduce(const void*, void*, size_t, ncclDataType_t, ncclRedOp_t, ncclComm_t comm,
                           cudaStream_t) {
  auto* c = reinterpret_cast<FakeComm*>(comm);
  if (g_group_depth > 0) {
    g_pending.push_back(g_next);
    g_group_comm = c;
  } else {
    launch(c, {g_next});
  }
  return ncclSuccess;
}

ncclResult_t ncclGroupStart() {
  ++g_group_depth;
  return ncclSuccess;
}

ncclResult_t ncclGroupEnd() {
  if (g_group_depth > 0 && --g_group_depth == 0 && !g_pending.empty()) {
    launch(g_group_comm, g_pending);
    g_pending.clear();
  }
  return ncclSuccess;
}

}  // extern "C"
