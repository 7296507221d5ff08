#include "stack/line_table.h"

#include <cstdint>

namespace xpu_timer::stack {
namespace {

// Varints of the 3.11 location table: 6-bit chunks, 0x40 = more follows.
bool read_varint(const std::string& t, size_t* pos, uint32_t* out) {
  uint32_t value = 0;
  int shift = 0;
  for (;;) {
    if (*pos >= t.size() || shift > 28) return false;
    uint8_t b = static_cast<uint8_t>(t[(*pos)++]);
    value |= static_cast<uint32_t>(b & 63) << shift;
    if (!(b & 64)) break;
    shift += 6;
  }
  *out = value;
  return true;
}

bool read_svarint(const std::string& t, size_t* pos, int* out) {
  uint32_t u = 0;
  if (!read_varint(t, pos, &u)) return false;
  *out = (u & 1) ? -static_cast<int>(u >> 1) : static_cast<int>(u >> 1);
  return true;
}

}  // namespace

int lnotab_line(const std::string& table, int firstlineno, int addrq) {
  int line = firstlineno;
  int addr = 0;
  for (size_t i = 0; i + 1 < table.size(); i += 2) {
    addr += static_cast<uint8_t>(table[i]);
    if (addr > addrq) break;
    line += static_cast<int8_t>(table[i + 1]);
  }
  return line;
}

int linetable310_line(const std::string& table, int firstlineno, int addrq) {
  if (addrq < 0) return firstlineno;
  int line = firstlineno;
  int end = 0;
  for (size_t i = 0; i + 1 < table.size(); i += 2) {
    int start = end;
    end += static_cast<uint8_t>(table[i]);
    int delta = static_cast<int8_t>(table[i + 1]);
    int range_line = -1;
    if (delta != -128) {
      line += delta;
      range_line = line;
    }
    if (start <= addrq && addrq < end) return range_line;
  }
  return -1;
}

int location_table_line(const std::string& table, int firstlineno, int addrq) {
  if (addrq < 0) return firstlineno;
  int line = firstlineno;
  int addr = 0;
  size_t pos = 0;
  while (pos < table.size()) {
    uint8_t first = static_cast<uint8_t>(table[pos++]);
    if (!(first & 0x80)) return -1;  // lost sync: corrupt table
    int code = (first >> 3) & 15;
    int length = ((first & 7) + 1) * 2;  // bytes
    int range_line = line;
    bool ok = true;
    uint32_t skip = 0;
    int delta = 0;
    switch (code) {
      case 15:  // no location
        range_line = -1;
        break;
      case 14:  // long form: line delta, end line delta, column, end column
        ok = read_svarint(table, &pos, &delta) && read_varint(table, &pos, &skip) &&
             read_varint(table, &pos, &skip) && read_varint(table, &pos, &skip);
        line += delta;
        range_line = line;
        break;
      case 13:  // no column info
        ok = read_svarint(table, &pos, &delta);
        line += delta;
        range_line = line;
        break;
      case 10:
      case 11:
      case 12:  // one-line forms: line delta = code - 10, then 2 column bytes
        line += code - 10;
        range_line = line;
        pos += 2;
        break;
      default:  // short forms 0-9: same line, 1 column byte
        pos += 1;
        break;
    }
    if (!ok) return -1;
    if (addr <= addrq && addrq < addr + length) return range_line;
    addr += length;
  }
  return -1;
}

}  // namespace xpu_timer::stack
