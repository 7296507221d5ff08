#include "timeline/parallel_groups.h"

#include <cctype>

namespace xpu_timer::timeline {

// Bounds that keep every product within a long long and reject typos early.
constexpr int kMaxDimSize = 1 << 20;
constexpr long long kMaxWorld = 1ll << 24;

bool ParallelLayout::parse(const std::string& spec, ParallelLayout* out, std::string* error) {
  *out = ParallelLayout{};
  const std::string form = "'" + spec + "' is not of the form tp4-cp2-dp4-pp2";
  if (spec.empty()) {
    *error = "empty layout: expected the form tp4-cp2-dp4-pp2";
    return false;
  }
  long long world = 1;
  size_t i = 0;
  while (i <= spec.size()) {
    const size_t dash = spec.find('-', i);
    const std::string tok =
        spec.substr(i, dash == std::string::npos ? std::string::npos : dash - i);
    size_t p = 0;
    while (p < tok.size() && std::islower(static_cast<unsigned char>(tok[p]))) ++p;
    if (p == 0 || p == tok.size() || tok.size() - p > 7) {
      *error = form;
      return false;
    }
    int size = 0;
    for (size_t q = p; q < tok.size(); ++q) {
      if (!std::isdigit(static_cast<unsigned char>(tok[q]))) {
        *error = form;
        return false;
      }
      size = size * 10 + (tok[q] - '0');
    }
    ParallelDim d{tok.substr(0, p), size};
    if (d.size < 1 || d.size > kMaxDimSize) {
      *error = "'" + tok + "': a group size must be 1.." + std::to_string(kMaxDimSize);
      return false;
    }
    for (const ParallelDim& e : out->dims_) {
      if (e.name == d.name) {
        *error = "'" + d.name + "' appears twice in '" + spec + "'";
        return false;
      }
    }
    world *= d.size;
    if (world > kMaxWorld) {
      *error = "'" + spec + "' describes more than " + std::to_string(kMaxWorld) + " ranks";
      return false;
    }
    out->dims_.push_back(std::move(d));
    if (dash == std::string::npos) break;
    i = dash + 1;
  }
  return true;
}

long long ParallelLayout::world_size() const {
  long long w = 1;
  for (const ParallelDim& d : dims_) w *= d.size;
  return w;
}

std::vector<int> ParallelLayout::coords(int rank) const {
  std::vector<int> c;
  long long rest = rank;
  for (const ParallelDim& d : dims_) {
    c.push_back(static_cast<int>(rest % d.size));
    rest /= d.size;
  }
  return c;
}

std::string ParallelLayout::label(int rank) const {
  const std::vector<int> c = coords(rank);
  std::string s;
  for (size_t i = 0; i < dims_.size(); ++i) {
    if (!s.empty()) s += ' ';
    s += dims_[i].name + std::to_string(c[i]);
  }
  return s;
}

}  // namespace xpu_timer::timeline
