// The --help layout every command of the project shares: one entry per flag
// with what it does, its default and the environment variable that sets it,
// so that no command's help forgets a default or a variable. Pure.
#pragma once

#include <initializer_list>
#include <string>

namespace xpu_timer {

struct FlagHelp {
  const char* name;          // "--port"
  const char* value;         // metavariable ("P"), or "" for a switch
  const char* meaning;       // one line
  const char* default_text;  // "18888", "off"; "required" for a flag without default
  const char* env;           // "XPU_TIMER_BASEPORT", or nullptr when no variable sets it
};

// Two lines per flag:
//   "  --port P                <meaning>\n"
//   "                          default 18888; environment XPU_TIMER_BASEPORT\n"
// ("; no environment variable" when env is nullptr; "required; ..." instead
// of "default required"), then "  -h, --help ...".
std::string format_flag_help(std::initializer_list<FlagHelp> flags);
std::string format_flag_help(const FlagHelp* flags, size_t count);

// "--name=value" as given on a command line: splits it into *arg ("--name")
// and *value ("value") and returns true; any other argument is left as it is
// and false is returned (its value, if it takes one, is the next argument).
bool split_inline_value(std::string* arg, std::string* value);

// A command line that cannot be run: "<program>: <what> (see --help)" on
// stderr; returns 2, the exit status of a usage error.
int usage_error(const char* program, const std::string& what);

}  // namespace xpu_timer
