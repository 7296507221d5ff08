#include "replay/replay_report.h"

#include <cstdio>

#include "common/op_names.h"
#include "common/recorder_ring.h"

namespace xpu_timer::replay {
namespace {

std::string num(double v, const char* fmt) {
  char buf[32];
  std::snprintf(buf, sizeof(buf), fmt, v);
  return buf;
}

}  // namespace

double tflops(double flops, double ns) { return ns > 0 ? flops / ns / 1e3 : 0; }

std::string report_table(const ReplayReport& r) {
  std::string out;
  char line[640];
  std::snprintf(line, sizeof(line),
                "%s: %zu rank%s. Job: the dump's timed calls (sum, and the median per call); now: the median "
                "of %d calls\non GPU %s after %d warm-up calls (%s). SLOWER: the job took more "
                "than %.0f%% longer per call.\n",
                r.source.c_str(), r.ranks, r.ranks == 1 ? "" : "s", r.reps, r.device.c_str(),
                r.warmup, r.libraries.c_str(), kSlowerThreshold * 100);
  out += line;
  std::snprintf(line, sizeof(line), "%-22s %-6s %-2s %-30s %7s %7s %10s %10s %10s %8s %8s %7s\n",
                "api", "dtype", "op", "shape", "calls", "timed", "job ms", "job us", "now us",
                "job TF/s", "now TF/s", "ratio");
  out += line;
  for (const ReplayRow& row : r.rows) {
    const GemmKey& k = row.group.key;
    const double job = row.group.job_ns_per_call();
    char shape[64];
    std::snprintf(shape, sizeof(shape), "m=%u n=%u k=%u b=%u", k.m, k.n, k.k, k.batch);
    const std::string ops = std::string(op_letter(recorder::gemm_op_a(k.gemm_ops))) +
                            op_letter(recorder::gemm_op_b(k.gemm_ops));
    const bool timed = row.group.timed > 0;
    std::snprintf(line, sizeof(line),
                  "%-22s %-6s %-2s %-30s %7llu %7llu %10s %10s %10s %8s %8s %7s%s%s\n",
                  proto::op_name_str(static_cast<proto::OpName>(k.api)),
                  proto::dtype_str(static_cast<proto::DType>(k.dtype)), ops.c_str(), shape,
                  static_cast<unsigned long long>(row.group.calls),
                  static_cast<unsigned long long>(row.group.timed),
                  timed ? num(static_cast<double>(row.group.timed_ns) / 1e6, "%.3f").c_str() : "-",
                  timed ? num(job / 1e3, "%.1f").c_str() : "-",
                  row.now.ok ? num(row.now.ns_per_call / 1e3, "%.1f").c_str() : "-",
                  timed ? num(tflops(k.flops(), job), "%.1f").c_str() : "-",
                  row.now.ok ? num(tflops(k.flops(), row.now.ns_per_call), "%.1f").c_str() : "-",
                  row.slowdown() > 0 ? num(row.slowdown(), "%.2f").c_str() : "-",
                  row.flagged() ? "  SLOWER" : "",
                  row.now.note.empty() ? "" : ("  (" + row.now.note + ")").c_str());
    out += line;
  }
  if (r.rows.empty()) out += "(no GEMM in the dump)\n";
  return out;
}

nlohmann::json report_json(const ReplayReport& r) {
  using nlohmann::json;
  json rows = json::array();
  for (const ReplayRow& row : r.rows) {
    const GemmKey& k = row.group.key;
    const double job = row.group.job_ns_per_call();
    const bool timed = row.group.timed > 0;
    auto or_null = [](bool known, double v) { return known ? json(v) : json(nullptr); };
    rows.push_back({
        {"api", proto::op_name_str(static_cast<proto::OpName>(k.api))},
        {"dtype", proto::dtype_str(static_cast<proto::DType>(k.dtype))},
        {"transa", op_letter(recorder::gemm_op_a(k.gemm_ops))},
        {"transb", op_letter(recorder::gemm_op_b(k.gemm_ops))},
        {"m", k.m},
        {"n", k.n},
        {"k", k.k},
        {"batch", k.batch},
        {"calls", row.group.calls},
        {"timed", row.group.timed},
        {"job_us_total", or_null(timed, static_cast<double>(row.group.timed_ns) / 1e3)},
        {"job_us_per_call", or_null(timed, job / 1e3)},
        {"now_us_per_call", or_null(row.now.ok, row.now.ns_per_call / 1e3)},
        {"job_tflops", or_null(timed, tflops(k.flops(), job))},
        {"now_tflops", or_null(row.now.ok, tflops(k.flops(), row.now.ns_per_call))},
        {"ratio", or_null(row.slowdown() > 0, row.slowdown())},
        {"slower", row.flagged()},
        {"note", row.now.note},
    });
  }
  return {{"source", r.source},
          {"ranks", r.ranks},
          {"device", r.device},
          {"libraries", r.libraries},
          {"warmup", r.warmup},
          {"reps", r.reps},
          {"slower_threshold", kSlowerThreshold},
          {"rows", std::move(rows)}};
}

}  // namespace xpu_timer::replay
