// What the media code (common/media_writer, common/thumbnail) does with recorded bytes it cannot
// trust: each case is an input the fuzz targets (tests/fuzz, docs/fuzzing.md) found, kept here so
// it fails in the sanitizer build (this executable runs under ASan/UBSan) if the fix goes away.
// The same inputs are replayed by deploy/fuzz.sh from tests/fuzz/regressions/.
#include <catch2/catch_test_macros.hpp>
#include <stdexcept>

#include "common/thumbnail.hpp"

using vigil::media::CodecInfo;

TEST_CASE("a thumbnail of an empty keyframe is refused with an error", "[media][fuzz]") {
  // tests/fuzz/regressions/thumbnail/empty_keyframe: a recorder may store a packet of no bytes;
  // copying its (null) data into the decoder's packet was undefined behaviour.
  CodecInfo codec;
  codec.codec_name = "h264";
  codec.width = 64;
  codec.height = 48;
  REQUIRE_THROWS_AS(vigil::media::jpeg_of_keyframe(codec, {}, 32), std::runtime_error);
}
