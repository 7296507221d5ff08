// The one contract between the injected library (inject/) and the supervisor:
// the per-rank shared-memory status page and the messages on the unix socket.
//
// Versioning: kProtocolVersion is bumped on any layout change. The supervisor
// refuses a page or a message whose magic or version differs (one clear log
// line), so a job launched with a stale libxpu_timer_inject.so keeps training
// and is simply not watched.
//
// Threads: the page is written only by the rank's background thread (inject's
// Poller) and read by the supervisor's poll loop, another process. Fields that
// must be read consistently together are guarded by a seqlock (`seq`): the
// writer makes it odd, writes, makes it even; the reader copies and retries
// while it was odd or changed. Everything in the page is trivially copyable
// and address-free (lock-free 64-bit atomics only), so it may live in memory
// mapped by two processes.
#pragma once

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <type_traits>

#include "common/rank_identity.h"

namespace xpu_timer::proto {

constexpr uint32_t kProtocolVersion = 9;
constexpr uint64_t kStatusPageMagic = 0x52454d4954555058ull;  // "XPUTIMER" little endian
constexpr uint32_t kMessageMagic = 0x54555058u;               // "XPUT"

// Environment set by the supervisor for the job. Names of our own that have
// no xpu-timer counterpart start with XPU_TIMER_ too.
constexpr const char* kEnvSocket = "XPU_TIMER_SOCKET";    // unix socket path
constexpr const char* kEnvRunDir = "XPU_TIMER_RUN_DIR";   // where status pages are created
constexpr const char* kEnvDisable = "XPU_TIMER_DISABLE";  // "1": hooks pass through
// How long a crashing rank waits, at most, for the supervisor to read its
// Python stacks before it dies (milliseconds; default 5000, 0: no wait).
constexpr const char* kEnvCrashWaitMs = "XPU_TIMER_CRASH_WAIT_MS";
constexpr int kDefaultCrashWaitMs = 5000;
// Where a rank with no supervisor writes xpu_timer_crash-rank<R>-<pid>.txt
// (default: its working directory).
constexpr const char* kEnvCrashDir = "XPU_TIMER_CRASH_DIR";
// The supervisor's pid: each rank names it its allowed tracer under Yama
// ptrace_scope=1 (inject/ptracer_permit.cc).
constexpr const char* kEnvSupervisorPid = "XPU_TIMER_SUPERVISOR_PID";
// "1": debug logging, on both sides.
constexpr const char* kEnvDebugMode = "XPU_TIMER_DEBUG_MODE";
// Not ours, set for the job: the dynamic loader preloads the injected
// library; NCCL >= 2.23 loads it as its profiler plugin.
constexpr const char* kEnvPreload = "LD_PRELOAD";
constexpr const char* kEnvNcclProfilerPlugin = "NCCL_PROFILER_PLUGIN";
// NVTX loads the tool this names at a module's first NVTX call (inject/nvtx_ranges.h).
constexpr const char* kEnvNvtxInjection = "NVTX_INJECTION64_PATH";

// kRange: a host-side region of the program (an NVTX range, a training step,
// a garbage collection, a DataLoader wait, a synchronous allocation), timed on
// the CPU; never in flight on a GPU.
enum class OpKind : uint8_t { kNone = 0, kGemm = 1, kNccl = 2, kMemcpy = 3, kRange = 4 };

// What was called. Values are part of the protocol: append only.
enum class OpName : uint16_t {
  kUnknown = 0,
  // cuBLAS / cuBLASLt
  kGemmEx = 1,
  kGemmStridedBatchedEx = 2,
  kSgemm = 3,
  kHgemm = 4,
  kSgemmStridedBatched = 5,
  kHgemmStridedBatched = 6,
  kLtMatmul = 7,
  // NCCL
  kAllReduce = 32,
  kAllGather = 33,
  kReduceScatter = 34,
  kBroadcast = 35,
  kReduce = 36,
  kSend = 37,
  kRecv = 38,
  kGroup = 39,  // a ncclGroupStart/End block, timed as one operation
  // memory copies
  kMemcpyH2D = 64,
  kMemcpyD2H = 65,
  kMemcpyD2D = 66,
  kMemcpyOther = 67,  // host to host, or a direction the runtime could not tell us
  kMemcpyPeer = 68,   // cudaMemcpyPeer / cudaMemcpyPeerAsync: between two devices
  // host-side regions (OpKind::kRange)
  kNvtxRange = 96,        // a push/pop or start/end range of the program's NVTX calls
  kStep = 97,             // one training iteration (docs/architecture.md "NVTX ranges and steps")
  kGcPause = 98,          // a Python garbage collection (the interpreter's threads wait)
  kLoaderWait = 99,       // the training loop waiting in its DataLoader's __next__
  kDeviceMalloc = 100,    // a synchronous cudaMalloc (it waits for the device)
  kDeviceFree = 101,      // a synchronous cudaFree
  kKernelLaunches = 102,  // kernels launched through the runtime over an interval (a sample)
  kPythonCall = 103,      // a call of a traced Python function (inject/python_tracer.h)
};

// A fixed-size name field written by another process (a communicator or
// range name), made safe to print in place: without a NUL in its `bytes` it
// is "" (unknown), bytes a writer should not have put there become '?', and
// the bytes after the NUL are zeroed. Returns the name's length.
size_t clean_name_field(char* name, size_t bytes);

// Name as shown to users ("AllReduce", "GemmEx", ...). Never null.
const char* op_name_str(OpName name);
OpKind op_kind_of(OpName name);
// "gemm", "nccl", "memcpy", "range", "none": the kind as metrics and traces name it.
const char* op_kind_str(uint8_t kind);
// nccl-tests' bus-bandwidth factor for `bytes` as our hooks define them (the
// larger of the send and receive buffer, nccl-tests' "size"): AllReduce
// 2(n-1)/n, AllGather and ReduceScatter (n-1)/n, others 1; nranks 0
// (communicator size unknown) gives 1.
double nccl_bus_factor(OpName op, uint32_t nranks);

// Data types, independent of the CUDA enum values so the page stays stable.
enum class DType : uint8_t {
  kUnknown = 0,
  kF32,
  kF16,
  kBF16,
  kF64,
  kF8E4M3,
  kF8E5M2,
  kI8,
  kI32,
  kI64,
  kU8,
  kTF32,
};
const char* dtype_str(DType t);
// A recorded NCCL reduction (ncclRedOp_t + 1): "sum", "prod", "max", "min",
// "avg"; "" for none or unknown.
const char* red_op_str(uint8_t red_op);

// One operation as the page describes it. POD.
struct OpRef {
  uint16_t name;        // OpName
  uint8_t kind;         // OpKind
  uint8_t dtype;        // DType
  uint32_t group_size;  // operations in a kGroup, else 1
  uint64_t comm_hash;   // NCCL: identical on every rank of the communicator; 0 otherwise
  uint64_t seq;         // NCCL: per-communicator sequence number of this rank (1-based)
  uint64_t launch_ns;   // CLOCK_MONOTONIC when the host call was made
  // CLOCK_MONOTONIC when its start marker (an event recorded just before it)
  // was seen complete: the work before it on its stream had finished and it
  // could run. 0: not yet (queued), or never known (a sampled-out GEMM). The
  // origin of its hang clock (docs/architecture.md "Hang detection").
  uint64_t started_ns;
  uint64_t bytes;  // NCCL: payload bytes of this rank; GEMM: 0
  uint64_t flops;  // GEMM: 2*b*m*n*k; NCCL: 0
};

constexpr int kMaxComms = 64;
// CommSlot::flags
// The rank saw the communicator first in a collective (created before the
// hooks started): its comm_hash is local to this rank, not shared with the
// other members, so it must not be matched across ranks.
constexpr uint32_t kCommFlagUnknownIdentity = 1;

// CommSlot::name bytes, the NUL included.
constexpr size_t kCommNameBytes = 32;

// A communicator this rank is a member of, with its progress. The supervisor
// uses it to tell stuck ranks (issued seq s, not completed) from missing ones
// (never issued seq s on that communicator).
struct CommSlot {
  uint64_t comm_hash;
  int32_t nranks;
  int32_t rank;  // rank inside the communicator
  uint64_t issued_seq;
  uint64_t completed_seq;
  uint32_t flags;  // kCommFlag*
  uint32_t reserved;
  // The name the program gave the communicator (NCCL >= 2.27 commName, e.g.
  // a framework's group name), printable ASCII, NUL-terminated; "" =
  // unknown. The reader treats a name without a NUL as "" (status_page.cc).
  char name[kCommNameBytes];
};

// Latency histogram: upper bounds in seconds, log-spaced; the last bucket is +Inf.
constexpr int kHistBuckets = 24;
extern const double kHistUpperBoundsSeconds[kHistBuckets];
int hist_bucket_for_ns(uint64_t ns);

// NCCL algorithm / protocol / transport of a collective, as NCCL's profiler
// plugin interface names them (inject/nccl_profiler_plugin.cc). Small closed
// sets so that metric labels stay bounded; kMixed: a group whose members ran
// with different ones. Values are part of the protocol: append only.
enum class NcclAlgo : uint8_t {
  kUnknown = 0,
  kTree,
  kRing,
  kCollNetDirect,
  kCollNetChain,
  kNvls,
  kNvlsTree,
  kPat,
  kOther,
  kMixed,
};
enum class NcclProto : uint8_t { kUnknown = 0, kLL, kLL128, kSimple, kOther, kMixed };
enum class NcclTransport : uint8_t { kUnknown = 0, kIntraNode, kInterNode };

inline const char* nccl_algo_str(uint8_t a) {
  static constexpr const char* kNames[] = {"unknown",      "Tree", "Ring",     "CollNetDirect",
                                           "CollNetChain", "NVLS", "NVLSTree", "PAT",
                                           "other",        "mixed"};
  return a < sizeof(kNames) / sizeof(kNames[0]) ? kNames[a] : "unknown";
}
inline const char* nccl_proto_str(uint8_t p) {
  static constexpr const char* kNames[] = {"unknown", "LL", "LL128", "Simple", "other", "mixed"};
  return p < sizeof(kNames) / sizeof(kNames[0]) ? kNames[p] : "unknown";
}
inline const char* nccl_transport_str(uint8_t t) {
  return t == 1 ? "intra_node" : t == 2 ? "inter_node" : "unknown";
}

constexpr int kMaxMetrics = 256;
// Aggregates of one (name, dtype, size bucket) key, written by the rank's
// background thread only.
struct MetricSlot {
  uint16_t name;        // OpName; 0 = unused slot
  uint8_t dtype;        // DType
  uint8_t size_bucket;  // log2 bucket of bytes (NCCL) or of flops (GEMM)
  uint8_t algo;         // NcclAlgo, from NCCL's profiler plugin (0 = unknown)
  uint8_t proto;        // NcclProto, from NCCL's profiler plugin (0 = unknown)
  uint8_t transport;    // NcclTransport (0 = unknown)
  uint8_t reserved;
  uint32_t nranks;     // NCCL: communicator size, for bus bandwidth
  uint32_t nchannels;  // NCCL: channels of the latest operation (0 = unknown)
  uint64_t count;
  uint64_t sum_ns;
  uint64_t sum_bytes;  // NCCL payload bytes
  uint64_t sum_flops;  // GEMM floating point operations
  uint64_t last_update_ns;
  uint64_t hist[kHistBuckets];  // non-cumulative counts per latency bucket
  // Calls completed without a timing (docs/architecture.md "The hot path", 4):
  // count, sum_* and hist above cover the timed calls only, so that their
  // ratios (FLOP/s, bandwidth, latency) stay exact; these add the rest.
  uint64_t untimed_count;
  uint64_t untimed_bytes;
  uint64_t untimed_flops;
};

// CUDA runtime calls of a rank that are counted, not timed (inject/hooks_cudart.cc):
// every call through the application's libcudart. Work that a library launches
// through its own statically linked runtime (cuBLAS, NCCL) or through the
// driver API (Triton, PyTorch's expandable segments) is not seen.
struct RuntimeCounters {
  uint64_t kernel_launches;  // cudaLaunchKernel, cudaLaunchKernelExC, cudaLaunchCooperativeKernel
  uint64_t mallocs;          // successful cudaMalloc, cudaMallocAsync, cudaMallocFromPoolAsync
  uint64_t malloc_bytes;
  uint64_t frees;       // successful cudaFree, cudaFreeAsync of a pointer not null
  uint64_t free_bytes;  // of the frees whose allocation we saw
  uint64_t reserved;
};

// What the rank's Python interpreter did (inject/python_probes.py), counted
// on every event; all zero in a process that is not Python.
constexpr uint32_t kPythonProbeGc = 1;          // gc.callbacks installed
constexpr uint32_t kPythonProbeDataLoader = 2;  // the DataLoader iterator is timed
constexpr uint32_t kPythonProbeOptimizer = 4;   // optimizer steps mark training steps
struct PythonCounters {
  uint32_t probes;  // kPythonProbe*
  uint32_t reserved;
  uint64_t gc_collections[3];  // per generation
  uint64_t gc_pause_ns[3];     // time inside those collections
  uint64_t gc_collected[3];    // objects they freed
  uint64_t loader_batches;     // batches the DataLoader iterator returned
  uint64_t loader_wait_ns;     // time the training loop spent waiting for them
};

// NVTX ranges and traced Python functions of a rank (inject/nvtx_ranges.h,
// inject/python_tracer.h), aggregated per name and kind. A name is the
// range's message (the function's dotted name) cut to kRangeNameBytes - 1
// bytes; slot 0 is "(other)": the ranges whose names came after the first
// kMaxRanges - 1.
constexpr int kMaxRanges = 64;
constexpr size_t kRangeNameBytes = 48;
// RangeSlot::kind (protocol version 9); a reader takes any other value as kNvtx.
enum class RangeKind : uint32_t {
  kNvtx = 0,            // an NVTX range
  kPythonFunction = 1,  // the calls of a traced Python function (XPU_TIMER_HOST_TRACING_FUNC)
};
struct RangeSlot {
  char name[kRangeNameBytes];  // printable ASCII, NUL-terminated (cleaned by the reader)
  uint32_t kind;               // RangeKind
  uint32_t reserved;
  uint64_t count;   // ranges that ended
  uint64_t sum_ns;  // their total duration (host clock)
  uint64_t hist[kHistBuckets];
};

// How the rank's training steps are recognised (StepCounters::source).
enum class StepSource : uint32_t {
  kNone = 0,
  kNvtxRange = 1,  // every XPU_TIMER_STEP_RANGE range is one step
  kOptimizer = 2,  // the time between two optimizer steps (a Python hook)
};
struct StepCounters {
  uint32_t source;  // StepSource
  uint32_t reserved;
  uint64_t steps;
  uint64_t sum_ns;
  uint64_t last_ns;  // duration of the latest step
  uint64_t hist[kHistBuckets];
  // GPU idle time within steps (inject/step_bubbles.h): steps measured, the
  // union of their matrix product and copy GPU time, the rest of their time,
  // the latest measured step, and GEMMs/copies in them without a timing.
  uint64_t measured;
  uint64_t busy_ns;
  uint64_t idle_ns;
  uint64_t last_busy_ns;
  uint64_t last_window_ns;
  uint64_t untimed_ops;
};

// xpu-timer's own cost in the rank (protocol version 7; docs/metrics.md
// "Cost"): the CPU time of its Poller thread, and the time its hooks spend
// on the user's threads, measured on one call in `hook_sample_every` of each
// thread (begin and end of a TimedCall: the clock reads, the sample gate,
// the queue, the CUDA events) and summed: hook_sampled_ns x
// hook_sample_every estimates the total.
struct SelfCost {
  uint64_t poller_cpu_ns;
  uint64_t hook_sampled_calls;
  uint64_t hook_sampled_ns;
  uint64_t hook_sample_every;
};

// StatusPage::flags
// Timing is off for the rest of the process (a CUDA error of the background
// thread): inflight_count stays 0 while the rank may well be inside a
// collective, so "no operation in flight" means nothing for this rank.
constexpr uint32_t kPageFlagTimingDisabled = 1;

// The status page of one rank. Created and sized by the rank (inject) as a
// file under XPU_TIMER_RUN_DIR, mapped read-only by the supervisor.
struct StatusPage {
  // --- immutable after creation ---
  uint64_t magic;
  uint32_t version;
  uint32_t page_bytes;  // sizeof(StatusPage) as the writer saw it
  int32_t pid;
  int32_t rank;
  int32_t local_rank;
  int32_t world_size;
  int32_t local_world_size;
  int32_t group_rank;
  uint64_t created_mono_ns;
  uint64_t created_realtime_ns;

  // --- liveness, read without the seqlock ---
  std::atomic<uint64_t> heartbeat_ns;  // CLOCK_MONOTONIC, refreshed by every poller pass
  std::atomic<uint64_t> seq;           // seqlock for everything below

  // --- guarded by seq ---
  uint64_t issued_total;     // operations pushed by the hooks
  uint64_t completed_total;  // operations whose end event completed
  uint32_t inflight_count;   // ops launched and not completed (all streams)
  uint32_t ncomms;
  // Valid when inflight_count > 0: the operation in flight the hang clock
  // follows: of those that started (started_ns != 0) the one that started
  // first, else the one launched first.
  OpRef oldest_inflight;
  OpRef last_completed;         // valid when completed_total > 0
  uint64_t dropped_queue_full;  // records lost because the hot-path queue was full
  uint64_t skipped_capture;     // calls not timed because the stream was capturing a graph
  uint64_t hook_errors;         // calls where our code failed and passed through
  uint64_t queue_depth;         // records waiting for the poller at the last pass
  CommSlot comms[kMaxComms];
  uint32_t nmetrics;
  uint32_t flags;  // kPageFlag*
  MetricSlot metrics[kMaxMetrics];
  // Counted on every call, never sampled (guarded by seq like the rest).
  RuntimeCounters runtime;
  PythonCounters python;
  // NVTX ranges and steps (protocol version 6).
  uint32_t nranges;  // slots of ranges[] in use
  uint32_t reserved_ranges;
  uint64_t ranges_dropped;  // ranges lost: queue full, or nested deeper than we track
  RangeSlot ranges[kMaxRanges];
  StepCounters steps;
  SelfCost self;  // protocol version 7
};
static_assert(std::is_standard_layout_v<StatusPage>);
static_assert(std::atomic<uint64_t>::is_always_lock_free);

// ---- unix socket messages (SOCK_SEQPACKET: one message per packet) ----
//
// Every message starts with a MsgHeader. The encode_* / decode_* functions at
// the end of this header are the only code that builds or checks one: the
// injected library, the supervisor and the test fakes call them, and the
// Python excepthook packs its header with kMsgHeaderStructFormat, handed to
// it by inject/crash_python_hook.cc.

enum class MsgType : uint16_t {
  kRegister = 1,         // rank -> supervisor, once, after the status page exists
  kCrashReport = 2,      // rank -> supervisor, from a fatal-signal handler (CrashReportMsg)
  kPythonException = 3,  // rank's sys.excepthook -> supervisor (header + JSON), own connection
};

// Largest message either side sends (the Python exception's JSON is cut to fit).
constexpr uint32_t kMaxMessageBytes = 65536;

struct MsgHeader {
  uint32_t magic;    // kMessageMagic
  uint16_t version;  // kProtocolVersion
  uint16_t type;     // MsgType
  uint32_t bytes;    // whole message including this header
  uint32_t reserved;
};
static_assert(sizeof(MsgHeader) == 16);
static_assert(offsetof(MsgHeader, version) == 4 && offsetof(MsgHeader, type) == 6 &&
              offsetof(MsgHeader, bytes) == 8 && offsetof(MsgHeader, reserved) == 12);

// MsgHeader as Python's struct module packs it: little endian, the fields in
// declaration order (magic, version, type, bytes, reserved).
constexpr const char kMsgHeaderStructFormat[] = "<IHHII";

// Offset of field `index` of a "<" struct format of I and H fields, or of its
// end when index is the field count; -1 for anything else. For the checks below.
constexpr int struct_format_offset(const char* format, int index) {
  if (format[0] != '<') return -1;
  int offset = 0;
  for (int i = 0; format[i + 1] != '\0'; ++i) {
    if (i == index) return offset;
    const char c = format[i + 1];
    if (c != 'I' && c != 'H') return -1;
    offset += c == 'I' ? 4 : 2;
  }
  return offset;
}
static_assert(struct_format_offset(kMsgHeaderStructFormat, 1) == offsetof(MsgHeader, version));
static_assert(struct_format_offset(kMsgHeaderStructFormat, 2) == offsetof(MsgHeader, type));
static_assert(struct_format_offset(kMsgHeaderStructFormat, 3) == offsetof(MsgHeader, bytes));
static_assert(struct_format_offset(kMsgHeaderStructFormat, 4) == offsetof(MsgHeader, reserved));
static_assert(struct_format_offset(kMsgHeaderStructFormat, 5) == sizeof(MsgHeader));

struct RegisterMsg {
  MsgHeader header;
  int32_t pid;
  int32_t rank;
  int32_t local_rank;
  int32_t world_size;
  int32_t local_world_size;
  int32_t group_rank;
  char hostname[64];
  char status_path[256];  // NUL-terminated path of the status page file
};
static_assert(std::is_trivially_copyable_v<RegisterMsg>);
static_assert(sizeof(RegisterMsg) == 360);
static_assert(offsetof(RegisterMsg, pid) == 16 && offsetof(RegisterMsg, group_rank) == 36 &&
              offsetof(RegisterMsg, hostname) == 40 && offsetof(RegisterMsg, status_path) == 104);

// ---- crash report: written by a signal handler, so fixed-size POD only ----

constexpr int kCrashMaxFrames = 64;
constexpr int kCrashMaxModules = 24;
constexpr int kCrashFuncBytes = 128;    // mangled C++ names run long; cut, NUL-terminated
constexpr int kCrashModuleBytes = 160;  // path of a loaded object, cut, NUL-terminated

// One native frame, innermost first. `function` is the nearest preceding
// exported (.dynsym) symbol found in memory by the handler, possibly empty:
// the supervisor re-symbolizes from the module file (.symtab) and demangles.
struct CrashFrame {
  uint64_t pc;
  uint64_t module_offset;  // pc - load bias of its module (an ELF vaddr: addr2line-able)
  uint64_t func_offset;    // pc - start of `function` (0 when unknown)
  int32_t module;          // index into CrashReportMsg::modules, -1 when unknown
  uint32_t reserved;
  char function[kCrashFuncBytes];
};
static_assert(sizeof(CrashFrame) == 160);
static_assert(offsetof(CrashFrame, module_offset) == 8 && offsetof(CrashFrame, func_offset) == 16 &&
              offsetof(CrashFrame, module) == 24 && offsetof(CrashFrame, function) == 32);

struct CrashModule {
  uint64_t load_bias;  // dlpi_addr
  char path[kCrashModuleBytes];
};
static_assert(sizeof(CrashModule) == 168 && offsetof(CrashModule, path) == 8);

// CrashReportMsg::flags
constexpr uint32_t kCrashFlagFramesTruncated = 1;   // more than kCrashMaxFrames frames
constexpr uint32_t kCrashFlagModulesTruncated = 2;  // frames in more than kCrashMaxModules modules
constexpr uint32_t kCrashFlagNoFaultFrame = 4;      // the faulting pc was not found while unwinding
// The message carries one descriptor (SCM_RIGHTS): an end of a socket pair
// whose other end the rank's handler polls before it lets the process die.
// The supervisor reads the rank's Python stacks while it waits, then closes
// the descriptor to release it (docs/architecture.md "Crash report").
constexpr uint32_t kCrashFlagAwaitsRelease = 8;
// Our handler did not get the kernel's siginfo: another handler, installed
// after ours without SA_SIGINFO (so the kernel filled none) or passing other
// pointers, called it. si_code, sender and fault address are unknown (zero),
// and `caller` names that handler (or the code our handler returns to).
constexpr uint32_t kCrashFlagSiginfoNotKernels = 16;
// CrashReportMsg::siginfo_doubt: the first test a siginfo failed.
enum class CrashSiginfoDoubt : uint32_t {
  kNone = 0,
  kNoSaSiginfo = 1,  // the handler installed for the signal has no SA_SIGINFO
  kNoPointers = 2,   // siginfo or ucontext null
  kNotInFrame = 3,   // not where the kernel's signal frame puts it
  kSigno = 4,        // si_signo is another signal
  kCode = 5,         // an si_code the kernel never uses
  kPid = 6,          // a sender pid no process can have
};

struct CrashReportMsg {
  MsgHeader header;  // type kCrashReport, bytes = sizeof(CrashReportMsg)
  int32_t pid;
  int32_t tid;
  int32_t rank;
  int32_t signal;
  int32_t si_code;
  int32_t sender_pid;  // si_pid, for SI_USER/SI_TKILL/SI_QUEUE (0 otherwise)
  int32_t sender_uid;
  uint32_t flags;       // kCrashFlag*
  uint64_t fault_addr;  // si_addr (meaningful for SIGSEGV/SIGBUS/SIGFPE/SIGILL)
  uint64_t realtime_ns;
  uint64_t mono_ns;
  char thread_name[16];
  uint32_t nframes;
  uint32_t nmodules;
  CrashFrame frames[kCrashMaxFrames];
  CrashModule modules[kCrashMaxModules];
  // With kCrashFlagSiginfoNotKernels: the code that called our handler (its
  // module among `modules`), and which test the siginfo failed
  // (CrashSiginfoDoubt); else zero.
  CrashFrame caller;
  uint32_t siginfo_doubt;
  uint32_t reserved;
};
static_assert(std::is_trivially_copyable_v<CrashReportMsg>);
static_assert(sizeof(CrashReportMsg) <= kMaxMessageBytes);
static_assert(sizeof(CrashReportMsg) == 14536);
static_assert(offsetof(CrashReportMsg, pid) == 16 && offsetof(CrashReportMsg, flags) == 44 &&
              offsetof(CrashReportMsg, fault_addr) == 48 &&
              offsetof(CrashReportMsg, thread_name) == 72 &&
              offsetof(CrashReportMsg, nframes) == 88 && offsetof(CrashReportMsg, frames) == 96 &&
              offsetof(CrashReportMsg, modules) == 10336 &&
              offsetof(CrashReportMsg, caller) == 14368 &&
              offsetof(CrashReportMsg, siginfo_doubt) == 14528);

// ---- encoding and decoding of the messages ----
// Encoders fill every byte of a message, padding included. Decoders take
// untrusted bytes (any length, any alignment), check what the protocol
// requires of every message of that type, copy, and say in one line what is
// wrong otherwise; judging the values (a rank inside its world, an absolute
// path) is the receiver's business.

// Header of a message of `type` that is `bytes` long in all. Async-signal-safe.
MsgHeader make_header(MsgType type, uint32_t bytes);

// What a rank says when it registers.
struct RegisterInfo {
  int32_t pid = 0;
  RankIdentity identity;
  const char* hostname = "";
  const char* status_path = "";
};
// False when a string had to be cut to fit its field. No allocation.
bool encode_register(const RegisterInfo& info, RegisterMsg* out);
// The JSON body behind its header; "" when the whole exceeds kMaxMessageBytes.
std::string encode_python_exception(std::string_view json);

// Type of a message whose header is sound: our magic and version, a known
// type, `bytes` equal to the packet's length, within kMaxMessageBytes, and the
// size that type requires. nullopt with *error otherwise.
std::optional<MsgType> decode_message(const void* data, size_t len, std::string* error);
// A kRegister message; its strings must be NUL-terminated.
bool decode_register(const void* data, size_t len, RegisterMsg* out, std::string* error);
// The identity a decoded kRegister message carries (not yet judged).
RankIdentity identity_of(const RegisterMsg& msg);
// A kCrashReport message; nframes and nmodules must fit their arrays.
bool decode_crash_report(const void* data, size_t len, CrashReportMsg* out, std::string* error);
// The JSON body of a kPythonException message, a view into `data`.
std::optional<std::string_view> decode_python_exception(const void* data, size_t len,
                                                        std::string* error);

}  // namespace xpu_timer::proto
