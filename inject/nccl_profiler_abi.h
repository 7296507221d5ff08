// The NCCL profiler-plugin ABI, versions 1 to 5, as far as xpu-timer uses it:
// the five entry points of each version and the parts of the event
// descriptor that lead to the collective's algorithm, protocol and channel
// count. Written from NCCL's public plugin headers
// (src/include/plugin/profiler/profiler_v1.h .. profiler_v5.h); NCCL's
// private structs are never read.
//
// Which NCCL looks up which symbol (newest first, it takes the first found):
//   2.23: ncclProfiler_v1          2.24: v2, v1       2.25: v3, v2, v1
//   2.26-2.27: v4 .. v1            2.28: v5 .. v1 (checked in libnccl.so.2.28.9's strings)
// Only the leading members of the descriptor union are declared; every
// union member starts at the same offset, so declaring the `coll` member
// alone leaves its offsets unchanged (the static_asserts pin them).
#pragma once

#include <nccl.h>
#include <sys/types.h>

#include <cstddef>
#include <cstdint>

namespace xpu_timer::inject::nccl_abi {

// Event type bits (identical in every version).
constexpr int kProfileGroup = 1 << 0;
constexpr int kProfileColl = 1 << 1;
constexpr int kProfileP2p = 1 << 2;
constexpr int kProfileKernelCh = 1 << 6;  // v4 and later

// ncclProfilerKernelChStop: the state that carries a KernelCh's stop time.
constexpr int kProfilerKernelChStop = 22;

// ncclDebugLogger_t (nccl_common.h): level is an enum.
using DebugLogger = void (*)(int level, unsigned long flags, const char* file, int line,
                             const char* fmt, ...);
using EventState = int;  // ncclProfilerEventState_vN_t, an enum

struct EventDescrV5 {
  uint64_t type;
  void* parentObj;
  int rank;
  union {
    struct {
      uint64_t seqNumber;
      const char* func;
      const void* sendBuff;
      void* recvBuff;
      size_t count;
      int root;
      const char* datatype;
      uint8_t nChannels;
      uint8_t nWarps;
      const char* algo;
      const char* proto;
      void* parentGroup;
    } coll;
    struct {
      uint8_t channelId;
      uint64_t pTimer;  // the kernel's start: the GPU's globaltimer, ns
    } kernelCh;
  };
};

// ncclProfilerEventStateArgs_v5_t: a union; KernelCh's member is its stop time.
union StateArgsV5 {
  struct {
    size_t transSize;
  } proxyStep;
  struct {
    uint64_t pTimer;
  } kernelCh;
};

// v4: v5 with a one-byte type and no coll.parentGroup.
struct EventDescrV4 {
  uint8_t type;
  void* parentObj;
  int rank;
  union {
    struct {
      uint64_t seqNumber;
      const char* func;
      const void* sendBuff;
      void* recvBuff;
      size_t count;
      int root;
      const char* datatype;
      uint8_t nChannels;
      uint8_t nWarps;
      const char* algo;
      const char* proto;
    } coll;
  };
};

struct EventDescrV3 {
  uint8_t type;
  void* parentObj;
  int rank;
  union {
    struct {
      const char* name;
      uint64_t commHash;
      uint64_t seqNumber;
      const char* func;
      const void* sendBuff;
      void* recvBuff;
      size_t count;
      int root;
      const char* datatype;
      uint8_t nMaxChannels;
      uint8_t nWarps;
      const char* algo;
      const char* proto;
    } coll;
  };
};

// v2: v3 with coll.trafficBytes before nMaxChannels.
struct EventDescrV2 {
  uint8_t type;
  void* parentObj;
  int rank;
  union {
    struct {
      const char* name;
      uint64_t commHash;
      uint64_t seqNumber;
      const char* func;
      const void* sendBuff;
      void* recvBuff;
      size_t count;
      int root;
      const char* datatype;
      size_t trafficBytes;
      uint8_t nMaxChannels;
      uint8_t nWarps;
      const char* algo;
      const char* proto;
    } coll;
  };
};

// v1: func, datatype, algo and proto are NCCL's enum values, not strings.
struct EventDescrV1 {
  uint8_t type;
  void* parentObj;
  int rank;
  union {
    struct {
      const char* name;
      uint64_t commHash;
      uint64_t seqNumber;
      uint8_t func;
      const void* sendBuff;
      void* recvBuff;
      size_t count;
      int root;
      uint8_t datatype;
      uint32_t op;
      size_t trafficBytes;
      uint8_t nMaxChannels;
      uint8_t nWarps;
      uint8_t algo;   // NCCL_ALGO_TREE 0, RING 1, COLLNET_DIRECT 2, COLLNET_CHAIN 3, NVLS 4, ...
      uint8_t proto;  // NCCL_PROTO_LL 0, LL128 1, SIMPLE 2
      int isCollnet;
      int isNvls;
    } coll;
  };
};

// Offsets of what we read, from the public headers (x86-64 / aarch64 LP64).
static_assert(offsetof(EventDescrV5, coll) == 24);
static_assert(offsetof(EventDescrV5, coll.nChannels) == 80);
static_assert(offsetof(EventDescrV5, coll.algo) == 88);
static_assert(offsetof(EventDescrV5, coll.proto) == 96);
static_assert(offsetof(EventDescrV5, kernelCh.channelId) == 24);
static_assert(offsetof(EventDescrV5, kernelCh.pTimer) == 32);
static_assert(offsetof(StateArgsV5, kernelCh.pTimer) == 0);
static_assert(offsetof(EventDescrV4, coll.algo) == 88);
static_assert(offsetof(EventDescrV4, coll.proto) == 96);
static_assert(offsetof(EventDescrV3, coll.nMaxChannels) == 96);
static_assert(offsetof(EventDescrV3, coll.algo) == 104);
static_assert(offsetof(EventDescrV2, coll.algo) == 112);
static_assert(offsetof(EventDescrV1, coll.nMaxChannels) == 104);
static_assert(offsetof(EventDescrV1, coll.algo) == 106);
static_assert(offsetof(EventDescrV1, coll.proto) == 107);

template <typename Descr, typename Init>
struct Profiler {
  const char* name;
  Init init;
  ncclResult_t (*startEvent)(void* context, void** eHandle, Descr* eDescr);
  ncclResult_t (*stopEvent)(void* eHandle);
  ncclResult_t (*recordEventState)(void* eHandle, EventState eState, void* eStateArgs);
  ncclResult_t (*finalize)(void* context);
};

using InitV5 = ncclResult_t (*)(void** context, uint64_t commId, int* eActivationMask,
                                const char* commName, int nNodes, int nranks, int rank,
                                DebugLogger logfn);
using InitV4 = ncclResult_t (*)(void** context, int* eActivationMask, const char* commName,
                                uint64_t commHash, int nNodes, int nranks, int rank,
                                DebugLogger logfn);
using InitV1 = ncclResult_t (*)(void** context, int* eActivationMask);  // v1 to v3

using ProfilerV5 = Profiler<EventDescrV5, InitV5>;
using ProfilerV4 = Profiler<EventDescrV4, InitV4>;
using ProfilerV3 = Profiler<EventDescrV3, InitV1>;
using ProfilerV2 = Profiler<EventDescrV2, InitV1>;
using ProfilerV1 = Profiler<EventDescrV1, InitV1>;

}  // namespace xpu_timer::inject::nccl_abi
