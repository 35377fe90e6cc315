#include "common/time_arg.hpp"

#include <cmath>
#include <ctime>
#include <stdexcept>

namespace vigil {

std::int64_t parse_time_arg(const std::string& text, std::int64_t now_us) {
  const auto bad = [&] {
    return std::invalid_argument("bad time '" + text +
                                 "': use now, -90s / -5m / -2h / -1d, @UNIX_SECONDS, or 2026-11-23T21:00:00[Z]");
  };
  if (text == "now") return now_us;
  if (text.size() >= 3 && text[0] == '-') {
    std::size_t used = 0;
    double n = 0;
    try {
      n = std::stod(text.substr(1), &used);
    } catch (const std::exception&) {
      throw bad();
    }
    if (used + 2 != text.size() || !(n >= 0) || !std::isfinite(n)) throw bad();
    double unit = 0;
    switch (text.back()) {
      case 's': unit = 1; break;
      case 'm': unit = 60; break;
      case 'h': unit = 3600; break;
      case 'd': unit = 86400; break;
      default: throw bad();
    }
    const double offset_us = n * unit * 1e6;
    if (!(offset_us <= 1e17)) throw bad();  // llround of a larger value (or inf) is undefined
    return now_us - static_cast<std::int64_t>(std::llround(offset_us));
  }
  if (text.size() >= 2 && text[0] == '@') {
    std::size_t used = 0;
    double s = 0;
    try {
      s = std::stod(text.substr(1), &used);
    } catch (const std::exception&) {
      throw bad();
    }
    if (used + 1 != text.size() || !std::isfinite(s) || s < 0 || s > 1e11) throw bad();
    return static_cast<std::int64_t>(std::llround(s * 1e6));
  }
  std::tm tm{};
  int consumed = 0;
  if (std::sscanf(text.c_str(), "%4d-%2d-%2dT%2d:%2d:%2d%n", &tm.tm_year, &tm.tm_mon, &tm.tm_mday, &tm.tm_hour,
                  &tm.tm_min, &tm.tm_sec, &consumed) != 6) {
    throw bad();
  }
  const std::string rest = text.substr(static_cast<std::size_t>(consumed));
  if (!rest.empty() && rest != "Z") throw bad();
  if (tm.tm_mon < 1 || tm.tm_mon > 12 || tm.tm_mday < 1 || tm.tm_mday > 31 || tm.tm_hour > 23 || tm.tm_min > 59 ||
      tm.tm_sec > 60) {
    throw bad();
  }
  tm.tm_year -= 1900;
  tm.tm_mon -= 1;
  tm.tm_isdst = -1;
  const std::time_t t = rest == "Z" ? timegm(&tm) : std::mktime(&tm);
  if (t == static_cast<std::time_t>(-1)) throw bad();
  return static_cast<std::int64_t>(t) * 1'000'000;
}

}  // namespace vigil
