// The NCCL communicators this process knows: comm pointer -> CommEntry
// (comm_hash, size, rank, device, per-communicator issued sequence number).
//
// Threads: entries are added by the communicator-constructor hooks (and, for
// a communicator we never saw created, by the first collective hook using it)
// under a mutex: rare. Lookups by the collective hooks are lock-free. The
// Poller reads entries [0, size()) to fill the page's comms[]. Entries are
// append-only and never freed, so an index stays valid for the process's
// life; a pointer that NCCL reuses for a new communicator gets a new entry.
// Lives in static storage with constant initialisation (no constructor or
// destructor runs), so hooks may use it at any time, even during exit.
//
// Names: the group name the program gave the communicator (NCCL >= 2.27
// ncclConfig_t::commName, or what NCCL hands the profiler plugin's init) is
// copied into the entry before it is published, so the Poller reads it
// without a lock and the collective hooks never touch it. PyTorch sets no
// commName: its process groups' names come later, from the Python probes
// (name_later), once per entry.
#pragma once

#include <nccl.h>

#include <atomic>
#include <cstdint>
#include <mutex>

#include "common/status_page_layout.h"

namespace xpu_timer::inject {

// Bytes of a kept communicator name, NUL included.
constexpr size_t kCommNameBytes = proto::kCommNameBytes;

// Copies `name` into `out`: at most kCommNameBytes - 1 bytes, bytes outside
// printable ASCII replaced by '?', always NUL-terminated; "" for nullptr.
// Returns whether the result is non-empty.
bool copy_comm_name(const char* name, char (&out)[kCommNameBytes]);

// The commName of a config the program passed to an NCCL constructor, read
// only where that program's struct has the field (NCCL >= 2.27: size and
// version say so; a program built against an older nccl.h passes a shorter
// struct). Returns false, `out` empty, when there is none.
bool comm_name_from_config(const ncclConfig_t* config, char (&out)[kCommNameBytes]);

// Profiler-plugin handoff. NCCL calls the plugin's init inside the
// constructor, on the calling thread for a blocking communicator created
// outside a group: the constructor hook opens a window, the plugin's init
// drops the name NCCL gives it there, the hook takes it after the call.
// Elsewhere (NCCL's own threads) the note finds no window and is dropped.
// Thread-local, no allocation, no lock.
void plugin_name_window_open();
void plugin_name_note(const char* name);
// Closes the window; true with the name when init named the communicator.
bool plugin_name_window_take(char (&out)[kCommNameBytes]);

struct CommEntry {
  static constexpr uint32_t kDestroyed = 1;  // ncclCommDestroy/Abort was called
  static constexpr uint32_t kUnknown = 2;    // hash not shared by the other ranks

  std::atomic<uint64_t> hash{0};
  std::atomic<int32_t> nranks{0};
  std::atomic<int32_t> rank{0};
  std::atomic<int32_t> device{-1};  // -1: use the caller's current device
  std::atomic<uint32_t> flags{0};
  std::atomic<uint64_t> issued_seq{0};   // incremented by the hooks, 1-based seq
  std::atomic<uint64_t> split_count{0};  // ncclCommSplit calls with this as parent
  // Written before the entry is published (count_), never after: "" = unknown.
  char name[kCommNameBytes] = {};
  // A name learned after publication (name_later): written once, before
  // late_named turns true, never after.
  std::atomic<bool> late_named{false};
  char late_name[kCommNameBytes] = {};

  // The name to show: the constructor's, else the one learned later, else "".
  const char* shown_name() const {
    if (name[0] != '\0') return name;
    return late_named.load(std::memory_order_acquire) ? late_name : name;
  }
};

class CommRegistry {
 public:
  static constexpr uint32_t kCapacity = 4096;
  static constexpr uint32_t kNone = UINT32_MAX;

  constexpr CommRegistry() = default;

  // Adds a new entry for `comm`. With `replace`, a newer communicator at the
  // address of a destroyed one gets its own entry; without, an existing
  // entry is returned instead. Returns the index, or kNone when full.
  // `name`: the communicator's name as copy_comm_name made it, or nullptr.
  uint32_t add(const void* comm, uint64_t hash, int nranks, int rank, int device, uint32_t flags,
               bool replace, const char* name = nullptr);
  // Lock-free; kNone when unknown.
  uint32_t find(const void* comm) const;
  CommEntry& entry(uint32_t index) { return entries_[index]; }
  const CommEntry& entry(uint32_t index) const { return entries_[index]; }
  // Number of published entries (indices [0, size()) are valid).
  uint32_t size() const { return count_.load(std::memory_order_acquire); }
  void mark_destroyed(const void* comm);
  // Names `comm` after the fact (the program's process group, which the
  // Python probes read from torch): kept once, only for an entry that got
  // no name from its constructor. False when unknown, named, or `name` empty.
  bool name_later(const void* comm, const char* name);

 private:
  static constexpr uint32_t kMapSlots = 2 * kCapacity;  // load factor <= 1/2
  static uint32_t slot_for(const void* comm);

  std::mutex add_mu_;
  std::atomic<uint32_t> count_{0};
  CommEntry entries_[kCapacity];
  std::atomic<uintptr_t> map_keys_[kMapSlots] = {};
  std::atomic<uint32_t> map_values_[kMapSlots] = {};
};

// The process-wide registry.
CommRegistry& comm_registry();

}  // namespace xpu_timer::inject
