#pragma once
// The HTTP Range header for one byte range of a representation of known size (RFC 9110
// §14): "bytes=FIRST-LAST", "bytes=FIRST-", "bytes=-SUFFIX". Several ranges are not served as
// multipart: the first one is (a client asking for several gets what it asked first).
// Thread: any. Errors: values (the outcome says what to answer).
#include <cstdint>
#include <string_view>

namespace vigil::server {

struct ByteRange {
  enum class Kind { whole, partial, unsatisfiable, malformed } kind = Kind::whole;
  std::uint64_t offset = 0, length = 0;
};

// HEADER: the Range field's value (empty: no Range header); TOTAL: the representation's size.
ByteRange parse_byte_range(std::string_view header, std::uint64_t total) noexcept;

}  // namespace vigil::server
