#pragma once
// A JPEG still of one keyframe: decoded with libavcodec (the codec and its extradata as
// recorded), scaled with libswscale to at most MAX_WIDTH (aspect kept, even sizes), encoded
// with libavcodec's MJPEG encoder. The only place Vigil decodes video: thumbnails for scrubbing
// and search results, never on the recording path.
// Recorded bytes are untrusted: only the allow-listed video codecs' decoders are opened (by
// codec id), one thread, pictures of at most kMaxPicturePixels (common/media_limits.hpp), one
// packet decoded; anything else throws.
// Thread: any (no shared state). Errors: exceptions (std::runtime_error with libav's reason).
#include <cstddef>
#include <span>
#include <vector>

#include "common/media_writer.hpp"

namespace vigil::media {

// QUALITY: 2 (best) … 31 (smallest), MJPEG's qscale.
Bytes jpeg_of_keyframe(const CodecInfo& codec, std::span<const std::byte> keyframe, int max_width, int quality = 5);

}  // namespace vigil::media
