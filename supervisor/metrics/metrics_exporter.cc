#include "supervisor/metrics/metrics_exporter.h"

#include <sys/resource.h>
#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <ctime>
#include <map>

#include "common/clock.h"
#include "supervisor/analysis/op_json.h"
#include "supervisor/job/process_table.h"
#include "supervisor/metrics/job_name.h"

namespace xpu_timer::supervisor {
namespace {

struct FamilyInfo {
  const char* name;
  const char* type;
  const char* help;
};

const char* const kRankStates[] = {"ok",      "stuck",      "missing",  "unresponsive", "exited",
                                   "crashed", "terminated", "mismatch", "stalled"};

// Order and text of the families; index = MetricsWriter::Family.
constexpr FamilyInfo kFamilies[] = {
    {"xpu_timer_rank_up", "gauge", "1 while the rank's process is alive."},
    {"xpu_timer_rank_state", "gauge",
     "1 for the rank's current state, 0 for the others (ok, stuck, missing, unresponsive, "
     "exited, crashed, terminated, mismatch: issued a collective that disagrees with the other "
     "ranks', stalled: the job stalled, nothing in flight or completed for the stall time)."},
    {"xpu_timer_hang", "gauge", "1 while the rank is stuck in an operation past the hang timeout."},
    {"xpu_timer_inflight_operations", "gauge", "Operations launched and not yet completed."},
    {"xpu_timer_heartbeat_age_seconds", "gauge",
     "Seconds since the rank's background thread last refreshed its status page."},
    {"xpu_timer_queue_depth", "gauge",
     "Operation records waiting in the rank's queue for its background thread."},
    {"xpu_timer_dropped_records_total", "counter",
     "Operation records lost because the rank's queue was full."},
    {"xpu_timer_skipped_capture_total", "counter",
     "Calls not timed because their stream was capturing a CUDA graph."},
    {"xpu_timer_hook_errors_total", "counter",
     "Calls where xpu-timer failed internally and passed through untimed."},
    {"xpu_timer_operations_total", "counter",
     "Operations completed, timed or sampled out of timing."},
    {"xpu_timer_operations_timed_total", "counter",
     "Operations completed and timed (the rank's share of the latency histogram's _count)."},
    {"xpu_timer_operation_gpu_seconds_total", "counter",
     "GPU execution time of the timed operations (the rank's share of the latency histogram's "
     "_sum)."},
    {"xpu_timer_operation_latency_seconds", "histogram",
     "GPU execution time of timed operations, summed over the node's ranks (per rank with "
     "--metrics-histograms rank)."},
    {"xpu_timer_gemm_flops_total", "counter",
     "Floating point operations (2*b*m*n*k) of every matrix product, timed or sampled out."},
    {"xpu_timer_gemm_flops_per_second", "gauge",
     "Achieved FLOP/s of matrix products over the recent window: their flops / their GPU time."},
    {"xpu_timer_nccl_bytes_total", "counter",
     "NCCL payload bytes of every operation, timed or sampled out (nccl-tests size)."},
    {"xpu_timer_nccl_bus_bytes_total", "counter",
     "NCCL payload bytes of every operation times the nccl-tests bus bandwidth factor."},
    {"xpu_timer_nccl_algo_bandwidth_bytes_per_second", "gauge",
     "NCCL algorithm bandwidth over the recent window: bytes / GPU time of the timed operations, "
     "which includes the wait for the last member to arrive and the SMs shared with other "
     "kernels (the transfer alone: xpu_timer_nccl_transfer_bus_bandwidth_bytes_per_second)."},
    {"xpu_timer_nccl_bus_bandwidth_bytes_per_second", "gauge",
     "NCCL bus bandwidth over the recent window: algorithm bandwidth times the nccl-tests factor; "
     "its GPU time includes the wait for the last member to arrive and the SMs shared with other "
     "kernels (the transfer alone: xpu_timer_nccl_transfer_bus_bandwidth_bytes_per_second)."},
    {"xpu_timer_nccl_channels", "gauge", "NCCL channels used by the latest operation."},
    {"xpu_timer_memcpy_bytes_total", "counter",
     "Bytes of every copy through the CUDA runtime (cudaMemcpy*, cudaMemcpyPeer*), timed or "
     "sampled out, by direction (op)."},
    {"xpu_timer_memcpy_bandwidth_bytes_per_second", "gauge",
     "Copy bandwidth over the recent window: bytes / GPU time of the timed copies."},
    {"xpu_timer_kernel_launches_total", "counter",
     "Kernels launched through the application's CUDA runtime (cudaLaunchKernel*); not those "
     "that cuBLAS, NCCL or Triton launch themselves."},
    {"xpu_timer_host_blocked_seconds_total", "counter",
     "Time the rank's host waited for its GPU in the CUDA runtime: synchronisations, copies to "
     "the host, launches into a full launch queue (one in 16 timed, scaled). A host that never "
     "waits sets its GPU's pace."},
    {"xpu_timer_device_memory_allocations_total", "counter",
     "Successful cudaMalloc, cudaMallocAsync and cudaMallocFromPoolAsync calls."},
    {"xpu_timer_device_memory_allocated_bytes_total", "counter",
     "Bytes requested by those allocations."},
    {"xpu_timer_device_memory_frees_total", "counter",
     "Successful cudaFree and cudaFreeAsync calls of a non-null pointer."},
    {"xpu_timer_device_memory_freed_bytes_total", "counter",
     "Bytes of the frees whose allocation xpu-timer saw."},
    {"xpu_timer_python_gc_collections_total", "counter",
     "Python garbage collections of the rank's interpreter, by generation."},
    {"xpu_timer_python_gc_pause_seconds_total", "counter",
     "Time the rank's interpreter spent in those collections (its threads wait meanwhile)."},
    {"xpu_timer_python_gc_collected_objects_total", "counter", "Objects those collections freed."},
    {"xpu_timer_dataloader_batches_total", "counter",
     "Batches the rank's DataLoader iterator returned."},
    {"xpu_timer_dataloader_wait_seconds_total", "counter",
     "Time the training loop spent in the DataLoader iterator's __next__, waiting for them."},
    {"xpu_timer_nvtx_range_seconds", "histogram",
     "Host time of the program's NVTX ranges, by name (the first 63 names; later ones are "
     "range=\"(other)\")."},
    {"xpu_timer_nvtx_ranges_dropped_total", "counter",
     "NVTX ranges and traced Python calls not recorded: the rank's range queue was full, they "
     "nested deeper than 32, or more than 4096 start/end ranges were open."},
    {"xpu_timer_python_function_calls_total", "counter",
     "Calls of the rank's traced Python functions (XPU_TIMER_HOST_TRACING_FUNC and the built-in "
     "ones), by function."},
    {"xpu_timer_python_function_call_seconds_total", "counter",
     "Host time of those calls, by function."},
    {"xpu_timer_python_function_seconds", "histogram",
     "Host time of calls of traced Python functions, by function, summed over the node's ranks "
     "(per rank with --metrics-histograms rank)."},
    {"xpu_timer_step_seconds", "histogram",
     "Duration of the rank's training steps: each XPU_TIMER_STEP_RANGE range (source=\"nvtx\"), "
     "else the time between two optimizer steps (source=\"optimizer\")."},
    {"xpu_timer_step_last_seconds", "gauge", "Duration of the rank's latest training step."},
    {"xpu_timer_step_gpu_busy_seconds_total", "counter",
     "GPU time of matrix products and copies within the rank's measured steps (their union)."},
    {"xpu_timer_step_gpu_idle_seconds_total", "counter",
     "The rest of those steps: the GPU waited (pipeline bubble, transfers, collectives) or ran "
     "kernels xpu-timer does not time."},
    {"xpu_timer_step_bubble_ratio", "gauge",
     "GPU idle fraction of the latest measured step (an upper bound: untimed kernels count as "
     "idle)."},
    {"xpu_timer_step_untimed_operations_total", "counter",
     "Matrix products and copies within measured steps that were sampled out of timing; not 0: "
     "the idle time is overstated (set XPU_TIMER_SAMPLE_PER_SEC=0)."},
    {"xpu_timer_self_poller_cpu_seconds_total", "counter",
     "CPU time of xpu-timer's background thread (the Poller) in the rank."},
    {"xpu_timer_self_hook_seconds_total", "counter",
     "Estimated time xpu-timer's hooks spent on the rank's own threads (one call in 64 of each "
     "thread measured, times 64)."},
};

const char* step_source_str(uint32_t source) {
  return source == static_cast<uint32_t>(proto::StepSource::kNvtxRange) ? "nvtx" : "optimizer";
}

void append_double(std::string* out, double v, const char* fmt) {
  char buf[48];
  const int n = std::snprintf(buf, sizeof(buf), fmt, v);
  out->append(buf, static_cast<size_t>(n));
}

void append_label(std::string* out, const char* name, const char* value) {
  out->push_back(',');
  out->append(name);
  out->append("=\"");
  out->append(value);
  out->push_back('"');
}

// The slot's key as one number, for RateWindow's identity check.
uint64_t slot_identity(const proto::MetricSlot& m) {
  return static_cast<uint64_t>(m.name) | static_cast<uint64_t>(m.dtype) << 16 |
         static_cast<uint64_t>(m.size_bucket) << 24 | static_cast<uint64_t>(m.algo) << 32 |
         static_cast<uint64_t>(m.proto) << 40 | static_cast<uint64_t>(m.transport) << 48 |
         static_cast<uint64_t>(m.nranks & 0xff) << 56;
}

// The labels of an operation key, after the rank's: ",op=...,kind=...".
void set_op_key(std::string* l, const proto::MetricSlot& m) {
  const auto name = static_cast<proto::OpName>(m.name);
  const proto::OpKind kind = proto::op_kind_of(name);
  l->clear();
  append_label(l, "op", proto::op_name_str(name));
  append_label(l, "kind", op_kind_str(static_cast<uint8_t>(kind)));
  append_label(l, "dtype", proto::dtype_str(static_cast<proto::DType>(m.dtype)));
  l->append(",size_bucket=\"");
  append_u64(l, m.size_bucket);
  l->push_back('"');
  if (kind == proto::OpKind::kNccl) {
    l->append(",nranks=\"");
    append_u64(l, m.nranks);
    l->push_back('"');
    append_label(l, "algo", proto::nccl_algo_str(m.algo));
    append_label(l, "proto", proto::nccl_proto_str(m.proto));
    append_label(l, "transport", proto::nccl_transport_str(m.transport));
  }
}

}  // namespace

MetricsConfig MetricsConfig::from_env(const std::vector<std::string>& command,
                                      const std::string& job_id, bool per_rank_histograms) {
  MetricsConfig c;
  JobNameSources sources;
  sources.env = [](const char* name) -> const char* { return std::getenv(name); };
  sources.job_id = job_id;
  if (!command.empty()) sources.launcher = command.front();
  char host[256] = {};
  if (gethostname(host, sizeof(host) - 1) == 0) sources.host = host;
  sources.start = std::time(nullptr);
  c.job_name = metrics_job_name(sources);
  c.per_rank_histograms = per_rank_histograms;
  return c;
}

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

MetricsWriter::MetricsWriter(const MetricsConfig& config, RateWindow* rates, uint64_t now_ns,
                             Buffers* reuse)
    : config_(config),
      rates_(rates),
      now_ns_(now_ns),
      expiry_ns_(static_cast<uint64_t>(config.expiry_s * 1e9)),
      body_(reuse != nullptr ? *reuse : own_) {
  static_assert(sizeof(kFamilies) / sizeof(kFamilies[0]) == kFamilyCount);
  for (std::string& b : body_) {
    b.clear();
    b.reserve(4096);
  }
}

void MetricsWriter::add_rank(const RankMetricsInput& in) {
  node_labels_.assign("host=\"");
  append_escaped_label_value(&node_labels_, in.host);
  node_labels_.append("\",job_name=\"");
  append_escaped_label_value(&node_labels_, config_.job_name);
  node_labels_.push_back('"');
  std::string& labels = rank_labels_;
  labels.assign("rank=\"");
  labels.append(std::to_string(in.rank));
  labels.append("\",local_rank=\"");
  labels.append(std::to_string(in.local_rank));
  labels.append("\",");
  labels.append(node_labels_);

  auto gauge = [&](Family f, uint64_t value) {
    std::string& out = body_[f];
    append_sample_prefix(&out, kFamilies[f].name, "", labels);
    append_u64(&out, value);
    out.push_back('\n');
  };
  gauge(kRankUp, in.up ? 1 : 0);
  // The Prometheus enum convention: one series per state, so that an alert
  // can name the state and a graph can stack them.
  for (const char* state : kRankStates) {
    std::string& out = body_[kRankState];
    out.append(kFamilies[kRankState].name);
    out.push_back('{');
    out.append(labels);
    out.append(",state=\"");
    out.append(state);
    out.append(in.state == state ? "\"} 1\n" : "\"} 0\n");
  }
  gauge(kHang, in.stuck ? 1 : 0);
  {
    std::string& out = body_[kHeartbeatAge];
    append_sample_prefix(&out, kFamilies[kHeartbeatAge].name, "", labels);
    append_double(&out, in.heartbeat_age_s, "%.3f");
    out.push_back('\n');
  }
  const proto::StatusPage* p = in.page;
  if (p == nullptr) return;
  auto seconds_of = [&](Family f, uint64_t ns) {
    std::string& out = body_[f];
    append_sample_prefix(&out, kFamilies[f].name, "", labels);
    append_ns_as_seconds(&out, ns);
    out.push_back('\n');
  };
  gauge(kInflight, p->inflight_count);
  gauge(kQueueDepth, p->queue_depth);
  gauge(kDropped, p->dropped_queue_full);
  gauge(kSkipped, p->skipped_capture);
  gauge(kHookErrors, p->hook_errors);
  gauge(kKernelLaunches, p->runtime.kernel_launches);
  seconds_of(kHostBlocked, p->runtime.host_blocked_ns);
  gauge(kDeviceMallocs, p->runtime.mallocs);
  gauge(kDeviceMallocBytes, p->runtime.malloc_bytes);
  gauge(kDeviceFrees, p->runtime.frees);
  gauge(kDeviceFreeBytes, p->runtime.free_bytes);
  // Python series only where the probes run (not for a C++ rank).
  if (p->python.probes & proto::kPythonProbeGc) {
    std::string gen_labels;
    for (int g = 0; g < 3; ++g) {
      gen_labels.assign(labels).append(",generation=\"").push_back(static_cast<char>('0' + g));
      gen_labels.push_back('"');
      append_sample_prefix(&body_[kGcCollections], kFamilies[kGcCollections].name, "", gen_labels);
      append_u64(&body_[kGcCollections], p->python.gc_collections[g]);
      body_[kGcCollections].push_back('\n');
      append_sample_prefix(&body_[kGcPause], kFamilies[kGcPause].name, "", gen_labels);
      append_ns_as_seconds(&body_[kGcPause], p->python.gc_pause_ns[g]);
      body_[kGcPause].push_back('\n');
      append_sample_prefix(&body_[kGcCollected], kFamilies[kGcCollected].name, "", gen_labels);
      append_u64(&body_[kGcCollected], p->python.gc_collected[g]);
      body_[kGcCollected].push_back('\n');
    }
  }
  if (p->python.probes & proto::kPythonProbeDataLoader) {
    gauge(kLoaderBatches, p->python.loader_batches);
    std::string& out = body_[kLoaderWait];
    append_sample_prefix(&out, kFamilies[kLoaderWait].name, "", labels);
    append_ns_as_seconds(&out, p->python.loader_wait_ns);
    out.push_back('\n');
  }

  // NVTX ranges and traced functions: only names that ended at least once;
  // the dropped counter once the program used either (a name exists beyond
  // "(other)").
  const uint32_t nranges = std::min<uint32_t>(p->nranges, proto::kMaxRanges);
  std::string range_labels, function_labels;
  for (uint32_t i = 0; i < nranges; ++i) {
    const proto::RangeSlot& r = p->ranges[i];
    if (r.count == 0) continue;
    const bool function = r.kind == static_cast<uint32_t>(proto::RangeKind::kPythonFunction);
    range_labels.assign(function ? ",function=\"" : ",range=\"");
    append_escaped_label_value(&range_labels,
                               std::string(r.name, strnlen(r.name, proto::kRangeNameBytes)));
    range_labels.push_back('"');
    if (!function) {
      add_histogram(kRangeLatency, range_labels, r.hist, r.sum_ns);
      continue;
    }
    add_histogram(kFunctionLatency, range_labels, r.hist, r.sum_ns);
    function_labels.assign(labels).append(range_labels);
    append_sample_prefix(&body_[kFunctionCalls], kFamilies[kFunctionCalls].name, "",
                         function_labels);
    append_u64(&body_[kFunctionCalls], r.count);
    body_[kFunctionCalls].push_back('\n');
    append_sample_prefix(&body_[kFunctionTime], kFamilies[kFunctionTime].name, "", function_labels);
    append_ns_as_seconds(&body_[kFunctionTime], r.sum_ns);
    body_[kFunctionTime].push_back('\n');
  }
  if (nranges > 1 || p->ranges_dropped > 0) gauge(kRangesDropped, p->ranges_dropped);
  seconds_of(kSelfPollerCpu, p->self.poller_cpu_ns);
  seconds_of(kSelfHook, p->self.hook_sampled_ns * p->self.hook_sample_every);
  if (p->steps.steps > 0) {
    std::string step_key;
    append_label(&step_key, "source", step_source_str(p->steps.source));
    add_histogram(kStepLatency, step_key, p->steps.hist, p->steps.sum_ns);
    seconds_of(kStepLast, p->steps.last_ns);
    if (p->steps.measured > 0) {
      seconds_of(kStepGpuBusy, p->steps.busy_ns);
      seconds_of(kStepGpuIdle, p->steps.idle_ns);
      gauge(kStepUntimed, p->steps.untimed_ops);
      if (p->steps.last_window_ns > 0 && p->steps.last_busy_ns <= p->steps.last_window_ns) {
        std::string& out = body_[kStepBubble];
        append_sample_prefix(&out, kFamilies[kStepBubble].name, "", labels);
        append_shortest(&out, 1.0 - static_cast<double>(p->steps.last_busy_ns) /
                                        static_cast<double>(p->steps.last_window_ns));
        out.push_back('\n');
      }
    }
  }

  // StatusSnapshot validated nmetrics; the renderer stays safe on any page.
  const uint32_t nmetrics = std::min<uint32_t>(p->nmetrics, proto::kMaxMetrics);
  for (uint32_t i = 0; i < nmetrics; ++i) {
    const proto::MetricSlot& m = p->metrics[i];
    if (m.name == 0 || m.count + m.untimed_count == 0) continue;
    // Expiry: a key idle for expiry_s leaves the exposition (and Prometheus
    // marks its series stale); it comes back with its totals if used again.
    if (expiry_ns_ > 0 && now_ns_ > m.last_update_ns && now_ns_ - m.last_update_ns > expiry_ns_) {
      // Still in its node's sum (node_histograms.h), which must not go down
      // while another rank uses the key.
      if (!config_.per_rank_histograms) {
        set_op_key(&op_key_, m);
        add_histogram(kLatency, op_key_, m.hist, m.sum_ns, /*live=*/false);
      }
      continue;
    }
    add_slot(in, i, m);
  }
}

void MetricsWriter::add_slot(const RankMetricsInput& in, uint32_t index,
                             const proto::MetricSlot& m) {
  const auto name = static_cast<proto::OpName>(m.name);
  const proto::OpKind kind = proto::op_kind_of(name);
  const bool nccl = kind == proto::OpKind::kNccl;
  set_op_key(&op_key_, m);
  std::string& l = op_labels_;
  l.assign(rank_labels_).append(op_key_);

  auto sample = [&](Family f, const char* suffix) -> std::string& {
    std::string& out = body_[f];
    append_sample_prefix(&out, kFamilies[f].name, suffix, l);
    return out;
  };
  auto line_u64 = [&](Family f, uint64_t v) {
    std::string& out = sample(f, "");
    append_u64(&out, v);
    out.push_back('\n');
  };
  auto line_double = [&](Family f, double v) {
    std::string& out = sample(f, "");
    append_shortest(&out, v);
    out.push_back('\n');
  };

  line_u64(kOperations, m.count + m.untimed_count);  // every call; the histogram: timed ones

  line_u64(kOperationsTimed, m.count);
  append_ns_as_seconds(&sample(kOperationGpuTime, ""), m.sum_ns);
  body_[kOperationGpuTime].push_back('\n');
  add_histogram(kLatency, op_key_, m.hist, m.sum_ns);

  RateWindow::Totals d{};
  if (rates_ != nullptr) {
    d = rates_->delta(in.rank, in.pid, index, slot_identity(m),
                      RateWindow::Totals{m.count, m.sum_ns, m.sum_bytes, m.sum_flops}, now_ns_);
  }
  const bool have_rate = d.count > 0 && d.sum_ns > 0;
  const double window_seconds = static_cast<double>(d.sum_ns) / 1e9;

  // The totals count every call (sampled-out ones included); the rates and
  // the histogram are of the timed calls only: untimed ones have no GPU time.
  if (kind == proto::OpKind::kGemm) {
    line_u64(kGemmFlops, m.sum_flops + m.untimed_flops);
    if (have_rate) line_double(kGemmFlopsRate, static_cast<double>(d.sum_flops) / window_seconds);
  } else if (nccl) {
    const double factor = proto::nccl_bus_factor(name, m.nranks);
    const uint64_t all_bytes = m.sum_bytes + m.untimed_bytes;
    line_u64(kNcclBytes, all_bytes);
    line_double(kNcclBusBytes, static_cast<double>(all_bytes) * factor);
    if (have_rate) {
      const double algbw = static_cast<double>(d.sum_bytes) / window_seconds;
      line_double(kNcclAlgoBw, algbw);
      line_double(kNcclBusBw, algbw * factor);
    }
    if (m.nchannels != 0) line_u64(kNcclChannels, m.nchannels);
  } else if (kind == proto::OpKind::kMemcpy) {
    line_u64(kMemcpyBytes, m.sum_bytes + m.untimed_bytes);
    if (have_rate) line_double(kMemcpyBw, static_cast<double>(d.sum_bytes) / window_seconds);
  }
}

void MetricsWriter::add_histogram(Family f, const std::string& key,
                                  const uint64_t (&hist)[proto::kHistBuckets], uint64_t sum_ns,
                                  bool live) {
  if (config_.per_rank_histograms) {
    scratch_.assign(rank_labels_).append(key);
    append_histogram(&body_[f], kFamilies[f].name, scratch_, hist, sum_ns);
    return;
  }
  scratch_.assign(node_labels_).append(key);
  NodeHistograms& sums = f == kLatency           ? latency_
                         : f == kRangeLatency    ? ranges_
                         : f == kFunctionLatency ? functions_
                                                 : steps_;
  sums.add(scratch_, hist, sum_ns, live);
}

std::string MetricsWriter::finish(bool job_hung, bool job_running, uint64_t mismatches,
                                  bool job_stalled) {
  latency_.render(kFamilies[kLatency].name, &body_[kLatency]);
  ranges_.render(kFamilies[kRangeLatency].name, &body_[kRangeLatency]);
  functions_.render(kFamilies[kFunctionLatency].name, &body_[kFunctionLatency]);
  steps_.render(kFamilies[kStepLatency].name, &body_[kStepLatency]);
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
  // The job-level families, one series each.
  const auto job_family = [&](const char* name, const char* type, const char* help,
                              const std::string& value) {
    out.append("# HELP ").append(name).append(" ").append(help).append("\n# TYPE ");
    out.append(name).append(" ").append(type).append("\n").append(name).append("{job_name=\"");
    append_escaped_label_value(&out, config_.job_name);
    out.append("\"} ").append(value).append("\n");
  };
  job_family("xpu_timer_job_hung", "gauge", "1 while the supervisor reports a hang on this node.",
             job_hung ? "1" : "0");
  job_family("xpu_timer_job_stalled", "gauge",
             "1 while the supervisor reports the job stalled: every rank alive with nothing in "
             "flight, nothing issued or completed for the stall time.",
             job_stalled ? "1" : "0");
  job_family("xpu_timer_job_running", "gauge",
             "1 while the job runs, 0 once it ended (the supervisor exits soon after).",
             job_running ? "1" : "0");
  job_family("xpu_timer_collective_mismatches_total", "counter",
             "Collectives whose ranks disagreed on the operation, dtype, element count, root or "
             "reduction.",
             std::to_string(mismatches));
  // The supervisor's own cost: every thread of this process (children, such
  // as stack collectors and plugins, are not included).
  rusage usage{};
  if (getrusage(RUSAGE_SELF, &usage) == 0) {
    const auto ns = [](const timeval& tv) {
      return static_cast<uint64_t>(tv.tv_sec) * 1'000'000'000ull +
             static_cast<uint64_t>(tv.tv_usec) * 1000ull;
    };
    out.append(
        "# HELP xpu_timer_self_supervisor_cpu_seconds_total CPU time of the supervisor "
        "process, every thread (user and system).\n"
        "# TYPE xpu_timer_self_supervisor_cpu_seconds_total counter\n"
        "xpu_timer_self_supervisor_cpu_seconds_total{job_name=\"");
    append_escaped_label_value(&out, config_.job_name);
    out.append("\"} ");
    append_ns_as_seconds(&out, ns(usage.ru_utime) + ns(usage.ru_stime));
    out.push_back('\n');
  }
  return out;
}

MetricsExporter::MetricsExporter(MetricsConfig config, std::function<void()> busy_pause)
    : config_(std::move(config)),
      busy_pause_(std::move(busy_pause)),
      rates_(static_cast<uint64_t>(config_.window_s * 1e9)) {}

std::string MetricsExporter::render(const std::vector<RankRecord>& records,
                                    const HangReport& report,
                                    const std::map<pid_t, std::string>* ended, bool job_running,
                                    const std::set<int>* mismatched, uint64_t mismatches) {
  std::map<int, RankState> states;
  for (const RankVerdict& v : report.ranks) states[v.rank] = v.state;

  std::lock_guard<std::mutex> lock(mu_);
  const uint64_t now = monotonic_ns();
  MetricsWriter writer(config_, &rates_, now, &buffers_);
  for (const RankRecord& rec : records) {
    RankMetricsInput in;
    in.rank = rec.reg.rank;
    in.local_rank = rec.reg.local_rank;
    in.pid = rec.reg.pid;
    in.host = rec.reg.host;
    in.up = process_alive(rec.reg.pid, rec.start_time);
    auto it = states.find(rec.reg.rank);
    in.stuck = it != states.end() && it->second == RankState::kStuck;
    if (it != states.end()) in.state = rank_state_name(it->second);
    if (in.state == std::string("ok") && mismatched != nullptr &&
        mismatched->count(rec.reg.rank) != 0) {
      in.state = "mismatch";
    }
    if (!in.up) in.state = rank_state_name(RankState::kExited);  // fresher than the last poll
    if (ended != nullptr) {
      auto e = ended->find(rec.reg.pid);
      if (e != ended->end() && !in.up) in.state = e->second;
    }
    if (rec.page != nullptr) {
      // As the poll reads it: a page mid-update is waited for, not dropped.
      read_page(*rec.page, &scratch_, busy_pause_);
      in.heartbeat_age_s =
          static_cast<double>(scratch_.heartbeat_age_ns(now, rec.registered_ns)) / 1e9;
      if (scratch_.page_ok()) in.page = &scratch_.page();
    }
    writer.add_rank(in);
  }
  // Ranks that re-registered or went away: their window state goes after a
  // while (kept a window longer than the expiry so a brief gap keeps it).
  rates_.sweep(now, static_cast<uint64_t>((config_.expiry_s + config_.window_s) * 1e9));
  return writer.finish(report.hung, job_running, mismatches, report.stalled);
}

}  // namespace xpu_timer::supervisor
