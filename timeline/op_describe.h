// How one flight-recorder record is named and measured, shared by the trace
// and the diff so that both call an operation the same: its label
// ("AllReduce #6", "GemmEx 4096x4096x1024"), its shape key, its GPU time and
// what it achieved (TFLOP/s for a GEMM, nccl-tests bus bandwidth for NCCL).
// Pure functions of a RecordData: the record may come from a hostile file, so
// nothing here trusts a field beyond reading it.
#pragma once

#include <cstdint>
#include <string>

#include "common/recorder_ring.h"

namespace xpu_timer::timeline {

const char* op_name(const recorder::RecordData& r);
const char* dtype_name(const recorder::RecordData& r);
bool is_nccl(const recorder::RecordData& r);
bool is_gemm(const recorder::RecordData& r);

// 16 lowercase hex digits, as the supervisor's hang.json writes comms.
std::string comm_hex(uint64_t comm_hash);
// "0x7f00a0001000"
std::string stream_hex(uint64_t stream);

// One operation as messages name it: "AllReduce #6" (NCCL), "GemmEx
// 4096x4096x1024" (GEMM, " x8" for a batch), "MemcpyH2D 64 MiB" (copies).
std::string op_label(const recorder::RecordData& r);
// What a trace slice is named: the same for every call of one kind, so that
// a viewer's per-name statistics (Perfetto's slice aggregation, a sandwich
// view) add up the calls that cost the same. "AllReduce", "MemcpyH2D" (the
// sequence number and size go into the slice's args); a GEMM keeps its dtype
// and shape, "GemmEx bf16 4096x4096x1024", because its time depends on them
// and "which GEMM is slow" is asked per shape (as --diff keys it).
std::string slice_label(const recorder::RecordData& r);
// "64 MiB", "1.5 GiB", "512 B".
std::string size_label(uint64_t bytes);

// The shape part of the diff key: "m=4096 n=4096 k=1024 batch=1" for a GEMM,
// "bytes=67108864" otherwise.
std::string shape_key(const recorder::RecordData& r);

// GPU time in ns of a completed, fully timed record (kRecTimed with
// gpu_start <= gpu_end); 0 when it has none.
uint64_t gpu_time_ns(const recorder::RecordData& r);

// nccl-tests' bus bandwidth factor for a collective of `nranks` ranks (1 for
// point-to-point and rooted operations, and when nranks is unknown).
double bus_factor(const recorder::RecordData& r);

// "sum", "prod", "max", "min", "avg", or "" (RecordData::red_op is
// ncclRedOp_t + 1, 0 = none).
const char* red_op_name(uint8_t red_op);

}  // namespace xpu_timer::timeline
