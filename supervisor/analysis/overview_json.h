// The job at a glance: GET /overview, the document the operator page (GET /)
// polls. It says in few words what GET /hang, GET /slow and GET /ranks say
// at length, and folds the ranks by what they are doing, so that 1,024 ranks
// make a handful of groups and a few kilobytes instead of megabytes a poll
// (docs/architecture.md "Operator page").
//
// Built from those three documents as they are served, so each fact keeps
// its one source (the verdict's sentence, a crash's summary, a straggler's
// cause); nothing here judges anything. Every key it reads may be absent or
// of another type (a document of an older or newer supervisor): such a key
// counts as absent, never as an error. Pure functions, any thread.
//
// Keys (all always written; version 1):
//   verdict     "hang", "stall", "crash", "mismatch", "stragglers", "healthy"
//               or "waiting" (no rank registered yet): the most severe first
//   hang        hung, stalled, detected_at, frozen_since, stalled_since,
//               timeout_s, summary (GET /hang's own)
//   roots       what the stuck ranks wait on: kind, ranks (folded), count,
//               waiters (how many ranks wait on it), culprits[] (rank, node,
//               host, state, reason, where: GET /hang's), at most kMaxListed
//   crashes     count, latest[] (rank, pid, host, outcome, kind, time,
//               summary), newest first, at most kMaxListed
//   mismatches  total, checked, latest[] (summary, odd_ranks folded, comm,
//               comm_name, seq), newest first, at most kMaxListed
//   stragglers  summary, window_s, list[] (rank, node, cause, summary,
//               median_late_s, late_share), at most kMaxListed
//   ranks       expected, registered, groups[], groups_omitted: see below
//   stacks      {dir, in_progress} of the latest stack dump, or null
//   timeline    {dir} of the latest flight-recorder dump, or null
//
// A rank group is the ranks with one state and, when stuck, one collective
// (or, when missing, one reason): state, count, ranks and nodes (folded,
// "0-511/513-1023"), reason, operation (the most common among them, in flight
// or else last completed: name, comm, comm_name, seq_min, seq_max,
// in_flight), steps_min and steps_max (null: no step counted), pending_s_max
// (its oldest operation in flight, the longest), late_s_max (GET /slow's
// median lateness, the largest; null: not judged). The roots' states come
// first, healthy ranks last; at most kMaxGroups groups, the rest counted in
// groups_omitted.
#pragma once

#include <cstddef>
#include <nlohmann/json.hpp>

namespace xpu_timer::supervisor {

constexpr int kOverviewVersion = 1;
constexpr size_t kMaxListed = 8;
constexpr size_t kMaxGroups = 32;

// `hang` as GET /hang serves it, `ranks` as GET /ranks (an array), `slow` as
// GET /slow; any of them may be null (not served).
nlohmann::json overview_json(const nlohmann::json& hang, const nlohmann::json& ranks,
                             const nlohmann::json& slow);

}  // namespace xpu_timer::supervisor
