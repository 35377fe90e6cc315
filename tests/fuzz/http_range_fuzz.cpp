// Fuzz target: the HTTP Range header (server/net/http_range) against a representation whose size
// the input's first 8 bytes give. Checked: a partial range is non-empty and lies inside the
// representation, a whole one is all of it.
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <string_view>

#include "server/net/http_range.hpp"

namespace {

void check(bool ok) {
  if (!ok) std::abort();
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  if (size < 8) return 0;
  std::uint64_t total = 0;
  std::memcpy(&total, data, 8);
  if (data[0] & 1) total %= 1u << 20;  // half the inputs: a size an export really has
  const std::string_view header(reinterpret_cast<const char*>(data + 8), size - 8);
  using Kind = vigil::server::ByteRange::Kind;
  const auto r = vigil::server::parse_byte_range(header, total);
  switch (r.kind) {
    case Kind::whole: check(r.offset == 0 && r.length == total); break;
    case Kind::partial: check(r.length > 0 && r.offset < total && r.length <= total - r.offset); break;
    case Kind::unsatisfiable:
    case Kind::malformed: break;
  }
  return 0;
}
