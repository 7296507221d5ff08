#include "common/recorder_ring.h"

#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstring>

#include "common/clock.h"
#include "common/log.h"
#include "common/mapped_read_guard.h"
#include "common/unique_fd.h"

namespace xpu_timer::recorder {
namespace {

bool is_power_of_two(uint64_t v) { return v != 0 && (v & (v - 1)) == 0; }

// The header fields a reader trusts, copied out of a (possibly changing) image.
struct HeaderCopy {
  uint64_t magic;
  uint32_t version, header_bytes, record_bytes, capacity;
  int32_t pid, rank, local_rank, world_size;
  uint64_t created_mono_ns, created_realtime_ns, head;
  uint32_t name_bytes, max_names;
  uint64_t names;
  uint32_t site_bytes, max_sites;
  uint64_t sites;
};

HeaderCopy copy_header(const RingHeader* h) {
  HeaderCopy c{};
  c.magic = h->magic;
  c.version = h->version;
  c.header_bytes = h->header_bytes;
  c.record_bytes = h->record_bytes;
  c.capacity = h->capacity;
  c.pid = h->pid;
  c.rank = h->rank;
  c.local_rank = h->local_rank;
  c.world_size = h->world_size;
  c.created_mono_ns = h->created_mono_ns;
  c.created_realtime_ns = h->created_realtime_ns;
  c.head = h->head.load(std::memory_order_acquire);
  if (c.version >= 2) {
    c.name_bytes = h->name_bytes;
    c.max_names = h->max_names;
    c.names = h->names.load(std::memory_order_acquire);
  }
  if (c.version >= 4) {
    c.site_bytes = h->site_bytes;
    c.max_sites = h->max_sites;
    c.sites = h->sites.load(std::memory_order_acquire);
  }
  return c;
}

// One clear sentence for what is wrong with a header, or empty.
std::string check_header(const HeaderCopy& c, size_t bytes) {
  char buf[160];
  if (c.magic != kRingMagic) return "not a flight-recorder ring (bad magic)";
  if (c.version < 1 || c.version > kRingVersion) {
    std::snprintf(buf, sizeof(buf), "ring format version %u, this build reads 1 to %u", c.version,
                  kRingVersion);
    return buf;
  }
  if (c.version >= 2 && (c.name_bytes != kRingNameBytes || c.max_names != kRingNames)) {
    return "ring names region differs from this build's";
  }
  if (c.version >= 4 && (c.site_bytes != kRingSiteBytes || c.max_sites != kRingSites)) {
    return "ring call sites region differs from this build's";
  }
  if (c.header_bytes != sizeof(RingHeader) || c.record_bytes != sizeof(Record)) {
    return "ring header or record size differs from this build's";
  }
  if (!is_power_of_two(c.capacity) || c.capacity > kMaxCapacity) {
    return "ring capacity is not a power of two within limits";
  }
  const size_t need = c.version >= 4   ? ring_file_bytes(c.capacity)
                      : c.version >= 2 ? ring_sites_offset(c.capacity)
                                       : ring_records_bytes(c.capacity);
  if (bytes < need) {
    std::snprintf(buf, sizeof(buf), "ring file has %zu bytes, its header needs %zu", bytes, need);
    return buf;
  }
  return {};
}

// The names region (`count` entries, at most kRingNames) into out->names,
// cleaned as the status page's names are (proto::clean_name_field).
void collect_names(const char* region, uint64_t count, RingSnapshot* out) {
  const uint64_t n = count < kRingNames ? count : kRingNames;
  for (uint64_t i = 0; i < n; ++i) {
    char name[kRingNameBytes];
    std::memcpy(name, region + i * kRingNameBytes, kRingNameBytes);
    out->names.emplace_back(name, proto::clean_name_field(name, kRingNameBytes));
  }
}

// The sites region (`count` entries, at most kRingSites) into out->sites,
// each text field cleaned like a name.
void collect_sites(const SiteEntry* region, uint64_t count, RingSnapshot* out) {
  const uint64_t n = count < kRingSites ? count : kRingSites;
  for (uint64_t i = 0; i < n; ++i) {
    SiteEntry e = region[i];
    CodeFrame f;
    f.function.assign(e.function, proto::clean_name_field(e.function, sizeof(e.function)));
    f.file.assign(e.file, proto::clean_name_field(e.file, sizeof(e.file)));
    f.line = e.line > 0 ? e.line : 0;
    f.python = true;
    out->sites.push_back(std::move(f));
  }
}

// Walks the window [head - capacity, head) of an image. `live`: the image
// may change while we read it (per-record seqlock check); the caller guards
// against SIGBUS.
void collect(const HeaderCopy& h, const Record* ring, RingSnapshot* out, uint64_t from = 0) {
  out->pid = h.pid;
  out->rank = h.rank;
  out->local_rank = h.local_rank;
  out->world_size = h.world_size;
  out->capacity = h.capacity;
  out->created_mono_ns = h.created_mono_ns;
  out->created_realtime_ns = h.created_realtime_ns;
  out->head = h.head;
  out->skipped = 0;
  out->first_skipped = UINT64_MAX;
  uint64_t first = h.head > h.capacity ? h.head - h.capacity : 0;
  if (from > first) first = from;
  const uint64_t mask = h.capacity - 1;
  for (uint64_t pos = first; pos < h.head; ++pos) {
    const Record& r = ring[pos & mask];
    const uint64_t v1 = r.version.load(std::memory_order_acquire);
    RecordData d;
    to_data(r, &d);
    std::atomic_thread_fence(std::memory_order_acquire);
    const uint64_t v2 = r.version.load(std::memory_order_relaxed);
    const uint64_t w = v1 % kVersionStride;
    if (v1 != v2 || v1 / kVersionStride != pos || w == 0 || (w & 1) != 0) {
      if (out->skipped++ == 0) out->first_skipped = pos;
      continue;
    }
    d.op_id = pos;  // the version vouches for it; the field may be stale
    if (h.version < 3) d.gemm_ops = 0;  // padding before version 3: any byte
    if (h.version < 4 && d.kind == static_cast<uint8_t>(proto::OpKind::kNccl)) d.m = 0;
    out->records.push_back(d);
  }
}

}  // namespace

const char* op_state_str(uint8_t state) {
  switch (static_cast<OpState>(state)) {
    case OpState::kIssued:
      return "issued";
    case OpState::kRunning:
      return "running";
    case OpState::kCompleted:
      return "completed";
    case OpState::kFailed:
      return "failed";
    case OpState::kUntimed:
      return "untimed";
  }
  return "unknown";
}

std::string ring_path(const std::string& dir, int rank, int pid) {
  return dir + "/rank-" + std::to_string(rank) + "-" + std::to_string(pid) + ".ring";
}

uint32_t capacity_for(int64_t requested) {
  if (requested <= 0) return 0;
  uint64_t cap = 16;
  while (cap < static_cast<uint64_t>(requested) && cap < kMaxCapacity) cap <<= 1;
  return static_cast<uint32_t>(cap);
}

// ---- writer ----

RingWriter::~RingWriter() {
  // The mapping stays: the process is exiting or the ring lives as long as
  // the runtime state (never freed). Only tests destroy writers.
  if (header_ != nullptr) ::munmap(header_, bytes_);
}

bool RingWriter::create(const char* run_dir, const RankIdentity& id, int pid, uint32_t capacity) {
  if (!is_power_of_two(capacity) || capacity > kMaxCapacity) return false;
  const std::string path = ring_path(run_dir, id.rank, pid);
  if (path.size() >= sizeof(path_)) {
    XPU_TIMER_LOG_WARN("flight-recorder path under %s is too long; the recorder is off", run_dir);
    path_[0] = '\0';
    return false;
  }
  std::memcpy(path_, path.c_str(), path.size() + 1);
  // A stale file of the same name may still be mapped by the supervisor:
  // never truncate it (its reader would fault), replace it.
  ::unlink(path_);
  const UniqueFd fd(::open(path_, O_RDWR | O_CREAT | O_EXCL | O_CLOEXEC | O_NOFOLLOW, 0644));
  if (!fd.valid()) {
    XPU_TIMER_LOG_WARN("open(%s) failed: %s; the recorder is off", path_, std::strerror(errno));
    return false;
  }
  bytes_ = ring_file_bytes(capacity);
  void* mem = MAP_FAILED;
  if (::ftruncate(fd.get(), static_cast<off_t>(bytes_)) != 0) {
    XPU_TIMER_LOG_WARN("ftruncate(%s) failed: %s; the recorder is off", path_,
                       std::strerror(errno));
  } else {
    mem = ::mmap(nullptr, bytes_, PROT_READ | PROT_WRITE, MAP_SHARED, fd.get(), 0);
    if (mem == MAP_FAILED) {
      XPU_TIMER_LOG_WARN("mmap(%s) failed: %s; the recorder is off", path_, std::strerror(errno));
    }
  }
  // `fd` closes at return: the mapping keeps the file.
  if (mem == MAP_FAILED) {
    unlink_file();
    return false;
  }
  header_ = static_cast<RingHeader*>(mem);  // ftruncate zero-filled it
  ring_ = reinterpret_cast<Record*>(static_cast<char*>(mem) + sizeof(RingHeader));
  names_ = static_cast<char*>(mem) + ring_records_bytes(capacity);
  sites_ = reinterpret_cast<SiteEntry*>(static_cast<char*>(mem) + ring_sites_offset(capacity));
  mask_ = capacity - 1;
  header_->version = kRingVersion;
  header_->name_bytes = kRingNameBytes;
  header_->max_names = kRingNames;
  header_->names.store(0, std::memory_order_relaxed);
  header_->site_bytes = kRingSiteBytes;
  header_->max_sites = kRingSites;
  header_->sites.store(0, std::memory_order_relaxed);
  header_->header_bytes = sizeof(RingHeader);
  header_->record_bytes = sizeof(Record);
  header_->capacity = capacity;
  header_->pid = pid;
  header_->rank = id.rank;
  header_->local_rank = id.local_rank;
  header_->world_size = id.world_size;
  header_->created_mono_ns = monotonic_ns();
  header_->created_realtime_ns = realtime_ns();
  header_->head.store(0, std::memory_order_relaxed);
  // Magic last: a reader that sees it sees a complete header.
  std::atomic_thread_fence(std::memory_order_release);
  header_->magic = kRingMagic;
  return true;
}

void RingWriter::write_at(uint64_t pos, const RecordData& d) {
  Record& r = ring_[pos & mask_];
  uint64_t v = r.version.load(std::memory_order_relaxed);
  if (v / kVersionStride != pos) {
    v = pos * kVersionStride;  // a new position: its first write
  } else if (v % kVersionStride >= kVersionStride - 2) {
    return;  // out of write counts for this position: keep what it says
  }
  r.version.store(v + 1, std::memory_order_relaxed);
  // Orders the odd version before the field stores that follow.
  std::atomic_thread_fence(std::memory_order_release);
  from_data(d, &r);
  r.data.op_id = pos;
  r.version.store(v + 2, std::memory_order_release);
}

uint64_t RingWriter::append(const RecordData& d) {
  if (ring_ == nullptr) return 0;
  const uint64_t pos = header_->head.load(std::memory_order_relaxed);
  write_at(pos, d);
  header_->head.store(pos + 1, std::memory_order_release);
  return pos;
}

void RingWriter::update(uint64_t pos, const RecordData& d) {
  if (ring_ == nullptr) return;
  const uint64_t head = header_->head.load(std::memory_order_relaxed);
  if (pos >= head || head - pos > mask_ + 1) return;  // never written, or overwritten
  write_at(pos, d);
}

void RingWriter::set_name(uint32_t id, const char* name) {
  if (names_ == nullptr || id >= kRingNames) return;
  const uint64_t n = header_->names.load(std::memory_order_relaxed);
  if (id != n) return;  // each entry is written once, in order: readers may hold it
  char* dst = names_ + static_cast<size_t>(id) * kRingNameBytes;
  const size_t len = strnlen(name, kRingNameBytes - 1);
  std::memcpy(dst, name, len);
  std::memset(dst + len, 0, kRingNameBytes - len);
  header_->names.store(n + 1, std::memory_order_release);
}

void RingWriter::set_site(uint32_t id, const SiteEntry& site) {
  if (sites_ == nullptr || id >= kRingSites) return;
  const uint64_t n = header_->sites.load(std::memory_order_relaxed);
  if (id != n) return;  // each entry is written once, in order: readers may hold it
  sites_[id] = site;
  header_->sites.store(n + 1, std::memory_order_release);
}

void RingWriter::unlink_file() {
  if (unlinked_ || path_[0] == '\0') return;
  unlinked_ = true;
  ::unlink(path_);
}

// ---- reader ----

std::unique_ptr<RingReader> RingReader::attach(const std::string& path, int expected_pid,
                                               int expected_rank, std::string* error) {
  UniqueFd fd(::open(path.c_str(), O_RDONLY | O_CLOEXEC | O_NOFOLLOW));
  if (!fd.valid()) {
    *error = "cannot open " + path + ": " + std::strerror(errno);
    return nullptr;
  }
  struct stat st {};
  if (::fstat(fd.get(), &st) != 0 || st.st_size < static_cast<off_t>(sizeof(RingHeader))) {
    *error = path + " is too short for a flight-recorder ring";
    return nullptr;
  }
  const size_t bytes = static_cast<size_t>(st.st_size);
  void* mem = ::mmap(nullptr, bytes, PROT_READ, MAP_SHARED, fd.get(), 0);
  const int map_errno = errno;
  fd.reset();  // the mapping keeps the file
  if (mem == MAP_FAILED) {
    *error = "mmap(" + path + ") failed: " + std::strerror(map_errno);
    return nullptr;
  }
  std::unique_ptr<RingReader> reader(new RingReader(mem, bytes, path));
  HeaderCopy h{};
  if (!common::guarded([&] {
        h = copy_header(static_cast<const RingHeader*>(mem));
        return true;
      })) {
    *error = path + " was truncated while being read";
    return nullptr;
  }
  std::string why = check_header(h, bytes);
  if (why.empty() && expected_pid >= 0 && h.pid != expected_pid) why = "ring of another pid";
  if (why.empty() && expected_rank >= 0 && h.rank != expected_rank) why = "ring of another rank";
  if (!why.empty()) {
    *error = path + ": " + why;
    return nullptr;
  }
  return reader;
}

RingReader::~RingReader() { ::munmap(const_cast<void*>(map_), bytes_); }

bool RingReader::read(RingSnapshot* out, std::string* error, uint64_t from) const {
  *out = RingSnapshot{};
  // Sized before the guarded walk: nothing allocates while a fault may jump.
  out->records.reserve(kMaxCapacity < bytes_ / sizeof(Record) ? kMaxCapacity
                                                              : bytes_ / sizeof(Record));
  // Names are copied into fixed buffers under the guard, strings made after.
  std::vector<char> names(ring_names_bytes(), 0);
  std::vector<SiteEntry> sites(kRingSites);
  HeaderCopy seen{};
  std::string why;
  const bool ok = common::guarded([&] {
    const HeaderCopy h = copy_header(static_cast<const RingHeader*>(map_));
    if (h.magic != kRingMagic || !check_header(h, bytes_).empty()) return false;
    if (out->records.capacity() < h.capacity) return false;
    collect(h, reinterpret_cast<const Record*>(static_cast<const char*>(map_) + sizeof(RingHeader)),
            out, from);
    if (h.version >= 2) {
      std::memcpy(names.data(), static_cast<const char*>(map_) + ring_records_bytes(h.capacity),
                  names.size());
    }
    if (h.version >= 4) {
      const uint64_t n = h.sites < kRingSites ? h.sites : kRingSites;
      std::memcpy(static_cast<void*>(sites.data()),
                  static_cast<const char*>(map_) + ring_sites_offset(h.capacity),
                  n * sizeof(SiteEntry));
    }
    seen = h;
    return true;
  });
  if (!ok) {
    *error = path_ + ": the ring was truncated or its header changed while being read";
    out->records.clear();
    return false;
  }
  if (seen.version >= 2) collect_names(names.data(), seen.names, out);
  if (seen.version >= 4) collect_sites(sites.data(), seen.sites, out);
  return true;
}

bool RingReader::read_image(const void* image, size_t bytes, RingSnapshot* out,
                            std::string* error) {
  *out = RingSnapshot{};
  if (bytes < sizeof(RingHeader)) {
    *error = "too short for a flight-recorder ring";
    return false;
  }
  if (bytes > ring_file_bytes(kMaxCapacity)) {
    *error = "larger than any flight-recorder ring";
    return false;
  }
  // An image may sit at any alignment (a buffer read from a file): work on
  // an aligned private copy.
  std::vector<uint64_t> aligned((bytes + 7) / 8);
  std::memcpy(aligned.data(), image, bytes);
  const auto* h = reinterpret_cast<const RingHeader*>(aligned.data());
  const HeaderCopy c = copy_header(h);
  const std::string why = check_header(c, bytes);
  if (!why.empty()) {
    *error = why;
    return false;
  }
  out->records.reserve(c.head < c.capacity ? c.head : c.capacity);
  collect(c,
          reinterpret_cast<const Record*>(reinterpret_cast<const char*>(aligned.data()) +
                                          sizeof(RingHeader)),
          out);
  if (c.version >= 2) {
    collect_names(reinterpret_cast<const char*>(aligned.data()) + ring_records_bytes(c.capacity),
                  c.names, out);
  }
  if (c.version >= 4) {
    collect_sites(reinterpret_cast<const SiteEntry*>(reinterpret_cast<const char*>(aligned.data()) +
                                                     ring_sites_offset(c.capacity)),
                  c.sites, out);
  }
  return true;
}

const CodeFrame* call_site(const RingSnapshot& s, const RecordData& d) {
  const int id = call_site_of(d);
  return id >= 0 && static_cast<size_t>(id) < s.sites.size() ? &s.sites[id] : nullptr;
}

SiteEntry site_entry(const CodeFrame& f) {
  SiteEntry e;
  e.line = f.line > 0 ? f.line : 0;
  const size_t fn = std::min(f.function.size(), sizeof(e.function) - 1);
  std::memcpy(e.function, f.function.data(), fn);
  // A path too long keeps its end: the file's name and its nearest folders.
  const size_t keep = std::min(f.file.size(), sizeof(e.file) - 1);
  std::memcpy(e.file, f.file.data() + (f.file.size() - keep), keep);
  return e;
}

std::string dump_file_name(int rank, int world_size) {
  char buf[64];
  std::snprintf(buf, sizeof(buf), "%05d-%05d.timeline", rank, world_size);
  return buf;
}

RingImage ring_image(const RingSnapshot& s) {
  uint64_t cap = 16;
  while (cap < s.records.size() && cap < kMaxCapacity) cap <<= 1;
  const size_t n = s.records.size() < cap ? s.records.size() : cap;
  RingImage img;
  img.bytes = ring_file_bytes(static_cast<uint32_t>(cap));
  img.words.assign((img.bytes + 7) / 8, 0);
  std::vector<uint64_t>& image = img.words;
  auto* h = reinterpret_cast<RingHeader*>(image.data());
  h->magic = kRingMagic;
  h->version = kRingVersion;
  h->header_bytes = sizeof(RingHeader);
  h->record_bytes = sizeof(Record);
  h->capacity = static_cast<uint32_t>(cap);
  h->pid = s.pid;
  h->rank = s.rank;
  h->local_rank = s.local_rank;
  h->world_size = s.world_size;
  h->created_mono_ns = s.created_mono_ns;
  h->created_realtime_ns = s.created_realtime_ns;
  h->head.store(n, std::memory_order_relaxed);
  h->name_bytes = kRingNameBytes;
  h->max_names = kRingNames;
  const size_t nnames = s.names.size() < kRingNames ? s.names.size() : kRingNames;
  h->names.store(nnames, std::memory_order_relaxed);
  char* names =
      reinterpret_cast<char*>(image.data()) + ring_records_bytes(static_cast<uint32_t>(cap));
  for (size_t i = 0; i < nnames; ++i) {
    const size_t len =
        s.names[i].size() < kRingNameBytes - 1 ? s.names[i].size() : kRingNameBytes - 1;
    std::memcpy(names + i * kRingNameBytes, s.names[i].data(), len);
  }
  h->site_bytes = kRingSiteBytes;
  h->max_sites = kRingSites;
  const size_t nsites = s.sites.size() < kRingSites ? s.sites.size() : kRingSites;
  h->sites.store(nsites, std::memory_order_relaxed);
  auto* sites = reinterpret_cast<SiteEntry*>(reinterpret_cast<char*>(image.data()) +
                                             ring_sites_offset(static_cast<uint32_t>(cap)));
  for (size_t i = 0; i < nsites; ++i) sites[i] = site_entry(s.sites[i]);
  auto* ring =
      reinterpret_cast<Record*>(reinterpret_cast<char*>(image.data()) + sizeof(RingHeader));
  for (size_t i = 0; i < n; ++i) {
    const RecordData& d = s.records[s.records.size() - n + i];
    Record& r = ring[i];
    from_data(d, &r);
    r.data.op_id = d.op_id;  // the rank's own position, kept for cross-reference
    r.version.store(i * kVersionStride + 2, std::memory_order_relaxed);
  }
  return img;
}

bool write_ring_image(const std::string& path, const RingSnapshot& s, std::string* error) {
  return write_ring_image(path, ring_image(s), error);
}

bool write_ring_image(const std::string& path, const RingImage& img, std::string* error) {
  const std::string tmp = path + ".tmp";
  UniqueFd fd(::open(tmp.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC | O_NOFOLLOW, 0644));
  if (!fd.valid()) {
    *error = "cannot create " + tmp + ": " + std::strerror(errno);
    return false;
  }
  const char* p = img.data();
  size_t left = img.bytes;
  while (left > 0) {
    const ssize_t w = ::write(fd.get(), p, left);
    if (w < 0 && errno == EINTR) continue;
    if (w <= 0) {
      *error = "write(" + tmp + ") failed: " + std::strerror(errno);
      fd.reset();
      ::unlink(tmp.c_str());
      return false;
    }
    p += w;
    left -= static_cast<size_t>(w);
  }
  // Closed here, not by `fd`: a failed close is a failed write.
  if (::close(fd.release()) != 0 || ::rename(tmp.c_str(), path.c_str()) != 0) {
    *error = "cannot finish " + path + ": " + std::strerror(errno);
    ::unlink(tmp.c_str());
    return false;
  }
  return true;
}

}  // namespace xpu_timer::recorder
