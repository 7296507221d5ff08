#include "supervisor/metrics/transfer_metrics.h"

#include "common/comm_names.h"
#include "common/op_names.h"
#include "supervisor/metrics/metrics_exporter.h"
#include "supervisor/metrics/node_histograms.h"

namespace xpu_timer::supervisor {
namespace {

constexpr const char* kBandwidth = "xpu_timer_nccl_transfer_bus_bandwidth_bytes_per_second";
constexpr const char* kWait = "xpu_timer_nccl_wait_seconds_total";
constexpr const char* kTransfer = "xpu_timer_nccl_transfer_seconds_total";
constexpr const char* kCollectives = "xpu_timer_nccl_transfer_collectives_total";

}  // namespace

std::string transfer_metrics_text(const TransferReport& report, const std::string& job_name) {
  std::string job = "job_name=\"";
  append_escaped_label_value(&job, job_name);
  job.push_back('"');
  std::string out, labels;
  bool any = false;
  for (const TransferSeries& s : report.series) {
    if (s.bus_bandwidth <= 0) continue;  // nothing measured in the window: no stale value
    if (!any) {
      append_family_header(
          &out, kBandwidth, "gauge",
          "NCCL bus bandwidth of the transfer alone over the recent window: bytes / the time "
          "after the collective's last member arrived (the least of its members' GPU times), "
          "times the nccl-tests factor. AllReduce, AllGather and ReduceScatter timed on every "
          "member, all on this node; the wait for the last member is left out, the SMs shared "
          "with other kernels are not.");
      any = true;
    }
    labels.assign("rank=\"").append(std::to_string(s.key.rank));
    labels.append("\",op=\"").append(proto::op_name_str(static_cast<proto::OpName>(s.key.op)));
    labels.append("\",dtype=\"").append(proto::dtype_str(static_cast<proto::DType>(s.key.dtype)));
    labels.append("\",size_bucket=\"").append(std::to_string(s.key.size_bucket));
    labels.append("\",nranks=\"").append(std::to_string(s.key.nranks)).append("\",").append(job);
    append_sample_prefix(&out, kBandwidth, "", labels);
    append_shortest(&out, s.bus_bandwidth);
    out.push_back('\n');
  }
  if (!report.times.empty()) {
    std::string wait, transfer;
    append_family_header(
        &wait, kWait, "counter",
        "GPU time of the rank at the collectives the transfer bandwidth measured, "
        "before their transfer: waiting for the last member to arrive (and "
        "ending after it). Its share of wait + transfer is the rank's wait share.");
    append_family_header(&transfer, kTransfer, "counter",
                         "GPU time of the rank at those collectives after their last member "
                         "arrived: wait + transfer is its GPU time at them.");
    for (const RankCommTime& t : report.times) {
      labels.assign("rank=\"").append(std::to_string(t.rank));
      labels.append("\",comm=\"").append(comm_hex(t.comm)).append("\",comm_name=\"");
      append_escaped_label_value(&labels, t.comm_name);
      labels.append("\",").append(job);
      append_sample_prefix(&wait, kWait, "", labels);
      append_ns_as_seconds(&wait, t.wait_ns);
      wait.push_back('\n');
      append_sample_prefix(&transfer, kTransfer, "", labels);
      append_ns_as_seconds(&transfer, t.transfer_ns);
      transfer.push_back('\n');
    }
    out.append(wait).append(transfer);
  }
  append_family_header(
      &out, kCollectives, "counter",
      "AllReduce, AllGather and ReduceScatter collectives the transfer bandwidth took, by "
      "outcome: measured, or skipped because a member was sampled out of timing "
      "(sampled_out), a member's record never came (missing_member) or members run on another "
      "node (remote_member).");
  const std::pair<const char*, uint64_t> outcomes[] = {{"measured", report.counts.measured},
                                                       {"sampled_out", report.counts.sampled_out},
                                                       {"missing_member", report.counts.missing},
                                                       {"remote_member", report.counts.remote}};
  for (const auto& [outcome, n] : outcomes) {
    labels.assign(job).append(",outcome=\"").append(outcome).append("\"");
    append_sample_prefix(&out, kCollectives, "", labels);
    append_u64(&out, n);
    out.push_back('\n');
  }
  return out;
}

}  // namespace xpu_timer::supervisor
