#include "supervisor/metrics/node_histograms.h"

#include <array>
#include <charconv>
#include <cstdio>

#include "supervisor/metrics/metrics_exporter.h"

namespace xpu_timer::supervisor {
namespace {

// `,le="..."} ` of each histogram bucket, rendered once.
const std::array<std::string, proto::kHistBuckets>& bucket_suffixes() {
  static const std::array<std::string, proto::kHistBuckets> suffixes = [] {
    std::array<std::string, proto::kHistBuckets> s;
    for (int b = 0; b < proto::kHistBuckets; ++b) {
      char buf[32];
      if (b == proto::kHistBuckets - 1) {
        std::snprintf(buf, sizeof(buf), "+Inf");
      } else {
        std::snprintf(buf, sizeof(buf), "%.10g", proto::kHistUpperBoundsSeconds[b]);
      }
      s[b] = std::string(",le=\"") + buf + "\"} ";
    }
    return s;
  }();
  return suffixes;
}

// A corrupt page may hold any count: a sum saturates rather than wraps, so
// that it never goes down between scrapes because of one bad rank.
uint64_t add_saturating(uint64_t a, uint64_t b) { return b > UINT64_MAX - a ? UINT64_MAX : a + b; }

}  // namespace

// std::to_chars: no locale, no format parsing (a scrape of 1024 ranks writes
// about a million numbers).
void append_u64(std::string* out, uint64_t v) {
  char buf[24];
  const auto r = std::to_chars(buf, buf + sizeof(buf), v);
  out->append(buf, static_cast<size_t>(r.ptr - buf));
}

void append_shortest(std::string* out, double v) {
  char buf[32];
  const auto r = std::to_chars(buf, buf + sizeof(buf), v);
  out->append(buf, static_cast<size_t>(r.ptr - buf));
}

void append_family_header(std::string* out, const char* name, const char* type, const char* help) {
  out->append("# HELP ").append(name).append(" ").append(help).append("\n# TYPE ");
  out->append(name).append(" ").append(type).append("\n");
}

void append_sample_prefix(std::string* out, const char* name, const char* suffix,
                          const std::string& labels) {
  out->append(name);
  out->append(suffix);
  out->push_back('{');
  out->append(labels);
  out->append("} ");
}

void append_histogram(std::string* h, const char* name, const std::string& labels,
                      const uint64_t (&hist)[proto::kHistBuckets], uint64_t sum_ns) {
  const auto& suffixes = bucket_suffixes();
  uint64_t cumulative = 0;
  for (int b = 0; b < proto::kHistBuckets; ++b) {
    cumulative = add_saturating(cumulative, hist[b]);
    h->append(name);
    h->append("_bucket{");
    h->append(labels);
    h->append(suffixes[b]);
    append_u64(h, cumulative);
    h->push_back('\n');
  }
  append_sample_prefix(h, name, "_sum", labels);
  append_ns_as_seconds(h, sum_ns);
  h->push_back('\n');
  append_sample_prefix(h, name, "_count", labels);
  append_u64(h, cumulative);
  h->push_back('\n');
}

void NodeHistograms::add(const std::string& labels, const uint64_t (&hist)[proto::kHistBuckets],
                         uint64_t sum_ns, bool live) {
  Sum& s = series_[labels];
  for (int b = 0; b < proto::kHistBuckets; ++b) s.hist[b] = add_saturating(s.hist[b], hist[b]);
  s.sum_ns = add_saturating(s.sum_ns, sum_ns);
  s.live = s.live || live;
}

void NodeHistograms::render(const char* name, std::string* out) {
  for (const auto& [labels, s] : series_) {
    if (s.live) append_histogram(out, name, labels, s.hist, s.sum_ns);
  }
  series_.clear();
}

}  // namespace xpu_timer::supervisor
