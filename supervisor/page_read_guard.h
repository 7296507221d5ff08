// Reads of a status page mapped from a file another process owns. If that
// process truncates the file, touching the mapping raises SIGBUS; the guard
// turns that into a failed read instead of killing the supervisor. Any thread
// (the jump buffer is per thread). Faults outside a guarded read keep their
// previous handling (the handler chains or restores the default).
#pragma once

#include <cstdint>

#include "common/protocol.h"

namespace xpu_timer::supervisor {

// Installs the SIGBUS handler once (idempotent, thread-safe).
void install_page_read_guard();

// proto::read_status_page under the guard. False on a busy seqlock or a fault.
bool guarded_read_status_page(const proto::StatusPage* page, proto::StatusPage* out);

// The immutable header and heartbeat, copied under the guard.
bool guarded_copy(void* dst, const void* src, uint64_t bytes);
bool guarded_load_heartbeat(const proto::StatusPage* page, uint64_t* out);

}  // namespace xpu_timer::supervisor
