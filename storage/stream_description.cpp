#include "storage/stream_description.hpp"

#include <array>
#include <cstring>
#include <optional>

#include "storage/endian.hpp"
#include "storage/volume_layout.hpp"

namespace vigil::storage {
namespace {

// Layout (docs/format.md, "Stream description"): magic, u16 version, u16 field count, then each
// field as u16 tag, u32 length, LENGTH bytes. Integers are 8-byte little-endian.
constexpr std::array<char, 4> kMagic{'V', 'G', 'S', 'D'};
constexpr std::size_t kPreambleBytes = 8;
constexpr std::size_t kFieldHeadBytes = 6;

enum Tag : std::uint16_t {
  kCamera = 1,
  kRole = 2,
  kMediaKind = 3,
  kCodec = 4,
  kExtradata = 5,
  kWidth = 6,
  kHeight = 7,
  kTimeBaseNum = 8,
  kTimeBaseDen = 9,
  kDeclaredRate = 10,
  kAdmittedRate = 11,
  kStartedAt = 12,
  kSampleRate = 13,
  kChannels = 14,
  kLastKnownTag = kChannels,
};

class Writer {
 public:
  void bytes(Tag tag, const void* data, std::size_t n) {
    const auto at = out_.size();
    out_.resize(at + kFieldHeadBytes + n);
    std::span<std::byte> s(out_);
    le::put<std::uint16_t>(s, at, tag);
    le::put<std::uint32_t>(s, at + 2, static_cast<std::uint32_t>(n));
    if (n) std::memcpy(out_.data() + at + kFieldHeadBytes, data, n);
    ++fields_;
  }
  void text(Tag tag, const std::string& v) { bytes(tag, v.data(), v.size()); }
  void integer(Tag tag, std::int64_t v) { bytes(tag, &v, sizeof v); }  // host is little-endian (endian.hpp)

  std::vector<std::byte> finish() && {
    std::span<std::byte> s(out_);
    std::memcpy(out_.data(), kMagic.data(), kMagic.size());
    le::put<std::uint16_t>(s, 4, kStreamDescriptionVersion);
    le::put<std::uint16_t>(s, 6, fields_);
    return std::move(out_);
  }

 private:
  std::vector<std::byte> out_ = std::vector<std::byte>(kPreambleBytes);
  std::uint16_t fields_ = 0;
};

std::vector<std::byte> encode(const StreamDescription& d, bool with_extradata) {
  Writer w;
  w.text(kCamera, d.camera);
  w.text(kRole, d.role);
  w.text(kMediaKind, d.media_kind);
  w.text(kCodec, d.codec);
  if (with_extradata && !d.extradata.empty()) w.bytes(kExtradata, d.extradata.data(), d.extradata.size());
  w.integer(kWidth, d.width);
  w.integer(kHeight, d.height);
  w.integer(kTimeBaseNum, d.time_base_num);
  w.integer(kTimeBaseDen, d.time_base_den);
  w.integer(kDeclaredRate, d.declared_rate_bps);
  w.integer(kAdmittedRate, d.admitted_rate_bps);
  w.integer(kStartedAt, d.started_at_us);
  // Only where known (audio): a video stream's description is what it was before these fields.
  if (d.sample_rate_hz > 0) w.integer(kSampleRate, d.sample_rate_hz);
  if (d.channels > 0) w.integer(kChannels, d.channels);
  return std::move(w).finish();
}

}  // namespace

std::vector<std::byte> encode_stream_description(const StreamDescription& d) {
  auto out = encode(d, true);
  if (out.size() > kMaxCodecParametersBytes) out = encode(d, false);
  // Names and codecs are short; only extradata can be large. Whatever is left must fit.
  if (out.size() > kMaxCodecParametersBytes) out.clear();
  return out;
}

Result<StreamDescription> decode_stream_description(std::span<const std::byte> in) noexcept {
  if (in.size() < kPreambleBytes || std::memcmp(in.data(), kMagic.data(), kMagic.size()) != 0) {
    return errc::corruption;
  }
  const auto version = le::get<std::uint16_t>(in, 4);
  if (version == 0) return errc::corruption;
  if (version > kStreamDescriptionVersion) return errc::unsupported;
  const auto count = le::get<std::uint16_t>(in, 6);
  try {
    StreamDescription d;
    std::array<bool, kLastKnownTag + 1> seen{};
    std::size_t at = kPreambleBytes;
    for (std::uint16_t i = 0; i < count; ++i) {
      if (in.size() - at < kFieldHeadBytes) return errc::corruption;
      const auto tag = le::get<std::uint16_t>(in, at);
      const std::size_t n = le::get<std::uint32_t>(in, at + 2);
      at += kFieldHeadBytes;
      if (n > in.size() - at) return errc::corruption;
      const auto value = in.subspan(at, n);
      at += n;
      if (tag == 0) return errc::corruption;
      if (tag > kLastKnownTag) continue;  // a later version's field
      if (seen[tag]) return errc::corruption;
      seen[tag] = true;
      const auto text = [&] { return std::string(reinterpret_cast<const char*>(value.data()), value.size()); };
      const auto integer = [&]() -> std::optional<std::int64_t> {
        if (value.size() != sizeof(std::int64_t)) return std::nullopt;
        return le::get<std::int64_t>(value, 0);
      };
      std::int64_t* field = nullptr;
      switch (tag) {
        case kCamera: d.camera = text(); break;
        case kRole: d.role = text(); break;
        case kMediaKind: d.media_kind = text(); break;
        case kCodec: d.codec = text(); break;
        case kExtradata: d.extradata.assign(value.begin(), value.end()); break;
        case kWidth: field = &d.width; break;
        case kHeight: field = &d.height; break;
        case kTimeBaseNum: field = &d.time_base_num; break;
        case kTimeBaseDen: field = &d.time_base_den; break;
        case kDeclaredRate: field = &d.declared_rate_bps; break;
        case kAdmittedRate: field = &d.admitted_rate_bps; break;
        case kStartedAt: field = &d.started_at_us; break;
        case kSampleRate: field = &d.sample_rate_hz; break;
        case kChannels: field = &d.channels; break;
        default: break;
      }
      if (field) {
        auto v = integer();
        if (!v) return errc::corruption;
        *field = *v;
      }
    }
    // Trailing bytes after the counted fields: not something this encoder wrote.
    if (at != in.size()) return errc::corruption;
    if (d.camera.empty() || d.codec.empty()) return errc::corruption;
    // The encoder writes these only when positive (known): anything else was not written by it.
    if (d.sample_rate_hz < 0 || d.channels < 0) return errc::corruption;
    return d;
  } catch (const std::bad_alloc&) {
    return errc::corruption;  // cannot happen within the 64 KiB a header holds; noexcept all the same
  }
}

}  // namespace vigil::storage
