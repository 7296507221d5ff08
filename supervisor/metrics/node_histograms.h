// The histogram families of GET /metrics (operation latency, NVTX ranges,
// steps) summed over the node's ranks: what keeps a scrape's series count
// proportional to the operation keys, not to keys x ranks x 26
// (docs/metrics.md "Series budget"). A histogram per rank is the option
// `--metrics-histograms rank`; MetricsWriter then renders them directly.
//
// Each series is keyed by its whole label text (host, job_name and the key's
// own labels): ranks whose keys agree add up bucket by bucket. A series is
// rendered while at least one rank's slot of it is live (not expired): an
// expired slot still adds its counts, so that the sum only grows while the
// key is used anywhere on the node (a rank that restarts lowers it, which
// Prometheus reads as a counter reset).
//
// Threads: one writer's, like MetricsWriter.
#pragma once

#include <cstdint>
#include <map>
#include <string>

#include "common/status_page_layout.h"

namespace xpu_timer::supervisor {

// Text-format primitives shared by the renderers.
void append_u64(std::string* out, uint64_t v);
// The shortest text that reads back as the same double.
void append_shortest(std::string* out, double v);
// "# HELP name help" and "# TYPE name type" lines.
void append_family_header(std::string* out, const char* name, const char* type, const char* help);
// `name` `suffix` `{labels} ` (the value follows).
void append_sample_prefix(std::string* out, const char* name, const char* suffix,
                          const std::string& labels);
// The _bucket (cumulative), _sum and _count lines of one histogram series.
void append_histogram(std::string* out, const char* name, const std::string& labels,
                      const uint64_t (&hist)[proto::kHistBuckets], uint64_t sum_ns);

class NodeHistograms {
 public:
  // Adds one rank's histogram to the series `labels`; `live`: the slot was
  // updated within the expiry.
  void add(const std::string& labels, const uint64_t (&hist)[proto::kHistBuckets], uint64_t sum_ns,
           bool live);
  // Appends every live series' lines to `out` and empties the sums.
  void render(const char* name, std::string* out);
  bool empty() const { return series_.empty(); }

 private:
  struct Sum {
    uint64_t hist[proto::kHistBuckets] = {};
    uint64_t sum_ns = 0;
    bool live = false;
  };
  std::map<std::string, Sum> series_;  // ordered: the same text for the same input
};

}  // namespace xpu_timer::supervisor
