// Fuzz target: the time arguments people give (common/time_arg: now, -90s, @SECONDS, ISO 8601),
// as `vigil play --from` and the HTTP API's from/to pass them. Anything but std::invalid_argument
// escaping, or a result outside the documented range, is a finding.
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <stdexcept>
#include <string>

#include "common/time_arg.hpp"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  constexpr std::int64_t kNowUs = 1'795'000'000'000'000;  // 2026-11
  const std::string text(reinterpret_cast<const char*>(data), size);
  try {
    const std::int64_t t = vigil::parse_time_arg(text, kNowUs);
    // Offsets reach back at most 1e17 us, @ is at most 1e11 s and ISO has a 4-digit year: far
    // inside int64 microseconds, so callers may add and subtract such times.
    constexpr std::int64_t kBoundUs = 300'000'000'000'000'000;  // year ~9500 either way
    if (t > kBoundUs || t < -kBoundUs) std::abort();
  } catch (const std::invalid_argument&) {}
  return 0;
}
