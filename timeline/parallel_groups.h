// A Megatron-style parallel layout ("tp4-cp2-dp4-pp2") and each rank's
// coordinates in it, to label the ranks of a trace.
//
// Order: the dimensions are laid out in the order written, the first varying
// fastest. That is how Megatron-LM's RankGenerator reads its `order` string,
// and "tp4-cp2-dp4-pp2" is Megatron's default order tp-cp-ep-dp-pp (without
// ep): ranks 0-3 form one TP group, ranks 0 and 4 share TP rank 0 in one CP
// group, data-parallel replicas are 8 ranks apart and pipeline stages, the
// slowest-varying, 32 ranks apart.
// Write the dimensions in the order your job's launcher used.
#pragma once

#include <string>
#include <vector>

namespace xpu_timer::timeline {

struct ParallelDim {
  std::string name;  // lowercase letters: tp, cp, ep, dp, pp, ...
  int size = 1;
};

class ParallelLayout {
 public:
  // Parses "tp4-cp2-dp4-pp2". False with a one-line reason.
  static bool parse(const std::string& spec, ParallelLayout* out, std::string* error);

  const std::vector<ParallelDim>& dims() const { return dims_; }
  // The product of the sizes: the world size this layout describes.
  long long world_size() const;
  // "tp1 cp0 dp2 pp1" for `rank` (0 <= rank < world_size()).
  std::string label(int rank) const;
  // The coordinate of `rank` along each dimension, in dims() order.
  std::vector<int> coords(int rank) const;

 private:
  std::vector<ParallelDim> dims_;
};

}  // namespace xpu_timer::timeline
