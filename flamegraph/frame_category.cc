#include "flamegraph/frame_category.h"

#include <cstdint>
#include <cstdio>

#include "flamegraph/own_threads.h"

namespace xpu_timer::flamegraph {
namespace {

bool starts_with(std::string_view s, std::string_view prefix) {
  return s.substr(0, prefix.size()) == prefix;
}

// Module part of a native label's source: "libnccl.so.2:enqueue.cc:12" -> "libnccl.so.2".
std::string_view module_of(std::string_view source) {
  const size_t colon = source.find(':');
  return colon == std::string_view::npos ? source : source.substr(0, colon);
}

bool is_gpu_module(std::string_view module) {
  for (std::string_view p : {"libtorch", "libc10", "libnccl", "libcuda", "libcudart", "libcublas",
                             "libcudnn", "libcupti", "libnvrtc", "libnvJitLink", "libcusparse",
                             "libcufft", "libcurand", "libcusolver", "libnvidia"}) {
    if (starts_with(module, p)) return true;
  }
  return false;
}

bool is_gpu_name(std::string_view func) {
  for (std::string_view p :
       {"c10::", "c10d::", "at::", "torch::", "nccl", "cuda", "cublas", "cudnn", "caffe2::"}) {
    if (starts_with(func, p)) return true;
  }
  // CUDA driver API: cuLaunchKernel, cuStreamSynchronize, ...
  return func.size() > 2 && func[0] == 'c' && func[1] == 'u' && func[2] >= 'A' && func[2] <= 'Z';
}

bool is_cpython(std::string_view func, std::string_view module) {
  if (starts_with(module, "libpython") || starts_with(module, "python")) return true;
  return starts_with(func, "_Py") || (starts_with(func, "Py") && func.size() > 2 &&
                                      ((func[2] >= 'A' && func[2] <= 'Z') || func[2] == '_'));
}

// FNV-1a: stable across runs and platforms, unlike std::hash.
uint32_t stable_hash(std::string_view s) {
  uint32_t h = 2166136261u;
  for (unsigned char c : s) {
    h ^= c;
    h *= 16777619u;
  }
  return h;
}

}  // namespace

FrameCategory classify_frame(FrameKind kind, std::string_view label) {
  if (kind == FrameKind::kState) return FrameCategory::kState;
  if (kind == FrameKind::kPython) return FrameCategory::kPython;
  const size_t at = label.find('@');
  const std::string_view func = label.substr(0, at);
  const std::string_view module =
      at == std::string_view::npos ? std::string_view() : module_of(label.substr(at + 1));
  if (is_gpu_module(module) || is_gpu_name(func)) return FrameCategory::kGpu;
  if (is_cpython(func, module)) return FrameCategory::kPython;
  if (func.find("::") != std::string_view::npos) return FrameCategory::kCpp;
  return FrameCategory::kSystem;
}

const char* category_name(FrameCategory category) {
  switch (category) {
    case FrameCategory::kPython:
      return "py";
    case FrameCategory::kGpu:
      return "gpu";
    case FrameCategory::kCpp:
      return "cpp";
    case FrameCategory::kSystem:
      return "sys";
    case FrameCategory::kState:
      return "state";
  }
  return "?";
}

std::string frame_colour(FrameCategory category, std::string_view label) {
  const uint32_t h = stable_hash(label);
  const int a = static_cast<int>(h % 41);         // 0..40
  const int b = static_cast<int>((h >> 8) % 41);  // 0..40
  int r = 0, g = 0, bl = 0;
  switch (category) {
    case FrameCategory::kPython:
      r = 40 + a;
      g = 190 + b / 2;
      bl = 215 + a / 2;
      break;
    case FrameCategory::kGpu:
      r = 70 + a;
      g = 190 + b / 2;
      bl = 60 + b;
      break;
    case FrameCategory::kCpp:
      r = 215 + a / 2;
      g = 195 + b / 2;
      bl = 50 + a;
      break;
    case FrameCategory::kSystem:
      r = 215 + a / 2;
      g = 80 + b * 2;
      bl = 60 + a / 2;
      break;
    case FrameCategory::kState:
      r = 160 + a / 2;
      g = 110 + b / 2;
      bl = 220 + a / 2;
      break;
  }
  char buf[32];
  std::snprintf(buf, sizeof(buf), "rgb(%d,%d,%d)", r, g, bl);
  return buf;
}

std::string frame_fill(FrameKind kind, std::string_view label) {
  if (label == kOwnThreadLabel) return kOwnThreadFill;
  return frame_colour(classify_frame(kind, label), label);
}

}  // namespace xpu_timer::flamegraph
