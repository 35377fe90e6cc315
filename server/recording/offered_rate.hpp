#pragma once
// What a recording's source really sends, measured on its media clock: bytes of packets seen for
// the first time (a packet refused by policing and sent again counts once) over a window of media
// time, and whether the stream was policed in that window. Policing caps what the disk takes at
// the admitted rate, so the disk's own measurement cannot see a source that sends more; this can.
// It is the evidence for re-admitting a recording at a higher rate (docs/admission.md,
// "Re-admission at the measured rate").
// Thread: the recording session's only. Errors: none.
#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <optional>

#include "common/rate.hpp"

namespace vigil::server {

class OfferedRate {
 public:
  struct Window {
    Rate rate;             // bytes offered over the window's media time
    bool policed = false;  // some packet of the window was refused for the rate
  };

  explicit OfferedRate(std::int64_t window_us = 10'000'000) : window_us_(window_us) {}

  // Packet SEQUENCE of BYTES (payload and record header) at media time AT_US (wall-clock µs).
  void packet(std::uint64_t sequence, std::int64_t at_us, std::size_t bytes) noexcept {
    if (sequence <= highest_) return;  // a resend: counted when it was first seen
    highest_ = sequence;
    if (!started_) {
      started_ = true;
      start_us_ = at_us;
    }
    end_us_ = std::max(end_us_, at_us);
    bytes_ += bytes;
  }
  void policed() noexcept { policed_ = true; }
  // Media [FROM_US, TO_US) of BYTES the sender dropped itself because the stream stays above its
  // admitted rate (proto MediaLoss, rate_exceeded): offered all the same, and policed — else a
  // recorder that drops instead of resending would hide its source's rate from re-admission.
  void dropped(std::int64_t from_us, std::int64_t to_us, std::size_t bytes) noexcept {
    start_us_ = started_ ? std::min(start_us_, from_us) : from_us;
    started_ = true;
    end_us_ = std::max(end_us_, to_us);
    bytes_ += bytes;
    policed_ = true;
  }

  // Once the window's media time has passed: its figures, and the next window starts empty.
  std::optional<Window> take() noexcept {
    if (!started_ || end_us_ - start_us_ < window_us_) return std::nullopt;
    Window w{Rate::from_bytes_over(static_cast<double>(bytes_), static_cast<double>(end_us_ - start_us_) / 1e6),
             policed_};
    started_ = false;
    bytes_ = 0;
    policed_ = false;
    return w;
  }

 private:
  std::int64_t window_us_;
  std::uint64_t highest_ = 0;
  bool started_ = false;  // (not an optional: GCC's -Wmaybe-uninitialized misreads it inlined)
  std::int64_t start_us_ = 0;
  std::int64_t end_us_ = 0;
  std::uint64_t bytes_ = 0;
  bool policed_ = false;
};

}  // namespace vigil::server
