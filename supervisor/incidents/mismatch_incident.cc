#include "supervisor/incidents/mismatch_incident.h"

#include <set>

#include "common/comm_names.h"
#include "supervisor/analysis/op_json.h"
#include "supervisor/incidents/culprit_locations.h"
#include "supervisor/incidents/dump_files.h"
#include "supervisor/log_tee.h"

namespace xpu_timer::supervisor {

MismatchIncident::MismatchIncident(IncidentDumps* dumps, std::string dump_dir,
                                   MismatchLedger* ledger, StacksDone stacks_done)
    : dumps_(dumps),
      dump_dir_(std::move(dump_dir)),
      ledger_(ledger),
      stacks_done_(std::move(stacks_done)) {}

void MismatchIncident::on_mismatch(const Mismatch& m) {
  SUP_LOG_WARN("collective mismatch: %s", m.summary.c_str());
  // The same evidence as a hang: every rank's recent operations and stacks,
  // once per mismatch (the monitor reports each collective once). The odd
  // ranks' places follow when the stacks are in.
  nlohmann::json entry = mismatch_json(m);
  entry["where"] = nlohmann::json::object();
  entry.update(dumps_->timelines_and_stacks(
      "mismatch", [done = stacks_done_, m](std::shared_ptr<const StackDumpReport> r) {
        done(MismatchStacks{m, std::move(r)});
      }));
  write_file(ledger_->remember(m, std::move(entry)));
  // An odd rank whose recorder kept the line that issued the collective is
  // placed there at once; the others where their stacks find them.
  const RankPlaces issued = issued_places(m);
  if (issued.empty()) return;
  SUP_LOG_WARN("%s", mismatch_where_line(m, issued).c_str());
  write_file(ledger_->locate(m, issued));
}

RankPlaces MismatchIncident::issued_places(const Mismatch& m) {
  RankPlaces out;
  for (const int rank : m.odd_ranks) {
    const auto it = m.issued_at.find(rank);
    if (it != m.issued_at.end()) out[rank] = {it->second};
  }
  return out;
}

void MismatchIncident::on_stacks_done(const Mismatch& m, const StackDumpReport& dump) {
  // Only the odd ranks are blamed (with two ranks, none: either may be the
  // wrong one); only this node's are in its dump.
  std::set<int> odd(m.odd_ranks.begin(), m.odd_ranks.end());
  for (const auto& [rank, where] : issued_places(m)) odd.erase(rank);  // placed by their line
  if (odd.empty()) return;
  std::vector<std::string> errors;
  const RankPlaces places = places_in_dump(dump, odd, {}, &errors);
  for (const std::string& e : errors) SUP_LOG_WARN("where the odd rank is: %s", e.c_str());
  if (places.empty()) return;
  SUP_LOG_WARN("%s", mismatch_where_line(m, places).c_str());
  write_file(ledger_->locate(m, places));
}

void MismatchIncident::write_file(const nlohmann::json& all) const {
  if (dump_dir_.empty()) return;
  write_file_or_warn(dump_dir_ + "/mismatch.json",
                     json_text(nlohmann::json{{"mismatches", all}}, 2) + "\n");
}

std::string mismatch_where_line(const Mismatch& m, const RankPlaces& places) {
  if (places.empty()) return "";
  // Ranks by place, in the order of their lowest rank.
  std::vector<std::pair<std::vector<CodeFrame>, std::vector<int>>> by_place;
  for (const auto& [rank, where] : places) {
    auto it = by_place.begin();
    while (it != by_place.end() && !(it->first == where)) ++it;
    if (it == by_place.end()) {
      by_place.push_back({where, {rank}});
    } else {
      it->second.push_back(rank);
    }
  }
  std::string line = "collective mismatch #" + std::to_string(m.seq) + " on comm " +
                     comm_hex(m.comm_hash) + ": ";
  for (size_t i = 0; i < by_place.size(); ++i) {
    const std::vector<int>& ranks = by_place[i].second;
    if (i > 0) line += "; ";
    line += ranks.size() == 1 ? "rank " : "ranks ";
    for (size_t j = 0; j < ranks.size(); ++j) {
      line += (j > 0 ? "," : "") + std::to_string(ranks[j]);
    }
    line += " (odd) in " + where_phrase(by_place[i].first);
  }
  return line;
}

}  // namespace xpu_timer::supervisor
