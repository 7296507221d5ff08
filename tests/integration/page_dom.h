// Reading the DOM that headless Chromium dumps (--dump-dom) in the operator
// page's browser tests: an element's text by its id, its attributes, and how
// often a string occurs. The dump is Chromium's own serialisation (attributes
// double-quoted, text escaped as &lt; &gt; &amp; &quot;), which is all these
// read. Test-only.
#pragma once

#include <cstddef>
#include <string>

#include "flamegraph/test_folder.h"

namespace xpu_timer::testing {

// The DOM of http://127.0.0.1:<port><path> once the page has polled its
// documents: Chromium runs it for 8 s of virtual time, which stands still
// while a request is pending, so the page refreshes itself about three times
// (every 3 s) whatever the machine's load.
std::string page_dom(const flamegraph::TestFolder& dir, int port, const std::string& path = "/");
// A width x height screenshot of the same into screenshot_dir("operator-page")
// / name; its path, "" (with a test failure) when Chromium fails.
std::string page_screenshot(const flamegraph::TestFolder& dir, int port, const std::string& name,
                            int width, int height);

// The text of the element with id `id`, its tags removed and its entities
// decoded; "" when there is none.
std::string element_text(const std::string& dom, const std::string& id);

// The value of attribute `name` of the element with id `id` (decoded); ""
// when either is absent.
std::string element_attribute(const std::string& dom, const std::string& id,
                              const std::string& name);

// Elements whose class attribute holds the class `name`.
size_t count_class(const std::string& dom, const std::string& name);

size_t count_of(const std::string& text, const std::string& needle);

// How often the page polled its documents (the body's data-polls); 0: never.
int polls_of(const std::string& dom);

// &lt; &gt; &quot; &#39; &nbsp; and &amp; decoded.
std::string decode_entities(std::string text);

}  // namespace xpu_timer::testing
