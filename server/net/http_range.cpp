#include "server/net/http_range.hpp"

#include <charconv>

namespace vigil::server {
namespace {

std::string_view trim(std::string_view s) {
  while (!s.empty() && (s.front() == ' ' || s.front() == '\t')) s.remove_prefix(1);
  while (!s.empty() && (s.back() == ' ' || s.back() == '\t')) s.remove_suffix(1);
  return s;
}

// Digits only (no sign, no spaces inside), and no overflow.
bool parse_u64(std::string_view s, std::uint64_t& out) {
  if (s.empty() || s.size() > 19) return false;
  for (char c : s) {
    if (c < '0' || c > '9') return false;
  }
  return std::from_chars(s.data(), s.data() + s.size(), out).ec == std::errc();
}

}  // namespace

ByteRange parse_byte_range(std::string_view header, std::uint64_t total) noexcept {
  using Kind = ByteRange::Kind;
  header = trim(header);
  if (header.empty()) return {Kind::whole, 0, total};
  constexpr std::string_view unit = "bytes=";
  if (header.substr(0, unit.size()) != unit) return {Kind::malformed, 0, 0};
  std::string_view spec = header.substr(unit.size());
  spec = trim(spec.substr(0, spec.find(',')));
  const auto dash = spec.find('-');
  if (dash == std::string_view::npos) return {Kind::malformed, 0, 0};
  const auto first_text = trim(spec.substr(0, dash)), last_text = trim(spec.substr(dash + 1));
  std::uint64_t first = 0, last = 0;
  if (first_text.empty()) {
    // bytes=-N: the last N bytes.
    if (!parse_u64(last_text, last)) return {Kind::malformed, 0, 0};
    if (last == 0 || total == 0) return {Kind::unsatisfiable, 0, 0};
    const std::uint64_t n = last < total ? last : total;
    return {Kind::partial, total - n, n};
  }
  if (!parse_u64(first_text, first)) return {Kind::malformed, 0, 0};
  if (last_text.empty()) {
    last = total ? total - 1 : 0;
  } else if (!parse_u64(last_text, last) || last < first) {
    return {Kind::malformed, 0, 0};
  }
  if (first >= total) return {Kind::unsatisfiable, 0, 0};
  if (last >= total) last = total - 1;
  return {Kind::partial, first, last - first + 1};
}

}  // namespace vigil::server
