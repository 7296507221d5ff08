#include "tests/simgpu/launcher_nodes.h"

#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cstdint>

#include "tests/simgpu/rank_group.h"

namespace xpu_timer::simgpu {
namespace {

constexpr uint32_t kRegistryMagic = 0x58534e4fu;  // "XSNO"

enum NodeState : uint32_t { kEmpty = 0, kRunning = 1, kDone = 2 };

struct NodeSlot {
  int32_t pid;
  uint32_t state;
};

// The registry file's contents, read and written whole under flock(). A new
// file is empty, which reads as all zeros.
struct Registry {
  uint32_t magic;
  uint32_t nnodes;
  uint32_t nproc;
  uint32_t reserved;
  NodeSlot nodes[kMaxNodes];
};

std::string errno_text(const std::string& what) { return what + ": " + strerror(errno); }

bool lock(int fd, int op) {
  while (flock(fd, op) != 0) {
    if (errno != EINTR) return false;
  }
  return true;
}

bool read_registry(int fd, Registry* r) {
  memset(r, 0, sizeof(*r));
  const ssize_t n = pread(fd, r, sizeof(*r), 0);
  if (n < 0) return false;
  if (static_cast<size_t>(n) < sizeof(*r)) {
    memset(reinterpret_cast<char*>(r) + n, 0, sizeof(*r) - static_cast<size_t>(n));
  }
  return true;
}

bool write_registry(int fd, const Registry& r) {
  const ssize_t n = pwrite(fd, &r, sizeof(r), 0);
  if (n == static_cast<ssize_t>(sizeof(r))) return true;
  if (n >= 0) errno = EIO;
  return false;
}

// A launcher that can still leave: it exists and is not a zombie (a
// SIGKILLed launcher whose parent has not reaped it yet never will).
bool launcher_alive(int32_t pid) {
  if (pid <= 0) return false;
  if (kill(pid, 0) != 0 && errno == ESRCH) return false;
  char path[64];
  snprintf(path, sizeof(path), "/proc/%d/stat", static_cast<int>(pid));
  FILE* f = fopen(path, "re");
  if (f == nullptr) return errno != ENOENT;
  char buf[512];
  const size_t n = fread(buf, 1, sizeof(buf) - 1, f);
  fclose(f);
  buf[n] = '\0';
  const char* paren = strrchr(buf, ')');  // the command name may hold anything
  if (paren == nullptr || paren[1] != ' ') return true;
  return paren[2] != 'Z' && paren[2] != 'X';
}

bool any_other_alive(const Registry& r, int node_rank) {
  for (int i = 0; i < kMaxNodes; ++i) {
    if (i != node_rank && r.nodes[i].state == kRunning && launcher_alive(r.nodes[i].pid)) {
      return true;
    }
  }
  return false;
}

// Opens the registry and locks it exclusively, making sure the locked file
// is still the one under the name (the last launcher of a finished job may
// have removed it while this one waited for the lock). -1 on failure.
int open_locked(const std::string& path, std::string* message) {
  for (int attempt = 0; attempt < 1000; ++attempt) {
    const int fd = open(path.c_str(), O_RDWR | O_CREAT | O_CLOEXEC, 0600);
    if (fd < 0) {
      *message = errno_text("open(" + path + ")");
      return -1;
    }
    if (!lock(fd, LOCK_EX)) {
      *message = errno_text("flock(" + path + ")");
      close(fd);
      return -1;
    }
    struct stat held {
    }, named{};
    if (fstat(fd, &held) != 0) {
      *message = errno_text("fstat(" + path + ")");
      close(fd);
      return -1;
    }
    if (stat(path.c_str(), &named) == 0 && named.st_ino == held.st_ino &&
        named.st_dev == held.st_dev) {
      return fd;
    }
    close(fd);  // removed (and maybe recreated) meanwhile: take the current one
  }
  *message = path + " keeps being removed while this launcher opens it";
  return -1;
}

}  // namespace

std::string LauncherNodes::path(const std::string& job_id) {
  return "/dev/shm/xpu_sim_" + job_id + "_nodes";
}

std::unique_ptr<LauncherNodes> LauncherNodes::join(const std::string& job_id, int nnodes, int nproc,
                                                   int node_rank, JoinError* error,
                                                   std::string* message) {
  *error = JoinError::kSystem;
  if (nnodes < 1 || nnodes > kMaxNodes || node_rank < 0 || node_rank >= nnodes) {
    *error = JoinError::kConflict;
    *message = "node rank " + std::to_string(node_rank) + " of " + std::to_string(nnodes) +
               " nodes is out of range";
    return nullptr;
  }
  const std::string file = path(job_id);
  for (int attempt = 0; attempt < 2; ++attempt) {
    const int fd = open_locked(file, message);
    if (fd < 0) return nullptr;
    Registry r;
    if (!read_registry(fd, &r)) {
      *message = errno_text("read(" + file + ")");
      close(fd);
      return nullptr;
    }
    if (r.magic != 0 && (r.magic != kRegistryMagic || !any_other_alive(r, -1))) {
      // Left by launchers that were killed: so are the job's other segments.
      // Remove them all (this file too, still locked, so that a launcher
      // waiting for it starts afresh as well) and start over.
      remove_job_segments(job_id);
      close(fd);
      continue;
    }
    const std::string job = "job '" + job_id + "'";
    if (r.magic == 0) {
      r.magic = kRegistryMagic;
      r.nnodes = static_cast<uint32_t>(nnodes);
      r.nproc = static_cast<uint32_t>(nproc);
    } else if (r.nnodes != static_cast<uint32_t>(nnodes) ||
               r.nproc != static_cast<uint32_t>(nproc)) {
      *error = JoinError::kConflict;
      *message = job + " runs --nnodes " + std::to_string(r.nnodes) + " --nproc " +
                 std::to_string(r.nproc) + ", but this launcher has --nnodes " +
                 std::to_string(nnodes) + " --nproc " + std::to_string(nproc);
      close(fd);
      return nullptr;
    }
    NodeSlot& slot = r.nodes[node_rank];
    if (slot.state != kEmpty) {
      *error = JoinError::kConflict;
      *message = "node rank " + std::to_string(node_rank) + " of " + job +
                 (slot.state == kRunning && launcher_alive(slot.pid) ? " is already running"
                                                                     : " has already run") +
                 " (launcher pid " + std::to_string(slot.pid) + ")";
      close(fd);
      return nullptr;
    }
    slot.pid = static_cast<int32_t>(getpid());
    slot.state = kRunning;
    if (!write_registry(fd, r)) {
      *message = errno_text("write(" + file + ")");
      close(fd);
      return nullptr;
    }
    if (!lock(fd, LOCK_UN)) {
      *message = errno_text("flock(" + file + ", LOCK_UN)");
      close(fd);
      return nullptr;
    }
    *error = JoinError::kNone;
    return std::unique_ptr<LauncherNodes>(new LauncherNodes(job_id, node_rank, fd));
  }
  *message = file + " was left by killed launchers and could not be replaced";
  return nullptr;
}

LauncherNodes::~LauncherNodes() { leave(); }

bool LauncherNodes::leave() {
  if (fd_ < 0) return false;
  const int fd = fd_;
  fd_ = -1;
  const std::string file = path(job_id_);
  // Our own entry says "running" until now, so no other launcher can have
  // judged the file stale and replaced it: fd is still the registry.
  if (!lock(fd, LOCK_EX)) {
    fprintf(stderr, "%s: flock(%s): %s\n", kLauncherTag, file.c_str(), strerror(errno));
    close(fd);
    return false;
  }
  Registry r;
  bool removed = false;
  if (!read_registry(fd, &r)) {
    fprintf(stderr, "%s: read(%s): %s\n", kLauncherTag, file.c_str(), strerror(errno));
  } else {
    r.nodes[node_rank_].state = kDone;
    if (!write_registry(fd, r)) {
      fprintf(stderr, "%s: write(%s): %s\n", kLauncherTag, file.c_str(), strerror(errno));
    }
    if (!any_other_alive(r, node_rank_)) {
      remove_job_segments(job_id_);
      removed = true;
    }
  }
  close(fd);  // releases the lock
  return removed;
}

}  // namespace xpu_timer::simgpu
