#include "common/protocol.h"

#include <cstring>

namespace xpu_timer::proto {

// 10 us * 2^i for i = 0..22, then +Inf: covers a tiny kernel to a 40 s collective.
const double kHistUpperBoundsSeconds[kHistBuckets] = {
    10e-6,     20e-6,   40e-6,    80e-6,    160e-6,   320e-6,   640e-6,    1.28e-3,
    2.56e-3,   5.12e-3, 10.24e-3, 20.48e-3, 40.96e-3, 81.92e-3, 163.84e-3, 327.68e-3,
    655.36e-3, 1.31072, 2.62144,  5.24288,  10.48576, 20.97152, 41.94304,  1e300};

int hist_bucket_for_ns(uint64_t ns) {
  uint64_t bound_ns = 10000;  // 10 us
  for (int i = 0; i < kHistBuckets - 1; ++i, bound_ns *= 2) {
    if (ns <= bound_ns) return i;
  }
  return kHistBuckets - 1;
}

size_t clean_name_field(char* name, size_t bytes) {
  const void* nul = std::memchr(name, '\0', bytes);
  const size_t n = nul != nullptr ? static_cast<size_t>(static_cast<const char*>(nul) - name) : 0;
  for (size_t j = 0; j < n; ++j) {
    const auto c = static_cast<unsigned char>(name[j]);
    if (c < 0x20 || c >= 0x7f) name[j] = '?';
  }
  std::memset(name + n, 0, bytes - n);
  return n;
}

const char* op_name_str(OpName name) {
  switch (name) {
    case OpName::kUnknown:
      return "Unknown";
    case OpName::kGemmEx:
      return "GemmEx";
    case OpName::kGemmStridedBatchedEx:
      return "GemmStridedBatchedEx";
    case OpName::kSgemm:
      return "Sgemm";
    case OpName::kHgemm:
      return "Hgemm";
    case OpName::kSgemmStridedBatched:
      return "SgemmStridedBatched";
    case OpName::kHgemmStridedBatched:
      return "HgemmStridedBatched";
    case OpName::kLtMatmul:
      return "LtMatmul";
    case OpName::kAllReduce:
      return "AllReduce";
    case OpName::kAllGather:
      return "AllGather";
    case OpName::kReduceScatter:
      return "ReduceScatter";
    case OpName::kBroadcast:
      return "Broadcast";
    case OpName::kReduce:
      return "Reduce";
    case OpName::kSend:
      return "Send";
    case OpName::kRecv:
      return "Recv";
    case OpName::kGroup:
      return "Group";
    case OpName::kMemcpyH2D:
      return "MemcpyH2D";
    case OpName::kMemcpyD2H:
      return "MemcpyD2H";
    case OpName::kMemcpyD2D:
      return "MemcpyD2D";
    case OpName::kMemcpyOther:
      return "MemcpyOther";
    case OpName::kMemcpyPeer:
      return "MemcpyPeer";
    case OpName::kNvtxRange:
      return "NvtxRange";
    case OpName::kStep:
      return "Step";
    case OpName::kGcPause:
      return "GcPause";
    case OpName::kLoaderWait:
      return "DataLoaderWait";
    case OpName::kDeviceMalloc:
      return "cudaMalloc";
    case OpName::kDeviceFree:
      return "cudaFree";
    case OpName::kKernelLaunches:
      return "KernelLaunches";
    case OpName::kPythonCall:
      return "PythonCall";
  }
  return "Unknown";
}

OpKind op_kind_of(OpName name) {
  const auto v = static_cast<uint16_t>(name);
  if (v >= 1 && v < 32) return OpKind::kGemm;
  if (v >= 32 && v < 64) return OpKind::kNccl;
  if (v >= 64 && v < 96) return OpKind::kMemcpy;
  if (v >= 96 && v < 128) return OpKind::kRange;
  return OpKind::kNone;
}

const char* op_kind_str(uint8_t kind) {
  switch (static_cast<OpKind>(kind)) {
    case OpKind::kGemm:
      return "gemm";
    case OpKind::kNccl:
      return "nccl";
    case OpKind::kMemcpy:
      return "memcpy";
    case OpKind::kRange:
      return "range";
    case OpKind::kNone:
      return "none";
  }
  return "none";
}

double nccl_bus_factor(OpName op, uint32_t nranks) {
  if (nranks == 0) return 1.0;  // communicator size unknown
  const double n = static_cast<double>(nranks);
  switch (op) {
    case OpName::kAllReduce:
      return 2.0 * (n - 1) / n;
    case OpName::kAllGather:
    case OpName::kReduceScatter:
      return (n - 1) / n;
    default:
      return 1.0;
  }
}

const char* red_op_str(uint8_t red_op) {
  switch (red_op) {
    case 1:
      return "sum";
    case 2:
      return "prod";
    case 3:
      return "max";
    case 4:
      return "min";
    case 5:
      return "avg";
    default:
      return "";
  }
}

const char* dtype_str(DType t) {
  switch (t) {
    case DType::kUnknown:
      return "unknown";
    case DType::kF32:
      return "fp32";
    case DType::kF16:
      return "fp16";
    case DType::kBF16:
      return "bf16";
    case DType::kF64:
      return "fp64";
    case DType::kF8E4M3:
      return "fp8_e4m3";
    case DType::kF8E5M2:
      return "fp8_e5m2";
    case DType::kI8:
      return "int8";
    case DType::kI32:
      return "int32";
    case DType::kI64:
      return "int64";
    case DType::kU8:
      return "uint8";
    case DType::kTF32:
      return "tf32";
  }
  return "unknown";
}

namespace {

bool fail(std::string* error, const std::string& why) {
  if (error != nullptr) *error = why;
  return false;
}

// Copies `src` into a fixed field, NUL-terminated; false when it was cut.
bool copy_bounded(char* field, size_t size, const char* src) {
  const size_t n = strnlen(src, size);
  const size_t kept = n < size ? n : size - 1;
  std::memcpy(field, src, kept);
  field[kept] = '\0';
  return kept == n;
}

bool nul_terminated(const char* field, size_t size) {
  return std::memchr(field, '\0', size) != nullptr;
}

const char* type_name(MsgType type) {
  switch (type) {
    case MsgType::kRegister:
      return "register";
    case MsgType::kCrashReport:
      return "crash report";
    case MsgType::kPythonException:
      return "exception report";
  }
  return "unknown";
}

// Checks the header and that the message is of `want`.
bool decode_typed(const void* data, size_t len, MsgType want, std::string* error) {
  const std::optional<MsgType> type = decode_message(data, len, error);
  if (!type) return false;
  if (*type != want) {
    return fail(error, std::string("a ") + type_name(*type) + " message where a " +
                           type_name(want) + " was expected");
  }
  return true;
}

}  // namespace

MsgHeader make_header(MsgType type, uint32_t bytes) {
  MsgHeader h{};
  h.magic = kMessageMagic;
  h.version = static_cast<uint16_t>(kProtocolVersion);
  h.type = static_cast<uint16_t>(type);
  h.bytes = bytes;
  return h;
}

bool encode_register(const RegisterInfo& info, RegisterMsg* out) {
  std::memset(out, 0, sizeof(*out));
  out->header = make_header(MsgType::kRegister, sizeof(RegisterMsg));
  out->pid = info.pid;
  out->rank = info.identity.rank;
  out->local_rank = info.identity.local_rank;
  out->world_size = info.identity.world_size;
  out->local_world_size = info.identity.local_world_size;
  out->group_rank = info.identity.group_rank;
  const bool host_fits = copy_bounded(out->hostname, sizeof(out->hostname), info.hostname);
  const bool path_fits = copy_bounded(out->status_path, sizeof(out->status_path), info.status_path);
  return host_fits && path_fits;
}

RankIdentity identity_of(const RegisterMsg& msg) {
  RankIdentity id;
  id.rank = msg.rank;
  id.local_rank = msg.local_rank;
  id.world_size = msg.world_size;
  id.local_world_size = msg.local_world_size;
  id.group_rank = msg.group_rank;
  return id;
}

std::string encode_python_exception(std::string_view json) {
  if (json.size() > kMaxMessageBytes - sizeof(MsgHeader)) return "";
  const MsgHeader h = make_header(MsgType::kPythonException,
                                  static_cast<uint32_t>(sizeof(MsgHeader) + json.size()));
  std::string out(reinterpret_cast<const char*>(&h), sizeof(h));
  out.append(json);
  return out;
}

std::optional<MsgType> decode_message(const void* data, size_t len, std::string* error) {
  MsgHeader h;
  if (len < sizeof(h)) {
    fail(error, "message of " + std::to_string(len) + " bytes is too short");
    return std::nullopt;
  }
  std::memcpy(&h, data, sizeof(h));
  std::string why;
  if (h.magic != kMessageMagic) {
    why = "bad message magic";
  } else if (h.version != kProtocolVersion) {
    why = "protocol version " + std::to_string(h.version) + ", supervisor speaks " +
          std::to_string(kProtocolVersion) + " (stale libxpu_timer_inject.so?)";
  } else if (h.bytes != len || len > kMaxMessageBytes) {
    why = "message of " + std::to_string(len) + " bytes, header says " + std::to_string(h.bytes);
  } else {
    const auto type = static_cast<MsgType>(h.type);
    switch (type) {
      case MsgType::kRegister:
      case MsgType::kCrashReport: {
        const size_t want =
            type == MsgType::kRegister ? sizeof(RegisterMsg) : sizeof(CrashReportMsg);
        if (len == want) return type;
        why = std::string(type_name(type)) + " message of " + std::to_string(len) +
              " bytes, expected " + std::to_string(want);
        break;
      }
      case MsgType::kPythonException:
        if (len > sizeof(h)) return type;
        why = "empty exception report";
        break;
      default:
        why = "unknown message type " + std::to_string(h.type);
    }
  }
  fail(error, why);
  return std::nullopt;
}

bool decode_register(const void* data, size_t len, RegisterMsg* out, std::string* error) {
  if (!decode_typed(data, len, MsgType::kRegister, error)) return false;
  std::memcpy(out, data, sizeof(*out));
  if (!nul_terminated(out->hostname, sizeof(out->hostname))) {
    return fail(error, "hostname is not NUL-terminated");
  }
  if (!nul_terminated(out->status_path, sizeof(out->status_path))) {
    return fail(error, "status_path is not NUL-terminated");
  }
  return true;
}

bool decode_crash_report(const void* data, size_t len, CrashReportMsg* out, std::string* error) {
  if (!decode_typed(data, len, MsgType::kCrashReport, error)) return false;
  std::memcpy(out, data, sizeof(*out));
  if (out->nframes > static_cast<uint32_t>(kCrashMaxFrames) ||
      out->nmodules > static_cast<uint32_t>(kCrashMaxModules)) {
    return fail(error, "frame or module count out of range");
  }
  return true;
}

std::optional<std::string_view> decode_python_exception(const void* data, size_t len,
                                                        std::string* error) {
  if (!decode_typed(data, len, MsgType::kPythonException, error)) return std::nullopt;
  return std::string_view(static_cast<const char*>(data) + sizeof(MsgHeader),
                          len - sizeof(MsgHeader));
}

}  // namespace xpu_timer::proto
