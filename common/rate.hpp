#pragma once
// A data rate. Admission, the disks and the scheduler think in bytes per second (a cycle moves
// T·BR bytes); the wire protocol, the catalog, the HTTP API and people think in bits per second.
// A Rate is built from one unit and read in either, so every conversion is a named call and a
// plain number in the wrong unit does not compile where a Rate is expected.
// Thread: a plain value.
#include <compare>
#include <concepts>

namespace vigil {

class Rate {
 public:
  constexpr Rate() noexcept = default;  // zero

  static constexpr Rate from_bps(std::integral auto bits_per_s) noexcept {
    return from_bps(static_cast<double>(bits_per_s));
  }
  static constexpr Rate from_bps(double bits_per_s) noexcept { return Rate(bits_per_s / kBitsPerByte); }
  static constexpr Rate from_Bps(std::integral auto bytes_per_s) noexcept {
    return Rate(static_cast<double>(bytes_per_s));
  }
  static constexpr Rate from_Bps(double bytes_per_s) noexcept { return Rate(bytes_per_s); }
  // BYTES moved in SECONDS (> 0).
  static constexpr Rate from_bytes_over(double bytes, double seconds) noexcept { return Rate(bytes / seconds); }

  constexpr double bps() const noexcept { return bytes_per_s_ * kBitsPerByte; }
  constexpr double Bps() const noexcept { return bytes_per_s_; }
  // Bytes moved in SECONDS at this rate (T·BR for a cycle of T seconds).
  constexpr double bytes_over(double seconds) const noexcept { return bytes_per_s_ * seconds; }

  constexpr Rate& operator+=(Rate r) noexcept {
    bytes_per_s_ += r.bytes_per_s_;
    return *this;
  }
  constexpr Rate& operator-=(Rate r) noexcept {
    bytes_per_s_ -= r.bytes_per_s_;
    return *this;
  }
  friend constexpr Rate operator+(Rate a, Rate b) noexcept { return a += b; }
  friend constexpr Rate operator-(Rate a, Rate b) noexcept { return a -= b; }
  friend constexpr Rate operator*(Rate r, double k) noexcept { return Rate(r.bytes_per_s_ * k); }
  friend constexpr Rate operator*(double k, Rate r) noexcept { return Rate(r.bytes_per_s_ * k); }
  friend constexpr Rate operator/(Rate r, double k) noexcept { return Rate(r.bytes_per_s_ / k); }
  friend constexpr auto operator<=>(Rate, Rate) noexcept = default;

 private:
  static constexpr double kBitsPerByte = 8;
  explicit constexpr Rate(double bytes_per_s) noexcept : bytes_per_s_(bytes_per_s) {}
  double bytes_per_s_ = 0;
};

}  // namespace vigil
