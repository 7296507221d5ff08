// The operator page, GET / (docs/architecture.md "Operator page"): one
// self-contained HTML document (operator_page.html, its CSS and script
// inline), compiled into the supervisor as a string by embed_page.cmake, so
// that it is served with nothing installed and nothing fetched from the
// internet. Constant; any thread.
#pragma once

#include <string_view>

namespace xpu_timer::supervisor {

std::string_view operator_page_html();

}  // namespace xpu_timer::supervisor
