# cmake -DIN=file.py -DOUT=header.h -DNAME=kSymbol -P crash_embed_source.cmake
# Embeds a Python source file into a C++ header as a raw string literal, so
# the injected library carries it (it must not depend on files at run time).
file(READ ${IN} content)
file(WRITE ${OUT} "// Generated from ${IN} by crash_embed_source.cmake: do not edit.\n"
  "#pragma once\n"
  "namespace xpu_timer::inject {\n"
  "inline constexpr char ${NAME}[] = R\"xpu_py(${content})xpu_py\";\n"
  "}  // namespace xpu_timer::inject\n")
