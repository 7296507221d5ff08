// Who a rank is in its job: torchrun's RANK, LOCAL_RANK, WORLD_SIZE,
// LOCAL_WORLD_SIZE and GROUP_RANK (the node). One type for the identity
// wherever it is held or passed in memory: read from the environment
// (env_config.h), sent on registration (rank_messages.h) and written into
// the status page (status_page_layout.h, status_page.h), the flight-recorder
// ring (recorder_ring.h), the supervisor's registration. The wire and shared-memory forms keep
// their own packed fields (their layouts are pinned); this is what their encoders take and their
// decoders give back. Plain value; any thread.
#pragma once

namespace xpu_timer {

// A process started without torchrun's variables is rank 0 of a world of 1.
struct RankIdentity {
  int rank = 0;
  int local_rank = 0;
  int world_size = 1;
  int local_world_size = 1;
  int group_rank = 0;  // the node: ranks group_rank * local_world_size + [0, local_world_size)
};

}  // namespace xpu_timer
