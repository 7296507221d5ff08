#include "stack/line_table.h"

#include <gtest/gtest.h>

namespace xpu_timer::stack {
namespace {

std::string bytes(std::initializer_list<int> b) {
  std::string s;
  for (int c : b) s.push_back(static_cast<char>(c));
  return s;
}

TEST(LineTable, Lnotab38) {
  // (addr incr, line incr): +0/+1, +6/+1, +8/+2; firstlineno 10.
  std::string t = bytes({0, 1, 6, 1, 8, 2});
  EXPECT_EQ(lnotab_line(t, 10, 0), 11);
  EXPECT_EQ(lnotab_line(t, 10, 5), 11);
  EXPECT_EQ(lnotab_line(t, 10, 6), 12);
  EXPECT_EQ(lnotab_line(t, 10, 20), 14);
  // Negative line increments (signed byte).
  EXPECT_EQ(lnotab_line(bytes({4, 5, 4, 0xfe}), 1, 4), 6);
  EXPECT_EQ(lnotab_line(bytes({4, 5, 4, 0xfe}), 1, 8), 4);
}

TEST(LineTable, Linetable310) {
  // [0,6) line 11; [6,10) no line; [10,18) line 13.
  std::string t = bytes({6, 1, 4, 0x80, 8, 2});
  EXPECT_EQ(linetable310_line(t, 10, -1), 10);
  EXPECT_EQ(linetable310_line(t, 10, 0), 11);
  EXPECT_EQ(linetable310_line(t, 10, 4), 11);
  EXPECT_EQ(linetable310_line(t, 10, 6), -1);
  EXPECT_EQ(linetable310_line(t, 10, 10), 13);
  EXPECT_EQ(linetable310_line(t, 10, 17), 13);
  EXPECT_EQ(linetable310_line(t, 10, 18), -1);
}

TEST(LineTable, LocationTable311) {
  std::string t = bytes({
      0xE9, 0x04,                    // no-columns, 2 units, line +2 -> 12   [0,4)
      0x80, 0x05,                    // short form, 1 unit, same line 12     [4,6)
      0xDA, 0x01, 0x02,              // one-line +1, 3 units -> 13           [6,12)
      0xF8,                          // no location, 1 unit                  [12,14)
      0xF0, 0x07, 0x00, 0x01, 0x02,  // long form, line -3 -> 10       [14,16)
      0xE8, 0x48, 0x03,              // no-columns, line +100 -> 110         [16,18)
  });
  EXPECT_EQ(location_table_line(t, 10, -1), 10);
  EXPECT_EQ(location_table_line(t, 10, 0), 12);
  EXPECT_EQ(location_table_line(t, 10, 3), 12);
  EXPECT_EQ(location_table_line(t, 10, 4), 12);
  EXPECT_EQ(location_table_line(t, 10, 6), 13);
  EXPECT_EQ(location_table_line(t, 10, 11), 13);
  EXPECT_EQ(location_table_line(t, 10, 12), -1);
  EXPECT_EQ(location_table_line(t, 10, 14), 10);
  EXPECT_EQ(location_table_line(t, 10, 16), 110);
  EXPECT_EQ(location_table_line(t, 10, 18), -1);
}

TEST(LineTable, CorruptTablesStayInBounds) {
  for (int len = 0; len < 64; ++len) {
    std::string t(static_cast<size_t>(len), '\0');
    for (int i = 0; i < len; ++i)
      t[static_cast<size_t>(i)] = static_cast<char>((i * 97 + 13) & 0xff);
    for (int addr = -2; addr < 300; addr += 7) {
      lnotab_line(t, 1, addr);
      linetable310_line(t, 1, addr);
      location_table_line(t, 1, addr);
    }
    // Truncated varint at the end.
    location_table_line(t + "\xE8\x48", 1, 1000);
  }
}

}  // namespace
}  // namespace xpu_timer::stack
