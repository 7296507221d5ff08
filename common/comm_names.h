// How communicators and sets of ranks are named in sentences, JSON and
// metric labels, the same everywhere: hang verdicts, the collective check,
// /ranks, crash records. Pure; any thread.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "common/status_page_layout.h"

namespace xpu_timer {

// "1a2b3c4d5e6f7a8b": a communicator's hash, 16 lowercase hex digits.
std::string comm_hex(uint64_t comm_hash);

// A page's name of the communicator; "" = unknown. The page reader made it
// NUL-terminated and printable (common/status_page.cc).
std::string comm_slot_name(const proto::CommSlot& c);

// "comm 1a2b3c4d5e6f7a8b", or "comm 1a2b3c4d5e6f7a8b (tp_group)" with a name.
std::string comm_phrase(uint64_t comm_hash, const std::string& name);

// "rank 3" / "ranks 0,1,3" (up to 8 ranks) / "ranks 0-15/17" (folded beyond).
std::string ranks_phrase(const std::vector<int>& ranks);
// "rank 3" / "ranks 0-3/6": always folded (a stall or a hang's waiters name
// any number of ranks).
std::string folded_ranks_phrase(const std::vector<int>& ranks);

}  // namespace xpu_timer
