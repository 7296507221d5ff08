// A registering rank's record: its status page attached (validated against
// the registration), its flight-recorder ring when it has one, and its
// process's start time (so that a reused pid is never taken for it).
// Asio thread (the rank socket's callbacks).
#pragma once

#include <cstdint>
#include <optional>

#include "supervisor/ranks/rank_registry.h"

namespace xpu_timer::supervisor {

// nullopt when the page cannot be attached (logged: the registration is
// refused). A missing or unreadable ring only loses the flight recorder.
std::optional<RankRecord> attach_rank(uint64_t connection_id, const RankRegistration& reg);

// A registration taken into `registry` (attached as above, then added; one log
// line, naming the pid it replaces when the rank registers again). False when
// the page cannot be attached: the rank socket refuses the registration.
bool admit_rank(RankRegistry* registry, uint64_t connection_id, const RankRegistration& reg);

}  // namespace xpu_timer::supervisor
