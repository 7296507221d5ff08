// Escaping of text placed in SVG/XML content and attribute values. Frame names
// are untrusted (`operator<<`, `std::vector<int>`, `<lambda>`, a file named
// `"&'.py`), and an unescaped one breaks the whole document.
#pragma once

#include <string>
#include <string_view>

namespace xpu_timer::flamegraph {

// & < > " ' become entities; characters XML 1.0 forbids (C0 controls other than
// tab/newline/CR) become U+FFFD so that the document always parses. Bytes of
// invalid UTF-8 are also replaced by U+FFFD: browsers reject the document otherwise.
std::string xml_escape(std::string_view text);

}  // namespace xpu_timer::flamegraph
