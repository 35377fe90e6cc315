#include "server/recording/stream_description_of.hpp"

#include "common/track.hpp"
#include "storage/stream_description.hpp"

namespace vigil::server {

std::vector<std::byte> stream_description_of(const proto::OpenRecord& request, std::uint64_t admitted_bps,
                                             std::int64_t started_at_us) {
  const auto& codec = request.codec();
  storage::StreamDescription d;
  d.camera = request.stream_name();
  // The track the recorder named (RecordingService::open validated it: empty is main video).
  d.role = std::string(role_name(parse_role(request.role()).value_or(TrackRole::main)));
  d.media_kind = std::string(media_kind_name(parse_media_kind(request.media_kind()).value_or(MediaKind::video)));
  d.codec = codec.codec_name();
  const auto* extradata = reinterpret_cast<const std::byte*>(codec.extradata().data());
  d.extradata.assign(extradata, extradata + codec.extradata().size());
  d.width = codec.width();
  d.height = codec.height();
  d.time_base_num = codec.time_base_num();
  d.time_base_den = codec.time_base_den();
  const std::uint64_t declared =
      request.declared_peak_rate_bps() ? request.declared_peak_rate_bps() : request.declared_average_rate_bps();
  d.declared_rate_bps = static_cast<std::int64_t>(declared);
  d.admitted_rate_bps = static_cast<std::int64_t>(admitted_bps);
  d.started_at_us = started_at_us;
  d.sample_rate_hz = codec.sample_rate();
  d.channels = codec.channels();
  return storage::encode_stream_description(d);
}

}  // namespace vigil::server
