#include "timeline/op_describe.h"

#include <cstdio>
#include <cstring>

namespace xpu_timer::timeline {

using recorder::RecordData;

namespace {

// " 4096x4096x1024" (" x8" appended for a batch), "" when the shape is unknown.
std::string gemm_shape(const RecordData& r) {
  if ((r.m | r.n | r.k) == 0) return "";
  char buf[64];
  std::snprintf(buf, sizeof(buf), " %ux%ux%u", r.m, r.n, r.k);
  std::string s = buf;
  if (r.batch > 1) {
    std::snprintf(buf, sizeof(buf), " x%u", r.batch);
    s += buf;
  }
  return s;
}

}  // namespace

const char* op_name(const RecordData& r) {
  return proto::op_name_str(static_cast<proto::OpName>(r.name));
}

const char* dtype_name(const RecordData& r) {
  return proto::dtype_str(static_cast<proto::DType>(r.dtype));
}

// The kind comes from the name, not from RecordData::kind: a record whose two
// fields disagree (a corrupt file) is still drawn one way, consistently.
bool is_nccl(const RecordData& r) {
  return proto::op_kind_of(static_cast<proto::OpName>(r.name)) == proto::OpKind::kNccl;
}

bool is_gemm(const RecordData& r) {
  return proto::op_kind_of(static_cast<proto::OpName>(r.name)) == proto::OpKind::kGemm;
}

std::string comm_hex(uint64_t comm_hash) {
  char buf[17];
  std::snprintf(buf, sizeof(buf), "%016llx", static_cast<unsigned long long>(comm_hash));
  return buf;
}

std::string stream_hex(uint64_t stream) {
  char buf[24];
  std::snprintf(buf, sizeof(buf), "0x%llx", static_cast<unsigned long long>(stream));
  return buf;
}

std::string op_label(const RecordData& r) {
  std::string s = op_name(r);
  char buf[96];
  if (is_nccl(r)) {
    std::snprintf(buf, sizeof(buf), " #%llu", static_cast<unsigned long long>(r.seq));
    s += buf;
  } else if (is_gemm(r)) {
    s += gemm_shape(r);
  } else if (proto::op_kind_of(static_cast<proto::OpName>(r.name)) == proto::OpKind::kMemcpy) {
    // "MemcpyH2D 64 MiB": a copy's size is what tells copies apart.
    s += " " + size_label(r.bytes);
  }
  return s;
}

std::string slice_label(const RecordData& r) {
  std::string s = op_name(r);
  const std::string shape = is_gemm(r) ? gemm_shape(r) : "";
  if (shape.empty()) return s;
  const char* dtype = dtype_name(r);
  if (std::strcmp(dtype, "unknown") != 0) s += std::string(" ") + dtype;
  return s + shape;
}

std::string size_label(uint64_t bytes) {
  char buf[48];
  const double b = static_cast<double>(bytes);
  if (bytes >= (1ull << 30)) {
    std::snprintf(buf, sizeof(buf), "%.3g GiB", b / (1ull << 30));
  } else if (bytes >= (1ull << 20)) {
    std::snprintf(buf, sizeof(buf), "%.3g MiB", b / (1ull << 20));
  } else if (bytes >= (1ull << 10)) {
    std::snprintf(buf, sizeof(buf), "%.3g KiB", b / (1ull << 10));
  } else {
    std::snprintf(buf, sizeof(buf), "%llu B", static_cast<unsigned long long>(bytes));
  }
  return buf;
}

std::string shape_key(const RecordData& r) {
  char buf[96];
  if (is_gemm(r)) {
    std::snprintf(buf, sizeof(buf), "m=%u n=%u k=%u batch=%u", r.m, r.n, r.k, r.batch);
  } else {
    std::snprintf(buf, sizeof(buf), "bytes=%llu", static_cast<unsigned long long>(r.bytes));
  }
  return buf;
}

uint64_t gpu_time_ns(const RecordData& r) {
  if (r.state != static_cast<uint8_t>(recorder::OpState::kCompleted)) return 0;
  if ((r.flags & recorder::kRecTimed) == 0) return 0;
  if (r.gpu_start_ns == 0 || r.gpu_end_ns < r.gpu_start_ns) return 0;
  return r.gpu_end_ns - r.gpu_start_ns;
}

double bus_factor(const RecordData& r) {
  return proto::nccl_bus_factor(static_cast<proto::OpName>(r.name), r.nranks);
}

const char* red_op_name(uint8_t red_op) { return proto::red_op_str(red_op); }

}  // namespace xpu_timer::timeline
