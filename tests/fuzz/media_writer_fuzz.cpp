// Fuzz target: the media writer (common/media_writer) as exports (whole MP4 in memory) and HLS
// (fragmented MP4) use it, fed what a recorder may have declared and sent: a codec from a small
// list, any extradata and dimensions, packets of any size with timestamps that jump back and
// forth. Only std::runtime_error (the writer's error policy, answered 4xx/5xx by the routes)
// may escape.
#include <cstddef>
#include <cstdint>
#include <stdexcept>

extern "C" {
#include <libavutil/log.h>
}

#include "tests/fuzz/media_input.hpp"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  static const bool quiet = (av_log_set_level(AV_LOG_QUIET), true);
  (void)quiet;
  constexpr std::int64_t kOriginUs = 1'795'000'000'000'000;
  const auto m = vigil::fuzz::read_media_input(data, size, kOriginUs);
  try {
    if (m.flags & 1) {
      // HLS: init segment, then one media segment per two keyframes.
      auto w = vigil::media::MediaWriter::fragmented(m.codec, kOriginUs);
      (void)w.take_output();
      int keys = 0;
      for (const auto& p : m.packets) {
        if (p.keyframe && ++keys % 2 == 0) {
          w.flush_fragment();
          (void)w.take_output();
        }
        w.write({p.pts_us, p.dts_us, p.duration_us, p.keyframe, p.payload});
      }
      w.flush_fragment();
      (void)w.take_output();
    } else {
      // An export: index first, room reserved for exactly the frames written.
      auto w = vigil::media::MediaWriter::mp4_in_memory(m.codec, m.packets.size(), kOriginUs);
      for (const auto& p : m.packets) w.write({p.pts_us, p.dts_us, p.duration_us, p.keyframe, p.payload});
      w.finish();
      (void)w.take_output();
    }
  } catch (const std::runtime_error&) {}
  return 0;
}
