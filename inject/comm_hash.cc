#include "inject/comm_hash.h"

#include <cstring>

namespace xpu_timer::inject {
namespace {

constexpr uint64_t kFnvOffset = 0xcbf29ce484222325ull;
constexpr uint64_t kFnvPrime = 0x100000001b3ull;

uint64_t fnv1a(uint64_t h, const void* data, size_t len) {
  const auto* p = static_cast<const unsigned char*>(data);
  for (size_t i = 0; i < len; ++i) {
    h ^= p[i];
    h *= kFnvPrime;
  }
  return h;
}

uint64_t finish(uint64_t x) {
  x ^= x >> 30;
  x *= 0xbf58476d1ce4e5b9ull;
  x ^= x >> 27;
  x *= 0x94d049bb133111ebull;
  x ^= x >> 31;
  return x == 0 ? 1 : x;
}

}  // namespace

uint64_t hash_bytes(const void* data, size_t len) { return finish(fnv1a(kFnvOffset, data, len)); }

uint64_t comm_hash_from_unique_ids(const void* ids, int n_ids, size_t id_bytes) {
  if (ids == nullptr || n_ids <= 0) return hash_bytes("", 0);
  return hash_bytes(ids, static_cast<size_t>(n_ids) * id_bytes);
}

uint64_t comm_hash_for_split(uint64_t parent_hash, int color, uint64_t nth_split) {
  unsigned char buf[8 + 8 + 8 + 6];
  const int64_t color64 = color;
  std::memcpy(buf, &parent_hash, 8);
  std::memcpy(buf + 8, &color64, 8);
  std::memcpy(buf + 16, &nth_split, 8);
  std::memcpy(buf + 24, "split", 6);  // domain separation from unique-id hashes
  return hash_bytes(buf, sizeof(buf));
}

uint64_t comm_hash_for_unknown(int nranks, int rank, const void* comm) {
  unsigned char buf[4 + 4 + sizeof(void*) + 8];
  std::memcpy(buf, &nranks, 4);
  std::memcpy(buf + 4, &rank, 4);
  std::memcpy(buf + 8, &comm, sizeof(void*));
  std::memcpy(buf + 8 + sizeof(void*), "unknown", 8);
  return hash_bytes(buf, sizeof(buf));
}

}  // namespace xpu_timer::inject
