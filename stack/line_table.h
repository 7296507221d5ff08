// CPython's line-number tables, decoded from bytes read out of the target.
// addrq is a byte offset into the code (as PyCode_Addr2Line takes it). Every
// function is bounded by the table size: corrupt tables give a wrong line,
// never an out-of-bounds read. Returns firstlineno for addrq < 0, and -1
// where CPython would say "no line".
#pragma once

#include <string>

namespace xpu_timer::stack {

// 3.8-3.9 co_lnotab: (addr increment, signed line increment) byte pairs.
int lnotab_line(const std::string& table, int firstlineno, int addrq);

// 3.10 co_linetable: (address delta, signed line delta; -128 = no line) pairs.
int linetable310_line(const std::string& table, int firstlineno, int addrq);

// 3.11+ location table (Objects/locations.md): entries of 1..8 code units.
int location_table_line(const std::string& table, int firstlineno, int addrq);

}  // namespace xpu_timer::stack
