// The straggler verdicts in words (straggler.h): one sentence per
// straggler, and the verdict's.
#include <cstdio>
#include <string>
#include <vector>

#include "common/comm_names.h"
#include "common/op_names.h"
#include "supervisor/analysis/straggler.h"

namespace xpu_timer::supervisor {
namespace {

std::string ms_text(double s) {
  char buf[32];
  const double ms = s * 1e3;
  std::snprintf(buf, sizeof buf, ms >= 10 ? "%.0f ms" : "%.1f ms", ms);
  return buf;
}

}  // namespace

std::string stragglers_summary(const std::vector<Straggler>& stragglers) {
  if (stragglers.empty()) return "no straggler";
  std::string out = stragglers.front().summary;
  if (stragglers.size() > 1) out += "; and " + std::to_string(stragglers.size() - 1) + " more";
  return out;
}

std::string straggler_sentence(const Straggler& s) {
  char buf[512];
  std::string who = "rank " + std::to_string(s.rank);
  if (s.node >= 0) who += " on node " + std::to_string(s.node);
  std::snprintf(buf, sizeof buf,
                "%s arrived last at %.0f%% of %ss on %s, %s late (median), holding them back "
                "%.1f%% of the time more than its peers do",
                who.c_str(), s.late_share * 100, op_name_str(static_cast<proto::OpName>(s.op)),
                comm_phrase(s.comm, s.comm_name).c_str(), ms_text(s.median_late_s).c_str(),
                s.impact * 100);
  std::string out = buf;
  const SlowEvidence& e = s.evidence;
  switch (s.cause) {
    case SlowCause::kLink:
      std::snprintf(
          buf, sizeof buf,
          "; its collectives ran %s after every rank had arrived, its peers' %s: slow link",
          ms_text(e.transfer_s).c_str(), ms_text(e.peer_transfer_s).c_str());
      break;
    case SlowCause::kHost: {
      std::snprintf(buf, sizeof buf,
                    "; it launched its work %s after its peers and its GPU waited for the host",
                    ms_text(e.launch_late_s).c_str());
      std::string host = buf;
      if (e.loader_s > e.peer_loader_s || e.gc_s > e.peer_gc_s) {
        std::snprintf(buf, sizeof buf,
                      " (in the window DataLoader waits %.2f s, GC pauses %.2f s; peers %.2f s, "
                      "%.2f s)",
                      e.loader_s, e.gc_s, e.peer_loader_s, e.peer_gc_s);
        host += buf;
      }
      if (e.peer_host_blocked_s >= 0) {
        std::snprintf(buf, sizeof buf,
                      "; its peers' hosts waited %.2f s for their GPUs in the window, its own "
                      "%.2f s",
                      e.peer_host_blocked_s, e.host_blocked_s);
        host += buf;
      }
      std::snprintf(buf, sizeof buf, "%s: busy host", host.c_str());
      break;
    }
    case SlowCause::kGpu:
      if (e.gemm_shapes > 0 && e.gemm_ratio > 1) {
        std::snprintf(buf, sizeof buf,
                      "; its GEMMs ran %.0f%% slower than its peers' on the same shapes: slow GPU",
                      (e.gemm_ratio - 1) * 100);
      } else {
        std::snprintf(buf, sizeof buf,
                      "; its GPU reached them %s later after their launch than its peers' "
                      "(busy longer, or shared): slow GPU",
                      ms_text(e.queue_excess_s).c_str());
      }
      break;
    case SlowCause::kUnknown:
      std::snprintf(buf, sizeof buf, "; cause unknown");
      break;
  }
  return out + buf;
}

}  // namespace xpu_timer::supervisor
