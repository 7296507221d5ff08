// A stand-in for libcublas.so.13 / libcublasLt.so.13 in the symbol
// resolution test: both define xpu_probe_which(), returning their own name.
extern "C" __attribute__((visibility("default"))) const char* xpu_probe_which() {
  return XPU_FAKE_NAME;
}
