#include "common/byte_size.hpp"

#include <array>
#include <cctype>
#include <charconv>
#include <cmath>
#include <cstdio>

namespace vigil {
namespace {

struct Unit {
  std::string_view name;  // lower case
  double bytes;
};

constexpr std::array<Unit, 17> kUnits{{{"", 1.0},
                                       {"b", 1.0},
                                       {"k", 0x1p10},
                                       {"kib", 0x1p10},
                                       {"kb", 1e3},
                                       {"m", 0x1p20},
                                       {"mib", 0x1p20},
                                       {"mb", 1e6},
                                       {"g", 0x1p30},
                                       {"gib", 0x1p30},
                                       {"gb", 1e9},
                                       {"t", 0x1p40},
                                       {"tib", 0x1p40},
                                       {"tb", 1e12},
                                       {"p", 0x1p50},
                                       {"pib", 0x1p50},
                                       {"pb", 1e15}}};

}  // namespace

std::optional<std::int64_t> parse_byte_size(std::string_view text) {
  while (!text.empty() && text.front() == ' ') text.remove_prefix(1);
  while (!text.empty() && text.back() == ' ') text.remove_suffix(1);
  std::size_t digits = 0;
  while (digits < text.size() && (std::isdigit(static_cast<unsigned char>(text[digits])) || text[digits] == '.')) {
    ++digits;
  }
  if (digits == 0) return std::nullopt;
  double number = 0;
  const auto [end, ec] = std::from_chars(text.data(), text.data() + digits, number);
  if (ec != std::errc() || end != text.data() + digits) return std::nullopt;
  std::string unit;
  for (char c : text.substr(digits)) {
    if (c == ' ' && unit.empty()) continue;  // "500 G"
    unit += static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  }
  for (const auto& u : kUnits) {
    if (u.name != unit) continue;
    const double bytes = std::round(number * u.bytes);
    // 2^63 itself does not fit: the largest double below it does.
    if (!(bytes >= 0) || bytes >= 0x1p63) return std::nullopt;
    return static_cast<std::int64_t>(bytes);
  }
  return std::nullopt;
}

std::string format_byte_size(std::int64_t bytes) {
  constexpr std::array<const char*, 6> kNames{"B", "KiB", "MiB", "GiB", "TiB", "PiB"};
  double value = static_cast<double>(bytes);
  std::size_t unit = 0;
  while (std::fabs(value) >= 1024 && unit + 1 < kNames.size()) {
    value /= 1024;
    ++unit;
  }
  char out[32];
  if (unit == 0) {
    std::snprintf(out, sizeof out, "%lld B", static_cast<long long>(bytes));
  } else {
    std::snprintf(out, sizeof out, value < 10 ? "%.2f %s" : value < 100 ? "%.1f %s" : "%.0f %s", value, kNames[unit]);
  }
  return out;
}

}  // namespace vigil
