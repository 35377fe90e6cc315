#include "common/redact.hpp"

namespace vigil {
namespace {

constexpr std::string_view kMask = "***";
// Where a URL's authority (user:password@host:port) ends: its path, query or fragment, or the
// end of the URL in running text (blanks, quotes, brackets).
constexpr std::string_view kAuthorityEnd = "/?# \t\r\n\"'<>()[]{}|\\";

// The password of the URL whose "://" is at SEP in TEXT: [begin, end) in TEXT, or begin == end.
std::pair<std::size_t, std::size_t> password_at(std::string_view text, std::size_t sep) noexcept {
  const std::size_t start = sep + 3;
  std::size_t end = text.find_first_of(kAuthorityEnd, start);
  if (end == std::string_view::npos) end = text.size();
  const auto authority = text.substr(start, end - start);
  // The last '@': a password with an unescaped '@' in it is hidden whole.
  const auto at = authority.rfind('@');
  if (at == std::string_view::npos) return {0, 0};
  const auto colon = authority.substr(0, at).find(':');
  if (colon == std::string_view::npos || colon + 1 == at) return {0, 0};
  return {start + colon + 1, start + at};
}

}  // namespace

bool has_credentials(std::string_view text) noexcept {
  for (auto sep = text.find("://"); sep != std::string_view::npos; sep = text.find("://", sep + 3)) {
    const auto [begin, end] = password_at(text, sep);
    if (begin != end) return true;
  }
  return false;
}

std::string redact_credentials(std::string_view text) {
  std::string out;
  out.reserve(text.size());
  std::size_t copied = 0;
  for (auto sep = text.find("://"); sep != std::string_view::npos; sep = text.find("://", sep + 3)) {
    const auto [begin, end] = password_at(text, sep);
    if (begin == end) continue;
    out.append(text.substr(copied, begin - copied)).append(kMask);
    copied = end;
    sep = end - 3;  // the next search starts after the password (the loop adds 3)
  }
  out.append(text.substr(copied));
  return out;
}

}  // namespace vigil
