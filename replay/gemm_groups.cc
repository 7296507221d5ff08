#include "replay/gemm_groups.h"

#include <algorithm>
#include <cstddef>
#include <cstdio>
#include <map>
#include <vector>

#include "common/op_names.h"
#include "common/recorder_ring.h"
#include "timeline/op_describe.h"

namespace xpu_timer::replay {

std::vector<GemmGroup> group_gemms(const timeline::LoadedDumps& dumps) {
  std::map<GemmKey, GemmGroup> groups;
  std::map<GemmKey, std::vector<uint64_t>> samples;  // each group's timed calls
  for (const timeline::RankTimeline& t : dumps.ranks) {
    for (const recorder::RecordData& r : t.ring.records) {
      if (!timeline::is_gemm(r)) continue;
      if (r.state == static_cast<uint8_t>(recorder::OpState::kFailed)) continue;
      GemmKey key;
      key.api = r.name;
      key.dtype = r.dtype;
      key.gemm_ops = r.gemm_ops;
      key.m = r.m;
      key.n = r.n;
      key.k = r.k;
      key.batch = r.batch;
      GemmGroup& g = groups[key];
      g.key = key;
      ++g.calls;
      if (const uint64_t ns = timeline::gpu_time_ns(r); ns > 0) {
        ++g.timed;
        g.timed_ns += ns;
        samples[key].push_back(ns);
      }
    }
  }
  std::vector<GemmGroup> out;
  out.reserve(groups.size());
  for (auto& [key, g] : groups) {
    std::vector<uint64_t>& v = samples[key];
    if (!v.empty()) {  // the lower median of an even count
      const auto mid = v.begin() + static_cast<std::ptrdiff_t>((v.size() - 1) / 2);
      std::nth_element(v.begin(), mid, v.end());
      g.median_ns = *mid;
    }
    out.push_back(g);
  }
  std::stable_sort(out.begin(), out.end(), [](const GemmGroup& a, const GemmGroup& b) {
    return a.job_total_ns() > b.job_total_ns();
  });
  return out;
}

const char* op_letter(int op) {
  switch (op) {
    case 0:
      return "N";
    case 1:
      return "T";
    case 2:
      return "C";
    default:
      return "?";
  }
}

std::string key_label(const GemmKey& k) {
  char buf[160];
  std::snprintf(buf, sizeof(buf), "%s %s %s%s m=%u n=%u k=%u batch=%u",
                proto::op_name_str(static_cast<proto::OpName>(k.api)),
                proto::dtype_str(static_cast<proto::DType>(k.dtype)),
                op_letter(recorder::gemm_op_a(k.gemm_ops)),
                op_letter(recorder::gemm_op_b(k.gemm_ops)), k.m, k.n, k.k, k.batch);
  return buf;
}

}  // namespace xpu_timer::replay
