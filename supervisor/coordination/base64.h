// Standard base64 (RFC 4648 section 4, with '=' padding), as etcd's JSON
// gateway encodes every key and value. Decoding is strict: it is used on
// answers from the network.
#pragma once

#include <string>
#include <string_view>

namespace xpu_timer::supervisor {

std::string base64_encode(std::string_view bytes);

// False with a one-line `error` (naming the first offending position) when
// `text` is not padded base64 of the standard alphabet; `out` is then
// unspecified.
bool base64_decode(std::string_view text, std::string* out, std::string* error);

}  // namespace xpu_timer::supervisor
