#include "common/cli_help.h"

#include <algorithm>
#include <cstdio>

namespace xpu_timer {
namespace {

constexpr size_t kColumn = 26;  // where meanings start; longer flag heads push them right

std::string padded(std::string text) {
  text.resize(std::max(text.size() + 1, kColumn), ' ');
  return text;
}

}  // namespace

std::string format_flag_help(const FlagHelp* flags, size_t count) {
  std::string s;
  for (size_t i = 0; i < count; ++i) {
    const FlagHelp& f = flags[i];
    std::string head = std::string("  ") + f.name;
    if (*f.value != '\0') head += std::string(" ") + f.value;
    s += padded(head) + f.meaning + "\n";
    const std::string default_text = f.default_text;
    s += std::string(kColumn, ' ') +
         (default_text == "required" ? default_text : "default " + default_text) + "; " +
         (f.env != nullptr ? std::string("environment ") + f.env : "no environment variable") +
         "\n";
  }
  s += padded("  -h, --help") + "this help\n";
  return s;
}

std::string format_flag_help(std::initializer_list<FlagHelp> flags) {
  return format_flag_help(flags.begin(), flags.size());
}

int usage_error(const char* program, const std::string& what) {
  std::fprintf(stderr, "%s: %s (see --help)\n", program, what.c_str());
  return 2;
}

bool split_inline_value(std::string* arg, std::string* value) {
  const size_t eq = arg->find('=');
  if (arg->rfind("--", 0) != 0 || eq == std::string::npos) return false;
  *value = arg->substr(eq + 1);
  arg->resize(eq);
  return true;
}

}  // namespace xpu_timer
