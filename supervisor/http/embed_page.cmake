# Writes OUT, a C++ source defining operator_page_html() as the bytes of IN
# (operator_page.html) in a raw string literal. Run at build time, so that an
# edit of the page rebuilds the supervisor.
file(READ "${IN}" page)
string(FIND "${page}" ")xpu_page\"" clash)
if(NOT clash EQUAL -1)
  message(FATAL_ERROR "${IN} holds the raw string's delimiter )xpu_page\"")
endif()
file(WRITE "${OUT}.tmp"
  "// Generated from supervisor/http/operator_page.html by embed_page.cmake: edit that file.\n"
  "#include \"supervisor/http/operator_page.h\"\n\n"
  "namespace xpu_timer::supervisor {\n\n"
  "std::string_view operator_page_html() {\n"
  "  static constexpr char kPage[] = R\"xpu_page(${page})xpu_page\";\n"
  "  return std::string_view(kPage, sizeof(kPage) - 1);\n"
  "}\n\n"
  "}  // namespace xpu_timer::supervisor\n")
file(COPY_FILE "${OUT}.tmp" "${OUT}" ONLY_IF_DIFFERENT)
file(REMOVE "${OUT}.tmp")
