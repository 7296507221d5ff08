#include "tests/simgpu/trainer_options.h"

#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>

namespace xpu_timer::simgpu {
namespace {

bool to_long(const char* s, long* out) {
  errno = 0;
  char* end = nullptr;
  const long v = strtol(s, &end, 10);
  if (errno != 0 || end == s || *end != '\0') return false;
  *out = v;
  return true;
}

bool to_int(const char* s, int* out) {
  long v = 0;
  if (!to_long(s, &v) || v < -2147483647L || v > 2147483647L) return false;
  *out = static_cast<int>(v);
  return true;
}

bool to_double(const char* s, double* out) {
  errno = 0;
  char* end = nullptr;
  const double v = strtod(s, &end);
  if (errno != 0 || end == s || *end != '\0' || v < 0) return false;
  *out = v;
  return true;
}

}  // namespace

const char* trainer_usage() {
  return "usage: sim_trainer [--steps N] [--gemm M,N,K] [--gemm-api NAME|all] [--gemm-batch B]\n"
         "  [--gemms-per-step G] [--collective "
         "allreduce|allgather|reducescatter|broadcast|reduce]\n"
         "  [--bytes B] [--hang-rank R --hang-step S] [--slow-rank R --slow-ms T] [--jitter-ms J]\n"
         "  [--step-ms T] [--crash-rank R --crash-step S --crash-kind segv|abort|exception]\n"
         "  [--exit-code C] [--verbose] [--lib-dir DIR]\n";
}

bool parse_trainer_options(int argc, char** argv, TrainerOptions* o, std::string* error) {
  for (int i = 1; i < argc; ++i) {
    const std::string flag = argv[i];
    if (flag == "--verbose") {
      o->verbose = true;
      continue;
    }
    if (i + 1 >= argc) {
      *error = flag + " needs a value (or is unknown)";
      return false;
    }
    const char* v = argv[++i];
    bool ok = true;
    if (flag == "--steps")
      ok = to_int(v, &o->steps) && o->steps >= 0;
    else if (flag == "--gemm")
      ok = sscanf(v, "%d,%d,%d", &o->gemm_m, &o->gemm_n, &o->gemm_k) == 3 && o->gemm_m > 0 &&
           o->gemm_n > 0 && o->gemm_k > 0;
    else if (flag == "--gemm-api")
      o->gemm_api = v;
    else if (flag == "--gemm-batch")
      ok = to_int(v, &o->gemm_batch) && o->gemm_batch > 0;
    else if (flag == "--gemms-per-step")
      ok = to_int(v, &o->gemms_per_step) && o->gemms_per_step >= 0;
    else if (flag == "--collective")
      o->collective = v;
    else if (flag == "--bytes")
      ok = to_long(v, &o->bytes) && o->bytes >= 0;
    else if (flag == "--hang-rank")
      ok = to_int(v, &o->hang_rank);
    else if (flag == "--hang-step")
      ok = to_int(v, &o->hang_step);
    else if (flag == "--slow-rank")
      ok = to_int(v, &o->slow_rank);
    else if (flag == "--slow-ms")
      ok = to_double(v, &o->slow_ms);
    else if (flag == "--jitter-ms")
      ok = to_double(v, &o->jitter_ms);
    else if (flag == "--step-ms")
      ok = to_double(v, &o->step_ms);
    else if (flag == "--crash-rank")
      ok = to_int(v, &o->crash_rank);
    else if (flag == "--crash-step")
      ok = to_int(v, &o->crash_step);
    else if (flag == "--crash-kind") {
      o->crash_kind = v;
      ok = o->crash_kind == "segv" || o->crash_kind == "abort" || o->crash_kind == "exception";
    } else if (flag == "--exit-code")
      ok = to_int(v, &o->exit_code) && o->exit_code >= 0 && o->exit_code <= 255;
    else if (flag == "--lib-dir")
      o->lib_dir = v;
    else {
      *error = "unknown flag " + flag;
      return false;
    }
    if (!ok) {
      *error = "invalid value '" + std::string(v) + "' for " + flag;
      return false;
    }
  }
  return true;
}

}  // namespace xpu_timer::simgpu
