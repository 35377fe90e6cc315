#pragma once
// The CODECS attribute of an HLS master playlist's EXT-X-STREAM-INF (RFC 8216 §4.4.6.2, RFC 6381):
// each track's codec string, read from the parameters it was recorded with — H.264 `avc1.PPCCLL`
// from its SPS (avcC, or an Annex B SPS), H.265 `hvc1.…` from its hvcC (ISO/IEC 14496-15 Annex E),
// AAC `mp4a.40.AOT` from its AudioSpecificConfig. A player learns from it, before fetching any
// segment, whether it can play the rendition (Safari and smart TVs check it; hls.js sets up its
// buffers with it).
// Thread: any. Errors: none (an empty string when the parameters do not say).
#include <string>

#include "common/media_writer.hpp"

namespace vigil::server {

// CODEC's RFC 6381 string, or "" where its extradata does not give it (parameter sets in band).
std::string rfc6381_codec(const media::CodecInfo& codec);

}  // namespace vigil::server
