// Fuzz target: the thumbnail decoder (common/thumbnail) fed what a recorder may have declared and
// sent: a codec from a small list, any extradata and dimensions, and a keyframe of any bytes
// (the first packet of the input). The output is kept small (at most 32 pixels wide) so runs
// are fast. Only std::runtime_error (the decoder's error policy) may escape.
#include <cstddef>
#include <cstdint>
#include <stdexcept>

extern "C" {
#include <libavutil/log.h>
}

#include "common/thumbnail.hpp"
#include "tests/fuzz/media_input.hpp"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  static const bool quiet = (av_log_set_level(AV_LOG_QUIET), true);
  (void)quiet;
  const auto m = vigil::fuzz::read_media_input(data, size, 0);
  if (m.packets.empty()) return 0;
  try {
    (void)vigil::media::jpeg_of_keyframe(m.codec, m.packets.front().payload, 32, 20);
  } catch (const std::runtime_error&) {}
  return 0;
}
