// Prometheus text exposition (format 0.0.4) of every rank's status page:
// what `GET /metrics` answers. docs/metrics.md lists every family, its
// labels and meaning, and the PromQL for xpu-timer's metric names.
//
// MetricsWriter renders one scrape: ranks are added one at a time (so only
// one page copy is alive) and each family's lines go to their own buffer,
// concatenated once at the end. MetricsExporter is what the HTTP handler
// calls: it reads each registered rank's page (StatusPageFile::read, which
// validates it), keeps the recent-window state of the rate gauges, and renders.
//
// Labels: every series has rank, local_rank, host and job_name (not `job`:
// Prometheus owns that target label and would rename ours exported_job).
// Per-operation series add op, kind, dtype, size_bucket (floor(log2) of the
// operation's flops for GEMMs, of its bytes for NCCL) and, for NCCL, nranks,
// algo, proto and transport. Cardinality is bounded by the page: at most
// proto::kMaxMetrics operation keys per rank, and a key not updated for
// `expiry_s` is no longer exported. The histograms (26 series each) are
// summed per node and key, without rank and local_rank, unless
// `per_rank_histograms` (node_histograms.h): per rank only counters and
// gauges.
//
// Threads: MetricsWriter is used by one thread. MetricsExporter::render is
// called by HTTP threads concurrently; it serialises on its own mutex.
#pragma once

#include <array>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <set>
#include <string>
#include <vector>

#include "common/status_page.h"
#include "common/status_page_layout.h"
#include "supervisor/analysis/hang_detector.h"
#include "supervisor/metrics/metrics_rate_window.h"
#include "supervisor/metrics/node_histograms.h"
#include "supervisor/ranks/rank_registry.h"
#include "supervisor/ranks/rank_sampler.h"

namespace xpu_timer::supervisor {

struct MetricsConfig {
  std::string job_name;   // the job_name label of every series
  // Their defaults are those of XPU_TIMER_METRICS_EXPIRY_S and
  // XPU_TIMER_METRICS_WINDOW_S (supervisor/options.h).
  double expiry_s = 600;  // drop keys idle this long
  double window_s = 30;   // window of the rate gauges
  // --metrics-histograms rank: histograms per rank rather than per node.
  bool per_rank_histograms = false;

  // job_name from metrics_job_name (job_name.h) over the supervisor's
  // environment, `job_id` ("" when none was found), the command's argv[0],
  // the host name and the time now; window and expiry are the caller's
  // (the supervisor's settings).
  static MetricsConfig from_env(const std::vector<std::string>& command, const std::string& job_id,
                                bool per_rank_histograms);
};

struct RankMetricsInput {
  int rank = 0;
  int local_rank = 0;
  pid_t pid = 0;
  std::string host;
  bool up = false;     // process alive
  bool stuck = false;  // its state in the latest hang report
  // xpu_timer_rank_state: ok, stuck, missing, unresponsive, exited (from the
  // hang report), crashed or terminated (from the crash tracker).
  std::string state = "ok";
  double heartbeat_age_s = 0;
  // A private copy, from StatusSnapshot::page(); null if unreadable.
  const proto::StatusPage* page = nullptr;
};

class MetricsWriter {
 public:
  enum Family {
    kRankUp,
    kRankState,
    kHang,
    kInflight,
    kHeartbeatAge,
    kQueueDepth,
    kDropped,
    kSkipped,
    kHookErrors,
    kOperations,
    kOperationsTimed,
    kOperationGpuTime,
    kLatency,
    kGemmFlops,
    kGemmFlopsRate,
    kNcclBytes,
    kNcclBusBytes,
    kNcclAlgoBw,
    kNcclBusBw,
    kNcclChannels,
    kMemcpyBytes,
    kMemcpyBw,
    kKernelLaunches,
    kHostBlocked,
    kDeviceMallocs,
    kDeviceMallocBytes,
    kDeviceFrees,
    kDeviceFreeBytes,
    kGcCollections,
    kGcPause,
    kGcCollected,
    kLoaderBatches,
    kLoaderWait,
    kRangeLatency,
    kRangesDropped,
    kFunctionCalls,
    kFunctionTime,
    kFunctionLatency,
    kStepLatency,
    kStepLast,
    kStepGpuBusy,
    kStepGpuIdle,
    kStepBubble,
    kStepUntimed,
    kSelfPollerCpu,
    kSelfHook,
    kFamilyCount
  };
  // One text buffer per family; reusing them across scrapes keeps their
  // memory (a scrape of 1024 ranks writes ~90 MB).
  using Buffers = std::array<std::string, kFamilyCount>;

  // `rates` (may be null: no rate gauges) is updated with this scrape's
  // totals; `now_ns` is CLOCK_MONOTONIC, the clock of the pages' times;
  // `reuse` (may be null) lends buffers, emptied here.
  MetricsWriter(const MetricsConfig& config, RateWindow* rates, uint64_t now_ns,
                Buffers* reuse = nullptr);
  void add_rank(const RankMetricsInput& in);
  // Appends the job-level families and returns the whole exposition.
  // `job_running`: xpu_timer_job_running, 0 once the job's main process ended
  // (what tells a finished job from a dead supervisor in the alerts);
  // `job_stalled`: xpu_timer_job_stalled (HangReport::stalled).
  std::string finish(bool job_hung, bool job_running = true, uint64_t mismatches = 0,
                     bool job_stalled = false);

 private:
  void add_slot(const RankMetricsInput& in, uint32_t index, const proto::MetricSlot& m);
  // One histogram series: per rank (`key` after the rank's labels) or into
  // the node's sum (after its node labels).
  void add_histogram(Family f, const std::string& key, const uint64_t (&hist)[proto::kHistBuckets],
                     uint64_t sum_ns, bool live = true);

  const MetricsConfig& config_;
  RateWindow* const rates_;
  const uint64_t now_ns_;
  const uint64_t expiry_ns_;
  std::string node_labels_;  // host and job_name of the rank being added
  std::string rank_labels_;  // rank and local_rank, then node_labels_
  std::string op_labels_;    // of the slot being added: rank_labels_ + op_key_
  std::string op_key_;       // the slot's own labels (op, kind, ...)
  std::string scratch_;      // a histogram series' labels
  NodeHistograms latency_, ranges_, functions_, steps_;
  Buffers own_;
  Buffers& body_;
};

class MetricsExporter {
 public:
  // `busy_pause`: the pause before rereading a page busy under its seqlock
  // (read_page, supervisor/ranks/rank_sampler.h); tests pass their own.
  explicit MetricsExporter(MetricsConfig config,
                           std::function<void()> busy_pause = pause_for_busy_page);
  // The exposition for these ranks (registry snapshot) and hang report;
  // `ended`: pid -> "crashed" / "terminated" of the ranks the crash tracker
  // concluded on (may be null); `mismatched`: ranks blamed for a collective
  // mismatch (state "mismatch" while otherwise ok), `mismatches`: how many
  // mismatches the supervisor found so far.
  std::string render(const std::vector<RankRecord>& records, const HangReport& report,
                     const std::map<pid_t, std::string>* ended = nullptr, bool job_running = true,
                     const std::set<int>* mismatched = nullptr, uint64_t mismatches = 0);
  const MetricsConfig& config() const { return config_; }

 private:
  const MetricsConfig config_;
  const std::function<void()> busy_pause_;
  std::mutex mu_;
  RateWindow rates_;                // guarded by mu_
  proto::StatusSnapshot scratch_;   // guarded by mu_
  MetricsWriter::Buffers buffers_;  // guarded by mu_
};

// Label value escaping of the text format: \ " and newline.
void append_escaped_label_value(std::string* out, const std::string& value);
// ns as seconds with all nine decimals, exactly ("12.000000345").
void append_ns_as_seconds(std::string* out, uint64_t ns);

inline constexpr const char* kMetricsContentType = "text/plain; version=0.0.4; charset=utf-8";

}  // namespace xpu_timer::supervisor
