#include "supervisor/metrics_exporter.h"

#include <algorithm>
#include <cstdio>

#include "supervisor/op_json.h"

namespace xpu_timer::supervisor {
namespace {

struct FamilyInfo {
  const char* name;
  const char* type;
  const char* help;
};

// Order and text of the families; index = MetricsWriter::Family.
constexpr FamilyInfo kFamilies[] = {
    {"xpu_timer_rank_up", "gauge", "1 while the rank's process is alive."},
    {"xpu_timer_hang", "gauge", "1 while the rank is stuck in an operation past the hang timeout."},
    {"xpu_timer_inflight_operations", "gauge", "Operations launched and not yet completed."},
    {"xpu_timer_heartbeat_age_seconds", "gauge",
     "Seconds since the rank's background thread last refreshed its status page."},
    {"xpu_timer_dropped_records_total", "counter",
     "Operation records lost because the rank's queue was full."},
    {"xpu_timer_skipped_capture_total", "counter",
     "Calls not timed because their stream was capturing a CUDA graph."},
    {"xpu_timer_hook_errors_total", "counter",
     "Calls where xpu-timer failed internally and passed through untimed."},
    {"xpu_timer_operations_total", "counter", "Timed operations completed."},
    {"xpu_timer_operation_latency_seconds", "histogram", "GPU execution time of timed operations."},
    {"xpu_timer_nccl_bytes_total", "counter", "NCCL payload bytes of completed collectives."},
    {"xpu_timer_gemm_flops_total", "counter",
     "Floating point operations of completed matrix products."},
};

void append_u64(std::string* out, uint64_t v) {
  char buf[24];
  const int n = std::snprintf(buf, sizeof(buf), "%llu", static_cast<unsigned long long>(v));
  out->append(buf, static_cast<size_t>(n));
}

void append_double(std::string* out, double v, const char* fmt) {
  char buf[48];
  const int n = std::snprintf(buf, sizeof(buf), fmt, v);
  out->append(buf, static_cast<size_t>(n));
}

// name{labels} value\n with `labels` already rendered (no braces).
void append_sample_prefix(std::string* out, const char* name, const char* suffix,
                          const std::string& labels) {
  out->append(name);
  out->append(suffix);
  out->push_back('{');
  out->append(labels);
  out->append("} ");
}

}  // namespace

void append_escaped_label_value(std::string* out, const std::string& value) {
  for (char c : value) {
    switch (c) {
      case '\\':
        out->append("\\\\");
        break;
      case '"':
        out->append("\\\"");
        break;
      case '\n':
        out->append("\\n");
        break;
      default:
        out->push_back(c);
    }
  }
}

void append_ns_as_seconds(std::string* out, uint64_t ns) {
  char buf[32];
  const int n = std::snprintf(buf, sizeof(buf), "%llu.%09llu",
                              static_cast<unsigned long long>(ns / 1000000000ull),
                              static_cast<unsigned long long>(ns % 1000000000ull));
  out->append(buf, static_cast<size_t>(n));
}

MetricsWriter::MetricsWriter() {
  static_assert(sizeof(kFamilies) / sizeof(kFamilies[0]) == kFamilyCount);
  for (std::string& b : body_) b.reserve(4096);
}

void MetricsWriter::add_rank(const RankMetricsInput& in) {
  std::string labels;
  labels.reserve(64 + in.host.size());
  labels.append("rank=\"");
  labels.append(std::to_string(in.rank));
  labels.append("\",local_rank=\"");
  labels.append(std::to_string(in.local_rank));
  labels.append("\",host=\"");
  append_escaped_label_value(&labels, in.host);
  labels.push_back('"');

  auto gauge = [&](Family f, const std::string& value) {
    std::string& out = body_[f];
    append_sample_prefix(&out, kFamilies[f].name, "", labels);
    out.append(value);
    out.push_back('\n');
  };
  gauge(kRankUp, in.up ? "1" : "0");
  gauge(kHang, in.stuck ? "1" : "0");
  {
    std::string age;
    append_double(&age, in.heartbeat_age_s, "%.3f");
    gauge(kHeartbeatAge, age);
  }
  const proto::StatusPage* p = in.page;
  if (p == nullptr) return;
  gauge(kInflight, std::to_string(p->inflight_count));
  gauge(kDropped, std::to_string(p->dropped_queue_full));
  gauge(kSkipped, std::to_string(p->skipped_capture));
  gauge(kHookErrors, std::to_string(p->hook_errors));

  const uint32_t nmetrics = std::min<uint32_t>(p->nmetrics, proto::kMaxMetrics);
  std::string op_labels;
  for (uint32_t i = 0; i < nmetrics; ++i) {
    const proto::MetricSlot& m = p->metrics[i];
    if (m.name == 0) continue;
    const auto name = static_cast<proto::OpName>(m.name);
    const proto::OpKind kind = proto::op_kind_of(name);
    op_labels.assign(labels);
    op_labels.append(",op=\"");
    op_labels.append(proto::op_name_str(name));
    op_labels.append("\",kind=\"");
    op_labels.append(op_kind_str(static_cast<uint8_t>(kind)));
    op_labels.append("\",dtype=\"");
    op_labels.append(proto::dtype_str(static_cast<proto::DType>(m.dtype)));
    op_labels.append("\",size_bucket=\"");
    op_labels.append(std::to_string(m.size_bucket));
    op_labels.push_back('"');
    if (kind == proto::OpKind::kNccl) {
      op_labels.append(",nranks=\"");
      op_labels.append(std::to_string(m.nranks));
      op_labels.push_back('"');
    }

    std::string& ops = body_[kOperations];
    append_sample_prefix(&ops, kFamilies[kOperations].name, "", op_labels);
    append_u64(&ops, m.count);
    ops.push_back('\n');

    std::string& h = body_[kLatency];
    const char* hname = kFamilies[kLatency].name;
    uint64_t cumulative = 0;
    for (int b = 0; b < proto::kHistBuckets; ++b) {
      cumulative += m.hist[b];
      h.append(hname);
      h.append("_bucket{");
      h.append(op_labels);
      h.append(",le=\"");
      if (b == proto::kHistBuckets - 1) {
        h.append("+Inf");
      } else {
        append_double(&h, proto::kHistUpperBoundsSeconds[b], "%.10g");
      }
      h.append("\"} ");
      append_u64(&h, cumulative);
      h.push_back('\n');
    }
    append_sample_prefix(&h, hname, "_sum", op_labels);
    append_ns_as_seconds(&h, m.sum_ns);
    h.push_back('\n');
    append_sample_prefix(&h, hname, "_count", op_labels);
    append_u64(&h, cumulative);
    h.push_back('\n');

    if (kind == proto::OpKind::kNccl) {
      std::string& out = body_[kNcclBytes];
      append_sample_prefix(&out, kFamilies[kNcclBytes].name, "", op_labels);
      append_u64(&out, m.sum_bytes);
      out.push_back('\n');
    } else if (kind == proto::OpKind::kGemm) {
      std::string& out = body_[kGemmFlops];
      append_sample_prefix(&out, kFamilies[kGemmFlops].name, "", op_labels);
      append_u64(&out, m.sum_flops);
      out.push_back('\n');
    }
  }
}

std::string MetricsWriter::finish(bool job_hung) {
  size_t total = 256;
  for (const std::string& b : body_) total += b.size() + 200;
  std::string out;
  out.reserve(total);
  for (int f = 0; f < kFamilyCount; ++f) {
    if (body_[f].empty()) continue;
    out.append("# HELP ");
    out.append(kFamilies[f].name);
    out.push_back(' ');
    out.append(kFamilies[f].help);
    out.append("\n# TYPE ");
    out.append(kFamilies[f].name);
    out.push_back(' ');
    out.append(kFamilies[f].type);
    out.push_back('\n');
    out.append(body_[f]);
  }
  out.append("# HELP xpu_timer_job_hung 1 while the supervisor reports a hang on this node.\n");
  out.append("# TYPE xpu_timer_job_hung gauge\n");
  out.append(job_hung ? "xpu_timer_job_hung 1\n" : "xpu_timer_job_hung 0\n");
  return out;
}

}  // namespace xpu_timer::supervisor
