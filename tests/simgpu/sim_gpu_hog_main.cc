// xpu_timer_sim_gpu_hog: a second process on one simulated GPU, as a real
// job meets one when somebody else's program shares its GPU. While it runs,
// every kernel on that device of every process whose runtime reads DIR
// (XPU_TIMER_SIM_GPU_SHARE_DIR) takes 1 + LOAD times its time
// (real_gpu_traits.h). It writes DIR/gpu-<device>, prints "hogging" once the
// file is there, and removes it when it ends: after --seconds, or on SIGTERM
// or SIGINT.
//
// usage: xpu_timer_sim_gpu_hog --dir DIR --device D [--load L] [--seconds S]
#include <signal.h>
#include <unistd.h>

#include <cerrno>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <ctime>
#include <string>

namespace {

volatile sig_atomic_t g_stop = 0;
void on_signal(int) { g_stop = 1; }

int usage(const char* why) {
  std::fprintf(stderr,
               "xpu_timer_sim_gpu_hog: %s\n"
               "usage: xpu_timer_sim_gpu_hog --dir DIR --device D [--load L] [--seconds S]\n",
               why);
  return 2;
}

}  // namespace

int main(int argc, char** argv) {
  std::string dir;
  long device = -1;
  double load = 1.0, seconds = 0;
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    if (i + 1 >= argc) return usage(("missing value of " + a).c_str());
    const char* v = argv[++i];
    char* end = nullptr;
    if (a == "--dir") {
      dir = v;
    } else if (a == "--device") {
      device = std::strtol(v, &end, 10);
      if (*end != '\0' || device < 0 || device >= 64) return usage("--device must be 0..63");
    } else if (a == "--load" || a == "--seconds") {
      const double x = std::strtod(v, &end);
      if (*end != '\0' || !(x > 0) || !std::isfinite(x)) return usage((a + " must be > 0").c_str());
      (a == "--load" ? load : seconds) = x;
    } else {
      return usage(("unknown argument " + a).c_str());
    }
  }
  if (dir.empty() || device < 0) return usage("--dir and --device are required");
  struct sigaction sa {};
  sa.sa_handler = on_signal;
  sigaction(SIGTERM, &sa, nullptr);
  sigaction(SIGINT, &sa, nullptr);
  const std::string path = dir + "/gpu-" + std::to_string(device);
  const std::string tmp = path + ".tmp";
  FILE* f = std::fopen(tmp.c_str(), "we");
  if (f == nullptr) {
    std::fprintf(stderr, "xpu_timer_sim_gpu_hog: cannot write %s: %s\n", tmp.c_str(),
                 std::strerror(errno));
    return 1;
  }
  std::fprintf(f, "%g\n", load);
  std::fclose(f);
  if (std::rename(tmp.c_str(), path.c_str()) != 0) {
    std::fprintf(stderr, "xpu_timer_sim_gpu_hog: cannot create %s: %s\n", path.c_str(),
                 std::strerror(errno));
    return 1;
  }
  std::printf("hogging device %ld (load %g)\n", device, load);
  std::fflush(stdout);
  timespec start{};
  clock_gettime(CLOCK_MONOTONIC, &start);
  while (g_stop == 0) {
    timespec now{};
    clock_gettime(CLOCK_MONOTONIC, &now);
    const double elapsed = static_cast<double>(now.tv_sec - start.tv_sec) +
                           static_cast<double>(now.tv_nsec - start.tv_nsec) / 1e9;
    if (seconds > 0 && elapsed >= seconds) break;
    usleep(10'000);
  }
  std::remove(path.c_str());
  std::printf("hog done\n");
  return 0;
}
