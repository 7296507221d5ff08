// The per-rank status page file, both sides of it: the one owner of the
// shared memory between a rank (inject/) and the supervisor.
//
// The rank calls StatusPageFile::create(): it makes <run dir>/rank-<R>-<pid>.page,
// maps it shared read-write and is its only writer (its background thread,
// between begin_write() and end_write()). The supervisor calls attach(): it
// maps the file read-only and copies it with read() into a StatusSnapshot,
// the one type its consumers (hang detection, /metrics, crash records) see.
// The layout is proto::StatusPage (common/status_page_layout.h): an ABI between two
// separately built binaries, pinned field by field in status_page.cc.
//
// !!! THE OTHER SIDE IS HOSTILE !!!
// The reader assumes that any byte of the page may change at any moment,
// including while it is being copied, and that the file may be truncated
// under the mapping (the next touch raises SIGBUS). So read():
//   - copies the page under the seqlock into private memory, with a SIGBUS
//     guard around every access to the mapping (a fault is a failed read);
//   - validates the private copy, never the mapping (a second look at the
//     mapping could see another value): the header must still be the one
//     attach() accepted, ncomms <= kMaxComms, nmetrics <= kMaxMetrics, and
//     every enum field of the two operations and of the metric slots in use
//     must be a value this build names;
//   - cleans each communicator name in the copy (no NUL within 32 bytes:
//     empty; unprintable bytes: '?'), which never fails the page;
//   - hands out only that validated copy. Nothing outside this file touches
//     the mapping on the reader side.
// A page that fails validation is a failed read with a reason, as a busy
// seqlock is: consumers treat the rank's page as unreadable this time.
//
// The same shape fits any other shared-memory file between the two sides:
// one class, create() for the writer and attach() for the reader, the
// immutable header written before the magic, a seqlock for what changes, a
// guarded copy, and a validated snapshot type for consumers.
//
// Threads: the rank creates the file once, then only its background thread
// writes; unlink() runs in its exit handler. On the supervisor, attach() and
// read() may run on any thread; a StatusSnapshot is used by one thread at a
// time (reuse one per thread: it holds a ~72 KB copy).
#pragma once

#include <sys/types.h>

#include <cstdint>
#include <memory>
#include <string>

#include "common/env_config.h"
#include "common/status_page_layout.h"

namespace xpu_timer::proto {

// Liveness, defined once: nanoseconds, at `now_ns` (CLOCK_MONOTONIC), since
// the rank last showed life. That is its heartbeat, or its registration when
// later (a rank is not late before it registered; pass 0 for a heartbeat that
// could not be read); 0 for a time after `now_ns`.
uint64_t heartbeat_age_ns(uint64_t now_ns, uint64_t heartbeat_ns, uint64_t registered_ns);

// One read of a rank's page: the liveness part and a private, validated copy
// of the seqlock'ed part. Filled by StatusPageFile::read().
class StatusSnapshot {
 public:
  StatusSnapshot();  // allocates the copy once: keep the snapshot and reuse it

  // The heartbeat is read outside the seqlock, so it may be known while the
  // rest of the page is busy; false when the mapping could not be read.
  bool heartbeat_ok() const { return heartbeat_ok_; }
  uint64_t heartbeat_ns() const { return heartbeat_ok_ ? heartbeat_ns_ : 0; }
  uint64_t heartbeat_age_ns(uint64_t now_ns, uint64_t registered_ns) const {
    return proto::heartbeat_age_ns(now_ns, heartbeat_ns(), registered_ns);
  }

  // True when the seqlock'ed part was copied consistently and passed every
  // check listed at the top of this file; else error() says why.
  bool page_ok() const { return page_ok_; }
  const std::string& error() const { return error_; }

  // The validated copy; meaningful only when page_ok(). Counts are within
  // their tables; entries past ncomms / nmetrics are not checked: ignore them.
  const StatusPage& page() const { return *copy_; }

 private:
  friend class StatusPageFile;
  void reset();

  std::unique_ptr<StatusPage> copy_;
  bool heartbeat_ok_ = false;
  uint64_t heartbeat_ns_ = 0;
  bool page_ok_ = false;
  std::string error_;
};

class StatusPageFile {
 public:
  // Rank side: creates, sizes and maps <run_dir>/rank-<id.rank>-<pid>.page
  // (O_EXCL | O_NOFOLLOW, after removing a stale file of that name) and fills
  // the immutable header, magic last. nullptr with a one-line `error` naming
  // the failed call and errno.
  static std::unique_ptr<StatusPageFile> create(const std::string& run_dir, const RankIdentity& id,
                                                pid_t pid, std::string* error);

  // Supervisor side: opens `path` read-only and checks that it is a regular
  // file of at least a page, maps it read-only and validates magic, version,
  // page_bytes and the registered pid and rank. nullptr with a one-line
  // `error` ("status page <path>: <why>") when anything is wrong.
  static std::unique_ptr<StatusPageFile> attach(const std::string& path, pid_t expected_pid,
                                                int expected_rank, std::string* error);
  // attach() of an open file (a memfd in tests); `fd` stays the caller's.
  // `path` only names the page in messages.
  static std::unique_ptr<StatusPageFile> attach_fd(int fd, const std::string& path,
                                                   pid_t expected_pid, int expected_rank,
                                                   std::string* error);

  // Unmaps; a created file that is still linked is removed (its writer is gone).
  ~StatusPageFile();
  StatusPageFile(const StatusPageFile&) = delete;
  StatusPageFile& operator=(const StatusPageFile&) = delete;

  const std::string& path() const { return path_; }

  // ---- writer: created files only, the rank's background thread ----
  // The mapping, for the fields between begin_write() and end_write();
  // nullptr for an attached file.
  StatusPage* page() { return writable_; }
  // Seqlock writer side: seq is odd between the two; readers retry meanwhile.
  void begin_write();
  void end_write();
  // Liveness, outside the seqlock (CLOCK_MONOTONIC).
  void heartbeat(uint64_t now_ns);
  // Removes the file; the supervisor's mapping stays readable. Idempotent.
  // A rank that exits normally calls it; a file left behind by a dead rank
  // tells the supervisor that it died without its exit handler.
  void unlink();

  // ---- reader: any thread, one snapshot per thread ----
  // Fills `out` (see StatusSnapshot); returns out->page_ok(). Never faults:
  // a truncated file, a busy seqlock or a page failing validation is a false
  // return with out->error() set.
  bool read(StatusSnapshot* out) const;

 private:
  StatusPageFile(void* mapping, std::string path, bool owner);

  const StatusPage* mapping_;  // the shared mapping (read side: PROT_READ)
  StatusPage* writable_;       // == mapping_ when created, else nullptr
  std::string path_;
  bool linked_;  // created and not yet unlinked
  // The header attach() accepted; read() insists that it has not changed.
  int32_t pid_ = 0;
  int32_t rank_ = 0;
};

}  // namespace xpu_timer::proto
