// Fuzz target: what a segment header carries, as recovery, fsck and `vigil catalog rebuild` read
// it from a volume that may hold anything: the segment header (storage/volume_layout) and the
// stream description inside it (storage/stream_description). Checked: a description that
// decodes encodes again (within kMaxCodecParametersBytes) and decodes to the same value.
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <span>

#include "storage/stream_description.hpp"
#include "storage/volume_layout.hpp"

namespace {

void check(bool ok) {
  if (!ok) std::abort();
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const std::span<const std::byte> bytes(reinterpret_cast<const std::byte*>(data), size);
  if (auto d = vigil::storage::decode_stream_description(bytes)) {
    const auto again = vigil::storage::encode_stream_description(*d);
    check(again.size() <= vigil::storage::kMaxCodecParametersBytes);
    // Extradata too large to fit is left out by the encoder; everything else survives.
    auto d2 = vigil::storage::decode_stream_description(again);
    check(d2.has_value());
    auto expect = *d;
    if (d2->extradata.empty()) expect.extradata.clear();
    check(*d2 == expect);
  }
  // The same bytes as a segment header block (its CRC rarely matches; the length checks run first).
  (void)vigil::storage::decode_segment_header(bytes);
  (void)vigil::storage::decode_extent_header(bytes);
  (void)vigil::storage::decode_superblock(bytes);
  return 0;
}
